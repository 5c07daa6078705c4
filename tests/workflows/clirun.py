"""Running a command in the test's process as a shell would see it."""

from __future__ import annotations

from wikisum.workflows import cli


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``wikisum ARGV`` run in this process, as the shell
    would see them: ``SystemExit("message")`` prints the message on stderr and exits 1. Any
    other exception escapes (the test fails with its traceback)."""
    try:
        status = cli.main(argv)
    except SystemExit as exc:
        status = exc.code
    captured = capsys.readouterr()
    err = captured.err
    if isinstance(status, str):
        err, status = err + status + "\n", 1
    return status or 0, captured.out, err
