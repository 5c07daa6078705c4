"""What a local Beam job prints: at the default verbosity its progress and its result, no log
line (a line per shard written is a detail: ``-v``), at no verbosity Beam's own records (type
hints converted, the runner picked, Prism fetched); and a local run reaches for no network (no
Prism download): a job with no --runner runs on the explicit local runner."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from netguard import guarded_env, write_guard

STAGED = re.compile(r"^INFO:wikisum\.beam:(articles|dead_letters)-\d{5}-of-\d{5}\.parquet: "
                    r"\d+ rows staged in [\d.]+ s$", re.M)


@pytest.fixture(scope="module")
def guard(tmp_path_factory) -> Path:
    return write_guard(tmp_path_factory.mktemp("guard"))


def run_ingest(sample: Path, out: Path, guard: Path, *extra: str) -> tuple[str, str]:
    """``wikisum ingest`` of the sample in a child process that may not use the network:
    (what it printed, stdout and stderr together; the network use it attempted)."""
    log = out.parent / f"{out.name}-network.log"
    argv = ["ingest", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
            "--warc", str(sample / "warc" / "*.warc.gz"),
            "--wet", str(sample / "wet" / "*.warc.wet.gz"),
            "--search-results", str(sample / "search_results.jsonl"),
            "--out", str(out), "--shards", "3", *extra]
    done = subprocess.run([sys.executable, "-m", "wikisum.workflows.cli", *argv],
                          cwd=out.parent, env=guarded_env(guard, log, out.parent),
                          capture_output=True, text=True, timeout=300, check=False)
    printed = done.stdout + done.stderr
    assert done.returncode == 0, printed[-4000:]
    assert (out / "summary.json").is_file()
    return printed, log.read_text() if log.exists() else ""


def beam_chatter(printed: str) -> list[str]:
    """Lines of Beam's own records, or about its Prism runner."""
    return [line for line in printed.splitlines()
            if ":apache_beam" in line or ":root:" in line or "prism" in line.lower()
            or "Converting string literal" in line]


def test_a_job_at_the_default_verbosity_prints_no_log_line(sample_corpus, tmp_path, guard):
    printed, network = run_ingest(sample_corpus[0], tmp_path / "out", guard)
    assert network == "", f"a local run reached for the network:\n{network}"
    assert "ingest finished:" in printed and re.search(r"^ingest: 6 files in", printed, re.M)
    assert not STAGED.search(printed), printed
    assert [line for line in printed.splitlines()
            if line.startswith(("INFO:", "DEBUG:"))] == [], printed
    assert beam_chatter(printed) == [], printed


def test_verbose_shows_every_shard_and_still_no_beam_chatter(sample_corpus, tmp_path, guard):
    printed, network = run_ingest(sample_corpus[0], tmp_path / "out", guard, "-v")
    assert network == ""
    # three article shards, two dead-letter shards
    assert len(STAGED.findall(printed)) == 5, printed
    assert beam_chatter(printed) == [], printed
