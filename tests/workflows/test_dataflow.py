"""Every Beam job builds its Dataflow job offline (``--dry_run true``: built and validated, not
submitted), and the DirectRunner's multi-process mode writes the same bytes as one worker. (The
package that ``--setup_file`` stages is tested in tests/test_packaging.py.)"""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

import netguard
import pytest

from wikisum.workflows import cli

ROOT = Path(__file__).resolve().parents[2]
BUCKET = "gs://wikisum-bucket"
DATAFLOW = ["--runner", "DataflowRunner", "--dry_run", "true", "--project", "wikisum-test",
            "--region", "us-central1", "--temp_location", f"{BUCKET}/tmp",
            "--setup_file", str(ROOT / "setup.py")]


JOBS = {
    "ingest": ["ingest", "--wiki", f"{BUCKET}/dumps/enwiki-*-pages-articles*.xml.bz2",
               "--warc", f"{BUCKET}/cc/*.warc.gz", "--wet", f"{BUCKET}/cc/*.wet.gz",
               "--search-results", f"{BUCKET}/search.jsonl", "--out", f"{BUCKET}/ingest",
               "--shards", "1000"],
    "rank": ["rank", "--data", f"{BUCKET}/ingest", "--vocab", f"{BUCKET}/vocab.model",
             "--out", f"{BUCKET}/data", "--train-learned"],
    "report": ["report", "--data", f"{BUCKET}/data", "--out", f"{BUCKET}/report"],
    "crawl": ["crawl", "--urls", f"{BUCKET}/ingest/missing_urls.txt", "--out",
              f"{BUCKET}/crawl"],
    "build": ["build", "--wiki", f"{BUCKET}/dumps/enwiki.xml.bz2", "--warc",
              f"{BUCKET}/cc/*.warc.gz", "--out", f"{BUCKET}/build"],
    "cc-fetch": ["cc-fetch", "--urls", f"{BUCKET}/ingest/missing_urls.txt", "--source",
                 "columnar", "--columnar-index", f"{BUCKET}/cc-index/crawl=*/*.parquet",
                 "--crawl", "CC-MAIN-2017-13", "--fetch-groups", "64", "--out", f"{BUCKET}/cc"],
    "search-index": ["search-index", "--wet", f"{BUCKET}/cc/*.wet.gz", "--out",
                     f"{BUCKET}/index", "--shards", "64"],
    "search": ["search", "--index", f"{BUCKET}/index", "--wiki",
               f"{BUCKET}/dumps/enwiki.xml.bz2", "--out", f"{BUCKET}/search/results.jsonl"],
    "cc-fetch-api": ["cc-fetch", "--urls", f"{BUCKET}/ingest/missing_urls.txt", "--crawl",
                     "CC-MAIN-2017-13", "--out", f"{BUCKET}/cc"],
}
WRITES = {"ingest": f"{BUCKET}/ingest/articles/articles-00000-of-01000.parquet",
          "rank": f"{BUCKET}/data/dataset.json", "report": f"{BUCKET}/report/report.html",
          "crawl": f"{BUCKET}/crawl/summary.json", "build": f"{BUCKET}/build/data/dataset.json",
          "cc-fetch": f"{BUCKET}/cc/summary.json", "cc-fetch-api": f"{BUCKET}/cc/summary.json",
          "search-index": f"{BUCKET}/index/index.json",
          "search": f"{BUCKET}/search/results.summary.json"}


def dataflow_available() -> bool:
    try:
        import apache_beam.runners.dataflow.internal.apiclient  # noqa: F401
        import google.cloud.storage  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.fixture(scope="module")
def guard(tmp_path_factory) -> Path:
    # Every connection or name lookup to anything but loopback is refused at once and written
    # down, so a job that reaches for the network while it is built fails fast and is named.
    return netguard.write_guard(tmp_path_factory.mktemp("guard"))


@pytest.mark.parametrize("job", sorted(JOBS))
def test_every_beam_job_builds_its_dataflow_job_offline(job, guard, tmp_path):
    assert dataflow_available(), ("the Dataflow runner is not installed: install the test "
                                  "environment with `make setup` (pip install -e '.[dev]')")
    log = tmp_path / "network.log"
    env = netguard.guarded_env(guard, log, tmp_path)
    done = subprocess.run([sys.executable, "-m", "wikisum.workflows.cli", *JOBS[job], *DATAFLOW],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
                          check=False)
    network = log.read_text() if log.exists() else ""
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert network == "", f"the job reached for the network while being built:\n{network}"
    assert "dry run: the DataflowRunner job" in done.stdout and "was built and validated" in \
        done.stdout, done.stdout
    assert f"would write: {WRITES[job]}" in done.stdout, done.stdout


def test_a_dry_run_refuses_a_runner_that_would_run_the_job(capsys):
    with pytest.raises(SystemExit, match="DataflowRunner only"):
        cli.main(JOBS["crawl"] + ["--dry_run", "true"])


# --------------------------------------------------------------------------------------------
# Several worker processes write what one writes


def same_tree(a: Path, b: Path) -> list[str]:
    """Relative paths whose bytes differ, or that only one tree has."""
    # the ownership marker records when a run claimed the folder: not part of the output
    names_a = {p.relative_to(a) for p in a.rglob("*")
               if p.is_file() and not p.name.startswith(".wikisum")}
    names_b = {p.relative_to(b) for p in b.rglob("*")
               if p.is_file() and not p.name.startswith(".wikisum")}
    differ = sorted(str(n) for n in names_a ^ names_b)
    differ += sorted(str(n) for n in names_a & names_b
                     if not filecmp.cmp(a / n, b / n, shallow=False))
    return differ


MULTI = ["--direct_running_mode", "multi_processing", "--direct_num_workers", "2"]


def test_two_worker_processes_write_the_same_bytes_as_one(sample_corpus, tmp_path):
    sample, _ = sample_corpus
    ingest = ["ingest", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
              "--warc", str(sample / "warc" / "*.warc.gz"),
              "--wet", str(sample / "wet" / "*.warc.wet.gz"),
              "--search-results", str(sample / "search_results.jsonl"), "--shards", "3"]
    assert cli.main(ingest + ["--out", str(tmp_path / "one")]) == 0
    assert cli.main(ingest + ["--out", str(tmp_path / "two")] + MULTI) == 0
    one, two = tmp_path / "one", tmp_path / "two"
    summary_one = (one / "summary.json").read_text().replace(str(one), "OUT")
    summary_two = (two / "summary.json").read_text().replace(str(two), "OUT")
    assert summary_one == summary_two
    (one / "summary.json").unlink()
    (two / "summary.json").unlink()
    assert same_tree(one, two) == []
    assert len(list((one / "articles").glob("*.parquet"))) == 3

    vocab = tmp_path / "vocab.model"
    (one / "summary.json").write_text(summary_one.replace("OUT", str(one)))
    assert cli.main(["vocab", "--data", str(one), "--out", str(vocab), "--vocab-size", "1000"]) == 0
    rank = ["rank", "--data", str(one), "--vocab", str(vocab), "--shards", "2"]
    assert cli.main(rank + ["--out", str(tmp_path / "r1")]) == 0
    assert cli.main(rank + ["--out", str(tmp_path / "r2")] + MULTI) == 0
    assert same_tree(tmp_path / "r1", tmp_path / "r2") == []
