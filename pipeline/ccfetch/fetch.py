"""Ranged fetch of index captures: exactly (offset, length) of the crawl's WARC file, checked to
be one gzip member holding one WARC record of the URL, and appended as it came (the original
bytes, not a re-encoding) to WARC files that ``wikisum ingest`` reads."""

from __future__ import annotations

import io
import logging
import re
import threading
import time
import uuid
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from warcio.warcwriter import WARCWriter

from wikisum.pipeline.ccfetch.captures import IndexCapture
from wikisum.pipeline.ccfetch.client import Client, RequestError
from wikisum.pipeline.ccfetch.records import FAILED, FETCHED, FOUND, CcFetchConfig, Outcome
from wikisum.pipeline.ccfetch.surt import surt_key
from wikisum.pipeline.crawl.records import utc_now
from wikisum.pipeline.crawl.writer import WarcSink
from wikisum.pipeline.urls import normalize_url
from wikisum.pipeline.warcs import Broken, Capture, WarcError, iter_records

log = logging.getLogger("wikisum.ccfetch")

MAX_RECORD_BYTES = 64 * 1024 * 1024  # decompressed; Common Crawl cuts payloads at 1 MiB
RECORD_TYPES = frozenset({"response", "resource"})
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")


class BadRecord(Exception):
    """Fetched bytes that are not the capture's record: ``reason`` says how."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail = reason, detail


def data_url(base: str, capture: IndexCapture) -> str:
    return base.rstrip("/") + "/" + capture.filename


def check_range(headers: dict[str, str], capture: IndexCapture) -> None:
    """A 206's Content-Range must be exactly the record's bytes (a 200, the whole file, is
    refused as ``no_range`` before its body is read: see :meth:`Fetcher.record`).

    Raises:
        BadRecord: range_mismatch.
    """
    m = _CONTENT_RANGE.fullmatch(headers.get("content-range", "").strip())
    first, last = capture.offset, capture.offset + capture.length - 1
    if m is None or int(m.group(1)) != first or int(m.group(2)) != last:
        raise BadRecord("range_mismatch", f"Content-Range {headers.get('content-range')!r}, "
                        f"asked bytes {first}-{last}")


def check_length(capture: IndexCapture) -> None:
    """The length the index claims must be within the record limit: a longer range is never
    asked for (the answer is read into memory whole).

    Raises:
        BadRecord: too_large.
    """
    if capture.length > MAX_RECORD_BYTES:
        raise BadRecord("too_large", f"the index says {capture.length} bytes, over the "
                        f"{MAX_RECORD_BYTES} bytes a record may have")


def check_record(data: bytes, capture: IndexCapture) -> Capture:
    """``data`` must be one whole gzip member holding one response or resource record whose
    URL has the capture's key; returns it as ``ingest`` will read it.

    Raises:
        BadRecord: short_read, not_gzip, truncated, extra_data, not_warc, wrong_type, wrong_url.
    """
    if len(data) != capture.length:
        raise BadRecord("short_read", f"{len(data)} bytes, the index says {capture.length}")
    inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        inflate.decompress(data, MAX_RECORD_BYTES)
    except zlib.error as exc:
        raise BadRecord("not_gzip", str(exc)) from None
    if inflate.unconsumed_tail and not inflate.eof:
        raise BadRecord("not_warc", f"over {MAX_RECORD_BYTES} bytes decompressed")
    if not inflate.eof:
        raise BadRecord("truncated", "the gzip member does not end within the range")
    if inflate.unused_data:
        raise BadRecord("extra_data", f"{len(inflate.unused_data)} bytes after the gzip member")
    try:
        records = list(iter_records(io.BytesIO(data), capture.filename,
                                    max_bytes=MAX_RECORD_BYTES))
    except WarcError as exc:
        raise BadRecord("not_warc", str(exc)) from None
    if len(records) != 1:
        raise BadRecord("not_warc", f"{len(records)} records in one gzip member")
    rec = records[0]
    if isinstance(rec, Broken):  # an HTTP block that is not HTTP, a wrong Content-Length
        raise BadRecord("not_warc", f"{rec.reason}: {rec.detail}")
    if not isinstance(rec, Capture) or rec.record_type not in RECORD_TYPES:
        raise BadRecord("wrong_type", f"a {rec.record_type} record")
    if rec.truncated:
        raise BadRecord("truncated", "the record is shorter than its Content-Length")
    if normalize_url(rec.url) != normalize_url(capture.url) and surt_key(rec.url) != \
            capture.urlkey:
        raise BadRecord("wrong_url", f"record of {rec.url[:300]!r}, expected {capture.url!r}")
    return rec


def alias_record(cited: str, capture: IndexCapture, record_id: str) -> bytes:
    """A WARC ``metadata`` record saying that the cited spelling is served by the capture
    (same SURT key, another spelling): ``ingest`` joins the citation through it as through a
    redirect. Deterministic bytes for the same inputs."""
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    date = (f"{capture.timestamp[:4]}-{capture.timestamp[4:6]}-{capture.timestamp[6:8]}T"
            f"{capture.timestamp[8:10]}:{capture.timestamp[10:12]}:{capture.timestamp[12:14]}Z")
    fields = f"via: cc-fetch\r\nurlkey: {capture.urlkey}\r\ncrawl: {capture.crawl}\r\n"
    rec = writer.create_warc_record(
        cited, "metadata", payload=io.BytesIO(fields.encode()),
        warc_content_type="application/warc-fields",
        warc_headers_dict={"WARC-Refers-To-Target-URI": capture.url,
                           "WARC-Refers-To-Date": date, "WARC-Date": date})
    if record_id:
        rec.rec_headers.replace_header("WARC-Refers-To", record_id)
    rec.rec_headers.replace_header(
        "WARC-Record-ID",
        f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, cited + ' ' + capture.url)}>")
    writer.write_record(rec)
    return buf.getvalue()


@dataclass(frozen=True)
class Resolved:
    """A URL whose lookup ended in a capture to fetch: ``chain`` is the redirect captures
    followed, then the page."""

    url: str  # as listed
    urlkey: str
    chain: tuple[IndexCapture, ...]

    @property
    def page(self) -> IndexCapture:
        return self.chain[-1]

    def outcome(self, outcome: str, reason: str, searched: str, **fields) -> Outcome:
        page = self.page
        return Outcome(url=self.url, outcome=outcome, reason=reason, urlkey=self.urlkey,
                       crawl=page.crawl, capture_url=page.url, capture_time=page.timestamp,
                       status=page.status, redirects=tuple(c.redirect for c in self.chain[:-1]),
                       filename=page.filename, offset=page.offset, length=page.length,
                       searched=searched, fetched_at=utc_now(), **fields)


class Fetcher:
    """Fetches resolved URLs of one group into ``sink``: at most ``per_host_concurrency``
    requests in flight, at most ``budget`` record bytes in all (0: no cap); a capture two URLs
    share is fetched once. Thread-safe."""

    def __init__(self, config: CcFetchConfig, client: Client, sink: WarcSink, budget: int = 0):
        self.config, self.client, self.sink, self.budget = config, client, sink, budget
        self._lock = threading.Lock()
        self._spent = 0
        self._done: dict[tuple[str, int], tuple[str, int, str]] = {}  # location -> written

    def _reserve(self, n: int) -> bool:
        with self._lock:
            if self.budget and self._spent + n > self.budget:
                return False
            self._spent += n
            return True

    @property
    def spent(self) -> int:
        return self._spent

    def record(self, capture: IndexCapture) -> tuple[str, int, str, int]:
        """Fetch, check and write one capture's record (once) -> (WARC file, offset, record
        id, attempts).

        The answer is read up to the claimed length, which :func:`check_length` bounds,
        whatever the server sends or its Content-Length says.

        Raises:
            BadRecord, RequestError.
        """
        key = (capture.filename, capture.offset)
        with self._lock:
            done = self._done.get(key)
        if done is not None:
            return (*done, 0)
        check_length(capture)
        first, last = capture.offset, capture.offset + capture.length - 1
        try:
            resp = self.client.get(data_url(self.config.data_url, capture),
                                   {"Range": f"bytes={first}-{last}"},
                                   max_bytes=capture.length, ok=(206,))
        except RequestError as exc:
            if 200 <= exc.status < 300:
                raise BadRecord("no_range", f"HTTP {exc.status} instead of 206 Partial "
                                "Content") from None
            if exc.reason == "too_large":
                raise BadRecord("range_mismatch", f"more than the {capture.length} bytes "
                                "asked for") from None
            raise
        check_range(resp.headers, capture)
        rec = check_record(resp.body, capture)
        path, offset = self.sink.append(lambda _info: (resp.body, 0))
        with self._lock:
            self._done[key] = (path, offset, rec.record_id)
        return path, offset, rec.record_id, resp.attempts

    def fetch(self, r: Resolved) -> Outcome:
        """One resolved URL -> fetched, found(byte_budget) or failed(reason); never raises."""
        searched = self.config.search_key()
        try:
            for capture in r.chain:
                check_length(capture)
        except BadRecord as exc:  # before the budget: nothing of it will be fetched
            return r.outcome(FAILED, exc.reason, searched, error=exc.detail)
        need = sum(c.length for c in r.chain)
        if not self._reserve(need):
            return r.outcome(FOUND, "byte_budget", searched,
                             error=f"--max-total-bytes reached ({self.budget} for this group)")
        attempts, written, ids = 0, ("", -1, ""), []
        try:
            for capture in r.chain:
                *written, attempts = self.record(capture)
                ids.append(written[2])
        except BadRecord as exc:
            return r.outcome(FAILED, exc.reason, searched, error=exc.detail[:1000], bytes=need)
        except RequestError as exc:  # the error names the file asked for
            error = f"{data_url(self.config.data_url, capture)}: {exc.detail}"
            return r.outcome(FAILED, exc.reason, searched, error=error[:1000],
                             attempts=getattr(exc, "attempts", 0))
        except Exception as exc:  # one URL never ends the group
            log.warning("cc-fetch: %s: %s: %s", r.url, type(exc).__name__, exc)
            return r.outcome(FAILED, "error", searched, error=f"{type(exc).__name__}: {exc}")
        # Each URL asked for (the listed one, then every redirect target) that its capture
        # spells otherwise gets an alias record, so that ingest's join follows the chain.
        asked = [r.url] + [c.redirect for c in r.chain[:-1]]
        for url, capture, record_id in zip(asked, r.chain, ids, strict=True):
            if normalize_url(url) != normalize_url(capture.url):
                data = alias_record(url, capture, record_id)
                self.sink.append(lambda _info, data=data: (data, 0))
        return r.outcome(FETCHED, "ok", searched, warc_file=written[0], warc_offset=written[1],
                         bytes=need, attempts=attempts)

    def fetch_all(self, resolved: list[Resolved],
                  progress: Callable[[int], None] | None = None) -> list[Outcome]:
        def one(r: Resolved) -> Outcome:
            o = self.fetch(r)
            if progress is not None:
                progress(o.bytes if o.outcome == FETCHED else 0)
            return o

        if self.config.per_host_concurrency <= 1 or len(resolved) <= 1:
            return [one(r) for r in resolved]
        with ThreadPoolExecutor(self.config.per_host_concurrency,
                                thread_name_prefix="cc-fetch") as pool:
            return list(pool.map(one, resolved))


class Progress:
    """A progress line at most every ``every_s`` seconds: URLs done of all, URLs/s, bytes."""

    def __init__(self, what: str, total: int, every_s: float):
        self.what, self.total, self.every_s = what, total, every_s
        self.start = self.last = time.monotonic()
        self.n = self.bytes = 0
        self._lock = threading.Lock()

    def __call__(self, nbytes: int = 0) -> None:
        with self._lock:
            self.n += 1
            self.bytes += nbytes
            now = time.monotonic()
            if now - self.last < self.every_s and self.n != self.total:
                return
            self.last = now
            rate = self.n / max(now - self.start, 1e-9)
        of = f"/{self.total}" if self.total else ""
        log.info("cc-fetch: %s: %d%s URLs, %.1f URLs/s, %.1f MB fetched", self.what, self.n, of,
                 rate, self.bytes / 1e6)
