"""Nothing a user owns is deleted or overwritten, by any command (pipeline.ownership through
cli.guarded_run): a property over every command and every output it names."""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
from pathlib import Path

import commandlines
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikisum.core import ownership
from wikisum.workflows import cli


def command_line(name: str, out: str, inputs: str) -> list[str]:
    """The least command line of ``name`` (commandlines.command_line) writing to ``out``, its
    inputs under ``inputs`` (the check of outputs comes before any input is read, so the inputs
    need not exist)."""

    def value(action, word):
        if action.dest == "out":
            return out
        if commandlines.is_input(action):
            return commandlines.path_value(action, word, f"{inputs}/{action.dest}")
        return word

    return commandlines.command_line(name, value)


def test_every_command_declares_its_outputs():
    for module in cli.COMMANDS:
        assert callable(getattr(module, "outputs", None)), \
            f"{module.__name__} has no outputs(args): the list of what the command writes"


def parse(argv: list[str]):
    args, _ = cli.build_parser().parse_known_args(argv)
    return args


def declared(name: str, argv: list[str]) -> list[ownership.Output]:
    """What ``argv`` of the command ``name`` ("human-eval make": human-eval's) declares it
    writes."""
    return cli.command_module(name.split()[0]).outputs(parse(argv))


def cases() -> list[tuple[str, int]]:
    """(command, index of an output it declares) for every output of every command."""
    found = []
    for name in commandlines.runnable():
        outputs = declared(name, command_line(name, "/o/x.json", "/i"))
        found.extend((name, i) for i in range(len(outputs)))
    return found


def test_every_out_option_is_declared():
    """Each command with an --out declares it as an output (so the property covers it)."""
    parsers = commandlines.parsers()
    for name in commandlines.runnable():
        options = {s for a in parsers[name]._actions for s in a.option_strings}
        outputs = declared(name, command_line(name, "/o/x.json", "/i"))
        if "--out" in options:
            assert "--out" in {o.option for o in outputs}, name


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
    """The command line with its output under ``root``, and the output (path, kind) at
    ``index``."""
    argv = command_line(name, str(root / "out.x"), str(root / "in"))
    output = declared(name, argv)[index]
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
        command = name.split()[0]  # a subcommand's errors name the command
        assert lines[0].startswith(f"wikisum {command}: {output.option} "), lines[0]
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
