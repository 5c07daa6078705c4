"""Reading and writing Parquet shards through Beam's FileSystems (local paths and gs:// alike)."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems


def match(pattern: str) -> list[str]:
    """Sorted paths matching a glob; [] when none."""
    return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)


def require(pattern: str, hint: str) -> list[str]:
    paths = match(pattern)
    if not paths:
        raise FileNotFoundError(f"no file matches {pattern} ({hint})")
    return paths


def iter_rows(paths: Iterable[str], columns: list[str] | None = None,
              batch_rows: int = 256) -> Iterator[dict]:
    """Rows of Parquet files, streamed a batch at a time (never a whole file in memory)."""
    for path in paths:
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            reader = pq.ParquetFile(f)
            for batch in reader.iter_batches(batch_size=batch_rows, columns=columns):
                yield from batch.to_pylist()


def write_table(path: str, rows: list[dict], schema: pa.Schema) -> None:
    """Rows -> one Parquet file with an explicit schema (written whole, then copied out)."""
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), buf, compression="zstd")
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(buf.getvalue())


def write_text(path: str, text: str) -> None:
    with FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        f.write(text.encode("utf-8"))


def read_text(path: str) -> str:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return f.read().decode("utf-8")


def delete(pattern: str) -> None:
    paths = match(pattern)
    if paths:
        FileSystems.delete(paths)


def row_count(path: str) -> int:
    """Rows of a Parquet file, from its footer."""
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        return pq.ParquetFile(f).metadata.num_rows
