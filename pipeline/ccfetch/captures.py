"""Captures as the URL index lists them, and which one of a URL's captures to fetch.

Both index sources (the URL index server's CDX API and the columnar Parquet table) become the
same :class:`IndexCapture`; :func:`choose` is the one policy over them, a pure function:

1. crawls are searched in the order given: the first crawl with a usable capture wins;
2. a usable capture is a 200 with an HTML or text MIME type, or a redirect (3xx) whose
   recorded target is another URL (its target is looked up in the next round, bounded);
   a 200 is preferred to a redirect in the same crawl (Common Crawl often holds both the
   ``http`` redirect and the ``https`` page under one key);
3. with ``before`` (a build for a dump of a given date) the capture closest to and not after
   it, otherwise the latest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from wikisum.pipeline.references import HTML_TYPES, TEXT_TYPES
from wikisum.pipeline.urls import is_text

PAGE_TYPES = HTML_TYPES | TEXT_TYPES
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

# Why no capture of a key was chosen (the not_in_index reasons), from the most to the least
# promising: a capture existed that only --before ruled out, ..., no capture at all.
AFTER_BEFORE = "after_before"  # every usable capture is later than --before
MIME = "mime"  # 200s, but none with an HTML or text MIME type
STATUS = "status"  # captures, but none a 200 or a redirect with a target
REDIRECT_LOOP = "redirect_loop"  # only redirects back to the same key
NO_CAPTURE = "no_capture"  # the index has no capture of the key in the crawls searched

# A WARC filename from an index must be a plain relative path: it is appended to --data-url.
_SAFE_FILENAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._=/-]*")


@dataclass(frozen=True)
class IndexCapture:
    """One capture of a URL: where its WARC record is and what the crawler saw."""

    urlkey: str  # the index's SURT key
    url: str  # the URL as captured
    timestamp: str  # 14 digits, YYYYMMDDhhmmss (UTC)
    status: int  # HTTP status; 0 when the index has none (revisit, unknown)
    mime: str  # the Content-Type the server sent (type only, lowercased)
    mime_detected: str  # what the crawler detected from the bytes ("" when absent)
    redirect: str  # a redirect's absolute target, "" when none
    filename: str  # the WARC file, relative to the data URL
    offset: int
    length: int
    crawl: str  # CC-MAIN-YYYY-WW

    @property
    def page_type(self) -> str:
        return self.mime_detected or self.mime


class BadIndexLine(ValueError):
    """An index row that cannot be a capture (missing field, bad number, unsafe filename)."""


def _mime(text: str | None) -> str:
    return (text or "").split(";", 1)[0].strip().lower()


def _int(value, name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise BadIndexLine(f"{name} is not a number: {value!r}") from None


def checked(capture: IndexCapture) -> IndexCapture:
    """The capture, if its location can be fetched safely.

    Raises:
        BadIndexLine: a negative offset, a length of 0, a filename that is not a plain
            relative path (no scheme, no ``..``, no leading ``/``), or a string field that is
            not text (a lone surrogate from a ``\\ud800`` escape: it could not be logged).
    """
    if capture.offset < 0 or capture.length <= 0:
        raise BadIndexLine(f"offset {capture.offset} / length {capture.length}")
    for field in ("urlkey", "url", "timestamp", "mime", "mime_detected", "redirect",
                  "filename", "crawl"):
        if not is_text(getattr(capture, field)):
            raise BadIndexLine(f"{field} is not text (a lone surrogate)")
    name = capture.filename
    if not _SAFE_FILENAME.fullmatch(name) or ".." in name.split("/") or "//" in name:
        raise BadIndexLine(f"unsafe WARC filename {name[:200]!r}")
    if not re.fullmatch(r"\d{14}", capture.timestamp):
        raise BadIndexLine(f"timestamp {capture.timestamp!r} is not YYYYMMDDhhmmss")
    return capture


def from_cdx(record: dict, crawl: str) -> IndexCapture:
    """A line of the CDX API's ``output=json`` (one JSON object, every value a string).

    Raises:
        BadIndexLine: see :func:`checked`.
    """
    try:
        status = record.get("status", "")
        return checked(IndexCapture(
            urlkey=str(record["urlkey"]), url=str(record["url"]),
            timestamp=str(record["timestamp"]),
            status=int(status) if str(status).isdigit() else 0,
            mime=_mime(record.get("mime")), mime_detected=_mime(record.get("mime-detected")),
            redirect=str(record.get("redirect") or ""), filename=str(record["filename"]),
            offset=_int(record["offset"], "offset"), length=_int(record["length"], "length"),
            crawl=crawl))
    except KeyError as exc:
        raise BadIndexLine(f"no {exc.args[0]!r} field") from None


def from_columnar(row: dict, crawl: str) -> IndexCapture:
    """A row of the columnar index (columns named as in Common Crawl's table).

    Raises:
        BadIndexLine: see :func:`checked`.
    """
    when = row.get("fetch_time")
    if isinstance(when, datetime):
        timestamp = when.strftime("%Y%m%d%H%M%S")
    else:
        timestamp = re.sub(r"\D", "", str(when or ""))[:14]
    status = row.get("fetch_status")
    try:
        return checked(IndexCapture(
            urlkey=str(row["url_surtkey"]), url=str(row["url"]), timestamp=timestamp,
            status=int(status) if status is not None else 0,
            mime=_mime(row.get("content_mime_type")),
            mime_detected=_mime(row.get("content_mime_detected")),
            redirect=str(row.get("fetch_redirect") or ""), filename=str(row["warc_filename"]),
            offset=_int(row["warc_record_offset"], "offset"),
            length=_int(row["warc_record_length"], "length"),
            crawl=str(row.get("crawl") or crawl)))
    except KeyError as exc:
        raise BadIndexLine(f"no {exc.args[0]!r} column") from None


def parse_before(text: str) -> str:
    """``2017-03-31``, ``2017-03-31T12:00:00Z`` or ``20170331`` -> a 14-digit timestamp (a date
    alone means the end of that day).

    Raises:
        ValueError: naming the text.
    """
    digits = re.sub(r"[-:TZ ]", "", text.strip())
    if not re.fullmatch(r"\d{8}(\d{6})?", digits):
        raise ValueError(f"not a date: {text!r} (use YYYY-MM-DD or YYYY-MM-DDThh:mm:ssZ)")
    if len(digits) == 8:
        digits += "235959"
    try:
        datetime.strptime(digits, "%Y%m%d%H%M%S")
    except ValueError:
        raise ValueError(f"not a date: {text!r}") from None
    return digits


@dataclass(frozen=True)
class Choice:
    """The capture to fetch for a key, or why there is none."""

    capture: IndexCapture | None
    reason: str  # "ok", or a not_in_index reason

    @property
    def is_redirect(self) -> bool:
        return self.capture is not None and self.capture.status in REDIRECT_STATUSES


def choose(captures: list[IndexCapture], crawls: list[str], before: str = "",
           surt=None) -> Choice:
    """The capture of one key to fetch (see the module's docstring), or why none.

    Args:
        captures: every capture of the key the lookup returned, from any crawl.
        crawls: the crawls in the order they are searched; empty: every crawl, as one.
        before: a 14-digit timestamp (``parse_before``), or "" for the latest capture.
        surt: the key function (``surt_key``), to tell a redirect to another key from one
            back to the same key; None: every redirect target counts as another key.
    """
    if not captures:
        return Choice(None, NO_CAPTURE)
    order = {c: i for i, c in enumerate(crawls)}
    groups: dict[int, list[IndexCapture]] = {}
    for c in captures:
        if crawls and c.crawl not in order:
            continue
        groups.setdefault(order.get(c.crawl, 0), []).append(c)
    why = NO_CAPTURE
    rank = [NO_CAPTURE, REDIRECT_LOOP, STATUS, MIME, AFTER_BEFORE]
    for i in sorted(groups):
        pages, redirects = [], []
        for c in groups[i]:
            if c.status == 200:
                if c.page_type in PAGE_TYPES:
                    pages.append(c)
                else:
                    why = max(why, MIME, key=rank.index)
            elif c.status in REDIRECT_STATUSES and c.redirect:
                if surt is not None and surt(c.redirect) == c.urlkey:
                    why = max(why, REDIRECT_LOOP, key=rank.index)
                else:
                    redirects.append(c)
            else:
                why = max(why, STATUS, key=rank.index)
        for usable in (pages, redirects):
            if before:
                timely = [c for c in usable if c.timestamp <= before]
                if usable and not timely:
                    why = max(why, AFTER_BEFORE, key=rank.index)
                usable = timely
            if usable:
                # The latest (not after --before); ties by location, so the choice is stable.
                best = max(usable, key=lambda c: (c.timestamp, c.filename, c.offset))
                return Choice(best, "ok")
    return Choice(None, why)
