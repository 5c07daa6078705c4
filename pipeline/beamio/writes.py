"""Parquet shards written from a job's rows in bounded memory: grouped by shard and sorted
(:class:`WriteShards`), or spilled to part files by the bundles that make them, so that no
shuffle carries the rows (:class:`WriteSpilledShards`). Each file is staged for
:mod:`.committing`."""

from __future__ import annotations

import io
import logging
import time
import uuid
from collections.abc import Callable, Hashable, Iterator

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from wikisum.core import files, shards
from wikisum.pipeline.beamio.committing import Staged, staging_path
from wikisum.pipeline.beamio.inputs import Values
from wikisum.pipeline.beamio.tallies import COUNTERS

log = logging.getLogger("wikisum.beam")

class _WriteShard(beam.DoFn):
    def __init__(self, finals: dict, staging: str, schema, sort_key, buffer_bytes: int):
        self.finals, self.staging = finals, staging
        self.schema, self.sort_key, self.buffer_bytes = schema, sort_key, buffer_bytes

    def process(self, item):
        key, entries = item
        final = self.finals[key]
        started = time.monotonic()
        temporary = staging_path(self.staging, final)
        n = shards.write_sorted_table(self._rows(entries), temporary, self.schema,
                                      self.sort_key, buffer_bytes=self.buffer_bytes,
                                      **self._table_options())
        Metrics.counter(COUNTERS, "shards:written").inc()
        log.info("%s: %d rows staged in %.1f s", final.rsplit("/", 1)[-1], n,
                 time.monotonic() - started)
        yield Staged(final, temporary, n)

    @staticmethod
    def _rows(entries):
        return (r for r in entries if r is not None)  # None: the shard's marker

    def _table_options(self) -> dict:
        return {}


class WriteShards(beam.PTransform):
    """(shard key, row) -> one Parquet file per key of ``finals`` (key -> final path), every key
    written even when no row has it, rows sorted by ``sort_key`` (then by their bytes, so equal
    keys are ordered too: a rerun writes the same bytes). Files are staged under ``staging``;
    the output is one :class:`Staged` record per file for :class:`Commit`.

    Memory: a shard's rows are streamed through a sort that keeps at most ``buffer_bytes`` of
    them in memory and spills sorted runs to the worker's local disk
    (:func:`wikisum.core.shards.write_sorted_table`).
    """

    def __init__(self, finals: dict[Hashable, str], staging: str, schema,
                 sort_key: Callable[[dict], object],
                 buffer_bytes: int = shards.DEFAULT_BUFFER_BYTES):
        super().__init__()
        self.finals, self.staging = dict(finals), staging
        self.schema, self.sort_key, self.buffer_bytes = schema, sort_key, buffer_bytes

    def expand(self, rows):
        every = rows.pipeline | "EveryShard" >> Values([(key, None) for key in self.finals])
        return ((rows, every) | "RowsAndShards" >> beam.Flatten()
                | "GroupShards" >> beam.GroupByKey()
                | "WriteShard" >> beam.ParDo(_WriteShard(self.finals, self.staging, self.schema,
                                                         self.sort_key, self.buffer_bytes)))


# A bundle of WriteSpilledShards holds rows up to about this many bytes (of their text) before
# it writes them to one part file (a row group for each shard); what is left when the bundle ends
# goes through the shuffle as rows. A few MB: a local runner holds everything a shuffle carries
# in memory, and each part is a file (an object on GCS) that the shards read back.
SPILL_BYTES = 8 * 1024 * 1024


def _row_bytes(row: dict) -> int:
    return 64 + sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in row.values())


def _write_part(path: str, groups: list[list[dict]], schema) -> None:
    """Unsorted rows -> one Parquet file with a row group for each list (written whole, then
    renamed)."""
    buf = io.BytesIO()
    with pq.ParquetWriter(buf, schema, compression="zstd") as writer:
        for rows in groups:
            writer.write_table(pa.Table.from_pylist(rows, schema=schema),
                               row_group_size=len(rows))
    shards.write_bytes(path, buf.getvalue())


def _part_rows(path: str, group: int, batch_rows: int = 256) -> Iterator[dict]:
    """The rows of one row group of a part file, a batch at a time.

    Raises:
        CorruptShard: the part is truncated or not Parquet (the message names it).
    """
    try:
        with files.open_read(path) as f:
            for batch in pq.ParquetFile(f).iter_batches(batch_size=batch_rows,
                                                        row_groups=[group]):
                yield from batch.to_pylist()
    except (pa.ArrowException, OSError) as exc:
        raise shards.CorruptShard(f"{path} is not a readable Parquet file ({exc}); rerun the "
                                  "job") from exc


class _SpillRows(beam.DoFn):
    """Rows -> ``(shard key, ("part", (path, row group)))`` for each shard's row group of an
    unsorted Parquet part file written in ``staging`` (one file every ``spill_bytes`` of rows),
    and ``(shard key, ("row", row))`` for the rows left when the bundle ends."""

    def __init__(self, staging: str, schema, shard_of: Callable[[dict], Hashable],
                 to_row: Callable[[object], dict], spill_bytes: int):
        self.staging, self.schema, self.shard_of, self.to_row = staging, schema, shard_of, to_row
        self.spill_bytes = spill_bytes

    def start_bundle(self):
        self._rows: dict = {}
        self._held = 0

    def process(self, element):
        row = self.to_row(element)
        self._rows.setdefault(self.shard_of(row), []).append(row)
        self._held += _row_bytes(row)
        if self._held >= self.spill_bytes:
            path = FileSystems.join(self.staging, "parts", f"{uuid.uuid4().hex}.parquet")
            keys = list(self._rows)
            _write_part(path, [self._rows[key] for key in keys], self.schema)
            for group, key in enumerate(keys):
                yield key, ("part", (path, group))
            self._rows, self._held = {}, 0

    def finish_bundle(self):
        for key, rows in self._rows.items():
            for row in rows:
                yield WindowedValue((key, ("row", row)), MIN_TIMESTAMP, [GlobalWindow()])
        self._rows, self._held = {}, 0


class _WriteSpilledShard(_WriteShard):
    """One shard from its rows and part files, the parts read a batch at a time; its row
    groups are no bigger than ``buffer_bytes`` either."""

    def _table_options(self) -> dict:
        return {"row_group_bytes": min(self.buffer_bytes, shards.ROW_GROUP_BYTES)}

    @staticmethod
    def _rows(entries):
        parts = []
        for entry in entries:
            if entry is None:  # the shard's marker: written even without rows
                continue
            kind, value = entry
            if kind == "row":
                yield value
            else:
                parts.append(value)
        for path, group in sorted(parts):
            yield from _part_rows(path, group)


class WriteSpilledShards(beam.PTransform):
    """Rows of several PCollections -> one Parquet file per key of ``finals``, as
    :class:`WriteShards` writes them (``shard_of(row)`` picks the key; every key written; rows
    sorted by ``sort_key`` then by their bytes), but in memory independent of their number on
    any runner: the rows are not carried through a shuffle. Each input's bundles write them, as
    they come, to unsorted part files under ``staging/parts/`` (one every ``spill_bytes``,
    SPILL_BYTES unless given, with a row group for each shard; the commit removes them with the
    staging folder); only those paths, and each bundle's last few rows, are grouped by shard,
    and each shard streams its row groups through the bounded sort of
    :func:`wikisum.core.shards.write_sorted_table` (``buffer_bytes``, which bounds its row
    groups too).

    For outputs whose number of rows a small input can multiply (dead letters: a WARC of a
    million tiny records): a local runner holds every element a shuffle carries in memory.
    Apply it to a tuple of PCollections, not to their Flatten, so that the part files are
    written in the step that makes the rows. ``to_row`` turns an element into its row.
    """

    def __init__(self, finals: dict[Hashable, str], staging: str, schema,
                 shard_of: Callable[[dict], Hashable], sort_key: Callable[[dict], object],
                 buffer_bytes: int = shards.DEFAULT_BUFFER_BYTES,
                 to_row: Callable[[object], dict] = dict, spill_bytes: int | None = None):
        super().__init__()
        self.finals, self.staging = dict(finals), staging
        self.schema, self.shard_of, self.sort_key = schema, shard_of, sort_key
        self.buffer_bytes, self.to_row = buffer_bytes, to_row
        self.spill_bytes = spill_bytes or SPILL_BYTES

    def expand(self, pcolls):
        spill = _SpillRows(self.staging, self.schema, self.shard_of, self.to_row,
                           self.spill_bytes)
        parts = [pcoll | f"Spill{i}" >> beam.ParDo(spill) for i, pcoll in enumerate(pcolls)]
        every = pcolls[0].pipeline | "EveryShard" >> Values([(key, None) for key in self.finals])
        return ((*parts, every) | "PartsAndShards" >> beam.Flatten()
                | "GroupShards" >> beam.GroupByKey()
                | "WriteShard" >> beam.ParDo(_WriteSpilledShard(
                    self.finals, self.staging, self.schema, self.sort_key, self.buffer_bytes)))
