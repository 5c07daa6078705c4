"""Two commands on one output: the second stops at once naming the first (its command and
process), and a lock that a killed command leaves is recognised as stale and taken over.

Each case runs the command in a child that stops at its first write into the output (after it
took the lock, before any work: an audit hook waits there), then the same command in this
process, then kills the child with SIGKILL and runs the command again."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from clirun import run_cli
from humaneval_files import write_preds

from wikisum.core import outputlocks

# The child: runs ``wikisum ARGV``; at its first write under ``OUT`` (any file but the lock)
# it creates ``READY`` and waits, as a slow command would, until it is killed.
PAUSE_AT_FIRST_WRITE = """
import os, sys, time
out, ready = os.path.realpath({out!r}), {ready!r}
paused = []

def hook(event, args):
    if paused or event not in ("open", "os.rename", "os.replace"):
        return
    path = args[0]
    if event == "open":
        mode, flags = args[1], args[2]
        writes = (mode and any(c in mode for c in "wax+")) or (
            mode is None and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        if not writes:
            return
    if not isinstance(path, (str, bytes)):
        return
    path = os.path.realpath(os.fsdecode(path))
    if not (path == out or path.startswith(out + os.sep) or path.startswith(out + ".")):
        return
    if path.endswith(".wikisum.lock") or path.endswith(".wikisum-lock"):
        return
    paused.append(path)
    open(ready, "w").close()
    while True:
        time.sleep(0.05)

sys.addaudithook(hook)
from wikisum.workflows import cli
sys.exit(cli.main({argv!r}))
"""


def start_paused(argv: list[str], out: Path, tmp_path: Path) -> subprocess.Popen:
    """The child running ``argv``, once it waits at its first write into ``out``."""
    ready = tmp_path / "ready"
    code = textwrap.dedent(PAUSE_AT_FIRST_WRITE.format(out=str(out), ready=str(ready),
                                                       argv=argv))
    (tmp_path / "tmp").mkdir(exist_ok=True)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    deadline = time.monotonic() + 120
    while not ready.exists():
        if child.poll() is not None:
            raise AssertionError(f"the child ended before writing: {child.communicate()}")
        assert time.monotonic() < deadline, "the child never wrote into its output"
        time.sleep(0.05)
    ready.unlink()
    return child


def kill(child: subprocess.Popen) -> str:
    """Kill the child (SIGKILL); what it wrote on stderr."""
    child.kill()
    return child.communicate(timeout=60)[1]


# -- the commands: (name, argv builder(fixtures, out) -> argv, output kind) -----------------


def import_argv(f, out):
    source = f["tmp"] / "train.jsonl"
    if not source.exists():
        rng = random.Random(0)
        words = "the river town market bridge school wrote built old new north long".split()

        def sentence():
            return " ".join(rng.choice(words) for _ in range(9)).capitalize() + "."

        rows = [{"id": f"r{i}", "title": f"Title {i}",
                 "documents": ["\n".join(" ".join(sentence() for _ in range(3))
                                         for _ in range(3)) for _ in range(2)],
                 "summary": " ".join(sentence() for _ in range(2))} for i in range(12)]
        source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return ["import", "jsonl", str(source), "--out", str(out), "--vocab-size", "60"]


def humaneval_argv(f, out):
    preds = write_preds(f["tmp"] / "preds", ("alpha", "beta"), n=4)
    argv = ["human-eval", "make"]
    for name, path in preds.items():
        argv += ["--preds", f"{name}={path}"]
    return argv + ["--out", str(out)]


COMMANDS = [
    ("build", lambda f, out: ["build", "--wiki", str(f["dump"]), "--warc", str(f["warc"]),
                              "--out", str(out), "--vocab-size", "3000"], "dir"),
    ("ingest", lambda f, out: ["ingest", "--wiki", str(f["dump"]), "--warc", str(f["warc"]),
                               "--out", str(out)], "dir"),
    ("rank", lambda f, out: ["rank", "--data", str(f["built"] / "ingest"), "--vocab",
                             str(f["built"] / "vocab.model"), "--out", str(out)], "dir"),
    ("import", import_argv, "dir"),
    ("train", lambda f, out: ["train", "--model", "t-dmca", "--data", str(f["built"] / "data"),
                              "--out", str(out), "--preset", "tiny", "--steps", "1",
                              "--max-input-tokens", "64", "--device", "cpu"], "dir"),
    ("decode", lambda f, out: ["decode", "--run", str(f["run"]), "--split", "test",
                               "--out", str(out), "--max-len", "4"], "file"),
    ("export", lambda f, out: ["export", "--run", str(f["run"]), "--out", str(out)], "dir"),
    ("human-eval make", humaneval_argv, "dir"),
]


@pytest.fixture
def inputs(sample_corpus, built_sample, sample_run, tmp_path) -> dict:
    sample, _ = sample_corpus
    return {"dump": sample / "enwiki-sample-pages-articles.xml.bz2",
            "warc": sample / "warc" / "*.warc.gz", "built": built_sample[0], "run": sample_run,
            "tmp": tmp_path}


@pytest.mark.parametrize("name, argv_of, kind", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_second_command_on_the_same_output_stops_naming_the_first(name, argv_of, kind,
                                                                     inputs, tmp_path, capsys):
    out = tmp_path / ("preds.jsonl" if kind == "file" else "out")
    argv = argv_of(inputs, out)
    first = start_paused(argv, out, tmp_path)
    try:
        status, _, err = run_cli(argv, capsys)
    finally:
        kill(first)
    assert status == 1
    assert err.strip().splitlines()[-1] == (
        f"wikisum {name.split()[0]}: --out {out} is being written by `wikisum "
        f"{name.split()[0]}` "
        f"(pid {first.pid} on {os.uname().nodename}, since "
        f"{json_started(err)}); wait for it to finish, or give another --out")


def json_started(err: str) -> str:
    return err.rsplit("since ", 1)[1].split(")", 1)[0]


# Those run to their end after the takeover here; the others' reruns are the kill tests'.
RUN_TO_THE_END = ("import", "decode", "export", "human-eval make")


@pytest.mark.parametrize("name, argv_of, kind", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_the_lock_of_a_killed_command_is_stale_and_taken_over(name, argv_of, kind, inputs,
                                                              tmp_path):
    out = tmp_path / ("preds.jsonl" if kind == "file" else "out")
    argv = argv_of(inputs, out)
    first = start_paused(argv, out, tmp_path)
    kill(first)
    lock = Path(outputlocks.lock_path(str(out), kind))
    assert json.loads(lock.read_text())["pid"] == first.pid  # left behind, held by no one
    stale = (f"was being written by `wikisum {name.split()[0]}` (pid {first.pid} on "
             f"{os.uname().nodename}, since ")
    if name not in RUN_TO_THE_END:
        err = kill(start_paused(argv, out, tmp_path))  # took the lock and went on to write
        assert stale in err and "which stopped before it finished (its lock is stale)" in err
        return
    done = subprocess.run([sys.executable, "-m", "wikisum.workflows.cli", *argv],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    assert done.returncode == 0, done.stderr
    assert stale in done.stderr
    assert not lock.exists()  # removed when the rerun finished


def test_a_lock_held_by_a_live_process_is_never_taken_over(tmp_path):
    out = str(tmp_path / "out")
    held = outputlocks.acquire(out, "dir", "rank")
    try:
        with pytest.raises(outputlocks.Busy, match=rf"pid {os.getpid()} on "):
            outputlocks.acquire(out, "dir", "rank")
    finally:
        outputlocks.release(held)
    again = outputlocks.acquire(out, "dir", "rank")
    assert again.stale is None  # released cleanly: nothing stale to report
    outputlocks.release(again)
    assert os.listdir(out) == []


def test_a_lock_file_that_is_a_link_is_never_followed(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    mine = tmp_path / "mine.txt"
    mine.write_text("my notes")
    (out / outputlocks.LOCK).symlink_to(mine)
    with pytest.raises(outputlocks.Busy, match="cannot open its lock file"):
        outputlocks.acquire(str(out), "dir", "rank")
    assert mine.read_text() == "my notes"


def test_a_failed_command_leaves_no_lock_and_no_directory(tmp_path, capsys):
    out = tmp_path / "data"
    status, _, err = run_cli(["rank", "--data", str(tmp_path / "missing"), "--vocab",
                              str(tmp_path / "v.model"), "--out", str(out)], capsys)
    assert status != 0
    assert not out.exists()
