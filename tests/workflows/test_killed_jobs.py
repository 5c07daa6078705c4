"""A job killed part-way (kill -9) never looks finished: its completion record is gone, and
every reader refuses the partial output with the command to rerun."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wikisum.pipeline import loader
from wikisum.workflows import cli

# Runs a command in a child process whose DoFn ``KLASS`` kills the process (SIGKILL, as the
# kernel or a preempted machine would) when it is about to write its N-th shard.
KILL_AFTER = """
import os, signal, sys
from wikisum.pipeline import {module} as job
from wikisum.workflows import cli

original = job.{klass}.process
written = [0]

def process(self, item):
    if written[0] == {after}:
        os.kill(os.getpid(), signal.SIGKILL)
    written[0] += 1
    yield from original(self, item)

job.{klass}.process = process
sys.exit(cli.main({argv!r}))
"""


def killed(module: str, klass: str, after: int, argv: list[str]) -> int:
    code = textwrap.dedent(KILL_AFTER.format(module=module, klass=klass, after=after, argv=argv))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)
    return done.returncode


def ingest_args(sample: Path, out: Path) -> list[str]:
    return ["ingest", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
            "--warc", str(sample / "warc" / "*.warc.gz"), "--out", str(out),
            "--num-shards", "8"]


def test_killed_ingest_leaves_no_summary_and_readers_refuse_it(sample_corpus, tmp_path, capsys):
    sample, _ = sample_corpus
    out = tmp_path / "ingest"
    assert cli.main(ingest_args(sample, out)) == 0  # a finished run first, then a killed rerun
    assert (out / "summary.json").exists()
    assert killed("ingest", "WriteShard", 3, ingest_args(sample, out)) == -9
    assert not (out / "summary.json").exists()
    assert len(list((out / "articles").glob("*.parquet"))) < 8
    for argv in (["vocab", "--in", str(out), "--out", str(tmp_path / "v.model")],
                 ["rank", "--in", str(out), "--vocab", str(tmp_path / "v.model"),
                  "--out", str(tmp_path / "data")]):
        with pytest.raises(SystemExit, match=f"rerun `wikisum ingest --out {out}`"):
            cli.main(argv)


def test_killed_rank_leaves_no_dataset_json_and_training_refuses_it(built_sample, tmp_path):
    built, _ = built_sample
    out = tmp_path / "data"
    argv = ["rank", "--in", str(built / "ingest"), "--vocab", str(built / "vocab.model"),
            "--out", str(out), "--rank-shards", "2"]
    shutil.copytree(built / "data", out)  # a finished rank in --out, then a killed rerun
    assert killed("rank", "WriteSplitShard", 3, argv) == -9
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
        cli.main(["vocab", "--in", str(ingest), "--out", str(tmp_path / "v.model")])
