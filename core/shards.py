"""Reading and writing Parquet shards by path or URL (local paths and gs:// alike, through
:mod:`wikisum.core.files`).

Every file is written under a temporary name beside its final one and renamed when whole, so a
killed writer never leaves a half file under a name a reader would take. A job's set of shards
(``NAME-00000-of-00008.parquet`` ...) is complete only when every index is there and the job's
completion record (``summary.json``, ``dataset.json``) is written, last: :func:`complete_set`
checks both, and readers refuse a partial output with the command to rerun.
"""

from __future__ import annotations

import heapq
import io
import os
import pickle
import re
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from wikisum.core import files
from wikisum.core.shards_config import DEFAULT_BUFFER_BYTES


def match(pattern: str) -> list[str]:
    """Sorted paths matching a glob; [] when none."""
    return files.match(pattern)


def require(pattern: str, hint: str) -> list[str]:
    paths = match(pattern)
    if not paths:
        raise FileNotFoundError(f"no file matches {pattern} ({hint})")
    return paths


class CorruptShard(ValueError):
    """A Parquet file that cannot be read; the message names it."""


def iter_rows(paths: Iterable[str], columns: list[str] | None = None,
              batch_rows: int = 256) -> Iterator[dict]:
    """Rows of Parquet files, streamed a batch at a time (never a whole file in memory).

    Raises:
        CorruptShard: a file is truncated or not Parquet (the message names it).
    """
    for path in paths:
        try:
            with files.open_read(path) as f:
                reader = pq.ParquetFile(f)
                for batch in reader.iter_batches(batch_size=batch_rows, columns=columns):
                    yield from batch.to_pylist()
        except (pa.ArrowException, OSError) as exc:
            raise CorruptShard(f"{path} is not a readable Parquet file ({exc}); rerun the job "
                               "that wrote it") from exc


class IncompleteOutput(FileNotFoundError):
    """An output that a job did not finish writing (killed, failed, or still running)."""


_SHARD = re.compile(r"-(\d{5,})-of-(\d{5,})\.[a-z]+$")


def shard_path(folder: str, prefix: str, index: int, total: int) -> str:
    """``FOLDER/PREFIX-SSSSS-of-NNNNN.parquet``: shard ``index`` of a set of ``total``, named as
    :func:`complete_set` reads it back (every job names its shards so)."""
    return files.join(folder, f"{prefix}-{index:05d}-of-{total:05d}.parquet")


def temporary_name(path: str) -> str:
    """A name beside ``path`` that no reader's glob matches (it starts with a dot)."""
    folder, name = path.rsplit("/", 1) if "/" in path else ("", path)
    tmp = f".{name}.{uuid.uuid4().hex[:12]}.tmp"
    return f"{folder}/{tmp}" if folder else tmp


def write_bytes(path: str, data: bytes) -> None:
    """``data`` to ``path`` atomically: a reader sees the old file (or none) until all of the
    new one is there."""
    tmp = temporary_name(path)
    try:
        with files.naming(path), files.open_write(tmp) as f:
            f.write(data)
    except BaseException:
        _remove_quietly(tmp)
        raise
    rename(tmp, path)


def write_table(path: str, rows: list[dict], schema: pa.Schema) -> None:
    """Rows -> one Parquet file with an explicit schema (written whole, then renamed)."""
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf, compression="zstd")
    write_bytes(path, buf.getvalue())


def write_text(path: str, text: str) -> None:
    write_bytes(path, text.encode("utf-8"))


# A shard writer keeps at most DEFAULT_BUFFER_BYTES of (pickled) rows in memory (shards_config:
# `--shard-buffer`); the rest is sorted in runs on local disk and merged. Row groups hold about
# ROW_GROUP_BYTES of rows each, so a reader's memory is bounded too.
ROW_GROUP_BYTES = 32 * 1024 * 1024
ROW_GROUP_ROWS = 100_000
COPY_CHUNK = 8 * 1024 * 1024


def write_sorted_table(rows: Iterable[dict], path: str, schema: pa.Schema,
                       sort_key: Callable[[dict], object], *,
                       buffer_bytes: int = DEFAULT_BUFFER_BYTES,
                       row_group_bytes: int = ROW_GROUP_BYTES) -> int:
    """Rows -> one Parquet file at ``path``, sorted by ``sort_key`` and then by the row's
    pickled bytes (a total order: the same rows give the same file, whatever order they came
    in). Returns the number of rows.

    Memory is bounded whatever the number of rows: rows are held pickled, at most
    ``buffer_bytes`` of them; past that each full buffer is sorted and spilled to a run file
    on local disk, and the runs are merged (one row per run in memory) into row groups of
    about ``row_group_bytes``. Local disk needs about the shard's size twice (runs, then the
    file, which is copied to ``path`` in chunks; local and gs:// paths alike).
    """
    with tempfile.TemporaryDirectory(prefix="wikisum-shard-") as work:
        pickled = ((sort_key(row), pickle.dumps(row, protocol=pickle.HIGHEST_PROTOCOL))
                   for row in rows)
        local = os.path.join(work, "shard.parquet")
        n = _write_row_groups(sorted_spilled(pickled, work, buffer_bytes), local, schema,
                              row_group_bytes)
        _copy_to(local, path)
    return n


def sorted_spilled(items: Iterable[tuple[object, bytes]], work: str, buffer_bytes: int
                   ) -> Iterator[tuple[object, bytes]]:
    """(key, bytes) items in order of key, then bytes, in bounded memory: at most
    ``buffer_bytes`` of them held; past that each full buffer is sorted and spilled to a run
    file in the local folder ``work``, and the runs are merged (one item per run in memory)."""
    runs: list[str] = []
    buffer: list[tuple[object, bytes]] = []
    held = 0
    for item in items:
        buffer.append(item)
        held += len(item[1])
        if held >= buffer_bytes:
            runs.append(_spill(buffer, work, len(runs)))
            buffer, held = [], 0
    if not runs:
        buffer.sort()
        yield from buffer
        return
    if buffer:
        runs.append(_spill(buffer, work, len(runs)))
    buffer = []  # spilled: the merge holds one item per run
    yield from heapq.merge(*(_read_run(r) for r in runs))


def _spill(buffer: list, work: str, index: int) -> str:
    buffer.sort()
    path = os.path.join(work, f"run-{index:05d}.pickle")
    with open(path, "wb") as f:
        for item in buffer:
            pickle.dump(item, f, protocol=pickle.HIGHEST_PROTOCOL)
    return path


def _read_run(path: str) -> Iterator[tuple[object, bytes]]:
    with open(path, "rb") as f:
        while True:
            try:
                yield pickle.load(f)
            except EOFError:
                return


def _write_row_groups(ordered: Iterator[tuple[object, bytes]], local: str, schema: pa.Schema,
                      row_group_bytes: int) -> int:
    n = 0
    with pq.ParquetWriter(local, schema, compression="zstd") as writer:
        group: list[dict] = []
        size = 0
        for _, blob in ordered:
            group.append(pickle.loads(blob))
            size += len(blob)
            if size >= row_group_bytes or len(group) >= ROW_GROUP_ROWS:
                writer.write_table(pa.Table.from_pylist(group, schema=schema))
                n += len(group)
                group, size = [], 0
        if group:
            writer.write_table(pa.Table.from_pylist(group, schema=schema))
            n += len(group)
    return n


def _copy_to(local: str, path: str) -> None:
    """A local file to ``path`` (any Beam filesystem) in chunks, written atomically."""
    tmp = temporary_name(path)
    try:
        with files.naming(path), open(local, "rb") as src, files.open_write(tmp) as dst:
            shutil.copyfileobj(src, dst, COPY_CHUNK)
    except BaseException:
        _remove_quietly(tmp)
        raise
    rename(tmp, path)


def _remove_quietly(path: str) -> None:
    """A temporary file that a failed write leaves (a full disk), removed if it can be."""
    try:
        if files.exists(path):
            files.delete(path)
    except OSError:
        pass


def rename(source: str, destination: str) -> None:
    """Move a file to ``destination``, replacing a file that is there (local folders are made).

    Never replaces a directory: what a command writes is checked before it runs
    (:mod:`wikisum.core.ownership`), and this is the last line of that defence.

    Raises:
        IsADirectoryError: ``destination`` is a directory (nothing is moved or deleted).
    """
    if "://" not in destination:
        os.makedirs(os.path.dirname(os.path.abspath(destination)), exist_ok=True)
        if os.path.isdir(destination):
            files.delete(source)
            raise IsADirectoryError(f"{destination} is a directory; a file is not written "
                                    "over it")
        files.rename(source, destination)  # os.replace: the old file until the new one
        return
    if files.exists(destination):  # a URL backend's move may refuse to overwrite
        files.delete(destination)
    files.rename(source, destination)


def remove_dir(path: str) -> None:
    """A folder and everything in it, if it is there (gs://: every object under the prefix)."""
    if "://" in path:
        files.delete(path.rstrip("/") + "/")
    elif files.exists(path):
        files.delete(path)


def complete_set(pattern: str, expected: int | None, what: str, rerun: str) -> list[str]:
    """The shards matching ``pattern`` (``.../NAME-*.parquet``), checked to be one whole set:
    every index of ``-of-N`` once, N the same in every name and equal to ``expected`` (what the
    job's completion record says) when given.

    Raises:
        IncompleteOutput: no shard, a missing index, or shards of two runs, naming ``what``
            and the command to ``rerun``.
    """
    paths = match(pattern)
    if not paths:
        raise IncompleteOutput(f"{what}: no shard matches {pattern}; {rerun}")
    found: dict[int, set[int]] = {}
    for path in paths:
        m = _SHARD.search(path)
        if m is None:
            raise IncompleteOutput(f"{what}: {path} is not named NAME-NNNNN-of-NNNNN; {rerun}")
        found.setdefault(int(m.group(2)), set()).add(int(m.group(1)))
    totals = sorted(found)
    if len(totals) > 1:
        raise IncompleteOutput(f"{what}: shards of {len(totals)} different runs (-of-"
                               f"{', -of-'.join(f'{t:05d}' for t in totals)}) match {pattern}; "
                               f"{rerun}")
    total = totals[0]
    missing = sorted(set(range(total)) - found[total])
    if missing or (expected is not None and total != expected):
        detail = (f"{len(missing)} of {total} missing (index {', '.join(map(str, missing[:5]))}"
                  f"{', ...' if len(missing) > 5 else ''})" if missing
                  else f"{total} shards where the job recorded {expected}")
        raise IncompleteOutput(f"{what} is incomplete: {detail}; {rerun}")
    return paths


def read_text(path: str) -> str:
    with files.open_read(path) as f:
        return f.read().decode("utf-8")


def delete(pattern: str) -> None:
    paths = match(pattern)
    if paths:
        for path in paths:
            files.delete(path)


def row_count(path: str) -> int:
    """Rows of a Parquet file, from its footer.

    Raises:
        CorruptShard: the file is truncated or not Parquet (the message names it).
    """
    try:
        with files.open_read(path) as f:
            return pq.ParquetFile(f).metadata.num_rows
    except (pa.ArrowException, OSError) as exc:
        raise CorruptShard(f"{path} is not a readable Parquet file ({exc}); rerun the job that "
                           "wrote it") from exc


class ShardSetWriter:
    """Rows streamed into a fixed set of Parquet shards (``key -> final path``), in the order
    they come, with bounded memory: each shard holds at most ``buffer_bytes`` of rows (as
    estimated by ``size``) before they go out as a row group. Files are written under temporary
    names in ``staging`` and renamed into place by :meth:`commit`, every shard of the set (an
    empty one too, so that :func:`complete_set` finds the whole set); :meth:`abort` removes them.
    """

    def __init__(self, finals: dict, staging: str, schema: pa.Schema,
                 size: Callable[[dict], int] = lambda row: 1024,
                 buffer_bytes: int = 4 * 1024 * 1024, max_rows: int = 1024):
        self.finals, self.staging, self.schema = finals, staging, schema
        self.size, self.buffer_bytes, self.max_rows = size, buffer_bytes, max_rows
        self.rows = {key: 0 for key in finals}
        self._buffers: dict = {key: [] for key in finals}
        self._bytes = dict.fromkeys(finals, 0)
        self._writers: dict = {}
        self._temps = {key: files.join(staging, f"{i:06d}.parquet")
                       for i, key in enumerate(finals)}

    def write(self, key, row: dict) -> None:
        self._buffers[key].append(row)
        self._bytes[key] += self.size(row)
        self.rows[key] += 1
        if (self._bytes[key] >= self.buffer_bytes
                or len(self._buffers[key]) >= self.max_rows):
            self._flush(key)

    def _flush(self, key) -> None:
        with files.naming(self.finals[key]):
            writer = self._writers.get(key)
            if writer is None:
                handle = files.open_write(self._temps[key])
                writer = self._writers[key] = (handle, pq.ParquetWriter(handle, self.schema,
                                                                        compression="zstd"))
            writer[1].write_table(pa.Table.from_pylist(self._buffers[key],
                                                       schema=self.schema))
        self._buffers[key] = []
        self._bytes[key] = 0

    def commit(self) -> dict:
        """Every shard closed and renamed to its final path; returns ``key -> rows``."""
        for key in self.finals:
            if self._buffers[key] or key not in self._writers:
                self._flush(key)
            handle, writer = self._writers.pop(key)
            with files.naming(self.finals[key]):
                writer.close()
                handle.close()
            rename(self._temps[key], self.finals[key])
        return dict(self.rows)

    def abort(self) -> None:
        for handle, writer in self._writers.values():
            try:
                writer.close()
                handle.close()
            except Exception:  # noqa: BLE001 - cleaning up after a failure already raised
                pass
        self._writers.clear()
        for temp in self._temps.values():
            if files.exists(temp):
                files.delete(temp)
