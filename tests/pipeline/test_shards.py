"""Shard I/O: atomic writes, and the check that a set of shards is whole."""

from __future__ import annotations

import pyarrow as pa
import pytest

from wikisum.core import shards, vocab
from wikisum.core.shards import IncompleteOutput, complete_set


def touch(folder, *names):
    for name in names:
        (folder / name).write_bytes(b"x")


def test_a_whole_set_is_returned_sorted(tmp_path):
    touch(tmp_path, "a-00001-of-00002.parquet", "a-00000-of-00002.parquet")
    assert [p.rsplit("/", 1)[1] for p in complete_set(str(tmp_path / "a-*.parquet"), 2, "A",
                                                       "rerun X")] == [
        "a-00000-of-00002.parquet", "a-00001-of-00002.parquet"]


@pytest.mark.parametrize("names,expected,message", [
    ([], None, "A: no shard matches"),
    (["a-00000-of-00003.parquet", "a-00002-of-00003.parquet"], None,
     r"A is incomplete: 1 of 3 missing \(index 1\); rerun X"),
    (["a-00000-of-00002.parquet", "a-00000-of-00003.parquet"], None,
     "shards of 2 different runs"),
    (["a-00000-of-00001.parquet"], 4, "1 shards where the job recorded 4; rerun X"),
    (["a-0.parquet"], None, "is not named NAME-NNNNN-of-NNNNN"),
])
def test_partial_sets_are_refused_with_the_command_to_rerun(tmp_path, names, expected, message):
    touch(tmp_path, *names)
    with pytest.raises(IncompleteOutput, match=message):
        complete_set(str(tmp_path / "a-*.parquet"), expected, "A", "rerun X")


def test_writes_replace_whole_files_and_leave_no_temporary(tmp_path):
    path = str(tmp_path / "f.json")
    shards.write_text(path, "old")
    shards.write_text(path, "new")
    assert shards.read_text(path) == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.json"]
    assert shards.temporary_name(path).rsplit("/", 1)[1].startswith(".f.json.")


def test_a_truncated_shard_is_named(tmp_path):
    path = str(tmp_path / "a-00000-of-00001.parquet")
    shards.write_table(path, [{"x": 1}] * 50, pa.schema([("x", pa.int64())]))
    data = (tmp_path / "a-00000-of-00001.parquet").read_bytes()
    (tmp_path / "a-00000-of-00001.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(shards.CorruptShard, match=f"{path} is not a readable Parquet file"):
        list(shards.iter_rows([path]))
    with pytest.raises(shards.CorruptShard, match=path):
        shards.row_count(path)


def test_a_truncated_vocabulary_is_named(tmp_path):
    model = tmp_path / "v.model"
    vocab.train_vocab([f"word{i} text{i % 7} more words here" for i in range(300)], str(model),
                      60)
    model.write_bytes(model.read_bytes()[:300])
    with pytest.raises(ValueError, match=f"{model} is not a readable sentencepiece model"):
        vocab.load(str(model))
