"""The two index sources behind one interface: a key and a URL to query -> every capture of
the key in the crawls searched (:class:`LookupResult`).

- :class:`CdxApi`: the URL index server (``BASE/CRAWL-index?url=...&output=json``), one query
  per key and crawl, rate-limited: for small lists.
- the columnar index (the crawl's Parquet URL table): a join of the wanted keys against the
  table's rows that reads only the row groups whose ``url_surtkey`` range holds a wanted key,
  and only the columns a capture needs (:func:`row_groups`, :class:`RowGroupIndex`,
  :func:`read_row_group`). For millions of URLs.
"""

from __future__ import annotations

import bisect
import json
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from wikisum.pipeline.ccfetch.captures import (
    BadIndexLine,
    IndexCapture,
    choose,
    from_cdx,
    from_columnar,
)
from wikisum.pipeline.ccfetch.client import Client, RequestError
from wikisum.pipeline.ccfetch.surt import surt_key
from wikisum.pipeline.urls import normalize_url

log = logging.getLogger("wikisum.ccfetch")

MAX_INDEX_RESPONSE = 16 * 1024 * 1024
# The columns of Common Crawl's table a capture needs (``crawl`` may also come from the path).
COLUMNS = ["url_surtkey", "url", "fetch_time", "fetch_status", "fetch_redirect",
           "content_mime_type", "content_mime_detected", "warc_filename", "warc_record_offset",
           "warc_record_length"]
_CRAWL_IN_PATH = re.compile(r"crawl=([^/]+)")


def lookup_key(url: str) -> str | None:
    """The index key that ``url`` is looked up by: :func:`surt_key` of the URL as written when
    it is ASCII, else of its canonical form (:func:`wikisum.pipeline.urls.normalize_url`:
    punycode host, UTF-8 percent-escapes), None where that form does not exist.

    Common Crawl keys a capture by the URL its crawler fetched, which is ASCII, and the lookup
    queries the index with the canonical form; keying a non-ASCII URL by that form makes the
    key agree with both. ``surt_key`` of the raw text would IDNA-encode its host by IDNA 2003,
    which writes some names otherwise ("faß.de" as "fass.de", not "xn--fa-hia.de") and refuses
    characters newer than Unicode 3.2.
    """
    if url.isascii():
        return surt_key(url)
    canonical = normalize_url(url)
    return surt_key(canonical) if canonical is not None else None


@dataclass(frozen=True)
class LookupResult:
    """Every capture of one key that the index returned, the index lines it could not read,
    and, when the index did not answer, why (``error``)."""

    captures: tuple[IndexCapture, ...] = ()
    bad_lines: int = 0
    error: str = ""


# ------------------------------------------------------------------------------------------
# URL index server (CDX API)


class CdxApi:
    """Queries one key in the crawls in order, stopping at the first crawl with a capture that
    ``choose`` would take (a later crawl could not win)."""

    def __init__(self, index_url: str, crawls: Iterable[str], before: str, client: Client):
        self.index_url, self.crawls = index_url.rstrip("/"), list(crawls)
        self.before, self.client = before, client

    def query_url(self, crawl: str, url: str) -> str:
        return f"{self.index_url}/{crawl}-index?url={quote(url, safe='')}&output=json"

    def captures(self, crawl: str, url: str, key: str) -> tuple[list[IndexCapture], int]:
        """The captures of ``key`` in one crawl, and the number of unreadable lines.

        Raises:
            RequestError: the index did not answer (after the client's retries).
        """
        # 404 is the server's "No Captures found" (a JSON body saying so).
        resp = self.client.get(self.query_url(crawl, url), max_bytes=MAX_INDEX_RESPONSE,
                               ok=(200, 404))
        if resp.status == 404:
            return [], 0
        found, bad = [], 0
        for line in resp.body.decode("utf-8", errors="replace").splitlines():
            if not line.strip():
                continue
            try:
                capture = from_cdx(json.loads(line), crawl)
            except (ValueError, BadIndexLine, AttributeError, TypeError, RecursionError):
                bad += 1  # RecursionError: JSON nested deeper than the parser's stack
                continue
            if capture.urlkey == key:  # an exact query: anything else is not this URL
                found.append(capture)
        return found, bad

    def lookup(self, key: str, url: str) -> LookupResult:
        found, bad = [], 0
        for crawl in self.crawls:
            try:
                captures, b = self.captures(crawl, url, key)
            except RequestError as exc:  # the query that failed names the server and crawl
                return LookupResult(tuple(found), bad, f"{self.query_url(crawl, url)}: {exc}")
            found += captures
            bad += b
            if choose(captures, [crawl], self.before, lookup_key).capture is not None:
                break
        return LookupResult(tuple(found), bad)


# ------------------------------------------------------------------------------------------
# Columnar index (Parquet)


@dataclass(frozen=True)
class RowGroup:
    """One row group of the table and the range of keys it holds."""

    path: str
    index: int
    low: str
    high: str
    crawl: str  # from the path's crawl=... partition, "" when the path has none
    rows: int


def crawl_of(path: str) -> str:
    m = _CRAWL_IN_PATH.search(path)
    return m.group(1) if m else ""


def row_groups(path: str, crawls: Iterable[str] = ()) -> list[RowGroup]:
    """The row groups of one table file with their ``url_surtkey`` ranges (from the footer's
    statistics; a group without them is read for every key). A file whose ``crawl=`` partition
    is not among ``crawls`` (when given) is not read at all.

    Raises:
        ValueError: the file has no ``url_surtkey`` column.
    """
    crawls = list(crawls)
    crawl = crawl_of(path)
    if crawls and crawl and crawl not in crawls:
        return []
    with FileSystems.open(path) as f:
        meta = pq.ParquetFile(f).metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    if "url_surtkey" not in names:
        raise ValueError(f"{path}: no url_surtkey column: not a Common Crawl URL table")
    if crawls and not crawl and "crawl" not in names:
        log.warning("cc-fetch: %s has no crawl column and no crawl=... folder in its path: its "
                    "captures match no --crawl (keep the table's crawl=CRAWL/ folders)", path)
    column = names.index("url_surtkey")
    groups = []
    for i in range(meta.num_row_groups):
        rg = meta.row_group(i)
        stats = rg.column(column).statistics
        if stats is not None and stats.has_min_max:
            low, high = _text(stats.min), _text(stats.max)
        else:
            low, high = "", "\U0010ffff"
        groups.append(RowGroup(path, i, low, high, crawl, rg.num_rows))
    return groups


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


class RowGroupIndex:
    """Which row groups may hold a key: per crawl (and file set), the groups sorted by their
    lowest key, with a running maximum of their highest, so that a lookup is a bisection plus
    a walk over the groups that overlap the key (one or two when, as in Common Crawl's table,
    the files of a crawl cover disjoint ranges)."""

    def __init__(self, groups: Iterable[RowGroup]):
        by_crawl: dict[str, list[RowGroup]] = {}
        for g in groups:
            by_crawl.setdefault(g.crawl, []).append(g)
        self.parts = []
        for gs in by_crawl.values():
            gs.sort(key=lambda g: (g.low, g.path, g.index))
            highest, running = [], ""
            for g in gs:
                running = max(running, g.high)
                highest.append(running)
            self.parts.append(([g.low for g in gs], highest, gs))

    def find(self, key: str) -> list[RowGroup]:
        found = []
        for lows, highest, gs in self.parts:
            i = bisect.bisect_right(lows, key) - 1
            while i >= 0 and highest[i] >= key:
                if gs[i].high >= key:
                    found.append(gs[i])
                i -= 1
        return found


def read_row_group(group: RowGroup, keys: Iterable[str]) -> Iterable[IndexCapture | BadIndexLine]:
    """The captures of ``keys`` in one row group (only the needed columns are read); an
    unreadable row comes out as the ``BadIndexLine`` saying why."""
    wanted = sorted(set(keys))
    with FileSystems.open(group.path) as f:
        table_file = pq.ParquetFile(f)
        names = set(table_file.schema_arrow.names)
        columns = [c for c in COLUMNS if c in names] + (["crawl"] if "crawl" in names else [])
        table = table_file.read_row_group(group.index, columns=columns)
    mask = pc.is_in(table.column("url_surtkey"), value_set=pa.array(wanted, pa.string()))
    for row in table.filter(mask).to_pylist():
        try:
            yield from_columnar(row, group.crawl)
        except BadIndexLine as exc:
            yield exc
