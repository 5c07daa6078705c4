"""What a training run settles before its first update: the automatic settings made concrete,
the settings checked (against a resumed checkpoint's, and for sense), the dataset's vocabulary
found and a fresh model built for it.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import torch

from wikisum import models
from wikisum.core import files
from wikisum.core.loader import Dataset
from wikisum.training.config import (
    ConfigError,
    TrainConfig,
    auto_preset,
    default_warmup,
    model_field_types,
    probe_config,
)
from wikisum.training.schedule import learning_rate

# TrainConfig fields that may differ when a run is resumed: they change how long it runs and what
# it reports, never what a step computes.
RESUMABLE_CHANGES = frozenset({
    "data", "out", "steps", "stop_after", "log_every", "eval_every", "dev_examples", "patience",
    "checkpoint_every", "checkpoint_minutes", "keep_checkpoints", "device", "log_to",
    "compile"})
# Model config fields set from the dataset's special ids when the model has them.
SPECIAL_ID_FIELDS = {"pad_id": "pad", "unk_id": "unk", "bos_id": "bos", "eos_id": "eos",
                     "title_sep_id": "title_sep", "sep_id": "sep"}


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
    if not config.model_overrides:
        return factory.build(config.model, config.preset, **values)
    parameters = None
    with contextlib.suppress(Exception), torch.device("meta"):
        # counted before any memory is taken; a family that cannot build on the meta device
        # (or settings that cannot build at all, said below) is not counted
        parameters = sum(p.numel() for p in
                         factory.build(config.model, config.preset, **values).parameters())
    if parameters is not None:
        _check_size(config, parameters)
    try:
        return factory.build(config.model, config.preset, **values)
    except (RuntimeError, TypeError, ArithmeticError, ValueError) as exc:
        if isinstance(exc, ValueError) and type(exc) is not ValueError:
            raise  # a family's own error (a checkpoint folder's, ...) says what it is
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise ConfigError(f"model {config.model} (preset {config.preset}) cannot be built with "
                          f"the settings {_given(config.model_overrides)}: {detail}") from None


def _given(overrides: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}"[:80] for k, v in overrides.items())


def _check_size(config: TrainConfig, parameters: int) -> None:
    """Refuse a model whose weights, gradients and Adam's two moments (16 bytes a parameter)
    need more than the memory this machine has free: a model config set to absurd sizes is
    refused in one line before it is built, not killed by the kernel part-way."""
    need = 16 * parameters
    have = _free_memory()
    if have is not None and need > have:
        raise ConfigError(f"model {config.model} with the settings "
                          f"{_given(config.model_overrides)} has {parameters:,} parameters, "
                          f"about {need / 2**30:.1f} GiB to train with Adam, more than the "
                          f"{have / 2**30:.1f} GiB of memory free: choose smaller sizes")


def _free_memory() -> int | None:
    """MemAvailable of this machine in bytes (None where /proc/meminfo does not say)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


def exemplars_needed(factory, name: str) -> bool:
    """What the model factory says of model ``name`` (the registry asks its family); a factory
    that cannot say builds models that read no exemplar."""
    check = getattr(factory, "needs_exemplars", None)
    return bool(check and check(name))


def check_resumable(saved: TrainConfig, now: TrainConfig, ckpt: Path) -> None:
    """Raise :class:`ConfigError` naming each setting of ``now`` that differs from the
    checkpoint's ``saved`` one, apart from :data:`RESUMABLE_CHANGES`."""
    old, new = asdict(saved), asdict(now)
    changed = [k for k in old if k not in RESUMABLE_CHANGES and old[k] != new.get(k)]
    if changed:
        detail = "; ".join(f"{k}: {old[k]!r} -> {new.get(k)!r}" for k in changed)
        raise ConfigError(f"{ckpt} was trained with other settings ({detail}); resume with the "
                          "same settings, or train into a new --out")


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
