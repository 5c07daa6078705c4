"""The ``wikisum`` command starts at once: --help, a command's --help and usage errors import
no heavy module and print no third-party warning; --version; --quiet and --verbose."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from wikisum.core import progress
from wikisum.workflows import cli

HEAVY = ("apache_beam", "torch", "trafilatura", "sklearn", "sentencepiece", "pyarrow",
         # the extractors': the registry names them as "module:attribute", imported on use
         "numpy", "scipy", "networkx")

# Every command's --help, the top-level --help, and usage errors, in one fresh interpreter;
# it prints the heavy modules that got imported.
PROBE = """
import contextlib, io, sys
from wikisum.workflows import cli

argvs = [["--help"], ["--version"]] + [[c, "--help"] for c in cli.build_parser()
    ._subparsers._group_actions[0].choices] + [
    ["rank", "--out", "o"], ["ingest", "--wiki", "w", "--out", "o", "--shards", "0"],
    ["crawl", "--urls", "u", "--out", "o", "--max-bytes", "lots"], ["vocab", "--bogus"],
    ["train", "--out", "r", "--device", "bogus"], ["nonsense"]]
for argv in argvs:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            cli.main(argv)
        except SystemExit:
            pass
        else:
            raise AssertionError(f"{argv} ran")
print(",".join(m for m in sys.argv[1:] if m in sys.modules))
"""


def test_help_and_usage_errors_import_no_heavy_module():
    result = subprocess.run([sys.executable, "-c", PROBE, *HEAVY], capture_output=True,
                            text=True, check=True)
    assert result.stdout.strip() == "", f"imported: {result.stdout.strip()}"


@pytest.mark.parametrize("argv", [["--help"], ["rank", "--help"], ["crawl", "--help"]])
def test_help_prints_no_warning(argv):
    result = subprocess.run([sys.executable, "-m", "wikisum.workflows.cli", *argv],
                            capture_output=True, text=True)
    assert result.returncode == 0
    assert result.stderr == ""
    assert "usage: wikisum" in result.stdout


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["--version"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out.strip()
    assert out == f"wikisum {cli.version()}" and out.split()[1][0].isdigit()


@pytest.mark.parametrize("argv,level", [
    (["sample", "--out", "o"], progress.NORMAL),
    (["-q", "sample", "--out", "o"], progress.QUIET),
    (["sample", "--out", "o", "--quiet"], progress.QUIET),
    (["--verbose", "rank", "--data", "i", "--vocab", "v", "--out", "o"], progress.VERBOSE),
    (["rank", "--data", "i", "--vocab", "v", "--out", "o", "-v"], progress.VERBOSE),
    (["-q", "evaluate", "--preds", "p", "-v"], progress.VERBOSE),  # the last one wins
])
def test_quiet_and_verbose_before_or_after_the_command(argv, level):
    args, rest = cli.build_parser().parse_known_args(argv)
    assert args.verbosity == level and rest == []


def test_every_command_takes_quiet_and_verbose():
    parser = cli.build_parser()
    for name, command in parser._subparsers._group_actions[0].choices.items():
        shown = {s for a in command._actions for s in a.option_strings}
        assert {"-q", "--quiet", "-v", "--verbose"} <= shown, name


def test_quiet_silences_status_lines_but_not_results(tmp_path, capsys):
    try:
        argv = ["sample", "--out", str(tmp_path), "--articles", "2"]
        assert cli.main(["-q", *argv]) == 0
        assert progress.verbosity() == progress.QUIET
        progress.say("a status line")
        out = capsys.readouterr().out
        assert "wrote the sample corpus" in out and "a status line" not in out
        assert cli.main(argv) == 0  # each run sets the verbosity anew
        assert progress.verbosity() == progress.NORMAL
    finally:
        progress.set_verbosity(progress.NORMAL)


@pytest.mark.parametrize("level", [progress.QUIET, progress.NORMAL, progress.VERBOSE])
def test_log_records_are_details_and_other_libraries_say_warnings_only(level):
    ours = logging.getLogger("wikisum.beam")  # a line per shard written
    beams = [logging.getLogger(name) for name in (
        "apache_beam.typehints.native_type_compatibility",  # a line per type hint converted
        "apache_beam.runners.direct.direct_runner")]  # the runner picked, Prism fetched
    beams.append(logging.getLogger())  # Beam's "Missing pipeline option (runner)"
    dataflow = logging.getLogger("apache_beam.runners.dataflow.dataflow_runner")
    try:
        progress.set_verbosity(level)
        assert ours.isEnabledFor(logging.INFO) is (level == progress.VERBOSE)
        assert ours.isEnabledFor(logging.WARNING)
        for logger in beams:
            assert not logger.isEnabledFor(logging.INFO), logger.name
            assert logger.isEnabledFor(logging.WARNING), logger.name
        # the submitted Dataflow job and its console page: a detail
        assert dataflow.isEnabledFor(logging.INFO) is (level == progress.VERBOSE)
    finally:
        progress.set_verbosity(progress.NORMAL)
