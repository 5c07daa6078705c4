"""A build's layout for others: paths in dataset.json relative to it (a build can be moved),
ready model inputs, and the dataset card that Hugging Face ``datasets`` reads."""

from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from builders import convert, sentences, write_pairs

from wikisum.core import card, loader, outputs, schemas, vocab
from wikisum.pipeline import rank, report, report_stats
from wikisum.workflows import cli

SPLITS = ("train", "dev", "test")
HUB = {"dev": "validation"}  # the split names datasets.load_dataset gives


def front_matter(path) -> dict:
    text = path.read_text()
    assert text.startswith("---\n")
    return yaml.safe_load(text.split("---\n", 2)[1])


# --------------------------------------------------------------------------------------------
# Paths relative to the file that holds them


def test_relative_and_resolved_paths():
    assert outputs.relative_path("b/vocab.model", "b/data") == "../vocab.model"
    assert outputs.resolve_path("../vocab.model", "b/data") == "b/vocab.model"
    assert outputs.relative_path("gs://k/b/vocab.model", "gs://k/b/data") == "../vocab.model"
    assert outputs.resolve_path("../vocab.model", "gs://k/b/data") == "gs://k/b/vocab.model"
    # Another filesystem or bucket: kept whole.
    assert outputs.relative_path("gs://other/v.model", "gs://k/b/data") == "gs://other/v.model"
    assert outputs.resolve_path("gs://other/v.model", "b/data") == "gs://other/v.model"
    assert outputs.resolve_path("/abs/v.model", "b/data") == "/abs/v.model"
    assert outputs.relative_path(None, "b/data") is None


def test_dataset_json_paths_are_relative_to_the_dataset(built_sample):
    out, _ = built_sample
    info = json.loads((out / "data" / "dataset.json").read_text())
    assert info["relative_paths"] is True
    assert (info["vocab"], info["source"], info["learned_model"]) == (
        "../vocab.model", "../ingest", "learned.json")


def test_a_moved_build_is_read_from_any_working_directory(built_sample, tmp_path, monkeypatch):
    out, _ = built_sample
    moved = tmp_path / "bucket" / "copy"
    shutil.copytree(out, moved)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    data = loader.Dataset("../bucket/copy/data")  # a relative path, from another directory
    assert data.info["vocab"] == "../bucket/copy/vocab.model"
    assert data.info["source"] == "../bucket/copy/ingest"
    assert data.info["learned_model"] == "../bucket/copy/data/learned.json"
    sp = vocab.load(data.info["vocab"])
    example = next(data.examples("dev", "tfidf", "combined", 64))
    assert sp.decode(example.targets)
    # The readers of dataset.json: the report (vocabulary, ingest output), the trainer.
    assert report.find_vocab("../bucket/copy/data", data.info) == "../bucket/copy/vocab.model"
    assert report_stats.source_shards(data.info)[0].startswith("../bucket/copy/ingest/articles/")
    training = pytest.importorskip("wikisum.training.loop")
    assert training.find_vocab(data) == "../bucket/copy/vocab.model"


def test_old_dataset_json_with_paths_from_the_working_directory(built_sample, tmp_path,
                                                                monkeypatch):
    out, _ = built_sample
    build = tmp_path / "demo" / "build"
    shutil.copytree(out, build)
    info = json.loads((build / "data" / "dataset.json").read_text())
    for key in ("relative_paths", "inputs", "default_inputs"):
        del info[key]
    info.update(vocab="demo/build/vocab.model", source="demo/build/ingest",
                learned_model="demo/build/data/learned.json")
    (build / "data" / "dataset.json").write_text(json.dumps(info))
    monkeypatch.chdir(tmp_path)  # where the job ran: the paths hold as written
    assert loader.Dataset("demo/build/data").info["vocab"] == "demo/build/vocab.model"
    monkeypatch.chdir(build / "data")  # elsewhere: found beside the dataset
    data = loader.Dataset(".")
    assert [os.path.normpath(data.info[k]) for k in ("vocab", "source", "learned_model")] == [
        "../vocab.model", "../ingest", "learned.json"]
    assert next(data.examples("dev", "tfidf", "combined", 8)).inputs
    # Its card has the one config an old build has: the ranked rows.
    names = [c["config_name"] for c in card.configs(data.info)]
    assert names == [card.RANKED_CONFIG]


# --------------------------------------------------------------------------------------------
# Ready model inputs and the dataset card


def test_parse_model_inputs():
    names = ["tfidf", "textrank", "cheating"]
    assert rank.parse_inputs("tfidf-combined", names) == (rank.DEFAULT_INPUT,)
    assert [s.name for s in rank.parse_inputs("textrank-search-1000, tfidf-combined-500",
                                              names)] == ["textrank-search-1000",
                                                          "tfidf-combined-500"]
    assert len(rank.parse_inputs("all", names)) == len(names) * len(rank.CORPORA)
    for bad in ("tfidf", "nope-combined-500", "tfidf-web-500", "tfidf-combined-0", ""):
        with pytest.raises(ValueError):
            rank.parse_inputs(bad, names)


def test_model_inputs_are_the_loaders_inputs(built_sample):
    out, _ = built_sample
    data = loader.Dataset(str(out / "data"))
    entry = data.info["inputs"]["tfidf-combined-500"]
    assert data.info["default_inputs"] == "tfidf-combined-500"
    assert entry["rows"] == data.info["rows"] and entry["path"] == "inputs/tfidf-combined-500"
    sp = vocab.load(data.info["vocab"])
    for split in SPLITS:
        files = sorted((out / "data" / entry["path"]).glob(f"{split}-*.parquet"))
        assert [f.name for f in files] == [f"{split}-0000{i}-of-00002.parquet" for i in range(2)]
        rows = [r for f in files for r in pq.read_table(f).to_pylist()]
        assert pq.read_schema(files[0]).equals(schemas.MODEL_INPUTS, check_metadata=False)
        examples = list(data.examples(split, "tfidf", "combined", 500))
        assert [r["id"] for r in rows] == [e.id for e in examples]
        assert [r["input_ids"] for r in rows] == [e.inputs for e in examples]
        assert [r["target_ids"] for r in rows] == [e.targets for e in examples]
        for r in rows:
            assert r["input"] == sp.decode(r["input_ids"]) and "<t>" in r["input"]
            assert sp.encode(r["target"]) == r["target_ids"]


def test_every_build_has_a_card(built_sample):
    out, _ = built_sample
    info = json.loads((out / "data" / "dataset.json").read_text())
    for folder, prefix in ((out, "data/"), (out / "data", "")):
        meta = front_matter(folder / "README.md")
        assert meta["license"] == "other"
        configs = {c["config_name"]: c for c in meta["configs"]}
        assert list(configs) == ["tfidf-combined-500", "ranked"]
        assert configs["tfidf-combined-500"]["default"] is True
        assert configs["ranked"]["data_files"] == [  # our dev is the hub's validation
            {"split": HUB.get(s, s), "path": f"{prefix}{s}-*.parquet"}
            for s in SPLITS if info["rows"][s]]
        text = (folder / "README.md").read_text()
        for needed in ("CC BY-SA", "copyright stays with the pages' owners", "`input_ids`",
                       f"{info['vocab_size']} pieces", "tfidf"):
            assert needed in text
    assert "`vocab.model`" in (out / "README.md").read_text()
    assert "`../vocab.model`" in (out / "data" / "README.md").read_text()


def test_rank_writes_the_model_inputs_asked_for(built_sample, tmp_path):
    out, _ = built_sample
    assert cli.main(["rank", "--data", str(out / "ingest"), "--vocab", str(out / "vocab.model"),
                     "--out", str(tmp_path / "data"), "--shards", "1",
                     "--model-inputs", "cheating-citations-64,tfidf-combined"]) == 0
    info = json.loads((tmp_path / "data" / "dataset.json").read_text())
    assert list(info["inputs"]) == ["cheating-citations-64", "tfidf-combined-500"]
    assert info["default_inputs"] == "cheating-citations-64"
    rows = pq.read_table(tmp_path / "data" / "inputs" / "cheating-citations-64" /
                         "train-00000-of-00001.parquet").to_pylist()
    assert len(rows) == info["rows"]["train"] and max(len(r["input_ids"]) for r in rows) == 64
    configs = front_matter(tmp_path / "data" / "README.md")["configs"]
    assert [c["config_name"] for c in configs] == [
        "cheating-citations-64", "tfidf-combined-500", "ranked"]
    with pytest.raises(SystemExit, match="learned"):  # no learned model in this run
        cli.main(["rank", "--data", str(out / "ingest"), "--vocab", str(out / "vocab.model"),
                  "--out", str(tmp_path / "other"), "--model-inputs", "learned-combined"])


# --------------------------------------------------------------------------------------------
# Hugging Face datasets


def test_hugging_face_datasets_loads_a_build(built_sample, tmp_path):
    datasets = pytest.importorskip(
        "datasets", reason="Hugging Face datasets is not installed (pip install 'wikisum[hf]')")
    out, _ = built_sample
    build = tmp_path / "build"
    shutil.copytree(out, build)
    # Files the configs do not name are not read: an exemplars file is no split.
    pq.write_table(pa.Table.from_pylist([{"id": 1, "exemplar_id": 2, "similarity": 0.5}],
                                        schema=schemas.EXEMPLARS),
                   build / "data" / "exemplars-train.parquet")
    info = json.loads((build / "data" / "dataset.json").read_text())
    expected = {HUB.get(s, s): n for s, n in info["rows"].items() if n}
    cache = str(tmp_path / "cache")
    for where in (build, build / "data"):
        ready = datasets.load_dataset(str(where), cache_dir=cache)
        assert set(ready) == set(expected) == {"train", "validation", "test"}
        assert {s: ready[s].num_rows for s in ready} == expected
        assert ready["train"].column_names == schemas.MODEL_INPUTS.names
        first = ready["validation"][0]
        assert len(first["input_ids"]) <= 500 and first["target"]
    named = datasets.load_dataset(str(build), "tfidf-combined-500", cache_dir=cache)
    assert named["test"]["id"] == ready["test"]["id"]
    ranked = datasets.load_dataset(str(build), "ranked", cache_dir=cache)
    assert ranked["train"].column_names == schemas.RANKED.names
    assert {s: ranked[s].num_rows for s in ranked} == expected
    row = ranked["validation"][0]
    assert row["split"] == "dev"  # the rows keep our name
    assert loader.build_input(row, "tfidf", "combined", 500, info["special_ids"]["title_sep"]
                              ) == next(r for r in ready["validation"] if r["id"] == row["id"]
                                        )["input_ids"]


def test_hugging_face_datasets_loads_pairs(tmp_path):
    datasets = pytest.importorskip(
        "datasets", reason="Hugging Face datasets is not installed (pip install 'wikisum[hf]')")
    sources, targets = sentences(9, 0, 8, 20), sentences(9, 1, 3, 6)
    out = tmp_path / "pairs"
    assert convert(*write_pairs(tmp_path, "train", sources, targets), "train", out,
                   "--vocab-size", "300") == 0
    assert convert(*write_pairs(tmp_path, "dev", sources[:2], targets[:2]), "dev", out) == 0
    meta = front_matter(out / "README.md")
    assert [c["config_name"] for c in meta["configs"]] == ["default"]
    loaded = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "cache"))
    assert {s: loaded[s].num_rows for s in loaded} == {"train": 9, "validation": 2}
    assert loaded["validation"]["target"] == targets[:2]
