"""The model registry: each model name and the module of its family, imported on first use
(so that ``import wikisum.models`` stays cheap).

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
    # a pretrained Hugging Face checkpoint (train --init PATH), fine-tuned: wikisum[hf]
    "hf": "wikisum.models.hf",
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
