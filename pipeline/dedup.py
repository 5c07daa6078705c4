"""Paragraphs repeated across an article's references: exact and near duplicates.

Syndicated news repeats one story across search results, verbatim or lightly edited. The
paragraphs are walked in citation order (reference by reference, paragraph by paragraph) and each
is compared with the paragraphs kept before it: one whose normalised words equal a kept one's is
an exact duplicate; one whose word shingles overlap a kept one's with a Jaccard similarity of at
least `DedupConfig.threshold` (in ``wikisum.pipeline.ingest.config``) is a near
duplicate. The first occurrence is kept.

Near duplicates are found with MinHash and LSH banding (candidates share a band of the
signature), so an article with thousands of paragraphs never compares all pairs; every candidate
is then confirmed with the exact Jaccard similarity of the two shingle sets, so the decision does
not carry the estimate's noise. Hashes come from BLAKE2b and fixed constants: the result is the
same in every process, whatever the Python hash seed.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from wikisum.core.text import words
from wikisum.pipeline.ingest.config import DedupConfig

EXACT = "duplicate"
NEAR = "near_duplicate"

# The LSH bands are as wide as possible while a pair exactly at the threshold still becomes a
# candidate with at least this probability (pairs above it more often). Wider bands give fewer
# candidates to confirm, but there are few anyway (one per 7 paragraphs on real pages), while at
# 0.99 LSH missed 7 of 19,382 near duplicates in generated articles.
_LSH_RECALL_AT_THRESHOLD = 0.999

# Shingles are MinHashed in chunks of about this many, bounding the (shingles x num_perm) matrix.
_CHUNK_SHINGLES = 4096


@dataclass(frozen=True)
class Duplicate:
    """Why a paragraph is dropped: `reason` (EXACT or NEAR), the kept paragraph it repeats
    (`reference`, `paragraph`: indices into the input) and the Jaccard similarity of their
    shingle sets (1.0 for EXACT)."""

    reason: str
    reference: int
    paragraph: int
    similarity: float


def duplicate_paragraphs(
    references: Sequence[Sequence[str]], config: DedupConfig = DedupConfig(),
    tokens: Sequence[Sequence[list[str]]] | None = None,
) -> list[list[str | None]]:
    """For each reference, for each of its paragraphs: None (keep) or the drop reason.

    Args:
        references: An article's references in citation order, each its paragraphs in page
            order.
        config: The near-duplicate rule.
        tokens: Each paragraph's ``words``, where the caller has them already (the clone
            filter tokenised them); None: tokenised here.
    """
    return [[None if d is None else d.reason for d in ref]
            for ref in find_duplicates(references, config, tokens)]


def find_duplicates(
    references: Sequence[Sequence[str]], config: DedupConfig = DedupConfig(),
    tokens: Sequence[Sequence[list[str]]] | None = None,
) -> list[list[Duplicate | None]]:
    """Like `duplicate_paragraphs`, with the kept paragraph each dropped one repeats.

    A near duplicate names the most similar kept paragraph (the earliest on a tie).
    """
    if tokens is None:
        tokens = [[words(paragraph) for paragraph in ref] for ref in references]
    # Paragraph positions, normalised text, and one id per distinct normalised text.
    positions: list[tuple[int, int]] = []
    norm_ids: list[int] = []
    distinct: dict[str, int] = {}
    tokens_of: list[list[str]] = []
    for r, ref in enumerate(tokens):
        for p, paragraph_words in enumerate(ref):
            norm = " ".join(paragraph_words)
            uid = distinct.get(norm)
            if uid is None:
                uid = distinct[norm] = len(tokens_of)
                tokens_of.append(paragraph_words)
            positions.append((r, p))
            norm_ids.append(uid)

    long_ids = [u for u, tokens in enumerate(tokens_of)
                if config.near and len(tokens) >= config.min_words]
    row_of = {u: row for row, u in enumerate(long_ids)}
    index = _NearIndex([tokens_of[u] for u in long_ids], config)

    result: list[list[Duplicate | None]] = [[None] * len(ref) for ref in references]
    kept_at: dict[int, tuple[int, int]] = {}  # distinct text -> where it was kept
    for (r, p), uid in zip(positions, norm_ids, strict=True):
        if uid in kept_at:
            result[r][p] = Duplicate(EXACT, *kept_at[uid], 1.0)
            continue
        row = row_of.get(uid)
        if row is not None:
            match = index.match(row)
            if match is not None:
                other, similarity = match
                result[r][p] = Duplicate(NEAR, *kept_at[long_ids[other]], similarity)
                continue
            index.add(row)
        kept_at[uid] = (r, p)
    return result


class _NearIndex:
    """Word shingles, MinHash signatures and LSH buckets of an article's long paragraphs.

    A row is one distinct paragraph text. A word hashes to 64 bits (BLAKE2b), a shingle to a
    fixed linear mix of its words' hashes finalised with MurmurHash3's fmix64, and permutation k
    maps a shingle hash h to a_k * h + b_k mod 2**64 (a_k odd: a bijection); the signature is
    the minimum per permutation. A band key mixes the band's rows into 64 bits. numpy computes
    all of an article's signatures at once, several times faster than datasketch's
    `MinHash.bulk` (bench/dedup.py).
    """

    def __init__(self, paragraphs: list[list[str]], config: DedupConfig) -> None:
        self.threshold = config.threshold
        rows_per_band, bands = _lsh_bands(config.threshold, config.num_perm)
        self._buckets: list[dict[int, list[int]]] = [{} for _ in range(bands)]
        self._sets: dict[int, frozenset[int]] = {}
        if not paragraphs:
            return
        self._shingles, self._ends = _shingle_hashes(paragraphs, config.shingle)
        self._starts = self._ends - np.diff(self._ends, prepend=0)
        signatures = _minhash(self._shingles, self._starts, config.num_perm)
        banded = signatures[:, :rows_per_band * bands].reshape(len(paragraphs), bands,
                                                               rows_per_band)
        keys = (banded * _mix_constants(rows_per_band)).sum(axis=2, dtype=np.uint64)
        # Only bands whose key another row shares can ever produce a candidate.
        shared = _shared_in_column(keys)
        self._keys: list[list[tuple[int, int]]] = [[] for _ in paragraphs]
        rows, columns = np.nonzero(shared)
        for row, band, key in zip(rows.tolist(), columns.tolist(),
                                  keys[rows, columns].tolist(), strict=True):
            self._keys[row].append((band, key))

    def match(self, row: int) -> tuple[int, float] | None:
        """The most similar added row at or above the threshold (the first on a tie)."""
        candidates: set[int] = set()
        for band, key in self._keys[row]:
            candidates.update(self._buckets[band].get(key, ()))
        best: tuple[int, float] | None = None
        for other in sorted(candidates):
            similarity = self._jaccard(row, other)
            if similarity >= self.threshold and (best is None or similarity > best[1]):
                best = (other, similarity)
        return best

    def add(self, row: int) -> None:
        for band, key in self._keys[row]:
            self._buckets[band].setdefault(key, []).append(row)

    def _jaccard(self, a: int, b: int) -> float:
        x, y = self._shingle_set(a), self._shingle_set(b)
        common = len(x & y)
        return common / (len(x) + len(y) - common)

    def _shingle_set(self, row: int) -> frozenset[int]:
        found = self._sets.get(row)
        if found is None:
            found = self._sets[row] = frozenset(
                self._shingles[self._starts[row]:self._ends[row]].tolist())
        return found


def _shared_in_column(keys: np.ndarray) -> np.ndarray:
    """(rows, columns) bool: whether another row holds the same value in that column; every
    column at once (one sort), not one ``np.unique`` a column."""
    if len(keys) < 2:
        return np.zeros(keys.shape, dtype=bool)
    order = np.argsort(keys, axis=0, kind="stable")
    ordered = np.take_along_axis(keys, order, axis=0)
    same = ordered[1:] == ordered[:-1]  # row i equals the row after it in the sorted column
    repeated = np.zeros(keys.shape, dtype=bool)
    repeated[1:] |= same
    repeated[:-1] |= same
    shared = np.empty(keys.shape, dtype=bool)
    np.put_along_axis(shared, order, repeated, axis=0)
    return shared


def _shingle_hashes(paragraphs: list[list[str]], k: int) -> tuple[np.ndarray, np.ndarray]:
    """The hashes of every paragraph's word k-grams, concatenated, and each paragraph's end in
    them. A paragraph shorter than k words is one shingle of all its words."""
    lengths = np.fromiter(map(len, paragraphs), dtype=np.int64, count=len(paragraphs))
    word_hash = {w: _hash64(w) for w in dict.fromkeys(itertools.chain.from_iterable(paragraphs))}
    flat_hashes = np.fromiter(map(word_hash.__getitem__, itertools.chain.from_iterable(paragraphs)),
                              dtype=np.uint64, count=int(lengths.sum()))
    token_starts = np.cumsum(lengths) - lengths
    counts = np.maximum(lengths - k + 1, 1)
    ends = np.cumsum(counts)
    starts = ends - counts
    mix = _mix_constants(k)
    shingles = np.zeros(int(ends[-1]), dtype=np.uint64)
    full = np.flatnonzero(lengths >= k)
    if len(full):
        # Windows of k tokens over the concatenation; those inside one paragraph are kept.
        windows = np.zeros(len(flat_hashes) - k + 1, dtype=np.uint64)
        for j in range(k):
            windows += flat_hashes[j:len(flat_hashes) - k + 1 + j] * mix[j]
        n = counts[full]
        within = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        shingles[np.repeat(starts[full], n) + within] = windows[
            np.repeat(token_starts[full], n) + within]
    for i in np.flatnonzero(lengths < k):
        first = token_starts[i]
        shingles[starts[i]] = (flat_hashes[first:first + lengths[i]]
                               * mix[:lengths[i]]).sum(dtype=np.uint64)
    return _fmix64(shingles), ends


def _minhash(shingles: np.ndarray, starts: np.ndarray, num_perm: int) -> np.ndarray:
    """One signature row per paragraph (`starts`: where its shingles begin), in chunks of about
    `_CHUNK_SHINGLES` shingles to bound the (shingles x num_perm) matrix; a paragraph of more
    shingles is a run of chunks of its own (the minimum of their minima)."""
    a, b = _permutations(num_perm)
    signatures = np.empty((len(starts), num_perm), dtype=np.uint64)
    bounds = np.append(starts, len(shingles))
    first = 0
    while first < len(starts):
        last = int(np.searchsorted(bounds, bounds[first] + _CHUNK_SHINGLES, side="right")) - 1
        last = min(max(last, first + 1), len(starts))
        lo, hi = bounds[first], bounds[last]
        if hi - lo > _CHUNK_SHINGLES:  # one paragraph of more shingles: its own chunks
            signature = np.full(num_perm, np.iinfo(np.uint64).max, dtype=np.uint64)
            for start in range(lo, hi, _CHUNK_SHINGLES):
                stop = min(start + _CHUNK_SHINGLES, hi)
                np.minimum(signature, (shingles[start:stop, None] * a + b).min(axis=0),
                           out=signature)
            signatures[first] = signature
        else:
            signatures[first:last] = np.minimum.reduceat(
                shingles[lo:hi, None] * a + b, starts[first:last] - lo, axis=0)
        first = last
    return signatures


# Words repeat across an article's references and across articles: each is hashed once while
# in the cache (2^18 words, a few tens of MB at most).
@functools.lru_cache(maxsize=1 << 18)
def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little")


@functools.cache
def _mix_constants(n: int) -> np.ndarray:
    """n fixed odd 64-bit constants."""
    return np.array([_hash64(f"wikisum.dedup.mix.{j}") | 1 for j in range(n)], dtype=np.uint64)


@functools.cache
def _permutations(num_perm: int) -> tuple[np.ndarray, np.ndarray]:
    a = np.array([_hash64(f"wikisum.dedup.a.{k}") | 1 for k in range(num_perm)], dtype=np.uint64)
    b = np.array([_hash64(f"wikisum.dedup.b.{k}") for k in range(num_perm)], dtype=np.uint64)
    return a, b


def _fmix64(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xFF51AFD7ED558CCD)
    h = h ^ (h >> np.uint64(33))
    h = h * np.uint64(0xC4CEB9FE1A85EC53)
    return h ^ (h >> np.uint64(33))


@functools.cache
def _lsh_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """(rows per band, bands): the widest bands that still make a pair at the threshold a
    candidate with probability `_LSH_RECALL_AT_THRESHOLD`; at least 2 bands."""
    best = (1, num_perm)
    for rows in range(1, num_perm // 2 + 1):
        bands = num_perm // rows
        if 1.0 - (1.0 - threshold**rows) ** bands >= _LSH_RECALL_AT_THRESHOLD:
            best = (rows, bands)
    return best
