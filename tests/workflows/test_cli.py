"""The ``wikisum`` command: subcommands, help texts, and the demo."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import types
from pathlib import Path

import pytest

from wikisum import extractors
from wikisum.core import progress
from wikisum.workflows import cli

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / "workflows"


def subcommands() -> list[str]:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return list(action.choices)


def test_each_command_module_adds_its_command_in_pipeline_order():
    """``cli.COMMANDS`` makes the commands: each module adds one, named after the module
    (``convert_pairs`` -> convert-pairs, or its ``COMMAND``), in the order of the list."""
    assert subcommands() == [cli.command_name(module) for module in cli.COMMANDS]


def test_every_command_module_is_listed():
    """A module of workflows/ with ``add_parser`` is a command: it is in ``cli.COMMANDS``."""
    listed = {module.__name__.rsplit(".", 1)[1] for module in cli.COMMANDS}
    for path in sorted(WORKFLOWS.glob("*.py")):
        if "\ndef add_parser(" in path.read_text(encoding="utf-8"):
            assert path.stem in listed, (f"workflows/{path.name} has add_parser but is not in "
                                         "cli.COMMANDS")


def test_the_readme_lists_exactly_the_commands():
    """README's command table has a line for every command, and none for a command that is
    gone (a removed or renamed command is seen here)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("## Commands", 1)[1].split("\n## ", 1)[0]
    shown = {m.group(1) for m in re.finditer(r"^\| `wikisum ([a-z][a-z-]*)", table, re.M)}
    commands = set(subcommands())
    assert not commands - shown, f"commands with no line in README.md: {commands - shown}"
    assert not shown - commands, f"README.md lists commands that are gone: {shown - commands}"


@pytest.mark.parametrize("command", subcommands())
def test_every_help_names_outputs_and_defaults(command, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main([command, "--help"])
    assert exit_.value.code == 0
    text = capsys.readouterr().out
    assert "--out" in text and "default" in text


def test_top_level_help_lists_commands(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert all(c in out for c in subcommands())


@pytest.mark.parametrize("argv", [[], ["-q"], ["--verbose"]])
def test_bare_wikisum_prints_the_help_and_succeeds(argv, capsys):
    assert cli.main(argv) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("usage: wikisum") and captured.err == ""
    assert all(c in captured.out for c in subcommands())


def test_bare_console_script_exits_zero():
    done = subprocess.run([sys.executable, "-m", "wikisum.workflows.cli"], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0 and done.stdout.startswith("usage: wikisum"), done.stderr
    assert done.stderr == ""


def test_a_registered_extractor_is_listed_and_ranked_with_no_other_edit(monkeypatch, capsys):
    """CONTRIBUTING's extractor checklist: an entry in ``extractors.REGISTRY`` is all the
    listing a new extractor needs. `wikisum rank --help` names it, --model-inputs takes it and
    the job ranks with it, read from the registry itself (no copy of the names to keep equal)."""
    from wikisum.core.inputs import InputSpec
    from wikisum.pipeline.rank_config import RankConfig, parse_inputs
    from wikisum.workflows import rank as rank_cmd

    class Probe:  # paragraphs by word count; a name no real extractor has
        name = "probe"

        def rank(self, title, paragraphs, target=None, sources=None):
            return sorted(range(len(paragraphs)), key=lambda i: -len(paragraphs[i].split()))

    module = types.ModuleType("fake_extractors")
    module.Probe = Probe
    monkeypatch.setitem(sys.modules, "fake_extractors", module)
    monkeypatch.setitem(extractors.REGISTRY, "probe", "fake_extractors:Probe")

    with pytest.raises(SystemExit):
        cli.main(["rank", "--help"])
    shown = " ".join(capsys.readouterr().out.split())
    listed = ", ".join(name for name in extractors.NAMES if name != "learned")
    assert listed.endswith(", probe")
    assert f"every extractor ({listed}, and learned when" in shown
    assert "probe" in extractors.NAMES
    assert extractors.get("probe").rank("T", ["a b", "a b c", "a"]) == [1, 0, 2]
    args = cli.build_parser().parse_args(["rank", "--data", "i", "--vocab", "v", "--out", "o",
                                          "--model-inputs", "probe-search-100"])
    config = rank_cmd.with_model_inputs(args, RankConfig("i", "v", "o"))
    assert "probe" in config.extractor_names()
    assert config.inputs == (InputSpec("probe", "search", 100),)
    assert InputSpec("probe", "combined", 500) in parse_inputs("all", config.extractor_names())


@pytest.mark.parametrize("argv,word,close", [
    (["buld"], "buld", "build"),
    (["-q", "rnak", "--data", "d"], "rnak", "rank"),
    (["sampel", "--out", "o"], "sampel", "sample"),
])
def test_a_misspelt_command_is_a_one_line_error_with_the_closest(argv, word, close, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    usage, error = capsys.readouterr().err.strip().splitlines()
    assert usage.startswith("usage: wikisum")
    assert error == (f"wikisum: error: argument COMMAND: invalid choice: {word!r} "
                     f"(did you mean {close}?)")


def test_an_unknown_command_lists_them_all(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["xyzzy"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'xyzzy'" in err and "did you mean" not in err
    assert all(repr(c) in err for c in subcommands())


def test_sample_command_writes_corpus_and_reports(tmp_path, capsys):
    assert cli.main(["sample", "--out", str(tmp_path), "--articles", "4", "--seed", "1"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path) in out and "manifest.json" in out
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["counts"]["articles"] == 4 and manifest["seed"] == 1


def test_sample_rejects_zero_articles(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["sample", "--out", str(tmp_path), "--articles", "0"])
    assert exit_.value.code == 2
    assert "argument --articles: must be at least 1, got 0" in capsys.readouterr().err


def test_demo_runs_and_says_where_outputs_are(tmp_path, capsys):
    assert cli.main(["demo", "--out", str(tmp_path / "demo"), "--articles", "6",
                     "--train-steps", "6"]) == 0
    out = capsys.readouterr().out
    assert str(tmp_path / "demo" / "sample") in out
    assert str(tmp_path / "demo" / "build" / "data") in out
    assert (tmp_path / "demo" / "sample" / "manifest.json").is_file()
    assert json.loads((tmp_path / "demo" / "cc" / "summary.json").read_text())["balanced"]
    summary = json.loads((tmp_path / "demo" / "build" / "ingest" / "summary.json").read_text())
    assert summary["balanced"] and summary["stages"]["pages"]["kept"] == 6
    info = json.loads((tmp_path / "demo" / "build" / "data" / "dataset.json").read_text())
    assert sum(info["rows"].values()) == 6 and "learned" in info["extractors"]
    assert str(tmp_path / "demo" / "report" / "report.html") in out
    metrics = json.loads((tmp_path / "demo" / "report" / "metrics.json").read_text())
    assert metrics["articles"] >= 1
    run = tmp_path / "demo" / "run"
    assert (run / "checkpoints" / "step-6.pt").is_file()
    preds = [json.loads(line) for line in (run / "preds.jsonl").read_text().splitlines()]
    assert preds and all(p["reference"] for p in preds)
    scores = json.loads((run / "preds.metrics.json").read_text())
    assert scores["examples"] == len(preds) and "rouge" in scores
    assert str(run / "preds.jsonl") in out
    # the whole-article model, from the title alone, for half the steps
    articles = tmp_path / "demo" / "article-run"
    assert (articles / "checkpoints" / "step-3.pt").is_file()
    config = json.loads((articles / "config.json").read_text())["train_config"]
    assert (config["target"], config["inputs"]) == ("article", "title")
    preds = [json.loads(line) for line in (articles / "preds.jsonl").read_text().splitlines()]
    assert preds and all(p["reference_sections"] and p["target"] == "article" for p in preds)
    assert "article" in json.loads((articles / "preds.metrics.json").read_text())
    assert (articles / "preds.articles.md").is_file() and str(articles) in out


def test_unknown_option_is_rejected_outside_beam_jobs(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["sample", "--out", str(tmp_path), "--artciles", "3"])
    assert exit_.value.code == 2
    assert "unrecognized option --artciles (did you mean --articles?)" in capsys.readouterr().err


BEAM_JOBS = [
    ["ingest", "--wiki", "w.xml.bz2", "--out", "o"],
    ["rank", "--data", "i", "--vocab", "v.model", "--out", "o"],
    ["report", "--data", "d", "--out", "o"],
    ["crawl", "--urls", "u.txt", "--out", "o"],
    ["build", "--wiki", "w.xml.bz2", "--out", "o"],
]


@pytest.mark.parametrize("argv", BEAM_JOBS, ids=lambda a: a[0])
@pytest.mark.parametrize("extra,message", [
    (["--clone-treshold", "0.9"], "unrecognized option --clone-treshold"),
    (["--num-shardz=3"], "unrecognized option --num-shardz"),
    (["--runnr", "DirectRunner"], "unrecognized option --runnr (did you mean --runner?)"),
    (["--max_num_workerz", "4"], "did you mean --max_num_workers"),
    (["stray.warc.gz"], "unexpected argument 'stray.warc.gz'"),
])
def test_beam_jobs_reject_what_neither_they_nor_beam_know(argv, extra, message, capsys):
    # Before any work: the inputs named here do not exist, and the error is about the option.
    with pytest.raises(SystemExit) as exit_:
        cli.main([*argv, *extra])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and f"wikisum {argv[0]}: error:" in err


@pytest.mark.parametrize("argv", BEAM_JOBS, ids=lambda a: a[0])
def test_beam_options_reach_the_job(argv, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # the job's --out o is claimed (pipeline.ownership): not here
    seen = {}
    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    command = cli.commands(parser)[argv[0]]
    command.set_defaults(func=lambda args, rest: seen.setdefault("rest", rest) and 0)
    beam = ["--runner", "DirectRunner", "--direct_num_workers", "2",
            "--direct_running_mode=multi_processing", "--temp_location", "gs://bucket/tmp",
            "--experiments", "use_runner_v2"]
    cli.main([*argv, *beam])
    assert seen["rest"] == beam


def test_console_script_module_runs():
    done = subprocess.run([sys.executable, "-m", "wikisum.workflows.cli", "--help"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0 and "wikisum" in done.stdout


# --------------------------------------------------------------------------------------------
# --split takes the Hugging Face hub's name of our dev split

SPLIT_COMMANDS = [
    ["report", "--data", "d", "--out", "o"],
    ["write-as", "jsonl", "--data", "d", "--out", "o"],
    ["convert-pairs", "--source", "s", "--target", "t", "--out", "o"],
    ["decode", "--run", "r", "--out", "p.jsonl"],
]


def test_the_commands_with_a_split_option():
    parser = cli.build_parser()
    assert [name for name, command in cli.commands(parser).items()
            if any("--split" in a.option_strings for a in command._actions)] == [
        argv[0] for argv in SPLIT_COMMANDS]


@pytest.mark.parametrize("argv", SPLIT_COMMANDS, ids=lambda a: a[0])
@pytest.mark.parametrize("split,name", [(["--split", "validation"], "dev"),
                                        (["--split=validation"], "dev"),
                                        (["--split", "dev"], "dev"), (["--split", "test"], "test")])
def test_split_validation_is_read_as_dev(argv, split, name):
    args, rest = cli.build_parser().parse_known_args([*argv, *split])
    assert args.split == name and rest == []


@pytest.mark.parametrize("verbose", [False, True])
def test_verbose_notes_the_split_alias(verbose, tmp_path, monkeypatch, capsys):
    seen = {}
    parser = cli.build_parser()
    monkeypatch.setattr(cli, "build_parser", lambda: parser)
    cli.commands(parser)["decode"].set_defaults(
        func=lambda args: seen.setdefault("split", args.split) and 0)
    argv = ["decode", "--run", str(tmp_path / "run"), "--out", str(tmp_path / "p.jsonl"),
            "--split", "validation"]
    try:
        assert cli.main(["-v", *argv] if verbose else argv) == 0
    finally:
        progress.set_verbosity(progress.NORMAL)
    assert seen["split"] == "dev"
    note = "wikisum decode: --split validation is the split dev"
    assert (note in capsys.readouterr().err) is verbose
