"""Abstractive models that write a Wikipedia lead from the ranked reference text (stage two).

    model = models.build("t-dmca", preset="tiny", vocab_size=4000)
    loaded = models.load("runs/t-dmca")          # model + config + tokenizer from a run
    models.export_model("runs/t-dmca", "exports/t-dmca")   # safetensors + config + tokenizer
    models.summarize("exports/t-dmca", texts, title="Bodmin")  # new text -> a summary

Every model implements the interface of :mod:`wikisum.models.base` (``forward`` for training;
``start``, ``step`` and ``reorder`` for decoding). One module per family; each exposes
``build(name, preset, **overrides)`` and ``from_config(name, config_dict)``.
"""

from __future__ import annotations

import importlib

# name -> module of its family. Imported lazily so that `import wikisum.models` stays cheap.
FAMILIES = {
    "t-ed": "wikisum.models.transformer",
    "t-d": "wikisum.models.transformer",
    "t-dmca": "wikisum.models.transformer",
    "seq2seq": "wikisum.models.recurrent",
    "attexp": "wikisum.models.recurrent",
    "adadec": "wikisum.models.recurrent",
    "adadec+attexp": "wikisum.models.recurrent",
}
NAMES = list(FAMILIES)
PRESETS = ("tiny", "base", "paper")


def family(name: str):
    if name not in FAMILIES:
        raise ValueError(f"unknown model {name!r}; choose from {', '.join(NAMES)}")
    return importlib.import_module(FAMILIES[name])


def needs_exemplars(name: str) -> bool:
    """Whether model ``name`` reads a retrieved exemplar (``wikisum exemplars`` must have run on
    its data): its family's ``needs_exemplars(name)`` says; a family without one reads none."""
    check = getattr(family(name), "needs_exemplars", None)
    return bool(check and check(name))


def build(name: str, preset: str = "base", **overrides):
    """A freshly initialised model ``name`` of size ``preset``, any config field overridden."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    return family(name).build(name, preset, **overrides)


def from_config(name: str, config: dict):
    """The model ``name`` rebuilt from a saved config dict (as in a checkpoint)."""
    return family(name).from_config(name, config)


def load(path: str, device: str = "cpu"):
    """A trained model from a run directory or checkpoint file.

    See :func:`wikisum.models.checkpoint.load`.

    Returns a ``Loaded`` with ``.model`` (eval mode), ``.config``, ``.train_config`` and
    ``.tokenizer`` (the run's sentencepiece model).
    """
    from wikisum.models import checkpoint

    return checkpoint.load(path, device=device)


def load_bundle(path: str, device: str = "cpu"):
    """A run directory, checkpoint file or export directory as a
    :class:`wikisum.models.export.Bundle`: model (eval mode), tokenizer, special ids, how its
    inputs are made and its default decoding settings. Load once, summarize many."""
    from wikisum.models import export

    return export.load(path, device)


def load_export(path: str, device: str = "cpu"):
    """An export directory (``wikisum export``) as a :class:`wikisum.models.export.Bundle`."""
    from wikisum.models import export

    return export.load_export(path, device)


def export_model(run: str, out: str) -> dict:
    """Write the model of ``run`` to ``out`` (safetensors weights, config, tokenizer); see
    :func:`wikisum.models.export.export`."""
    from wikisum.models import export

    return export.export(run, out)


def summarize(model, texts, title: str = "", **options) -> str:
    """The summary of ``texts`` (one article's source documents) by ``model`` (a run or export
    directory, or a bundle from :func:`load_bundle`): tokenise, rank the paragraphs with the
    model's extractor (the title is the query), cut to L, decode (beam search unless told
    otherwise), detokenise. See :func:`wikisum.models.inference.summarize`."""
    from wikisum.models import inference

    return inference.summarize(model, texts, title, **options)
