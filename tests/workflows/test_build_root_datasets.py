"""The root of a `wikisum build` is a dataset wherever a command reads one (its data/):
:func:`wikisum.core.outputs.dataset_dir`, and each command that takes one."""

from __future__ import annotations

import json
import shutil

import pytest

from wikisum.core import loader, outputs
from wikisum.workflows import cli
from wikisum.workflows import report as report_command


def test_a_dataset_directory_is_itself_and_a_build_root_is_its_data(built_sample):
    build = str(built_sample[0])
    data = str(built_sample[0] / "data")
    assert outputs.dataset_dir(data) == data
    assert outputs.dataset_dir(build) == data
    assert loader.Dataset(build).dir == data
    assert loader.Dataset(build).splits() == ["train", "dev", "test"]


def test_neither_is_an_error_naming_both_and_who_writes_them(tmp_path):
    with pytest.raises(FileNotFoundError) as error:
        outputs.dataset_dir(str(tmp_path))
    message = str(error.value)
    assert f"{tmp_path}/dataset.json not found" in message
    assert f"{tmp_path}/data/dataset.json" in message
    assert all(f"`wikisum {name}`" in message for name in ("rank", "convert-pairs", "build"))
    assert message.startswith(f"{tmp_path} is not a dataset: ")
    with pytest.raises(FileNotFoundError, match="missing does not exist: .*dataset.json not found"):
        loader.Dataset(str(tmp_path / "missing"))


def test_the_commands_that_read_a_dataset():
    """Every --data that names a dataset (vocab and rank read an ingest output); evaluate reads
    predictions only."""
    commands = cli.build_parser()._subparsers._group_actions[0].choices
    with_data = {name for name, parser in commands.items()
                 for action in parser._actions
                 if "--data" in action.option_strings and action.dest == "data"}
    assert with_data == {"report", "exemplars", "train", "decode", "write-as"}


def test_train_records_the_data_directory(built_sample, tmp_path, capsys):
    run = tmp_path / "run"
    assert cli.main(["-q", "train", "--model", "t-dmca", "--data", str(built_sample[0]),
                     "--out", str(run), "--preset", "tiny", "--steps", "1",
                     "--max-input-tokens", "32", "--batch-tokens", "1200", "--device", "cpu",
                     "warmup_steps=1", "eval_every=1", "dev_examples=2"]) == 0
    stored = json.loads((run / "config.json").read_text())["train_config"]["data"]
    assert (run / stored).resolve() == (built_sample[0] / "data").resolve()


def test_train_reads_a_build_root_from_its_config_file(built_sample, tmp_path):
    from wikisum.training.config import make_config

    config = tmp_path / "train.yaml"
    config.write_text(f"model: t-dmca\ndata: {built_sample[0]}\n")
    made = make_config(file=str(config), out=str(tmp_path / "run"))
    assert made.data == str(built_sample[0] / "data")


def test_decode(built_sample, sample_run, tmp_path, capsys):
    preds = tmp_path / "preds.jsonl"
    assert cli.main(["decode", "--run", str(sample_run), "--data", str(built_sample[0]),
                     "--split", "test", "--out", str(preds), "--max-len", "4", "--limit", "1",
                     "--device", "cpu"]) == 0
    record = json.loads((tmp_path / "preds.decode.json").read_text())
    assert record["data"] == str(built_sample[0] / "data") and record["complete"]
    assert len(preds.read_text().splitlines()) == 1


def test_report(built_sample, tmp_path, capsys):
    out = tmp_path / "report"
    assert cli.main(["-q", "report", "--data", str(built_sample[0]), "--out", str(out),
                     "--limit", "4", "--bootstrap", "5"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["data"] == str(built_sample[0] / "data") and metrics["articles"] == 4


def test_report_compare_takes_a_build_root(built_sample):
    assert report_command.resolve_build(str(built_sample[0])) == (
        "data", str(built_sample[0] / "data"))


def test_exemplars(built_sample, tmp_path, capsys):
    build = tmp_path / "build"  # a copy: exemplars writes beside the shards
    shutil.copytree(built_sample[0] / "data", build / "data")
    shutil.copy(built_sample[0] / "vocab.model", build / "vocab.model")
    assert cli.main(["-q", "exemplars", "--data", str(build), "--max-input-tokens", "64"]) == 0
    assert sorted(p.name for p in (build / "data").glob("exemplars-*.parquet")) == [
        "exemplars-dev.parquet", "exemplars-test.parquet", "exemplars-train.parquet"]
    assert not list(build.glob("exemplars-*"))


def test_a_missing_dataset_names_the_option_and_both_paths(tmp_path, capsys):
    missing = tmp_path / "nothing"
    for argv in (["exemplars", "--data", str(missing)],
                 ["train", "--model", "t-dmca", "--data", str(missing), "--out",
                  str(tmp_path / "run")]):
        with pytest.raises(SystemExit) as error:
            cli.main(argv)
        assert str(error.value.code) == (
            f"wikisum {argv[0]}: --data {missing} does not exist: {missing}/dataset.json not "
            "found (`wikisum rank` and `wikisum convert-pairs` write it into their --out), nor "
            f"{missing}/data/dataset.json (`wikisum build` writes it into OUT/data)")
