"""TFRecord framing (wikisum.formats.tfrecord) and tf.train.Example's wire format
(wikisum.formats.tfexample): round trips, checksums against an independent CRC32C, every kind of
damage reported where it is and costing only the record it hits, and protobuf's own parser as
the reference for the Example format."""

from __future__ import annotations

import gzip
import io
import random
import struct

import pytest
import t2t_files
from t2t_files import Trickle

from wikisum.formats import tfrecord
from wikisum.formats.tfexample import ExampleError, encode_example, parse_example
from wikisum.formats.tfrecord import (
    BadRecord,
    Record,
    decompressed,
    encode_record,
    iter_records,
    masked_crc32c,
    open_records,
    write_records,
)

PAYLOADS = [b"first", b"", b"x" * 300, bytes(range(256)), b"last one"]


def _crc32c_bitwise(data: bytes) -> int:
    """CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), one bit at a time: slow and
    obviously right, to check the C implementation and the framing against."""
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def _file(payloads=PAYLOADS) -> bytes:
    buf = io.BytesIO()
    assert write_records(buf, payloads) == len(payloads)
    return buf.getvalue()


def _offsets(payloads=PAYLOADS) -> list[int]:
    offsets, at = [], 0
    for p in payloads:
        offsets.append(at)
        at += 16 + len(p)
    return offsets


def _read(data: bytes, **kwargs) -> list:
    return list(iter_records(io.BytesIO(data), **kwargs))


def _flip(data: bytes, bit: int) -> bytes:
    out = bytearray(data)
    out[bit // 8] ^= 1 << (bit % 8)
    return bytes(out)


# -- checksums and framing ------------------------------------------------------------------


def test_crc32c_matches_an_independent_implementation_and_the_standard_check_value():
    assert _crc32c_bitwise(b"123456789") == 0xE3069283  # the CRC-32C check value
    for data in (b"", b"123456789", bytes(range(256)), b"\x00" * 8):
        crc = _crc32c_bitwise(data)
        assert masked_crc32c(data) == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_a_record_is_length_crc_data_crc():
    data = b"hello"
    length = struct.pack("<Q", 5)

    def masked(b):
        crc = _crc32c_bitwise(b)
        return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF

    assert encode_record(data) == (length + struct.pack("<I", masked(length)) + data
                                   + struct.pack("<I", masked(data)))


def test_round_trip_with_offsets():
    items = _read(_file())
    assert items == [Record(o, p) for o, p in zip(_offsets(), PAYLOADS, strict=True)]


def test_round_trip_through_short_reads():
    stream = Trickle(_file(), step=5)
    assert [r.data for r in iter_records(stream)] == PAYLOADS


def test_empty_file_has_no_records():
    assert _read(b"") == []


# -- damage ---------------------------------------------------------------------------------


def test_a_flipped_data_bit_costs_exactly_that_record():
    data = _file()
    k = 2
    offset = _offsets()[k]
    items = _read(_flip(data, (offset + 12 + 100) * 8 + 3))
    bad = [i for i in items if isinstance(i, BadRecord)]
    assert len(bad) == 1 and bad[0].reason == tfrecord.DATA_CHECKSUM
    assert bad[0].offset == offset
    assert [r.data for r in items if isinstance(r, Record)] == PAYLOADS[:k] + PAYLOADS[k + 1:]
    assert [r.offset for r in items if isinstance(r, Record)] == (
        _offsets()[:k] + _offsets()[k + 1:])


def test_a_flipped_length_bit_is_resynchronised():
    data = _file()
    k = 1
    offset = _offsets()[k]
    items = _read(_flip(data, offset * 8 + 2), source="f.tfrecords")
    assert isinstance(items[k], BadRecord)
    assert (items[k].reason, items[k].offset, items[k].source) == (
        tfrecord.LENGTH_CHECKSUM, offset, "f.tfrecords")
    # The damaged record is 16 bytes (empty payload): all of it is skipped, then the next reads.
    assert f"skipped 16 bytes to the next valid header at offset {offset + 16}" in (
        items[k].detail)
    assert [r.data for r in items if isinstance(r, Record)] == PAYLOADS[:k] + PAYLOADS[k + 1:]


def test_any_single_flipped_bit_costs_only_the_record_it_lands_in():
    data = _file()
    offsets = _offsets() + [len(data)]
    for bit in range(len(data) * 8):
        k = max(i for i in range(len(PAYLOADS)) if offsets[i] * 8 <= bit)
        items = _read(_flip(data, bit))
        bad = [i for i in items if isinstance(i, BadRecord)]
        assert [b.offset for b in bad] == [offsets[k]], bit
        good = [r.data for r in items if isinstance(r, Record)]
        assert good == PAYLOADS[:k] + PAYLOADS[k + 1:], bit


def test_junk_between_records_is_skipped_and_counted():
    data = _file()
    cut = _offsets()[3]
    junk = bytes(random.Random(1).randrange(256) for _ in range(5000))
    items = _read(data[:cut] + junk + data[cut:])
    bad = [i for i in items if isinstance(i, BadRecord)]
    assert len(bad) == 1 and bad[0].offset == cut
    assert "skipped 5000 bytes" in bad[0].detail
    assert [r.data for r in items if isinstance(r, Record)] == PAYLOADS


def test_a_zeroed_stretch_is_skipped_quickly():
    data = _file()
    cut = _offsets()[2]
    items = _read(data[:cut] + bytes(8 << 20) + data[cut:])  # 8 MiB of zeros
    assert [i.reason for i in items if isinstance(i, BadRecord)] == [tfrecord.LENGTH_CHECKSUM]
    assert [r.data for r in items if isinstance(r, Record)] == PAYLOADS


@pytest.mark.parametrize("cut_into", [5, 12 + 3, 12 + 300 + 2])
def test_a_truncated_file_ends_with_one_truncated_record(cut_into):
    data = _file()
    start = _offsets()[2]
    items = _read(data[:start + cut_into])
    assert [r.data for r in items[:-1]] == PAYLOADS[:2]
    assert items[-1].reason == tfrecord.TRUNCATED and items[-1].offset == start


def test_a_huge_claimed_length_is_neither_read_nor_allocated():
    length = struct.pack("<Q", 1 << 62)
    forged = length + struct.pack("<I", masked_crc32c(length)) + b"\x00" * 32
    stream = Trickle(forged + _file(), step=1 << 16)
    items = list(iter_records(stream))
    assert items[0] == BadRecord(0, tfrecord.TOO_LARGE, items[0].detail)
    assert f"claimed length {1 << 62}" in items[0].detail
    assert [r.data for r in items[1:]] == PAYLOADS
    assert stream.largest <= 2 << 20  # reads stay at the chunk size


def test_a_record_over_the_limit_is_skipped_and_the_next_ones_read():
    payloads = [b"a" * 10, b"b" * 1000, b"c" * 10]
    items = _read(_file(payloads), max_record_bytes=100)
    assert [type(i).__name__ for i in items] == ["Record", "BadRecord", "Record"]
    assert items[1].reason == tfrecord.TOO_LARGE and items[1].offset == 26
    assert [items[0].data, items[2].data] == [payloads[0], payloads[2]]


def test_random_damage_never_raises_and_never_invents_records():
    data = _file()
    rng = random.Random(0)
    for _ in range(300):
        damaged = bytearray(data)
        for _ in range(rng.randrange(1, 6)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        damaged = bytes(damaged[:rng.randrange(len(damaged) + 1)])
        for item in _read(damaged):
            assert isinstance(item, BadRecord) or item.data in PAYLOADS


# -- compression ----------------------------------------------------------------------------


def test_gzip_files_are_recognised_by_their_magic(tmp_path):
    path = tmp_path / "references.tfrecords.gz-00000-of-01000"
    path.write_bytes(gzip.compress(_file()))
    with open_records(str(path)) as f:
        assert [r.data for r in iter_records(f)] == PAYLOADS
    with open(path, "rb") as raw:  # an open raw file, as a Beam job passes it
        assert [r.data for r in iter_records(decompressed(raw))] == PAYLOADS
        assert not raw.closed
    plain = tmp_path / "plain"
    plain.write_bytes(_file())
    with open_records(str(plain)) as f:
        assert [r.data for r in iter_records(f)] == PAYLOADS


def test_an_uncompressed_file_that_starts_like_gzip_is_not_taken_for_gzip():
    payload = b"y" * 0x088B1F  # its length's first bytes are 1f 8b 08, gzip's magic
    data = _file([payload, b"next"])
    assert data[:3] == b"\x1f\x8b\x08"
    assert not tfrecord.is_gzip(data[:12])
    assert [r.data for r in iter_records(decompressed(io.BytesIO(data)))] == [payload, b"next"]


def test_a_cut_gzip_stream_reads_its_records_then_reports_truncated():
    compressed = gzip.compress(_file())
    items = list(iter_records(decompressed(io.BytesIO(compressed[:-30]))))
    assert all(isinstance(i, Record) for i in items[:-1]) and len(items) >= 2
    assert items[-1].reason == tfrecord.TRUNCATED


def test_corrupt_deflate_data_is_reported_not_raised():
    compressed = bytearray(gzip.compress(_file() * 20))
    compressed[40:60] = bytes(20)
    items = list(iter_records(decompressed(io.BytesIO(bytes(compressed)))))
    assert items and isinstance(items[-1], BadRecord)
    assert items[-1].reason in (tfrecord.BAD_COMPRESSION, tfrecord.TRUNCATED,
                                tfrecord.DATA_CHECKSUM, tfrecord.LENGTH_CHECKSUM)


# -- tf.train.Example ----------------------------------------------------------------------

FEATURES = {
    "url": [b"https://en.wikipedia.org/wiki/A"],
    "texts": [b"lead", b"", "caf\u00e9".encode()],
    "ids": [0, 1, 127, 128, 300, -1, -(1 << 63), (1 << 63) - 1],
    "scores": [0.5, -2.25, 1e-3],
}


def _as_float32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


EXPECTED = {**FEATURES, "scores": [_as_float32(x) for x in FEATURES["scores"]]}


@pytest.mark.parametrize("packed", [True, False])
def test_example_round_trip(packed):
    assert parse_example(encode_example(FEATURES, packed=packed)) == EXPECTED


@pytest.mark.parametrize("packed", [True, False])
def test_protobuf_reads_what_we_write(packed):
    pytest.importorskip("google.protobuf")
    Example = t2t_files.example_class()
    proto = Example.FromString(encode_example(FEATURES, packed=packed))
    assert list(proto.features.feature["ids"].int64_list.value) == FEATURES["ids"]
    assert list(proto.features.feature["texts"].bytes_list.value) == FEATURES["texts"]
    assert list(proto.features.feature["scores"].float_list.value) == EXPECTED["scores"]


def test_we_read_what_protobuf_writes():
    pytest.importorskip("google.protobuf")
    Example = t2t_files.example_class()
    proto = Example()
    for name, values in FEATURES.items():
        feature = proto.features.feature[name]
        kind = {"url": "bytes", "texts": "bytes", "ids": "int64", "scores": "float"}[name]
        getattr(feature, f"{kind}_list").value.extend(values)
    proto.features.feature["empty"].SetInParent()  # a Feature with no kind set
    assert parse_example(proto.SerializeToString()) == {**EXPECTED, "empty": []}


def test_negative_int64_unpacked_is_ten_bytes_of_twos_complement():
    data = encode_example({"n": [-2]}, packed=False)
    assert b"\xfe\xff\xff\xff\xff\xff\xff\xff\xff\x01" in data
    assert parse_example(data) == {"n": [-2]}


def _field(number: int, wire: int, payload: bytes) -> bytes:
    tag = bytes([number << 3 | wire])
    return tag + (bytes([len(payload)]) + payload if wire == 2 else payload)


UNKNOWN = (_field(9, 0, b"\x96\x01") + _field(10, 1, bytes(8)) + _field(11, 2, b"abc")
           + _field(12, 5, bytes(4)) + bytes([13 << 3 | 3]) + _field(1, 0, b"\x01")
           + bytes([14 << 3 | 3]) + bytes([14 << 3 | 4]) + bytes([13 << 3 | 4]))


def test_unknown_fields_and_groups_are_skipped_at_every_level():
    bytes_list = _field(1, 2, b"v") + UNKNOWN
    feature = UNKNOWN + _field(1, 2, bytes_list)
    entry = _field(1, 2, b"k") + UNKNOWN + _field(2, 2, feature)
    features = _field(1, 2, entry) + UNKNOWN
    example = UNKNOWN + _field(1, 2, features) + UNKNOWN
    assert parse_example(example) == {"k": [b"v"]}


def test_a_repeated_key_keeps_its_last_value_and_a_new_kind_replaces_the_old():
    def entry(key, feature):
        return _field(1, 2, _field(1, 2, key) + _field(2, 2, feature))

    ints = _field(3, 2, _field(1, 0, b"\x05"))
    data = _field(1, 2, entry(b"a", _field(1, 2, _field(1, 2, b"x"))) + entry(b"a", ints)
                  + entry(b"b", _field(1, 2, _field(1, 2, b"y")) + ints))
    assert parse_example(data) == {"a": [5], "b": [5]}


@pytest.mark.parametrize("data, message", [
    (b"\x0a\x05abc", "claims 5 bytes"),  # a length past the end
    (b"\x0f", "invalid wire type 7"),
    (b"\x0e", "invalid wire type 6"),
    (b"\x02\x00", "invalid field number 0"),
    (b"\x08" + b"\xff" * 11, "longer than 10 bytes"),
    (b"\x08\xff", "cut off"),
    (b"\x0c", "without its start"),  # an end-group tag with no group
    (b"\x0b\x08\x01", "not closed"),  # a group never closed
    (_field(1, 2, _field(1, 2, _field(1, 2, b"\xff\xfe"))), "not UTF-8"),
    (_field(1, 2, _field(1, 2, _field(2, 2, _field(2, 2, _field(1, 2, b"abc"))))),
     "whole number of 4-byte floats"),
])
def test_malformed_examples_raise_example_error(data, message):
    with pytest.raises(ExampleError, match=message):
        parse_example(data)


def test_deeply_nested_groups_neither_recurse_nor_crash():
    depth = 50_000
    closed = bytes([13 << 3 | 3]) * depth + bytes([13 << 3 | 4]) * depth
    assert parse_example(closed + _field(1, 2, b"")) == {}
    with pytest.raises(ExampleError):
        parse_example(bytes([13 << 3 | 3]) * depth)


def test_every_prefix_and_random_damage_parses_or_raises_example_error():
    data = encode_example(FEATURES)
    cases = [data[:n] for n in range(len(data))]
    rng = random.Random(0)
    for _ in range(500):
        damaged = bytearray(data)
        damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        cases.append(bytes(damaged))
    for case in cases:
        try:
            parse_example(case)
        except ExampleError:
            pass


def test_encode_example_rejects_what_it_cannot_encode():
    with pytest.raises(TypeError):
        encode_example({"x": ["text, not bytes"]})
    with pytest.raises(ValueError, match="int64"):
        encode_example({"x": [1 << 63]})
