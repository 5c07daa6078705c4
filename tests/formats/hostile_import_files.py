"""Hostile files for ``wikisum import``: every layout of every format, each holding one hostile
record between two good ones, written as that format's files are (dataset_files.py), so that a
test sees what the reader makes of the record and that it reads the next one.

A layout is a function ``(folder, hostile record) -> the paths to read``. A record is neutral:
``{"title", "documents": [...], "summary"}``, or for the token-id formats ``{"src": [[ids]],
"tgt": [ids], "tgt_str"}``. A text field may be :class:`Raw` bytes, written as they are (inside
the JSON string, the quoted CSV field, the Parquet string, the line): bytes that are not UTF-8,
a raw NUL, 50 MB. A JSON field may be :class:`Deep` (nested arrays). The crafted ``.pt`` files
(a zip record that inflates to a billion bytes, a legacy storage that declares a billion
elements, 100,000 nested lists) are written byte by byte, without torch.
"""

from __future__ import annotations

import io
import json
import pickle
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

DEEP = 100_000  # nested arrays of the deep JSON


@dataclass(frozen=True)
class Raw:
    """Text given as the bytes a file holds (no quotes, no escapes)."""

    data: bytes


@dataclass(frozen=True)
class Deep:
    """A JSON value of ``depth`` nested arrays."""

    depth: int = DEEP


def good(i: int) -> dict:
    words = "river stone north city house green small light film moth company".split()
    text = " ".join(words[(i + k) % len(words)] for k in range(12))
    return {"title": f"good {i}", "documents": [f"{text}.\n{text} again.", f"{text} too."],
            "summary": f"The {words[i % len(words)]} summary {i}."}


def good_ids(i: int) -> dict:
    return {"src": [[10 + i, 11, 12], [13, 14]], "tgt": [4, 20 + i, 21, 5],
            "tgt_str": f"summary {i} <Q> ends"}


def _bytes(text) -> bytes:
    return text.data if isinstance(text, Raw) else text.encode("utf-8", "surrogatepass")


def _join(parts, separator: str):
    """The parts joined, :class:`Raw` where any part is."""
    if any(isinstance(p, Raw) for p in parts):
        return Raw(separator.encode().join(_bytes(p) for p in parts))
    return separator.join(parts)


# -- JSON text -------------------------------------------------------------------------------


def _json(value) -> bytes:
    if isinstance(value, Raw):
        return b'"' + value.data + b'"'
    if isinstance(value, Deep):
        return b"[" * value.depth + b"]" * value.depth
    if isinstance(value, dict):
        return b"{" + b", ".join(json.dumps(k).encode() + b": " + _json(v)
                                 for k, v in value.items()) + b"}"
    if isinstance(value, list):
        return b"[" + b", ".join(_json(v) for v in value) + b"]"
    return json.dumps(value).encode("utf-8", "surrogatepass")


def _jsonl(path: Path, records: list) -> list[Path]:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(_json(r) + b"\n" for r in records))
    return [path]


def generic_jsonl(folder: Path, hostile) -> list[Path]:
    rows = [{"id": f"g{i}", **good(i)} for i in range(2)]
    return _jsonl(folder / "train.jsonl", [rows[0], {"id": "hostile", **hostile}, rows[1]])


def _multinews_row(record) -> dict:
    docs = record["documents"]
    return {"document": docs if isinstance(docs, Deep) else _join(docs, " ||||| "),
            "summary": record["summary"]}


def multinews_jsonl(folder: Path, hostile) -> list[Path]:
    return _jsonl(folder / "train.jsonl", [_multinews_row(r) for r in (good(0), hostile, good(1))])


def _wikicatsum_row(record, i: int) -> dict:
    return {"gem_id": f"animal-train-{i}", "id": str(i), "title": record["title"],
            "paragraphs": record["documents"],
            "summary": {"text": [record["summary"]], "topic": [1]}}


def wikicatsum_jsonl(folder: Path, hostile) -> list[Path]:
    return _jsonl(folder / "main_splits" / "train-animal.jsonl",
                  [_wikicatsum_row(r, i) for i, r in enumerate((good(0), hostile, good(1)))])


def graphsum_json(folder: Path, hostile) -> list[Path]:
    """One JSON array ``train/WikiSum.40.train.0.json`` of three elements."""
    path = folder / "train" / "WikiSum.40.train.0.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(_json([good_ids(0), hostile, good_ids(1)]))
    return [path]


# -- CSV, Parquet, the releases' text lines ---------------------------------------------------


def multinews_csv(folder: Path, hostile) -> list[Path]:
    """The hub's CSV (``document``, ``summary``), every field quoted."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "train.csv"
    rows = [_multinews_row(r) for r in (good(0), hostile, good(1))]
    path.write_bytes(b"document,summary\r\n" + b"".join(
        b",".join(b'"' + _bytes(row[k]).replace(b'"', b'""') + b'"'
                  for k in ("document", "summary")) + b"\r\n" for row in rows))
    return [path]


def multinews_parquet(folder: Path, hostile) -> list[Path]:
    """The hub's Parquet, one row a row group; :class:`Raw` bytes stored in the string column
    as they are, as a writer that does not check UTF-8 stores them."""
    path = folder / "data" / "train-00000-of-00001.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [_multinews_row(r) for r in (good(0), hostile, good(1))]
    columns = {}
    for name in ("document", "summary"):
        values = [_bytes(r[name]) for r in rows]
        offsets = [0]
        for v in values:
            offsets.append(offsets[-1] + len(v))
        columns[name] = pa.Array.from_buffers(pa.string(), len(values), [
            None, pa.py_buffer(struct.pack(f"<{len(offsets)}i", *offsets)),
            pa.py_buffer(b"".join(values))])
    pq.write_table(pa.table(columns), path, row_group_size=1)
    return [path]


def multinews_release(folder: Path, hostile) -> list[Path]:
    """``train.src.cleaned`` and ``train.tgt``: documents after ``story_separator_special_tag``,
    newlines written ``NEWLINE_CHAR``, summaries after ``– ``."""
    folder.mkdir(parents=True, exist_ok=True)
    records = (good(0), hostile, good(1))
    src = [_bytes(_join(r["documents"], " story_separator_special_tag ")).replace(
        b"\n", b" NEWLINE_CHAR ") for r in records]
    tgt = ["– ".encode() + _bytes(r["summary"]) for r in records]
    (folder / "train.src.cleaned").write_bytes(b"".join(line + b"\n" for line in src))
    (folder / "train.tgt").write_bytes(b"".join(line + b"\n" for line in tgt))
    return [folder / "train.src.cleaned"]


def wikicatsum_release(folder: Path, hostile) -> list[Path]:
    """``train.src`` (``title <EOT> paragraph <EOP> paragraph``) and ``train.tgt``."""
    folder.mkdir(parents=True, exist_ok=True)
    records = (good(0), hostile, good(1))
    src = [_bytes(r["title"]) + b" <EOT> " + _bytes(_join(r["documents"], " <EOP> ")).replace(
        b"\n", b" <EOP> ") for r in records]
    (folder / "train.src").write_bytes(b"".join(line + b"\n" for line in src))
    (folder / "train.tgt").write_bytes(b"".join(_bytes(r["summary"]) + b"\n" for r in records))
    return [folder / "train.src"]


# -- .pt files, written byte by byte -------------------------------------------------------------


@dataclass(frozen=True)
class Opcodes:
    """Pickle opcodes spliced into a ``.pt`` file's data where a value would be."""

    data: bytes


def _pickle_bytes(value) -> bytes:
    """``value`` pickled as torch.save's data.pkl is (protocol 2), :class:`Opcodes` spliced
    in as they are."""
    raws: list[bytes] = []
    marker = "\u0000PICKLE{}\u0000"

    def walk(v):
        if isinstance(v, Opcodes):
            raws.append(v.data)
            return marker.format(len(raws) - 1)
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list):
            return [walk(x) for x in v]
        return v

    data = pickle.dumps(walk(value), protocol=2)
    for n, raw in enumerate(raws):
        text = marker.format(n).encode()
        data = data.replace(b"X" + struct.pack("<I", len(text)) + text, raw)
    return data


def deep_pickle(depth: int = DEEP) -> Opcodes:
    """``depth`` nested lists as pickle opcodes (no recursion builds them)."""
    return Opcodes(b"]" * (depth + 1) + b"a" * depth)


def _stored_zip(records: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as z:
        for name, data in records.items():
            z.writestr(name, data)
    return out.getvalue()


def zip_pt(records: list) -> bytes:
    """A zip ``.pt`` as torch.save writes it (``archive/data.pkl``, ``byteorder``,
    ``version``) of plain records: what torch.load(weights_only=True) reads."""
    return _stored_zip({"archive/data.pkl": _pickle_bytes(records),
                        "archive/byteorder": b"little", "archive/version": b"3\n"})


def _storage_pickle(records: list, count: int, legacy: bool) -> bytes:
    """``records`` whose first ``src`` paragraph is a uint8 tensor on storage ``0`` of
    ``count`` elements (torch._utils._rebuild_tensor_v2 of a ByteStorage persistent id)."""
    pid = (b"(X\x07\x00\x00\x00storage" + b"ctorch\nByteStorage\n" + b"X\x01\x00\x00\x000"
           + b"X\x03\x00\x00\x00cpu" + b"\x8a\x08" + struct.pack("<q", count)
           + (b"N" if legacy else b"") + b"tQ")
    tensor = (b"ctorch._utils\n_rebuild_tensor_v2\n(" + pid + b"K\x00"
              + b"\x8a\x08" + struct.pack("<q", count) + b"\x85" + b"K\x01\x85" + b"\x89"
              + b"ccollections\nOrderedDict\n)RtR")
    return _pickle_bytes([{**records[0], "src": [Opcodes(tensor)]}, *records[1:]])


def bomb_pt(count: int = 10**9) -> bytes:
    """A zip ``.pt`` whose storage record is deflated: a few MB that inflate to ``count``
    zero bytes (the uint8 tensor of ``count`` elements its pickle declares)."""
    block = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = 1 << 20
    first = block.compress(bytes(chunk)) + block.flush(zlib.Z_FULL_FLUSH)
    steady = block.compress(bytes(chunk)) + block.flush(zlib.Z_FULL_FLUSH)
    body = first + steady * (count // chunk - 1) + block.compress(bytes(count % chunk)) \
        + block.flush()
    data_pkl = _storage_pickle([good_ids(0)], count, legacy=False)
    # the zip by hand: the storage record deflated, the others stored (CRC of the record
    # left 0: the declared sizes are what is hostile)
    entries = [("archive/data.pkl", data_pkl, 0, len(data_pkl), zlib.crc32(data_pkl)),
               ("archive/byteorder", b"little", 0, 6, zlib.crc32(b"little")),
               ("archive/data/0", body, 8, count, 0),
               ("archive/version", b"3\n", 0, 2, zlib.crc32(b"3\n"))]
    out, central = io.BytesIO(), io.BytesIO()
    for name, data, method, size, crc in entries:
        offset = out.tell()
        header = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc,
                             len(data), size, len(name), 0)
        out.write(header + name.encode() + data)
        central.write(struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0,
                                  0x21, crc, len(data), size, len(name), 0, 0, 0, 0, 0, offset)
                      + name.encode())
    start = out.tell()
    out.write(central.getvalue())
    out.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries),
                          len(central.getvalue()), start, 0))
    return out.getvalue()


def legacy_declared_pt(count: int = 10**9) -> bytes:
    """A legacy (pre-zip) ``.pt`` whose storage declares ``count`` elements and holds four
    bytes: magic number, protocol, system info, the data, the storage keys, the bytes."""
    out = io.BytesIO()
    for value in (0x1950A86A20F9469CFC6C, 1001,
                  {"protocol_version": 1001, "little_endian": True,
                   "type_sizes": {"short": 2, "int": 4, "long": 4}}):
        pickle.dump(value, out, protocol=2)
    out.write(_storage_pickle([good_ids(0), good_ids(1)], count, legacy=True))
    pickle.dump(["0"], out, protocol=2)
    out.write(struct.pack("<q", 4) + b"\x01\x02\x03\x04")
    return out.getvalue()


def hiersumm_pt(folder: Path, hostile) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "WIKI.train.0.pt"
    path.write_bytes(zip_pt([good_ids(0), hostile, good_ids(1)]))
    return [path]


def primera_pt(folder: Path, hostile) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "train.pt"

    def row(record):
        return {"text": record["documents"], "tgt": record["summary"]}

    path.write_bytes(zip_pt([row(good(0)), row(hostile), row(good(1))]))
    return [path]


# Each text layout: (format, writer).
TEXT_LAYOUTS = {
    "jsonl": ("jsonl", generic_jsonl),
    "multinews-jsonl": ("multinews", multinews_jsonl),
    "multinews-csv": ("multinews", multinews_csv),
    "multinews-parquet": ("multinews", multinews_parquet),
    "multinews-release": ("multinews", multinews_release),
    "wikicatsum-jsonl": ("wikicatsum", wikicatsum_jsonl),
    "wikicatsum-release": ("wikicatsum", wikicatsum_release),
    "primera": ("primera", primera_pt),
}
ID_LAYOUTS = {"hiersumm": ("hiersumm", hiersumm_pt), "graphsum": ("graphsum", graphsum_json)}
