"""A job killed part-way (kill -9) never looks finished: killed while it writes, it leaves the
earlier output whole (its files are staged out of sight); killed while it commits, its completion
record is gone, and every reader refuses the output with the command to rerun."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wikisum.core import loader
from wikisum.workflows import cli

# Runs a command in a child process in which ``TARGET`` (a function, or a DoFn's process) kills
# the process (SIGKILL, as the kernel or a preempted machine would) on its N-th call.
KILL_AFTER = """
import os, signal, sys
import {module} as where
from wikisum.workflows import cli

owner = getattr(where, {owner!r}) if {owner!r} else where
original = getattr(owner, {name!r})
calls = [0]

def killing(*args, **kwargs):
    if calls[0] == {after}:
        os.kill(os.getpid(), signal.SIGKILL)
    calls[0] += 1
    return original(*args, **kwargs)

setattr(owner, {name!r}, killing)
sys.exit(cli.main({argv!r}))
"""
WRITING = ("wikisum.pipeline.beamio.writes", "_WriteShard", "process")  # a shard being staged
COMMITTING = ("wikisum.pipeline.beamio.committing", "", "publish")  # a staged file renamed


def killed(target: tuple[str, str, str], after: int, argv: list[str], tmp_path: Path) -> int:
    """The child's exit status. A killed process removes nothing: what it had in the temporary
    folder (Beam's, the progress display's) stays in ``tmp_path / "tmp"``, its TMPDIR."""
    module, owner, name = target
    code = textwrap.dedent(KILL_AFTER.format(module=module, owner=owner, name=name, after=after,
                                             argv=argv))
    (tmp_path / "tmp").mkdir(exist_ok=True)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False,
                          env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    return done.returncode


def ingest_args(sample: Path, out: Path) -> list[str]:
    return ["ingest", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
            "--warc", str(sample / "warc" / "*.warc.gz"), "--out", str(out),
            "--shards", "8"]


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.name.startswith(".wikisum")}  # the claim's time


def refused_by_readers(out: Path, tmp_path: Path) -> None:
    for argv in (["vocab", "--data", str(out), "--out", str(tmp_path / "v.model")],
                 ["rank", "--data", str(out), "--vocab", str(tmp_path / "v.model"),
                  "--out", str(tmp_path / "data")]):
        with pytest.raises(SystemExit, match=f"rerun `wikisum ingest --out {out}`"):
            cli.main(argv)


def test_a_rerun_killed_while_writing_leaves_the_earlier_output_whole(sample_corpus, tmp_path):
    sample, _ = sample_corpus
    out = tmp_path / "ingest"
    assert cli.main(ingest_args(sample, out)) == 0  # a finished run first, then a killed rerun
    before = snapshot(out)
    assert killed(WRITING, 3, ingest_args(sample, out), tmp_path) == -9
    after = {name: data for name, data in snapshot(out).items() if not name.startswith(".")}
    assert after == before  # nothing of the killed run is visible; staged files are hidden
    assert cli.main(["vocab", "--data", str(out), "--out", str(tmp_path / "v.model"),
                     "--vocab-size", "500"]) == 0


def test_a_first_run_killed_while_writing_leaves_nothing_a_reader_takes(sample_corpus,
                                                                        tmp_path):
    sample, _ = sample_corpus
    out = tmp_path / "ingest"
    assert killed(WRITING, 3, ingest_args(sample, out), tmp_path) == -9
    assert not (out / "summary.json").exists() and not (out / "articles").exists()
    refused_by_readers(out, tmp_path)


def test_a_run_killed_in_its_commit_is_refused_and_a_rerun_finishes_it(sample_corpus,
                                                                       tmp_path):
    sample, _ = sample_corpus
    out = tmp_path / "ingest"
    assert cli.main(ingest_args(sample, out)) == 0
    assert killed(COMMITTING, 3, ingest_args(sample, out), tmp_path) == -9
    assert not (out / "summary.json").exists()  # removed first, written last
    refused_by_readers(out, tmp_path)
    assert cli.main(ingest_args(sample, out)) == 0
    assert (out / "summary.json").exists()
    assert len(list((out / "articles").glob("*.parquet"))) == 8


def test_killed_rank_leaves_no_dataset_json_and_training_refuses_it(built_sample, tmp_path):
    built, _ = built_sample
    out = tmp_path / "data"
    argv = ["rank", "--data", str(built / "ingest"), "--vocab", str(built / "vocab.model"),
            "--out", str(out), "--shards", "2"]
    shutil.copytree(built / "data", out)  # a finished rank in --out, then a killed rerun
    assert killed(COMMITTING, 3, argv, tmp_path) == -9
    assert not (out / "dataset.json").exists()
    with pytest.raises(FileNotFoundError, match="dataset.json"):
        loader.Dataset(str(out))
    with pytest.raises(SystemExit, match="dataset.json"):
        cli.main(["train", "--model", "t-dmca", "--preset", "tiny", "--data", str(out),
                  "--out", str(tmp_path / "run"), "--steps", "1", "--device", "cpu"])


def test_a_missing_shard_under_a_completion_record_is_refused(built_sample, tmp_path):
    built, _ = built_sample
    data = tmp_path / "data"
    shutil.copytree(built / "data", data)
    shutil.copy(built / "vocab.model", tmp_path / "vocab.model")  # dataset.json: ../vocab.model
    (data / "train-00001-of-00002.parquet").unlink()
    with pytest.raises(SystemExit, match=r"train split is incomplete: 1 of 2 missing \(index 1\)"
                                         r".*rerun `wikisum rank"):
        cli.main(["train", "--model", "t-dmca", "--preset", "tiny", "--data", str(data),
                  "--out", str(tmp_path / "run"), "--steps", "1", "--device", "cpu"])
    ingest = tmp_path / "ingest"
    shutil.copytree(built / "ingest", ingest)
    summary = json.loads((ingest / "summary.json").read_text())
    victim = sorted((ingest / "articles").glob("*.parquet"))[0]
    victim.unlink()
    with pytest.raises(SystemExit, match=f"1 of {summary['shards']['articles']} missing"):
        cli.main(["vocab", "--data", str(ingest), "--out", str(tmp_path / "v.model")])
