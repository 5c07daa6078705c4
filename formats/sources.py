"""Record sources and field checks of the dataset readers (:mod:`wikisum.formats.readers`).

A record source yields ``(index, record)`` for each record of a file, streamed (JSON Lines, CSV
and text line by line, a JSON array element by element, Parquet by row batches), or a
:class:`~wikisum.formats.examples.Problem` for one it cannot read, and reads on. The field
checks raise :class:`Bad`, which :func:`convert` turns into a Problem for that record.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator

from wikisum.core import files, shards
from wikisum.formats import torchfiles
from wikisum.formats.examples import (
    BAD_ENCODING,
    EMPTY_SUMMARY,
    MALFORMED_JSON,
    MALFORMED_ROW,
    MISSING_FIELD,
    NO_DOCUMENTS,
    UNPAIRED_LINE,
    UNREAD_REST,
    WRONG_TYPE,
    Problem,
    SourceExample,
    clean_lines,
    file_name,
    has_suffix,
)

# -- record sources --------------------------------------------------------------------------

# A JSON array element longer than this is malformed: bounds memory on a broken array.
MAX_JSON_ELEMENT_CHARS = 64 * 1024 * 1024
_CHUNK_CHARS = 1 << 20

# A record source yields (index, record) or a Problem.
Record = tuple[int, object]


def _lines(path: str) -> Iterator[tuple[int, str | None, str]]:
    """(line index, text, "") of each line, streamed; (line index, None, the decoding error)
    for a line that is not UTF-8."""
    with files.open_read(path) as f:
        for n, raw in enumerate(f):
            try:
                yield n, raw.decode("utf-8").rstrip("\r\n"), ""
            except UnicodeDecodeError as exc:
                yield n, None, str(exc)


def json_records(path: str) -> Iterator[Record | Problem]:
    """The records of a JSON file: the elements of a JSON array (GraphSum writes one array a
    file) or JSON Lines, whichever the first character says. Blank lines are not records."""
    with files.open_read(path) as f:
        head = f.read(4096).lstrip()
    if head[:1] == b"[":
        yield from _json_array(path)
        return
    index = 0
    for n, text, error in _lines(path):
        if text is None:
            yield Problem(path, index, BAD_ENCODING, f"line {n + 1}: {error}")
            index += 1
            continue
        if not text.strip():
            continue
        try:
            yield index, json.loads(text)
        except json.JSONDecodeError as exc:
            yield Problem(path, index, MALFORMED_JSON, f"line {n + 1}: {exc}")
        index += 1


def _json_array(path: str) -> Iterator[Record | Problem]:
    """The elements of one JSON array, decoded one at a time from a buffer refilled in chunks
    (doubling for a long element), so memory is bounded by the largest element. A broken array
    cannot be resynchronised: the rest of the file is one ``unread_rest`` Problem."""
    decoder = json.JSONDecoder()
    index = 0
    with files.open_read(path) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8")
        buf, pos, eof = "", 0, False

        def more() -> bool:
            nonlocal buf, pos, eof
            if eof:
                return False
            piece = text.read(max(_CHUNK_CHARS, len(buf) - pos))
            buf, pos, eof = buf[pos:] + piece, 0, not piece
            return bool(piece)

        def next_char() -> str | None:
            nonlocal pos
            while True:
                while pos < len(buf) and buf[pos].isspace():
                    pos += 1
                if pos < len(buf):
                    return buf[pos]
                if not more():
                    return None

        try:
            if next_char() != "[":
                yield Problem(path, 0, UNREAD_REST, "the file does not start a JSON array")
                return
            pos += 1
            if next_char() == "]":
                return
            while True:
                while True:
                    try:
                        value, end = decoder.raw_decode(buf, pos)
                    except json.JSONDecodeError as exc:
                        if len(buf) - pos <= MAX_JSON_ELEMENT_CHARS and more():
                            continue  # the element may go on in the next chunk
                        yield Problem(path, index, UNREAD_REST, f"element {index}: {exc}; the "
                                      "rest of the file cannot be read")
                        return
                    if end == len(buf) and more():
                        continue  # a number cut at the buffer's end: decode it again, whole
                    break
                pos = end
                yield index, value
                index += 1
                c = next_char()
                if c == ",":
                    pos += 1
                    next_char()
                elif c == "]":
                    return
                else:
                    yield Problem(path, index, UNREAD_REST, f"after element {index - 1}: "
                                  f"{'the file ends' if c is None else repr(c)} where ',' or "
                                  "']' is expected; the rest of the file cannot be read")
                    return
        except UnicodeDecodeError as exc:
            yield Problem(path, index, UNREAD_REST, f"not UTF-8 ({exc}); the rest of the file "
                          "cannot be read")


def csv_records(path: str) -> Iterator[Record | Problem]:
    """The rows of a CSV file with a header, as dicts, streamed (quoted fields may span
    lines)."""
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))
    with files.open_read(path) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        reader = csv.DictReader(text)
        index = 0
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield Problem(path, index, MALFORMED_ROW, f"line {reader.line_num}: {exc}")
                index += 1
                continue
            except UnicodeDecodeError as exc:
                yield Problem(path, index, UNREAD_REST, f"not UTF-8 ({exc}); the rest of the "
                              "file cannot be read")
                return
            yield index, row
            index += 1


def parquet_records(path: str, batch_rows: int = 64) -> Iterator[Record | Problem]:
    """The rows of a Parquet file, as dicts, a batch of ``batch_rows`` at a time."""
    index = 0
    for row in shards.iter_rows([path], batch_rows=batch_rows):
        yield index, row
        index += 1


def table_records(path: str) -> Iterator[Record | Problem]:
    """The records of a JSON, JSON Lines, CSV or Parquet file, by its extension."""
    if has_suffix(path, ".parquet"):
        return parquet_records(path)
    if has_suffix(path, ".csv"):
        return csv_records(path)
    return json_records(path)


def line_pairs(src: str, tgt: str) -> Iterator[Record | Problem]:
    """(index, (src line, tgt line)) of two line-aligned files, streamed together; a line of
    one without its partner in the other is an ``unpaired_line`` Problem."""
    for left, right in itertools.zip_longest(_lines(src), _lines(tgt)):
        if left is None or right is None:
            n = (right or left)[0]
            have, lack = (tgt, src) if left is None else (src, tgt)
            yield Problem(src, n, UNPAIRED_LINE, f"{file_name(have)} line {n + 1} has no line in "
                          f"{file_name(lack)}")
            continue
        (n, a, a_error), (_, b, b_error) = left, right
        if a is None or b is None:
            yield Problem(src, n, BAD_ENCODING, f"line {n + 1}: {a_error or b_error}")
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


def ids_of(value, name: str) -> tuple[int, ...]:
    value = torchfiles.to_plain(value)
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise Bad(WRONG_TYPE, f"{name!r} is not a list of token ids")
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


def convert(source: Iterable[Record | Problem], path: str,
            make: Callable[[int, object], SourceExample]) -> Iterator[SourceExample | Problem]:
    for item in source:
        if isinstance(item, Problem):
            yield item
            continue
        index, record = item
        try:
            yield make(index, record)
        except Bad as bad:
            yield Problem(path, index, bad.reason, bad.detail)

