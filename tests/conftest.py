"""Shared fixtures, and a guard that turns a run in which no test passed into a failure."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# What wikisum caches (the unpacked language model) goes to a folder of the tests' own, shared by
# their processes and runs, never to the user's cache folder.
os.environ["WIKISUM_CACHE_DIR"] = str(Path(tempfile.gettempdir()) / "wikisum-tests-cache")
# Real public data lives beside the project, never inside it (see ../shared/data/README.md).
SHARED_DATA = ROOT.parent / "shared" / "data"

requires_shared_data = pytest.mark.skipif(
    not SHARED_DATA.is_dir(), reason=f"real data not found at {SHARED_DATA}")


BROWSER_INSTALL = ("sudo apt-get install -y chromium (Debian's package) and "
                   ".venv/bin/pip install -e '.[dev]' (playwright's Python package; it drives "
                   "that chromium, no browser is downloaded)")


def find_chromium() -> str | None:
    import shutil

    return next((path for name in ("chromium", "chromium-browser")
                 if (path := shutil.which(name))), None)


@pytest.fixture(scope="session")
def browser():
    """A headless Chromium (Debian's ``chromium`` package) driven by Playwright, shared by the
    session. Where it is missing the test is skipped with the install command, except in CI
    (``CI`` set), where a page the tool writes must be checked in a real browser: there a
    missing browser fails the test."""
    import os

    executable = find_chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if executable is None or sync_playwright is None:
        missing = "chromium" if executable is None else "playwright"
        message = f"no headless browser ({missing} missing): {BROWSER_INSTALL}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    with sync_playwright() as p:
        launched = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield launched
        launched.close()


@pytest.fixture(autouse=True)
def default_verbosity():
    """Every test starts at the default verbosity: the level is the process's (set once by the
    `wikisum` command), and a test that runs `wikisum -q ...` in-process would otherwise leave
    the next test in its worker quiet."""
    from wikisum.core import progress

    progress.set_verbosity(progress.NORMAL)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def sample_corpus(tmp_path_factory) -> tuple[Path, dict]:
    """The default sample corpus (60 articles, seed 0), generated once per test session."""
    from wikisum.pipeline.sample import write_sample

    out = tmp_path_factory.mktemp("sample")
    manifest = write_sample(out, articles=60, seed=0)
    return out, manifest


@pytest.fixture(scope="session")
def built_sample(sample_corpus, tmp_path_factory) -> tuple[Path, dict]:
    """``wikisum build`` on the sample corpus, run once per test session: (OUT, manifest).

    OUT holds ingest/, vocab.model (3,000 subwords at most) and data/ (two shards a split,
    lead and whole-article targets, as the demo builds it). Read it, never write into it:
    other tests share it.
    """
    from wikisum.workflows import cli

    sample, manifest = sample_corpus
    out = tmp_path_factory.mktemp("build")
    status = cli.main(["build", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
                       "--warc", str(sample / "warc" / "*.warc.gz"),
                       "--wet", str(sample / "wet" / "*.warc.wet.gz"),
                       "--search-results", str(sample / "search_results.jsonl"),
                       "--out", str(out), "--vocab-size", "3000", "--shards", "2",
                       "--targets", "lead,article"])
    assert status == 0
    return out, manifest


def pytest_sessionfinish(session, exitstatus):
    # A suite whose every test was skipped or deselected exits 0; for CI that is a suite that
    # tested nothing, so it fails like pytest's own "no tests ran" (exit code 5).
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and exitstatus == 0 and not reporter.stats.get("passed"):
        session.exitstatus = 5
