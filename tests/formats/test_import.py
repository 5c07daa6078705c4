"""`wikisum import` and `wikisum write-as`: each format, written exactly as its system writes it
(dataset_files.py cites the reading code), becomes a dataset that train, decode and report
read unchanged; and a dataset written out and imported again gives the same examples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from dataset_files import (
    cases,
    graphsum_record,
    hiersumm_record,
    train_hiersumm_vocab,
    write_generic,
    write_graphsum,
    write_hiersumm,
    write_multinews_hub,
    write_primera,
    write_wikicatsum_hub,
)

from wikisum.core import shards
from wikisum.core.loader import Dataset
from wikisum.workflows import cli

SPLITS = {"train": 12, "valid": 3, "validation": 3, "dev": 3, "test": 3}


def the_cases(names=("train", "valid", "test")) -> dict:
    return {name: cases(name, SPLITS[name], seed=i) for i, name in enumerate(names)}


@pytest.fixture(scope="module")
def hiersumm_vocab(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("spm") / "spm9998_3.model"
    train_hiersumm_vocab(path)
    return path


def import_(fmt: str, sources: list, out: Path, *extra: str) -> dict:
    assert cli.main(["-q", "import", fmt, *map(str, sources), "--out", str(out),
                     "--vocab-size", "300", "--shards", "1", "--workers", "1", *extra]) == 0
    return json.loads((out / "dataset.json").read_text())


def rows(data: Path, split: str) -> list[dict]:
    return list(Dataset(str(data)).rows(split))


def train_and_decode(data: Path, tmp: Path) -> list[dict]:
    run = tmp / "run"
    assert cli.main(["-q", "train", "--model", "seq2seq", "--data", str(data), "--out", str(run),
                     "--preset", "tiny", "--steps", "5", "--max-input-tokens", "48",
                     "--device", "cpu", "warmup_steps=1", "eval_every=5",
                     "checkpoint_every=5", "dev_examples=2"]) == 0
    preds = tmp / "preds.jsonl"
    assert cli.main(["-q", "decode", "--run", str(run), "--split", "test", "--out", str(preds),
                     "--beam", "2", "--max-len", "8", "--device", "cpu"]) == 0
    return [json.loads(line) for line in preds.read_text().splitlines()]


def report(data: Path, tmp: Path) -> dict:
    assert cli.main(["-q", "report", "--data", str(data), "--out", str(tmp / "report"),
                     "--lengths", "50,100", "--bootstrap", "20"]) == 0
    return json.loads((tmp / "report" / "metrics.json").read_text())


@pytest.mark.parametrize("fmt", ["hiersumm", "graphsum"])
def test_token_id_formats_keep_ids_and_order_and_train(fmt, tmp_path, hiersumm_vocab):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(hiersumm_vocab))
    record, write = ((hiersumm_record, write_hiersumm) if fmt == "hiersumm"
                     else (graphsum_record, write_graphsum))
    records = {split: [record(c, sp) for c in cs] for split, cs in the_cases().items()}
    write(tmp_path / "hs", records, shard_size=5)
    out = tmp_path / "data"
    info = import_(fmt, [tmp_path / "hs"], out, "--source-vocab", str(hiersumm_vocab))
    assert info["rows"] == {"train": 12, "dev": 3, "test": 3}
    assert info["extractors"] == ["given"] and info["corpora"] == ["combined"]
    assert set(info["extractors_unavailable"]) >= {"tfidf", "textrank", "cheating"}
    got = {r["source_id"]: r for r in rows(out, "train")}
    assert len(got) == 12
    first = got[sorted(got)[0]]
    source = records["train"][int(sorted(got)[0].rsplit(":", 1)[1])]
    assert [p["ids"] for p in first["paragraphs"]] == source["src"]  # ids kept
    assert [p["text"] for p in first["paragraphs"]] == [sp.decode(ids) for ids in source["src"]]
    assert first["rankings"][0]["order"] == list(range(len(source["src"])))  # order kept
    assert first["lead_ids"] == source["tgt"][1:-1]  # without <S> and </S>
    extended = spm.SentencePieceProcessor(model_file=str(out / "vocab.model"))
    assert [extended.id_to_piece(i) for i in range(sp.get_piece_size())] == \
        [sp.id_to_piece(i) for i in range(sp.get_piece_size())]  # every id means the same
    preds = train_and_decode(out, tmp_path)
    assert len(preds) == 3
    assert "given" in report(out, tmp_path)["extractors"]


def test_a_pickle_with_code_is_refused_and_runs_nothing(tmp_path, hiersumm_vocab):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    (tmp_path / "hs").mkdir()
    torch.save([{"src": [[1]], "tgt": [1, 2], "tgt_str": "x", "p": Payload()}],
               tmp_path / "hs" / "WIKI.train.0.pt")
    status = None
    with pytest.raises(SystemExit) as exc:
        status = cli.main(["-q", "import", "hiersumm", str(tmp_path / "hs"),
                           "--out", str(tmp_path / "data"), "--source-vocab",
                           str(hiersumm_vocab)])
    assert status is None
    assert "weights_only" in str(exc.value) or "refused" in str(exc.value).lower()
    assert not marker.exists()


@pytest.mark.parametrize("fmt", ["primera", "multinews", "wikicatsum", "jsonl"])
def test_raw_text_formats_rank_train_decode_and_report(fmt, tmp_path):
    src = tmp_path / "src"
    if fmt == "primera":
        write_primera(src, the_cases())
    elif fmt == "multinews":
        write_multinews_hub(src, the_cases(("train", "validation", "test")), "jsonl")
    elif fmt == "wikicatsum":
        write_wikicatsum_hub(src, the_cases(), "animal")
    else:
        write_generic(src, the_cases(("train", "dev", "test")))
    out = tmp_path / "data"
    info = import_(fmt, [src], out)
    assert info["rows"] == {"train": 12, "dev": 3, "test": 3}
    assert info["stages"]["import"]["balanced"]
    assert "tfidf" in info["extractors"] and info["default_inputs"] == "tfidf-combined-500"
    titled = fmt in ("wikicatsum", "jsonl")
    assert (info["imported"]["query"]["frequent-words"] == 0) == titled
    row = rows(out, "train")[0]
    assert {r["extractor"] for r in row["rankings"]} == set(info["extractors"])
    assert len(train_and_decode(out, tmp_path)) == 3
    metrics = report(out, tmp_path)
    assert metrics["corpora"] == ["combined"]


def test_a_bad_record_is_counted_and_the_rest_imported(tmp_path):
    src = tmp_path / "train.jsonl"
    good = {"id": "a", "title": "T", "documents": ["One two three four five."], "summary": "S."}
    src.write_text("\n".join([json.dumps(good), "{not json", json.dumps({**good, "id": "b"}),
                              json.dumps({**good, "id": "c", "summary": ""})]) + "\n")
    out = tmp_path / "data"
    info = import_("jsonl", [src], out, "--vocab-size", "40")
    stage = info["stages"]["import"]
    assert (stage["in"], stage["kept"]) == (4, 2)
    assert sum(stage["dropped"].values()) == 2 and stage["balanced"]
    problems = list(shards.iter_rows(shards.match(str(out / "import_problems" / "*.parquet"))))
    assert len(problems) == 2 and {p["stage"] for p in problems} == {"import"}


@pytest.mark.parametrize("fmt", ["jsonl", "multinews", "primera", "hiersumm"])
def test_write_as_then_import_gives_the_same_examples(fmt, built_sample, tmp_path):
    data = built_sample[0] / "data"
    out = tmp_path / fmt
    assert cli.main(["-q", "write-as", fmt, "--data", str(data), "--out", str(out)]) == 0
    extra = ["--source-vocab", str(out / "spm.model")] if fmt == "hiersumm" else []
    back = tmp_path / "back"
    import_(fmt, [out], back, *extra)
    original = {s: rows(data, s) for s in ("train", "dev", "test")}
    again = {s: rows(back, s) for s in ("train", "dev", "test")}
    for split in original:
        assert len(again[split]) == len(original[split])
        if fmt == "hiersumm":  # the top 40 tf-idf paragraphs' ids, in their order
            def top(r):
                order = [o for o in r["rankings"] if o["extractor"] == "tfidf"
                         and o["corpus"] == "combined"][0]["order"][:40]
                return tuple(tuple(r["paragraphs"][i]["ids"]) for i in order)

            assert sorted(tuple(tuple(p["ids"]) for p in r["paragraphs"])
                          for r in again[split]) == sorted(top(r) for r in original[split])
            continue
        # jsonl keeps a summary as written; the others' loaders read it one paragraph a line
        lead = (lambda t: t) if fmt == "jsonl" else (lambda t: "\n".join(
            line for line in t.split("\n") if line.strip()))
        want = sorted((lead(r["lead"]), tuple(p["text"] for p in r["paragraphs"]))
                      for r in original[split])
        got = sorted((lead(r["lead"]), tuple(p["text"] for p in r["paragraphs"]))
                     for r in again[split])
        assert got == want, (fmt, split)
        if fmt == "jsonl":
            assert sorted(r["title"] for r in again[split]) == \
                sorted(r["title"] for r in original[split])


def test_ranking_processes_give_the_rows_one_process_gives(tmp_path):
    src = tmp_path / "src"
    write_generic(src, the_cases(("train", "dev", "test")))
    one = import_("jsonl", [src], tmp_path / "one")
    two_dir = tmp_path / "two"
    assert cli.main(["-q", "import", "jsonl", str(src), "--out", str(two_dir), "--vocab-size",
                     "300", "--shards", "1", "--workers", "2"]) == 0
    two = json.loads((two_dir / "dataset.json").read_text())
    assert two["rows"] == one["rows"]
    for split in ("train", "dev", "test"):
        assert rows(two_dir, split) == rows(tmp_path / "one", split)
