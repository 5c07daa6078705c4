"""Exemplar retrieval for AdaDec (Peng et al. 2019): each example's most similar training example.

AdaDec conditions the decoder on an exemplar: the target of the training example whose source
is most similar to the input (top-1 by bag-of-words cosine; the exemplar's source serves only
retrieval). For a training example its own row is excluded, so the model never sees its own
target. Ties go to the smallest train id, so the result does not depend on shard order.

A source is an L2-normalised count vector of its token ids (special ids such as ``<t>``, which
every WikiSum input holds, are not words and are left out), so a cosine is one dot product:

    train sources  K  (N, V) sparse, rows sorted by id
    queries        Q  (B, V) one block of a split's sources
    similarity     K @ Q.T  (N, B) dense float32; per column: max, then the first row within
                   TIE_TOLERANCE of it (rows are in id order: the smallest id)

Retrieval for a training example can leak its own answer: a corpus holds stories filed more
than once, and a near copy of an example's source usually carries its headline. So a training
query (never a dev or test one) also skips every candidate whose source has a cosine above
``max_similarity`` with its own, or whose target equals its own once whitespace and case are
ignored; a query left with no candidate keeps the best one without these rules (counted).
``max_similarity`` 1 turns both rules off. The default, 0.9, is the largest (on a 0.01 grid)
that leaves no more training exemplars at cosine >= 0.9 than the dev split has on the Gigaword
sample (``experiments/exemplar_leakage``).

Memory holds the two sparse matrices and, per worker, one (N, B) block: B defaults to what
fits ``DEFAULT_MAX_CELLS`` similarities, so millions of examples need no more than a few
hundred MiB besides the matrices (training queries under the rules add an (N, B) mask of
bytes). Time is O(queries x nnz(K)) (exact search, no index); blocks run on threads (scipy's
sparse product releases the GIL).

    DATA/exemplars-{split}.parquet (schema EXEMPLARS): id, exemplar_id, similarity; the schema
    metadata records max_similarity

The configuration (:class:`ExemplarConfig`, the defaults, ``default_workers``) is in
:mod:`wikisum.pipeline.exemplars_config`, which the command line reads without numpy or
scikit-learn.
"""

from __future__ import annotations

import io
import logging
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp
from sklearn.preprocessing import normalize

from wikisum.core import schemas, shards
from wikisum.core.loader import Dataset, exemplars_path
from wikisum.pipeline.exemplars_config import DEFAULT_MAX_CELLS, MAX_BLOCK, ExemplarConfig
from wikisum.pipeline.exemplars_config import DEFAULT_MAX_SIMILARITY as DEFAULT_MAX_SIMILARITY

log = logging.getLogger("wikisum.exemplars")

TRAIN = "train"
SPLIT_ORDER = ("train", "dev", "valid", "test")  # others follow, sorted
TIE_TOLERANCE = 1e-5  # cosines closer than this are a tie (float32 sums differ by ~1e-7)
NEAR_DUPLICATE = 0.9  # the statistic the summary reports: the share of top-1 cosines >= this

Progress = Callable[[int, int], None]  # (rows done, rows total)


@dataclass(frozen=True)
class LeakFilter:
    """The rules of a training query: skip candidates with a source cosine above
    ``max_similarity`` and those in the query's target group (``groups``: (N,) int64 per key
    row, -1 for a target no other row has; None: no target rule)."""

    max_similarity: float
    groups: np.ndarray | None = None


@dataclass(frozen=True)
class Filtered:
    """What the :class:`LeakFilter` did to one split's queries."""

    unfiltered_similarity: np.ndarray  # (Q,) float32 top-1 cosine with only the own row skipped
    skipped_similar: int  # candidates skipped for a source cosine above max_similarity
    skipped_target: int  # candidates skipped for an equal target (and a cosine <= it)
    changed: int  # queries whose exemplar is not the one they had without the rules
    no_candidate: int  # queries every candidate of which was skipped: the unfiltered top-1


@dataclass(frozen=True)
class Retrieved:
    """The top-1 exemplar of each query: arrays of one row per query, in query order."""

    ids: np.ndarray  # (Q,) int64 query ids
    exemplar_ids: np.ndarray  # (Q,) int64 train ids
    similarity: np.ndarray  # (Q,) float32 cosine in [0, 1]
    filtered: Filtered | None = None  # training queries under a LeakFilter


# ------------------------------------------------------------------------------------------
# Pure functions


def bag_of_words(rows: Iterable[Sequence[int]], vocab_size: int,
                 ignore: Collection[int] = ()) -> sp.csr_matrix:
    """(N, V) float32 CSR: each row the L2-normalised token counts of one source.

    Ids in ``ignore`` are not counted; a source with no other id is an all-zero row (cosine 0
    with everything). An id outside [0, vocab_size) is a ValueError.
    """
    ignored = np.asarray(sorted(ignore), dtype=np.int64)
    indptr, indices, counts = [0], [], []
    for row in rows:
        ids = np.asarray(row, dtype=np.int64)
        if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
            raise ValueError(f"token id {int(ids.min() if ids.min() < 0 else ids.max())} is "
                             f"outside the vocabulary (size {vocab_size})")
        if ignored.size:
            ids = ids[~np.isin(ids, ignored)]
        unique, count = np.unique(ids, return_counts=True)
        indices.append(unique)
        counts.append(count)
        indptr.append(indptr[-1] + unique.size)
    data = np.concatenate(counts).astype(np.float32) if counts else np.zeros(0, np.float32)
    index = np.concatenate(indices) if indices else np.zeros(0, np.int64)
    matrix = sp.csr_matrix((data, index, np.asarray(indptr, dtype=np.int64)),
                           shape=(len(indptr) - 1, vocab_size))
    return normalize(matrix, norm="l2", copy=False)


def normalise_target(text: str) -> str:
    """A target as the equal-target rule compares it: whitespace runs as one space, no case."""
    return " ".join(text.split()).casefold()


def target_groups(texts: Iterable[str]) -> np.ndarray:
    """(N,) int64: one group id per text for targets equal after :func:`normalise_target` that
    two or more rows share, -1 for a target no other row has."""
    first: dict[str, int] = {}
    keys = [normalise_target(t) for t in texts]
    for key in keys:
        first.setdefault(key, len(first))
    index = np.asarray([first[k] for k in keys], dtype=np.int64)
    sizes = np.bincount(index, minlength=len(first)) if index.size else np.zeros(0, np.int64)
    return np.where(sizes[index] > 1, index, -1) if index.size else index


def auto_block_size(num_keys: int, max_cells: int = DEFAULT_MAX_CELLS) -> int:
    """Queries per block so that one (num_keys, block) similarity block has <= max_cells."""
    return max(1, min(MAX_BLOCK, max_cells // max(1, num_keys)))


def _best(scores: np.ndarray, columns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per column of (N, B) scores: the first row within TIE_TOLERANCE of the max, its score."""
    best = scores.max(axis=0)  # (B,)
    rows = np.argmax(scores >= best - TIE_TOLERANCE, axis=0)  # first True: the smallest id
    return rows, scores[rows, columns].astype(np.float32)


# Per query of a block under a LeakFilter: unfiltered similarity, candidates skipped for the
# cosine and for the target, exemplar changed, no candidate left.
BlockStats = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def _top1_block(keys: sp.csr_matrix, queries: sp.csr_matrix, exclude: np.ndarray | None,
                leak: LeakFilter | None = None
                ) -> tuple[np.ndarray, np.ndarray, BlockStats | None]:
    """Row of ``keys`` most similar to each query (first row within TIE_TOLERANCE of the max).

    keys (N, V), queries (B, V); exclude (B,): a key row each query may not return, -1: none;
    under ``leak`` every query is a key row (its ``exclude``) and skips what the filter says.
    """
    dense = np.ascontiguousarray(queries.toarray().T)  # (V, B)
    scores = np.asarray(keys @ dense)  # (N, B) cosines
    columns = np.arange(scores.shape[1])
    if exclude is not None:
        own = exclude >= 0
        scores[exclude[own], columns[own]] = -np.inf  # below any cosine, even of a zero row
    rows, similarity = _best(scores, columns)
    if leak is None:
        return rows, similarity, None
    skip = scores > leak.max_similarity  # (N, B); the own row is -inf: never
    similar = skip.sum(axis=0)
    same_target = np.zeros(columns.size, dtype=np.int64)
    if leak.groups is not None:
        own_group = leak.groups[exclude]
        shared = np.flatnonzero(own_group >= 0)
        if shared.size:
            same = leak.groups[:, None] == own_group[None, shared]  # (N, S)
            same[exclude[shared], np.arange(shared.size)] = False
            same &= ~skip[:, shared]
            same_target[shared] = same.sum(axis=0)
            skip[:, shared] |= same
    if not (similar.any() or same_target.any()):
        stats = (similarity, similar, same_target, np.zeros(columns.size, bool),
                 np.zeros(columns.size, bool))
        return rows, similarity, stats
    np.putmask(scores, skip, -np.inf)
    kept_rows, kept = _best(scores, columns)
    empty = np.isneginf(kept)  # every candidate skipped: keep the unfiltered top-1
    kept_rows, kept = np.where(empty, rows, kept_rows), np.where(empty, similarity, kept)
    return kept_rows, kept, (similarity, similar, same_target, kept_rows != rows, empty)


def top1(keys: sp.csr_matrix, queries: sp.csr_matrix, exclude: np.ndarray | None = None,
         block_size: int | None = None, workers: int = 1,
         progress: Progress | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For each query row, the most similar key row by cosine (rows are L2-normalised).

    The arguments and the result are :func:`search`'s, without a leak filter.
    """
    rows, similarity, _ = search(keys, queries, exclude, block_size, workers, progress)
    return rows, similarity


def search(keys: sp.csr_matrix, queries: sp.csr_matrix, exclude: np.ndarray | None = None,
           block_size: int | None = None, workers: int = 1, progress: Progress | None = None,
           leak: LeakFilter | None = None) -> tuple[np.ndarray, np.ndarray, Filtered | None]:
    """For each query row, the most similar key row by cosine (rows are L2-normalised).

    Args:
        keys: (N, V) the train sources, rows in id order (ties go to the first row).
        queries: (Q, V) the sources to find exemplars for.
        exclude: (Q,) a key row each query must not return (its own row), -1 for none.
        block_size: queries per block; None: ``auto_block_size(N)``. The result is the same
            for every block size.
        workers: threads, each computing one block at a time.
        progress: called with (queries done, Q) after each block, in order.
        leak: the rules of training queries (each query is the key row ``exclude`` names);
            None: only ``exclude`` is skipped.

    Returns (Q,) key rows (int64), (Q,) similarities (float32), and under ``leak`` what it
    skipped (else None).
    """
    n_keys, n_queries = keys.shape[0], queries.shape[0]
    if keys.shape[1] != queries.shape[1]:
        raise ValueError(f"keys have {keys.shape[1]} columns, queries {queries.shape[1]}")
    if n_keys == 0 or (n_keys == 1 and exclude is not None and np.any(exclude == 0)):
        raise ValueError(f"{n_keys} training example(s): no exemplar to retrieve (a training "
                         "example may not be its own exemplar)")
    if exclude is not None and exclude.shape != (n_queries,):
        raise ValueError(f"exclude has shape {exclude.shape}, expected ({n_queries},)")
    if leak is not None:
        check_max_similarity(leak.max_similarity)
        if exclude is None or np.any(exclude < 0):
            raise ValueError("a leak filter applies to training queries: every query needs "
                             "its own key row in exclude")
        if leak.groups is not None and leak.groups.shape != (n_keys,):
            raise ValueError(f"leak.groups has shape {leak.groups.shape}, expected ({n_keys},)")
    size = block_size or auto_block_size(n_keys)
    if size < 1:
        raise ValueError(f"block_size must be at least 1, got {size}")
    keys = keys.astype(np.float32).tocsr()
    queries = queries.astype(np.float32).tocsr()
    starts = range(0, n_queries, size)
    rows = np.zeros(n_queries, dtype=np.int64)
    similarity = np.zeros(n_queries, dtype=np.float32)
    unfiltered = np.zeros(n_queries, dtype=np.float32)
    counts = np.zeros(4, dtype=np.int64)  # skipped similar, skipped target, changed, empty

    def block(start: int) -> tuple[np.ndarray, np.ndarray, BlockStats | None]:
        stop = min(start + size, n_queries)
        return _top1_block(keys, queries[start:stop],
                           None if exclude is None else exclude[start:stop], leak)

    with ThreadPoolExecutor(max(1, workers)) as pool:
        for start, (block_rows, block_sims, stats) in zip(starts, pool.map(block, starts),
                                                          strict=True):
            stop = start + block_rows.size
            rows[start:stop], similarity[start:stop] = block_rows, block_sims
            if stats is not None:
                unfiltered[start:stop] = stats[0]
                counts += [int(part.sum()) for part in stats[1:]]
            if progress is not None:
                progress(stop, n_queries)
    if leak is None:
        return rows, similarity, None
    return rows, similarity, Filtered(unfiltered, *(int(c) for c in counts))


def check_max_similarity(value: float) -> float:
    if not 0.0 <= value <= 1.0:  # nan too
        raise ValueError(f"max_similarity must be in [0, 1], got {value}")
    return value


# ------------------------------------------------------------------------------------------
# Datasets


def splits(data: Dataset) -> list[str]:
    """The dataset's splits that have shards, train first."""
    names = [s for s in data.info.get("rows", {}) if data.files(s)]
    if TRAIN not in names:
        raise FileNotFoundError(f"no {TRAIN} shards in {data.dir}: exemplars are retrieved from "
                                "the training split")
    known = [s for s in SPLIT_ORDER if s in names]
    return known + sorted(s for s in names if s not in known)


def sources(data: Dataset, split: str, config: ExemplarConfig) -> tuple[np.ndarray, sp.csr_matrix]:
    """(ids (N,) int64, bag-of-words (N, V)) of the split's sources, sorted by id.

    The source is the model input: for a ranked dataset the loader's input for the chosen
    extractor x corpus x L; for pairs the whole source.
    """
    ids: list[int] = []

    def inputs():
        if data.kind == "pairs":
            stream = data.examples(split)
        else:
            stream = data.examples(split, config.extractor, config.corpus,
                                   config.max_input_tokens)
        for ex in stream:
            ids.append(ex.id)
            yield ex.inputs

    matrix = bag_of_words(inputs(), int(data.info["vocab_size"]),
                          ignore=set(data.special_ids.values()))
    id_array = np.asarray(ids, dtype=np.int64)
    order = np.argsort(id_array, kind="stable")
    id_array = id_array[order]
    if id_array.size > 1 and np.any(id_array[1:] == id_array[:-1]):
        duplicate = int(id_array[1:][id_array[1:] == id_array[:-1]][0])
        raise ValueError(f"id {duplicate} occurs twice in the {split} shards of {data.dir}")
    return id_array, matrix[order]


def train_targets(data: Dataset, train_ids: np.ndarray) -> np.ndarray:
    """:func:`target_groups` of the train split's target texts (a ranked dataset's lead), in
    the order of ``train_ids``."""
    column = "target" if data.kind == "pairs" else "lead"
    texts = {row["id"]: row[column] for row in data.rows(TRAIN, ["id", column])}
    return target_groups(texts[i] for i in train_ids.tolist())


def retrieve_split(train_ids: np.ndarray, train: sp.csr_matrix, ids: np.ndarray,
                   queries: sp.csr_matrix, is_train: bool, config: ExemplarConfig,
                   progress: Progress | None = None,
                   groups: np.ndarray | None = None) -> Retrieved:
    """Top-1 train exemplars of one split's queries; a train query never returns itself, and
    under ``config.max_similarity`` < 1 skips near duplicates and, given the train rows' target
    ``groups`` (:func:`target_groups`), the candidates with its target."""
    exclude = leak = None
    if is_train:
        exclude = np.searchsorted(train_ids, ids)  # queries are the train rows themselves
        if check_max_similarity(config.max_similarity) < 1.0:
            leak = LeakFilter(config.max_similarity, groups)
    rows, similarity, filtered = search(train, queries, exclude, config.block_size,
                                        config.workers, progress, leak)
    return Retrieved(ids, train_ids[rows], similarity, filtered)


def split_summary(retrieved: Retrieved) -> dict:
    """The exemplar statistics of one split: mean top-1 cosine, the share >= NEAR_DUPLICATE,
    and for filtered training queries the same without the filter and what it skipped."""

    def stats(similarity: np.ndarray) -> dict:
        if not similarity.size:
            return {"mean_similarity": 0.0, "near_duplicate_share": 0.0}
        return {"mean_similarity": float(similarity.mean()),
                "near_duplicate_share": float((similarity >= NEAR_DUPLICATE).mean())}

    out = stats(retrieved.similarity)
    f = retrieved.filtered
    if f is not None:
        out.update(unfiltered=stats(f.unfiltered_similarity),
                   skipped={"near_duplicate": f.skipped_similar, "same_target": f.skipped_target},
                   changed=f.changed, no_candidate=f.no_candidate)
    return out


def write_exemplars(path: str, retrieved: Retrieved, metadata: dict[str, str]) -> None:
    schema = schemas.EXEMPLARS.with_metadata({**schemas.EXEMPLARS.metadata,
                                              **{k.encode(): v.encode()
                                                 for k, v in metadata.items()}})
    table = pa.table({"id": retrieved.ids, "exemplar_id": retrieved.exemplar_ids,
                      "similarity": retrieved.similarity}, schema=schema)
    buf = io.BytesIO()
    pq.write_table(table, buf, compression="zstd")
    shards.write_bytes(path, buf.getvalue())  # whole or not at all


def run(config: ExemplarConfig, progress: Callable[[str, int, int], None] | None = None) -> dict:
    """Retrieve and write ``exemplars-{split}.parquet`` for every split; returns a summary."""
    data = Dataset(config.data)
    names = splits(data)
    started = time.monotonic()
    train_ids, train = sources(data, TRAIN, config)
    log.info("exemplars: %d train sources (%d x %d, %d non-zeros) in %.1f s", train.shape[0],
             *train.shape, train.nnz, time.monotonic() - started)
    check_max_similarity(config.max_similarity)
    groups = train_targets(data, train_ids) if config.max_similarity < 1.0 else None
    metadata = {"wikisum.exemplars.kind": data.kind,
                "wikisum.exemplars.similarity": "bag-of-words cosine, top-1",
                "wikisum.exemplars.max_similarity": repr(float(config.max_similarity)),
                "wikisum.exemplars.train_filter":
                    "training queries skip candidates with a cosine above max_similarity or "
                    "an equal target (whitespace and case ignored); 1.0: none skipped"}
    if data.kind != "pairs":
        metadata.update({"wikisum.exemplars.extractor": config.extractor,
                         "wikisum.exemplars.corpus": config.corpus,
                         "wikisum.exemplars.max_input_tokens": str(config.max_input_tokens)})
    summary = {"splits": {}, "block_size": config.block_size or auto_block_size(len(train_ids)),
               "workers": config.workers, "max_similarity": float(config.max_similarity),
               "near_duplicate": NEAR_DUPLICATE}
    for split in names:
        split_started = time.monotonic()
        if split == TRAIN:
            ids, queries = train_ids, train
        else:
            ids, queries = sources(data, split, config)
        report = None if progress is None else (lambda done, total, s=split:
                                                progress(s, done, total))
        retrieved = retrieve_split(train_ids, train, ids, queries, split == TRAIN, config,
                                   report, groups)
        path = exemplars_path(config.data, split)
        write_exemplars(path, retrieved, metadata)
        summary["splits"][split] = {
            "rows": int(ids.size), "path": path, "seconds": time.monotonic() - split_started,
            **split_summary(retrieved)}
        if retrieved.filtered is not None and retrieved.filtered.no_candidate:
            log.warning("exemplars: %d %s queries had every candidate skipped (cosine above "
                        "%s or the same target); they keep their unfiltered exemplar",
                        retrieved.filtered.no_candidate, split, config.max_similarity)
    summary["seconds"] = time.monotonic() - started
    return summary

