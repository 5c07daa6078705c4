"""A command killed (SIGKILL) at its K-th write: the kill points of a command are the writes it
makes under its output paths, as Python's audit events see them (a file opened to write, append
or create, a rename, a removal). Each run is a child process that runs ``wikisum ARGV``
in-process (Beam jobs on the local runner, in the same process) with an audit hook that counts
those events and kills the process at the K-th: deterministic kill points, no sleeps and no
timing.

The children are forked from one server process (:class:`Commands`) that has imported wikisum's
command line and the libraries its commands load (torch, pyarrow, Beam, ...) once, and run
nothing else: no thread is started before a fork, so every child starts as a fresh interpreter
that has only imported those modules would, without paying for the imports.

:meth:`Commands.count` runs a command whole and returns how many kill points it has (and its
exit status); :meth:`Commands.kill_at` runs it and kills it at one of them. Writes that a
library makes from C (pyarrow's, sentencepiece's, safetensors') are not seen, but the opens and
renames around them are, which is where a half-written output could be left.

Run as a script, this file is the server: one JSON request a line on stdin, one JSON answer a
line on its stdout.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Modules the swept commands import on first use: imported by the server once, before any fork.
PRELOAD = ("torch", "pyarrow.parquet", "apache_beam", "matplotlib.pyplot", "sentencepiece",
           "safetensors.torch", "sklearn.feature_extraction.text", "networkx", "rouge_score",
           "wikisum.pipeline.rank", "wikisum.pipeline.report", "wikisum.pipeline.exemplars",
           "wikisum.pipeline.pairs", "wikisum.formats.importing", "wikisum.formats.writers",
           "wikisum.generation.decode", "wikisum.generation.export",
           "wikisum.generation.humaneval", "wikisum.generation.humanscore",
           "wikisum.generation.evaluation", "wikisum.extractors.textrank",
           "wikisum.extractors.tfidf", "wikisum.extractors.sumbasic",
           "wikisum.extractors.cheating", "wikisum.extractors.learned")

WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
PATH_EVENTS = ("os.rename", "os.remove", "os.rmdir", "shutil.rmtree", "os.truncate",
               "shutil.move", "os.link", "os.symlink")
CLONE_NEWNS = 0x00020000


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


class Commands:
    """The server that forks a child per command. ``wrap`` goes before the server's command
    line (``["unshare", "-rm"]``: the children may mount a disk of their own); ``tmp`` is the
    server's temporary folder, and its own output goes to ``tmp/server.log``."""

    def __init__(self, tmp: Path, wrap: tuple[str, ...] = (), preload: tuple[str, ...] = PRELOAD):
        tmp.mkdir(parents=True, exist_ok=True)
        self.tmp = tmp
        self.log = tmp / "server.log"
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [*wrap, sys.executable, __file__, *preload], stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=log, env={**os.environ, "TMPDIR": str(tmp)})
        self.answer("ready")

    def answer(self, key: str, timeout: float = 300) -> dict:
        """The server's next answer line, which holds ``key``."""
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else b""
        if not line:
            self.close()
            raise RuntimeError(f"the command server gave no answer: {self.log.read_text()[-3000:]}")
        answer = json.loads(line)
        assert key in answer, answer
        return answer

    def run(self, argv: list, roots: list[Path], tmp: Path, kill_at: int = 0, log: bool = False,
            timeout: float = 300, disk: dict | None = None) -> Run:
        """``wikisum ARGV`` in a child, with its temporary folder (TMPDIR) in ``tmp`` (a killed
        process removes nothing, so what it left there stays in the test's folder). ``disk``:
        a tmpfs mounted in the child's own mount namespace first (``path``, ``size`` in bytes,
        ``earlier``: a folder copied onto it as ``name``, ``back``: where what the disk holds
        is copied after the command)."""
        tmp.mkdir(parents=True, exist_ok=True)
        out_fd, out = tempfile.mkstemp(dir=tmp, prefix="stdout.")
        err_fd, err = tempfile.mkstemp(dir=tmp, prefix="stderr.")
        os.close(out_fd)
        os.close(err_fd)
        request = {"argv": [str(a) for a in argv], "roots": [str(r) for r in roots],
                   "kill_at": kill_at, "log": log, "tmp": str(tmp), "stdout": out,
                   "stderr": err, "timeout": timeout,
                   "disk": {k: str(v) if isinstance(v, Path) else v for k, v in disk.items()}
                   if disk else None}
        self.process.stdin.write((json.dumps(request) + "\n").encode())
        self.process.stdin.flush()
        done = self.answer("returncode", timeout + 60)
        try:
            if done.get("timed_out"):
                raise subprocess.TimeoutExpired(argv, timeout)
            return Run(done["returncode"], Path(out).read_text(errors="replace"),
                       Path(err).read_text(errors="replace"))
        finally:
            os.unlink(out)
            os.unlink(err)

    def count(self, argv: list, roots: list[Path], tmp: Path) -> Run:
        """A whole run, counting its kill points (and logging each, :attr:`Run.events`)."""
        return self.run(argv, roots, tmp, log=True)

    def kill_at(self, argv: list, roots: list[Path], tmp: Path, point: int) -> Run:
        """A run killed at its ``point``-th write (1-based)."""
        return self.run(argv, roots, tmp, kill_at=point)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.unlink(missing_ok=True)


# The files wikisum keeps about an output (core.ownership: its marker, the record of its files,
# the lock, and their temporary names): kill points of their own, swept apart.
BOOKKEEPING = re.compile(r"[/\\]\.{1,2}wikisum(\.lock|-files\.json)?(\.\w+\.tmp)?'")


def work_points(counted: Run) -> list[int]:
    """The kill points of a run that write its output, less wikisum's bookkeeping of it."""
    return [k for k, event in sorted(counted.events.items()) if not BOOKKEEPING.search(event)]


def claim_points(counted: Run) -> list[int]:
    """The kill points of a run that write wikisum's bookkeeping of its output."""
    return [k for k, event in sorted(counted.events.items()) if BOOKKEEPING.search(event)]


def sweep_points(points: list[int], most: int = 4) -> list[int]:
    """At most ``most`` of ``points``, spread over them: the first, the last and some
    between."""
    if len(points) <= most:
        return list(points)
    step = (len(points) - 1) / (most - 1)
    return sorted({points[round(i * step)] for i in range(most)})


# ------------------------------------------------------------------------------- the server

def serve(preload: list[str]) -> None:
    """Import ``preload``, then fork a child per request line on stdin and answer its exit
    status (negative: the signal that ended it) on the stdout the server started with."""
    import importlib
    import threading

    answers = os.dup(1)
    os.dup2(2, 1)  # what the imports print goes to the log, never into the answers
    for name in preload:
        importlib.import_module(name)
    from wikisum.workflows import cli  # noqa: F401 - imported before the forks
    assert threading.active_count() == 1, f"threads before a fork: {threading.enumerate()}"
    os.write(answers, b'{"ready": true}\n')
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            os.close(answers)
            child(request)
        returncode, timed_out = wait(pid, request["timeout"])
        os.write(answers, (json.dumps({"returncode": returncode, "timed_out": timed_out})
                           + "\n").encode())


def wait(pid: int, timeout: float) -> tuple[int, bool]:
    """The exit status of child ``pid`` (killed after ``timeout`` seconds)."""
    handle = os.pidfd_open(pid)
    try:
        timed_out = not select.select([handle], [], [], timeout)[0]
    finally:
        os.close(handle)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), timed_out


def child(request: dict) -> None:
    """Run one request in this forked child and exit with the command's status."""
    code = 1
    try:
        for fd, path, flags in ((0, os.devnull, os.O_RDONLY),
                                (1, request["stdout"], os.O_WRONLY),
                                (2, request["stderr"], os.O_WRONLY)):
            opened = os.open(path, flags)
            os.dup2(opened, fd)
            os.close(opened)
        os.environ["TMPDIR"] = request["tmp"]
        tempfile.tempdir = request["tmp"]
        disk = request["disk"]
        if disk:
            mount(disk)
        code = command(request)
        if disk:
            subprocess.run(["cp", "-a", disk["path"] + "/.", os.path.join(disk["back"], "disk")],
                           check=True)
    except BaseException:  # noqa: BLE001 - reported as an uncaught exception would be
        import traceback
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def mount(disk: dict) -> None:
    """A tmpfs of ``disk["size"]`` bytes on ``disk["path"]``, in a mount namespace of this
    process's own (the server runs as root of a user namespace of its own: ``unshare -rm``),
    with ``disk["earlier"]`` copied onto it as ``disk["name"]``."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS) != 0:
        raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS)")
    os.makedirs(disk["path"], exist_ok=True)
    os.makedirs(disk["back"], exist_ok=True)
    subprocess.run(["mount", "--make-rprivate", "/"], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={disk['size']}", "tmpfs", disk["path"]],
                   check=True)
    if disk.get("earlier"):
        subprocess.run(["cp", "-a", disk["earlier"], os.path.join(disk["path"], disk["name"])],
                       check=True)


def command(request: dict) -> int:
    """``wikisum ARGV`` with the kill hook installed; the exit status a ``wikisum`` process
    would have (a SystemExit message printed as Python prints it)."""
    roots = tuple(os.path.abspath(r) for r in request["roots"])
    kill_at, log = request["kill_at"], request["log"]
    seen = [0]

    def inside(path) -> bool:
        if isinstance(path, int):
            return False
        path = os.path.abspath(os.fsdecode(path))
        return any(path == root or path.startswith(root + os.sep) for root in roots)

    def hook(event: str, args: tuple) -> None:
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
        if log:
            os.write(2, f"KILLPOINT {seen[0]} {event} {tuple(args)[:2]!r}\n".encode())
        if seen[0] == kill_at:
            os.kill(os.getpid(), signal.SIGKILL)

    if kill_at or log:
        sys.addaudithook(hook)
    from wikisum.workflows import cli
    try:
        status = cli.main(request["argv"])
    except SystemExit as exc:
        status = exc.code
    sys.stdout.flush()
    sys.stderr.flush()
    os.write(2, f"\nKILLPOINTS {seen[0]}\n".encode())
    if status is None or isinstance(status, int):
        return status or 0
    print(status, file=sys.stderr)
    return 1


if __name__ == "__main__":
    serve(sys.argv[1:])
