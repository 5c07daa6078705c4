"""tf-idf with the article's title as the query (Liu et al. 2018, the extractive stage).

The article's paragraphs are the documents, so the inverse document frequency is computed over
this one article's paragraphs, not over a corpus:

    score(p) = sum over distinct title words w of  N_w * log(N_d / N_dw)

with N_w the count of w in p, N_d the number of paragraphs and N_dw the number of paragraphs that
contain w. A title word found in no paragraph contributes 0 (its N_w is 0 everywhere), and a word
found in every paragraph contributes 0 too (log 1), so with a single paragraph every score is 0.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from wikisum.core.text import words
from wikisum.extractors.base import count_matrix, order_by_score


class TfIdf:
    name = "tfidf"

    def scores(self, title: str, paragraphs: Sequence[str],
               target: str | None = None) -> np.ndarray:
        """(n,) the paper's tf-idf score of each paragraph for the title's words."""
        # Only the title's words are counted: (N_d, |title words|).
        counts = count_matrix(paragraphs, words, vocabulary=words(title)).tocsc()
        n_docs = counts.shape[0]
        doc_freq = np.diff(counts.indptr)  # N_dw: the non-zeros per column
        idf = np.zeros(counts.shape[1])
        present = doc_freq > 0
        idf[present] = np.log(n_docs / doc_freq[present])
        return np.asarray(counts @ idf, dtype=float).reshape(n_docs)

    def rank(self, title: str, paragraphs: Sequence[str], target: str | None = None,
             sources: Sequence[str] | None = None) -> list[int]:
        return order_by_score(self.scores(title, paragraphs))
