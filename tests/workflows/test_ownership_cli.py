"""Nothing a user owns is deleted or overwritten, by any command (pipeline.ownership through
cli.guarded_run): a property over every command and every output it names."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikisum.core import ownership
from wikisum.workflows import cli

# One command line per command; OUT stands for the output under test, IN for inputs (the check
# of outputs comes before any input is read, so the inputs need not exist).
ARGV = {
    "sample": ["sample", "--out", "OUT"],
    "search-index": ["search-index", "--warc", "IN/x.warc.gz", "--out", "OUT"],
    "search": ["search", "--index", "IN/index", "--titles", "IN/titles.txt", "--out", "OUT"],
    "ingest": ["ingest", "--wiki", "IN/dump.xml.bz2", "--out", "OUT"],
    "cc-plan": ["cc-plan", "--t2t-metadata", "IN/x.warc.wet.gz.metadata.json", "--out", "OUT"],
    "cc-fetch": ["cc-fetch", "--urls", "IN/urls.txt", "--crawl", "CC-MAIN-2017-13",
                 "--out", "OUT"],
    "crawl": ["crawl", "--urls", "IN/urls.txt", "--out", "OUT"],
    "vocab": ["vocab", "--data", "IN/ingest", "--out", "OUT"],
    "rank": ["rank", "--data", "IN/ingest", "--vocab", "IN/vocab.model", "--out", "OUT"],
    "build": ["build", "--wiki", "IN/dump.xml.bz2", "--out", "OUT"],
    "report": ["report", "--data", "IN/data", "--out", "OUT"],
    "import": ["import", "jsonl", "IN/train.jsonl", "--out", "OUT"],
    "write-as": ["write-as", "jsonl", "--data", "IN/data", "--out", "OUT"],
    "convert-pairs": ["convert-pairs", "--source", "IN/s.txt", "--target", "IN/t.txt",
                      "--split", "train", "--out", "OUT"],
    "exemplars": ["exemplars", "--data", "IN/data"],
    "train": ["train", "--model", "t-dmca", "--data", "IN/data", "--out", "OUT"],
    "decode": ["decode", "--run", "IN/run", "--out", "OUT"],
    "export": ["export", "--run", "IN/run", "--out", "OUT"],
    "evaluate": ["evaluate", "--preds", "IN/preds.jsonl", "--out", "OUT"],
    "human-eval": ["human-eval", "make", "--preds", "a=IN/a.jsonl", "--preds", "b=IN/b.jsonl",
                   "--out", "OUT"],
    "demo": ["demo", "--out", "OUT"],
}


def command_names() -> list[str]:
    parser = cli.build_parser()
    return list(parser._subparsers._group_actions[0].choices)


def test_every_command_has_a_line_and_declares_its_outputs():
    assert sorted(ARGV) == sorted(command_names())
    for module in cli.COMMANDS:
        assert callable(getattr(module, "outputs", None)), module.__name__


def parse(argv: list[str]):
    args, _ = cli.build_parser().parse_known_args(argv)
    return args


def cases() -> list[tuple[str, int]]:
    """(command, index of an output it declares) for every output of every command."""
    found = []
    for name, argv in ARGV.items():
        outputs = cli.command_module(name).outputs(parse([a.replace("OUT", "/o/x.json")
                                                          for a in argv]))
        found.extend((name, i) for i in range(len(outputs)))
    return found


def test_every_out_option_is_declared():
    """Each command with an --out declares it as an output (so the property covers it)."""
    for name in command_names():
        command = cli.build_parser()._subparsers._group_actions[0].choices[name]
        options = {s for a in command._actions for s in a.option_strings}
        declared = {o.option for o in cli.command_module(name).outputs(
            parse([a.replace("OUT", "/o/x.json") for a in ARGV[name]]))}
        if "--out" in options:
            assert "--out" in declared, name


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = cli.main(argv) or 0
        except SystemExit as exc:
            if isinstance(exc.code, str):
                print(exc.code, file=err)
                code = 1
            else:
                code = exc.code or 0
    return code, out.getvalue(), err.getvalue()


def target_for(name: str, index: int, root: Path) -> tuple[list[str], str, ownership.Output]:
    """The command line with OUT under ``root``, and the output (path, kind) at ``index``."""
    argv = [a.replace("OUT", str(root / "out.x")).replace("IN/", str(root / "in") + "/")
            for a in ARGV[name]]
    output = cli.command_module(name).outputs(parse(argv))[index]
    return argv, output.path, output


names = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-.", min_size=1, max_size=12
                ).filter(lambda s: s not in (".", "..") and not s.startswith(".wikisum"))


@pytest.mark.parametrize(("name", "index"), cases())
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(user_name=names, data=st.binary(min_size=0, max_size=64),
       as_dir=st.booleans())
def test_user_bytes_survive_every_output(name, index, user_name, data, as_dir):
    """Pointed at a user's file, or at a directory holding one, every output of every command
    is refused with a one-line message naming the option, and the user's bytes are unchanged."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        argv, path, output = target_for(name, index, root)
        target = Path(path)
        if as_dir:
            target.mkdir(parents=True)
            mine = target / user_name
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            mine = target
        mine.write_bytes(data)
        code, _, err = run_cli(argv)
        assert mine.read_bytes() == data
        assert code != 0
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1, err
        assert lines[0].startswith(f"wikisum {name}: {output.option} "), lines[0]
        assert "Traceback" not in err
        if as_dir:
            assert sorted(os.listdir(target)) == [user_name]


def test_a_file_output_replaces_its_own_file_and_refuses_a_changed_one(tmp_path):
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"id": "a", "prediction": "the cat sat",
                                 "reference": "the cat sat down"}) + "\n")
    metrics = tmp_path / "preds.metrics.json"
    assert run_cli(["-q", "evaluate", "--preds", str(preds), "--bootstrap", "0"])[0] == 0
    assert ownership.is_ours_file(str(metrics), "evaluate")
    assert run_cli(["-q", "evaluate", "--preds", str(preds), "--bootstrap", "0"])[0] == 0
    metrics.write_text("my notes\n")  # the user's now
    code, _, err = run_cli(["-q", "evaluate", "--preds", str(preds), "--bootstrap", "0"])
    assert code != 0 and "changed since wikisum wrote it" in err
    assert metrics.read_text() == "my notes\n"


def test_another_commands_file_is_refused(tmp_path):
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"id": "a", "prediction": "x", "reference": "x y"}) + "\n")
    out = tmp_path / "m.json"
    assert run_cli(["-q", "evaluate", "--preds", str(preds), "--out", str(out),
                    "--bootstrap", "0"])[0] == 0
    code, _, err = run_cli(["vocab", "--data", str(tmp_path), "--out", str(out)])
    assert code != 0 and "written by `wikisum evaluate`" in err


def test_a_directory_output_keeps_the_users_files_beside_its_own(tmp_path):
    out = tmp_path / "s"
    assert run_cli(["-q", "sample", "--out", str(out), "--articles", "1"])[0] == 0
    notes = out / "notes.txt"
    notes.write_text("mine")
    assert run_cli(["-q", "sample", "--out", str(out), "--articles", "2"])[0] == 0
    assert notes.read_text() == "mine"
    code, _, err = run_cli(["ingest", "--wiki", str(tmp_path / "x"), "--out", str(out)])
    assert code != 0 and "is the output of `wikisum sample`" in err


def test_a_failed_command_leaves_nothing_that_blocks_the_corrected_one(tmp_path):
    run = tmp_path / "run"
    code, _, _ = run_cli(["-q", "train", "--model", "t-dmca", "--data",
                          str(tmp_path / "missing"), "--out", str(run)])
    assert code != 0
    assert not run.exists()
    out = tmp_path / "m.json"
    code, _, _ = run_cli(["-q", "evaluate", "--preds", str(tmp_path / "missing.jsonl"),
                          "--out", str(out)])
    assert code != 0 and not out.exists()
    assert not (tmp_path / ownership.FILES).exists()
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"id": "a", "prediction": "x", "reference": "x y"}) + "\n")
    assert run_cli(["-q", "evaluate", "--preds", str(preds), "--out", str(out),
                    "--bootstrap", "0"])[0] == 0


def test_a_dry_run_checks_but_writes_no_marker(tmp_path):
    assert cli.is_dry_run(["--runner", "DataflowRunner", "--dry_run", "true"])
    assert cli.is_dry_run(["--dry_run=True"])
    assert not cli.is_dry_run(["--dry_run", "false"]) and not cli.is_dry_run([])
    out = tmp_path / "ingest"
    args = parse(["ingest", "--wiki", "dump.xml.bz2", "--out", str(out)])
    assert cli.guarded_run(args, lambda: 0, dry_run=True) == 0
    assert not out.exists()
    (out / "theirs").mkdir(parents=True)
    with pytest.raises(SystemExit, match="holds files wikisum did not write"):
        cli.guarded_run(args, lambda: 0, dry_run=True)
