"""Mistakes in a command's inputs are one-line errors naming the option, never tracebacks: every
input path option of every command (found in the parsers) given a path that does not exist,
and every --split given a split the data does not have. A command that fails so leaves nothing
behind that would refuse the corrected command."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from types import SimpleNamespace

import commandlines
import pytest
from clirun import run_cli

from wikisum.generation import decode as decode_command
from wikisum.workflows import cli

MISSING = "no-such-input"


def input_options() -> list[tuple[str, str, int]]:
    """(command, option, position) for every value of every option that names an input path
    (position: which of an option's values, for --compare A B)."""
    found = []
    for command, parser in commandlines.parsers().items():
        for action in parser._actions:
            if not commandlines.is_input(action):
                continue
            # the first value only of an option with any number of them (--answers A B ...)
            values = action.nargs if isinstance(action.nargs, int) else 1
            found += [(command, commandlines.option(action), i) for i in range(values)]
    return found


def split_commands() -> set[str]:
    return {command for command, parser in commandlines.parsers().items()
            if any("--split" in a.option_strings for a in parser._actions)}


@pytest.fixture(scope="module")
def inputs(built_sample, sample_corpus, sample_run, tmp_path_factory) -> SimpleNamespace:
    """A valid input for each input option a command line needs, by the name the command reads
    it as (the option's dest: rank's and vocab's --data is ``ingest_dir``, an ingest output;
    elsewhere ``data``, a dataset): each case makes exactly one input missing."""
    build, _ = built_sample
    sample, _ = sample_corpus
    here = tmp_path_factory.mktemp("inputs")
    (here / "source.txt").write_text("a story\n")
    (here / "target.txt").write_text("a headline\n")
    preds = here / "preds.jsonl"
    preds.write_text(json.dumps({"id": 1, "prediction": "a b", "reference": "a b"}) + "\n")
    metadata = here / "CC-MAIN-x-00000.warc.wet.gz.metadata.json"
    metadata.write_text(json.dumps({"http://a.example/": [3]}))
    titles = here / "titles.txt"
    titles.write_text("Loumbury\n")
    index = here / "index"
    assert cli.main(["search-index", "--wet", str(sample / "wet" / "*.warc.wet.gz"),
                     "--out", str(index), "--shards", "1"]) == 0
    jsonl = here / "train.jsonl"
    jsonl.write_text(json.dumps({"id": "a", "title": "T", "documents": ["One two three."],
                                 "summary": "One."}) + "\n")
    return SimpleNamespace(
        wiki=str(sample / "enwiki-sample-pages-articles.xml.bz2"),
        warc=str(sample / "warc" / "*.warc.gz"), wet=str(sample / "wet" / "*.warc.wet.gz"),
        urls=str(sample / "urls.txt"), titles=str(titles), index=str(index),
        t2t_metadata=str(metadata), ingest_dir=str(build / "ingest"),
        vocab=str(build / "vocab.model"), data=str(build / "data"), sources=str(jsonl),
        source=str(here / "source.txt"), target=str(here / "target.txt"), run=str(sample_run),
        preds=str(preds), answers=str(preds), key=str(preds))


def command_line(command: str, p: SimpleNamespace, out: str) -> list[str]:
    """The least command line of ``command`` (commandlines.command_line), its inputs all
    existing, writing to ``out``."""

    def value(action, word):
        if action.dest == "out":
            return out
        if not commandlines.is_input(action):
            return word
        path = getattr(p, action.dest, None)
        if path is None:
            pytest.fail(f"wikisum {command} needs {commandlines.option(action)} (dest "
                        f"{action.dest}): give inputs() a valid input of that name")
        return commandlines.path_value(action, word, path)

    return commandlines.command_line(command, value)


# --compare A B takes the place of the one input it is the alternative to; the other value is
# a valid one, of that input's kind.
COMPARE = {"report": "--data", "evaluate": "--preds"}


def with_missing(argv: list[str], command: str, option: str, position: int,
                 missing: str) -> list[str]:
    """``argv`` with the ``position``-th value of ``option`` replaced by ``missing`` (the option
    added where ``argv`` lacks it)."""
    if option == "--compare":
        drop = COMPARE[command]
        i = argv.index(drop)
        values = [argv[i + 1]] * 2
        values[position] = missing
        return argv[:i] + argv[i + 2:] + ["--compare", *values]
    action = next(a for a in commandlines.parsers()[command]._actions if option in a.option_strings)
    if option in argv:
        i = argv.index(option)
        return argv[:i + 1] + [commandlines.path_value(action, argv[i + 1], missing)] + argv[i + 2:]
    return argv + [option, commandlines.path_value(action, str(action.metavar), missing)]


# -- every input option, missing --------------------------------------------------------------


def test_the_input_options_found_in_the_parsers():
    """The enumeration below finds every input (a new path option is covered by the test that
    follows only if its metavar is one of commandlines.PATH_METAVARS, so look here when adding
    one)."""
    found = {(command, option) for command, option, _ in input_options()}
    assert found >= {
        ("ingest", "--wiki"), ("ingest", "--warc"), ("ingest", "--wet"),
        ("ingest", "--search-results"), ("cc-fetch", "--urls"), ("cc-fetch", "--columnar-index"),
        ("crawl", "--urls"), ("vocab", "--data"), ("rank", "--data"), ("rank", "--vocab"),
        ("rank", "--learned"), ("build", "--wiki"), ("build", "--learned"), ("report", "--data"),
        ("report", "--compare"), ("convert-pairs", "--source"), ("convert-pairs", "--target"),
        ("convert-pairs", "--vocab"), ("exemplars", "--data"), ("train", "--data"),
        ("train", "--config"), ("decode", "--run"), ("decode", "--data"), ("export", "--run"),
        ("evaluate", "--preds"), ("evaluate", "--compare"), ("human-eval make", "--data"),
        ("human-eval score", "--answers"), ("human-eval score", "--key"),
        ("search-index", "--warc"), ("search-index", "--wet"), ("search-index", "--exclude-sites"),
        ("search", "--index"), ("search", "--titles"), ("search", "--wiki"),
        ("search", "--ingest"), ("search", "--exclude-sites")}
    assert not any(option == "--out" for _, option in found)


@pytest.mark.parametrize("command,option,position", input_options(),
                         ids=[f"{c} {o} {i}" for c, o, i in input_options()])
def test_a_missing_input_is_a_one_line_error_naming_the_option(command, option, position, inputs,
                                                               tmp_path, capsys):
    out = str(tmp_path / "out")
    missing = str(tmp_path / MISSING)
    argv = with_missing(command_line(command, inputs, out), command, option, position, missing)
    status, stdout, stderr = run_cli(argv, capsys)
    assert status != 0
    assert "Traceback" not in stdout + stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith(f"wikisum {command}: ") and option in lines[0], lines[0]
    assert missing in lines[0]
    assert not Path(out).exists()  # checked before any work: nothing was written


# -- unknown splits ---------------------------------------------------------------------------

# convert-pairs' --split names the split it writes: any name is a new split.
SPLIT_WRITERS = {"convert-pairs"}


def test_every_command_that_reads_a_split_is_covered():
    assert split_commands() - SPLIT_WRITERS == {"decode", "report", "write-as"}


def test_write_as_names_the_splits_a_dataset_has(built_sample, tmp_path, capsys):
    status, stdout, stderr = run_cli(["write-as", "jsonl", "--data", str(built_sample[0]),
                                      "--out", str(tmp_path / "w"), "--split", "nosuch"], capsys)
    assert status == 1 and "Traceback" not in stdout + stderr
    assert stderr.strip() == (f"wikisum write-as: --split nosuch: {built_sample[0] / 'data'} "
                              "has no 'nosuch' split; its splits: train, dev, test")
    assert not (tmp_path / "w").exists()


def test_decode_names_the_splits_there_are_and_leaves_nothing_behind(sample_run, tmp_path,
                                                                      capsys):
    preds = tmp_path / "preds.jsonl"
    argv = ["decode", "--run", str(sample_run), "--out", str(preds), "--device", "cpu",
            "--max-len", "4", "--limit", "1"]
    status, stdout, stderr = run_cli(argv + ["--split", "nosuch"], capsys)
    assert status == 1 and "Traceback" not in stdout + stderr
    line = stderr.strip()
    assert "\n" not in line and line.startswith("wikisum decode: --split nosuch: ")
    assert line.endswith("has no 'nosuch' split; its splits: train, dev, test")
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    # the corrected command starts, without --overwrite
    status, _, stderr = run_cli(argv + ["--split", "test"], capsys)
    assert status == 0, stderr
    assert len(preds.read_text().splitlines()) == 1


def test_report_lists_the_splits(built_sample, tmp_path, capsys):
    status, stdout, stderr = run_cli(["report", "--data", str(built_sample[0]), "--out",
                                      str(tmp_path / "r"), "--split", "nosuch"], capsys)
    assert status == 2 and "Traceback" not in stdout + stderr
    assert "--split" in stderr and "nosuch" in stderr
    assert all(f"'{split}'" in stderr for split in ("train", "dev", "test"))


def test_report_names_the_splits_a_dataset_has(built_sample, tmp_path, capsys):
    """A split --split knows that this dataset does not have (none of its articles went there)."""
    data = tmp_path / "data"
    shutil.copytree(built_sample[0] / "data", data)
    for shard in data.glob("dev-*.parquet"):
        shard.unlink()
    info = json.loads((data / "dataset.json").read_text())
    del info["rows"]["dev"]
    (data / "dataset.json").write_text(json.dumps(info))
    status, stdout, stderr = run_cli(["report", "--data", str(data), "--out",
                                      str(tmp_path / "r"), "--split", "dev"], capsys)
    assert status == 1 and "Traceback" not in stdout + stderr
    assert stderr.strip() == (f"wikisum report: --split dev: {data} has no 'dev' split; its "
                              "splits: train, test")
    assert not (tmp_path / "r").exists()


# -- a failed decode leaves nothing that blocks the corrected one ------------------------------


def failing_search(model, batch):
    raise RuntimeError("the search broke")


def test_a_decode_that_fails_before_its_first_prediction_removes_what_it_made(sample_run,
                                                                               tmp_path):
    preds = tmp_path / "preds.jsonl"
    record = decode_command.settings_path(preds)
    options = {"device": "cpu", "max_len": 4, "progress": False}
    with pytest.raises(RuntimeError, match="the search broke"):
        decode_command.decode(str(sample_run), "test", str(preds), limit=2,
                              search=failing_search, **options)
    assert not preds.exists() and not record.exists()
    # One prediction written; a resumed decode that fails keeps it and its record.
    decode_command.decode(str(sample_run), "test", str(preds), limit=1, **options)
    kept = preds.read_text()
    with pytest.raises(RuntimeError, match="the search broke"):
        decode_command.decode(str(sample_run), "test", str(preds), limit=2,
                              search=failing_search, **options)
    assert preds.read_text() == kept and len(kept.splitlines()) == 1
    assert json.loads(record.read_text())["complete"] is False
    result = decode_command.decode(str(sample_run), "test", str(preds), limit=2, **options)
    assert (result["resumed"], result["new"]) == (1, 1)
