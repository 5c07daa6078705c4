"""Paragraph extractors: rank a WikiSum article's reference paragraphs (stage one, part two).

"Extractor" is the paper's word (Liu et al. call this stage extractive): these are paragraph
*rankers*. Turning a web page into its main text, which datatrove and trafilatura call
extraction, happens before, in ``wikisum.pipeline.webtext``; every extractor here sees the
same normalised, filtered paragraphs and returns an order of them, never text.

One file per extractor, all behind the interface of ``wikisum.extractors.base.Extractor``:
``rank(title, paragraphs, target=None, sources=None) -> list[int]``, an order of the paragraphs'
indices, best first, ties in original order. ``REGISTRY`` maps each name to a factory::

    extractors.get("tfidf").rank("Bodmin", paragraphs)
    extractors.get("learned", path="gs://bucket/learned.pkl").rank(title, paragraphs, sources=s)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from wikisum.extractors.base import Extractor, Scorer
from wikisum.extractors.cheating import Cheating
from wikisum.extractors.identity import Identity
from wikisum.extractors.sumbasic import SumBasic
from wikisum.extractors.textrank import TextRank
from wikisum.extractors.tfidf import TfIdf


def _load_learned(**kwargs) -> Extractor:
    # Imported on demand: the learned extractor needs a trained model file, and its module
    # imports Beam's file systems, which no other extractor needs.
    return importlib.import_module("wikisum.extractors.learned").load(**kwargs)


REGISTRY: dict[str, Callable[..., Extractor]] = {
    "identity": Identity,
    "tfidf": TfIdf,
    "textrank": TextRank,
    "sumbasic": SumBasic,
    "cheating": Cheating,
    "learned": _load_learned,
}
NAMES = tuple(REGISTRY)


def get(name: str, **kwargs) -> Extractor:
    """A new extractor ``name``, built with ``kwargs`` (``learned`` needs ``path=``)."""
    try:
        factory = REGISTRY[name]
    except KeyError:
        raise ValueError(f"unknown extractor {name!r}; valid names: {', '.join(NAMES)}") from None
    return factory(**kwargs)


__all__ = ["NAMES", "REGISTRY", "Extractor", "Scorer", "get"]
