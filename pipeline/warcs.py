"""Reading captures out of WARC, ARC and WET files with warcio.

``iter_records`` yields one ``Capture`` per record that can carry a page (``response``,
``resource``, WET ``conversion``), one ``Alias`` per metadata record that ties a URL to the
capture serving it, one ``Skipped`` for every other record (``warcinfo``, ``request``,
``metadata``, ``revisit``), and one ``Broken`` for a record read past without its page (an
HTTP block that is not HTTP, a Content-Length that disagrees with where the record ends), so
that the caller can account for every record read. A broken record does not end the file: in a
gzip-per-record file the next record is the next gzip member; in a plain file the reader
resynchronises on the next ``WARC/1.`` header line.

A file that stops being readable ends the iteration with ``WarcError`` at the offset of the
record that could not be read: what came before it has been yielded. A file cut inside its last
record ends the same way (or, cut inside the payload, yields that record with ``truncated``):
never silently shorter. A file without any record (zero bytes: a failed download) ends with
``EmptyFile``.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecordLoader
from warcio.statusandheaders import StatusAndHeaders, StatusAndHeadersParserException
from warcio.utils import BUFF_SIZE

CAPTURE_TYPES = frozenset({"response", "resource", "conversion"})


@dataclass(frozen=True)
class Capture:
    """A record that may hold a page, with its payload (HTTP headers removed, chunked and
    gzip transfer encodings undone)."""

    url: str
    source_file: str
    offset: int
    record_id: str
    record_type: str  # response | resource | conversion
    date: str
    status: int  # HTTP status; 200 for records without HTTP headers (resource, conversion)
    content_type: str  # HTTP Content-Type, or the record's for non-HTTP records
    body: bytes
    truncated: bool  # the record ended before its declared length
    too_large: bool  # the payload exceeded the size limit and was not read further
    location: str = ""  # HTTP Location of a 3xx response (where the page moved), else ""


@dataclass(frozen=True)
class Skipped:
    """A record that never holds a page (its type is the reason)."""

    source_file: str
    offset: int
    record_type: str
    url: str


@dataclass(frozen=True)
class Alias:
    """A ``metadata`` record naming the capture that serves a URL spelled another way
    (``WARC-Target-URI``: the URL as cited; ``WARC-Refers-To-Target-URI``: the captured URL):
    ``wikisum cc-fetch`` writes one when a citation matched a capture by its SURT key only
    (http/https, ``www.``, a trailing slash, the query's order). Joined like a redirect."""

    source_file: str
    offset: int
    url: str
    target: str


# Why a record is Broken.
BAD_HTTP_HEADER = "bad_http_header"  # a response whose block does not start with an HTTP status
LENGTH_MISMATCH = "length_mismatch"  # Content-Length ends the record before or after its end


@dataclass(frozen=True)
class Broken:
    """A record read past and not kept (``reason``: ``bad_http_header``, ``length_mismatch``;
    ``detail`` says what was found); the records after it are read on."""

    source_file: str
    offset: int
    url: str
    record_id: str
    reason: str
    detail: str


class WarcError(ValueError):
    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


class EmptyFile(WarcError):
    """A file that holds no record at all: a failed download rather than a crawl of nothing."""


def clean_target_uri(uri: str | None) -> str:
    # wget writes WARC-Target-URI as <http://...>; some tools leave spaces unescaped.
    uri = (uri or "").strip()
    if uri.startswith("<") and uri.endswith(">"):
        uri = uri[1:-1].strip()
    return uri.replace(" ", "%20")


def iter_records(stream: BinaryIO, source_file: str, *,
                 max_bytes: int) -> Iterator[Capture | Skipped | Alias | Broken]:
    """Yield a ``Capture``, ``Skipped``, ``Alias`` or ``Broken`` for every record of a
    WARC/ARC/WET stream.

    Args:
        stream: the raw file, still compressed (warcio reads gzip per record itself). A plain
            file is resynchronised after a broken record only where the stream can seek.
        source_file: the file's path, kept with each record for the dead letters.
        max_bytes: payloads longer than this are not read further and are marked ``too_large``.

    Raises:
        EmptyFile: the file holds no record at all (zero bytes).
        WarcError: where the file stops being readable (bad gzip, broken record framing).
    """
    size = _size(stream)  # once: each plain record's Content-Length is checked against it
    records = _Records(stream)
    read = 0
    while True:
        resume = yield from _read_records(records, source_file, max_bytes, size)
        read += records.count
        if resume is None or resume == _END:
            break
        stream.seek(resume)
        records = _Records(stream, careful=True)
    if resume is None:
        _check_end(stream, records.offset)
    if not read:
        raise EmptyFile("the file is empty (0 bytes): a failed download?" if size == 0 else
                        f"no record in the file ({size} bytes)", 0)


# What _read_records returns when a broken record took the rest of the file with it.
_END = -1


def _read_records(records: _Records, source_file: str, max_bytes: int,
                  size: int) -> Iterator[Capture | Skipped | Alias | Broken]:
    """The records of one run of ``records`` (``size``: the file's, or -1); returns where to
    resynchronise (the offset of the next record header after a broken one in a plain file),
    ``_END`` when a broken record ran to the end of the file, or None at the end of the
    records."""
    offset = records.offset
    try:
        for rec in records:
            records.new_record()
            offset = records.offset  # the record's start
            length = (rec.rec_headers.get_header("Content-Length") or "").strip()
            if not length:
                # Every WARC record has one: this header was cut off (the end of a cut file).
                raise WarcError(f"record at offset {offset}: header cut off (no "
                                "Content-Length)", offset)
            # ASCII digits only: str.isdigit() takes "²", which int() refuses; warcio reads a
            # length it cannot parse as 0, and the framing check below finds where it ends.
            bad = None if _byte_count(length) else (
                f"Content-Length {length[:40]!r} is not a byte count")
            uri = clean_target_uri(rec.rec_headers.get_header("WARC-Target-URI"))
            record_id = rec.rec_headers.get_header("WARC-Record-ID") or ""
            if not records.gzipped:
                overrun = _overrun(records, rec, offset, size)
                if overrun is not None:  # found without reading the record
                    why, resume = overrun
                    yield Broken(source_file, offset, uri, record_id, LENGTH_MISMATCH, _joined(
                        bad, f"Content-Length {length} {why}; the next record header is at "
                        f"offset {resume}: {resume - offset} bytes from the record's start "
                        "skipped"))
                    return resume
            body = b""
            if rec.rec_type in CAPTURE_TYPES and not isinstance(rec.http_headers, _NotHttp):
                body = rec.content_stream().read(max_bytes + 1)
            # get_record_offset reads the record to its end.
            offset = records.get_record_offset()
            # A LimitReader with bytes left once read to its end means the record (or the file)
            # ended before the WARC Content-Length said it would.
            truncated = getattr(rec.raw_stream, "limit", 0) > 0
            broken = _framing(records, offset, length, truncated)
            if broken is not None or bad:
                detail, resume = broken or ("", None)
                yield Broken(source_file, offset, uri, record_id, LENGTH_MISMATCH,
                             _joined(bad, detail))
                if records.gzipped or broken is None:
                    continue  # the next gzip member, or the next record, is the next record
                return _END if resume is None else resume
            if rec.rec_type not in CAPTURE_TYPES:
                target = clean_target_uri(rec.rec_headers.get_header("WARC-Refers-To-Target-URI"))
                if rec.rec_type == "metadata" and uri and target:
                    yield Alias(source_file, offset, uri, target)
                else:
                    yield Skipped(source_file, offset, rec.rec_type or "unknown", uri)
                continue
            if isinstance(rec.http_headers, _NotHttp) and not truncated:
                yield Broken(source_file, offset, uri, record_id, BAD_HTTP_HEADER,
                             rec.http_headers.error)
                continue
            status = 200
            location = ""
            if isinstance(rec.http_headers, _NotHttp):  # cut inside its status line
                status, content_type = 0, ""
            elif rec.http_headers is not None and rec.rec_type == "response":
                code = rec.http_headers.get_statuscode()
                status = int(code) if code and code.isdigit() else 0
                content_type = rec.http_headers.get_header("Content-Type") or ""
                if 300 <= status < 400:
                    location = (rec.http_headers.get_header("Location") or "").strip()
            else:
                content_type = rec.rec_headers.get_header("Content-Type") or ""
            too_large = len(body) > max_bytes
            if too_large:
                body = b""
            yield Capture(
                url=uri,
                source_file=source_file,
                offset=offset,
                record_id=record_id or f"{source_file}@{offset}",
                record_type=rec.rec_type,
                date=rec.rec_headers.get_header("WARC-Date") or "",
                status=status,
                content_type=content_type,
                body=body,
                truncated=truncated and not too_large,
                too_large=too_large,
                location=location,
            )
    except WarcError as exc:
        if exc.offset >= 0:
            raise
        where = max(offset, records.offset)
        raise WarcError(f"record at offset {where}: {exc}", where) from exc
    except MemoryError:
        raise
    except Exception as exc:  # warcio raises many kinds (and AttributeError) on broken framing
        # records.offset: where the record that could not be read starts.
        where = max(offset, records.offset)
        raise WarcError(f"record at offset {where} unreadable: {type(exc).__name__}: {exc}",
                        where) from exc
    return None


def _byte_count(length: str) -> bool:
    """Whether a Content-Length is a number of bytes (ASCII digits, and not absurdly many)."""
    return length.isascii() and length.isdigit() and len(length) <= 20


def _joined(*parts: str | None) -> str:
    return "; ".join(p for p in parts if p)


def _overrun(records: _Records, rec, offset: int, size: int) -> tuple[str, int] | None:
    """In a plain WARC file that can seek (``size`` >= 0), whether the record's Content-Length
    runs past the end of the file, or (in a run of records after a broken one) past the next
    record header: then (what was found, that header's offset), found without reading the
    record. A record whose length claims the rest of the file would otherwise read it to its
    end, and a file of such records would be read once per record.

    A correct record costs no I/O before a broken one; after one, a look at the bytes where it
    claims to end (blank lines, then a record header or the end of the file).
    """
    limit = getattr(rec.raw_stream, "limit", None)
    if size < 0 or limit is None or records.loader.last_format != "warc":
        return None
    try:
        end = records.fh.tell() - records.reader.rem_length() + limit
    except (OSError, ValueError, AttributeError):
        return None
    if end > size:
        header, why = _next_header(records.fh, offset), "runs past the end of the file"
    elif records.careful and not _ends_there(records.fh, end, size):
        header = _next_header(records.fh, offset, until=end)
        why = "runs past the next record header"
    else:
        return None
    return None if header is None else (why, header)


# What _ends_there looks at where a plain record claims to end.
_PEEK = 256


def _ends_there(stream: BinaryIO, end: int, size: int) -> bool:
    """Whether the bytes at ``end`` close a record: a blank line, more blank lines or NUL
    padding, then a ``WARC/`` header line or the end of the file. The stream is left where it
    was; False where it cannot be read (the caller then searches the record's bytes)."""
    try:
        here = stream.tell()
        stream.seek(end)
        peek = stream.read(_PEEK)
        stream.seek(here)
    except (OSError, ValueError, AttributeError):
        return False
    if peek.partition(b"\n")[0].strip(BLANK):
        return False  # the first line is not blank
    rest = peek.lstrip(PADDING)
    return rest.startswith(b"WARC/") if rest else end + len(peek) >= size


def _framing(records: _Records, offset: int, length: str,
             truncated: bool) -> tuple[str, int | None] | None:
    """Whether the record's Content-Length disagrees with where it ends: None when it agrees,
    else (what was found, the offset to resynchronise at in a plain file, or None).

    In a gzip-per-record file the record's gzip member is its end: bytes left in it after the
    Content-Length make the record broken (the member is read past by ``_Records``); a member
    that ends first is a ``truncated`` record, as in a cut file. In a plain file the closing
    blank lines must follow, and a record that runs into the end of the file must not hold the
    header of a next record: otherwise the reader goes on at the next ``WARC/1.`` header after
    the record's own first line. Bytes after the blank lines that do not start a record are the
    rest of this record (too short a Content-Length) when a record header follows them, else
    junk after the last record: the record is whole, and the junk ends the file with a
    ``WarcError`` where it starts (read as the next record).

    Raises:
        WarcError: a broken record in a plain file that cannot seek.
    """
    left, junk = records.mismatch, records.junk
    records.mismatch, records.junk = None, False
    if records.gzipped:
        if left is None:
            return None
        return (f"Content-Length {length}, but its gzip member holds {left} more bytes after "
                "it", None)
    if left is None and not truncated and not junk:
        return None
    resume = _next_header(records.fh, offset)
    if resume is None and left is None:
        return None  # the last record, cut: yielded as truncated; or junk after the last one
    if resume is None:
        if not _seekable(records.fh):
            raise WarcError(f"record at offset {offset}: Content-Length {length} does not end "
                            "the record, and the file cannot be searched for the next one",
                            offset)
        return (f"Content-Length {length} does not end the record, and no record header "
                f"follows: the {_size(records.fh) - offset} bytes to the end of the file are "
                "skipped", None)
    why = ("runs past the end of the file" if truncated
           else "is followed by bytes that do not start a record" if junk
           else "is not followed by the blank lines that end a record")
    return (f"Content-Length {length} {why}; the next record header is at offset {resume}: "
            f"{resume - offset} bytes from the record's start skipped", resume)


# A line that starts a WARC record (``WARC/1.0``, ``WARC/1.1``), after the newline before it.
_HEADER_LINE = re.compile(rb"\nWARC/1\.[01]\r?\n")
# The search reads a small chunk first (the next header is most often a few hundred bytes
# away), then chunks twice as long, up to _SCAN_CHUNK.
_SCAN_FIRST = 4096
_SCAN_CHUNK = 1 << 20


def _next_header(stream: BinaryIO, after: int, until: int | None = None) -> int | None:
    """The offset of the first WARC header line that starts after ``after`` (and, given
    ``until``, at or before it; read in bounded chunks), or None: there is none, or the stream
    cannot seek. The stream is left where it was."""
    try:
        here = stream.tell()
    except (OSError, ValueError, AttributeError):
        return None
    try:
        stream.seek(after)
        pos, tail, size = after, b"", _SCAN_FIRST
        while until is None or pos - len(tail) <= until:
            chunk = stream.read(size)
            if not chunk:
                return None
            data = tail + chunk
            found = _HEADER_LINE.search(data)
            if found:
                header = pos - len(tail) + found.start() + 1
                return header if until is None or header <= until else None
            tail = data[-12:]
            pos += len(chunk)
            size = min(2 * size, _SCAN_CHUNK)
        return None
    except (OSError, ValueError, AttributeError):
        return None
    finally:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            stream.seek(here)


def _seekable(stream: BinaryIO) -> bool:
    try:
        return bool(stream.seekable())
    except (OSError, ValueError, AttributeError):
        return False


def _size(stream: BinaryIO) -> int:
    """The stream's size in bytes (the stream is left where it was); -1 where it cannot seek."""
    try:
        here = stream.tell()
        size = stream.seek(0, io.SEEK_END)
        stream.seek(here)
        return size
    except (OSError, ValueError, AttributeError):
        return -1


def _check_end(stream: BinaryIO, end_of_records: int) -> None:
    """A file whose last record was cut inside its header (or a cut gzip member) ends the
    iteration quietly: look whether the file goes on past the last whole record."""
    try:
        size = stream.seek(0, io.SEEK_END)
        stream.seek(end_of_records)
        tail = stream.read(TAIL_SLACK + 1)
    except (OSError, ValueError, AttributeError):
        return  # not seekable: nothing to compare with
    if size > end_of_records and (len(tail) > TAIL_SLACK or tail.strip(PADDING)):
        raise WarcError(f"the file ends inside a record: {size - end_of_records} bytes from "
                        f"offset {end_of_records} are not a whole record", end_of_records)


# Bytes after the last record that may be padding (newlines, NULs), not a cut record.
TAIL_SLACK = 64
# What the blank line that closes a record may hold, and the lines after it (NUL padding too).
BLANK = b" \t\r\n\x0b\x0c"
PADDING = BLANK + b"\x00"
# Header lines are read whole by warcio: a compressed "bomb" (a gigabyte-long line, or millions
# of lines, from a few hundred KB of gzip) would be read into memory. A longer line, or more
# lines in one record's headers, ends the file with a WarcError instead.
MAX_HEADER_LINE = 1 << 20
MAX_HEADER_LINES = 10_000


class _Records(ArchiveIterator):
    """warcio's iterator over one stream, with header reads bounded (``MAX_HEADER_LINE``,
    ``MAX_HEADER_LINES``), a loader that survives a record without ``WARC-Target-URI`` or with a
    block that is not HTTP, and bytes where a record should have ended noted in ``mismatch``
    (how many: in a gzip member, read past to its end) instead of a warning on stderr, or, in a
    plain file, bytes after the blank lines that do not start a record noted in ``junk``.
    ``careful``: a run of records after a broken one, where ``_overrun`` looks where each
    record claims to end before reading it."""

    def __init__(self, stream: BinaryIO, careful: bool = False):
        super().__init__(stream, arc2warc=True)
        self.loader = _TolerantLoader(arc2warc=True)
        self.gzipped = False
        self.careful = careful
        self.count = 0  # records parsed
        self.mismatch: int | None = None
        self.junk = False
        self._lines = 0
        readline, read = self.reader.readline, self.reader.read

        def bounded_readline(length=None):
            limit = MAX_HEADER_LINE + 1 if length is None or length < 0 else min(
                length, MAX_HEADER_LINE + 1)
            line = readline(limit)
            self._lines += 1
            if len(line) > MAX_HEADER_LINE:
                raise WarcError(f"a header line over {MAX_HEADER_LINE} bytes", -1)
            if self._lines > MAX_HEADER_LINES:
                raise WarcError(f"over {MAX_HEADER_LINES} header lines in one record", -1)
            return line

        def counting_read(*args, **kwargs):
            self._lines = 0
            return read(*args, **kwargs)

        self.reader.readline, self.reader.read = bounded_readline, counting_read

    def new_record(self) -> None:
        """The header-line count starts again with each record (a payload read resets it too)."""
        self._lines = 0

    def _next_record(self, next_line):
        record = super()._next_record(next_line)
        self.count += 1
        self.gzipped = self.reader.decompressor is not None
        return record

    def _consume_blanklines(self):
        """warcio's: the blank lines after a record (NUL padding after the first counts as
        blank), and the first line of the next; except that bytes where the record should have
        ended mark it ``mismatch`` (and, in a gzip member, the rest of the member is read past)
        instead of being skipped with a warning: a first line that is not blank, or, after a
        WARC record in a gzip member, a line that does not start the next WARC record. In a
        plain file such a line after the blank lines is returned as the next line, marked
        ``junk``."""
        empty_size = 0
        first_line = True
        while True:
            line = self.reader.readline(MAX_HEADER_LINE)
            if not line:
                return None, empty_size
            # The first line must be blank: NULs there are the record's own bytes (a binary
            # block whose Content-Length is a little short), not padding.
            if not line.strip(BLANK if first_line else PADDING):
                empty_size += len(line)
                first_line = False
                continue
            if not first_line and (line.startswith(b"WARC/") or b"WARC/".startswith(line)
                                   or self.loader.last_format != "warc"):
                return line, empty_size  # the next record (or its first bytes, in a cut file)
            if not first_line and self.reader.decompressor is None:
                self.junk = True  # _framing tells the rest of a record from junk after the last
                return line, empty_size
            left = len(line)
            if self.reader.decompressor is not None:
                while True:
                    chunk = self.reader.read(BUFF_SIZE)
                    if not chunk:
                        break
                    left += len(chunk)
            self.mismatch = left
            return None, empty_size + len(line)


class _NotHttp(StatusAndHeaders):
    """The HTTP headers of a response whose block does not start with an HTTP status line
    (an HTTP/0.9 answer, garbage): ``error`` says what was found."""

    def __init__(self, error: str):
        super().__init__("", [], protocol="")
        self.error = error


class _TolerantLoader(ArcWarcRecordLoader):
    """warcio's loader, except that a record without ``WARC-Target-URI`` loads (with no URL,
    and no HTTP headers parsed) instead of crashing the whole file with an AttributeError, and
    a response whose HTTP status line is not one loads with ``_NotHttp`` headers instead of
    ending the file."""

    last_format = ""  # of the record last read: warc, or arc2warc (an ARC record)

    def _detect_type_load_headers(self, stream, statusline=None, known_format=None):
        the_format, headers = super()._detect_type_load_headers(stream, statusline, known_format)
        self.last_format = the_format
        return the_format, headers

    def load_http_headers(self, rec_type, uri, stream, length):
        try:
            return super().load_http_headers(rec_type, uri or "", stream, length)
        except StatusAndHeadersParserException as exc:
            found = exc.statusline if isinstance(exc.statusline, str) else repr(exc.statusline)
            return _NotHttp(f"no HTTP status line: {found.strip()[:200]!r}")
