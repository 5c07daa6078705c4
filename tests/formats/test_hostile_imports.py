"""Hostile files to import, in every layout of every format `wikisum import` reads
(hostile_import_files.py writes them): each hostile record sits between two good ones and must
come out a counted problem with its reason while both good ones are read; a file that declares
more than it holds is refused in one line naming it; memory stays bounded (the large cases run
in a child process under an address-space limit, and its peak is measured)."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest
from hostile_import_files import (
    ID_LAYOUTS,
    TEXT_LAYOUTS,
    Deep,
    Raw,
    bomb_pt,
    deep_pickle,
    good,
    good_ids,
    legacy_declared_pt,
    zip_pt,
)

from wikisum.core import shards
from wikisum.formats import datasets as ds
from wikisum.workflows import cli

JSON_LAYOUTS = ("jsonl", "multinews-jsonl", "wikicatsum-jsonl")
BYTE_LAYOUTS = ("jsonl", "multinews-jsonl", "multinews-csv", "multinews-parquet",
                "multinews-release", "wikicatsum-jsonl", "wikicatsum-release")  # not a .pt
MULTINEWS = ("multinews-jsonl", "multinews-csv", "multinews-parquet", "multinews-release")
MB = 1 << 20


def with_documents(*documents, **fields) -> dict:
    return {**good(7), "documents": list(documents), **fields}


# (case, layouts, hostile record, reason). A text field of Raw bytes is written as it is.
TEXT_CASES = [
    ("invalid UTF-8 in a document", BYTE_LAYOUTS,
     with_documents(Raw(b"bad \xff\xfe bytes"), "fine text"), "bad_encoding"),
    ("invalid UTF-8 in the summary", BYTE_LAYOUTS,
     with_documents("fine text", summary=Raw(b"cut \xc3 here")), "bad_encoding"),
    ("a lone surrogate", tuple(TEXT_LAYOUTS), with_documents("half \ud800 a pair"),
     "bad_encoding"),
    ("a NUL in a document", tuple(TEXT_LAYOUTS), with_documents("a\x00b nul"),
     "control_characters"),
    ("an escape sequence in the summary", tuple(TEXT_LAYOUTS),
     with_documents("fine text", summary="red \x1b[31m text"), "control_characters"),
    ("a raw NUL byte in a line", ("multinews-release", "wikicatsum-release", "multinews-csv"),
     with_documents(Raw(b"raw \x00 nul")), "control_characters"),
    ("100,000 nested arrays", JSON_LAYOUTS, {**good(7), "documents": Deep()}, "too_deep"),
    ("30,000 documents", tuple(TEXT_LAYOUTS),
     with_documents(*(f"document {i} words." for i in range(30_000))),
     "too_many_paragraphs"),
    ("story_separator_special_tag inside a document of |||||", MULTINEWS[:3],
     with_documents("one story_separator_special_tag two", "three"), "ambiguous_separator"),
    ("||||| inside a document of story_separator_special_tag", MULTINEWS[3:],
     with_documents("one ||||| two", "three"), "ambiguous_separator"),
    ("<EOT> inside the title", ("wikicatsum-release",),
     with_documents("text", title="a <EOT> b"), "ambiguous_separator"),
    ("<EOP> inside the title", ("wikicatsum-release",),
     with_documents("text", title="a <EOP> b"), "ambiguous_separator"),
    ("100,000 nested lists in a .pt", ("primera",), with_documents(deep_pickle()),
     "wrong_type"),
]


def text_params() -> list:
    return [pytest.param(layout, record, reason, id=f"{name}-{layout}")
            for name, layouts, record, reason in TEXT_CASES for layout in layouts]


def read_all(fmt: str, paths, **kwargs) -> tuple[list, list]:
    items = list(ds.read(fmt, [str(p) for p in paths], **kwargs))
    return ([x for x in items if isinstance(x, ds.SourceExample)],
            [(x.record, x.reason) for x in items if isinstance(x, ds.Problem)])


@pytest.mark.parametrize("layout, record, reason", text_params())
def test_a_hostile_record_is_a_counted_problem_and_the_next_is_read(tmp_path, layout, record,
                                                                    reason):
    fmt, write = TEXT_LAYOUTS[layout]
    examples, problems = read_all(fmt, write(tmp_path, record))
    assert problems == [(1, reason)]
    assert [e.summary for e in examples] == [good(0)["summary"], good(1)["summary"]]


BOM_LAYOUTS = [layout for layout in BYTE_LAYOUTS if layout != "multinews-parquet"]


@pytest.mark.parametrize("layout", BOM_LAYOUTS + ["graphsum"])
def test_a_byte_order_mark_opening_a_file_is_skipped(tmp_path, layout):
    fmt, write = ID_LAYOUTS[layout] if layout == "graphsum" else TEXT_LAYOUTS[layout]
    paths = write(tmp_path, good_ids(7) if layout == "graphsum" else good(7))
    for path in paths:
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    examples, problems = read_all(fmt, paths)
    assert problems == [] and len(examples) == 3
    assert "\ufeff" not in examples[0].title + "".join(examples[0].documents)
    assert examples[0].summary == (good(0)["summary"] if layout != "graphsum" else "summary 0 ends")


VOCAB_SIZE, RESERVED = 100, frozenset({4, 5})  # ids below 100; <S> 4, </S> 5
ID_CASES = [
    ("a negative id", {**good_ids(7), "src": [[10, -5, 12]]}, "bad_ids"),
    ("an id beyond the vocabulary", {**good_ids(7), "src": [[10, 100]]}, "bad_ids"),
    ("an id of 2^70", {**good_ids(7), "src": [[10, 2**70]]}, "bad_ids"),
    ("a float id", {**good_ids(7), "src": [[10, 11.0]]}, "bad_ids"),
    ("a bool id", {**good_ids(7), "tgt": [4, True, 5]}, "bad_ids"),
    ("a target id beyond the vocabulary", {**good_ids(7), "tgt": [4, 20, 1000, 5]},
     "bad_ids"),
    ("</S> inside the target", {**good_ids(7), "tgt": [4, 20, 5, 21, 5]}, "bad_target_ids"),
    ("<S> inside a paragraph", {**good_ids(7), "src": [[10, 4, 12]]}, "bad_ids"),
    ("30,000 paragraphs", {**good_ids(7), "src": [[10]] * 30_000}, "too_many_paragraphs"),
    ("a lone surrogate in tgt_str", {**good_ids(7), "tgt_str": "half \udc80"},
     "bad_encoding"),
    ("a NUL in tgt_str", {**good_ids(7), "tgt_str": "a\x00b"}, "control_characters"),
]


@pytest.mark.parametrize("layout", list(ID_LAYOUTS))
@pytest.mark.parametrize("name, record, reason", ID_CASES, ids=[c[0] for c in ID_CASES])
def test_token_ids_outside_the_vocabulary_are_counted(tmp_path, layout, name, record, reason):
    from wikisum.formats.config import ReadLimits

    fmt, write = ID_LAYOUTS[layout]
    limits = ReadLimits(vocab_size=VOCAB_SIZE, reserved_ids=RESERVED)
    examples, problems = read_all(fmt, write(tmp_path, record), limits=limits)
    assert problems == [(1, reason)]
    assert [e.summary_ids for e in examples] == [(20, 21), (21, 21)]


def test_deep_json_in_an_array_costs_that_element_only(tmp_path):
    examples, problems = read_all("graphsum", ID_LAYOUTS["graphsum"][1](
        tmp_path, {**good_ids(7), "src": Deep()}))
    assert problems == [(1, "too_deep")] and len(examples) == 2


def test_bytes_that_are_not_utf8_cost_their_array_element_only(tmp_path):
    path = ID_LAYOUTS["graphsum"][1](tmp_path, {**good_ids(7), "tgt_str": Raw(b"\xff")})[0]
    examples, problems = read_all("graphsum", [path])
    assert problems == [(1, "bad_encoding")] and len(examples) == 2


# -- memory: a child process under an address-space limit ------------------------------------

# The child reads the files with datasets.read and prints what came out and its peak memory.
READER = """
import json, resource, sys
limit = int(sys.argv[1]) << 20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from wikisum.formats import datasets as ds
out = {"examples": 0, "problems": [], "error": None}
try:
    for item in ds.read(sys.argv[2], sys.argv[3:]):
        if isinstance(item, ds.Problem):
            out["problems"].append([item.record, item.reason])
        else:
            out["examples"] += 1
except Exception as exc:
    out["error"] = f"{type(exc).__name__}: {exc}"
with open("/proc/self/status") as status:
    out["peak_mb"] = next(int(l.split()[1]) for l in status if l.startswith("VmHWM")) // 1024
print(json.dumps(out))
"""

# Address space of the child: what Python with pyarrow ("text") or torch ("pt") maps before
# reading anything, plus room for a few records of the 16 MiB limit. The resident peak allowed:
# about 65 MB of Python and pyarrow and 250 MB with torch, plus two records at the limit; a .pt
# file is loaded whole (its bytes, then its strings: about 3 times its size). Held whole, the
# hostile records (20 and 50 MB of text, a billion bytes declared) pass these bounds.
ADDRESS_SPACE_MB = {"text": 1500, "pt": 2500}
PEAK_MB = {"text": 150, "pt": 450}


def run_reader(fmt: str, paths, kind: str) -> dict:
    done = subprocess.run([sys.executable, "-c", READER, str(ADDRESS_SPACE_MB[kind]), fmt,
                           *map(str, paths)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


LONG = Raw(b"word " * (10 * MB))  # a 50 MB document, one line
BIG_CLUSTER = ["sentence of a big cluster. " * 40_000] * 20  # 20 documents of 1 MB: 20 MB
MEMORY_CASES = [
    ("a 50 MB line", layout, with_documents(LONG), "too_large")
    for layout in BYTE_LAYOUTS
] + [("a 50 MB document in a .pt", "primera", with_documents("word " * (10 * MB)),
      "too_large"),
     ("a 50 MB summary line", "multinews-release", with_documents("text", summary=LONG),
      "too_large"),
     ("a 50 MB array element", "graphsum", {**good_ids(7), "tgt_str": LONG}, "too_large"),
     ] + [
    ("a cluster of 20 MB", layout, with_documents(*BIG_CLUSTER), "too_large")
    for layout in ("jsonl", "multinews-csv", "multinews-parquet", "wikicatsum-release",
                   "primera")]


@pytest.mark.parametrize("name, layout, record, reason", MEMORY_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in MEMORY_CASES])
def test_a_record_over_the_limit_is_skipped_in_bounded_memory(tmp_path, name, layout, record,
                                                              reason):
    fmt, write = {**TEXT_LAYOUTS, **ID_LAYOUTS}[layout]
    kind = "pt" if layout == "primera" else "text"
    got = run_reader(fmt, write(tmp_path, record), kind)
    assert (got["error"], got["examples"], got["problems"]) == (None, 2, [[1, reason]]), got
    assert got["peak_mb"] < PEAK_MB[kind], got


DECLARED = [("a zip record that inflates to a billion bytes", bomb_pt),
            ("a legacy storage declaring a billion elements", legacy_declared_pt)]


@pytest.mark.parametrize("fmt, name", [(f, n) for f in ("hiersumm", "primera")
                                       for n, _ in DECLARED])
def test_a_pt_declaring_a_billion_elements_is_refused_unread(tmp_path, fmt, name):
    make = dict(DECLARED)[name]
    path = tmp_path / ("WIKI.train.0.pt" if fmt == "hiersumm" else "train.pt")
    path.write_bytes(make())
    got = run_reader(fmt, [path], "text")  # refused before torch is imported
    assert got["error"].startswith(f"CorruptFile: {path} is refused") and "declare" in \
        got["error"], got
    assert "\n" not in got["error"]
    assert got["peak_mb"] < PEAK_MB["text"], got


def test_a_zip_pt_as_torch_writes_it_is_read(tmp_path):
    """The crafted files differ from a good one only in what makes them hostile."""
    path = tmp_path / "WIKI.train.0.pt"
    path.write_bytes(zip_pt([good_ids(0), good_ids(1)]))
    examples, problems = read_all("hiersumm", [path])
    assert problems == [] and [e.summary_ids for e in examples] == [(20, 21), (21, 21)]


# -- the whole import: counted in dataset.json, listed in import_problems/ -------------------


def test_import_counts_every_hostile_record_and_keeps_the_good_ones(tmp_path):
    """Text that would break the Parquet writer (a lone surrogate) or that holds the
    vocabulary's own markers (<t>, <sep>) among good examples."""
    src = tmp_path / "train.jsonl"
    goods = [{"id": f"g{i}", **good(i)} for i in range(6)]
    hostile = [
        {"id": "surrogate", **with_documents("half \ud800 pair")},
        {"id": "nul", **with_documents("a\u0000b")},
        {"id": "title marker", **with_documents("the <t> marker")},
        {"id": "sep marker", **with_documents("text", summary="a <sep> b")},
        {"id": "deep", **with_documents("x"), "documents": [[[["x"]]]]},
    ]
    lines = [json.dumps(r).encode() for pair in zip(goods, hostile, strict=False) for r in pair]
    lines[4:4] = [b'{"id": "bytes", "documents": ["a \xff b"], "summary": "S."}']
    lines += [json.dumps(goods[5]).encode(), b"[" * 100_000]
    src.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "data"
    assert cli.main(["-q", "import", "jsonl", str(src), "--out", str(out), "--vocab-size", "60",
                     "--shards", "1", "--workers", "1"]) == 0
    stage = json.loads((out / "dataset.json").read_text())["stages"]["import"]
    assert stage["kept"] == 6 and stage["balanced"]
    assert stage["dropped"] == {"bad_encoding": 2, "control_characters": 1, "reserved_piece": 2,
                                "wrong_type": 1, "too_deep": 1}
    problems = list(shards.iter_rows(shards.match(str(out / "import_problems" / "*.parquet"))))
    assert len(problems) == 7 and all(p["error"] for p in problems)


def test_import_of_ids_counts_those_outside_the_vocabulary(tmp_path):
    from dataset_files import train_hiersumm_vocab

    sp = train_hiersumm_vocab(tmp_path / "spm.model")
    bos, eos = sp.piece_to_id("<S>"), sp.piece_to_id("</S>")
    size = sp.get_piece_size()

    def record(i, src):
        return {"src": src, "tgt": [bos, 30 + i, 31, eos], "tgt_str": f"a b {i}"}

    records = [record(0, [[40, 41]]), record(1, [[-1]]), record(2, [[size]]),
               record(3, [[2.5]]), record(4, [[eos]]), record(5, [[42, 43]])]
    (tmp_path / "hs").mkdir()
    (tmp_path / "hs" / "WIKI.train.0.pt").write_bytes(zip_pt(records))
    out = tmp_path / "data"
    assert cli.main(["-q", "import", "hiersumm", str(tmp_path / "hs"), "--out", str(out),
                     "--source-vocab", str(tmp_path / "spm.model"), "--shards", "1"]) == 0
    stage = json.loads((out / "dataset.json").read_text())["stages"]["import"]
    assert (stage["kept"], stage["dropped"]) == (2, {"bad_ids": 4})


# The whole import of a cluster of 10,000 documents (within the 20,000-paragraph limit), in a
# child under an address-space limit: it is kept, and every extractor ranks it in bounded memory.
IMPORT_BOUNDED = """
import resource, sys
limit = 3000 << 20
resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
from wikisum.workflows import cli
status = cli.main(sys.argv[1:])
with open("/proc/self/status") as f:
    print(next(int(l.split()[1]) for l in f if l.startswith("VmHWM")) // 1024)
sys.exit(status)
"""


def test_a_cluster_of_10000_documents_is_imported_in_bounded_memory(tmp_path):
    rng = random.Random(0)
    words = [f"w{i}" for i in range(400)]

    def sentence():
        return " ".join(rng.choice(words) for _ in range(12)).capitalize() + "."

    rows = [{"id": f"g{i}", **good(i)} for i in range(3)]
    rows.insert(1, {"id": "cluster", "title": "Cluster",
                    "documents": [sentence() + " " + sentence() for _ in range(10_000)],
                    "summary": sentence()})
    src = tmp_path / "train.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "data"
    done = subprocess.run([sys.executable, "-c", IMPORT_BOUNDED, "-q", "import", "jsonl",
                           str(src), "--out", str(out), "--vocab-size", "60", "--shards", "1",
                           "--workers", "1"], capture_output=True, text=True, timeout=300,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    stage = json.loads((out / "dataset.json").read_text())["stages"]["import"]
    assert stage["kept"] == 4 and stage["dropped"] == {}
    assert int(done.stdout.split()[-1]) < 2000  # MB resident at the peak
