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
the work grows with the number of non-zero overlaps, not with a Python loop over pairs. Copies of
one paragraph (the same distinct words and the same length) are one node standing for all of
them: by symmetry they have one score, and networkx computes it on the graph of nodes with each
copy's mass and edges counted (the copies' edges among themselves included; see :func:`pagerank`),
so 20,000 copies cost what one does, with the scores of the graph of every copy. The graph's size
is bounded: where the pairs that share a word could number more than ``max_pairs`` (default
:data:`DEFAULT_MAX_PAIRS`; any graph of up to its square root of distinct paragraphs is whole),
the words held by the most paragraphs are not counted as overlaps, as few as bring the bound
under it, and a warning names them; their tokens still count in the lengths.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import networkx as nx
import numpy as np
import scipy.sparse as sp

from wikisum.core.text import words
from wikisum.extractors.base import count_matrix, order_by_score

log = logging.getLogger("wikisum.extractors")

DAMPING = 0.85
# networkx's default tolerance (1e-6 x n on the L1 change) leaves each score within about 1e-6 of
# its fixed point; a tighter one makes the order of close paragraphs reliable.
TOLERANCE = 1e-10
MAX_ITERATIONS = 1000
# Scores are rounded to this many decimals so that paragraphs whose scores are equal in exact
# arithmetic (two copies of one paragraph, say) tie, and are ordered by position, instead of
# being ordered by the last bits of floating-point sums.
DECIMALS = 12
# The most word-sharing pairs of distinct paragraphs the graph is built from: every article of up
# to 2,000 distinct paragraphs is ranked on its whole graph; networkx's graph of 2,000 paragraphs
# that all share words (4 million pairs) takes about 1.3 GB at the peak and 15 s.
DEFAULT_MAX_PAIRS = 4_000_000


def similarity_matrix(paragraphs: Sequence[str]) -> sp.csr_matrix:
    """(n, n) symmetric edge weights w(p, q), zero diagonal, only overlapping pairs stored."""
    counts = count_matrix(paragraphs, words)  # (n, V) token counts
    n = counts.shape[0]
    lengths = np.asarray(counts.sum(axis=1), dtype=float).reshape(n)  # |p| in tokens
    return sp.csr_matrix(_off_diagonal(_weights(counts.astype(bool).astype(np.int32), lengths)))


def _weights(binary: sp.csr_matrix, lengths: np.ndarray) -> sp.csr_matrix:
    """(n, n) w(p, q) of the rows of ``binary`` (distinct words) of ``lengths`` tokens, the
    diagonal included, only overlapping pairs stored."""
    n = binary.shape[0]
    overlap = (binary @ binary.T).tocoo()  # (n, n) distinct shared words
    rows, cols = overlap.row, overlap.col
    shared = overlap.data.astype(float)
    # A pair that overlaps has at least one token each, so the logs are finite; the sum is 0 only
    # for two one-word paragraphs with the same word, where, as in sumy, the weight is the
    # overlap itself (1).
    norm = np.log(lengths[rows]) + np.log(lengths[cols])
    weight = np.divide(shared, norm, out=shared.copy(), where=norm > 0)
    return sp.csr_matrix((weight, (rows, cols)), shape=(n, n))


def _copies(binary: sp.csr_matrix, lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(n,) the node of each paragraph, nodes numbered in order of first occurrence (so that
    without copies node i is paragraph i), and (nodes,) each node's first paragraph. Copies are
    paragraphs of the same distinct words and the same length."""
    binary = binary.tocsr()
    binary.sort_indices()
    indptr, indices = binary.indptr, binary.indices.astype(np.int64)
    node_of: dict[tuple, int] = {}
    nodes = np.empty(binary.shape[0], dtype=np.int64)
    for i in range(binary.shape[0]):
        key = (lengths[i], indices[indptr[i]:indptr[i + 1]].tobytes())
        nodes[i] = node_of.setdefault(key, len(node_of))
    return nodes, np.unique(nodes, return_index=True)[1]


def _bounded(binary: sp.csr_matrix, max_pairs: int) -> sp.csr_matrix:
    """``binary`` without the columns of the most widely held words, as few as bring the
    word-sharing pairs (the sum of each word's paragraphs squared, which bounds B @ B.T's size
    and work) to at most ``max_pairs``; ``binary`` itself where its rows are few enough or the
    bound holds already."""
    n = binary.shape[0]
    if n * n <= max_pairs:
        return binary
    held = np.diff(binary.tocsc().indptr).astype(np.int64)  # (V,) paragraphs holding each word
    if int((held * held).sum()) <= max_pairs:
        return binary
    order = np.argsort(-held, kind="stable")
    left = np.cumsum((held[order] ** 2)[::-1])[::-1]  # pairs of the words from the k-th on
    dropped = int(np.argmax(left <= max_pairs)) if (left <= max_pairs).any() else len(order)
    keep = np.ones(len(held), dtype=bool)
    keep[order[:dropped]] = False
    log.warning("textrank: %d distinct paragraphs whose shared words would make up to %d pairs, "
                "over max_pairs=%d: the %d words held by most paragraphs (each by %d to %d of "
                "them) are not counted as overlaps", n, int(left[0]), max_pairs, dropped,
                int(held[order[dropped - 1]]), int(held[order[0]]))
    return binary[:, np.flatnonzero(keep)]


def pagerank(weights: sp.csr_matrix, copies: np.ndarray | None = None) -> np.ndarray:
    """(nodes,) each paragraph's PageRank (damping :data:`DAMPING`) in the undirected graph of
    ``weights`` (symmetric: w(G, H) between distinct nodes off the diagonal, w(G, G) on it), where
    node G stands for ``copies[G]`` paragraphs (1 each where None), computed by
    ``networkx.pagerank`` on the graph of nodes.

    That graph's edge G -> H (G != H) weighs w(G, H) c_H and its loop G -> G weighs
    w(G, G) (c_G - 1): a copy of G reaches every copy of H, and every other copy of G. Its
    teleport, dangling and starting mass are proportional to c_G, and its tolerance is scaled by
    n / N (n paragraphs, N nodes), so that each step and the one it stops at are those of the
    graph of all n paragraphs, a node's PageRank the sum of its copies'. Without copies it is the
    PageRank of the paragraphs' own graph. Raises ``networkx.PowerIterationFailedConvergence``
    after :data:`MAX_ITERATIONS` steps.
    """
    m = weights.shape[0]
    counts = np.ones(m) if copies is None else np.asarray(copies, dtype=float)
    n = float(counts.sum())
    between = _off_diagonal(weights)
    if n == m:  # no copies: the undirected graph, each edge once (half the graph's memory)
        graph = nx.from_scipy_sparse_array(sp.triu(between))
        rank = nx.pagerank(graph, alpha=DAMPING, weight="weight", tol=TOLERANCE,
                           max_iter=MAX_ITERATIONS)
        return np.array([rank[g] for g in range(m)], dtype=float)
    edges = sp.csr_array(between @ sp.diags_array(counts)
                         + sp.diags_array(sp.csr_array(weights).diagonal() * (counts - 1)))
    edges.eliminate_zeros()  # no loop where a node stands for one paragraph
    graph = nx.from_scipy_sparse_array(edges, create_using=nx.DiGraph)
    mass = dict(enumerate(counts.tolist()))
    rank = nx.pagerank(graph, alpha=DAMPING, personalization=mass, dangling=mass,
                       nstart={g: c / n for g, c in mass.items()}, weight="weight",
                       tol=TOLERANCE * n / m, max_iter=MAX_ITERATIONS)
    return np.array([rank[g] for g in range(m)], dtype=float) / counts


def _off_diagonal(weights) -> sp.csr_array:
    """``weights`` without its diagonal, indices sorted."""
    pairs = weights.tocoo()
    off = pairs.row != pairs.col
    out = sp.csr_array((pairs.data[off], (pairs.row[off], pairs.col[off])), shape=weights.shape)
    out.sort_indices()
    return out


class TextRank:
    name = "textrank"

    def __init__(self, max_pairs: int = DEFAULT_MAX_PAIRS):
        """``max_pairs``: the most word-sharing pairs of distinct paragraphs the graph is built
        from (see the module's note)."""
        if max_pairs < 1:
            raise ValueError(f"max_pairs must be at least 1, not {max_pairs}")
        self.max_pairs = max_pairs

    def scores(self, title: str, paragraphs: Sequence[str],
               target: str | None = None) -> np.ndarray:
        """(n,) PageRank of each paragraph in the overlap graph; they sum to 1."""
        n = len(paragraphs)
        if n == 0:
            return np.zeros(0)
        counts = count_matrix(paragraphs, words)  # (n, V) token counts
        lengths = np.asarray(counts.sum(axis=1), dtype=float).reshape(n)  # |p| in tokens
        binary = counts.astype(bool).astype(np.int32)
        nodes, first = _copies(binary, lengths)
        copies = np.bincount(nodes)
        distinct = _bounded(binary[first], self.max_pairs)
        weights = _weights(distinct, lengths[first])
        return np.round(pagerank(weights, copies)[nodes], DECIMALS)

    def rank(self, title: str, paragraphs: Sequence[str], target: str | None = None,
             sources: Sequence[str] | None = None) -> list[int]:
        return order_by_score(self.scores(title, paragraphs))
