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

Memory holds the two sparse matrices and, per worker, one (N, B) block: B defaults to what
fits ``DEFAULT_MAX_CELLS`` similarities, so millions of examples need no more than a few
hundred MiB besides the matrices. Time is O(queries x nnz(K)) (exact search, no index); blocks
run on threads (scipy's sparse product releases the GIL).

    DATA/exemplars-{split}.parquet (schema EXEMPLARS): id, exemplar_id, similarity
"""

from __future__ import annotations

import io
import logging
import os
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import scipy.sparse as sp
from sklearn.preprocessing import normalize

from wikisum.pipeline import schemas, shards
from wikisum.pipeline.loader import Dataset, exemplars_path

log = logging.getLogger("wikisum.exemplars")

TRAIN = "train"
SPLIT_ORDER = ("train", "dev", "valid", "test")  # others follow, sorted
DEFAULT_EXTRACTOR, DEFAULT_CORPUS, DEFAULT_MAX_INPUT_TOKENS = "tfidf", "combined", 500
DEFAULT_MAX_CELLS = 1 << 24  # similarities per block and worker: 64 MiB of float32
MAX_BLOCK = 1024  # larger blocks are no faster (cache) and delay progress reports
TIE_TOLERANCE = 1e-5  # cosines closer than this are a tie (float32 sums differ by ~1e-7)

Progress = Callable[[int, int], None]  # (rows done, rows total)


@dataclass(frozen=True)
class Retrieved:
    """The top-1 exemplar of each query: arrays of one row per query, in query order."""

    ids: np.ndarray  # (Q,) int64 query ids
    exemplar_ids: np.ndarray  # (Q,) int64 train ids
    similarity: np.ndarray  # (Q,) float32 cosine in [0, 1]


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


def auto_block_size(num_keys: int, max_cells: int = DEFAULT_MAX_CELLS) -> int:
    """Queries per block so that one (num_keys, block) similarity block has <= max_cells."""
    return max(1, min(MAX_BLOCK, max_cells // max(1, num_keys)))


def _top1_block(keys: sp.csr_matrix, queries: sp.csr_matrix,
                exclude: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Row of ``keys`` most similar to each query (first row within TIE_TOLERANCE of the max).

    keys (N, V), queries (B, V); exclude (B,): a key row each query may not return, -1: none.
    """
    dense = np.ascontiguousarray(queries.toarray().T)  # (V, B)
    scores = np.asarray(keys @ dense)  # (N, B) cosines
    columns = np.arange(scores.shape[1])
    if exclude is not None:
        own = exclude >= 0
        scores[exclude[own], columns[own]] = -np.inf  # below any cosine, even of a zero row
    best = scores.max(axis=0)  # (B,)
    rows = np.argmax(scores >= best - TIE_TOLERANCE, axis=0)  # first True: the smallest id
    return rows, scores[rows, columns].astype(np.float32)


def top1(keys: sp.csr_matrix, queries: sp.csr_matrix, exclude: np.ndarray | None = None,
         block_size: int | None = None, workers: int = 1,
         progress: Progress | None = None) -> tuple[np.ndarray, np.ndarray]:
    """For each query row, the most similar key row by cosine (rows are L2-normalised).

    Args:
        keys: (N, V) the train sources, rows in id order (ties go to the first row).
        queries: (Q, V) the sources to find exemplars for.
        exclude: (Q,) a key row each query must not return (its own row), -1 for none.
        block_size: queries per block; None: ``auto_block_size(N)``. The result is the same
            for every block size.
        workers: threads, each computing one block at a time.
        progress: called with (queries done, Q) after each block, in order.

    Returns (Q,) key rows (int64) and (Q,) similarities (float32).
    """
    n_keys, n_queries = keys.shape[0], queries.shape[0]
    if keys.shape[1] != queries.shape[1]:
        raise ValueError(f"keys have {keys.shape[1]} columns, queries {queries.shape[1]}")
    if n_keys == 0 or (n_keys == 1 and exclude is not None and np.any(exclude == 0)):
        raise ValueError(f"{n_keys} training example(s): no exemplar to retrieve (a training "
                         "example may not be its own exemplar)")
    if exclude is not None and exclude.shape != (n_queries,):
        raise ValueError(f"exclude has shape {exclude.shape}, expected ({n_queries},)")
    size = block_size or auto_block_size(n_keys)
    if size < 1:
        raise ValueError(f"block_size must be at least 1, got {size}")
    keys = keys.astype(np.float32).tocsr()
    queries = queries.astype(np.float32).tocsr()
    starts = range(0, n_queries, size)
    rows = np.zeros(n_queries, dtype=np.int64)
    similarity = np.zeros(n_queries, dtype=np.float32)

    def block(start: int) -> tuple[np.ndarray, np.ndarray]:
        stop = min(start + size, n_queries)
        return _top1_block(keys, queries[start:stop],
                           None if exclude is None else exclude[start:stop])

    with ThreadPoolExecutor(max(1, workers)) as pool:
        for start, (block_rows, block_sims) in zip(starts, pool.map(block, starts), strict=True):
            stop = start + block_rows.size
            rows[start:stop], similarity[start:stop] = block_rows, block_sims
            if progress is not None:
                progress(stop, n_queries)
    return rows, similarity


# ------------------------------------------------------------------------------------------
# Datasets


@dataclass(frozen=True)
class ExemplarConfig:
    data: str
    extractor: str = DEFAULT_EXTRACTOR  # ranked datasets: whose model input is the source
    corpus: str = DEFAULT_CORPUS
    max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS
    block_size: int | None = None  # None: auto_block_size
    workers: int = 1


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


def retrieve_split(train_ids: np.ndarray, train: sp.csr_matrix, ids: np.ndarray,
                   queries: sp.csr_matrix, is_train: bool, config: ExemplarConfig,
                   progress: Progress | None = None) -> Retrieved:
    """Top-1 train exemplars of one split's queries; a train query never returns itself."""
    exclude = None
    if is_train:
        exclude = np.searchsorted(train_ids, ids)  # queries are the train rows themselves
    rows, similarity = top1(train, queries, exclude, config.block_size, config.workers,
                            progress)
    return Retrieved(ids, train_ids[rows], similarity)


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
    metadata = {"wikisum.exemplars.kind": data.kind,
                "wikisum.exemplars.similarity": "bag-of-words cosine, top-1"}
    if data.kind != "pairs":
        metadata.update({"wikisum.exemplars.extractor": config.extractor,
                         "wikisum.exemplars.corpus": config.corpus,
                         "wikisum.exemplars.max_input_tokens": str(config.max_input_tokens)})
    summary = {"splits": {}, "block_size": config.block_size or auto_block_size(len(train_ids)),
               "workers": config.workers}
    for split in names:
        split_started = time.monotonic()
        if split == TRAIN:
            ids, queries = train_ids, train
        else:
            ids, queries = sources(data, split, config)
        report = None if progress is None else (lambda done, total, s=split:
                                                progress(s, done, total))
        retrieved = retrieve_split(train_ids, train, ids, queries, split == TRAIN, config,
                                   report)
        path = exemplars_path(config.data, split)
        write_exemplars(path, retrieved, metadata)
        summary["splits"][split] = {
            "rows": int(ids.size), "path": path, "seconds": time.monotonic() - split_started,
            "mean_similarity": float(retrieved.similarity.mean()) if ids.size else 0.0}
    summary["seconds"] = time.monotonic() - started
    return summary


def default_workers() -> int:
    try:
        return max(1, min(8, len(os.sched_getaffinity(0))))
    except AttributeError:  # not on every platform
        return max(1, min(8, os.cpu_count() or 1))
