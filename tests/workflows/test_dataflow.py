"""Every Beam job builds its Dataflow job offline (``--dry_run true``: built and validated, not
submitted), and the DirectRunner's multi-process mode writes the same bytes as one worker. (The
package that ``--setup_file`` stages is tested in tests/test_packaging.py.)"""

from __future__ import annotations

import filecmp
import subprocess
import sys
from pathlib import Path

import commandlines
import netguard
import pytest

from wikisum.workflows import cli

ROOT = Path(__file__).resolve().parents[2]
BUCKET = "gs://wikisum-bucket"
DATAFLOW = ["--runner", "DataflowRunner", "--dry_run", "true", "--project", "wikisum-test",
            "--region", "us-central1", "--temp_location", f"{BUCKET}/tmp",
            "--setup_file", str(ROOT / "setup.py")]


def beam_command_line(command: str) -> list[str]:
    """The least command line of a Beam job (commandlines.command_line), reading and writing
    in the bucket."""

    def value(action, word):
        if action.dest == "out":
            return f"{BUCKET}/{command}"
        if commandlines.is_input(action):
            return commandlines.path_value(action, word, f"{BUCKET}/in/{action.dest}")
        return word

    return commandlines.command_line(command, value)


# Every Beam job (every command that passes Beam's options through), and a few of their other
# paths: every source of ingest, rank fitting the learned extractor, cc-fetch's columnar index,
# search's titles from a dump.
JOBS = {command: beam_command_line(command) for command in commandlines.beam_commands()}
JOBS |= {
    "ingest-every-source": [
        "ingest", "--wiki", f"{BUCKET}/dumps/enwiki-*-pages-articles*.xml.bz2",
        "--warc", f"{BUCKET}/cc/*.warc.gz", "--wet", f"{BUCKET}/cc/*.wet.gz",
        "--search-results", f"{BUCKET}/search.jsonl", "--out", f"{BUCKET}/ingest",
        "--shards", "1000"],
    "rank-train-learned": ["rank", "--data", f"{BUCKET}/ingest", "--vocab",
                           f"{BUCKET}/vocab.model", "--out", f"{BUCKET}/data", "--train-learned"],
    "cc-fetch-columnar": [
        "cc-fetch", "--urls", f"{BUCKET}/ingest/missing_urls.txt", "--source", "columnar",
        "--columnar-index", f"{BUCKET}/cc-index/crawl=*/*.parquet", "--crawl", "CC-MAIN-2017-13",
        "--fetch-groups", "64", "--out", f"{BUCKET}/cc"],
    "search-wiki": ["search", "--index", f"{BUCKET}/index", "--wiki",
                    f"{BUCKET}/dumps/enwiki.xml.bz2", "--out", f"{BUCKET}/search/results.jsonl"],
}


def would_write(stdout: str) -> list[str]:
    """The paths a dry run says it would write (the first of a set of shards)."""
    return [line.split("would write:", 1)[1].split()[0] for line in stdout.splitlines()
            if "would write:" in line]


def declared(argv: list[str]) -> list:
    """The outputs the command line declares (its command's ``outputs(args)``)."""
    args, _ = cli.build_parser().parse_known_args(argv)
    return cli.command_module(args.command).outputs(args)


def inside(path: str, outputs: list) -> bool:
    """Whether ``path`` is a declared file output or lies in a declared directory output."""
    return any(path == o.path if o.kind == "file" else path.startswith(o.path.rstrip("/") + "/")
               for o in outputs)


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
    # Beam's Dataflow launch leaves what it stages in the temporary folder (a tmp* folder from
    # environments.python_sdk_dependencies, never removed, and beam-requirements-cache): the
    # child's goes in tmp_path (docs/beam-proposals.md).
    (tmp_path / "tmp").mkdir()
    env["TMPDIR"] = str(tmp_path / "tmp")
    done = subprocess.run([sys.executable, "-m", "wikisum.workflows.cli", *JOBS[job], *DATAFLOW],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240,
                          check=False)
    network = log.read_text() if log.exists() else ""
    assert done.returncode == 0, f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    assert network == "", f"the job reached for the network while being built:\n{network}"
    assert "dry run: the DataflowRunner job" in done.stdout and "was built and validated" in \
        done.stdout, done.stdout
    writes = would_write(done.stdout)
    assert writes, f"the dry run of {job} names nothing it would write:\n{done.stdout}"
    outputs = declared(JOBS[job])
    outside = [path for path in writes if not inside(path, outputs)]
    assert not outside, (f"{job} would write outside the outputs its command declares "
                         f"({', '.join(o.path for o in outputs)}): {', '.join(outside)}")


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
