"""WARC records with their offsets: truncation, size limits, unreadable tails."""

from __future__ import annotations

import io
import re
import subprocess
import sys
import zlib

import pytest
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from wikisum.pipeline.references import clean_capture
from wikisum.pipeline.warcs import Capture, EmptyFile, WarcError, iter_records


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


def _members(records: list[bytes], gzip: bool) -> bytes:
    """Plain records -> a plain file, or a gzip-per-record one."""
    return b"".join(zlib.compress(r, 9, 31) if gzip else r for r in records)


def _one(page: tuple[str, int, str, bytes], length_off_by: int = 0) -> bytes:
    """One plain record of ``page``, its WARC Content-Length (the first) off by that much."""
    record = _warc([page], gzip=False)
    return re.sub(rb"Content-Length: (\d+)", lambda m: b"Content-Length: %d" % (
        int(m.group(1)) + length_off_by), record, count=1)


def _raw(url: str, block: bytes) -> bytes:
    return (b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: " + url.encode()
            + b"\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: %d"
            b"\r\n\r\n" % len(block) + block + b"\r\n\r\n")


def _shown(got: list) -> list[tuple]:
    return [(type(r).__name__, r.url, r.offset, getattr(r, "reason", ""), getattr(r, "body", b""))
            for r in got]


@pytest.mark.parametrize("gzip", [True, False], ids=["gzip", "plain"])
def test_an_http09_answer_is_a_counted_drop_and_the_records_after_it_are_read(gzip):
    # A response whose block has no status line (HTTP/0.9) ended the whole file at offset 0.
    records = [_raw("http://old.example/", b"<html><p>no status line</p></html>"),
               *(_one(p) for p in PAGES[:3])]
    data = _members(records, gzip)
    starts = [sum(len(_members([r], gzip)) for r in records[:i]) for i in range(4)]
    got, error = read(data)
    assert error is None
    assert _shown(got) == [("Broken", "http://old.example/", 0, "bad_http_header", b""),
                           *(("Capture", p[0], start, "", p[3])
                             for p, start in zip(PAGES[:3], starts[1:], strict=True))]
    assert "<html><p>no status line" in got[0].detail


@pytest.mark.parametrize("too_big_by", [5000, 300], ids=["past_the_end", "into_the_next"])
def test_a_plain_record_whose_length_is_too_big_is_dropped_and_the_reader_resynchronises(
        too_big_by):
    # Its Content-Length swallowed the records after it (one `truncated` drop, two records
    # lost without a word): they are found again at their `WARC/1.` header lines.
    records = [_one(PAGES[0]), _one(PAGES[1], too_big_by), _one(PAGES[2]), _one(PAGES[3])]
    starts = [sum(map(len, records[:i])) for i in range(4)]
    got, error = read(b"".join(records))
    assert error is None
    assert _shown(got) == [("Capture", PAGES[0][0], 0, "", PAGES[0][3]),
                           ("Broken", PAGES[1][0], starts[1], "length_mismatch", b""),
                           *(("Capture", p[0], start, "", p[3])
                             for p, start in zip(PAGES[2:], starts[2:], strict=True))]
    assert f"next record header is at offset {starts[2]}" in got[1].detail
    assert not any(c.truncated for c in got[2:])


@pytest.mark.parametrize("gzip", [True, False], ids=["gzip", "plain"])
def test_a_record_whose_length_is_too_small_is_dropped_and_the_next_ones_read(gzip):
    # Gzip per record: the member went on 500 bytes after the Content-Length, and the record
    # was kept with its body cut short (no flag, no count).
    long_page = ("http://long.example/", 200, "text/html",
                 b"<p>" + b"many lines\r\n" * 100 + b"</p>")
    records = [_one(PAGES[0]), _one(long_page, -500), _one(PAGES[1]), _one(PAGES[2])]
    starts = [len(_members(records[:i], gzip)) for i in range(4)]
    got, error = read(_members(records, gzip))
    assert error is None
    assert _shown(got) == [("Capture", PAGES[0][0], 0, "", PAGES[0][3]),
                           ("Broken", long_page[0], starts[1], "length_mismatch", b""),
                           *(("Capture", p[0], start, "", p[3])
                             for p, start in zip(PAGES[1:3], starts[2:], strict=True))]


@pytest.mark.parametrize("padding", [b"\x00" * 10, b"\r\n\x00\x00\x00\r\n\r\n", b" \t\r\n"],
                         ids=["nuls", "nul_lines", "blanks"])
def test_padding_after_the_last_plain_record_loses_no_record(padding):
    # NUL padding after the blank lines that close the last record made it a length_mismatch.
    data = _warc(PAGES[:2], gzip=False)
    got, error = read(data + padding)
    assert error is None
    assert [(type(r).__name__, r.url, r.body) for r in got] == [
        ("Capture", p[0], p[3]) for p in PAGES[:2]]


@pytest.mark.parametrize("gzip", [True, False], ids=["gzip", "plain"])
def test_nuls_where_a_record_should_end_are_its_own_bytes_not_padding(gzip):
    # A binary block ending in NULs, its Content-Length 2 bytes short: a length_mismatch, not a
    # record kept with its last bytes cut off.
    binary = ("http://bin.example/", 200, "application/octet-stream", b"\x01\x02" * 50 + b"\0\0")
    records = [_one(PAGES[0]), _one(binary, -2), _one(PAGES[1])]
    starts = [len(_members(records[:i], gzip)) for i in range(3)]
    got, error = read(_members(records, gzip))
    assert error is None
    assert _shown(got) == [("Capture", PAGES[0][0], 0, "", PAGES[0][3]),
                           ("Broken", binary[0], starts[1], "length_mismatch", b""),
                           ("Capture", PAGES[1][0], starts[2], "", PAGES[1][3])]


def test_junk_after_the_last_plain_record_ends_the_file_where_it_starts():
    # The record before the junk is whole (no record header follows the junk): it is kept, and
    # the junk is read as the next record, which ends the file with an error at its offset.
    data = _warc(PAGES[:2], gzip=False) + b"\x00" * 10 + b"\r\n"
    got, error = read(data + b"not a record\r\n")
    assert [(type(r).__name__, r.url, r.body) for r in got] == [
        ("Capture", p[0], p[3]) for p in PAGES[:2]]
    assert error is not None and error.offset == len(data)


@pytest.mark.parametrize("gzip", [True, False], ids=["gzip", "plain"])
@pytest.mark.parametrize("value", ["\u00b2{n}", "-{n}", "{n}x", "9" * 5000],
                         ids=["superscript", "negative", "letter", "5000_digits"])
def test_a_content_length_that_is_not_a_byte_count_drops_its_record_only(gzip, value):
    # "²" passes str.isdigit() and int() refuses it: the whole file was a corrupt_file.
    records = [_one(p) for p in PAGES[:4]]
    records[1] = re.sub(rb"Content-Length: (\d+)", lambda m: b"Content-Length: " + value.format(
        n=m.group(1).decode()).encode(), records[1], count=1)
    starts = [len(_members(records[:i], gzip)) for i in range(4)]
    got, error = read(_members(records, gzip))
    assert error is None
    assert _shown(got) == [("Capture", PAGES[0][0], 0, "", PAGES[0][3]),
                           ("Broken", PAGES[1][0], starts[1], "length_mismatch", b""),
                           *(("Capture", p[0], start, "", p[3])
                             for p, start in zip(PAGES[2:], starts[2:], strict=True))]
    assert "is not a byte count" in got[1].detail


# Plain WARCs of 20,000 records, each with a Content-Length that runs past the next record: past
# the end of the file, or to the end of the last record. Each such record was read to where it
# claimed to end before the reader went on at the header after its start: the file was read once
# per record (20,000 records: 61 GB read, 26 s). Read in a child with an address-space limit:
# every record is counted, in a few seconds, and the bytes read grow with the file.
OVERRUNS = """
import io, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))
from wikisum.pipeline.warcs import WarcError, iter_records
n, kind = 20_000, sys.argv[1]
# Lengths of one width (zero-padded): each record's offset is known before its length.
def record(i, length):
    block = b"HTTP/1.1 200 OK\\r\\nContent-Type: text/html\\r\\n\\r\\n<p>%d</p>" % i
    head = (b"WARC/1.0\\r\\nWARC-Type: response\\r\\nWARC-Target-URI: http://x.example/%d\\r\\n"
            b"Content-Type: application/http; msgtype=response\\r\\nContent-Length: %012d"
            b"\\r\\n\\r\\n" % (i, length if length is not None else len(block)))
    return head, block + b"\\r\\n\\r\\n"
parts = [record(i, None) for i in range(n)]
size = sum(len(h) + len(b) for h, b in parts)
out, at = [], 0
for i, (head, block) in enumerate(parts):
    start = at + len(head)  # where its block starts
    length = 10 ** 11 if kind == "past_the_end" else size - 10 - start
    out.append(record(i, length)[0] + block)
    at += len(out[-1])
data = b"".join(out)
assert len(data) == size
class Counted(io.BytesIO):
    read_bytes = 0
    def read(self, size=-1):
        got = super().read(size)
        Counted.read_bytes += len(got)
        return got
began = time.monotonic()
kinds, error = [], None
try:
    for rec in iter_records(Counted(data), "f", max_bytes=10_000):
        kinds.append(type(rec).__name__)
except WarcError as exc:
    error = str(exc)
print(len(data), len(kinds), kinds.count("Broken"), error, Counted.read_bytes,
      round(time.monotonic() - began, 1))
"""


@pytest.mark.parametrize("kind", ["past_the_end", "into_the_last"])
def test_a_plain_warc_of_overlong_records_is_read_in_linear_time(kind):
    done = subprocess.run([sys.executable, "-c", OVERRUNS, kind], capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    size, records, broken, error, read_bytes, seconds = done.stdout.split()
    assert int(size) < 5_000_000 and int(records) == 20_000 and error == "None"
    assert int(broken) >= 19_999  # the last one may be kept, marked truncated
    # Bytes read: about 20 KB a record (100 times this file, which was read 14,000 times).
    assert int(read_bytes) < 200 * int(size) and float(seconds) < 15, done.stdout


def test_many_records_with_empty_payloads_are_all_read():
    # The header-line bound counted on across records whose payload is never read (an empty
    # 404): the 715th such record ended the file as a "header bomb".
    records = [_raw(f"http://gone.example/{i}", b"HTTP/1.1 404 Not Found\r\n\r\n")
               for i in range(2000)]
    got, error = read(b"".join(records))
    assert error is None and len(got) == 2000
    assert {(c.status, c.body) for c in got} == {(404, b"")}


def test_an_empty_file_is_an_error_of_its_own():
    # A zero-byte .warc.gz (a failed download) was read as a file without records.
    got, error = read(b"")
    assert got == [] and isinstance(error, EmptyFile) and error.offset == 0
    assert "empty (0 bytes)" in str(error)


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
