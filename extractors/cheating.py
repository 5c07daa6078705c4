"""The "cheating" oracle: bigram recall of the paragraph against the target lead.

Liu et al. (2018, the extractive stage) rank paragraphs by

    recall(p) = |bigrams(p) & bigrams(lead)| / |bigrams(lead)|

over distinct word bigrams (pairs of consecutive ``wikisum.core.text.words`` tokens). It reads
the answer, so it is an upper bound for the extractive stage, not an extractor for unseen articles;
it is also the learned extractor's training target. A lead of fewer than two words has no bigram:
every paragraph then scores 0 and keeps its original position.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from wikisum.core.text import words
from wikisum.extractors.base import count_matrix, order_by_score


def bigrams(text: str) -> list[str]:
    """The word bigrams of ``text``, as "first second" (a word never contains a space)."""
    tokens = words(text)
    return [f"{a} {b}" for a, b in zip(tokens[:-1], tokens[1:], strict=True)]


class Cheating:
    name = "cheating"

    def scores(self, title: str, paragraphs: Sequence[str],
               target: str | None = None) -> np.ndarray:
        """(n,) the share of the lead's distinct bigrams that each paragraph contains."""
        if target is None:
            raise ValueError("the cheating extractor ranks by recall of the target lead: "
                             "pass target=<the article's lead>")
        lead = bigrams(target)
        # Only the lead's bigrams are counted: (n, |distinct lead bigrams|).
        counts = count_matrix(paragraphs, bigrams, vocabulary=lead)
        if counts.shape[1] == 0:
            return np.zeros(len(paragraphs))
        found = np.diff(counts.tocsr().indptr)  # distinct lead bigrams in each paragraph
        return found / counts.shape[1]

    def rank(self, title: str, paragraphs: Sequence[str], target: str | None = None,
             sources: Sequence[str] | None = None) -> list[int]:
        return order_by_score(self.scores(title, paragraphs, target))
