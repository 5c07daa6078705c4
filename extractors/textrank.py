"""TextRank over paragraphs (Mihalcea & Tarau 2004, section 4.1).

The paragraphs are the nodes of an undirected graph; two paragraphs are joined by an edge weighted
by their word overlap, normalised by their lengths (their sentence similarity):

    w(p, q) = |words(p) & words(q)| / (log |p| + log |q|)

with the overlap counted over distinct words and |p| the number of word tokens of p. There are no
self-loops. The paragraphs are ranked by their weighted PageRank (damping 0.85), computed once per
article by networkx. A paragraph that shares no word with any other is an isolated node: it gets
only the teleport mass (plus its share of the mass of dangling nodes), the lowest score there is,
and isolated paragraphs keep their original order among themselves.

The overlap of every pair is one sparse product B @ B.T of the binary paragraph-word matrix, so
the work grows with the number of non-zero overlaps, not with a Python loop over pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import networkx as nx
import numpy as np
import scipy.sparse as sp

from wikisum.core.text import words
from wikisum.extractors.base import count_matrix, order_by_score

DAMPING = 0.85
# networkx's default tolerance (1e-6 x n on the L1 change) leaves each score within about 1e-6 of
# its fixed point; a tighter one makes the order of close paragraphs reliable.
TOLERANCE = 1e-10
MAX_ITERATIONS = 1000
# Scores are rounded to this many decimals so that paragraphs whose scores are equal in exact
# arithmetic (two copies of one paragraph, say) tie, and are ordered by position, instead of
# being ordered by the last bits of floating-point sums.
DECIMALS = 12


def similarity_matrix(paragraphs: Sequence[str]) -> sp.csr_matrix:
    """(n, n) symmetric edge weights w(p, q), zero diagonal, only overlapping pairs stored."""
    counts = count_matrix(paragraphs, words)  # (n, V) token counts
    n = counts.shape[0]
    lengths = np.asarray(counts.sum(axis=1), dtype=float).reshape(n)  # |p| in tokens
    binary = counts.astype(bool).astype(np.int32)
    overlap = (binary @ binary.T).tocoo()  # (n, n) distinct shared words
    off_diagonal = overlap.row != overlap.col
    rows, cols = overlap.row[off_diagonal], overlap.col[off_diagonal]
    shared = overlap.data[off_diagonal].astype(float)
    # A pair that overlaps has at least one token each, so the logs are finite; the sum is 0 only
    # for two one-word paragraphs with the same word, where, as in sumy, the weight is the
    # overlap itself (1).
    norm = np.log(lengths[rows]) + np.log(lengths[cols])
    weight = np.divide(shared, norm, out=shared.copy(), where=norm > 0)
    return sp.csr_matrix((weight, (rows, cols)), shape=(n, n))


class TextRank:
    name = "textrank"

    def scores(self, title: str, paragraphs: Sequence[str],
               target: str | None = None) -> np.ndarray:
        """(n,) PageRank of each paragraph in the overlap graph; they sum to 1."""
        n = len(paragraphs)
        if n == 0:
            return np.zeros(0)
        # The graph is undirected: the upper triangle holds every edge once, which halves the
        # Python-level work of building it (the bulk of the time on a dense graph).
        graph = nx.from_scipy_sparse_array(sp.triu(similarity_matrix(paragraphs)))
        rank = nx.pagerank(graph, alpha=DAMPING, weight="weight", tol=TOLERANCE,
                           max_iter=MAX_ITERATIONS)
        return np.round(np.array([rank[i] for i in range(n)], dtype=float), DECIMALS)

    def rank(self, title: str, paragraphs: Sequence[str], target: str | None = None,
             sources: Sequence[str] | None = None) -> list[int]:
        return order_by_score(self.scores(title, paragraphs))
