"""Training runs: a run is a function of a :class:`TrainConfig`, resumable bit for bit.

    config = make_config("t-dmca", "build/data", "runs/t-dmca", options={"preset": "tiny"},
                         overrides=["lr=5e-4", "model.dropout=0.2"])
    summary = train(config)                  # resumes from runs/t-dmca/checkpoints if any
    loaded = load("runs/t-dmca")             # model (eval mode), configs, tokenizer

A run directory holds everything needed to use the model::

    RUN/config.json             model name, model config, train config, dataset special ids
    RUN/vocab.model             the sentencepiece model of the data, copied
    RUN/checkpoints/step-N.pt   the last ``keep_checkpoints`` checkpoints
    RUN/log.jsonl               one JSON object a line: training steps, dev perplexity, events
    RUN/summary.json            what :func:`train` returned last
    RUN/tensorboard/            the same scalars, when ``torch.utils.tensorboard`` imports

Optimisation: Adam (AdamW, i.e. decoupled decay, when ``weight_decay > 0``) with the learning rate
of :func:`learning_rate`, gradient clipping by global norm, and gradient accumulation over
``accumulate`` batches. The loss of an update is the mean over its target tokens: each batch's
loss is weighted by its share of the update's target tokens.

A checkpoint holds the model, optimizer and scheduler, the step, the RNG states (python, numpy,
torch, CUDA) of every rank and the data position (epoch, batches and examples taken), so a run
killed after step k and started again with the same ``--out`` trains steps k+1.. exactly as an
uninterrupted run would (bit for bit on CPU; see :class:`wikisum.models.batching.BatchStream`).

Several GPUs (or CPU processes): ``torchrun --nproc_per_node N -m workflows.cli train ...`` runs
DistributedDataParallel (NCCL on GPUs, gloo on CPUs); rank r reads every N-th example from the
r-th on, and only rank 0 writes checkpoints and logs.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import math
import os
import random
import re
import sys
import time
import types
import typing
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field, fields
from itertools import islice
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import yaml
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from wikisum import models
from wikisum.models import batching
from wikisum.pipeline import vocab
from wikisum.pipeline.loader import Dataset

CHECKPOINT_FORMAT = 1
CHECKPOINT_RE = re.compile(r"^step-(\d+)\.pt$")
PROBE_VOCAB = 64  # vocab_size of the meta-device model built only to read its config fields
# TrainConfig fields that may differ when a run is resumed: they change how long it runs and what
# it reports, never what a step computes.
RESUMABLE_CHANGES = frozenset({
    "data", "out", "steps", "stop_after", "log_every", "eval_every", "dev_examples",
    "checkpoint_every", "keep_checkpoints", "device", "tensorboard"})
# Model config fields set from the dataset's special ids when the model has them.
SPECIAL_ID_FIELDS = {"pad_id": "pad", "unk_id": "unk", "bos_id": "bos", "eos_id": "eos",
                     "title_sep_id": "title_sep", "sep_id": "sep"}


class ConfigError(ValueError):
    """A configuration that cannot be run: an unknown key, a value of the wrong type, a file
    that does not parse. The message names the key, value or file."""


class NonFiniteLoss(RuntimeError):
    """The loss (or the gradient norm) became NaN or infinite; training stopped."""


@dataclass
class TrainConfig:
    """Everything a training run depends on. Lengths are in subword tokens."""

    model: str  # a name of the models registry (models.NAMES)
    data: str  # a dataset directory (`wikisum build` / `rank` / `convert-pairs`)
    out: str  # the run directory
    preset: str = "base"  # model size: tiny | base | paper
    model_overrides: dict[str, Any] = field(default_factory=dict)  # model config fields
    steps: int = 20000  # optimizer updates in all
    stop_after: int | None = None  # stop after this many updates in this invocation (resumable)
    # Data (the paper's defaults: tf-idf ranking of the combined corpus).
    extractor: str = "tfidf"
    corpus: str = "combined"
    max_input_tokens: int = 500  # L
    max_target_tokens: int | None = None  # cut targets to this length (None: whole leads)
    batch_tokens: int = 4096  # budget of a batch: rows x (longest source + target + exemplar)
    shuffle_buffer: int = 2000  # examples
    sort_pool: int = 1000  # examples sorted by length together before packing into batches
    # Optimisation.
    lr: float = 1e-3  # peak learning rate, reached at the end of warmup
    warmup_steps: int = 4000
    adam_betas: tuple[float, float] = (0.9, 0.98)
    adam_eps: float = 1e-9
    weight_decay: float = 0.0
    clip_norm: float = 1.0  # global gradient norm; 0 disables clipping
    accumulate: int = 1  # batches per update
    seed: int = 0
    # Bookkeeping.
    log_every: int = 50  # updates
    eval_every: int = 1000  # updates between dev perplexities (also at the last step); 0: never
    dev_examples: int | None = 500  # dev examples per evaluation (None: the whole split)
    checkpoint_every: int = 1000  # updates (and always at the end of an invocation)
    keep_checkpoints: int = 5
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    bf16: bool = True  # bf16 autocast on CUDA (ignored on CPU)
    tensorboard: bool = True  # also write RUN/tensorboard when torch.utils.tensorboard imports

    def __post_init__(self):
        self.adam_betas = tuple(self.adam_betas)
        self.model_overrides = dict(self.model_overrides)
        positive = ("steps", "max_input_tokens", "batch_tokens", "sort_pool", "warmup_steps",
                    "accumulate", "log_every", "checkpoint_every", "keep_checkpoints")
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("shuffle_buffer", "eval_every", "clip_norm", "weight_decay", "adam_eps"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be at least 0, got {getattr(self, name)}")
        for name in ("stop_after", "max_target_tokens", "dev_examples"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be at least 1 (or null), got {value}")
        if not self.lr > 0:
            raise ConfigError(f"lr must be positive, got {self.lr}")
        if self.preset not in models.PRESETS:
            raise ConfigError(f"unknown preset {self.preset!r}; choose from "
                              f"{', '.join(models.PRESETS)}")

    @classmethod
    def from_dict(cls, values: dict) -> TrainConfig:
        """From :func:`dataclasses.asdict` output (a checkpoint, config.json); keys this version
        does not know are dropped."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


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
# Configuration from files, flags and key=value overrides.


def parse_value(raw: str) -> Any:
    """A key=value value as a JSON value, else a YAML scalar, else the string itself.

    JSON first so that ``1e-3`` is a number (YAML 1.1 reads it as a string).
    """
    try:
        return json.loads(raw)
    except ValueError:
        pass
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    return value if isinstance(value, str | int | float | bool) or value is None else raw


def read_config_file(path: str) -> dict[str, Any]:
    """A mapping from a .yaml/.yml, .toml or .json file, flattened: ``model: {dropout: 0.1}``
    becomes ``{"model.dropout": 0.1}``, ``train: {lr: 1e-3}`` becomes ``{"train.lr": 1e-3}``;
    ``model: t-dmca`` stays the model name."""
    parsers = {".yaml": yaml.safe_load, ".yml": yaml.safe_load, ".json": json.loads,
               ".toml": lambda text: _toml().loads(text)}
    suffix = Path(path).suffix.lower()
    if suffix not in parsers:
        raise ConfigError(f"config file {path}: unknown format {suffix!r}; use .yaml, .yml, "
                          ".toml or .json")
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    try:
        values = parsers[suffix](text)
    except ConfigError:
        raise
    except (yaml.YAMLError, ValueError) as exc:  # JSONDecodeError, TOMLDecodeError: ValueErrors
        raise ConfigError(f"config file {path} does not parse: {exc}") from exc
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ConfigError(f"config file {path} must hold a mapping of settings, not "
                          f"{type(values).__name__}")
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if key in ("model", "train") and isinstance(value, dict):
            flat.update({f"{key}.{k}": v for k, v in value.items()})
        else:
            flat[str(key)] = value
    return flat


def _toml():
    try:
        import tomllib  # Python 3.11+
    except ModuleNotFoundError:  # pragma: no cover - Python 3.10
        try:
            import tomli as tomllib
        except ModuleNotFoundError as exc:
            raise ConfigError("TOML config files need Python 3.11+ (or the tomli package)"
                              ) from exc
    return tomllib


def _type_name(hint: Any) -> str:
    return getattr(hint, "__name__", None) or str(hint).replace("typing.", "")


def coerce(key: str, value: Any, hint: Any) -> Any:
    """``value`` as the type ``hint`` (int, float, bool, str, X | None, tuple, list, dict), or a
    :class:`ConfigError` naming ``key``. Integers become floats where a float is expected and
    whole floats (``1e3``) ints where an int is; nothing else is converted."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any or hint is None:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arg in (a for a in args if a is not type(None)):
            with contextlib.suppress(ConfigError):
                return coerce(key, value, arg)
        raise ConfigError(f"{key}={value!r}: expected {_type_name(hint)}")
    target = origin or hint
    ok = False
    if target is bool:
        ok = isinstance(value, bool)
    elif target is int:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif target is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif target is str:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        ok = isinstance(value, str)
    elif target in (tuple, list):
        ok = isinstance(value, list | tuple)
        if ok and args:
            items = args if target is tuple and Ellipsis not in args else [args[0]] * len(value)
            if len(items) != len(value):
                raise ConfigError(f"{key}={value!r}: expected {len(items)} values")
            value = target(coerce(key, v, a) for v, a in zip(value, items, strict=True))
        elif ok:
            value = target(value)
    elif target is dict:
        ok = isinstance(value, dict)
    else:
        return value
    if not ok:
        raise ConfigError(f"{key}={value!r}: expected {_type_name(hint)}")
    return value


def field_types(config_class: type) -> dict[str, Any]:
    """name -> type hint of a config dataclass's fields (``Any`` where the hint does not
    resolve)."""
    try:
        hints = typing.get_type_hints(config_class)
    except (NameError, TypeError):
        hints = {}
    return {f.name: hints.get(f.name, Any) for f in fields(config_class)}


TRAIN_FIELDS = {k: v for k, v in field_types(TrainConfig).items() if k != "model_overrides"}


def split_settings(settings: dict[str, Any], model_fields: dict[str, Any]
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Route each setting to the train config or the model config, typed.

    ``model.X`` and ``train.X`` name their config; a plain name goes to the one config that has
    such a field (a name in both, or in neither, is an error saying what to write instead).
    """
    train: dict[str, Any] = {}
    model: dict[str, Any] = {}
    for key, value in settings.items():
        scope, _, name = key.rpartition(".")
        if scope == "model":
            if name not in model_fields:
                raise ConfigError(_unknown(key, name, model_fields, "model config"))
            model[name] = coerce(key, value, model_fields[name])
        elif scope == "train":
            if name not in TRAIN_FIELDS:
                raise ConfigError(_unknown(key, name, TRAIN_FIELDS, "TrainConfig"))
            train[name] = coerce(key, value, TRAIN_FIELDS[name])
        elif scope:
            raise ConfigError(f"{key}: only model.<field> and train.<field> are qualified names")
        elif name in TRAIN_FIELDS and name in model_fields:
            raise ConfigError(f"{key} is both a TrainConfig and a model config field: write "
                              f"train.{key} or model.{key}")
        elif name in TRAIN_FIELDS:
            train[name] = coerce(key, value, TRAIN_FIELDS[name])
        elif name in model_fields:
            model[name] = coerce(key, value, model_fields[name])
        else:
            raise ConfigError(_unknown(key, name, {**TRAIN_FIELDS, **model_fields},
                                       "TrainConfig or the model config"))
    return train, model


def _unknown(key: str, name: str, known: Iterable[str], where: str) -> str:
    close = difflib.get_close_matches(name, list(known), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else f"; known: {', '.join(known)}"
    return f"unknown setting {key!r}: no field {name!r} in {where}{hint}"


def probe_config(name: str, preset: str, factory=models):
    """The config of model ``name`` at ``preset``, from a model built on the meta device (no
    weights allocated; a small CPU model if the family cannot build on meta)."""
    try:
        with torch.device("meta"):
            return factory.build(name, preset, vocab_size=PROBE_VOCAB).config
    except (RuntimeError, NotImplementedError):
        return factory.build(name, preset, vocab_size=PROBE_VOCAB).config


def model_field_types(config) -> dict[str, Any]:
    """name -> type hint of a model config's fields, falling back to the type of its value."""
    hints = field_types(type(config))
    for name, hint in hints.items():
        value = getattr(config, name)
        if hint is Any and value is not None:
            hints[name] = type(value)
    return hints


def make_config(model: str | None = None, data: str | None = None, out: str | None = None, *,
                file: str | None = None, options: dict[str, Any] | None = None,
                overrides: Iterable[str] = (), wfe: bool = False, factory=models) -> TrainConfig:
    """A :class:`TrainConfig` from, in increasing precedence: a config ``file``, ``options``
    (fields given as flags; None values are ignored), ``model``/``data``/``out``, then
    ``key=value`` ``overrides`` (values parsed by :func:`parse_value`). ``wfe`` turns on the
    model's word-frequency estimator."""
    settings: dict[str, Any] = read_config_file(file) if file else {}
    settings.update({k: v for k, v in (options or {}).items() if v is not None})
    settings.update({k: v for k, v in (("model", model), ("data", data), ("out", out))
                     if v is not None})
    for item in overrides:
        key, eq, raw = item.partition("=")
        if not eq or not key:
            raise ConfigError(f"{item!r} is not a key=value setting")
        settings[key.strip()] = parse_value(raw.strip())
    name = settings.get("model", settings.get("train.model"))
    if not isinstance(name, str):
        raise ConfigError("no model: give --model NAME or `model: NAME` in the config file")
    preset = settings.get("preset", settings.get("train.preset", "base"))
    if preset not in models.PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; choose from {', '.join(models.PRESETS)}")
    model_config = probe_config(name, preset, factory)
    train, model_values = split_settings(settings, model_field_types(model_config))
    if wfe:
        if not hasattr(model_config, "wfe"):
            raise ConfigError(f"model {name!r} has no word-frequency estimator (no wfe field)")
        model_values["wfe"] = True
    for required in ("data", "out"):
        if required not in train:
            raise ConfigError(f"no {required}: give --{required} or `{required}:` in the config "
                              "file")
    return TrainConfig(**train, model_overrides=model_values)


# ------------------------------------------------------------------------------------------
# Checkpoints.


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


def save_atomically(obj: Any, path: Path) -> None:
    """torch.save to a temporary file in the same folder, then rename: a reader (or a resumed
    run) sees the old file or the new one, never half of one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(obj, tmp)
    os.replace(tmp, path)


def write_text_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def read_checkpoint(path: Path, device: str | torch.device = "cpu") -> dict:
    try:
        state = torch.load(path, map_location=device, weights_only=True)
    except Exception as exc:  # torch raises many kinds (pickle, zip, runtime) for a bad file
        raise ValueError(f"cannot read checkpoint {path}: {exc}") from exc
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise ValueError(f"{path} is not a wikisum checkpoint (format {CHECKPOINT_FORMAT})")
    return state


def _rng_state() -> dict:
    np_state = np.random.get_state()
    state = {"python": random.getstate(), "torch": torch.get_rng_state(),
             "numpy": (np_state[0], np_state[1].tolist(), *np_state[2:])}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def _set_rng_state(state: dict) -> None:
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
    tokenizer: Any  # sentencepiece.SentencePieceProcessor of the run
    step: int
    checkpoint: Path
    run: Path


def load(path: str, device: str = "cpu", factory=models) -> Loaded:
    """A trained model from a run directory (its latest checkpoint) or a checkpoint file."""
    path_ = Path(path)
    if path_.is_dir():
        ckpt = latest_checkpoint(str(path_))
        if ckpt is None:
            raise FileNotFoundError(f"no checkpoint in {path_ / 'checkpoints'}: has `wikisum "
                                    f"train --out {path}` saved one yet?")
        run = path_
    elif path_.is_file():
        ckpt, run = path_, path_.parent.parent
    else:
        raise FileNotFoundError(f"{path} is neither a run directory nor a checkpoint file")
    state = read_checkpoint(ckpt, device)
    model = factory.from_config(state["model_name"], state["model_config"])
    model.load_state_dict(state["model"])
    model.to(device).eval()
    vocab_path = run / "vocab.model"
    if not vocab_path.is_file():
        raise FileNotFoundError(f"{vocab_path} not found: a run directory holds its vocabulary")
    return Loaded(model, state["model_name"], model.config,
                  TrainConfig.from_dict(state["train_config"]), vocab.load(str(vocab_path)),
                  state["step"], ckpt, run)


# ------------------------------------------------------------------------------------------
# Processes and devices.


@dataclass(frozen=True)
class Processes:
    rank: int = 0
    world: int = 1
    device: torch.device = torch.device("cpu")
    started_group: bool = False  # this run initialised the process group (and destroys it)

    @property
    def main(self) -> bool:
        return self.rank == 0

    def all_sum(self, values: list[float]) -> list[float]:
        tensor = torch.tensor(values, dtype=torch.float64, device=self.device)
        if self.world > 1:
            dist.all_reduce(tensor)
        return tensor.tolist()

    def gather(self, obj: Any) -> list[Any]:
        if self.world == 1:
            return [obj]
        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, obj)
        return out


def resolve_device(name: str, local_rank: int = 0) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"device {name!r}: CUDA is not available here")
        if device.index is None:
            device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    return device


def processes(device_name: str) -> Processes:
    """This process's rank, world size and device; joins the process group under torchrun."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = resolve_device(device_name, local_rank)
    if world <= 1:
        return Processes(device=device)
    started = not dist.is_initialized()
    if started:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return Processes(dist.get_rank(), dist.get_world_size(), device, started)


# ------------------------------------------------------------------------------------------
# Logs.


def _step_of(line: str) -> int | None:
    """The step of a log line; None for a line cut short when its process was killed."""
    try:
        return int(json.loads(line).get("step", 0))
    except (ValueError, AttributeError):
        return None


class RunLog:
    """RUN/log.jsonl (and TensorBoard) on rank 0, a progress line on stderr."""

    def __init__(self, run: Path, resume_step: int | None, active: bool, tensorboard: bool):
        self.active = active
        self.path = run / "log.jsonl"
        self.writer = None
        if not active:
            return
        kept = []
        if resume_step is not None and self.path.exists():
            # A killed run logged steps after its last checkpoint; they are run again now.
            kept = [line for line in self.path.read_text(encoding="utf-8").splitlines()
                    if _step_of(line) is not None and _step_of(line) <= resume_step]
        write_text_atomically(self.path, "".join(line + "\n" for line in kept))
        self.file = self.path.open("a", encoding="utf-8")
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                pass
            else:
                self.writer = SummaryWriter(str(run / "tensorboard"), purge_step=resume_step)

    def write(self, record: dict, progress: str | None = None) -> None:
        if not self.active:
            return
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        if self.writer is not None and "step" in record:
            for key, value in record.items():
                if key != "step" and isinstance(value, int | float) and math.isfinite(value):
                    self.writer.add_scalar(key, value, record["step"])
        if progress:
            print(progress, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.active and not self.file.closed:
            self.file.close()
            if self.writer is not None:
                self.writer.close()


# ------------------------------------------------------------------------------------------
# The run.


def find_vocab(dataset: Dataset) -> str:
    """The dataset's sentencepiece model: dataset.json's path as written, or beside the data."""
    recorded = dataset.info.get("vocab") or "vocab.model"
    candidates = [recorded, FileSystems.join(dataset.dir, recorded),
                  FileSystems.join(dataset.dir, Path(recorded).name)]
    for path in candidates:
        if FileSystems.exists(path):
            return path
    raise FileNotFoundError(f"the vocabulary of {dataset.dir} is not found; tried "
                            f"{', '.join(candidates)}")


def copy_file(source: str, target: Path) -> None:
    with FileSystems.open(source, compression_type=CompressionTypes.UNCOMPRESSED) as f:
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
    procs = processes(config.device)
    try:
        return _Trainer(config, factory, procs).run()
    finally:
        if procs.started_group:
            dist.destroy_process_group()


class _Trainer:
    def __init__(self, config: TrainConfig, factory, procs: Processes):
        self.config = config
        self.procs = procs
        self.run_dir = Path(config.out)
        self.dataset = Dataset(config.data)
        self.eos_id = int(self.dataset.special_ids["eos"])
        self.exemplars = batching.needs_exemplars(config.model)
        ckpt = latest_checkpoint(config.out)
        state = read_checkpoint(ckpt) if ckpt else None
        if state is not None:
            _check_resumable(TrainConfig.from_dict(state["train_config"]), config, ckpt)
            model = factory.from_config(state["model_name"], state["model_config"])
            model.load_state_dict(state["model"])
        else:
            random.seed(config.seed)
            np.random.seed(config.seed)
            torch.manual_seed(config.seed)
            model = build_model(config, self.dataset, factory)
        self.model = model.to(procs.device)
        self.name = config.model
        params = [p for p in self.model.parameters() if p.requires_grad]
        optim = torch.optim.AdamW if config.weight_decay > 0 else torch.optim.Adam
        self.optimizer = optim(params, lr=config.lr, betas=config.adam_betas,
                               eps=config.adam_eps, weight_decay=config.weight_decay)
        self.scheduler = scheduler(self.optimizer, config.warmup_steps)
        self.step = 0
        self.resumed_from: int | None = None
        position, skipped_before = batching.Position(), Counter()
        if state is not None:
            self.optimizer.load_state_dict(state["optimizer"])
            self.scheduler.load_state_dict(state["scheduler"])
            self.step = self.resumed_from = int(state["step"])
            saved = state["data"]
            if len(saved["examples"]) != procs.world:
                raise ConfigError(f"{ckpt} was written by {len(saved['examples'])} processes, "
                                  f"this run has {procs.world}: resume with the same number")
            position = batching.Position(saved["epoch"], saved["batches"],
                                         saved["examples"][procs.rank])
            skipped_before = Counter(saved["skipped_before"])
            self.tokens_seen = int(state["tokens_seen"])
            _set_rng_state(state["rng"][procs.rank])
        else:
            self.tokens_seen = 0
            if procs.rank:  # the same initial weights everywhere, different dropout per rank
                torch.manual_seed(config.seed + procs.rank)
        self.stream = batching.BatchStream(self._epoch, position, skipped_before)
        self.net = self.model
        if procs.world > 1:
            ids = [procs.device.index] if procs.device.type == "cuda" else None
            self.net = torch.nn.parallel.DistributedDataParallel(self.model, device_ids=ids)
        self.autocast = torch.autocast(procs.device.type, dtype=torch.bfloat16,
                                       enabled=procs.device.type == "cuda" and config.bf16)
        self.saved_step = self.step if state is not None else None
        self.last_ckpt = ckpt
        if procs.main:
            self._prepare_run_dir(state is None)
        self.log = RunLog(self.run_dir, self.resumed_from, procs.main, config.tensorboard)

    # -- data ------------------------------------------------------------------------------

    def _read(self, split: str) -> Iterator:
        c = self.config
        return batching.read_examples(self.dataset, split, c.extractor, c.corpus,
                                      c.max_input_tokens, self.exemplars)

    def _epoch(self, epoch: int, counts: Counter) -> Iterator[list[batching.Pair]]:
        c = self.config
        return batching.epoch_batches(
            lambda: self._read("train"), eos_id=self.eos_id, max_tokens=c.batch_tokens,
            seed=c.seed, epoch=epoch, counts=counts, rank=self.procs.rank,
            world=self.procs.world, shuffle_buffer=c.shuffle_buffer, pool=c.sort_pool,
            max_target_tokens=c.max_target_tokens)

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
        self.log.write({"step": self.step, "event": "epoch_end", "epoch": s.epoch,
                        "batches": s.batches, "examples": s.examples,
                        "skipped": dict(s.counts)})
        s.next_epoch()

    # -- run directory ---------------------------------------------------------------------

    def _prepare_run_dir(self, fresh: bool) -> None:
        (self.run_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
        for stale in (self.run_dir / "checkpoints").glob(".*.tmp"):
            stale.unlink()  # a save interrupted before its rename
        target = self.run_dir / "vocab.model"
        if fresh or not target.exists():
            copy_file(find_vocab(self.dataset), target)
        info = {"model": self.name, "model_config": asdict(self.model.config),
                "train_config": asdict(self.config), "vocab": "vocab.model",
                "special_ids": self.dataset.special_ids,
                "vocab_size": self.dataset.info["vocab_size"],
                "dataset_kind": self.dataset.info.get("kind", "ranked")}
        write_text_atomically(self.run_dir / "config.json", json.dumps(info, indent=1) + "\n")

    def _save(self) -> None:
        """A checkpoint of this step (every rank takes part; rank 0 writes)."""
        s = self.stream
        rng = self.procs.gather(_rng_state())
        examples = self.procs.gather(s.examples)
        path = self.run_dir / "checkpoints" / f"step-{self.step}.pt"
        if self.procs.main:
            save_atomically({
                "format": CHECKPOINT_FORMAT, "model_name": self.name,
                "model_config": asdict(self.model.config), "train_config": asdict(self.config),
                "step": self.step, "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict(),
                "data": {"epoch": s.epoch, "batches": s.batches, "examples": examples,
                         "skipped_before": dict(s.skipped_before)},
                "rng": rng, "tokens_seen": self.tokens_seen}, path)
            for _, old in checkpoints(self.config.out)[:-self.config.keep_checkpoints]:
                old.unlink()
            self.log.write({"step": self.step, "event": "checkpoint", "path": str(path)})
        self.last_ckpt = path
        self.saved_step = self.step

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
        pairs = (p for ex in mine
                 if (p := batching.prepare(ex, self.eos_id, skips, c.max_target_tokens)))
        self.model.eval()
        nll = tokens = 0.0
        for pairs_ in batching.length_batches(pairs, c.batch_tokens, pool=c.sort_pool,
                                              counts=skips):
            with self.autocast:
                out = self.model(batching.to_batch(pairs_).to(self.procs.device))
            nll += float(out.target_nll)
            tokens += float(out.target_tokens)
        self.model.train()
        nll, tokens = self.procs.all_sum([nll, tokens])
        if tokens == 0:
            return None
        return {"step": self.step, "dev_ppl": math.exp(nll / tokens),
                "dev_nll": nll / tokens, "dev_tokens": int(tokens)}

    def run(self) -> dict:
        try:
            return self._run()
        finally:
            self.log.close()

    def _run(self) -> dict:
        c = self.config
        start_step, started = self.step, time.perf_counter()
        self.log.write({"step": self.step, "event": "resume" if self.resumed_from is not None
                        else "start", "model": self.name,
                        "parameters": sum(p.numel() for p in self.model.parameters()),
                        "world": self.procs.world, "device": str(self.procs.device)})
        last: dict[str, Any] = {"loss": None, "dev": None}
        window_tokens, window_start = 0.0, time.perf_counter()
        while self.step < c.steps and (c.stop_after is None
                                       or self.step - start_step < c.stop_after):
            loss, nll, norm, tokens, lr = self._update()
            self.tokens_seen += int(tokens)
            window_tokens += tokens
            last["loss"] = loss
            if self.step % c.log_every == 0:
                elapsed = max(time.perf_counter() - window_start, 1e-9)
                rate = window_tokens / elapsed
                self.log.write(
                    {"step": self.step, "epoch": self.stream.epoch, "loss": loss, "nll": nll,
                     "lr": lr, "grad_norm": norm, "tokens_per_s": rate},
                    f"train {self.name} step {self.step}/{c.steps} loss {loss:.4f} "
                    f"lr {lr:.2e} {rate:,.0f} tok/s")
                window_tokens, window_start = 0.0, time.perf_counter()
            if c.eval_every and (self.step % c.eval_every == 0 or self.step == c.steps):
                dev = self._dev_perplexity()
                if dev is not None:
                    last["dev"] = dev
                    self.log.write(dev, f"dev {self.name} step {self.step} "
                                        f"ppl {dev['dev_ppl']:.3f}")
            if self.step % c.checkpoint_every == 0:
                self._save()
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
        }
        if self.procs.main:
            self.log.write({"step": self.step, "event": "end", "skipped": summary["skipped"]})
            write_text_atomically(self.run_dir / "summary.json",
                                  json.dumps(summary, indent=1) + "\n")
        return summary

    @staticmethod
    def _skip_keys() -> list[str]:
        return [batching.EMPTY_TARGET, batching.TOO_LONG]

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
    return " ".join(parts)

