"""Progress of the Beam jobs and of `wikisum exemplars`: workers count into the launcher's spool,
the launcher shows the sum against the total it knows, and nothing under --quiet."""

from __future__ import annotations

import gzip
import json
import logging
import os
import pickle
import re

import pytest

from wikisum.core import progress
from wikisum.workflows import cli
from wikisum.workflows.exemplars import SplitProgress


@pytest.fixture
def fast_lines(monkeypatch):
    """A line at every poll, and a poll every 0.05 s."""
    monkeypatch.setattr(progress, "JOB_EVERY_S", 0.0)
    monkeypatch.setattr(progress, "POLL_S", 0.05)


@pytest.fixture
def verbosity_back():
    """Put the process's verbosity (and the root logger's level) back after the test."""
    level = logging.getLogger().level
    yield
    progress.set_verbosity(progress.NORMAL)
    logging.getLogger().setLevel(level)


# ------------------------------------------------------------------------------------------
# Pure helpers


def test_read_spool_sums_counts_by_key_and_skips_partial_files(tmp_path):
    (tmp_path / "pages~11~a").write_text("5\n")
    (tmp_path / "pages~12~b").write_text("7\n")
    (tmp_path / "records~11~c").write_text("3\n")
    (tmp_path / ".pages~11~a").write_text("999\n")  # a count being written
    (tmp_path / "pages~13~d").write_text("not a number")
    (tmp_path / "stray").write_text("4\n")
    assert progress.read_spool(str(tmp_path)) == {"pages": 12, "records": 3}
    assert progress.read_spool(str(tmp_path / "gone")) == {}


@pytest.mark.parametrize("runner, local", [
    (None, True), ("DirectRunner", True), ("directrunner", True), ("PrismRunner", True),
    ("apache_beam.runners.direct.direct_runner.DirectRunner", True),
    ("DataflowRunner", False), ("TestDataflowRunner", False), ("FlinkRunner", False)])
def test_local_runners_are_told_apart(runner, local):
    assert progress.is_local_runner(runner) is local


def test_runner_objects_are_judged_by_their_class():
    class DataflowRunner:
        pass

    class FnApiRunner:
        pass

    assert not progress.is_local_runner(DataflowRunner())
    assert progress.is_local_runner(FnApiRunner())


def test_postfix_names_the_counters_that_moved():
    counts = {"pages": 12345, "records": 0, "articles": 7}
    assert progress.counts_postfix(counts, ("pages", "records", "articles", "other")) == \
        "12,345 pages, 7 articles"


def test_worker_counts_go_to_the_spool_and_flush_makes_them_exact(tmp_path, monkeypatch):
    monkeypatch.setenv(progress.SPOOL_ENV, str(tmp_path))
    monkeypatch.setattr(progress, "SPOOL_EVERY_S", 3600.0)
    worker = progress.WorkerProgress("rank", "articles")
    for _ in range(5):
        worker.update()
    assert progress.read_spool(str(tmp_path)) == {"articles": 1}  # the first update only
    worker.flush()
    assert progress.read_spool(str(tmp_path)) == {"articles": 5}
    # A pickled copy (a DoFn's, on a worker) counts on its own, into a file of its own.
    copy = pickle.loads(pickle.dumps(worker))
    copy.update(3)
    copy.flush()
    assert copy.done == 3
    assert progress.read_spool(str(tmp_path)) == {"articles": 8}


def test_worker_without_a_launcher_logs_plain_lines(monkeypatch, caplog):
    monkeypatch.delenv(progress.SPOOL_ENV, raising=False)
    worker = progress.WorkerProgress("report", "articles", every=0.0)
    with caplog.at_level(logging.INFO, logger="wikisum.progress"):
        worker.update()
        worker.update(2)
    lines = [r.getMessage() for r in caplog.records if r.name == "wikisum.progress"]
    assert lines and re.fullmatch(r"report: 3 articles, [\d.]+ articles/s", lines[-1])


def test_job_progress_shows_the_workers_sum_against_the_total(tmp_path, fast_lines, capsys,
                                                              monkeypatch):
    monkeypatch.delenv(progress.SPOOL_ENV, raising=False)
    with progress.JobProgress("rank", "articles", total=lambda: 10, others=("errors",)) as job:
        spool = os.environ[progress.SPOOL_ENV]
        a, b = progress.WorkerProgress("rank", "articles"), progress.WorkerProgress("x", "articles")
        a.update(4)
        b.update(6)
        a.flush()
        b.flush()
    err = capsys.readouterr().err
    assert "rank: 10 articles in all" in err
    assert "rank: 10/10 articles (100%)" in err
    assert re.search(r"^rank: 10 articles in \d+s$", err, re.M)
    assert job.counts == {"articles": 10}
    assert progress.SPOOL_ENV not in os.environ and not os.path.exists(spool)


def test_job_progress_without_a_total_counts(fast_lines, capsys):
    def broken() -> int:
        raise FileNotFoundError("no list")

    with progress.JobProgress("crawl", "URLs", total=broken):
        progress.WorkerProgress("crawl", "URLs").update(3)
    err = capsys.readouterr().err
    assert "crawl: counting URLs" in err
    assert re.search(r"^crawl: 3 URLs, [\d.,]+ URLs/s$", err, re.M)  # no share, no ETA


def test_quiet_job_progress_shows_nothing_but_keeps_workers_quiet(fast_lines, capsys,
                                                                  verbosity_back):
    progress.set_verbosity(progress.QUIET)
    with progress.JobProgress("rank", "articles", total=lambda: 1 / 0):
        assert os.environ.get(progress.SPOOL_ENV)  # workers count there instead of logging
        progress.WorkerProgress("rank", "articles").update()
    assert capsys.readouterr().err == ""


def test_watch_job_on_dataflow_says_where_progress_is_and_waits_on_nothing(capsys,
                                                                          monkeypatch):
    from apache_beam.options.pipeline_options import PipelineOptions

    from wikisum.pipeline import beamio

    monkeypatch.delenv(progress.SPOOL_ENV, raising=False)
    options = PipelineOptions(["--runner", "DataflowRunner"])
    with beamio.watch_job("ingest", options, "files", total=lambda: 1 / 0):
        assert progress.SPOOL_ENV not in os.environ
    err = capsys.readouterr().err
    assert "ingest: progress is on the DataflowRunner job's page" in err
    dry = PipelineOptions(["--runner", "DataflowRunner", "--dry_run", "true"])
    with beamio.watch_job("ingest", dry, "files"):
        pass
    assert capsys.readouterr().err == ""


def test_launcher_totals_count_files_and_distinct_urls(tmp_path):
    from wikisum.pipeline import beamio
    from wikisum.pipeline.urls import normalize_url

    for name in ("a.warc.gz", "b.warc.gz", "c.wet.gz"):
        (tmp_path / name).write_bytes(b"")
    assert beamio.count_files([f"{tmp_path}/*.warc.gz,{tmp_path}/a.warc.gz",
                               str(tmp_path / "*.wet.gz")]) == 3
    (tmp_path / "one.txt").write_text("# cited\nhttp://a.example/x\n\nhttp://A.example/x\n"
                                      "http://b.example/\n")
    with gzip.open(tmp_path / "two.txt.gz", "wt") as f:
        f.write("http://b.example/\nhttps://c.example/page\n")
    key = lambda line: normalize_url(line) or line  # noqa: E731
    assert beamio.count_distinct_lines([str(tmp_path / "*.txt*")], key) == 3


def test_exemplar_progress_shows_each_split_against_its_rows(capsys):
    shown = SplitProgress(every=0.0)
    for done in (4, 8, 10):
        shown("train", done, 10)
    shown("dev", 3, 6)
    shown.close()
    err = capsys.readouterr().err
    assert "exemplars train: 4/10 rows (40%)" in err and "ETA" in err
    assert re.search(r"^exemplars train: 10 rows in \d+s$", err, re.M)
    assert re.search(r"^exemplars dev: 3 rows in \d+s$", err, re.M)


# ------------------------------------------------------------------------------------------
# Whole jobs


@pytest.fixture
def small_sample(sample_corpus):
    return sample_corpus[0]


def ingest_argv(sample, out) -> list[str]:
    return ["ingest", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
            "--warc", str(sample / "warc" / "*.warc.gz"),
            "--wet", str(sample / "wet" / "*.warc.wet.gz"), "--out", str(out)]


def test_ingest_shows_files_of_all_and_ends_with_the_jobs_counts(small_sample, tmp_path,
                                                                 fast_lines, capsys):
    files = 1 + len(list((small_sample / "warc").glob("*.warc.gz"))) + \
        len(list((small_sample / "wet").glob("*.warc.wet.gz")))
    assert cli.main(ingest_argv(small_sample, tmp_path / "ingest")) == 0
    err = capsys.readouterr().err
    assert f"ingest: {files} files in all" in err
    assert f"ingest: {files}/{files} files (100%)" in err
    summary = json.loads((tmp_path / "ingest" / "summary.json").read_text())["stages"]
    final = re.search(r"^ingest: (\d+) files in \d+s, (\d+) pages, (\d+) records, (\d+) articles$",
                      err, re.M)
    assert final, err
    # the workers' counts, flushed, are the job's own
    assert [int(n) for n in final.groups()[:3]] == [files, summary["pages"]["in"],
                                                     summary["records"]["in"]]


def test_quiet_ingest_shows_no_progress(small_sample, tmp_path, fast_lines, capsys,
                                        verbosity_back):
    argv = ingest_argv(small_sample, tmp_path / "ingest")
    argv = argv[:3] + argv[-2:]  # the dump only (the references are not the point here)
    assert cli.main(["--quiet", *argv]) == 0
    err = capsys.readouterr().err
    assert not re.search(r"^ingest: \d", err, re.M), err


def test_rank_shows_articles_of_the_ingest_rows(built_sample, tmp_path, fast_lines, capsys):
    build, _ = built_sample
    rows = json.loads((build / "data" / "dataset.json").read_text())["rows"]
    total = sum(rows.values())
    assert cli.main(["rank", "--data", str(build / "ingest"), "--vocab",
                     str(build / "vocab.model"), "--out", str(tmp_path / "data"),
                     "--shards", "1"]) == 0
    err = capsys.readouterr().err
    assert f"rank: {total} articles in all" in err
    assert f"rank: {total}/{total} articles (100%)" in err
    assert re.search(rf"^rank: {total} articles in \d+s$", err, re.M)


def test_report_shows_articles_of_the_limit(built_sample, tmp_path, fast_lines, capsys):
    build, _ = built_sample
    assert cli.main(["report", "--data", str(build / "data"), "--out", str(tmp_path / "r"),
                     "--limit", "3", "--bootstrap", "20", "--lengths", "50,100"]) == 0
    err = capsys.readouterr().err
    assert "report: 3 articles in all" in err
    assert re.search(r"^report: 3 articles in \d+s$", err, re.M)
