"""The readers and writers of wikisum.formats.datasets against files laid out as each system
lays them out (dataset_files.py), and against each system's own way of reading them."""

from __future__ import annotations

import glob
import json
import os
import tracemalloc
from pathlib import Path

import pytest
import torch
from dataset_files import (
    Case,
    cases,
    generic_row,
    graphsum_record,
    hiersumm_record,
    multinews_row,
    train_hiersumm_vocab,
    write_generic,
    write_graphsum,
    write_hiersumm,
    write_multinews_hub,
    write_multinews_release,
    write_primera,
    write_wikicatsum_hub,
    write_wikicatsum_parquet,
    write_wikicatsum_release,
)

from wikisum.formats import datasets as ds
from wikisum.formats import sources, torchfiles


@pytest.fixture(scope="session")
def sp(tmp_path_factory):
    return train_hiersumm_vocab(tmp_path_factory.mktemp("spm") / "spm_hiersumm.model")


def split_read(format: str, paths, **kwargs) -> tuple[list[ds.SourceExample], list[ds.Problem]]:
    items = list(ds.read(format, [str(p) for p in paths], **kwargs))
    return ([x for x in items if isinstance(x, ds.SourceExample)],
            [x for x in items if isinstance(x, ds.Problem)])


def text_of(case: Case) -> tuple[str, ...]:
    return tuple("\n".join(doc) for doc in case.documents)


def summary_of(case: Case) -> str:
    return " ".join(case.sentences)


def out_example(case: Case, split: str, index: int) -> ds.OutExample:
    return ds.OutExample(split, f"{split}-{index}", case.title, text_of(case),
                         tuple(case.paragraphs), None, summary_of(case), None)


# -- hiersumm --------------------------------------------------------------------------------


def test_hiersumm_shards_read_with_splits_ids_and_text(tmp_path, sp):
    splits = {"train": cases("train", 5, 1), "valid": cases("valid", 2, 2),
              "test": cases("test", 2, 3)}
    records = {s: [hiersumm_record(c, sp) for c in items] for s, items in splits.items()}
    # hiersumm's scorer drops <t> and </t> around sentences: a tgt_str may carry them.
    first = splits["train"][0]
    records["train"][0] = hiersumm_record(first, sp, " <Q> ".join(
        f"<t> {s} </t>" for s in first.sentences))
    write_hiersumm(tmp_path, records, shard_size=2)

    examples, problems = split_read("hiersumm", [tmp_path], sp=sp)

    assert problems == []
    assert [e.split for e in examples].count("train") == 5
    assert {e.split for e in examples} == {"train", "dev", "test"}
    by_id = {e.id: e for e in examples}
    assert sorted(by_id) == sorted(
        [f"WIKI.train.{n}.pt:{i}" for n, k in ((0, 2), (1, 2), (2, 1)) for i in range(k)]
        + ["WIKI.valid.0.pt:0", "WIKI.valid.0.pt:1", "WIKI.test.0.pt:0", "WIKI.test.0.pt:1"])
    got = by_id["WIKI.train.0.pt:0"]
    assert got.summary == summary_of(first)  # <Q> a space, <t> </t> gone
    assert got.title == "" and got.documents == ()
    assert got.paragraph_ids == tuple(tuple(sp.encode(p)) for p in first.paragraphs)
    eoq = sp.piece_to_id("<Q>")
    expected_ids = []
    for k, s in enumerate(first.sentences):
        expected_ids += ([eoq] if k else []) + sp.encode(s)
    assert got.summary_ids == tuple(expected_ids)  # BOS and EOS stripped, <Q> kept
    # Without the vocabulary the two ends are taken as BOS and EOS just the same.
    plain, _ = split_read("hiersumm", [tmp_path / "WIKI.train.0.pt"])
    assert plain[0].summary_ids == got.summary_ids


def test_hiersumm_bad_records_are_problems_and_the_next_reads(tmp_path, sp):
    good = [hiersumm_record(c, sp) for c in cases("train", 4, 4)]
    no_tgt = {k: v for k, v in good[1].items() if k != "tgt"}
    no_bos = dict(good[2], tgt=good[2]["tgt"][1:])
    write_hiersumm(tmp_path, {"train": [good[0], no_tgt, no_bos, "not a dict", good[3]]}, 10)

    examples, problems = split_read("hiersumm", [tmp_path], sp=sp)

    assert [e.id for e in examples] == ["WIKI.train.0.pt:0", "WIKI.train.0.pt:4"]
    assert [(p.record, p.reason) for p in problems] == [
        (1, ds.MISSING_FIELD), (2, ds.BAD_TARGET_IDS), (3, ds.WRONG_TYPE)]
    assert all(p.file.endswith("WIKI.train.0.pt") for p in problems)


class Payload:
    """Unpickling this would create ``marker``: what a hostile dataset file could do."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def test_a_pt_file_holding_an_object_is_refused_without_running_it(tmp_path, sp):
    marker = tmp_path / "ran"
    hostile = tmp_path / "WIKI.train.0.pt"
    torch.save([dict(hiersumm_record(cases("train", 1, 5)[0], sp), extra=Payload(marker))],
               hostile)

    with pytest.raises(torchfiles.RefusedFile,
                       match=r"WIKI\.train\.0\.pt is refused: it holds a io\.open object"):
        list(ds.read("hiersumm", [str(hostile)]))
    with pytest.raises(torchfiles.RefusedFile):
        list(ds.read("primera", [str(tmp_path / "WIKI.train.0.pt")]))
    assert not marker.exists()
    # The payload is real: an unrestricted load would have run it.
    torch.load(hostile, weights_only=False)
    assert marker.exists()


def test_a_truncated_pt_file_is_a_clear_error(tmp_path, sp):
    path = tmp_path / "WIKI.test.0.pt"
    torch.save([hiersumm_record(cases("test", 1, 6)[0], sp)], path)
    path.write_bytes(path.read_bytes()[:50])
    with pytest.raises(torchfiles.CorruptFile, match="WIKI.test.0.pt"):
        list(ds.read("hiersumm", [str(path)]))


def test_a_file_without_a_split_in_its_name_is_refused(tmp_path):
    path = tmp_path / "examples.jsonl"
    path.write_text(json.dumps({"document": "a |||||", "summary": "b"}) + "\n")
    with pytest.raises(ValueError, match="examples.jsonl: no split"):
        list(ds.read("multinews", [str(path)]))


# -- GraphSum --------------------------------------------------------------------------------


def test_graphsum_arrays_read_element_by_element(tmp_path, sp, monkeypatch):
    monkeypatch.setattr(sources, "_CHUNK_CHARS", 7)  # elements straddle many buffer refills
    splits = {"train": cases("train", 3, 8), "valid": cases("valid", 1, 9),
              "test": cases("test", 1, 10)}
    write_graphsum(tmp_path, {s: [graphsum_record(c, sp) for c in items]
                              for s, items in splits.items()}, shard_size=2)

    examples, problems = split_read("graphsum", [tmp_path], sp=sp)

    assert problems == []
    assert sorted(e.id for e in examples) == sorted([
        "WikiSum.40.train.0.json:0", "WikiSum.40.train.0.json:1", "WikiSum.40.train.1.json:0",
        "WikiSum.40.valid.0.json:0", "WikiSum.40.test.0.json:0"])
    got = next(e for e in examples if e.id == "WikiSum.40.train.0.json:0")
    case = splits["train"][0]
    assert (got.split, got.summary, got.documents) == ("train", summary_of(case),
                                                       tuple(case.paragraphs))
    assert got.paragraph_ids == tuple(tuple(sp.encode(p)) for p in case.paragraphs)
    assert got.extra["sim_graph"][0][0] == 1.0 and len(got.extra["sim_graph"]) == 6


def test_graphsum_bad_element_and_broken_array(tmp_path, sp):
    folder = tmp_path / "train"
    folder.mkdir()
    good = [graphsum_record(c, sp) for c in cases("train", 3, 11)]
    (folder / "G.train.0.json").write_text(json.dumps([good[0], 7, good[1]]))
    text = json.dumps(good)
    (folder / "G.train.1.json").write_text(text[: text.index(', {"src"', 10) + 30])

    examples, problems = split_read("graphsum", [tmp_path])

    assert [e.id for e in examples] == ["G.train.0.json:0", "G.train.0.json:2",
                                        "G.train.1.json:0"]
    assert [(p.file.rsplit("/", 1)[-1], p.record, p.reason) for p in problems] == [
        ("G.train.0.json", 1, ds.WRONG_TYPE), ("G.train.1.json", 1, ds.UNREAD_REST)]


# -- PRIMERA ---------------------------------------------------------------------------------


def test_primera_splits_read(tmp_path):
    splits = {"train": cases("train", 3, 12), "valid": cases("valid", 2, 13),
              "test": cases("test", 1, 14)}
    write_primera(tmp_path, splits)

    examples, problems = split_read("primera", [tmp_path])

    assert problems == []
    assert [(e.split, e.id) for e in examples] == [
        ("test", "test.pt:0"), ("train", "train.pt:0"), ("train", "train.pt:1"),
        ("train", "train.pt:2"), ("dev", "valid.pt:0"), ("dev", "valid.pt:1")]
    got, case = examples[1], splits["train"][0]
    assert (got.documents, got.summary, got.title) == (text_of(case), summary_of(case), "")


# -- WikiCatSum ------------------------------------------------------------------------------


def test_wikicatsum_hub_jsonl_and_parquet(tmp_path):
    splits = {"train": cases("train", 3, 15), "valid": cases("valid", 1, 16),
              "test": cases("test", 1, 17)}
    write_wikicatsum_hub(tmp_path / "jsonl", splits, "animal")
    write_wikicatsum_parquet(tmp_path / "parquet", {"train": splits["train"],
                                                    "validation": splits["valid"]}, "film")

    from_jsonl, problems = split_read("wikicatsum", [tmp_path / "jsonl"])
    from_parquet, more = split_read("wikicatsum", [tmp_path / "parquet"])

    assert problems == more == []
    assert [(e.split, e.id) for e in from_jsonl] == [
        ("test", "animal-test-0"), ("train", "animal-train-0"), ("train", "animal-train-1"),
        ("train", "animal-train-2"), ("dev", "animal-valid-0")]
    got, case = from_jsonl[2], splits["train"][1]
    assert got.title == case.title
    assert got.documents == tuple(case.paragraphs)  # each ranked paragraph a document
    assert got.summary == summary_of(case)
    assert got.extra == {"topics": [1, 2, 3][: len(case.sentences)], "wikicatsum_id": "1001"}
    assert [(e.split, e.id) for e in from_parquet] == [
        ("train", "film-train-0"), ("train", "film-train-1"), ("train", "film-train-2"),
        ("dev", "film-valid-0")]
    assert from_parquet[1].summary == got.summary
    assert from_parquet[1].extra["topics"] == got.extra["topics"]


def test_wikicatsum_release_text_files_with_markers(tmp_path):
    splits = {"train": cases("train", 2, 18), "valid": cases("valid", 1, 19),
              "test": cases("test", 1, 20)}
    write_wikicatsum_release(tmp_path, splits)

    examples, problems = split_read("wikicatsum", [tmp_path])  # the .bow files are not read

    assert problems == []
    assert [(e.split, e.id) for e in examples] == [
        ("test", "test.src:0"), ("train", "train.src:0"), ("train", "train.src:1"),
        ("dev", "valid.src:0")]
    got, case = examples[1], splits["train"][0]
    assert got.title == case.title  # before <EOT>
    assert got.documents == tuple(case.paragraphs)  # split at <EOP>
    assert got.summary == summary_of(case)  # <SNT> a space


# -- Multi-News ------------------------------------------------------------------------------


def test_multinews_release_files(tmp_path):
    splits = {"train": cases("train", 3, 21), "val": cases("val", 1, 22),
              "test": cases("test", 1, 23)}
    write_multinews_release(tmp_path, splits)
    with (tmp_path / "train.tgt").open("a") as f:
        f.write("– a summary without its document.\n")

    examples, problems = split_read("multinews", [tmp_path])

    assert [(e.split, e.id) for e in examples] == [
        ("test", "test.src.cleaned:0"), ("train", "train.src.cleaned:0"),
        ("train", "train.src.cleaned:1"), ("train", "train.src.cleaned:2"),
        ("dev", "val.src.cleaned:0")]
    got, case = examples[1], splits["train"][0]
    assert got.documents == text_of(case)  # NEWLINE_CHAR a newline, paragraphs a line each
    assert got.summary == summary_of(case)  # without its "– "
    assert got.title == ""
    assert [(p.record, p.reason) for p in problems] == [(3, ds.UNPAIRED_LINE)]


@pytest.mark.parametrize("kind", ["parquet", "jsonl", "csv"])
def test_multinews_hub_layouts(tmp_path, kind):
    splits = {"train": cases("train", 3, 24), "validation": cases("validation", 1, 25),
              "test": cases("test", 1, 26)}
    written = write_multinews_hub(tmp_path, splits, kind)

    examples, problems = split_read("multinews", [tmp_path])
    one_file, _ = split_read("multinews", [written[1]])

    assert problems == []
    assert sorted(e.split for e in examples) == ["dev", "test", "train", "train", "train"]
    got = next(e for e in examples if e.split == "train" and e.id.endswith(":1"))
    assert got.documents == text_of(splits["train"][1])
    assert got.summary == summary_of(splits["train"][1])
    assert [e.split for e in one_file] == ["dev"]


def test_multinews_malformed_lines_are_problems_and_the_next_reads(tmp_path):
    rows = [multinews_row(c) for c in cases("train", 3, 27)]
    lines = [json.dumps(rows[0]), '{"document": "cut', json.dumps({"summary": "x"}),
             json.dumps({"document": "doc |||||", "summary": "– "}), "", json.dumps(rows[1]),
             json.dumps([1, 2])]
    path = tmp_path / "train.jsonl"
    path.write_bytes(("\n".join(lines) + "\n").encode() + b"\xff\xfe\n"
                     + (json.dumps(rows[2]) + "\n").encode())

    examples, problems = split_read("multinews", [path])

    assert [e.id for e in examples] == ["train.jsonl:0", "train.jsonl:4", "train.jsonl:7"]
    assert [(p.record, p.reason) for p in problems] == [
        (1, ds.MALFORMED_JSON), (2, ds.MISSING_FIELD), (3, ds.EMPTY_SUMMARY),
        (5, ds.WRONG_TYPE), (6, ds.BAD_ENCODING)]


def peak_reading(path: Path) -> tuple[int, int]:
    """(examples read, peak bytes allocated while reading them all)."""
    tracemalloc.start()
    try:
        count = sum(isinstance(x, ds.SourceExample) for x in ds.read("multinews", [str(path)]))
        return count, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_multinews_jsonl_streams_in_bounded_memory(tmp_path):
    rows = [multinews_row(c) for c in cases("train", 200, 28, docs=6, paragraphs=4)]
    small, large = tmp_path / "small" / "train.jsonl", tmp_path / "large" / "train.jsonl"
    for path, copies in ((small, 1), (large, 10)):
        path.parent.mkdir()
        path.write_text("".join(json.dumps(row) + "\n" for _ in range(copies) for row in rows))
    # One-time costs out of the measure: imports, compiled patterns, CPython's free lists.
    peak_reading(large)

    small_count, small_peak = peak_reading(small)
    count, peak = peak_reading(large)

    size = large.stat().st_size
    assert (small_count, count) == (200, 2000) and size > 4_000_000
    assert peak < size / 20, f"peak {peak} bytes reading a {size}-byte file"
    assert peak < 2 * small_peak, f"peak {peak} reading 10 times the {small_peak} of 200 rows"


# -- generic JSON Lines ----------------------------------------------------------------------


def test_generic_jsonl(tmp_path):
    splits = {"train": cases("train", 2, 29), "dev": cases("dev", 1, 30)}
    write_generic(tmp_path, splits)
    with (tmp_path / "train.jsonl").open("a") as f:
        f.write(json.dumps({"id": "x", "documents": "not a list", "summary": "s"}) + "\n")
        f.write(json.dumps(dict(generic_row(splits["train"][0], 9), split="test")) + "\n")

    examples, problems = split_read("jsonl", [tmp_path])

    assert [(e.split, e.id, e.title) for e in examples] == [
        ("dev", "dev-0", splits["dev"][0].title), ("train", "train-0", splits["train"][0].title),
        ("train", "train-1", splits["train"][1].title), ("test", "train-9",
                                                         splits["train"][0].title)]
    assert examples[1].documents == text_of(splits["train"][0])
    assert [(p.record, p.reason) for p in problems] == [(2, ds.WRONG_TYPE)]


def test_detect(tmp_path, sp):
    write_hiersumm(tmp_path / "h", {"train": [hiersumm_record(cases("train", 1, 31)[0], sp)]}, 1)
    write_primera(tmp_path / "p", {"train": cases("train", 1, 32)})
    write_wikicatsum_hub(tmp_path / "w", {"train": cases("train", 1, 33)}, "company")
    write_wikicatsum_release(tmp_path / "wr", {"train": cases("train", 1, 34)})
    write_multinews_hub(tmp_path / "m", {"train": cases("train", 1, 35)}, "parquet")
    write_multinews_release(tmp_path / "mr", {"train": cases("train", 1, 36)})
    write_generic(tmp_path / "g", {"train": cases("train", 1, 37)})
    write_graphsum(tmp_path / "gs", {"train": [graphsum_record(cases("train", 1, 38)[0], sp)]},
                   1)
    assert {name: ds.detect([str(tmp_path / name)]) for name in
            ("h", "p", "w", "wr", "m", "mr", "g", "gs")} == {
        "h": "hiersumm", "p": "primera", "w": "wikicatsum", "wr": "wikicatsum",
        "m": "multinews", "mr": "multinews", "g": "jsonl", "gs": "graphsum"}


# -- writers ---------------------------------------------------------------------------------


def test_hiersumm_writer_lays_out_what_hiersumm_reads_and_reads_back(tmp_path, sp):
    sources = [("train", c) for c in cases("train", 5, 40)]
    sources += [("dev", c) for c in cases("dev", 2, 41)]
    sources.append(("test", cases("test", 1, 42, docs=15, paragraphs=3)[0]))  # 45 paragraphs
    outs = [out_example(c, split, i) for i, (split, c) in enumerate(sources)]
    outs.append(ds.OutExample("train", "empty", "t", (), (), None, "A summary.", None))

    report = ds.write("hiersumm", outs, str(tmp_path), sp=sp, shard_size=2)

    assert sorted(os.listdir(tmp_path)) == ["WIKI.test.0.pt", "WIKI.train.0.pt",
                                            "WIKI.train.1.pt", "WIKI.train.2.pt",
                                            "WIKI.valid.0.pt"]
    assert report.written == {"train": 5, "dev": 2, "test": 1}
    assert report.dropped == (("empty", ds.NO_PARAGRAPHS),)
    # As hiersumm's load_dataset globs the shards and its preprocess reads them
    # (src/abstractive/data_loader.py), each record as the independent writer builds it.
    pts = sorted(glob.glob(str(tmp_path / "WIKI") + ".train.[0-9]*.pt"))
    written = [r for pt in pts for r in torch.load(pt, weights_only=True)]
    assert written == [hiersumm_record(c, sp) for split, c in sources if split == "train"]
    bos, eos, eop = (sp.piece_to_id(p) for p in ("<S>", "</S>", "<P>"))
    ex = written[0]
    assert ex["tgt"][0] == bos and ex["tgt"][-1] == eos
    flat = sum([p + [eop] for p in ex["src"]], [])[:-1]
    assert flat.count(eop) == len(ex["src"]) - 1
    test_record = torch.load(tmp_path / "WIKI.test.0.pt", weights_only=True)[0]
    assert len(test_record["src"]) == 40

    examples, problems = split_read("hiersumm", [tmp_path], sp=sp)

    assert problems == []
    back = {(e.split, e.summary): e for e in examples}
    for split, case in sources:
        got = back[(split, summary_of(case))]
        record = hiersumm_record(case, sp)
        assert got.paragraph_ids == tuple(tuple(p) for p in record["src"])
        assert got.summary_ids == tuple(record["tgt"][1:-1])


def test_hiersumm_writer_refuses_a_vocabulary_without_its_pieces(tmp_path):
    from wikisum.core import vocab

    texts = [summary_of(c) for c in cases("train", 60, 43)]
    vocab.train_vocab(texts, str(tmp_path / "ours.model"), size=120)
    ours = vocab.load(str(tmp_path / "ours.model"))
    outs = [out_example(cases("train", 1, 44)[0], "train", 0)]
    with pytest.raises(ValueError, match="<S> </S> <PAD> <T> <P> <Q>"):
        ds.write("hiersumm", outs, str(tmp_path / "out"), sp=ours)
    with pytest.raises(ValueError, match="sentencepiece"):
        ds.write("hiersumm", outs, str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_primera_writer_round_trip(tmp_path):
    outs = [out_example(c, "train", i) for i, c in enumerate(cases("train", 3, 45))]
    outs += [out_example(c, "dev", i) for i, c in enumerate(cases("dev", 1, 46))]
    outs += [out_example(c, "test", i) for i, c in enumerate(cases("test", 2, 47))]

    report = ds.write("primera", outs, str(tmp_path))

    assert sorted(os.listdir(tmp_path)) == ["test.pt", "train.pt", "valid.pt"]
    assert report.written == {"train": 3, "dev": 1, "test": 2}
    entry = torch.load(tmp_path / "train.pt", weights_only=True)[0]  # as PRIMERA loads it
    # PRIMERA is a multi-document model: its `text` is the source documents
    assert entry == {"text": list(outs[0].documents), "tgt": outs[0].summary}
    examples, problems = split_read("primera", [tmp_path])
    assert problems == []
    assert sorted((e.split, e.documents, e.summary) for e in examples) == sorted(
        (o.split, o.documents, o.summary) for o in outs)


def test_multinews_writer_round_trip(tmp_path):
    outs = [out_example(c, "train", i) for i, c in enumerate(cases("train", 3, 48))]
    outs += [out_example(c, "dev", i) for i, c in enumerate(cases("dev", 2, 49))]
    outs.append(ds.OutExample("test", "no-summary", "", ("A document.",), (), None, " ", None))

    report = ds.write("multinews", outs, str(tmp_path))

    assert sorted(os.listdir(tmp_path)) == ["train.jsonl", "validation.jsonl"]
    assert report.dropped_counts() == {ds.EMPTY_SUMMARY: 1}
    row = json.loads((tmp_path / "train.jsonl").read_text().splitlines()[0])
    assert set(row) == {"document", "summary"}
    assert row["summary"] == "– " + outs[0].summary
    # PRIMERA's reading keeps every document (script/dataloader.py: split("|||||")[:-1]).
    assert [" ".join(d.split()) for d in row["document"].split("|||||")[:-1]] == [
        " ".join(d.split()) for d in outs[0].documents]
    examples, problems = split_read("multinews", [tmp_path])
    assert problems == []
    assert sorted((e.split, e.documents, e.summary) for e in examples) == sorted(
        (o.split, o.documents, o.summary) for o in outs[:-1])


def test_jsonl_writer_round_trip(tmp_path):
    outs = [out_example(c, s, i) for s, n, seed in (("train", 3, 50), ("dev", 1, 51),
                                                    ("test", 1, 52))
            for i, c in enumerate(cases(s, n, seed))]

    ds.write("jsonl", outs, str(tmp_path))

    assert sorted(os.listdir(tmp_path)) == ["dev.jsonl", "test.jsonl", "train.jsonl"]
    examples, problems = split_read("jsonl", [tmp_path])
    assert problems == []
    assert sorted((e.split, e.id, e.title, e.documents, e.summary) for e in examples) == sorted(
        (o.split, o.id, o.title, o.documents, o.summary) for o in outs)


def test_a_failed_write_leaves_no_file_and_a_written_folder_is_not_mixed(tmp_path, sp):
    good = [out_example(c, "train", i) for i, c in enumerate(cases("train", 4, 53))]

    def failing():
        yield from good
        raise RuntimeError("the source broke")

    with pytest.raises(RuntimeError, match="the source broke"):
        ds.write("hiersumm", failing(), str(tmp_path / "h"), sp=sp, shard_size=1)
    assert not (tmp_path / "h").exists() or os.listdir(tmp_path / "h") == []
    with pytest.raises(ValueError, match="split 'validation-x'"):
        ds.write("jsonl", [*good[:2], out_example(cases("train", 1, 54)[0], "validation-x", 0)],
                 str(tmp_path / "j"))
    assert not (tmp_path / "j").exists() or os.listdir(tmp_path / "j") == []

    ds.write("hiersumm", good, str(tmp_path / "h"), sp=sp, shard_size=3)
    with pytest.raises(FileExistsError, match="WIKI"):
        ds.write("hiersumm", good, str(tmp_path / "h"), sp=sp)
