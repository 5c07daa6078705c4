"""A disk that fills up while a command writes: the command stops with one line naming the
path it could not write and the cause (ENOSPC); nothing it left is taken by the next command
that reads the output; an earlier finished output in --out, on a disk with no room for a second
copy, is kept whole.

Each case runs the command in a child with a mount namespace of its own, where a small tmpfs is
mounted over the output's folder: a disk of a known size, seen by that child only. The children
are forked from one server (killpoints.Commands) started as root of a user namespace of its own
(``unshare -rm``). The same child copies what is on the disk out before it exits (the tmpfs goes
with the namespace), and the test reads that copy. Each command's output written whole on an
ordinary disk is made once a module and shared by both tests."""

from __future__ import annotations

import math
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "formats"))

import killpoints  # noqa: E402
from dataset_files import cases, write_generic  # noqa: E402

from wikisum.workflows import cli  # noqa: E402

UNSHARE = shutil.which("unshare")
pytestmark = pytest.mark.skipif(UNSHARE is None, reason="unshare (util-linux) is not installed: "
                                "the full-disk cases mount a tmpfs in a private namespace")
PAGE = 4096


@dataclass
class Case:
    """A command writing into ``DISK/out``: its command line (``{out}`` stands for the output
    on the small disk), the reader of its output (raises on a refusal, returns when it takes
    the output) and the output's kind."""
    command: str
    argv: Callable[[Path, Path, Path], list]  # (inputs folder, build, run) -> argv with {out}
    read: Callable[[Path, Path, Path], None]  # (output, scratch folder, build)
    file: bool = False  # the output is a file, not a folder


def main(argv: list) -> None:
    status = cli.main([str(a) for a in argv])
    if status:
        raise SystemExit(f"exit status {status}")


def import_argv(root: Path, built: Path, run: Path) -> list:
    src = root / "src"
    if not src.exists():
        write_generic(src, {s: cases(s, n, seed=i)
                            for i, (s, n) in enumerate((("train", 8), ("dev", 2), ("test", 2)))})
    return ["import", "jsonl", src, "--out", "{out}", "--vocab-size", "200", "--shards", "1",
            "--workers", "1"]


CASES = {
    "ingest": Case("ingest", lambda root, built, run: [
        "ingest", "--wiki", root.parent / "sample" / "enwiki-sample-pages-articles.xml.bz2",
        "--warc", root.parent / "sample" / "warc" / "*.warc.gz", "--out", "{out}",
        "--shards", "2"],
        lambda o, s, built: main(["-q", "vocab", "--data", o, "--out", s / "v.model",
                           "--vocab-size", "200", "--max-texts", "300"])),
    "rank": Case("rank", lambda root, built, run: [
        "rank", "--data", built / "ingest", "--vocab", built / "vocab.model", "--out", "{out}",
        "--shards", "1"],
        lambda o, s, built: main(["-q", "write-as", "jsonl", "--data", o, "--out", s / "r",
                           "--extractor", "tfidf"])),
    "import": Case("import", import_argv,
                   lambda o, s, built: main(["-q", "write-as", "jsonl", "--data", o, "--out",
                                      s / "r"])),
    "write-as": Case("write-as", lambda root, built, run: [
        "write-as", "jsonl", "--data", built / "data", "--out", "{out}"],
        lambda o, s, built: main(["-q", "import", "jsonl", o, "--out", s / "r",
                                  "--vocab-size", "100", "--workers", "1"])),
    "export": Case("export", lambda root, built, run: ["export", "--run", run, "--out", "{out}"],
                   lambda o, s, built: main(["-q", "decode", "--run", o, "--data",
                                             built / "data", "--split", "test",
                                      "--limit", "1", "--max-len", "4", "--beam", "1",
                                      "--device", "cpu", "--out", s / "p.jsonl"])),
    "decode": Case("decode", lambda root, built, run: [
        "decode", "--run", run, "--split", "train", "--limit", "20", "--out", "{out}",
        "--max-len", "60", "--min-len", "59", "--beam", "1", "--device", "cpu"],
        lambda o, s, built: main(["-q", "evaluate", "--preds", o, "--bootstrap", "0"]), file=True),
}


def blocks(path: Path) -> int:
    """Bytes ``path`` takes on a tmpfs (each file rounded up to a page), with its folders."""
    if path.is_file():
        return math.ceil(path.stat().st_size / PAGE) * PAGE
    return sum(blocks(p) for p in path.rglob("*") if p.is_file()) + PAGE * (
        1 + sum(1 for p in path.rglob("*") if p.is_dir()))


def visible(out: Path) -> dict[str, bytes]:
    if out.is_file():
        return {out.name: out.read_bytes()}
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and not any(x.startswith(".") for x in p.relative_to(out).parts)}


@pytest.fixture(scope="module")
def commands(tmp_path_factory):
    """The server the commands are forked from (killpoints.Commands), in a user and mount
    namespace of its own, so that each child can mount a disk of its own."""
    server = killpoints.Commands(tmp_path_factory.mktemp("commands"), wrap=(UNSHARE, "-rm"))
    yield server
    server.close()


@pytest.fixture(scope="module")
def whole(built_sample, sample_corpus, sample_run, tmp_path_factory):
    """A case's command line and its output written whole on an ordinary disk, once a module:
    ``whole(name) -> (argv, output)``. Read it, never write into it."""
    folder = tmp_path_factory.mktemp("whole")
    root = folder / "in"
    root.mkdir()
    (folder / "sample").symlink_to(sample_corpus[0])
    done: dict[str, tuple[list, Path]] = {}

    def get(name: str) -> tuple[list, Path]:
        if name not in done:
            case = CASES[name]
            argv = case.argv(root, built_sample[0], sample_run)
            out = folder / name / ("out.jsonl" if case.file else "out")
            main(["-q", *[str(out) if a == "{out}" else a for a in argv]])
            done[name] = (argv, out)
        return done[name]
    return get


def on_small_disk(commands: killpoints.Commands, argv: list, size: int, disk: Path,
                  earlier: Path | None, name: str, back: Path, tmp: Path) -> killpoints.Run:
    """``wikisum ARGV`` with a tmpfs of ``size`` bytes mounted on ``disk`` (``earlier`` copied
    onto it first as ``name``), in a mount namespace of the child's own; what the disk holds
    after is copied to ``back/disk``."""
    return commands.run(argv, [], tmp, disk={"path": disk, "size": size, "earlier": earlier,
                                             "name": name, "back": back})


def check_the_one_line(case: Case, done: killpoints.Run, disk: Path) -> str:
    assert done.returncode not in (0, -9), done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    assert last.startswith(f"wikisum {case.command}:"), done.stderr[-3000:]
    assert "ENOSPC" in last and str(disk) in last, last
    return last


@pytest.mark.parametrize("name", list(CASES))
def test_a_full_disk_is_one_line_and_nothing_partial_is_read(name, built_sample, commands,
                                                            whole, tmp_path):
    case = CASES[name]
    built, _ = built_sample
    argv, output = whole(name)
    scratch = tmp_path / "read"
    (scratch / "whole").mkdir(parents=True)
    (scratch / "left").mkdir()
    case.read(output, scratch / "whole", built)  # the reader takes a whole output
    disk = tmp_path / "disk"
    out = disk / output.name
    # room for wikisum's bookkeeping (the lock, the marker, the record of its files), not for
    # the output
    size = max(PAGE * 6, blocks(output) // 2 // PAGE * PAGE)
    done = on_small_disk(commands, [str(out) if a == "{out}" else a for a in argv], size, disk,
                         None, output.name, tmp_path / "back", tmp_path / "tmp")
    check_the_one_line(case, done, disk)
    left = tmp_path / "back" / "disk" / output.name
    if left.exists():
        with pytest.raises((SystemExit, Exception)) as refused:
            case.read(left, scratch / "left", built)
        assert str(left) in str(refused.value), refused.value


@pytest.mark.parametrize("name", [n for n, c in CASES.items() if not c.file])
def test_a_full_disk_keeps_the_earlier_output_whole(name, built_sample, commands, whole,
                                                    tmp_path):
    case = CASES[name]
    built, _ = built_sample
    argv, output = whole(name)
    before = visible(output)
    disk = tmp_path / "disk"
    out = disk / "out"
    size = blocks(output) + max(PAGE * 2, blocks(output) // 2 // PAGE * PAGE)
    done = on_small_disk(commands, [str(out) if a == "{out}" else a for a in argv], size, disk,
                         output, "out", tmp_path / "back", tmp_path / "tmp")
    check_the_one_line(case, done, disk)
    left = tmp_path / "back" / "disk" / "out"
    assert visible(left) == before
    scratch = tmp_path / "read"
    scratch.mkdir()
    case.read(left, scratch, built)
