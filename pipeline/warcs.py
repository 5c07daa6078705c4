"""Reading captures out of WARC, ARC and WET files with warcio.

``iter_records`` yields one ``Capture`` per record that can carry a page (``response``,
``resource``, WET ``conversion``), one ``Alias`` per metadata record that ties a URL to the
capture serving it, and one ``Skipped`` for every other record (``warcinfo``, ``request``,
``metadata``, ``revisit``), so that the caller can account for every record read. A
file that stops being readable ends the iteration with ``WarcError`` at the offset of the record
that could not be read: what came before it has been yielded, and nothing after the broken point
can be found again in a stream of gzip members. A file cut inside its last record ends the same
way (or, cut inside the payload, yields that record with ``truncated``): never silently shorter.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from warcio.archiveiterator import ArchiveIterator
from warcio.recordloader import ArcWarcRecordLoader

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


class WarcError(ValueError):
    def __init__(self, message: str, offset: int):
        super().__init__(message)
        self.offset = offset


def clean_target_uri(uri: str | None) -> str:
    # wget writes WARC-Target-URI as <http://...>; some tools leave spaces unescaped.
    uri = (uri or "").strip()
    if uri.startswith("<") and uri.endswith(">"):
        uri = uri[1:-1].strip()
    return uri.replace(" ", "%20")


def iter_records(stream: BinaryIO, source_file: str, *,
                 max_bytes: int) -> Iterator[Capture | Skipped]:
    """Yield a ``Capture`` or ``Skipped`` for every record of a WARC/ARC/WET stream.

    Args:
        stream: the raw file, still compressed (warcio reads gzip per record itself).
        source_file: the file's path, kept with each record for the dead letters.
        max_bytes: payloads longer than this are not read further and are marked ``too_large``.

    Raises:
        WarcError: where the file stops being readable (bad gzip, broken record framing).
    """
    records = ArchiveIterator(stream, arc2warc=True)
    records.loader = _TolerantLoader(arc2warc=True)
    _bound_header_reads(records.reader)
    offset = 0
    try:
        for rec in records:
            if not (rec.rec_headers.get_header("Content-Length") or "").strip().isdigit():
                # Every WARC record has one: this header was cut off (the end of a cut file).
                raise WarcError(f"record at offset {records.offset}: header cut off (no "
                                "Content-Length)", records.offset)
            uri = clean_target_uri(rec.rec_headers.get_header("WARC-Target-URI"))
            if rec.rec_type not in CAPTURE_TYPES:
                # get_record_offset reads the record to its end: only once its payload is read.
                offset = records.get_record_offset()
                target = clean_target_uri(rec.rec_headers.get_header("WARC-Refers-To-Target-URI"))
                if rec.rec_type == "metadata" and uri and target:
                    yield Alias(source_file, offset, uri, target)
                else:
                    yield Skipped(source_file, offset, rec.rec_type or "unknown", uri)
                continue
            status = 200
            location = ""
            if rec.http_headers is not None and rec.rec_type == "response":
                code = rec.http_headers.get_statuscode()
                status = int(code) if code and code.isdigit() else 0
                content_type = rec.http_headers.get_header("Content-Type") or ""
                if 300 <= status < 400:
                    location = (rec.http_headers.get_header("Location") or "").strip()
            else:
                content_type = rec.rec_headers.get_header("Content-Type") or ""
            body = rec.content_stream().read(max_bytes + 1)
            too_large = len(body) > max_bytes
            if too_large:
                body = b""
            # A LimitReader with bytes left after the payload was read to its end means the
            # record (or the file) ended before the WARC Content-Length said it would.
            truncated = (not too_large) and getattr(rec.raw_stream, "limit", 0) > 0
            offset = records.get_record_offset()
            yield Capture(
                url=uri,
                source_file=source_file,
                offset=offset,
                record_id=rec.rec_headers.get_header("WARC-Record-ID") or f"{source_file}@{offset}",
                record_type=rec.rec_type,
                date=rec.rec_headers.get_header("WARC-Date") or "",
                status=status,
                content_type=content_type,
                body=body,
                truncated=truncated,
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
    _check_end(stream, records.offset)


def _check_end(stream: BinaryIO, end_of_records: int) -> None:
    """A file whose last record was cut inside its header (or a cut gzip member) ends the
    iteration quietly: look whether the file goes on past the last whole record."""
    try:
        size = stream.seek(0, io.SEEK_END)
        stream.seek(end_of_records)
        tail = stream.read(TAIL_SLACK + 1)
    except (OSError, ValueError, AttributeError):
        return  # not seekable: nothing to compare with
    if size > end_of_records and (len(tail) > TAIL_SLACK or tail.strip(b"\r\n\t \x00")):
        raise WarcError(f"the file ends inside a record: {size - end_of_records} bytes from "
                        f"offset {end_of_records} are not a whole record", end_of_records)


# Bytes after the last record that may be padding (newlines, NULs), not a cut record.
TAIL_SLACK = 64
# Header lines are read whole by warcio: a compressed "bomb" (a gigabyte-long line, or millions
# of lines, from a few hundred KB of gzip) would be read into memory. A longer line, or more
# lines between two payload reads, ends the file with a WarcError instead.
MAX_HEADER_LINE = 1 << 20
MAX_HEADER_LINES = 10_000


def _bound_header_reads(reader) -> None:
    """Make ``reader.readline`` (what every header line is read with) read at most
    MAX_HEADER_LINE bytes a line and MAX_HEADER_LINES lines between two ``read`` calls."""
    readline, read = reader.readline, reader.read
    lines = [0]

    def bounded_readline(length=None):
        limit = MAX_HEADER_LINE + 1 if length is None or length < 0 else min(
            length, MAX_HEADER_LINE + 1)
        line = readline(limit)
        lines[0] += 1
        if len(line) > MAX_HEADER_LINE:
            raise WarcError(f"a header line over {MAX_HEADER_LINE} bytes", -1)
        if lines[0] > MAX_HEADER_LINES:
            raise WarcError(f"over {MAX_HEADER_LINES} header lines in one record", -1)
        return line

    def counting_read(*args, **kwargs):
        lines[0] = 0
        return read(*args, **kwargs)

    reader.readline, reader.read = bounded_readline, counting_read


class _TolerantLoader(ArcWarcRecordLoader):
    """warcio's loader, except that a record without ``WARC-Target-URI`` loads (with no URL,
    and no HTTP headers parsed) instead of crashing the whole file with an AttributeError."""

    def load_http_headers(self, rec_type, uri, stream, length):
        return super().load_http_headers(rec_type, uri or "", stream, length)
