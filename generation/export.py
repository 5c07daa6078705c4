"""A trained model on its own: ``wikisum export`` writes a run's weights, config and tokenizer to
a directory that loads without the training state, and :func:`load` opens a run or an export
alike.

    export("runs/t-dmca", "exports/t-dmca")       # the latest checkpoint's weights
    bundle = load("exports/t-dmca")                # or load("runs/t-dmca")
    bundle.model, bundle.tokenizer, bundle.decoding

An export directory holds::

    model.safetensors    the weights (safetensors: no pickle, loads with any safetensors reader)
    config.json          the model name and config, special ids, how inputs are made (extractor,
                         corpus, L) and the default decoding settings; "format": "wikisum-export"
    tokenizer.model      the sentencepiece model of the data
    data_stats.json      the training targets' lengths (where the run has them)
    extractor.json       the learned extractor, for a model trained on its rankings (JSON:
                         :mod:`wikisum.extractors.learned`)
    README.md            what the model is, and how to use it

No optimizer, schedule, RNG or data position: an export is for using a model, a run for
training it further. The weights are float32 (bf16 only where the model holds bf16).

An export is the artifact meant to be shared, so nothing in it is code: no file is unpickled,
and an export holding a pickle (``extractor.pkl``, as exports made before the learned extractor
was JSON did) is refused unread, with a message to export the run again. ``config.json``
records the tokenizer's SHA-256, and an export whose ``tokenizer.model`` is another file is
refused (its ids would decode to other words).

``export(..., format="hf")`` writes instead a folder that transformers loads
(``AutoModelForCausalLM`` and ``AutoTokenizer`` with ``trust_remote_code=True``), for T-D and
T-DMCA: :mod:`wikisum.generation.hfexport`. That folder holds Python code, and :func:`load`
does not read it; the format above stays the default, the one ``load`` and ``summarize`` read.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

EXPORT_FORMAT = "wikisum-export"
FORMATS = ("wikisum", "hf")  # `wikisum export --format`: this module's format, or transformers'
EXPORT_VERSION = 1
PRETRAINED_RECORD = "wikisum.json"  # an export of a `--model hf` run (generation.hfexport)
HF_FORMAT = "wikisum-hf-export"  # config.json's "wikisum": {"format": ...} of a --format hf folder
WEIGHTS = "model.safetensors"
CONFIG = "config.json"
TOKENIZER = "tokenizer.model"
LEARNED = "extractor.json"
PICKLE_SUFFIXES = (".pkl", ".pickle", ".joblib")  # refused in an export: loading one runs code
TOKENIZER_HASH = "tokenizer_sha256"  # config.json: the SHA-256 of tokenizer.model


@dataclass
class Bundle:
    """A model ready to summarize: from a run (its latest checkpoint) or an export."""

    model: Any  # torch.nn.Module, eval mode
    name: str  # the registry name (t-dmca, seq2seq, ...)
    config: Any  # the model config dataclass
    tokenizer: Any  # sentencepiece.SentencePieceProcessor
    special_ids: dict[str, int]
    dataset_kind: str  # "ranked" (WikiSum articles) or "pairs" (headlines)
    extractor: str  # how the training inputs were ranked (ranked datasets)
    corpus: str
    max_input_tokens: int  # L
    decoding: dict  # default DecodeOptions fields: beam, alpha, max_len, min_len
    step: int
    path: Path  # the run or export directory
    kind: str  # "run" or "export"
    data: str | None = None  # the dataset a run was trained on (None for an export)
    learned_extractor: str | None = None  # the learned extractor's file, where there is one
    stats: dict | None = field(default=None, repr=False)  # data_stats.json
    vocab_sha256: str | None = None  # the tokenizer file's, checked on load (None: unrecorded)
    target: str = "lead"  # what the model writes: the lead, or the whole article
    inputs: str = "ranked"  # what it reads: the ranked references after the title, or the title
    max_target_tokens: int | None = None  # training's limit: references are cut to it to score

    @property
    def eos_id(self) -> int:
        return int(self.special_ids["eos"])

    def input_record(self) -> dict:
        """How the model's input is made, as an export records it under ``input``."""
        return {"extractor": self.extractor, "corpus": self.corpus,
                "max_input_tokens": self.max_input_tokens, "target": self.target,
                "inputs": self.inputs, "max_target_tokens": self.max_target_tokens}


def is_export(path: str | Path) -> bool:
    return (Path(path) / WEIGHTS).is_file() and (Path(path) / CONFIG).is_file()


def default_decoding(stats: dict | None, run: str | Path | None = None,
                     warn: bool = True) -> dict:
    """The decoding defaults of a model: beam search (beam 4, alpha 0.6) up to the max_len its
    training data suggests (:mod:`wikisum.training.datastats`)."""
    from wikisum.generation.decoding import DEFAULT_BEAM
    from wikisum.training import datastats

    max_len = datastats.max_len_from(stats)
    if max_len is None:
        max_len = datastats.default_max_len(run, warn=warn) if run is not None \
            else datastats.FALLBACK_MAX_LEN
    return {"beam": DEFAULT_BEAM, "alpha": 0.6, "max_len": max_len, "min_len": 0}


def _learned_path(extractor: str, data: str | None) -> str | None:
    if extractor != "learned" or not data:
        return None
    from wikisum.core.loader import Dataset

    return Dataset(data).info.get("learned_model")


def load_run(run: str | Path, device: str = "cpu", factory=None, warn: bool = True) -> Bundle:
    """A run's latest checkpoint (or a checkpoint file) as a :class:`Bundle`."""
    from wikisum.training import checkpoint, datastats

    loaded = checkpoint.load(str(run), device, *((factory,) if factory else ()))
    info_path = loaded.run / CONFIG
    info = json.loads(info_path.read_text(encoding="utf-8")) if info_path.is_file() else {}
    special = info.get("special_ids") or _special_ids(loaded.tokenizer)
    tc = loaded.train_config
    stats = datastats.read(loaded.run)
    return Bundle(loaded.model, loaded.name, loaded.config, loaded.tokenizer, special,
                  info.get("dataset_kind", "ranked"), tc.extractor, tc.corpus,
                  tc.max_input_tokens, default_decoding(stats, loaded.run, warn), loaded.step,
                  loaded.run, "run", tc.data, None, stats, loaded.vocab_sha256, tc.target,
                  tc.inputs, tc.target_limit()[0])


def _special_ids(tokenizer) -> dict[str, int]:
    from wikisum.core import vocab

    return asdict(vocab.special_ids(tokenizer))


def load_export(path: str | Path, device: str = "cpu", factory=None) -> Bundle:
    """An export directory (written by :func:`export`) as a :class:`Bundle`."""
    from safetensors.torch import load_model

    from wikisum import models
    from wikisum.core import vocab
    from wikisum.generation import inference
    from wikisum.training import datastats, vocabid

    folder = Path(path)
    if (folder / PRETRAINED_RECORD).is_file():
        return load_pretrained_export(folder, device)
    info_path = folder / CONFIG
    if not info_path.is_file():
        raise FileNotFoundError(
            f"{folder} holds no finished export ({CONFIG} is written last and is missing: "
            "it is not an export, or the export did not finish); rerun `wikisum export --out "
            f"{folder}`")
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{info_path} is not JSON: {exc}") from exc
    if (info.get("wikisum") or {}).get("format") == HF_FORMAT:
        raise ValueError(f"{folder} is a `wikisum export --format hf` folder, which transformers "
                         "loads (AutoModelForCausalLM.from_pretrained(..., trust_remote_code="
                         "True)); wikisum reads the default format: export the run without "
                         "--format hf")
    if info.get("format") != EXPORT_FORMAT:
        raise ValueError(f"{info_path} is not a wikisum export (no \"format\": "
                         f"\"{EXPORT_FORMAT}\")")
    if int(info.get("format_version", 0)) > EXPORT_VERSION:
        raise ValueError(f"{folder} was exported by a newer wikisum (format version "
                         f"{info['format_version']}; this one reads {EXPORT_VERSION})")
    refuse_pickles(folder)
    for name in (WEIGHTS, TOKENIZER):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder / name} not found: the export is incomplete; "
                                    "export the run again")
    if (factory or models) is models:  # the check builds the registry's models
        inference.check_export_weights(folder)
    tokenizer_hash = vocabid.check(
        folder / TOKENIZER, info.get(TOKENIZER_HASH), str(info_path),
        "Put the export's own tokenizer.model back, or export the run again (`wikisum export`).")
    model = (factory or models).from_config(info["model"], info["model_config"])
    missing, unexpected = load_model(model, str(folder / WEIGHTS), strict=False,
                                     device=str(device))
    if missing or unexpected:
        raise ValueError(f"{folder / WEIGHTS} does not fit model {info['model']} of "
                         f"{CONFIG}: missing {sorted(missing)[:5]}, unexpected "
                         f"{sorted(unexpected)[:5]}")
    inference.check_finite_weights(model, str(folder / WEIGHTS))
    model.to(device).eval()
    inputs = info["input"]
    learned = folder / LEARNED
    return Bundle(model, info["model"], model.config, vocab.load(str(folder / TOKENIZER)),
                  info["special_ids"], info.get("dataset_kind", "ranked"), inputs["extractor"],
                  inputs["corpus"], int(inputs["max_input_tokens"]), dict(info["decoding"]),
                  int(info.get("step", 0)), folder, "export", None,
                  str(learned) if learned.is_file() else None, datastats.read(folder),
                  tokenizer_hash, inputs.get("target", "lead"), inputs.get("inputs", "ranked"),
                  inputs.get("max_target_tokens"))


def load_pretrained_export(folder: Path, device: str = "cpu") -> Bundle:
    """The export of a ``--model hf`` run (``save_pretrained`` files and ``wikisum.json``) as
    a :class:`Bundle`: the model and tokenizer read from the folder, nothing from the hub."""
    from wikisum.models import hf

    record = folder / PRETRAINED_RECORD
    try:
        info = json.loads(record.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{record} is not JSON: {exc}") from exc
    if info.get("format") != EXPORT_FORMAT or info.get("model") != "hf":
        raise ValueError(f"{record} is not the record of a wikisum export of a fine-tuned "
                         "model")
    refuse_pickles(folder)
    model = hf.build("hf", init=str(folder))
    model.to(device).eval()
    inputs = info["input"]
    special = dict(info["special_ids"])
    return Bundle(model, "hf", model.config, model.text_tokenizer, special,
                  info.get("dataset_kind", "ranked"), inputs["extractor"], inputs["corpus"],
                  int(inputs["max_input_tokens"]), dict(info["decoding"]),
                  int(info.get("step", 0)), folder, "export", None, None, None, None,
                  inputs.get("target", "lead"), inputs.get("inputs", "ranked"),
                  inputs.get("max_target_tokens"))


def refuse_pickles(folder: Path) -> None:
    """An export holds no pickle: loading one runs whatever code it names.

    Raises:
        ValueError: the export holds one (it is not read); the message says what to do.
    """
    found = sorted(p.name for p in folder.iterdir() if p.suffix.lower() in PICKLE_SUFFIXES)
    if not found:
        return
    if "extractor.pkl" in found:
        remedy = ("extractor.pkl is the pickled learned extractor of an export made by an "
                  "older wikisum: export the run again (`wikisum export --run RUN --out "
                  f"{folder}`), which writes it as {LEARNED}")
    else:
        remedy = "an export never holds one: remove it, or export the run again"
    raise ValueError(f"{folder} holds {', '.join(found)}, a pickle, which can run code when "
                     f"loaded: the export is refused and nothing in it was loaded; {remedy}")


def load(path: str | Path, device: str = "cpu", factory=None, warn: bool = True) -> Bundle:
    """A run directory, a checkpoint file or an export directory, as a :class:`Bundle`, its
    weights checked: an export's against its config and finite
    (:func:`wikisum.generation.inference.check_export_weights`), a run's finite.

    Raises:
        ValueError: the weights are damaged (NaN, inf, another shape), naming the tensor.
    """
    if is_export(path) or unfinished_export(path):
        return load_export(path, device, factory)  # an unfinished one is refused, named
    if not Path(path).exists():
        raise FileNotFoundError(f"{path} not found: give a run directory (`wikisum train "
                                "--out`) or an export directory (`wikisum export --out`)")
    from wikisum.generation import inference

    bundle = load_run(path, device, factory, warn)
    inference.check_finite_weights(bundle.model, str(bundle.path))
    return bundle


def unfinished_export(path: str | Path) -> bool:
    """Whether ``path`` is a folder `wikisum export` wrote into (its marker says so) that has
    no completion record: the export did not finish."""
    from wikisum.core import ownership

    folder = Path(path)
    return (folder.is_dir() and not (folder / CONFIG).is_file()
            and not (folder / PRETRAINED_RECORD).is_file()
            and (ownership.read_marker(str(folder)) or {}).get("command") == "export")


def export(run: str | Path, out: str | Path, factory=None, format: str = "wikisum") -> dict:
    """Write the model of ``run`` (its latest checkpoint, or a checkpoint file) to ``out`` in
    ``format`` (one of :data:`FORMATS`: "wikisum", this module's, or "hf", transformers'); returns
    what was written. ``out`` must be empty or absent, or an earlier export."""
    from safetensors.torch import save_model

    from wikisum.core import files, ownership
    from wikisum.extractors import learned as learned_extractor
    from wikisum.training import datastats

    if format not in FORMATS:
        raise ValueError(f"unknown export format {format!r}; choose from {', '.join(FORMATS)}")
    bundle = load_run(run, "cpu", factory)
    pretrained = bundle.name == "hf"  # a fine-tuned transformers model: its own folder
    if format == "hf" and not pretrained:
        from wikisum.generation import hfexport

        hfexport.check_family(bundle.name)
    target = Path(out)
    if target.exists() and (not target.is_dir() or (
            any(p.name not in ownership.BOOKKEEPING for p in target.iterdir())
            and not is_export(target) and not ownership.is_ours_dir(str(target), "export"))):
        raise FileExistsError(f"{target} exists and is not an earlier export: give a new or "
                              "empty --out")
    if pretrained:
        from wikisum.generation import hfexport

        return hfexport.write_pretrained(bundle, target)
    if format == "hf":
        return hfexport.write(bundle, target)
    learned = None
    if bundle.extractor == "learned":
        path = _learned_path(bundle.extractor, bundle.data)
        if not path:
            raise FileNotFoundError(f"{run} was trained on the learned extractor's rankings, "
                                    "and its dataset names no learned model file to export "
                                    "with it")
        learned = learned_extractor.load(path)  # checked JSON; a pickle is refused unread
    target.mkdir(parents=True, exist_ok=True)
    with Staging(target) as staging:
        with files.naming(str(target / WEIGHTS)):
            save_model(bundle.model, str(staging.add(WEIGHTS)), metadata={
                "format": EXPORT_FORMAT, "model": bundle.name, "step": str(bundle.step)})
        tokenizer_hash = copy_tokenizer(bundle, target, staging)
        if bundle.stats is not None:
            staging.text(datastats.STATS_FILE, json.dumps(bundle.stats, indent=1) + "\n")
        if learned is not None:
            with files.naming(str(target / LEARNED)):
                learned.save(str(staging.add(LEARNED)))
        info = export_info(bundle, tokenizer_hash)
        staging.text("README.md", model_card(info, bundle))
        staging.text(CONFIG, json.dumps(info, indent=1) + "\n")
        # an earlier export's pickle, refused on load
        staging.commit(CONFIG, stale=("extractor.pkl",))
    return written(bundle, target)


def export_info(bundle: Bundle, tokenizer_hash: str) -> dict:
    """config.json of an export: what loads the model, and where it came from."""
    return {"format": EXPORT_FORMAT, "format_version": EXPORT_VERSION, "model": bundle.name,
            "model_config": asdict(bundle.config), "special_ids": bundle.special_ids,
            "vocab_size": bundle.tokenizer.get_piece_size(), TOKENIZER_HASH: tokenizer_hash,
            "dataset_kind": bundle.dataset_kind,
            "input": bundle.input_record(),
            "decoding": bundle.decoding, "step": bundle.step,
            "exported_from": str(bundle.path), "wikisum_version": _version()}


class Staging:
    """The files of an export, written under hidden temporary names in its folder and renamed
    into place together once every one is whole (:meth:`commit`): until then an earlier export
    there is untouched (a full disk leaves it whole); then its completion record goes first
    and the new one comes last, so that an export killed while renaming is never loaded as a
    finished one. Leaving the ``with`` block without a commit removes the temporary files."""

    def __init__(self, target: Path):
        self.target = target
        self.pairs: list[tuple[Path, Path]] = []

    def __enter__(self) -> Staging:
        return self

    def __exit__(self, *exc) -> None:
        for tmp, _ in self.pairs:
            tmp.unlink(missing_ok=True)

    def add(self, name: str) -> Path:
        """The temporary path to write ``name`` to."""
        tmp = self.target / f".{name}.tmp"
        self.pairs.append((tmp, self.target / name))
        return tmp

    def text(self, name: str, text: str) -> None:
        from wikisum.core import files

        tmp = self.add(name)
        with files.naming(str(self.target / name)):
            tmp.write_text(text, encoding="utf-8")

    def commit(self, record: str, stale: tuple[str, ...] = ()) -> None:
        """Remove the earlier ``record`` and ``stale`` files, rename every staged file into
        place, ``record`` last."""
        (self.target / record).unlink(missing_ok=True)
        for name in stale:
            (self.target / name).unlink(missing_ok=True)
        for tmp, final in sorted(self.pairs, key=lambda pair: pair[1].name == record):
            os.replace(tmp, final)
        self.pairs = []


def written(bundle: Bundle, target: Path, **extra) -> dict:
    """What an export wrote: the folder, the model, its step and parameters, the files."""
    parameters = sum(p.numel() for p in bundle.model.parameters())
    return {"out": str(target), "model": bundle.name, "step": bundle.step,
            "parameters": parameters, **extra,
            "files": sorted(p.name for p in target.iterdir() if not p.name.startswith("."))}


def copy_tokenizer(bundle: Bundle, target: Path, staging: Staging | None = None) -> str:
    """The run's sentencepiece model copied to ``target/tokenizer.model``, whole (staged in
    ``staging`` when given, to be renamed with the other files); its SHA-256.

    Raises:
        VocabularyMismatch: the run's vocab.model changed since the run was loaded.
    """
    from wikisum.core import files
    from wikisum.training import vocabid

    tokenizer_tmp = staging.add(TOKENIZER) if staging else target / f".{TOKENIZER}.tmp"
    try:
        with files.naming(str(target / TOKENIZER)):
            shutil.copyfile(bundle.path / "vocab.model", tokenizer_tmp)
    except BaseException:
        tokenizer_tmp.unlink(missing_ok=True)
        raise
    tokenizer_hash = vocabid.sha256(tokenizer_tmp)
    if bundle.vocab_sha256 and tokenizer_hash != bundle.vocab_sha256:  # replaced since loading
        tokenizer_tmp.unlink()
        raise vocabid.VocabularyMismatch(f"{bundle.path / 'vocab.model'} changed while "
                                         "exporting: export again")
    if staging is None:
        tokenizer_tmp.replace(target / TOKENIZER)
    return tokenizer_hash


def _version() -> str:
    import wikisum

    return wikisum.__version__


def model_card(info: dict, bundle: Bundle) -> str:
    """README.md of an export: what the model is and how to use it."""
    inputs = info["input"]
    if info["dataset_kind"] == "pairs":
        reads = (f"the source text, cut to its first {inputs['max_input_tokens']} wordpieces "
                 "(a headline-pairs model)")
    elif inputs.get("inputs") == "title":
        reads = "the article title and `<t>` alone (a title-only model)"
    else:
        reads = (f"the article title, `<t>`, then the reference paragraphs ranked by the "
                 f"`{inputs['extractor']}` extractor with the title as the query (the "
                 f"`{inputs['corpus']}` corpus in training), cut to L = "
                 f"{inputs['max_input_tokens']} wordpieces")
    writes = ("a whole article: the lead, then sections under their headings "
              "(`summarize(..., target=\"article\")` returns them)"
              if inputs.get("target") == "article" else "a summary")
    d = info["decoding"]
    learned_row = ("| `extractor.json` | the learned extractor that ranks the paragraphs |\n"
                   if inputs["extractor"] == "learned" else "")
    return f"""# {info['model']} (wikisum export)

A `{info['model']}` model trained with wikisum for {info['step']} steps, exported from
`{info['exported_from']}`. It reads {reads}, and writes {writes}.

| file | what |
|---|---|
| `model.safetensors` | the weights |
| `config.json` | model config, special ids, input settings, default decoding |
| `tokenizer.model` | the sentencepiece model ({info['vocab_size']} pieces) |
{learned_row}
Default decoding: beam search, beam {d['beam']}, length penalty alpha {d['alpha']}, at most
{d['max_len']} tokens.

```python
from wikisum import generation

summary = generation.summarize("THIS_DIRECTORY", texts, title="Title")  # texts: paragraphs
bundle = generation.load_bundle("THIS_DIRECTORY")  # load once, summarize many: pass the bundle
```

or, on a wikisum dataset, `wikisum decode --run THIS_DIRECTORY --data DATASET --out preds.jsonl`.
"""
