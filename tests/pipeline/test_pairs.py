"""`wikisum convert-pairs`: headline pairs -> shards, dataset.json, drops, and the loader."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from builders import convert, sentences, write_pairs

from wikisum.core import loader, schemas, vocab
from wikisum.pipeline import pairs
from wikisum.workflows import cli


def rows(out: Path, split: str) -> list[dict]:
    paths = sorted(out.glob(f"{split}-*.parquet"))
    return [r for p in paths for r in pq.read_table(p).to_pylist()]


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> tuple[Path, Path]:
    """A train split of 40 pairs in 3 shards, then a dev split of 8: (inputs folder, OUT)."""
    folder = tmp_path_factory.mktemp("pairs")
    out = folder / "out"
    train = write_pairs(folder, "train", sentences(40, 0, 8, 20), sentences(40, 1, 3, 6))
    assert convert(*train, "train", out, "--shards", "3", "--vocab-size", "300") == 0
    dev = write_pairs(folder, "dev", sentences(8, 2, 8, 20), sentences(8, 3, 3, 6))
    (folder / "vocab-after-train.model").write_bytes((out / "vocab.model").read_bytes())
    assert convert(*dev, "dev", out) == 0
    return folder, out


# --------------------------------------------------------------------------------------------
# Pure functions


@pytest.mark.parametrize("source,target,reason", [
    ("a b", "c", None), ("", "c", "empty_source"), ("  ", "c", "empty_source"),
    ("a", "", "empty_target"), ("", " ", "empty_both"), (None, "c", "decode_error"),
    ("a", None, "decode_error")])
def test_drop_reason(source, target, reason):
    assert pairs.drop_reason(source, target) == reason


def test_shards_hold_consecutive_lines_and_none_is_left_empty():
    assigned = [pairs.shard_of(i, 10, 3) for i in range(10)]
    assert assigned == sorted(assigned) and set(assigned) == {0, 1, 2}
    assert [pairs.shard_of(i, 2, 4) for i in range(2)] == [0, 2]


@pytest.mark.parametrize("name", ["train-small", "dev/x", ""])
def test_split_names_that_would_collide_in_shard_globs_are_rejected(name):
    with pytest.raises(ValueError, match="split name"):
        pairs.check_split(name)


# --------------------------------------------------------------------------------------------
# The command


def test_shards_dataset_json_and_ids(converted):
    folder, out = converted
    assert sorted(p.name for p in out.glob("train-*.parquet")) == [
        f"train-0000{i}-of-00003.parquet" for i in range(3)]
    schema = pq.read_table(out / "train-00000-of-00003.parquet").schema
    assert schema.equals(schemas.PAIRS, check_metadata=False)
    assert schema.metadata[b"wikisum.table"] == b"pairs"
    info = json.loads((out / "dataset.json").read_text())
    assert info["kind"] == "pairs" and info["rows"] == {"train": 40, "dev": 8}
    assert info["extractors"] == [] and info["corpora"] == []
    assert info["num_shards"] == {"train": 3, "dev": 1}
    assert info["vocab"] == "vocab.model" and info["relative_paths"] is True  # relative to out
    sp = vocab.load(str(out / info["vocab"]))
    assert info["special_ids"] == {"pad": 0, "unk": 1, "bos": 2, "eos": 3, "title_sep": 4,
                                   "sep": 5}
    assert info["vocab_size"] == sp.get_piece_size() <= 300

    train = rows(out, "train")
    sources = (folder / "train.article.txt").read_text().splitlines()
    targets = (folder / "train.title.txt").read_text().splitlines()
    assert [r["id"] for r in train] == list(range(1, 41))  # line numbers, in shard order
    for r in train:
        assert r["split"] == "train"
        assert r["source"] == sources[r["id"] - 1] and r["target"] == targets[r["id"] - 1]
        assert sp.decode(r["source_ids"]) == r["source"]
        assert sp.decode(r["target_ids"]) == r["target"]
        assert vocab.EOS not in sp.id_to_piece(r["target_ids"])


def test_the_trained_vocabulary_is_bpe(converted):
    _, out = converted
    sp = vocab.load(str(out / "vocab.model"))
    # A BPE model scores its pieces by merge order (0, -1, -2, ...); a unigram model by
    # log-probabilities.
    scores = [sp.get_score(i) for i in range(6, sp.get_piece_size())]
    assert scores[:50] == [-float(i) for i in range(50)]


def test_dev_converted_later_reuses_the_vocabulary(converted):
    folder, out = converted
    assert (out / "vocab.model").read_bytes() == (folder / "vocab-after-train.model").read_bytes()
    sp = vocab.load(str(out / "vocab.model"))
    dev_sources = (folder / "dev.article.txt").read_text().splitlines()
    dev = rows(out, "dev")
    assert [r["id"] for r in dev] == list(range(1, 9))
    assert [r["source_ids"] for r in dev] == sp.encode(dev_sources)


def test_loader_round_trip_cuts_inputs_to_l(converted):
    _, out = converted
    data = loader.Dataset(str(out))
    assert data.kind == "pairs"
    stored = {r["id"]: r for r in rows(out, "train")}
    examples = list(data.examples("train", max_input_tokens=5))
    assert [ex.id for ex in examples] == list(range(1, 41))
    for ex in examples:
        assert ex.inputs == stored[ex.id]["source_ids"][:5] and len(ex.inputs) <= 5
        assert ex.targets == stored[ex.id]["target_ids"] and ex.exemplar is None
    assert any(len(stored[i]["source_ids"]) > 5 for i in stored)  # the cut did something
    # The ranked signature works too: extractor and corpus are ignored.
    positional = list(data.examples("train", "tfidf", "combined", 5))
    assert positional == examples
    whole = list(data.examples("dev"))
    assert [ex.inputs for ex in whole] == [r["source_ids"] for r in rows(out, "dev")]


def test_non_train_split_first_without_vocabulary_is_an_error(tmp_path):
    dev = write_pairs(tmp_path, "dev", ["a b"], ["c"])
    with pytest.raises(SystemExit, match="Convert the train split first"):
        convert(*dev, "dev", tmp_path / "out")
    assert not (tmp_path / "out" / "dataset.json").exists()


def test_given_vocabulary_is_used_and_a_different_one_is_refused(converted, tmp_path):
    folder, out = converted
    test = write_pairs(tmp_path, "test", ["the minister said"], ["talks resume"])
    fresh = tmp_path / "fresh"
    assert convert(*test, "test", fresh, "--vocab", str(out / "vocab.model")) == 0
    info = json.loads((fresh / "dataset.json").read_text())
    assert not (fresh / "vocab.model").exists()
    assert info["vocab"] == os.path.relpath(out / "vocab.model", fresh)
    assert loader.Dataset(str(fresh)).info["vocab"] == str(out / "vocab.model")

    other = tmp_path / "other.model"
    vocab.train_vocab(["completely different words here"] * 5, str(other), 40)
    with pytest.raises(SystemExit, match="holds splits \\['test'\\] encoded with"):
        convert(*test, "test2", fresh, "--vocab", str(other))
    assert convert(*test, "test2", fresh) == 0  # the recorded vocabulary
    assert json.loads((fresh / "dataset.json").read_text())["rows"] == {"test": 1, "test2": 1}


def test_mismatched_line_counts_name_both_files_and_write_nothing(tmp_path):
    source, target = write_pairs(tmp_path, "train", ["a b", "c d", "e f"], ["x", "y"])
    with pytest.raises(SystemExit) as exc:
        convert(source, target, "train", tmp_path / "out")
    message = str(exc.value)
    assert source in message and target in message and "3 lines" in message and "2" in message
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def test_empty_and_undecodable_lines_are_counted_and_recorded(tmp_path, capsys):
    sources = sentences(10, 4, 5, 9)
    targets = sentences(10, 5, 2, 4)
    sources[1] = ""  # line 2
    targets[3] = "   "  # line 4
    sources[4], targets[4] = "", ""  # line 5
    source, target = write_pairs(tmp_path, "train", sources, targets)
    raw = Path(source).read_bytes().split(b"\n")
    raw[6] = b"caf\xe9 latin-1"  # line 7
    Path(source).write_bytes(b"\n".join(raw))
    out = tmp_path / "out"
    assert convert(source, target, "train", out, "--vocab-size", "200") == 0
    assert [r["id"] for r in rows(out, "train")] == [1, 3, 6, 8, 9, 10]
    drops = json.loads((out / "drops-train.json").read_text())
    assert drops["lines"] == 10 and drops["rows"] == 6 and drops["balanced"]
    assert drops["dropped"] == {"decode_error": 1, "empty_both": 1, "empty_source": 1,
                                "empty_target": 1}
    assert drops["dropped_lines"] == {"decode_error": [7], "empty_both": [5],
                                      "empty_source": [2], "empty_target": [4]}
    printed = capsys.readouterr().out
    assert "6 rows written of 10 lines, 4 dropped" in printed and "empty_target 1" in printed
    info = json.loads((out / "dataset.json").read_text())
    assert info["rows"] == {"train": 6} and info["sources"]["train"]["dropped"]["empty_both"] == 1


def test_a_last_line_without_newline_counts(tmp_path):
    source, target = tmp_path / "s.txt", tmp_path / "t.txt"
    source.write_text("a b\nc d")
    target.write_text("x\ny\n")
    assert pairs.check_aligned(str(source), str(target)) == 2


def test_pairs_never_go_into_a_ranked_dataset_directory(tmp_path):
    out = tmp_path / "data"
    out.mkdir()
    (out / "dataset.json").write_text(json.dumps({"special_ids": {}, "extractors": ["tfidf"]}))
    (out / ".wikisum").write_text(json.dumps({"command": "rank"}))
    train = write_pairs(tmp_path, "train", ["a b"], ["c"])
    with pytest.raises(SystemExit, match="output of `wikisum rank`"):
        convert(*train, "train", out)


def test_help_names_inputs_outputs_and_defaults(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["convert-pairs", "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "--out" in text and "default: 25000" in text and "drops-{split}.json" in text


@pytest.mark.shared_data
def test_real_gigaword_lines(shared_data, tmp_path):
    gigaword = shared_data / "gigaword"
    if not (gigaword / "train.article.txt").is_file():
        pytest.skip(f"no Gigaword sample in {gigaword}")

    def head(name: str, n: int) -> str:
        with open(gigaword / name, encoding="utf-8") as f:
            lines = [next(f) for _ in range(n)]
        path = tmp_path / name
        path.write_text("".join(lines))
        return str(path)

    out = tmp_path / "out"
    assert convert(head("train.article.txt", 300), head("train.title.txt", 300), "train", out,
                   "--vocab-size", "2000") == 0
    assert convert(head("valid.article.filter.txt", 100), head("valid.title.filter.txt", 100),
                   "dev", out) == 0
    info = json.loads((out / "dataset.json").read_text())
    assert info["rows"] == {"train": 300, "dev": 100}
    sp = vocab.load(loader.Dataset(str(out)).info["vocab"])
    first = next(loader.Dataset(str(out)).examples("train", max_input_tokens=400))
    assert first.id == 1
    assert sp.decode(first.targets) == "australian current account deficit narrows sharply"
    assert sp.decode(first.inputs).startswith("australia 's current account deficit shrunk")


def test_the_unknown_word_marker_is_the_unk_id(converted):
    _, out = converted
    sp = vocab.load(str(out / "vocab.model"))
    ids = pairs.encode(sp, ["the <unk> rose", "<unk>", "no marker"])
    assert ids[0] == sp.encode("the") + [sp.unk_id()] + sp.encode("rose")
    assert ids[1] == [sp.unk_id()]
    assert ids[2] == sp.encode("no marker")
    # the marker is not text the vocabulary learns pieces for
    assert all(p not in ("<", ">", "unk>") for p in
               (sp.id_to_piece(i) for i in range(sp.get_piece_size())))


# A split's shards left in the dataset while dataset.json no longer records the split (a
# convert-pairs run that was rewriting the record was killed): the loader names the rerun. A
# split neither recorded nor on disk is one the dataset does not have.
UNRECORDED = [
    pytest.param("train", True, "IncompleteOutput", "wikisum convert-pairs --split train",
                 id="train-shards-unrecorded"),
    pytest.param("dev", True, "IncompleteOutput", "wikisum convert-pairs --split dev",
                 id="dev-shards-unrecorded"),
    pytest.param("test", False, "FileNotFoundError", "has no 'test' split",
                 id="no-such-split"),
]


@pytest.mark.parametrize("split,shards_there,error,says", UNRECORDED)
def test_a_split_dataset_json_does_not_record_names_the_rerun(converted, tmp_path, split,
                                                              shards_there, error, says):
    import shutil

    _, out = converted
    data = tmp_path / "data"
    shutil.copytree(out, data)
    info = json.loads((data / "dataset.json").read_text())
    info["rows"].pop(split, None)
    (data / "dataset.json").write_text(json.dumps(info))
    assert any(data.glob(f"{split}-*.parquet")) == shards_there
    dataset = loader.Dataset(str(data))
    for read in (lambda: dataset.split_files(split), lambda: next(dataset.rows(split)),
                 lambda: next(dataset.examples(split, max_input_tokens=10))):
        with pytest.raises(Exception) as caught:
            read()
        message = str(caught.value)
        assert type(caught.value).__name__ == error and says in message, message
        assert str(data) in message and "\n" not in message
