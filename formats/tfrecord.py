"""TFRecord files without TensorFlow: the framing ``tf.io.TFRecordWriter`` writes, read with
bounded memory, both checksums of every record verified, and every damaged stretch reported as a
:class:`BadRecord` instead of raised, so that one bad byte costs one record, never the file.

Each record is framed as (tensorflow/core/lib/io/record_writer.cc)::

    uint64  length                        little-endian
    uint32  masked_crc32c(the 8 length bytes)
    bytes   data[length]
    uint32  masked_crc32c(data)

A file may also be GZIP-compressed as a whole (``TFRecordOptions(compression_type="GZIP")``, as
tensor2tensor writes its ``references.tfrecords.gz-*`` shards); :func:`decompressed` and
:func:`open_records` recognise that by its magic bytes. Offsets are byte offsets in the
decompressed stream.
"""

from __future__ import annotations

import gzip
import io
import re
import struct
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

import google_crc32c

MAX_RECORD_BYTES = 64 * 1024 * 1024  # a longer claimed length is a `too_large` BadRecord
HEADER_BYTES = 12  # uint64 length + uint32 masked CRC of it
FOOTER_BYTES = 4  # uint32 masked CRC of the data
_MASK_DELTA = 0xA282EAD8  # tensorflow/core/lib/hash/crc32c.h, kMaskDelta
_CHUNK = 1 << 20  # bytes read from the stream at a time, and scanned at a time when resyncing
_ZERO_HEADER = bytes(HEADER_BYTES)
_NONZERO = re.compile(rb"[^\x00]")
_GZIP_MAGIC = b"\x1f\x8b\x08"  # ID1 ID2 and CM=8 (deflate), RFC 1952 section 2.3.1

# BadRecord reasons.
LENGTH_CHECKSUM = "length_checksum"  # the header's CRC is wrong: its length cannot be trusted
DATA_CHECKSUM = "data_checksum"  # the data's CRC is wrong: that one record is skipped
TRUNCATED = "truncated"  # the stream ends inside a record (or inside its compression)
TOO_LARGE = "too_large"  # the claimed length is over the limit: never read into memory
BAD_COMPRESSION = "bad_compression"  # the GZIP stream is corrupt: nothing after it is readable


@dataclass(frozen=True)
class Record:
    """One intact record: where it starts in the (decompressed) stream, and its payload."""

    offset: int
    data: bytes


@dataclass(frozen=True)
class BadRecord:
    """A damaged stretch of the stream: where it starts, why it was skipped (one of the reasons
    above), and what was skipped, in words (bytes skipped, checksums expected and found)."""

    offset: int
    reason: str
    detail: str
    source: str = ""


def masked_crc32c(data: bytes) -> int:
    """TensorFlow's masked CRC32C of ``data``: the CRC rotated right by 15 bits plus a constant,
    so that a CRC computed over bytes that themselves hold CRCs stays well distributed."""
    crc = google_crc32c.value(bytes(data))
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def encode_record(data: bytes) -> bytes:
    """``data`` framed as one TFRecord."""
    length = struct.pack("<Q", len(data))
    return b"".join((length, struct.pack("<I", masked_crc32c(length)), data,
                     struct.pack("<I", masked_crc32c(data))))


def write_records(f: BinaryIO, payloads: Iterable[bytes]) -> int:
    """Writes each payload to the binary file ``f`` as a TFRecord; returns how many."""
    count = 0
    for data in payloads:
        f.write(encode_record(data))
        count += 1
    return count


class _Window:
    """A read-ahead buffer over a binary stream that can hand back bytes it has looked at, so
    that a header found by scanning is read again as a header. Memory holds at most the longest
    single request (one record, up to the limit) plus one chunk. A decompression error or a
    truncated compressed stream ends the stream; :attr:`error` says which."""

    def __init__(self, f: BinaryIO):
        # read1 where there is one: a buffered stream's read(n) loops until n bytes and loses
        # what it had when the stream then fails (a cut GZIP file), read1 returns it first.
        self.read = getattr(f, "read1", f.read)
        self.buf = bytearray()
        self.start = 0  # index in buf of the first unconsumed byte
        self.offset = 0  # stream offset of buf[start]
        self.eof = False
        self.error: tuple[str, str] | None = None  # (reason, message) that ended the stream

    def available(self) -> int:
        return len(self.buf) - self.start

    def fill(self, n: int) -> int:
        """Makes ``n`` unconsumed bytes available if the stream has them; returns how many are."""
        if self.available() >= n or self.eof:
            return self.available()
        if self.start:
            del self.buf[:self.start]
            self.start = 0
        while len(self.buf) < n and not self.eof:
            try:
                chunk = self.read(max(n - len(self.buf), _CHUNK))
            except EOFError as exc:  # gzip: the compressed stream stops before its end marker
                chunk, self.error = b"", (TRUNCATED, f"compressed stream cut short: {exc}")
            except (zlib.error, gzip.BadGzipFile) as exc:
                chunk, self.error = b"", (BAD_COMPRESSION, f"{type(exc).__name__}: {exc}")
            if not chunk:
                self.eof = True
            self.buf += chunk
        return self.available()

    def peek(self, n: int) -> bytes:
        return bytes(self.buf[self.start:self.start + n])

    def consume(self, n: int) -> None:
        """Drops ``n`` bytes, all of which must be available."""
        self.start += n
        self.offset += n


def _header_length(header: bytes, max_record_bytes: int) -> int | None:
    """The length a 12-byte header claims when its checksum holds and the length is within the
    limit, else None."""
    length, crc = struct.unpack("<QI", header)
    if length > max_record_bytes or masked_crc32c(header[:8]) != crc:
        return None
    return length


def _resync(window: _Window, max_record_bytes: int) -> int:
    """Skips to the next offset where 12 bytes form a valid header with a plausible length (or
    to the end of the stream); returns the number of bytes skipped.

    Linear time and bounded memory: the stream is scanned a chunk at a time, keeping the last 11
    bytes of a chunk for the next. A valid length has its high bytes zero (four of them for the
    64 MiB default), so candidates are found by a C-level search for that run of zeros, and only
    they have their CRC computed.
    """
    zeros = b"\x00" * (8 - (max_record_bytes.bit_length() + 7) // 8)
    skipped = 0
    while True:
        have = window.fill(_CHUNK + HEADER_BYTES - 1)
        if have < HEADER_BYTES:  # no room for a header: the rest is junk
            window.consume(have)
            return skipped + have
        buf, base = window.buf, window.start
        last = base + have - HEADER_BYTES  # the last index where a whole header fits
        i = base
        while i <= last:
            if zeros:
                z = buf.find(zeros, i + 8 - len(zeros), last + 8)
                if z < 0:
                    break
                i = z - (8 - len(zeros))
            header = bytes(buf[i:i + HEADER_BYTES])
            if header == _ZERO_HEADER:
                # Twelve zero bytes never form a header (their masked CRC is not 0): jump to the
                # first window that holds a non-zero byte, so that a zeroed stretch (a
                # preallocated block after a crash) costs one search, not a step per byte.
                nonzero = _NONZERO.search(buf, i + HEADER_BYTES, base + have)
                if nonzero is None:
                    break
                i = max(i + 1, nonzero.start() - HEADER_BYTES + 1)
                continue
            if _header_length(header, max_record_bytes) is not None:
                window.consume(i - base)
                return skipped + i - base
            i += 1
        step = last + 1 - base
        window.consume(step)
        skipped += step


def iter_records(f: BinaryIO, *, max_record_bytes: int = MAX_RECORD_BYTES,
                 source: str = "") -> Iterator[Record | BadRecord]:
    """The records of a binary TFRecord stream (already decompressed), in order, each a
    :class:`Record`, or a :class:`BadRecord` for a damaged stretch; never raises on bad input.

    - a wrong data checksum skips exactly that record (its length was vouched for by the header
      checksum) and reading goes on;
    - a wrong header checksum, or a claimed length over ``max_record_bytes``, means the length
      cannot be used: the reader scans forward, byte by byte, for the next valid header and
      reports the bytes it skipped. A length over the limit is never read into memory, even
      when its header checksum holds: it is scanned past like a bad length, since skipping by
      it would lose every record after a forged one, and a false header inside its data needs
      a 1 in 2**32 checksum match at some position;
    - a stream that ends inside a record gives one ``truncated`` BadRecord and ends.

    Args:
        f: a binary stream: ``open(path, "rb")``, :func:`decompressed` of a raw file, or a Beam
            ``FileSystems.open`` stream.
        max_record_bytes: the longest record read into memory.
        source: the file's name, copied into each BadRecord.
    """
    window = _Window(f)
    while True:
        offset = window.offset
        have = window.fill(HEADER_BYTES)
        if have == 0:
            if window.error is not None:
                yield BadRecord(offset, window.error[0], window.error[1], source)
            return
        if have < HEADER_BYTES:
            window.consume(have)
            yield BadRecord(offset, TRUNCATED, _ended(f"{have} of the 12 header bytes", window),
                            source)
            return
        header = window.peek(HEADER_BYTES)
        length, crc = struct.unpack("<QI", header)
        expected = masked_crc32c(header[:8])
        if expected != crc or length > max_record_bytes:
            if expected != crc:
                reason, what = LENGTH_CHECKSUM, (
                    f"header checksum {crc:#010x} != {expected:#010x} of its length bytes "
                    f"(which read {length})")
            else:
                reason, what = TOO_LARGE, f"claimed length {length} > limit {max_record_bytes}"
            window.consume(1)
            skipped = 1 + _resync(window, max_record_bytes)
            after = (f"the next valid header at offset {offset + skipped}" if window.fill(1)
                     else "the end of the stream")
            yield BadRecord(offset, reason, f"{what}; skipped {skipped} bytes to {after}",
                            source)
            continue
        need = HEADER_BYTES + length + FOOTER_BYTES
        have = window.fill(need)
        if have < need:
            window.consume(have)
            yield BadRecord(offset, TRUNCATED,
                            _ended(f"{have} of the record's {need} bytes", window), source)
            return
        record = window.peek(need)
        window.consume(need)
        data = record[HEADER_BYTES:HEADER_BYTES + length]
        (data_crc,) = struct.unpack("<I", record[HEADER_BYTES + length:])
        if masked_crc32c(data) != data_crc:
            yield BadRecord(offset, DATA_CHECKSUM,
                            f"data checksum {data_crc:#010x} != {masked_crc32c(data):#010x} "
                            f"over its {length} bytes; record skipped", source)
            continue
        yield Record(offset, data)


def _ended(what: str, window: _Window) -> str:
    detail = f"stream ends after {what}"
    return f"{detail} ({window.error[1]})" if window.error else detail


class _Replay(io.RawIOBase):
    """A raw stream that gives ``head`` (bytes already read from ``raw``) and then the rest of
    ``raw``: how the magic bytes are looked at on a stream that cannot seek back."""

    def __init__(self, head: bytes, raw: BinaryIO):
        self.head = head
        self.raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        if self.head:
            n = min(len(b), len(self.head))
            b[:n] = self.head[:n]
            self.head = self.head[n:]
            return n
        data = self.raw.read(len(b))
        b[:len(data)] = data
        return len(data)


def _read_exactly(raw: BinaryIO, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = raw.read(n - len(out))
        if not chunk:
            break
        out += chunk
    return out


def is_gzip(head: bytes) -> bool:
    """Whether a file starting with ``head`` (its first 12 or more bytes) is GZIP-compressed.

    An uncompressed TFRecord file may start with the same three bytes (a first record of 35,615
    bytes, plus a multiple of 65,536, starts 1f 8b); it is told apart by its header checksum,
    which a GZIP header matches with probability 2**-32.
    """
    if not head.startswith(_GZIP_MAGIC):
        return False
    if len(head) >= HEADER_BYTES:
        length, crc = struct.unpack("<QI", head[:HEADER_BYTES])
        if masked_crc32c(head[:8]) == crc:
            return False
    return True


def decompressed(raw: BinaryIO) -> BinaryIO:
    """The TFRecord stream of an open raw binary file: decompressed when it is GZIP (told by its
    magic bytes, not its name), else the file itself. Closing the result does not close ``raw``.

    The Beam jobs pass ``FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED)``
    so that the same detection applies to every backend.
    """
    head = _read_exactly(raw, HEADER_BYTES)
    stream = io.BufferedReader(_Replay(head, raw), buffer_size=_CHUNK)
    if is_gzip(head):
        return gzip.GzipFile(fileobj=stream, mode="rb")
    return stream


@contextmanager
def open_records(path_or_file: str | BinaryIO) -> Iterator[BinaryIO]:
    """``with open_records(p) as f: iter_records(f)``: the decompressed stream of a TFRecord file
    given by local path or URL (through :mod:`wikisum.core.files`), or an open raw binary file
    (which stays open: its owner closes it)."""
    if isinstance(path_or_file, str):
        from wikisum.core import files

        with files.open_read(path_or_file) as raw:
            yield decompressed(raw)
    else:
        yield decompressed(path_or_file)
