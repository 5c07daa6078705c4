"""``tf.train.Example`` without TensorFlow or protobuf: a parser and an encoder of the protocol
buffer wire format for exactly that schema (tensorflow/core/example/example.proto and
feature.proto)::

    Example   { Features features = 1; }
    Features  { map<string, Feature> feature = 1; }   // entries: key = 1, value = 2
    Feature   { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
                             Int64List int64_list = 3; } }
    BytesList { repeated bytes value = 1; }
    FloatList { repeated float value = 1 [packed = true]; }
    Int64List { repeated int64 value = 1 [packed = true]; }

The parser follows protobuf's own rules, so that it reads what TensorFlow reads: unknown fields
(and known field numbers with an unexpected wire type) are skipped by their wire type, groups
included; numeric lists are accepted packed and unpacked; a repeated map key keeps its last
value; a message field that appears twice is merged, and a second ``kind`` of a Feature replaces
the first. Malformed input raises :class:`ExampleError`, never ``IndexError``; nesting is the
fixed depth of the schema (groups are skipped with a loop), so no input can recurse.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

_VARINT, _FIXED64, _LEN, _START_GROUP, _END_GROUP, _FIXED32 = 0, 1, 2, 3, 4, 5
_BYTES_LIST, _FLOAT_LIST, _INT64_LIST = 1, 2, 3  # Feature's oneof, and the encoder's kinds
_MAX_FIELD = (1 << 29) - 1  # the largest field number protobuf allows
_U64 = (1 << 64) - 1


class ExampleError(ValueError):
    """A serialized tf.train.Example that cannot be parsed; the message says where and why."""


def _varint(data: bytes, i: int, end: int) -> tuple[int, int]:
    """The varint at ``data[i:]`` (not reaching ``end``) and the index after it. Like protobuf,
    bits past the 64th of a 10-byte varint are dropped."""
    value = shift = 0
    while True:
        if i >= end:
            raise ExampleError(f"varint cut off at byte {i}")
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value & _U64, i
        shift += 7
        if shift >= 70:
            raise ExampleError(f"varint longer than 10 bytes, ending after byte {i}")


def _tag(data: bytes, i: int, end: int) -> tuple[int, int, int]:
    """(field number, wire type, index after the tag)."""
    tag, j = _varint(data, i, end)
    field, wire = tag >> 3, tag & 7
    if not 0 < field <= _MAX_FIELD:
        raise ExampleError(f"invalid field number {field} at byte {i}")
    if wire > _FIXED32:
        raise ExampleError(f"invalid wire type {wire} at byte {i}")
    return field, wire, j


def _skip(data: bytes, wire: int, i: int, end: int, field: int) -> int:
    """The index after a field's value of the given wire type; a group is skipped with an
    explicit stack of open groups, so depth costs memory, not recursion."""
    if wire == _VARINT:
        return _varint(data, i, end)[1]
    if wire in (_FIXED64, _FIXED32):
        size = 8 if wire == _FIXED64 else 4
        if i + size > end:
            raise ExampleError(f"fixed{size * 8} field {field} cut off at byte {i}")
        return i + size
    if wire == _LEN:
        size, j = _varint(data, i, end)
        if j + size > end:
            raise ExampleError(f"field {field} claims {size} bytes at byte {j}, but only "
                               f"{end - j} remain in its message")
        return j + size
    if wire == _END_GROUP:
        raise ExampleError(f"end of group {field} at byte {i} without its start")
    open_groups = [field]
    while open_groups:
        if i >= end:
            raise ExampleError(f"group {open_groups[-1]} not closed before byte {end}")
        inner, inner_wire, i = _tag(data, i, end)
        if inner_wire == _START_GROUP:
            open_groups.append(inner)
        elif inner_wire == _END_GROUP:
            if inner != open_groups[-1]:
                raise ExampleError(f"group {open_groups[-1]} closed as {inner} at byte {i}")
            open_groups.pop()
        else:
            i = _skip(data, inner_wire, i, end, inner)
    return i


def _fields(data: bytes, start: int, end: int) -> Iterator[tuple[int, int, int, int]]:
    """(field number, wire type, value start, value end) of each field of the message at
    ``data[start:end]``; a length-delimited value's span excludes its length prefix."""
    i = start
    while i < end:
        field, wire, i = _tag(data, i, end)
        after = _skip(data, wire, i, end, field)
        if wire == _LEN:
            i = _varint(data, i, end)[1]
        yield field, wire, i, after
        i = after


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _read_list(data: bytes, kind: int, start: int, end: int, values: list) -> None:
    """Appends the values of a BytesList / FloatList / Int64List message to ``values``."""
    for field, wire, a, b in _fields(data, start, end):
        if field != 1:
            continue
        if kind == _BYTES_LIST:
            if wire == _LEN:
                values.append(data[a:b])
        elif kind == _FLOAT_LIST:
            if wire == _FIXED32:
                values.append(struct.unpack_from("<f", data, a)[0])
            elif wire == _LEN:
                if (b - a) % 4:
                    raise ExampleError(f"packed float list of {b - a} bytes at byte {a} is not "
                                       "a whole number of 4-byte floats")
                values.extend(struct.unpack_from(f"<{(b - a) // 4}f", data, a))
        elif wire == _VARINT:
            values.append(_signed(_varint(data, a, b)[0]))
        elif wire == _LEN:
            i = a
            while i < b:
                value, i = _varint(data, i, b)
                values.append(_signed(value))


def _read_feature(data: bytes, start: int, end: int, kind: int | None,
                  values: list) -> tuple[int | None, list]:
    """Merges a Feature message into (kind, values): the same kind again extends the list,
    another kind replaces it (oneof)."""
    for field, wire, a, b in _fields(data, start, end):
        if wire != _LEN or field not in (_BYTES_LIST, _FLOAT_LIST, _INT64_LIST):
            continue
        if field != kind:
            kind, values = field, []
        _read_list(data, field, a, b, values)
    return kind, values


def _read_entry(data: bytes, start: int, end: int) -> tuple[str, list]:
    """One ``map<string, Feature>`` entry: (key, values); a missing key is "" and a missing
    value an empty list, as protobuf's defaults."""
    key = b""
    kind, values = None, []
    for field, wire, a, b in _fields(data, start, end):
        if wire != _LEN:
            continue
        if field == 1:
            key = data[a:b]
        elif field == 2:
            kind, values = _read_feature(data, a, b, kind, values)
    try:
        return key.decode("utf-8"), values
    except UnicodeDecodeError as exc:
        raise ExampleError(f"feature name {key[:80]!r} is not UTF-8 ({exc.reason} at byte "
                           f"{start + exc.start})") from None


def parse_example(data: bytes) -> dict[str, list]:
    """The features of a serialized ``tf.train.Example``: name -> values, as ``bytes`` for a
    BytesList, Python ints (negative int64 from their two's complement) for an Int64List, and
    floats (each exactly a float32) for a FloatList. A feature with no kind set maps to [].

    Raises:
        ExampleError: the bytes are not a well-formed Example.
    """
    data = bytes(data)
    features: dict[str, list] = {}
    for field, wire, a, b in _fields(data, 0, len(data)):
        if field != 1 or wire != _LEN:
            continue
        for entry_field, entry_wire, x, y in _fields(data, a, b):
            if entry_field == 1 and entry_wire == _LEN:
                key, values = _read_entry(data, x, y)
                features[key] = values
    return features


# -- encoding -----------------------------------------------------------------------------------


def _encode_varint(value: int) -> bytes:
    value &= _U64
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _field(field: int, payload: bytes) -> bytes:
    """A length-delimited field."""
    return _encode_varint(field << 3 | _LEN) + _encode_varint(len(payload)) + payload


def _kind_of(name: str, values: list) -> int:
    if all(isinstance(v, (bytes, bytearray)) for v in values):
        return _BYTES_LIST
    if all(isinstance(v, int) for v in values):
        for v in values:
            if not -(1 << 63) <= v < 1 << 63:
                raise ValueError(f"feature {name!r}: {v} does not fit in an int64")
        return _INT64_LIST
    if all(isinstance(v, (int, float)) for v in values):
        return _FLOAT_LIST
    raise TypeError(f"feature {name!r} must be a list of bytes, of ints or of floats")


def _encode_list(kind: int, values: list, packed: bool) -> bytes:
    if kind == _BYTES_LIST:
        return b"".join(_field(1, bytes(v)) for v in values)
    if kind == _FLOAT_LIST:
        if packed:
            return _field(1, struct.pack(f"<{len(values)}f", *values)) if values else b""
        tag = _encode_varint(1 << 3 | _FIXED32)
        return b"".join(tag + struct.pack("<f", v) for v in values)
    if packed:
        return _field(1, b"".join(_encode_varint(v) for v in values)) if values else b""
    tag = _encode_varint(1 << 3 | _VARINT)
    return b"".join(tag + _encode_varint(v) for v in values)


def encode_example(features: dict[str, list], packed: bool = True) -> bytes:
    """A serialized ``tf.train.Example`` of ``features`` (name -> list of bytes, of ints, or of
    floats; an int in a list holding floats is a float; an empty list is an empty BytesList).
    ``packed=False`` writes numeric lists one field per value, as proto2 writers did; both are
    what TensorFlow's parser accepts, and tests use both."""
    entries = []
    for name, values in features.items():
        kind = _kind_of(name, list(values))
        feature = _field(kind, _encode_list(kind, list(values), packed))
        entries.append(_field(1, _field(1, name.encode("utf-8")) + _field(2, feature)))
    return _field(1, b"".join(entries))
