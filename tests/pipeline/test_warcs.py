"""WARC records with their offsets: truncation, size limits, unreadable tails."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from wikisum.pipeline.references import clean_capture
from wikisum.pipeline.warcs import Capture, WarcError, iter_records


def _warc(records: list[tuple[str, int, str, bytes]], gzip: bool = True) -> bytes:
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=gzip)
    for i, (url, status, ctype, body) in enumerate(records):
        headers = StatusAndHeaders(f"{status} X", [("Content-Type", ctype),
                                                   ("Content-Length", str(len(body)))],
                                   protocol="HTTP/1.1")
        fixed = {"WARC-Record-ID": f"<urn:uuid:00000000-0000-0000-0000-{i:012d}>",
                 "WARC-Date": "2019-01-01T00:00:00Z"}  # the same bytes on every run
        writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body),
                                                      http_headers=headers,
                                                      warc_headers_dict=fixed))
    return buf.getvalue()


PAGES = [(f"http://{c}.example/", 200, "text/html", f"<p>{c * n}</p>".encode())
         for c, n in zip("abcd", (40, 300, 7, 120), strict=True)]


def read(data: bytes) -> tuple[list, WarcError | None]:
    """(what was yielded, the error that ended the file or None)."""
    got = []
    try:
        for rec in iter_records(io.BytesIO(data), "f", max_bytes=10_000):
            got.append(rec)
    except WarcError as exc:
        return got, exc
    return got, None


def test_warc_records_with_offsets_and_truncation():
    data = _warc([("http://a.example/", 200, "text/html", b"<p>one</p>"),
                  ("http://b.example/", 404, "text/html", b"gone " * 40)], gzip=False)
    whole = list(iter_records(io.BytesIO(data), "f.warc.gz", max_bytes=1000))
    assert [(c.url, c.status, c.body, c.truncated) for c in whole] == [
        ("http://a.example/", 200, b"<p>one</p>", False),
        ("http://b.example/", 404, b"gone " * 40, False)]
    assert whole[0].offset == 0 and whole[1].offset > 0
    # Cut inside the second record's payload: it is still yielded, marked truncated.
    cut = data[: len(data) - 60]
    first, last = list(iter_records(io.BytesIO(cut), "f", max_bytes=1000))
    assert (first.truncated, first.body) == (False, b"<p>one</p>")
    assert (last.url, last.offset, last.truncated) == ("http://b.example/", whole[1].offset, True)


@pytest.mark.parametrize("gzip", [True, False], ids=["gzip", "plain"])
def test_a_cut_anywhere_loses_no_record_silently(gzip):
    """Every cut point: every record before the cut comes out whole; the cut one is yielded as
    truncated (or whole, when only its closing bytes were cut: the gzip trailer, the blank
    lines after the payload) or ends the file with a WarcError at its offset."""
    data = _warc(PAGES, gzip=gzip)
    whole, error = read(data)
    assert error is None and [c.body for c in whole] == [p[3] for p in PAGES]
    starts = [c.offset for c in whole] + [len(data)]
    for cut in range(1, len(data)):
        got, error = read(data[:cut])
        k = max(i for i, start in enumerate(starts) if start < cut)  # the record cut
        assert [(c.url, c.body, c.truncated) for c in got[:k]] == [
            (p[0], p[3], False) for p in PAGES[:k]], cut
        if error is None:
            assert len(got) == k + 1 and got[k].offset == starts[k], cut
            assert got[k].truncated or got[k].body == PAGES[k][3], cut
        else:
            assert len(got) == k and error.offset == starts[k], cut


def test_a_record_without_target_uri_is_dropped_and_the_rest_kept():
    raw = _warc(PAGES[:2], gzip=False).replace(b"WARC-Target-URI: http://a.example/\r\n", b"")
    got, error = read(raw)
    assert error is None and [c.url for c in got] == ["", "http://b.example/"]
    dropped = clean_capture(got[0])
    assert dropped.reason == "no_target_uri" and "record at offset 0" in dropped.error
    assert got[1].body == PAGES[1][3] and not got[1].truncated


def test_warc_payload_over_the_limit_is_marked_too_large():
    data = _warc([("http://a.example/", 200, "text/html", b"x" * 500)])
    (cap,) = iter_records(io.BytesIO(data), "f", max_bytes=100)
    assert cap.too_large and cap.body == b""


def test_garbage_after_records_raises_with_offset():
    data = _warc([("http://a.example/", 200, "text/html", b"<p>one</p>")])
    reader = iter_records(io.BytesIO(data + b"\x1f\x8bnot gzip at all"), "f", max_bytes=100)
    assert isinstance(next(reader), Capture)
    with pytest.raises(WarcError) as error:
        list(reader)
    assert error.value.offset == len(data)  # where the garbage starts


# Header bombs: a gzip member whose HTTP header holds a 300 MB line, or four million lines, from
# a few hundred KB of file. Read in a child that reports its peak memory: the file ends with a
# WarcError at the record's offset, the record before it is kept, and the peak stays far below
# what reading the header would take.
HEADER_BOMB = """
import gzip, io, sys, zlib
from wikisum.pipeline.warcs import WarcError, iter_records
good = {good!r}
def member(parts):
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    out = [z.compress(p) for p in parts]
    return b"".join(out) + z.flush()
head = (b"WARC/1.0\\r\\nWARC-Type: response\\r\\nWARC-Target-URI: http://bomb.example/\\r\\n"
        b"Content-Type: application/http; msgtype=response\\r\\n"
        b"Content-Length: 999999999\\r\\n\\r\\nHTTP/1.1 200 OK\\r\\n")
if {kind!r} == "long_line":
    body = [b"X-Bomb: "] + [b"a" * (1 << 20)] * 300
else:
    body = [b"X-Bomb: a\\r\\n" * 100_000] * 40
data = good + member([head, *body])
got = []
try:
    for rec in iter_records(io.BytesIO(data), "bomb.warc.gz", max_bytes=10_000):
        got.append(rec.url)
except WarcError as exc:
    # VmHWM: this process's own peak (ru_maxrss can carry the forking parent's).
    with open("/proc/self/status") as status:
        peak_mb = next(int(line.split()[1]) for line in status
                       if line.startswith("VmHWM")) / 1024
    print(got, exc.offset, exc, f"peak {{peak_mb:.0f}} MB")
    sys.exit(0 if got == ["http://a.example/"] and exc.offset == len(good) and peak_mb < 150
             else 1)
sys.exit(2)
"""


@pytest.mark.parametrize("kind", ["long_line", "many_lines"])
def test_a_header_bomb_ends_the_file_in_bounded_memory(kind):
    good = _warc(PAGES[:1])
    code = HEADER_BOMB.format(good=good, kind=kind)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
