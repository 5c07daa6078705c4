"""Checkpointing a training run so that it resumes bit for bit: restoring the model, optimizer,
schedule, step, RNGs and data position from the latest checkpoint (or starting fresh from the
seed), and writing checkpoints, ``best.pt`` and the run directory's ``config.json``, vocabulary
copy and data statistics.

:class:`Resumable` is a part of the loop's trainer (:mod:`wikisum.training.loop`): its methods
read and set the trainer's state, the attributes listed in its docstring. The checkpoint files
themselves (their format, atomic writes, loading a trained model) are
:mod:`wikisum.training.checkpoint`'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch

from wikisum.core import files
from wikisum.core.files import write_text_atomically
from wikisum.training import batching, datastats, runpaths, vocabid
from wikisum.training.checkpoint import (
    BEST,
    CHECKPOINT_FORMAT,
    CheckpointWriteError,
    checkpoints,
    rng_state,
    save_atomically,
    set_rng_state,
)
from wikisum.training.config import ConfigError, TrainConfig
from wikisum.training.runsetup import build_model, check_resumable, find_vocab


def copy_file(source: str, target: Path) -> None:
    """``source`` (a path or URL) copied to ``target``, which is replaced whole or not at all."""
    with files.open_read(source) as f:
        content = f.read()
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_bytes(content)
    os.replace(tmp, target)


class Resumable:
    """The trainer's checkpoints and run directory. It reads the trainer's ``config``,
    ``procs``, ``run_dir``, ``dataset``, ``name``, ``model``, ``optimizer``, ``scheduler``,
    ``stream``, ``early``, ``log`` and ``vocab_sha256``; it sets ``step``, ``resumed_from``,
    ``tokens_seen``, ``last_ckpt``, ``saved_step`` and ``saved_at``."""

    # -- what the run starts from: its checkpoint, or the seed -----------------------------

    def _load_or_init(self, state: dict | None, ckpt: Path | None, factory) -> torch.nn.Module:
        """The checkpoint's model, or a fresh one from the seed."""
        config = self.config
        if state is not None:
            check_resumable(TrainConfig.from_dict(state["train_config"]), config, ckpt)
            model = factory.from_config(state["model_name"], state["model_config"])
            model.load_state_dict(state["model"])
            if hasattr(model, "attach_run"):  # its tokenizer: the run's copy
                model.attach_run(self.run_dir)
            return model
        random.seed(config.seed)
        np.random.seed(config.seed)
        torch.manual_seed(config.seed)
        return build_model(config, self.dataset, factory)

    def _check_vocab(self, state: dict | None, ckpt: Path | None) -> str | None:
        """The SHA-256 of the vocabulary this run trains with (the dataset's), after checking
        that a resumed run's checkpoint and RUN/vocab.model name the same one: the model's ids
        mean that vocabulary's pieces, and decoding reads RUN/vocab.model."""
        recorded = state.get(vocabid.KEY) if state is not None else None
        try:
            source = find_vocab(self.dataset)
        except FileNotFoundError:
            if state is None:
                raise
            source = data_hash = None  # a resumed run keeps its copy: checked against that
        else:
            data_hash = vocabid.sha256(source)
        if recorded and data_hash and data_hash != recorded:
            raise ConfigError(
                f"the vocabulary of {self.config.data} ({source}, SHA-256 {data_hash}) is not "
                f"the one {ckpt} was trained with (SHA-256 {recorded}): its token ids mean "
                "other pieces; resume with the dataset the run was trained on, or start a new "
                "run (another --out)")
        run_vocab = self.run_dir / "vocab.model"
        expected = recorded or data_hash
        if state is not None and run_vocab.is_file():
            found = vocabid.sha256(run_vocab)
            if expected and found != expected:
                where = f"{ckpt} records" if recorded else \
                    f"the dataset's vocabulary {source} has"
                raise ConfigError(
                    f"{run_vocab} is not the vocabulary this run was trained with: its SHA-256 "
                    f"is {found}, {where} {expected}; decoding with it would give other words. "
                    f"Put the run's own vocab.model back (a copy of the dataset's vocabulary)")
            expected = expected or found
        return expected

    def _restore(self, state: dict | None, ckpt: Path | None
                 ) -> tuple[batching.Position, Counter]:
        """Optimizer, schedule, step, token count and RNGs from the checkpoint (or a fresh
        start); returns where this rank's data stream resumes and what it had skipped."""
        procs = self.procs
        self.step = 0
        self.resumed_from: int | None = None
        if state is None:
            self.tokens_seen = 0
            if procs.rank:  # the same initial weights everywhere, different dropout per rank
                torch.manual_seed(self.config.seed + procs.rank)
            return batching.Position(), Counter()
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.step = self.resumed_from = int(state["step"])
        saved = state["data"]
        if len(saved["examples"]) != procs.world:
            raise ConfigError(f"{ckpt} was written by {len(saved['examples'])} processes, "
                              f"this run has {procs.world}: resume with the same number")
        position = batching.Position(saved["epoch"], saved["batches"],
                                     saved["examples"][procs.rank])
        self.tokens_seen = int(state["tokens_seen"])
        set_rng_state(state["rng"][procs.rank])
        return position, Counter(saved["skipped_before"])

    # -- what the run writes ---------------------------------------------------------------

    def _prepare_run_dir(self, fresh: bool) -> None:
        (self.run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
        for stale in (self.run_dir / "checkpoints").glob(".*.tmp"):
            stale.unlink()  # a save interrupted before its rename
        target = self.run_dir / "vocab.model"
        if fresh or not target.exists():
            copy_file(find_vocab(self.dataset), target)
        if hasattr(self.model, "save_run_files"):  # a model's own tokenizer (hf)
            self.model.save_run_files(self.run_dir)
        info = {"model": self.name, "model_config": asdict(self.model.config),
                "train_config": self._stored_config(), runpaths.RELATIVE_TO: runpaths.RUN,
                "vocab": "vocab.model", vocabid.KEY: self.vocab_sha256,
                "special_ids": self.dataset.special_ids,
                "vocab_size": self.dataset.info["vocab_size"],
                "dataset_kind": self.dataset.info.get("kind", "ranked")}
        write_text_atomically(self.run_dir / "config.json", json.dumps(info, indent=1) + "\n")
        if fresh or not (self.run_dir / datastats.STATS_FILE).exists():
            # the target lengths, from which decoding takes its default max_len
            limit, policy = self.config.target_limit()
            datastats.write(self.run_dir, self.dataset, limit, target=self.config.target,
                            long_targets=policy)

    def _stored_config(self) -> dict:
        """The train config as the run records it: paths relative to the run directory."""
        return runpaths.stored_train_config(asdict(self.config), self.run_dir)

    def _state(self) -> dict:
        """What a checkpoint of this step holds (every rank takes part: it gathers)."""
        s = self.stream
        rng = self.procs.gather(rng_state())
        examples = self.procs.gather(s.examples)
        return {
            "format": CHECKPOINT_FORMAT, "model_name": self.name,
            "model_config": asdict(self.model.config),
            "train_config": self._stored_config(), runpaths.RELATIVE_TO: runpaths.RUN,
            vocabid.KEY: self.vocab_sha256,
            "step": self.step, "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "data": {"epoch": s.epoch, "batches": s.batches, "examples": examples,
                     "skipped_before": dict(s.skipped_before)},
            "rng": rng, "tokens_seen": self.tokens_seen,
            "early_stopping": self.early.state()}

    def _save_best(self) -> None:
        """RUN/checkpoints/best.pt: this step, the lowest dev perplexity so far."""
        state = self._state()
        if self.procs.main:
            path = self.run_dir / "checkpoints" / BEST
            self._write(state, path)
            self.log.write({"step": self.step, "event": "best", "path": str(path),
                            "dev_ppl": self.early.best_ppl})

    def _write(self, state: dict, path: Path) -> None:
        """save_atomically, and where it fails (a full disk, a file-size limit) an error that
        names the checkpoint a rerun resumes from."""
        try:
            save_atomically(state, path)
        except CheckpointWriteError as exc:
            with contextlib.suppress(OSError):  # the log is on the same full disk
                self.log.write({"step": self.step, "event": "checkpoint_failed",
                                "path": str(path), "detail": str(exc)})
            last = (f"the last good checkpoint is {self.last_ckpt}" if self.last_ckpt else
                    "no checkpoint was written before: a rerun starts over")
            error = CheckpointWriteError(f"{exc} ({last})")
            error.errno = exc.errno
            raise error from exc.__cause__

    def _save(self) -> None:
        """A checkpoint of this step (every rank takes part; rank 0 writes)."""
        state = self._state()
        path = self.run_dir / "checkpoints" / f"step-{self.step}.pt"
        if self.procs.main:
            self._write(state, path)
            for _, old in checkpoints(self.config.out)[:-self.config.keep_checkpoints]:
                old.unlink()
            self.log.write({"step": self.step, "event": "checkpoint", "path": str(path)})
        self.last_ckpt = path
        self.saved_step = self.step
        self.saved_at = time.monotonic()
