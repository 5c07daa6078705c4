"""The interface every extractor implements, and the helpers they share.

An extractor ranks one article's reference paragraphs: ``rank`` returns an order (a permutation
of ``range(len(paragraphs))``), never text, so that one stored ranking serves every input length
L. Ties are broken by position (a stable sort), which keeps the references' own order (citations
first, then search results by rank) wherever an extractor cannot tell paragraphs apart.

Every extractor counts the same units: words are ``wikisum.core.text.words`` (lowercased Unicode
letter/digit runs) and sentences ``wikisum.core.text.sentences``. Per-paragraph counts are
sparse matrices built by ``count_matrix`` (the matrices of scikit-learn's ``CountVectorizer``), so
that scores are matrix products rather than loops.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp


@runtime_checkable
class Extractor(Protocol):
    """Ranks an article's paragraphs, best first."""

    name: str

    def rank(self, title: str, paragraphs: Sequence[str], target: str | None = None,
             sources: Sequence[str] | None = None) -> list[int]:
        """An order of ``range(len(paragraphs))``, best paragraph first.

        Args:
            title: The Wikipedia article's title.
            paragraphs: The reference paragraphs, already normalised and filtered.
            target: The article's lead; only the cheating oracle reads it.
            sources: Per paragraph, ``"citation"`` or ``"search"``; only the learned extractor
                reads it.
        """
        ...


@runtime_checkable
class Scorer(Protocol):
    """An extractor whose order comes from one score per paragraph (higher is better)."""

    name: str

    def scores(self, title: str, paragraphs: Sequence[str],
               target: str | None = None) -> np.ndarray:
        """(n,) float scores; ``rank`` is ``order_by_score`` of these."""
        ...


def order_by_score(scores: np.ndarray) -> list[int]:
    """Indices by descending score, equal scores in their original order."""
    return [int(i) for i in np.argsort(-np.asarray(scores, dtype=float), kind="stable")]


def count_matrix(texts: Sequence[str], analyzer: Callable[[str], list[str]],
                 vocabulary: Sequence[str] | None = None) -> sp.csr_matrix:
    """(len(texts), V) counts of the terms ``analyzer`` yields for each text.

    The matrix ``CountVectorizer(analyzer=analyzer, vocabulary=vocabulary).fit_transform(texts)``
    gives (a test holds them equal): columns are the terms in sorted order, or ``vocabulary``'s
    order when given, so permuting the texts permutes the rows and nothing else. It is built
    directly because CountVectorizer's own bookkeeping costs as much again as the tokenising,
    and unlike CountVectorizer an empty vocabulary is not an error: the matrix has no columns.
    """
    tokens = [analyzer(text) for text in texts]
    if vocabulary is None:
        terms = sorted(set().union(*tokens))
        index = dict(zip(terms, range(len(terms)), strict=True))
        columns = [index[term] for doc in tokens for term in doc]
        sizes = [len(doc) for doc in tokens]
    else:
        terms = list(dict.fromkeys(vocabulary))
        index = dict(zip(terms, range(len(terms)), strict=True))
        known = [[index[term] for term in doc if term in index] for doc in tokens]
        columns = [column for doc in known for column in doc]
        sizes = [len(doc) for doc in known]
    indptr = np.zeros(len(texts) + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    matrix = sp.csr_matrix((np.ones(len(columns), dtype=np.int64),
                            np.asarray(columns, dtype=np.int64), indptr),
                           shape=(len(texts), len(terms)))
    matrix.sum_duplicates()  # repeated terms of a text -> one entry with their count
    return matrix
