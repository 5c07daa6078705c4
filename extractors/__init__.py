"""Paragraph extractors: rank a WikiSum article's reference paragraphs (stage one, part two).

"Extractor" is the paper's word (Liu et al. call this stage extractive): these are paragraph
*rankers*. Turning a web page into its main text, which datatrove and trafilatura call
extraction, happens before, in ``wikisum.pipeline.webtext``; every extractor here sees the
same normalised, filtered paragraphs and returns an order of them, never text.

One file per extractor, all behind the interface of ``wikisum.extractors.base.Extractor``:
``rank(title, paragraphs, target=None, sources=None) -> list[int]``, an order of the paragraphs'
indices, best first, ties in original order. ``REGISTRY`` maps each name to its factory, as
``"module:attribute"``, imported on first use (so that the command line lists the names without
importing numpy, scikit-learn or networkx)::

    extractors.get("tfidf").rank("Bodmin", paragraphs)
    extractors.get("learned", path="gs://bucket/learned.json").rank(title, paragraphs, sources=s)

``NAMES`` is the registry's names, in its order, read from ``REGISTRY`` at each look-up.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wikisum.extractors.base import Extractor, Scorer

# name -> "module:factory". The order is the order of the rankings in the shards and of the
# report's tables. `learned` needs a trained model file: its factory loads one (path=...).
REGISTRY: dict[str, str] = {
    "identity": "wikisum.extractors.identity:Identity",
    "tfidf": "wikisum.extractors.tfidf:TfIdf",
    "textrank": "wikisum.extractors.textrank:TextRank",
    "sumbasic": "wikisum.extractors.sumbasic:SumBasic",
    "cheating": "wikisum.extractors.cheating:Cheating",
    "learned": "wikisum.extractors.learned:load",
}

# Train articles sampled to fit the learned extractor (`learned.train`, `wikisum rank
# --learned-articles`); here rather than in learned.py, which imports numpy and scikit-learn.
LEARNED_MAX_ARTICLES = 5000


def get(name: str, **kwargs) -> Extractor:
    """A new extractor ``name``, built with ``kwargs`` (``learned`` needs ``path=``)."""
    try:
        target = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown extractor {name!r}; valid names: "
                         f"{', '.join(REGISTRY)}") from None
    module, _, factory = target.partition(":")
    return getattr(importlib.import_module(module), factory)(**kwargs)


def __getattr__(name: str):
    if name == "NAMES":
        return tuple(REGISTRY)
    if name in ("Extractor", "Scorer"):  # the interface, with numpy and scipy
        return getattr(importlib.import_module("wikisum.extractors.base"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"NAMES", "Extractor", "Scorer"})


__all__ = ["LEARNED_MAX_ARTICLES", "NAMES", "REGISTRY", "Extractor", "Scorer", "get"]
