"""Checkpoints of a run, and loading a trained model from one.

A run directory holds everything needed to use the model::

    RUN/config.json             model name, model config, train config, dataset special ids;
                                the dataset's path relative to RUN (see training/runpaths.py)
    RUN/vocab.model             the sentencepiece model of the data, copied
    RUN/hf-tokenizer/           a pretrained checkpoint's tokenizer (``--model hf``), saved
    RUN/checkpoints/step-N.pt   the last ``keep_checkpoints`` checkpoints
    RUN/checkpoints/best.pt     with early stopping (``patience``): the checkpoint of the step
                                with the lowest dev perplexity so far
    RUN/log.jsonl               one JSON object a line: training steps, dev perplexity, events
    RUN/summary.json            what :func:`wikisum.training.loop.train` returned last
    RUN/data_stats.json         the training targets' lengths (:mod:`wikisum.training.datastats`)
    RUN/tensorboard/            the same scalars, with ``log_to`` tensorboard
    RUN/wandb.json              the Weights & Biases run id, with ``log_to`` wandb

A checkpoint holds the model, optimizer and scheduler, the step, the RNG states (python, numpy,
torch, CUDA) of every rank and the data position (epoch, batches and examples taken), so a run
killed after step k and started again with the same ``--out`` trains steps k+1.. exactly as an
uninterrupted run would (bit for bit on CPU; see :class:`wikisum.training.batching.BatchStream`).
Files are written to a temporary name and renamed, so a reader sees the old file or the new one;
a write that fails (a full disk, a file-size limit) removes its temporary file and raises
:class:`CheckpointWriteError`, which says so: the checkpoints already written are kept.

``RUN/config.json`` and every checkpoint record the SHA-256 of the vocabulary the run trained
with (:mod:`wikisum.training.vocabid`); :func:`load` refuses a ``RUN/vocab.model`` that is another
file, naming both hashes.

Which checkpoint a run directory stands for (:func:`load`, hence ``wikisum decode``, ``export``,
``summarize``): ``best.pt`` where early stopping wrote one, else the latest ``step-N.pt``; give a
checkpoint file instead of the directory to use another. Resuming training always reads the
latest ``step-N.pt``.
"""

from __future__ import annotations

import errno
import os
import random
import re
import sys
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from wikisum import models
from wikisum.core import vocab
from wikisum.training import runpaths, vocabid
from wikisum.training.config import TrainConfig

CHECKPOINT_FORMAT = 1
CHECKPOINT_RE = re.compile(r"^step-(\d+)\.pt$")
BEST = "best.pt"  # in RUN/checkpoints: the lowest dev perplexity so far (early stopping)


def checkpoints(run: str) -> list[tuple[int, Path]]:
    """(step, path) of the run's checkpoints, oldest first."""
    folder = Path(run) / "checkpoints"
    found = []
    if folder.is_dir():
        for path in folder.iterdir():
            m = CHECKPOINT_RE.match(path.name)
            if m:
                found.append((int(m.group(1)), path))
    return sorted(found)


def latest_checkpoint(run: str) -> Path | None:
    found = checkpoints(run)
    return found[-1][1] if found else None


def best_checkpoint(run: str) -> Path | None:
    """RUN/checkpoints/best.pt where early stopping wrote one, else None."""
    path = Path(run) / "checkpoints" / BEST
    return path if path.is_file() else None


def latest_readable(run: str, device: str | torch.device = "cpu"
                    ) -> tuple[Path, dict] | tuple[None, None]:
    """The newest checkpoint of ``run`` that reads, and its state; an unreadable newer one (a
    file cut by a full disk or a copy that stopped) is skipped with a warning. (None, None)
    when the run has no checkpoint.

    Raises:
        ValueError: there are checkpoints, and none of them reads.
    """
    errors = []
    for _, path in reversed(checkpoints(run)):
        try:
            state = read_checkpoint(path, device)
        except ValueError as exc:
            errors.append(str(exc))
            continue
        for error in errors:
            print(f"warning: {error}; using the previous checkpoint {path}", file=sys.stderr,
                  flush=True)
        return path, state
    if errors:
        raise ValueError("no readable checkpoint: " + "; ".join(errors))
    return None, None


class CheckpointWriteError(OSError):
    """A checkpoint could not be written (``errno`` says why where the system said): its
    temporary file is removed and no checkpoint was replaced."""


# What a failed write's errno means, for the message.
WRITE_CAUSES = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EFBIG: "the file-size limit was hit (ulimit -f, RLIMIT_FSIZE)",
}


class _Recorder:
    """A file for torch.save that keeps the OSError of a failed write: torch turns it into a
    RuntimeError ("unexpected pos ...") that no longer says why."""

    def __init__(self, file):
        self.file = file
        self.error: OSError | None = None

    def write(self, data) -> int:
        try:
            return self.file.write(data)
        except OSError as exc:
            self.error = self.error or exc
            raise

    def flush(self) -> None:
        try:
            self.file.flush()
        except OSError as exc:
            self.error = self.error or exc
            raise


def _os_error(exc: BaseException, recorder: _Recorder | None) -> OSError | None:
    """The OSError behind a failed save: the one the file recorded, ``exc`` itself, or the
    one it was raised from; None when the failure is not the file system's (a CUDA error, a
    bug), which must surface unchanged."""
    if recorder is not None and recorder.error is not None:
        return recorder.error
    for error in (exc, exc.__cause__):
        if isinstance(error, OSError):
            return error
    return None


def save_atomically(obj: Any, path: Path) -> None:
    """torch.save to a temporary file in the same folder, then rename: a reader (or a resumed
    run) sees the old file or the new one, never half of one.

    Raises:
        CheckpointWriteError: the write failed for an OS reason (a full disk, a file-size
            limit, an I/O error); the temporary file is removed and ``path`` is as it was.
            Any other error (a CUDA error, a bug) is raised unchanged, after the temporary
            file is removed.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    recorder = None
    try:
        with open(tmp, "wb") as f:
            recorder = _Recorder(f)
            torch.save(obj, recorder)
    except BaseException as exc:
        tmp.unlink(missing_ok=True)
        cause = _os_error(exc, recorder) if isinstance(exc, Exception) else None
        if cause is None:
            raise
        raise write_error(path, cause) from exc
    os.replace(tmp, path)


def write_error(path: Path, exc: OSError) -> CheckpointWriteError:
    """The error of a checkpoint that could not be written: why (the disk, a limit) and that
    nothing was lost."""
    code = exc.errno
    if code in WRITE_CAUSES:
        why = f"{WRITE_CAUSES[code]} ({errno.errorcode[code]}: {os.strerror(code)})"
    else:
        why = f"the write failed ({exc})"
    error = CheckpointWriteError(
        f"cannot write checkpoint {path}: {why}. The partial file was removed and no "
        "checkpoint was replaced: the last good checkpoint is kept, and running the same "
        "command again resumes from it once there is room")
    error.errno = code
    return error


def read_checkpoint(path: Path, device: str | torch.device = "cpu") -> dict:
    """The state a checkpoint holds, every byte of it checked against the CRC-32 its zip
    records (torch.load does not check them, so a flipped byte would load as another weight).

    Raises:
        ValueError: the file does not read: cut short, a damaged entry (named), not a
            checkpoint. :func:`latest_readable` then falls back to an older one.
    """
    check_crcs(path)
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:  # torch raises many kinds (pickle, zip, runtime) for a bad file
        raise ValueError(f"cannot read checkpoint {path}: {exc}") from exc
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path} is not a wikisum checkpoint (format {CHECKPOINT_FORMAT})")
    return state


def check_crcs(path: Path) -> None:
    """Refuse a checkpoint whose zip entries do not match their recorded CRC-32s, naming the
    first damaged entry. A file that is not a zip (cut before its directory, or an old
    non-zip torch file) is left to torch.load, which says what is wrong with it.

    Raises:
        ValueError: ``cannot read checkpoint PATH: ...``, as for any unreadable checkpoint.
    """
    try:
        with zipfile.ZipFile(path) as archive:
            damaged = archive.testzip()
    except zipfile.BadZipFile as exc:
        if zipfile.is_zipfile(path):  # the directory reads, an entry's header does not
            raise ValueError(f"cannot read checkpoint {path}: {exc} (the file is "
                             "damaged)") from exc
        return
    except (OSError, EOFError, ValueError, zlib.error) as exc:
        raise ValueError(f"cannot read checkpoint {path}: {exc} (the file is damaged)") from exc
    if damaged is not None:
        raise ValueError(f"cannot read checkpoint {path}: entry {damaged} does not match its "
                         "CRC-32 (a damaged byte): the file is damaged")


def rng_state() -> dict:
    np_state = np.random.get_state()
    state = {"python": random.getstate(), "torch": torch.get_rng_state(),
             "numpy": (np_state[0], np_state[1].tolist(), *np_state[2:])}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict) -> None:
    random.setstate(_as_tuples(state["python"]))
    torch.set_rng_state(state["torch"].cpu())
    kind, keys, *rest = state["numpy"]
    np.random.set_state((kind, np.array(keys, dtype=np.uint32), *rest))
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([s.cpu() for s in state["cuda"]])


def _as_tuples(value):
    return tuple(_as_tuples(v) for v in value) if isinstance(value, list | tuple) else value


@dataclass
class Loaded:
    model: torch.nn.Module  # eval mode
    name: str
    config: Any  # the model config dataclass
    train_config: TrainConfig
    tokenizer: Any  # the run's sentencepiece model; an hf run's models.hf.TextTokenizer
    step: int
    checkpoint: Path
    run: Path
    vocab_sha256: str | None = None  # of RUN/vocab.model, checked; None for an older run


def load(path: str, device: str = "cpu", factory=models) -> Loaded:
    """A trained model from a run directory (its best checkpoint where early stopping kept
    one, else its latest) or a checkpoint file."""
    path_ = Path(path)
    if path_.is_dir():
        ckpt = state = None
        best = best_checkpoint(str(path_))
        if best is not None:
            try:
                ckpt, state = best, read_checkpoint(best, device)
            except ValueError as exc:
                print(f"warning: {exc}; using the latest checkpoint", file=sys.stderr,
                      flush=True)
        if state is None:
            ckpt, state = latest_readable(str(path_), device)
        if ckpt is None:
            raise FileNotFoundError(f"no checkpoint in {path_ / 'checkpoints'}: has `wikisum "
                                    f"train --out {path}` saved one yet?")
        run = path_
    elif path_.is_file():
        ckpt, run = path_, path_.parent.parent
        state = read_checkpoint(ckpt, device)
    else:
        raise FileNotFoundError(f"{path} is neither a run directory nor a checkpoint file")
    model = factory.from_config(state["model_name"], state["model_config"])
    model.load_state_dict(state["model"])
    model.to(device).eval()
    if hasattr(model, "attach_run"):  # a model with its own tokenizer (hf): the run's copy
        model.attach_run(run)
    vocab_path = run / "vocab.model"
    if not vocab_path.is_file():
        raise FileNotFoundError(f"{vocab_path} not found: a run directory holds its vocabulary")
    expected, recorded_in = recorded_vocab(state, ckpt, run)
    found = vocabid.check(vocab_path, expected, recorded_in, RESTORE_VOCAB)
    tokenizer = (model.text_tokenizer if hasattr(model, "text_tokenizer")
                 else vocab.load(str(vocab_path)))
    return Loaded(model, state["model_name"], model.config, train_config_of(state, run),
                  tokenizer, state["step"], ckpt, run, found)


RESTORE_VOCAB = ("Put the run's own vocab.model back (`wikisum train` copied it from the "
                 "dataset it trained on).")


def recorded_vocab(state: dict, ckpt: Path, run: Path) -> tuple[str | None, str]:
    """The vocabulary hash the checkpoint records (else the run's config.json, for a checkpoint
    written before hashes were), and where it was found."""
    if state.get(vocabid.KEY):
        return state[vocabid.KEY], str(ckpt)
    try:
        info = runpaths.read_run_info(run) or {}
    except ValueError:
        info = {}
    if info.get(vocabid.KEY):
        return info[vocabid.KEY], str(run / "config.json")
    return None, str(ckpt)


def train_config_of(state: dict, run: str | Path) -> TrainConfig:
    """A checkpoint's train config with its paths usable from here: ``data`` found relative to
    the run directory (or, for a run written before paths were stored so, relative to the
    working directory first), ``out`` the run directory as given."""
    relative = state.get(runpaths.RELATIVE_TO) == runpaths.RUN
    return TrainConfig.from_dict(
        runpaths.resolved_train_config(state["train_config"], run, relative))
