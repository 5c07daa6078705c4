"""Record sources and field checks of the dataset readers (:mod:`wikisum.formats.readers`).

A record source yields ``(index, record)`` for each record of a file, streamed (JSON Lines, CSV
and text line by line, a JSON array element by element, Parquet by row batches), or a
:class:`~wikisum.formats.examples.Problem` for one it cannot read, and reads on. The field
checks raise :class:`Bad`, which :func:`convert` turns into a Problem for that record.
"""

from __future__ import annotations

import codecs
import csv
import itertools
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator

from wikisum.core import files
from wikisum.formats import torchfiles
from wikisum.formats.config import DEFAULT_LIMITS, MAX_RECORD_BYTES, ReadLimits
from wikisum.formats.examples import (
    BAD_ENCODING,
    BAD_IDS,
    EMPTY_SUMMARY,
    MALFORMED_JSON,
    MALFORMED_ROW,
    MISSING_FIELD,
    NO_DOCUMENTS,
    TOO_DEEP,
    TOO_LARGE,
    UNPAIRED_LINE,
    UNREAD_REST,
    WRONG_TYPE,
    Problem,
    SourceExample,
    clean_lines,
    example_problem,
    file_name,
    has_suffix,
)
from wikisum.formats.jsonstream import ArrayElements

# -- record sources --------------------------------------------------------------------------

_CHUNK_CHARS = 1 << 20  # bytes read at a time from a JSON array
_SKIP_CHUNK = 1 << 20  # bytes read at a time from a line skipped as too large

# A record source yields (index, record) or a Problem.
Record = tuple[int, object]


def _skip_line(f) -> int:
    """Reads to the end of the line (or the file) in chunks, holding none; the bytes read."""
    skipped = 0
    while True:
        piece = f.readline(_SKIP_CHUNK)
        skipped += len(piece)
        if not piece or piece.endswith(b"\n"):
            return skipped


def _lines(path: str, max_bytes: int) -> Iterator[tuple[int, str | None, str, str]]:
    """(line index, text, "", "") of each line, streamed; (line index, None, reason, detail)
    for a line that is not UTF-8 (``bad_encoding``) or longer than ``max_bytes``
    (``too_large``: skipped in chunks, never held)."""
    with files.open_read(path) as f:
        n = 0
        while raw := f.readline(max_bytes + 1):
            if n == 0:
                raw = raw.removeprefix(codecs.BOM_UTF8)  # a byte-order mark opening the file
            if len(raw) > max_bytes and not raw.endswith(b"\n"):
                skipped = len(raw) + _skip_line(f)
                yield n, None, TOO_LARGE, (f"line {n + 1}: {skipped:,} bytes, over the "
                                           f"{max_bytes:,} a record may have")
            else:
                try:
                    yield n, raw.decode("utf-8").rstrip("\r\n"), "", ""
                except UnicodeDecodeError as exc:
                    yield n, None, BAD_ENCODING, f"line {n + 1}: {exc}"
            n += 1


def json_records(path: str, max_bytes: int = MAX_RECORD_BYTES) -> Iterator[Record | Problem]:
    """The records of a JSON file: the elements of a JSON array (GraphSum writes one array a
    file) or JSON Lines, whichever the first character says. Blank lines are not records. A
    record over ``max_bytes`` is skipped unheld (``too_large``); one nested deeper than the
    parser recurses is ``too_deep``."""
    with files.open_read(path) as f:
        head = f.read(4096).removeprefix(codecs.BOM_UTF8).lstrip()
    if head[:1] == b"[":
        yield from _json_array(path, max_bytes)
        return
    index = 0
    for n, text, reason, detail in _lines(path, max_bytes):
        if text is None:
            yield Problem(path, index, reason, detail)
            index += 1
            continue
        if not text.strip():
            continue
        try:
            yield index, json.loads(text)
        except json.JSONDecodeError as exc:
            yield Problem(path, index, MALFORMED_JSON, f"line {n + 1}: {exc}")
        except RecursionError:
            yield Problem(path, index, TOO_DEEP, f"line {n + 1}: nested deeper than the JSON "
                          "parser's recursion limit")
        index += 1


_ARRAY_REASONS = {"bad_json": MALFORMED_JSON, "too_deep": TOO_DEEP, "bad_encoding": BAD_ENCODING}


def _json_array(path: str, max_bytes: int) -> Iterator[Record | Problem]:
    """The elements of one JSON array, one at a time (:class:`~wikisum.formats.jsonstream.
    ArrayElements`): memory holds one element of at most ``max_bytes`` characters. An element
    that is not JSON, too deep, not UTF-8 or too large is a Problem and the next is read; an
    array broken in its own syntax (a file cut short) cannot be resynchronised: the rest of the
    file is one ``unread_rest`` Problem."""
    index = 0
    with files.open_read(path) as raw:
        for event in ArrayElements(raw, max_bytes, _CHUNK_CHARS).elements():
            kind, offset = event[0], event[1]
            if kind == "element":
                yield index, event[2]
            elif kind == "bad_element":
                yield Problem(path, index, _ARRAY_REASONS[event[2]],
                              f"element {index} at byte {offset:,}: {event[3]}")
            elif kind == "too_large":
                yield Problem(path, index, TOO_LARGE, f"element {index} at byte {offset:,}: "
                              f"over the {max_bytes:,} characters a record may have")
            else:
                yield Problem(path, index, UNREAD_REST, f"element {index} at byte {offset:,}: "
                              f"{event[2]}; the rest of the file cannot be read")
                return
            index += 1


class _CsvLines:
    """The lines of a CSV file as ``csv.reader`` reads them, decoded with surrogate escapes
    (bytes that are not UTF-8 spoil their row only), and at most ``max_bytes`` of one row: a
    longer line, and every line of a row past that, is read in chunks and replaced by a stand-in
    of two characters with the same parity of quote characters, so the reader still finds where
    the row ends (its quoting state at each line's end is the same) without holding it. The row
    is then flagged (:attr:`skipped`, bytes)."""

    def __init__(self, f, max_bytes: int):
        self.f, self.max_bytes = f, max_bytes
        self.fed = 0  # bytes of the current row given to the reader
        self.skipped = 0  # bytes of the current row replaced by stand-ins
        self.first = True

    def next_row(self) -> None:
        self.fed = self.skipped = 0

    def __iter__(self):
        return self

    def __next__(self) -> str:
        raw = self.f.readline(self.max_bytes + 1)
        if not raw:
            raise StopIteration
        if self.first:
            raw, self.first = raw.removeprefix(codecs.BOM_UTF8), False  # a byte-order mark
        if not self.skipped and self.fed + len(raw) <= self.max_bytes:
            self.fed += len(raw)
            return raw.decode("utf-8", "surrogateescape")
        quotes, size = raw.count(b'"'), len(raw)
        while not raw.endswith(b"\n"):
            raw = self.f.readline(_SKIP_CHUNK)
            if not raw:
                break
            quotes, size = quotes + raw.count(b'"'), size + len(raw)
        self.skipped += size
        return ('"' if quotes % 2 else "") + "-\n"


def csv_records(path: str, max_bytes: int = MAX_RECORD_BYTES) -> Iterator[Record | Problem]:
    """The rows of a CSV file with a header, as dicts, streamed (quoted fields may span
    lines); a row over ``max_bytes`` is ``too_large``, skipped unheld."""
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))
    with files.open_read(path) as raw:
        lines = _CsvLines(raw, max_bytes)
        reader = csv.DictReader(lines)
        try:
            reader.fieldnames  # noqa: B018 - reads the header, which is not a row
        except csv.Error as exc:
            yield Problem(path, 0, UNREAD_REST, f"the header: {exc}; the file cannot be read")
            return
        lines.next_row()
        index = 0
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield Problem(path, index, MALFORMED_ROW, f"line {reader.line_num}: {exc}")
            else:
                if lines.skipped:
                    yield Problem(path, index, TOO_LARGE, f"the row ending on line "
                                  f"{reader.line_num}: over the {max_bytes:,} bytes a record may "
                                  f"have ({lines.fed + lines.skipped:,} read)")
                else:
                    yield index, row
            lines.next_row()
            index += 1


def parquet_records(path: str, max_bytes: int = MAX_RECORD_BYTES, batch_rows: int = 64
                    ) -> Iterator[Record | Problem]:
    """The rows of a Parquet file, as dicts, a batch of ``batch_rows`` at a time. A row group
    whose rows declare more than ``max_bytes`` each on average is not read (each of its rows a
    ``too_large`` Problem): pyarrow decodes a column chunk whole. A row whose strings are not
    UTF-8 is ``bad_encoding``.

    Raises:
        ValueError: the file is not Parquet, or is cut short (the message names it).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    index = 0
    try:
        with files.open_read(path) as f:
            parquet = pq.ParquetFile(f)
            for group in range(parquet.metadata.num_row_groups):
                meta = parquet.metadata.row_group(group)
                if meta.num_rows and meta.total_byte_size > max_bytes * meta.num_rows:
                    for _ in range(meta.num_rows):
                        yield Problem(path, index, TOO_LARGE, f"row group {group} declares "
                                      f"{meta.total_byte_size:,} bytes for {meta.num_rows:,} "
                                      f"rows, over the {max_bytes:,} a record may have")
                        index += 1
                    continue
                for batch in parquet.iter_batches(batch_size=batch_rows, row_groups=[group]):
                    for item in _batch_rows(batch, path, index):
                        yield item
                        index += 1
    except (pa.ArrowException, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(f"{path} is not a readable Parquet file ({exc})") from exc


def _batch_rows(batch, path: str, first: int) -> Iterator[Record | Problem]:
    try:
        rows = batch.to_pylist()
    except UnicodeDecodeError:  # a string that is not UTF-8: find its rows
        rows = None
    for i in range(batch.num_rows):
        if rows is not None:
            yield first + i, rows[i]
            continue
        try:
            yield first + i, batch.slice(i, 1).to_pylist()[0]
        except UnicodeDecodeError as exc:
            yield Problem(path, first + i, BAD_ENCODING, f"row {first + i}: {exc}")


def table_records(path: str, max_bytes: int = MAX_RECORD_BYTES) -> Iterator[Record | Problem]:
    """The records of a JSON, JSON Lines, CSV or Parquet file, by its extension."""
    if has_suffix(path, ".parquet"):
        return parquet_records(path, max_bytes)
    if has_suffix(path, ".csv"):
        return csv_records(path, max_bytes)
    return json_records(path, max_bytes)


def line_pairs(src: str, tgt: str, max_bytes: int = MAX_RECORD_BYTES
               ) -> Iterator[Record | Problem]:
    """(index, (src line, tgt line)) of two line-aligned files, streamed together; a line of
    one without its partner in the other is an ``unpaired_line`` Problem, a pair over
    ``max_bytes`` (either line skipped unheld) ``too_large``."""
    for left, right in itertools.zip_longest(_lines(src, max_bytes), _lines(tgt, max_bytes)):
        if left is None or right is None:
            n = (right or left)[0]
            have, lack = (tgt, src) if left is None else (src, tgt)
            yield Problem(src, n, UNPAIRED_LINE, f"{file_name(have)} line {n + 1} has no line in "
                          f"{file_name(lack)}")
            continue
        (n, a, a_reason, a_detail), (_, b, b_reason, b_detail) = left, right
        if a is None or b is None:
            reason, detail = (a_reason, a_detail) if a is None else (b_reason, b_detail)
            yield Problem(src, n, reason, f"{file_name(src if a is None else tgt)} {detail}")
            continue
        if len(a.encode("utf-8")) + len(b.encode("utf-8")) > max_bytes:
            yield Problem(src, n, TOO_LARGE, f"line {n + 1}: the two lines are over the "
                          f"{max_bytes:,} bytes a record may have")
            continue
        yield n, (a, b)


def target_of(src: str) -> str:
    """The ``.tgt`` file beside a ``.src`` (``train.src.cleaned`` -> ``train.tgt``)."""
    name = file_name(src)
    base = re.sub(r"\.src(\.cleaned)?$", "", name)
    tgt = src[: len(src) - len(name)] + base + ".tgt"
    if not files.exists(tgt):
        raise FileNotFoundError(f"{src} has no {base}.tgt beside it: a .src file is read with "
                                "its .tgt, line for line")
    return tgt


def is_source_text(path: str) -> bool:
    return has_suffix(path, ".src", ".src.cleaned") and ".bow." not in file_name(path)


def is_table(path: str) -> bool:
    return has_suffix(path, ".jsonl", ".json", ".csv", ".parquet")


def text_sources(paths: list[str]) -> list[str]:
    """The ``.src`` files of ``paths``; a ``.tgt`` file is read as a ``.src`` file's partner,
    so one given without its ``.src`` is an error, not a silent skip."""
    sources = [p for p in paths if is_source_text(p)]
    partners = {os.path.normpath(target_of(p)) for p in sources}
    for path in paths:
        if has_suffix(path, ".tgt") and ".bow." not in file_name(path) and \
                os.path.normpath(path) not in partners:
            raise FileNotFoundError(f"{path} has no .src file read with it")
    return sources


# -- field checks ----------------------------------------------------------------------------


class Bad(Exception):
    """A record that cannot be converted: becomes a Problem with this reason and detail."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def field_of(record: dict, name: str, kind: type | tuple[type, ...]):
    if name not in record or record[name] is None:
        raise Bad(MISSING_FIELD, f"no {name!r} field (fields: {', '.join(map(str, record))})")
    value = torchfiles.to_plain(record[name])
    if not isinstance(value, kind):
        raise Bad(WRONG_TYPE, f"{name!r} is a {type(value).__name__}")
    return value


def strings_of(value, name: str) -> list[str]:
    value = torchfiles.to_plain(value)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise Bad(WRONG_TYPE, f"{name!r} is not a list of strings")
    return list(value)


def ids_of(value, name: str, vocab_size: int | None = None,
           reserved: frozenset[int] = frozenset()) -> tuple[int, ...]:
    """``value`` (a list, tuple or tensor) as token ids: integers (a float, a bool, a string is
    ``bad_ids``), none negative, with ``vocab_size`` every one below it, and none of
    ``reserved`` (each ``bad_ids``)."""
    value = torchfiles.to_plain(value)
    if not isinstance(value, (list, tuple)):
        raise Bad(WRONG_TYPE, f"{name!r} is not a list of token ids")
    for i, v in enumerate(value):
        if not isinstance(v, int) or isinstance(v, bool):
            raise Bad(BAD_IDS, f"{name!r}[{i}] is a {type(v).__name__}, not a token id")
        if v < 0 or (vocab_size is not None and v >= vocab_size):
            limit = f"0 to {vocab_size - 1:,}" if vocab_size is not None else "0 or more"
            raise Bad(BAD_IDS, f"{name!r}[{i}] is {v if abs(v) < 10**12 else 'huge'}, outside "
                      f"the vocabulary's ids ({limit})")
        if v in reserved:
            raise Bad(BAD_IDS, f"{name!r}[{i}] is {v}, an id that marks structure (a control "
                      "piece or hiersumm's <S>, </S>, <PAD>), not text")
    return tuple(value)


def object_of(record, what: str) -> dict:
    if not isinstance(record, dict):
        raise Bad(WRONG_TYPE, f"the {what} is a {type(record).__name__}, not an object")
    return record


def documents_of(texts: Iterable[str]) -> tuple[str, ...]:
    docs = tuple(d for d in (clean_lines(t) for t in texts) if d)
    if not docs:
        raise Bad(NO_DOCUMENTS, "no source text")
    return docs


def summary_of(text: str) -> str:
    if not text:
        raise Bad(EMPTY_SUMMARY, "the summary is empty")
    return text


def _held_size(record, depth: int = 3) -> int:
    """A lower bound of the bytes of text and token ids (4 each) a record holds, known before it
    is converted: the characters of its strings and the number of its integers, ``depth``
    levels of lists and objects down (a record's fields, their lists, a list's items)."""
    if isinstance(record, str):
        return len(record)
    if isinstance(record, int):
        return 4
    numel = getattr(record, "numel", None)
    if callable(numel):  # a tensor of ids, not yet a list
        return 4 * numel()
    if depth == 0:
        return 0
    if isinstance(record, dict):
        record = record.values()
    elif not isinstance(record, (list, tuple)):
        return 0
    return sum(_held_size(item, depth - 1) for item in record)


def convert(source: Iterable[Record | Problem], path: str,
            make: Callable[[int, object], SourceExample],
            limits: ReadLimits = DEFAULT_LIMITS) -> Iterator[SourceExample | Problem]:
    """The examples ``make(index, record)`` makes of ``source``'s records, each checked against
    ``limits`` (:func:`~wikisum.formats.examples.example_problem`); a record it cannot make
    (:class:`Bad`, or JSON nested too deep to walk) or that fails the check is a Problem, and
    the next is read."""
    for item in source:
        if isinstance(item, Problem):
            yield item
            continue
        index, record = item
        held = _held_size(record)
        if held > limits.max_record_bytes:
            yield Problem(path, index, TOO_LARGE, f"over {limits.max_record_bytes:,} bytes of "
                          f"text and ids ({held:,} at least)")
            continue
        try:
            example = make(index, record)
        except Bad as bad:
            yield Problem(path, index, bad.reason, bad.detail)
            continue
        except RecursionError:
            yield Problem(path, index, TOO_DEEP, "nested deeper than can be walked")
            continue
        problem = example_problem(example, limits.max_record_bytes, limits.max_paragraphs)
        if problem is not None:
            yield Problem(path, index, *problem)
        else:
            yield example

