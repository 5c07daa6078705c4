"""Training runs: a run is a function of a :class:`TrainConfig`, resumable bit for bit.

    config = make_config("t-dmca", "build/data", "runs/t-dmca", options={"preset": "tiny"},
                         overrides=["lr=5e-4", "model.dropout=0.2"])
    summary = train(config)                  # resumes from runs/t-dmca/checkpoints if any
    loaded = load("runs/t-dmca")             # model (eval mode), configs, tokenizer

The configuration is :mod:`wikisum.training.config`'s, checkpoints and the run directory
:mod:`wikisum.training.checkpoint`'s, processes :mod:`wikisum.training.runtime`'s and the log
:mod:`wikisum.training.runlog`'s; this module holds the schedule and the training loop.

Optimisation: Adam (AdamW, i.e. decoupled decay, when ``weight_decay > 0``) with the learning rate
of :func:`learning_rate`, gradient clipping by global norm, and gradient accumulation over
``accumulate`` batches. The loss of an update is the mean over its target tokens: each batch's
loss is weighted by its share of the update's target tokens.

Several GPUs (or CPU processes): ``torchrun --nproc_per_node N -m wikisum.workflows.cli train ...``
runs DistributedDataParallel (NCCL on GPUs, gloo on CPUs); rank r reads every N-th example from
the r-th on, and only rank 0 writes checkpoints and logs.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import signal
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from wikisum import models
from wikisum.core import files
from wikisum.core.loader import Dataset
from wikisum.training import batching, datastats, runpaths, vocabid
from wikisum.training.checkpoint import (
    BEST,
    CHECKPOINT_FORMAT,
    CheckpointWriteError,
    Loaded,
    checkpoints,
    latest_readable,
    load,
    rng_state,
    save_atomically,
    set_rng_state,
    write_text_atomically,
)
from wikisum.training.config import (
    ConfigError,
    TrainConfig,
    auto_preset,
    default_warmup,
    make_config,
    model_field_types,
    probe_config,
)
from wikisum.training.runlog import RunLog, check_log_targets
from wikisum.training.runtime import Processes, processes

# TrainConfig fields that may differ when a run is resumed: they change how long it runs and what
# it reports, never what a step computes.
RESUMABLE_CHANGES = frozenset({
    "data", "out", "steps", "stop_after", "log_every", "eval_every", "dev_examples", "patience",
    "checkpoint_every", "checkpoint_minutes", "keep_checkpoints", "device", "log_to",
    "compile"})
# Model config fields set from the dataset's special ids when the model has them.
SPECIAL_ID_FIELDS = {"pad_id": "pad", "unk_id": "unk", "bos_id": "bos", "eos_id": "eos",
                     "title_sep_id": "title_sep", "sep_id": "sep"}


ESTIMATE_AFTER = 5  # updates of an invocation timed before the run's duration is estimated


class NonFiniteLoss(RuntimeError):
    """The loss (or the gradient norm) became NaN or infinite; training stopped."""


# ------------------------------------------------------------------------------------------
# The learning rate.


def learning_rate(step: int, peak: float, warmup: int) -> float:
    """tensor2tensor's "linear_warmup * rsqrt_decay" (the noam schedule without d_model^-0.5):

        lr(step) = peak * min(step / warmup, sqrt(warmup / step))     step = 1, 2, ...

    rising linearly to ``peak`` at ``step = warmup``, then decaying as 1 / sqrt(step). It equals
    t2t's ``c * min(1, step / warmup) * rsqrt(max(step, warmup))`` with ``c = peak * sqrt(warmup)``.
    """
    step = max(step, 1)
    return peak * min(step / warmup, math.sqrt(warmup / step))


def scheduler(optimizer: torch.optim.Optimizer, warmup: int) -> torch.optim.lr_scheduler.LambdaLR:
    """:func:`learning_rate` as a multiplier of the optimizer's lr (= peak). Update k (1-based)
    runs at lr(k): LambdaLR's counter is k - 1 before that update."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda done: learning_rate(done + 1, 1.0, warmup))


# ------------------------------------------------------------------------------------------
# The run.


def find_vocab(dataset: Dataset) -> str:
    """The dataset's sentencepiece model: dataset.json's path as written, or beside the data."""
    recorded = dataset.info.get("vocab") or "vocab.model"
    candidates = [recorded, files.join(dataset.dir, recorded),
                  files.join(dataset.dir, Path(recorded).name)]
    for path in candidates:
        if files.exists(path):
            return path
    raise FileNotFoundError(f"the vocabulary of {dataset.dir} is not found; tried "
                            f"{', '.join(candidates)}")


def copy_file(source: str, target: Path) -> None:
    with files.open_read(source) as f:
        content = f.read()
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_bytes(content)
    os.replace(tmp, target)


def build_model(config: TrainConfig, dataset: Dataset, factory=models):
    """A fresh model for ``config``, its vocabulary and special ids taken from the dataset."""
    probe = probe_config(config.model, config.preset, factory)
    known = model_field_types(probe)
    unknown = sorted(set(config.model_overrides) - set(known))
    if unknown:
        raise ConfigError(f"unknown model config fields {unknown} for {config.model}; known: "
                          f"{', '.join(known)}")
    vocab_size = int(dataset.info["vocab_size"])
    given = config.model_overrides.get("vocab_size", vocab_size)
    if given != vocab_size:
        raise ConfigError(f"vocab_size={given} disagrees with the dataset's vocabulary "
                          f"({vocab_size}); it is set from {dataset.dir}/dataset.json")
    values = {"vocab_size": vocab_size}
    values.update({name: dataset.special_ids[key] for name, key in SPECIAL_ID_FIELDS.items()
                   if name in known and key in dataset.special_ids})
    values.update(config.model_overrides)
    return factory.build(config.model, config.preset, **values)


def exemplars_needed(factory, name: str) -> bool:
    """What the model factory says of model ``name`` (the registry asks its family); a factory
    that cannot say builds models that read no exemplar."""
    check = getattr(factory, "needs_exemplars", None)
    return bool(check and check(name))


def _check_resumable(saved: TrainConfig, now: TrainConfig, ckpt: Path) -> None:
    old, new = asdict(saved), asdict(now)
    changed = [k for k in old if k not in RESUMABLE_CHANGES and old[k] != new.get(k)]
    if changed:
        detail = "; ".join(f"{k}: {old[k]!r} -> {new.get(k)!r}" for k in changed)
        raise ConfigError(f"{ckpt} was trained with other settings ({detail}); resume with the "
                          "same settings, or train into a new --out")


def train(config: TrainConfig, factory=models) -> dict:
    """Train (or resume) the run ``config.out``; returns the summary also written to
    RUN/summary.json.

    Args:
        config: the run's settings.
        factory: what builds models: anything with the registry's ``build(name, preset,
            **overrides)`` and ``from_config(name, config_dict)`` (default: :mod:`wikisum.models`).

    Raises:
        NonFiniteLoss: the loss or gradient norm became NaN or infinite.
        ConfigError: settings that cannot run, or differ from the checkpoint being resumed.
        models.batching.CorruptShardError: a shard cannot be read (the message names it).
    """
    check_log_targets(config.log_to)
    procs = processes(config.device)
    try:
        trainer = _Trainer(config, factory, procs)
        with _stop_on_signals(trainer):
            return trainer.run()
    finally:
        if procs.started_group:
            dist.destroy_process_group()


@contextlib.contextmanager
def _stop_on_signals(trainer: _Trainer):
    """SIGTERM (a scheduler preempting the job, `kill`) and SIGINT (Ctrl-C) finish the update in
    progress, write a checkpoint and stop: the run resumes from there. A second signal stops at
    once, as before. Only where signals can be handled (the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {}

    def handler(signum, frame):
        if trainer.stop_signal is not None:  # asked twice: give up at once
            signal.signal(signum, previous[signum])
            signal.raise_signal(signum)
            return
        trainer.stop_signal = signal.Signals(signum).name
        print(f"{trainer.stop_signal}: checkpointing after this update, then stopping "
              "(again to stop at once)", file=sys.stderr, flush=True)

    for signum in (signal.SIGTERM, signal.SIGINT):
        previous[signum] = signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


@dataclass
class EarlyStopping:
    """Where early stopping on the dev perplexity stands: the best perplexity and its step,
    and how many evaluations in a row have not improved on it. Checkpoints hold it, so a
    resumed run goes on counting where the killed one was."""

    best_ppl: float = math.inf
    best_step: int | None = None
    bad: int = 0  # evaluations since the best one

    @classmethod
    def from_state(cls, state: dict | None) -> EarlyStopping:
        saved = (state or {}).get("early_stopping")
        return cls(**saved) if saved else cls()

    def state(self) -> dict:
        return asdict(self)

    def observe(self, step: int, ppl: float) -> bool:
        """Count the evaluation of ``step``; True when it is a new best (strictly lower)."""
        if ppl < self.best_ppl:
            self.best_ppl, self.best_step, self.bad = ppl, step, 0
            return True
        self.bad += 1
        return False

    def exhausted(self, patience: int) -> bool:
        """True when ``patience`` (> 0) evaluations in a row brought no new best."""
        return patience > 0 and self.bad >= patience


class Settled:
    """A config with its automatic settings made concrete, and what they were set to."""

    def __init__(self, config: TrainConfig, chosen: dict[str, str]):
        self.config = config
        self.chosen = chosen  # field -> how it was chosen, for the start line


def settle_auto(config: TrainConfig, state: dict | None, device_type: str) -> Settled:
    """``preset="auto"`` and ``warmup_steps=None`` made concrete: a resumed run keeps what its
    checkpoint has; a new one gets :func:`~wikisum.training.config.auto_preset` of the device and
    :func:`~wikisum.training.config.default_warmup` of its steps. The concrete values are what
    the run records, so they never change under a resumed run (say, with more --steps)."""
    saved = state["train_config"] if state is not None else {}
    changes: dict[str, Any] = {}
    chosen: dict[str, str] = {}
    if config.preset == "auto":
        if saved.get("preset") not in (None, "auto"):
            changes["preset"] = saved["preset"]
        else:
            changes["preset"] = auto_preset(device_type)
            chosen["preset"] = f"auto on {device_type}"
    if config.warmup_steps is None:
        if saved.get("warmup_steps") is not None:
            changes["warmup_steps"] = int(saved["warmup_steps"])
        else:
            changes["warmup_steps"] = default_warmup(config.steps)
            chosen["warmup_steps"] = "default: 4000 or 10% of steps, the lesser"
    return Settled(replace(config, **changes) if changes else config, chosen)


def sanity_warnings(config: TrainConfig, fresh: bool) -> list[str]:
    """Settings that make little sense for this run (each a line to show): they run, but
    probably not as meant."""
    c = config
    found = []
    if fresh and c.warmup_steps >= c.steps:
        peak = learning_rate(c.steps, c.lr, c.warmup_steps)
        found.append(f"warmup_steps={c.warmup_steps} is not less than steps={c.steps}: the "
                     f"learning rate rises all run and peaks at {peak:.2g} instead of lr={c.lr:g} "
                     f"(leave warmup_steps unset for {default_warmup(c.steps)})")
    if c.checkpoint_every > c.steps and c.checkpoint_minutes == 0:
        found.append(f"checkpoint_every={c.checkpoint_every} is more than steps={c.steps} and "
                     "checkpoint_minutes=0: a killed run starts over")
    return found


class _Trainer:
    def __init__(self, config: TrainConfig, factory, procs: Processes):
        self.config = config
        self.procs = procs
        self.run_dir = Path(config.out)
        self.dataset = Dataset(config.data)
        self.dataset.check_view(config.target, config.inputs)
        self.eos_id = int(self.dataset.special_ids["eos"])
        self.exemplars = exemplars_needed(factory, config.model)
        self.name = config.model
        # The order of these steps is the order of what they draw from the RNGs: keep it, or a
        # resumed run stops being bit-identical to an uninterrupted one.
        ckpt, state = latest_readable(config.out)
        self.auto = settle_auto(config, state, procs.device.type)
        config = self.config = self.auto.config
        self.vocab_sha256 = self._check_vocab(state, ckpt)
        self.model = self._load_or_init(state, ckpt, factory).to(procs.device)
        if hasattr(self.model, "encode_example"):  # a model with its own tokenizer (hf)
            self.model.check_lengths(config.max_input_tokens)
            self.eos_id = int(self.model.eos_id)
        self.optimizer, self.scheduler = self._optimizer()
        position, skipped_before = self._restore(state, ckpt)
        self.stream = batching.BatchStream(self._epoch, position, skipped_before)
        self.net, self.autocast = self._distribute()
        self.saved_step = self.step if state is not None else None
        self.saved_at = time.monotonic()
        self.stop_signal: str | None = None  # set by the SIGTERM / SIGINT handler
        self.warned_small_data = False
        self.stopped: str | None = None
        self.last_ckpt = ckpt
        self.early = EarlyStopping.from_state(state)
        if config.patience and not self.dataset.files("dev"):
            raise ConfigError(f"patience={config.patience} stops on the dev perplexity, and "
                              f"{config.data} has no dev split")
        if procs.main:
            self._prepare_run_dir(state is None)
        self.log = RunLog(self.run_dir, self.resumed_from, procs.main, config.log_to,
                          settings=asdict(config))

    # -- set-up ----------------------------------------------------------------------------

    def _load_or_init(self, state: dict | None, ckpt: Path | None, factory) -> torch.nn.Module:
        """The checkpoint's model, or a fresh one from the seed."""
        config = self.config
        if state is not None:
            _check_resumable(TrainConfig.from_dict(state["train_config"]), config, ckpt)
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

    def _optimizer(self) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
        config = self.config
        params = [p for p in self.model.parameters() if p.requires_grad]
        optim = torch.optim.AdamW if config.weight_decay > 0 else torch.optim.Adam
        # On CUDA the fused implementation: a few kernel launches update every parameter (the
        # same algorithm; the default launches several kernels per group of tensors).
        fused = {"fused": True} if params and all(p.is_cuda for p in params) else {}
        optimizer = optim(params, lr=config.lr, betas=config.adam_betas, eps=config.adam_eps,
                          weight_decay=config.weight_decay, **fused)
        return optimizer, scheduler(optimizer, config.warmup_steps)

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

    def _distribute(self):
        """The module that training steps call (DDP across processes, compiled with
        ``compile``) and the autocast context (bf16 on CUDA). ``self.model`` stays the plain
        module: evaluation runs it and checkpoints hold its state_dict."""
        procs = self.procs
        net = self.model
        if procs.world > 1:
            ids = [procs.device.index] if procs.device.type == "cuda" else None
            net = torch.nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        if self.config.compile:
            net = torch.compile(net)
        autocast = torch.autocast(procs.device.type, dtype=torch.bfloat16,
                                  enabled=procs.device.type == "cuda" and self.config.bf16)
        return net, autocast

    # -- data ------------------------------------------------------------------------------

    def _read(self, split: str) -> Iterator:
        c = self.config
        return batching.read_examples(self.dataset, split, c.extractor, c.corpus,
                                      c.max_input_tokens, self.exemplars, target=c.target,
                                      inputs=c.inputs,
                                      encode=getattr(self.model, "encode_example", None))

    def _epoch(self, epoch: int, counts: Counter) -> Iterator[list[batching.Pair]]:
        c = self.config
        limit, policy = c.target_limit()
        return batching.epoch_batches(
            lambda: self._read("train"), eos_id=self.eos_id, max_tokens=c.batch_tokens,
            seed=c.seed, epoch=epoch, counts=counts, rank=self.procs.rank,
            world=self.procs.world, shuffle_buffer=c.shuffle_buffer, pool=c.sort_pool,
            max_target_tokens=limit, long_targets=policy)

    def _next_batch(self) -> list[batching.Pair]:
        """The next batch; at the end of the epoch (on any rank) every rank starts the next."""
        for _ in range(2):
            batch = self.stream.next()
            have = self.procs.all_sum([0.0 if batch is None else 1.0])[0]
            if have == self.procs.world:
                return batch
            self._end_epoch()
        raise ValueError(f"no training batch in the train split of {self.config.data} "
                         f"(skipped: {dict(self.stream.skipped)}; batch_tokens "
                         f"{self.config.batch_tokens})")

    def _end_epoch(self) -> None:
        s = self.stream
        c = self.config
        if self.procs.main and not self.warned_small_data and s.batches <= c.accumulate:
            self.warned_small_data = True
            print(f"warning: the whole train split ({s.examples:,} examples on this process) "
                  f"fits in {s.batches} batch(es) of batch_tokens={c.batch_tokens:,}: every "
                  f"update (accumulate={c.accumulate}) sees all of it; a smaller --batch-tokens "
                  "gives more updates per pass over the data", file=sys.stderr, flush=True)
        self.log.write({"step": self.step, "event": "epoch_end", "epoch": s.epoch,
                        "batches": s.batches, "examples": s.examples,
                        "skipped": {k: s.counts[k] for k in batching.SKIPS if s.counts[k]},
                        "cut": s.counts[batching.CUT_TARGET]})
        s.next_epoch()

    # -- run directory ---------------------------------------------------------------------

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

    # -- steps -----------------------------------------------------------------------------

    def _update(self) -> tuple[float, float, float, float, float]:
        """One optimizer update over ``accumulate`` batches: (loss, nll per target token,
        gradient norm, tokens read, learning rate of the update)."""
        c = self.config
        micro = [batching.to_batch(self._next_batch()) for _ in range(c.accumulate)]
        target_tokens = sum(int(b.target_lengths.sum()) for b in micro)
        self.net.train()
        self.optimizer.zero_grad(set_to_none=True)
        loss_sum = nll_sum = 0.0
        tokens = 0
        for i, batch in enumerate(micro):
            batch = batch.to(self.procs.device)
            sync = self.procs.world == 1 or i == len(micro) - 1
            with (contextlib.nullcontext() if sync else self.net.no_sync()):
                with self.autocast:
                    out = self.net(batch)
                weight = float(batch.target_lengths.sum()) / target_tokens
                (out.loss * weight).backward()
            loss_sum += float(out.loss.detach()) * weight
            nll_sum += float(out.target_nll.detach())
            tokens += int(batch.source_lengths.sum() + batch.target_lengths.sum())
        max_norm = c.clip_norm if c.clip_norm > 0 else float("inf")
        norm = float(torch.nn.utils.clip_grad_norm_(self.model.parameters(), max_norm))
        # Summed over ranks: one rank's NaN or inf makes every rank stop at the same step.
        loss, nll, n_target, norm_sum, tokens = self.procs.all_sum(
            [loss_sum, nll_sum, target_tokens, norm, tokens])
        if not (math.isfinite(loss) and math.isfinite(norm_sum)):
            what = f"loss {loss / self.procs.world}" if not math.isfinite(loss) else \
                f"gradient norm {norm_sum / self.procs.world}"
            where = f"the last checkpoint is {self.last_ckpt}" if self.last_ckpt else \
                "no checkpoint was written"
            self.log.write({"step": self.step + 1, "event": "non_finite", "detail": what})
            raise NonFiniteLoss(f"{what} at step {self.step + 1} (epoch {self.stream.epoch}, "
                                f"examples {[b.ids for b in micro]}): training stopped; {where}")
        lr = self.optimizer.param_groups[0]["lr"]
        self.optimizer.step()
        self.scheduler.step()
        self.step += 1
        return loss / self.procs.world, nll / n_target, norm, tokens, lr

    @torch.no_grad()
    def _dev_perplexity(self) -> dict | None:
        """exp(summed target NLL / target tokens) over (the first ``dev_examples`` of) dev, per
        target wordpiece, </s> included."""
        c = self.config
        if not self.dataset.files("dev"):
            return None
        examples = self._read("dev")
        if c.dev_examples is not None:
            examples = islice(examples, c.dev_examples)
        mine = (ex for i, ex in enumerate(examples) if i % self.procs.world == self.procs.rank)
        skips: Counter = Counter()
        # dev keeps its long targets, cut (what the perplexity is over says how many)
        pairs = (p for ex in mine
                 if (p := batching.prepare(ex, self.eos_id, skips, c.target_limit()[0])))
        self.model.eval()
        nll = tokens = 0.0
        for pairs_ in batching.length_batches(pairs, c.batch_tokens, pool=c.sort_pool,
                                              counts=skips):
            with self.autocast:
                out = self.model(batching.to_batch(pairs_).to(self.procs.device))
            nll += float(out.target_nll)
            tokens += float(out.target_tokens)
        self.model.train()
        nll, tokens, cut = self.procs.all_sum([nll, tokens, skips[batching.CUT_TARGET]])
        if tokens == 0:
            return None
        return {"step": self.step, "dev_ppl": math.exp(nll / tokens),
                "dev_nll": nll / tokens, "dev_tokens": int(tokens), "dev_cut": int(cut)}

    # -- what the run will cost, and where it is -------------------------------------------

    def _announce(self, parameters: int, end: int) -> None:
        """The start line (what trains, where, for how long) and warnings about settings that
        make little sense for the run; rank 0 only."""
        if not self.procs.main:
            return
        from wikisum.core.progress import say

        c = self.config
        preset = c.preset + (f" ({self.auto.chosen['preset']}; --preset to choose)"
                             if "preset" in self.auto.chosen else "")
        warmup = f"warmup {c.warmup_steps:,}" + (
            f" ({self.auto.chosen['warmup_steps']})" if "warmup_steps" in self.auto.chosen
            else "")
        what = (f"resuming at step {self.step:,}" if self.resumed_from is not None
                else "starting")
        say(f"train: {self.name} preset {preset}, {parameters:,} parameters on "
            f"{self.procs.device}" + (f" x{self.procs.world}" if self.procs.world > 1 else "")
            + f"; {what}, {end - self.step:,} updates to step {end:,} of {c.steps:,}; {warmup}, "
            f"lr {c.lr:g}, batch {c.batch_tokens:,} tokens x{c.accumulate}", file=sys.stderr)
        say(self._data_line(), file=sys.stderr)
        for warning in sanity_warnings(c, self.resumed_from is None):
            print(f"warning: {warning}", file=sys.stderr, flush=True)

    def _data_line(self) -> str:
        """What the model learns from what, and how many training targets are over the length
        limit (skipped or cut), from RUN/data_stats.json."""
        c = self.config
        limit, policy = c.target_limit()
        source = ("the title alone" if c.inputs == "title" else
                  f"{c.extractor} on {c.corpus}, L = {c.max_input_tokens:,}")
        line = f"train: data: {c.target} targets from {source}"
        if limit is None:
            return line + "; targets whole (no max_target_tokens)"
        over = (datastats.read(self.run_dir) or {}).get("over_limit")
        action = ("skipped in training" if policy == "skip" else "cut to that length")
        line += f"; max_target_tokens {limit:,}"
        if over:
            line += (f": {over['examples']:,} of {over['of']:,} train targets longer "
                     f"({100 * over['share']:.1f}%), {action}")
        else:
            line += f": longer targets {action}"
        return line + f"; dev perplexity over targets cut to {limit:,}"

    def _progress(self, end: int):
        if not self.procs.main:
            return None
        from wikisum.core.progress import Progress

        return Progress(f"train {self.name}", total=end, unit="steps", initial=self.step)

    def _estimate(self, seconds: float, tokens: float, updates: int, end: int) -> str:
        """'measured ...: about T for the N updates left' from this invocation's first
        updates (dev evaluations and checkpoints come on top)."""
        from wikisum.core.progress import format_seconds

        per_update = seconds / max(updates, 1)
        left = end - self.step
        return (f"train: {per_update:.2f} s/update, {tokens / max(seconds, 1e-9):,.0f} tokens/s "
                f"over the first {updates} updates: about {format_seconds(per_update * left)} "
                f"for the {left:,} left (evaluations and checkpoints not counted)")

    def run(self) -> dict:
        try:
            return self._run()
        finally:
            self.log.close()

    def _run(self) -> dict:
        c = self.config
        start_step, started = self.step, time.perf_counter()
        parameters = sum(p.numel() for p in self.model.parameters())
        self.log.write({"step": self.step, "event": "resume" if self.resumed_from is not None
                        else "start", "model": self.name, "preset": c.preset,
                        "warmup_steps": c.warmup_steps, "parameters": parameters,
                        "world": self.procs.world, "device": str(self.procs.device)})
        end = c.steps if c.stop_after is None else min(c.steps, self.step + c.stop_after)
        if self.early.exhausted(c.patience):  # resuming a run that stopped early
            end = self.step
            self.stopped = "early_stopping"
            if self.procs.main:
                print(f"train: the run stopped early at step {self.step:,} (no better dev "
                      f"perplexity in {self.early.bad} evaluations, patience={c.patience}); "
                      "raise patience to train on", file=sys.stderr, flush=True)
        self._announce(parameters, end)
        progress = self._progress(end)
        last: dict[str, Any] = {"loss": None, "dev": None}
        window_tokens, window_start = 0.0, time.perf_counter()
        run_tokens, update_seconds = 0.0, 0.0
        while self.step < end:
            update_started = time.perf_counter()
            loss, nll, norm, tokens, lr = self._update()
            update_seconds += time.perf_counter() - update_started
            self.tokens_seen += int(tokens)
            window_tokens += tokens
            run_tokens += tokens
            last["loss"] = loss
            if progress is not None:
                progress.update(1, f"loss {loss:.4f}, lr {lr:.2e}, "
                                   f"{run_tokens / max(update_seconds, 1e-9):,.0f} tok/s")
                if self.step - start_step == ESTIMATE_AFTER and self.step < end:
                    progress.note(self._estimate(update_seconds, run_tokens,
                                                 self.step - start_step, end))
            if self.step % c.log_every == 0 or self.step == c.steps:
                elapsed = max(time.perf_counter() - window_start, 1e-9)
                rate = window_tokens / elapsed
                self.log.write(
                    {"step": self.step, "epoch": self.stream.epoch, "loss": loss, "nll": nll,
                     "lr": lr, "grad_norm": norm, "tokens_per_s": rate})
                window_tokens, window_start = 0.0, time.perf_counter()
            if c.eval_every and (self.step % c.eval_every == 0 or self.step == c.steps):
                dev = self._dev_perplexity()
                if dev is not None:
                    last["dev"] = dev
                    self.log.write(dev)
                    if progress is not None:
                        progress.note(f"dev {self.name} step {self.step} "
                                      f"ppl {dev['dev_ppl']:.3f}")
                    if c.patience and self.early.observe(self.step, dev["dev_ppl"]):
                        self._save_best()
            time_due = bool(c.checkpoint_minutes) and (
                time.monotonic() - self.saved_at >= 60 * c.checkpoint_minutes)
            due, stop = time_due, self.stop_signal is not None
            if self.procs.world > 1:  # every rank must agree (a checkpoint gathers from all)
                due, stop = self.procs.all_sum([float(due), float(stop)])
            if self.step % c.checkpoint_every == 0 or due:
                self._save()
            if stop:
                self.stopped = self.stop_signal or "signal on another rank"
                break
            if self.early.exhausted(c.patience):
                self.stopped = "early_stopping"
                self.log.write({"step": self.step, "event": "early_stop", "patience": c.patience,
                                "evaluations_without_improvement": self.early.bad,
                                "best_step": self.early.best_step,
                                "best_dev_ppl": self.early.best_ppl})
                if progress is not None:
                    progress.note(f"early stop at step {self.step}: no better dev perplexity in "
                                  f"{self.early.bad} evaluations; the best, "
                                  f"{self.early.best_ppl:.3f} at step {self.early.best_step}, "
                                  f"is in checkpoints/{BEST}")
                break
        if progress is not None:
            progress.close()
        if self.saved_step != self.step:
            self._save()
        skipped = self.procs.all_sum([float(v) for v in self._skip_values()])
        summary = {
            "run": str(self.run_dir), "model": self.name, "rank": self.procs.rank,
            "world": self.procs.world, "step": self.step,
            "steps": c.steps, "complete": self.step >= c.steps,
            "resumed_from": self.resumed_from,
            "position": asdict(self.stream.position),
            "loss": last["loss"], "dev": last["dev"], "tokens_seen": self.tokens_seen,
            "skipped": dict(zip(self._skip_keys(), map(int, skipped), strict=True)),
            "checkpoint": str(self.last_ckpt) if self.last_ckpt else None,
            "seconds": time.perf_counter() - started,
            "stopped_by": self.stopped,
        }
        if c.patience:
            best = self.run_dir / "checkpoints" / BEST
            summary["early_stopping"] = {
                "patience": c.patience, "stopped": self.stopped == "early_stopping",
                "best_step": self.early.best_step,
                "best_dev_ppl": None if self.early.best_step is None else self.early.best_ppl,
                "evaluations_without_improvement": self.early.bad,
                "best_checkpoint": str(best) if self.early.best_step is not None else None}
        if self.procs.main:
            self.log.write({"step": self.step, "event": "end", "skipped": summary["skipped"]})
            write_text_atomically(self.run_dir / "summary.json",
                                  json.dumps(summary, indent=1) + "\n")
        return summary

    @staticmethod
    def _skip_keys() -> list[str]:
        return list(batching.SKIPS)

    def _skip_values(self) -> list[int]:
        skipped = self.stream.skipped
        return [skipped.get(k, 0) for k in self._skip_keys()]


def summary_line(summary: dict) -> str:
    """One line for the console."""
    dev = summary["dev"]
    parts = [f"train: {summary['model']} step {summary['step']}/{summary['steps']}"]
    if summary["resumed_from"] is not None:
        parts.append(f"(resumed from {summary['resumed_from']})")
    if summary["loss"] is not None:
        parts.append(f"loss {summary['loss']:.4f}")
    if dev:
        parts.append(f"dev ppl {dev['dev_ppl']:.3f}")
    skipped = {k: v for k, v in summary["skipped"].items() if v}
    if skipped:
        parts.append("skipped " + ", ".join(f"{v} {k}" for k, v in skipped.items()))
    parts.append(f"-> {summary['checkpoint']}")
    early = summary.get("early_stopping")
    if early and early["best_step"] is not None:
        parts.append(f"({'stopped early; ' if early['stopped'] else ''}best dev ppl "
                     f"{early['best_dev_ppl']:.3f} at step {early['best_step']} -> "
                     f"{early['best_checkpoint']}, which decode uses)")
    return " ".join(parts)


__all__ = ["ConfigError", "Loaded", "NonFiniteLoss", "TrainConfig", "learning_rate", "load",
           "make_config", "scheduler", "summary_line", "train"]
