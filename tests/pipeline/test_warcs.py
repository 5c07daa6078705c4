"""WARC records with their offsets: truncation, size limits, unreadable tails."""

from __future__ import annotations

import io

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from wikisum.pipeline.warcs import Capture, WarcError, iter_records


def _warc(records: list[tuple[str, int, str, bytes]]) -> bytes:
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    for url, status, ctype, body in records:
        headers = StatusAndHeaders(f"{status} X", [("Content-Type", ctype),
                                                   ("Content-Length", str(len(body)))],
                                   protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body),
                                                      http_headers=headers))
    return buf.getvalue()


def test_warc_records_with_offsets_and_truncation():
    data = _warc([("http://a.example/", 200, "text/html", b"<p>one</p>"),
                  ("http://b.example/", 404, "text/html", b"gone")])
    whole = list(iter_records(io.BytesIO(data), "f.warc.gz", max_bytes=1000))
    assert [(c.url, c.status, c.body, c.truncated) for c in whole] == [
        ("http://a.example/", 200, b"<p>one</p>", False), ("http://b.example/", 404, b"gone",
                                                           False)]
    assert whole[0].offset == 0 and whole[1].offset > 0
    second = data[whole[1].offset:]
    last = list(iter_records(io.BytesIO(data[: whole[1].offset] + second[: len(second) * 2 // 3]),
                             "f", max_bytes=1000))[-1]
    assert last.truncated or last.body != b"gone"


def test_warc_payload_over_the_limit_is_marked_too_large():
    data = _warc([("http://a.example/", 200, "text/html", b"x" * 500)])
    (cap,) = iter_records(io.BytesIO(data), "f", max_bytes=100)
    assert cap.too_large and cap.body == b""


def test_garbage_after_records_raises_with_offset():
    data = _warc([("http://a.example/", 200, "text/html", b"<p>one</p>")])
    reader = iter_records(io.BytesIO(data + b"\x1f\x8bnot gzip at all"), "f", max_bytes=100)
    assert isinstance(next(reader), Capture)
    with pytest.raises(WarcError):
        list(reader)
