"""A command killed (SIGKILL) at its K-th write: the kill points of a command are the writes it
makes under its output paths, as Python's audit events see them (a file opened to write, append
or create, a rename, a removal). A child process runs ``wikisum ARGV`` in-process (Beam jobs on
the local runner, in the same process) with an audit hook that counts those events and kills
the process at the K-th: deterministic kill points, no sleeps and no timing.

:func:`count` runs the command whole and returns how many kill points it has (and its exit
status); :func:`kill_at` runs it and kills it at one of them. Writes that a library makes from
C (pyarrow's, sentencepiece's, safetensors') are not seen, but the opens and renames around
them are, which is where a half-written output could be left.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

CHILD = """
import os, signal, sys

ROOTS = tuple(os.path.abspath(r) for r in {roots!r})
KILL_AT = {kill_at!r}
LOG = {log!r}
seen = [0]
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
PATH_EVENTS = ("os.rename", "os.remove", "os.rmdir", "shutil.rmtree", "os.truncate",
               "shutil.move", "os.link", "os.symlink")


def inside(path):
    if isinstance(path, int):
        return False
    path = os.path.abspath(os.fsdecode(path))
    return any(path == root or path.startswith(root + os.sep) for root in ROOTS)


def hook(event, args):
    if event == "open":
        path, mode, flags = args
        writes = (flags & WRITE_FLAGS) if mode is None else any(c in mode for c in "wax+")
        if not writes or not inside(path):
            return
    elif event in PATH_EVENTS:
        if not inside(args[0]) and not (event in ("os.rename", "shutil.move", "os.link")
                                        and inside(args[1])):
            return
    else:
        return
    seen[0] += 1
    if LOG:
        os.write(2, ("KILLPOINT " + str(seen[0]) + " " + event + " " +
                     repr(tuple(args)[:2]) + "\\n").encode())
    if seen[0] == KILL_AT:
        os.kill(os.getpid(), signal.SIGKILL)


sys.addaudithook(hook)
from wikisum.workflows import cli

try:
    status = cli.main({argv!r})
except SystemExit as exc:
    status = exc.code
os.write(2, ("\\nKILLPOINTS " + str(seen[0]) + "\\n").encode())
sys.stderr.flush()
sys.exit(status if isinstance(status, int) else (0 if status is None else (print(status,
         file=sys.stderr) or 1)))
"""


@dataclass(frozen=True)
class Run:
    returncode: int
    stdout: str
    stderr: str

    @property
    def killed(self) -> bool:
        return self.returncode == -9

    @property
    def points(self) -> int:
        """The kill points the run passed (those of a whole run when it was not killed)."""
        found = re.findall(r"^KILLPOINTS (\d+)$", self.stderr, re.MULTILINE)
        return int(found[-1]) if found else 0

    @property
    def events(self) -> dict[int, str]:
        """Kill point -> its event and the path it names (a run with ``log=True``)."""
        return {int(m.group(1)): m.group(2) for m in
                re.finditer(r"^KILLPOINT (\d+) (.*)$", self.stderr, re.MULTILINE)}


def run(argv: list[str], roots: list[Path], tmp: Path, kill_at: int = 0, log: bool = False,
        timeout: float = 300) -> Run:
    """``wikisum ARGV`` in a child, with its temporary folder (TMPDIR) in ``tmp`` (a killed
    process removes nothing, so what it left there stays in the test's folder)."""
    tmp.mkdir(parents=True, exist_ok=True)
    code = textwrap.dedent(CHILD.format(roots=[str(r) for r in roots], kill_at=kill_at,
                                        log=log, argv=[str(a) for a in argv]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=timeout, check=False, env={**os.environ, "TMPDIR": str(tmp)})
    return Run(done.returncode, done.stdout, done.stderr)


def count(argv: list[str], roots: list[Path], tmp: Path) -> Run:
    """A whole run, counting its kill points (and logging each, :attr:`Run.events`)."""
    return run(argv, roots, tmp, log=True)


# The files wikisum keeps about an output (core.ownership: its marker, the record of its files,
# the lock, and their temporary names): kill points of their own, swept apart.
BOOKKEEPING = re.compile(r"[/\\]\.{1,2}wikisum(\.lock|-files\.json)?(\.\w+\.tmp)?'")


def work_points(counted: Run) -> list[int]:
    """The kill points of a run that write its output, less wikisum's bookkeeping of it."""
    return [k for k, event in sorted(counted.events.items()) if not BOOKKEEPING.search(event)]


def claim_points(counted: Run) -> list[int]:
    """The kill points of a run that write wikisum's bookkeeping of its output."""
    return [k for k, event in sorted(counted.events.items()) if BOOKKEEPING.search(event)]


def kill_at(argv: list[str], roots: list[Path], tmp: Path, point: int) -> Run:
    """A run killed at its ``point``-th write (1-based)."""
    return run(argv, roots, tmp, kill_at=point)


def sweep_points(points: list[int], most: int = 4) -> list[int]:
    """At most ``most`` of ``points``, spread over them: the first, the last and some
    between."""
    if len(points) <= most:
        return list(points)
    step = (len(points) - 1) / (most - 1)
    return sorted({points[round(i * step)] for i in range(most)})
