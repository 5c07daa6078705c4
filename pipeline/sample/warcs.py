"""Writing the sample's web captures: its WARC files and the WET file of text conversions.

WARC files hold ``warcinfo``, ``request``, ``response`` and ``resource`` records, gzip per
record, one record cut short; record ids and dates are derived from the seed.
"""

from __future__ import annotations

import io
import uuid
from collections import Counter
from datetime import datetime, timezone
from email.utils import format_datetime
from pathlib import Path

from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from wikisum.pipeline.sample import pages
from wikisum.pipeline.sample.config import WET_NAME
from wikisum.pipeline.sample.records import BASE_DATE, TRUNCATED, Document


def capture_body(doc: Document) -> bytes:
    """The bytes a capture of ``doc`` holds: its HTML, its WET text or its raw body."""
    if doc.raw_body is not None:
        return doc.raw_body
    if doc.kind == "empty":
        return b"<!DOCTYPE html>\n<html><head><title></title></head><body></body></html>\n"
    if doc.status != 200:
        return (f"<html><body><h1>{doc.status}</h1><p>"
                f"{'Not Found' if doc.status == 404 else 'Moved'}</p></body></html>\n").encode()
    if doc.body_html is not None:
        return doc.body_html.encode("utf-8")
    if doc.container == "wet":
        return pages.render_wet_text(doc.site, doc.headline,
                                     [p.text for p in doc.paragraphs]).encode("utf-8")
    declared = doc.meta_charset or doc.charset
    html = pages.render_html(doc.site, doc.headline, [p.text for p in doc.paragraphs],
                             date=doc.date[:10], author=doc.author, charset=declared,
                             http_equiv=doc.http_equiv)
    return html.encode(doc.charset)


def _record_id(seed: int, *parts) -> str:
    name = "/".join(str(p) for p in (seed,) + parts)
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, name)}>"


def _http_headers(doc: Document, body: bytes) -> StatusAndHeaders:
    reason = {200: "OK", 301: "Moved Permanently", 404: "Not Found"}[doc.status]
    when = datetime.strptime(doc.date, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    headers = [("Date", format_datetime(when, usegmt=True)), ("Server", "nginx"),
               ("Content-Type", doc.content_type), ("Content-Length", str(len(body)))]
    if doc.location:
        headers.append(("Location", doc.location))
    return StatusAndHeaders(f"{doc.status} {reason}", headers, protocol="HTTP/1.1")


def write_warc(path: Path, name: str, docs: list[Document], seed: int) -> Counter:
    """Write the WARC file ``name`` holding ``docs`` (the truncated ones last, cut short) to
    ``path``; return its records by type."""
    counts: Counter = Counter()
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    info = writer.create_warcinfo_record(name, {"software": "wikisum sample",
                                                "format": "WARC File Format 1.0"})
    info.rec_headers.replace_header("WARC-Record-ID", _record_id(seed, name, "info"))
    info.rec_headers.replace_header("WARC-Date", BASE_DATE.strftime("%Y-%m-%dT%H:%M:%SZ"))
    writer.write_record(info)
    counts["warcinfo"] += 1
    truncated = []
    for doc in docs:
        if doc.outcome == TRUNCATED:
            truncated.append(doc)
            continue
        _write_capture(writer, doc, seed, counts)
    for doc in truncated:
        # Written whole, then cut in the middle of the response record's gzip member.
        tmp = io.BytesIO()
        _write_capture(WARCWriter(tmp, gzip=True), doc, seed, Counter())
        data = tmp.getvalue()
        buf.write(data[: len(data) - len(data) // 3])
        counts["request"] += 1
        counts["response_truncated"] += 1
    path.write_bytes(buf.getvalue())
    return counts


def _write_capture(writer: WARCWriter, doc: Document, seed: int, counts: Counter) -> None:
    body = capture_body(doc)
    if doc.record_type == "resource":
        rec = writer.create_warc_record(doc.url, "resource", payload=io.BytesIO(body),
                                        warc_content_type=doc.content_type)
    else:
        host = doc.url.split("/")[2]
        req = writer.create_warc_record(
            doc.url, "request", payload=io.BytesIO(b""),
            http_headers=StatusAndHeaders(
                "GET /" + doc.url.split("/", 3)[-1] + " HTTP/1.1",
                [("Host", host), ("User-Agent", "wikisum-sample/1.0")], is_http_request=True))
        req.rec_headers.replace_header("WARC-Record-ID", _record_id(seed, doc.url, doc.date,
                                                                    "request"))
        req.rec_headers.replace_header("WARC-Date", doc.date)
        writer.write_record(req)
        counts["request"] += 1
        rec = writer.create_warc_record(doc.url, "response", payload=io.BytesIO(body),
                                        http_headers=_http_headers(doc, body))
    rec.rec_headers.replace_header("WARC-Record-ID", _record_id(seed, doc.url, doc.date))
    rec.rec_headers.replace_header("WARC-Date", doc.date)
    writer.write_record(rec)
    counts[doc.record_type] += 1


def write_wet(path: Path, docs: list[Document], seed: int) -> Counter:
    """Write the WET file of ``docs``' text conversions to ``path``; return its records by
    type."""
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    info = writer.create_warcinfo_record(WET_NAME.split("/")[-1], {
        "software": "wikisum sample", "description": "Text conversions of HTML pages"})
    info.rec_headers.replace_header("WARC-Record-ID", _record_id(seed, WET_NAME, "info"))
    info.rec_headers.replace_header("WARC-Date", BASE_DATE.strftime("%Y-%m-%dT%H:%M:%SZ"))
    writer.write_record(info)
    for doc in docs:
        rec = writer.create_warc_record(doc.url, "conversion",
                                        payload=io.BytesIO(capture_body(doc)),
                                        warc_content_type="text/plain")
        rec.rec_headers.replace_header("WARC-Record-ID", _record_id(seed, doc.url, "wet"))
        rec.rec_headers.replace_header("WARC-Date", doc.date)
        rec.rec_headers.add_header("WARC-Refers-To", _record_id(seed, doc.url, doc.date))
        writer.write_record(rec)
    path.write_bytes(buf.getvalue())
    return Counter({"warcinfo": 1, "conversion": len(docs)})

