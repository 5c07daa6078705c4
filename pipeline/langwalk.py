"""py3langid's identifier with its per-byte feature walk done by numpy: the same model, the
same answers, about twice as fast a text.

py3langid finds a text's features (byte n-grams) by walking an Aho-Corasick automaton one
byte at a time in Python (``visit_counts``), about 0.35 ms for the 1,000 characters that
:func:`wikisum.pipeline.language.identify` looks at, and scores them against a float16 table
that numpy widens to float32 on every call (another 0.15 ms). Both are most of the
identification's cost, which is paid once for every page a crawl holds.

The walk needs no loop: in such an automaton the state after byte i is the longest suffix of
the text so far that is a node of the pattern trie, and no node is deeper than the longest
pattern (``depth``, 6 bytes for py3langid 0.4's model). So the state after byte i is the state
reached from the root by the ``depth`` bytes ending at i, and every position's state is found
at once by ``depth`` gathers over all positions. The features are counted in the order of
their first occurrence, as py3langid's ``Counter`` holds them, and the table is widened to
float32 once (57 MiB), so the scores are bit-for-bit py3langid's (tests compare both on random
and real texts).
"""

from __future__ import annotations

import numpy as np


def trie_depth(nextmove: np.ndarray, rowbase: np.ndarray) -> int:
    """The deepest node of the automaton: breadth-first distance from the root (state 0).

    A node's parent reaches it in one step and every other state that reaches it is at least
    as deep as the parent, so breadth-first distance is the node's depth in the trie.
    """
    seen = np.zeros(len(rowbase), dtype=bool)
    seen[0] = True
    frontier, depth = np.array([0]), 0
    letters = np.arange(256, dtype=np.int64)
    reached = np.zeros(len(rowbase), dtype=bool)
    while True:
        reached[:] = False
        reached[nextmove[(rowbase[frontier][:, None] + letters).ravel()]] = True
        reached &= ~seen
        frontier = np.flatnonzero(reached)
        if not len(frontier):
            return depth
        seen[frontier] = True
        depth += 1


# The trie depth of the model each py3langid release ships (checked by the tests against
# trie_depth, which takes about 0.4 s: this would be paid on every worker's start-up).
KNOWN_DEPTHS = {"0.4.0": 6}


def version_of_py3langid() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("py3langid")
    except PackageNotFoundError:
        return None


def shipped_model_depth() -> int | None:
    """The trie depth of the model the installed py3langid ships, where it is known."""
    return KNOWN_DEPTHS.get(version_of_py3langid())


def supported(identifier) -> bool:
    """Whether ``identifier`` has the structures this walk reads (py3langid 0.4's layout)."""
    try:
        return (identifier.tk_nextmove.typecode in "IL" and len(identifier._rowbase) > 0
                and callable(identifier._raw_score) and identifier.nb_ptc.ndim == 2)
    except AttributeError:
        return False


class FeatureWalk:
    """Feature counts of encoded texts under one identifier's automaton."""

    def __init__(self, identifier, depth: int | None = None):
        """``depth``: the automaton's trie depth where it is known (any larger number gives
        the same counts, more slowly), else found by :func:`trie_depth`."""
        self.nextmove = np.frombuffer(identifier.tk_nextmove,
                                      dtype=np.dtype(f"u{identifier.tk_nextmove.itemsize}"))
        self.rowbase = np.asarray(identifier._rowbase, dtype=np.int64)
        self.output = np.asarray(identifier.tk_output, dtype=np.int64)
        self.depth = depth if depth is not None else trie_depth(self.nextmove, self.rowbase)

    def states(self, data: bytes) -> np.ndarray:
        """(len(data),) the automaton's state after each byte."""
        k, nm, rb = self.depth, self.nextmove, self.rowbase
        head, state = [], 0
        for letter in data[:k - 1]:  # the first bytes have fewer than `depth` before them
            state = int(nm[rb[state] + letter])
            head.append(state)
        if len(data) < k:
            return np.asarray(head, dtype=np.int64)
        b = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
        n = len(b) - k + 1
        tail = np.zeros(n, dtype=nm.dtype)
        for j in range(k):
            tail = nm[rb[tail] + b[j:j + n]]
        return np.concatenate([np.asarray(head, dtype=np.int64), tail.astype(np.int64)])

    def counts(self, data: bytes) -> tuple[np.ndarray, np.ndarray] | None:
        """(features, counts) in the order of first occurrence, or None without a feature."""
        found = self.output[self.states(data)]
        found = found[found >= 0]
        if not len(found):
            return None
        features, first, counts = np.unique(found, return_index=True, return_counts=True)
        order = np.argsort(first, kind="stable")
        return features[order], counts[order]


def vectorised(identifier_class):
    """A subclass of py3langid's ``LanguageIdentifier`` whose raw scores come from
    :class:`FeatureWalk` and a float32 table (call ``prepare`` once after loading)."""

    class VectorisedIdentifier(identifier_class):
        __slots__ = ("_walk", "_table32")

        def prepare(self, depth: int | None = None) -> VectorisedIdentifier:
            """Build the walk (``depth`` as :class:`FeatureWalk` takes it)."""
            self._walk = FeatureWalk(self, depth)
            self._table32 = np.asarray(self.nb_ptc, dtype=np.float32)
            return self

        def set_languages(self, langs=None):
            super().set_languages(langs)
            self._table32 = np.asarray(self.nb_ptc, dtype=np.float32)

        def _raw_score(self, text):
            walk = getattr(self, "_walk", None)  # unset: not prepared, py3langid's own walk
            found = None if walk is None else walk.counts(text)
            if found is None:  # (also a text without a feature: py3langid's answer for it)
                return super()._raw_score(text)
            features, counts = found
            return np.log1p(counts.astype(np.float32)) @ self._table32[features] + self.nb_pc

    return VectorisedIdentifier
