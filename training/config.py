"""Training configuration: :class:`TrainConfig` and how it is made from a config file, flags
and ``key=value`` overrides, each value typed against the field it sets.

    config = make_config("t-dmca", "build/data", "runs/t-dmca", options={"preset": "tiny"},
                         overrides=["lr=5e-4", "model.dropout=0.2"])

A setting goes to the train config or to the model config (``model.X`` / ``train.X`` say which
where a name is in both); an unknown name is an error with the closest known names.
"""

from __future__ import annotations

import contextlib
import difflib
import json
import math
import reprlib
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import torch
import yaml

from wikisum import models
from wikisum.core.inputs import DEFAULT_INPUT
from wikisum.core.loader import (
    DEFAULT_MAX_TARGET_TOKENS,
    INPUT_VIEWS,
    TARGETS,
    dataset_default_input,
)
from wikisum.training import runpaths

PROBE_VOCAB = 64  # vocab_size of the meta-device model built only to read its config fields
# preset="auto": the preset for the device the run starts on (CPU: small enough to train there).
AUTO_PRESETS = {"cpu": "tiny", "cuda": "base"}
# warmup_steps=None: WARMUP_STEPS, capped at WARMUP_SHARE of the run's steps.
WARMUP_STEPS = 4000
WARMUP_SHARE = 0.1
# Where a run's log goes: log.jsonl always; TensorBoard and Weights & Biases when asked (extras).
LOG_TARGETS = ("jsonl", "tensorboard", "wandb")
LONG_TARGET_POLICIES = ("auto", "skip", "cut")
# A config file is a page of settings: a larger one, or one nested deeper, is refused unread.
MAX_CONFIG_BYTES = 1 << 20
MAX_CONFIG_DEPTH = 16
YAML_CORE_TAG = "tag:yaml.org,2002:"
_SHOWN = reprlib.Repr()  # values in messages: long strings and big collections abbreviated
_SHOWN.maxstring = _SHOWN.maxother = 80


class ConfigError(ValueError):
    """A configuration that cannot be run: an unknown key, a value of the wrong type, a file
    that does not parse. The message names the key, value or file; ``key`` is the setting
    it concerns, where there is one."""

    key: str | None = None


@dataclass
class TrainConfig:
    """Everything a training run depends on. Lengths are in subword tokens."""

    model: str  # a name of the models registry (models.NAMES)
    data: str  # a dataset directory (`wikisum build` / `rank` / `convert-pairs`)
    out: str  # the run directory
    preset: str = "auto"  # model size: tiny | base | paper, or auto (tiny on CPU, base on CUDA)
    model_overrides: dict[str, Any] = field(default_factory=dict)  # model config fields
    steps: int = 20000  # optimizer updates in all
    stop_after: int | None = None  # stop after this many updates in this invocation (resumable)
    # Data (the paper's defaults: tf-idf ranking of the combined corpus).
    extractor: str = DEFAULT_INPUT.extractor
    corpus: str = DEFAULT_INPUT.corpus
    max_input_tokens: int = DEFAULT_INPUT.max_input_tokens  # L
    # What the model learns to write from what: the lead or the whole article (a build with
    # --targets lead,article), from the ranked references or from the title alone (the paper's
    # title-only article model).
    target: str = "lead"  # lead | article
    inputs: str = "ranked"  # ranked (title, <t>, ranked references cut to L) | title (title, <t>)
    # Targets longer than this: skipped in training or cut (long_targets), counted either way;
    # None: the target's default (a lead whole; an article 2,192, as the paper).
    max_target_tokens: int | None = None
    long_targets: str = "auto"  # skip | cut | auto (an article skipped, a lead cut)
    batch_tokens: int = 4096  # budget of a batch: rows x (longest source + target + exemplar)
    shuffle_buffer: int = 2000  # examples
    sort_pool: int = 1000  # examples sorted by length together before packing into batches
    # Optimisation.
    lr: float = 1e-3  # peak learning rate, reached at the end of warmup
    # None: 4000, or 10% of steps when that is less (a short run reaches its peak lr).
    warmup_steps: int | None = None
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
    # Early stopping: stop when the dev perplexity has not improved for this many evaluations
    # in a row, keeping the best model in RUN/checkpoints/best.pt (0: never stop early).
    patience: int = 0
    checkpoint_every: int = 1000  # updates (and always at the end of an invocation)
    # Also when this many minutes passed since the last checkpoint (0: never), and always when
    # the process is asked to stop (SIGTERM, SIGINT): a killed run loses minutes, not hours.
    checkpoint_minutes: float = 10.0
    keep_checkpoints: int = 5
    device: str = "auto"  # auto | cpu | cuda | cuda:N
    bf16: bool = True  # bf16 autocast on CUDA (ignored on CPU)
    # torch.compile the model for the training forward and backward (evaluation, decoding and
    # checkpoints use the plain module): slower to start (compiling), faster per step on CUDA.
    compile: bool = False
    # Log targets besides RUN/log.jsonl (always written): tensorboard, wandb.
    log_to: tuple[str, ...] | str = ("jsonl",)

    def __post_init__(self):
        self.adam_betas = tuple(self.adam_betas)
        self.model_overrides = dict(self.model_overrides)
        self.log_to = parse_log_to(self.log_to)
        positive = ("steps", "max_input_tokens", "batch_tokens", "sort_pool",
                    "accumulate", "log_every", "checkpoint_every", "keep_checkpoints")
        for name in positive:
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("shuffle_buffer", "eval_every", "clip_norm", "weight_decay", "adam_eps",
                     "checkpoint_minutes", "patience"):
            if getattr(self, name) < 0:
                raise ConfigError(f"{name} must be at least 0, got {getattr(self, name)}")
        for name in ("stop_after", "max_target_tokens", "dev_examples", "warmup_steps"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be at least 1 (or null), got {value}")
        if self.patience and not self.eval_every:
            raise ConfigError(f"patience={self.patience} stops on the dev perplexity, which "
                              "eval_every=0 never measures: set eval_every too")
        if not self.lr > 0:
            raise ConfigError(f"lr must be positive, got {self.lr}")
        for name, choices in (("target", TARGETS), ("inputs", INPUT_VIEWS),
                              ("long_targets", LONG_TARGET_POLICIES)):
            if getattr(self, name) not in choices:
                raise ConfigError(f"{name} must be one of {', '.join(choices)}, got "
                                  f"{getattr(self, name)!r}")
        if self.preset != "auto" and self.preset not in models.PRESETS:
            raise ConfigError(f"unknown preset {self.preset!r}; choose from "
                              f"{', '.join(models.PRESETS)} or auto")

    def target_limit(self) -> tuple[int | None, str]:
        """(the longest target trained on whole, what happens to a longer one: "skip" or
        "cut"): ``max_target_tokens`` or the target's default, and ``long_targets`` with auto
        resolved (an article is skipped, as the paper's whole-article model ignores longer
        examples; a lead is cut, as before targets had a policy)."""
        limit = (self.max_target_tokens if self.max_target_tokens is not None
                 else DEFAULT_MAX_TARGET_TOKENS[self.target])
        policy = self.long_targets
        if policy == "auto":
            policy = "skip" if self.target == "article" else "cut"
        return limit, policy

    @classmethod
    def from_dict(cls, values: dict) -> TrainConfig:
        """From :func:`dataclasses.asdict` output (a checkpoint, config.json); keys this version
        does not know are dropped."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


def parse_log_to(value: Any) -> tuple[str, ...]:
    """Log targets from a list or a comma-separated string ("jsonl,tensorboard"): known names,
    each once, jsonl first (it is always written)."""
    items = value.split(",") if isinstance(value, str) else list(value)
    names = [str(item).strip().lower() for item in items if str(item).strip()]
    unknown = [n for n in names if n not in LOG_TARGETS]
    if unknown:
        raise ConfigError(f"unknown log target {unknown[0]!r}; choose from "
                          f"{', '.join(LOG_TARGETS)}")
    return ("jsonl", *dict.fromkeys(n for n in names if n != "jsonl"))


def default_warmup(steps: int) -> int:
    """The warmup of a run of ``steps`` updates when none is set: WARMUP_STEPS, or WARMUP_SHARE
    of the steps when that is less (at least 1)."""
    return max(1, min(WARMUP_STEPS, int(steps * WARMUP_SHARE)))


def auto_preset(device_type: str) -> str:
    """The preset ``auto`` stands for on a device of type ``device_type`` (cpu, cuda, ...)."""
    return AUTO_PRESETS.get(device_type, "tiny")


def parse_value(raw: str) -> Any:
    """A key=value value as a JSON value, else a YAML scalar or flow collection (``[a, b]``,
    ``{a: 1}``), else the string itself. A collection stays a collection, so that a field
    that wants text refuses it rather than taking its spelling as a name or path.

    JSON first so that ``1e-3`` is a number (YAML 1.1 reads it as a string). No YAML tag
    constructs anything (safe loading); a tagged value that safe loading refuses stays text.
    """
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        pass
    try:
        value = yaml.safe_load(raw)
    except (yaml.YAMLError, RecursionError):
        return raw
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    is_flow = raw.lstrip()[:1] in ("[", "{")
    return value if is_flow and isinstance(value, list | dict) else raw


class _ConfigLoader(yaml.SafeLoader):
    """Safe YAML loading of a config file, stricter still: only the tags of YAML's own data
    types (a tag safe loading has no constructor for, such as ``!!python/object``, is refused
    before anything is built), no anchors or aliases (a few lines of aliases can stand for
    billions of values), at most :data:`MAX_CONFIG_DEPTH` levels, no key given twice. A
    refusal raises :class:`_Refused` with the line it is on."""

    def __init__(self, stream):
        super().__init__(stream)
        self.depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise _Refused(event.start_mark, "anchors and aliases (&name, *name) are not "
                           "accepted in a config file: write each value out")
        self.depth += 1
        if self.depth > MAX_CONFIG_DEPTH:
            raise _Refused(event.start_mark, f"settings nested over {MAX_CONFIG_DEPTH} levels "
                           "deep")
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_object(self, node, deep=False):
        if node.tag not in self.yaml_constructors:
            tag = node.tag.replace(YAML_CORE_TAG, "!!", 1)
            raise _Refused(node.start_mark, f"the tag {tag} is not accepted (a config file "
                           "holds plain values; no tag builds an object)")
        return super().construct_object(node, deep)

    def construct_mapping(self, node, deep=False):
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, list | dict | set):
                raise _Refused(key_node.start_mark, "a key must be a name, not a collection")
            if key in seen:
                raise _Refused(key_node.start_mark, f"the key {key!r} is given twice")
            seen.add(key)
        return super().construct_mapping(node, deep)


class _Refused(Exception):
    """What :class:`_ConfigLoader` refuses, and where."""

    def __init__(self, mark, reason: str):
        super().__init__(reason)
        self.line = mark.line + 1 if mark is not None else None
        self.reason = reason


def _load_yaml(text: str, path: str) -> Any:
    loader = _ConfigLoader(text)
    try:
        return loader.get_single_data()
    except _Refused as exc:
        raise ConfigError(f"config file {path} line {exc.line}: {exc.reason}") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f" line {mark.line + 1}" if mark is not None else ""
        problem = " ".join(str(exc.problem or exc.context or "").split())
        raise ConfigError(f"config file {path}{where} does not parse as YAML: {problem}"
                          ) from None
    finally:
        loader.dispose()


def _load_json(text: str, path: str) -> Any:
    def unique(pairs):
        found = dict(pairs)
        if len(found) < len(pairs):
            seen: set[str] = set()
            twice = next(key for key, _ in pairs if key in seen or seen.add(key))
            raise ConfigError(f"config file {path}: the key {twice!r} is given twice")
        return found

    return json.loads(text, object_pairs_hook=unique)


def read_config_file(path: str) -> dict[str, Any]:
    """A mapping from a .yaml/.yml, .toml or .json file, flattened: ``model: {dropout: 0.1}``
    becomes ``{"model.dropout": 0.1}``, ``train: {lr: 1e-3}`` becomes ``{"train.lr": 1e-3}``;
    ``model: t-dmca`` stays the model name.

    Refused in one line naming the file (and the line, for YAML): a file over
    :data:`MAX_CONFIG_BYTES` or not UTF-8, one nested deeper than :data:`MAX_CONFIG_DEPTH`, a
    key given twice (also as ``lr`` and ``train: {lr}``), and in YAML a tag that would build
    an object (``!!python/object``, ...), anchors and aliases (:class:`_ConfigLoader`)."""
    parsers = {".yaml": _load_yaml, ".yml": _load_yaml, ".json": _load_json,
               ".toml": lambda text, _: _toml().loads(text)}
    suffix = Path(path).suffix.lower()
    if suffix not in parsers:
        raise ConfigError(f"config file {path}: unknown format {suffix!r}; use .yaml, .yml, "
                          ".toml or .json")
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_CONFIG_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from exc
    if len(data) > MAX_CONFIG_BYTES:
        raise ConfigError(f"config file {path} is over {MAX_CONFIG_BYTES:,} bytes: a config "
                          "file holds a page of settings; refused unread")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {path} is not UTF-8 text (byte {data[exc.start]:#04x} "
                          f"at offset {exc.start})") from None
    try:
        values = parsers[suffix](text, path)
    except ConfigError:
        raise
    except RecursionError:
        raise ConfigError(f"config file {path} nests its values too deep") from None
    except ValueError as exc:  # JSONDecodeError, TOMLDecodeError: ValueErrors
        raise ConfigError(f"config file {path} does not parse: "
                          f"{' '.join(str(exc).split())}") from None
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ConfigError(f"config file {path} must hold a mapping of settings, not "
                          f"{type(values).__name__}")
    flat: dict[str, Any] = {}
    for key, value in values.items():
        if key in ("model", "train") and isinstance(value, dict):
            for name, item in value.items():
                _put(flat, f"{key}.{name}", item, path)
        else:
            _put(flat, str(key), value, path)
    for key in flat:
        scope, _, name = key.partition(".")
        if scope in ("model", "train") and name in flat:
            raise ConfigError(f"config file {path}: the setting {key!r} is given twice (also "
                              f"as {name!r})")
    return flat


def _put(flat: dict[str, Any], key: str, value: Any, path: str) -> None:
    """Set ``flat[key]``, refusing a setting the file gives twice."""
    if key in flat:
        raise ConfigError(f"config file {path}: the setting {key!r} is given twice")
    flat[key] = value


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
        raise ConfigError(f"{key}={_shown(value)}: expected {_type_name(hint)}")
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
        if ok:
            try:
                value = float(value)
            except OverflowError:
                raise ConfigError(f"{key}={_shown(value)}: out of range") from None
            if not math.isfinite(value):
                raise ConfigError(f"{key}={value!r}: expected a finite number")
    elif target is str:
        if isinstance(value, int | float) and not isinstance(value, bool):
            value = str(value)
        ok = isinstance(value, str)
    elif target in (tuple, list):
        ok = isinstance(value, list | tuple)
        if ok and args:
            items = args if target is tuple and Ellipsis not in args else [args[0]] * len(value)
            if len(items) != len(value):
                raise ConfigError(f"{key}={_shown(value)}: expected {len(items)} values")
            value = target(coerce(key, v, a) for v, a in zip(value, items, strict=True))
        elif ok:
            value = target(value)
    elif target is dict:
        ok = isinstance(value, dict)
    else:
        return value
    if not ok:
        raise ConfigError(f"{key}={_shown(value)}: expected {_type_name(hint)}")
    return value


def _shown(value: Any) -> str:
    """``value`` for a message: its repr, long strings and big collections abbreviated."""
    return _SHOWN.repr(value)


def field_types(config_class: type) -> dict[str, Any]:
    """name -> type hint of a config dataclass's fields (``Any`` where the hint does not
    resolve)."""
    try:
        hints = typing.get_type_hints(config_class)
    except (NameError, TypeError):
        hints = {}
    return {f.name: hints.get(f.name, Any) for f in fields(config_class)}


TRAIN_FIELDS = {k: v for k, v in field_types(TrainConfig).items() if k != "model_overrides"}
# Settings of a run that resuming it does not carry over: they concern one invocation.
NOT_INHERITED = frozenset({"out", "stop_after", "device"})


def split_settings(settings: dict[str, Any], model_fields: dict[str, Any]
                   ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Route each setting to the train config or the model config, typed.

    ``model.X`` and ``train.X`` name their config; a plain name goes to the one config that has
    such a field (a name in both, or in neither, is an error saying what to write instead).
    """
    train: dict[str, Any] = {}
    model: dict[str, Any] = {}
    for key, value in settings.items():
        try:
            _route(key, value, model_fields, train, model)
        except ConfigError as exc:
            exc.key = exc.key or key
            raise
    return train, model


def _route(key: str, value: Any, model_fields: dict[str, Any], train: dict[str, Any],
           model: dict[str, Any]) -> None:
    """The one setting ``key`` typed into ``train`` or ``model`` (:func:`split_settings`)."""
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


def run_settings(out: str) -> tuple[dict[str, Any], str | None]:
    """The settings a run was started with (RUN/config.json), as the lowest layer of a resumed
    run's settings, with its dataset found relative to the run; ({}, None) for a new run. The
    second value explains a dataset that is no longer where the run says."""
    info = runpaths.read_run_info(out)
    if not info or not isinstance(info.get("train_config"), dict):
        return {}, None
    saved = info["train_config"]
    relative = info.get(runpaths.RELATIVE_TO) == runpaths.RUN
    base = {f"train.{k}": v for k, v in saved.items()
            if k in TRAIN_FIELDS and k not in NOT_INHERITED}
    base.update({f"model.{k}": v for k, v in (saved.get("model_overrides") or {}).items()})
    missing = None
    if isinstance(saved.get("data"), str):
        data, tried = runpaths.resolve_dataset(saved["data"], out, relative)
        if data is None:
            base.pop("train.data")
            missing = (f"the run's dataset {saved['data']!r} is not found (tried "
                       f"{', '.join(tried)})")
        else:
            base["train.data"] = data
    return base, missing


def _overridden(key: str, settings: dict[str, Any]) -> bool:
    """Whether the setting ``key`` (train.X or model.X) of a run's saved settings is given again
    in ``settings``, in either spelling (train.lr or lr; model.dropout or dropout)."""
    return key in settings or key.partition(".")[2] in settings


def make_config(model: str | None = None, data: str | None = None, out: str | None = None, *,
                file: str | None = None, options: dict[str, Any] | None = None,
                overrides: Iterable[str] = (), wfe: bool = False, factory=models) -> TrainConfig:
    """A :class:`TrainConfig` from, in increasing precedence: the settings of the run ``out``
    when it exists (so ``make_config(out=RUN)`` resumes a run, wherever it and its dataset
    moved; stop_after and device are not carried over), a config ``file``, ``options`` (fields
    given as flags; None values are ignored), ``model``/``data``/``out``, then ``key=value``
    ``overrides`` (values parsed by :func:`parse_value`). ``wfe`` turns on the model's
    word-frequency estimator. ``tensorboard=true`` (older runs' setting) means
    ``log_to=jsonl,tensorboard``."""
    settings: dict[str, Any] = read_config_file(file) if file else {}
    from_file = set(settings)  # less those given again below: whose errors name the file
    settings.update({k: v for k, v in (options or {}).items() if v is not None})
    settings.update({k: v for k, v in (("model", model), ("data", data), ("out", out))
                     if v is not None})
    for item in overrides:
        key, eq, raw = item.partition("=")
        if not eq or not key:
            raise ConfigError(f"{item!r} is not a key=value setting")
        settings[key.strip()] = parse_value(raw.strip())
        from_file.discard(key.strip())
    from_file -= {k for k, v in (options or {}).items() if v is not None}
    from_file -= {k for k, v in (("model", model), ("data", data), ("out", out)) if v is not None}
    _tensorboard_alias(settings)
    missing = None
    run = settings.get("out", settings.get("train.out"))
    if isinstance(run, str):
        try:
            base, missing = run_settings(run)
        except ValueError as exc:
            raise ConfigError(str(exc)) from exc
        settings = {**{k: v for k, v in base.items() if not _overridden(k, settings)},
                    **settings}
    name = settings.get("model", settings.get("train.model"))
    if not isinstance(name, str):
        raise ConfigError("no model: give --model NAME or `model: NAME` in the config file")
    preset = settings.get("preset", settings.get("train.preset", "auto"))
    if preset != "auto" and preset not in models.PRESETS:
        raise ConfigError(f"unknown preset {preset!r}; choose from {', '.join(models.PRESETS)} "
                          "or auto")
    # Every preset of a model has the same fields: auto probes the base one.
    model_config = probe_config(name, "base" if preset == "auto" else preset, factory)
    try:
        train, model_values = split_settings(settings, model_field_types(model_config))
    except ConfigError as exc:
        if exc.key in from_file:
            raise ConfigError(f"config file {file}: {exc}") from None
        raise
    if wfe:
        if not hasattr(model_config, "wfe"):
            raise ConfigError(f"model {name!r} has no word-frequency estimator (no wfe field)")
        model_values["wfe"] = True
    if "data" not in train and missing:
        raise ConfigError(f"{missing}: give --data DIR")
    for required in ("data", "out"):
        if required not in train:
            raise ConfigError(f"no {required}: give --{required} or `{required}:` in the config "
                              "file")
    train["data"] = dataset_setting(train["data"])
    for key, value in dataset_default_input(train["data"]).items():
        train.setdefault(key, value)
    return TrainConfig(**train, model_overrides=model_values)


def dataset_setting(path: str) -> str:
    """The dataset directory a ``data`` setting names: the root of a `wikisum build` names its
    data/ (:func:`wikisum.core.outputs.dataset_dir`), so that the run records the
    directory it reads. A path that names no dataset is kept: reading it says so."""
    from wikisum.core import outputs

    try:
        return outputs.dataset_dir(path)
    except FileNotFoundError:
        return path


def _tensorboard_alias(settings: dict[str, Any]) -> None:
    """``tensorboard=true|false`` (the setting before log_to) as a log_to entry."""
    for key in ("tensorboard", "train.tensorboard"):
        if key in settings:
            value = coerce(key, settings.pop(key), bool)
            if value:
                given = settings.get("log_to", settings.get("train.log_to", ("jsonl",)))
                settings["log_to"] = (*parse_log_to(given), "tensorboard")
                settings.pop("train.log_to", None)
