"""WARC output of the crawl: request and response records, in parts of bounded size that a
later run continues and never overwrites (``wikisum.pipeline.warcs`` reads them back)."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable

from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from wikisum.core.records import stable_hash
from wikisum.core.shards import temporary_name
from wikisum.pipeline.crawl.records import Exchange


def warc_record_bytes(ex: Exchange, warcinfo_id: str = "") -> tuple[bytes, int]:
    """An exchange -> (request record + response record, gzip per record; the response
    record's offset within those bytes). The response carries WARC-IP-Address and, when cut
    at the byte cap, ``WARC-Truncated: length``."""
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    common = {"WARC-Date": ex.date, "WARC-IP-Address": ex.ip}
    if warcinfo_id:
        common["WARC-Warcinfo-ID"] = warcinfo_id
    response_headers = dict(common)
    if ex.truncated:
        response_headers["WARC-Truncated"] = "length"
    response = writer.create_warc_record(
        ex.url, "response", payload=io.BytesIO(ex.body), warc_headers_dict=response_headers,
        http_headers=StatusAndHeaders(f"{ex.status} {ex.reason}".rstrip(), list(ex.headers),
                                      protocol=ex.protocol))
    request = writer.create_warc_record(
        ex.url, "request", payload=io.BytesIO(b""),
        warc_headers_dict={**common, "WARC-Concurrent-To":
                           response.rec_headers.get_header("WARC-Record-ID")},
        http_headers=StatusAndHeaders(ex.request_line, list(ex.request_headers),
                                      is_http_request=True))
    writer.write_record(request)
    offset = buf.tell()
    writer.write_record(response)
    return buf.getvalue(), offset


class WarcSink:
    """The WARC files of one host group: ``JOB-RUN-HOSTHASH-PPPPP.warc.gz`` in ``out_dir``.

    Files open lazily (a host whose every URL is refused writes none), start with a warcinfo
    record, and roll over to the next part past ``part_bytes``. A name that exists already is
    never reopened: the part number moves on. A part is written under a hidden temporary name
    and renamed when closed, so a killed crawl leaves no cut file for ingest to read (its URLs
    are not logged as settled either, and the next run fetches them again). Thread-safe.
    """

    def __init__(self, out_dir: str, run_id: str, host: str, part_bytes: int,
                 info: dict | None = None, job: str = "crawl"):
        self.out_dir, self.part_bytes = out_dir, part_bytes
        self.prefix = f"{job}-{run_id}-{stable_hash(host):016x}"
        self.info = dict(info or {})
        self.files: list[str] = []
        self._lock = threading.Lock()
        self._file = None
        self._path, self._size, self._part, self._info_id = "", 0, 0, ""
        self._temporary = ""

    def write(self, ex: Exchange) -> tuple[str, int]:
        """Record an exchange; returns (file, offset of its response record)."""
        return self.append(lambda info_id: warc_record_bytes(ex, info_id))

    def append(self, records: Callable[[str], tuple[bytes, int]]) -> tuple[str, int]:
        """Append whole gzip members: ``records(warcinfo record id)`` -> (bytes, offset of the
        record of interest within them); returns (file, that record's offset in it)."""
        with self._lock:
            if self._file is None or self._size >= self.part_bytes:
                self._next_part()
            data, record_offset = records(self._info_id)
            offset = self._size + record_offset
            self._file.write(data)
            self._size += len(data)
            return self._path, offset

    def _next_part(self) -> None:
        self.close()
        while True:
            path = FileSystems.join(self.out_dir, f"{self.prefix}-{self._part:05d}.warc.gz")
            self._part += 1
            if not FileSystems.exists(path):
                break
        buf = io.BytesIO()
        writer = WARCWriter(buf, gzip=True)
        info = writer.create_warcinfo_record(path.rsplit("/", 1)[-1], self.info)
        writer.write_record(info)
        self._info_id = info.rec_headers.get_header("WARC-Record-ID")
        self._temporary = temporary_name(path)
        self._file = FileSystems.create(self._temporary,
                                        compression_type=CompressionTypes.UNCOMPRESSED)
        self._file.write(buf.getvalue())
        self._path, self._size = path, len(buf.getvalue())
        self.files.append(path)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
            FileSystems.rename([self._temporary], [self._path])


def warc_glob(out: str) -> str:
    """The glob of every WARC file the crawl and cc-fetch leave in ``out`` (this run's and
    earlier runs'), as ``wikisum ingest --warc`` takes it."""
    return FileSystems.join(out, "warc", "*.warc.gz")


def count_files(pattern: str) -> int:
    """How many files ``pattern`` matches now (0 when its folder does not exist). A part being
    written has a hidden ``.tmp`` name that no such glob matches."""
    try:
        return len(FileSystems.match([pattern])[0].metadata_list)
    except OSError:  # Beam's BeamIOError is one: a listing that failed
        return 0
