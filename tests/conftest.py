"""Shared fixtures; a guard that turns a run in which no test passed into a failure; and a check
that the suite leaves the temporary folder as it found it."""

from __future__ import annotations

import getpass
import os
import re
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# The temporary folder the suite was started in. The session runs its tests, and every process
# they start, in a folder of its own inside it (see pytest_configure); this variable hands the
# outer one to the test processes (pytest-xdist's workers), whose TMPDIR is the session's folder.
OUTER_TMP_ENV = "WIKISUM_TESTS_OUTER_TMPDIR"
OUTER_TMP = Path(os.environ.get(OUTER_TMP_ENV) or tempfile.gettempdir())
# What wikisum caches (the unpacked language model) goes to a folder of the tests' own, shared by
# their processes and runs, never to the user's cache folder; so do torch's compile caches (see
# torch_cache_name).
TESTS_CACHE = OUTER_TMP / "wikisum-tests-cache"
os.environ["WIKISUM_CACHE_DIR"] = str(TESTS_CACHE)
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


# --------------------------------------------------------------------------------------------
# The temporary folder, left as found
#
# The session makes a folder of its own in the temporary folder and makes it the temporary folder
# (TMPDIR, and tempfile's) of the tests and of every process they start: pytest-xdist's workers,
# the commands tests run as child processes, Beam's workers. Whatever is left there once the
# last test has run was made by the suite (a test, a job, Beam) and not removed: the run fails
# naming each entry, and the folder is then removed, so that the temporary folder is left as
# found either way. A folder of the session's own rather than a listing of the temporary folder
# itself, so that what other processes write there meanwhile (another test run) is not taken for
# the suite's. pytest's own base folder (pytest-of-USER, which keeps the last runs' tmp_path
# folders) stays where it was: PYTEST_DEBUG_TEMPROOT points it at the outer temporary folder.

SESSION_TMP = pytest.StashKey[tuple[Path, pytest.MonkeyPatch]]()
LEFT_IN_TMP = pytest.StashKey[list[str]]()


def is_xdist_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def torch_cache_name() -> str:
    """The folder torch keeps its compile caches in, in the temporary folder, named as torch's
    ``cache_dir_utils.default_cache_dir`` names it: ``torchinductor_USER``. Its precompiled
    headers go there whatever ``TORCHINDUCTOR_CACHE_DIR`` says. In the session's folder it is a
    link to the tests' cache, so that a run finds the headers the last one compiled (without
    them, a small function's first compile on the CPU takes 13 s instead of 5)."""
    try:
        user = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        user = f"uid_{os.getuid()}"
    return "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user)


def pytest_configure(config: pytest.Config) -> None:
    if is_xdist_worker(config):  # a worker inherits the session's TMPDIR from the controller
        return
    folder = Path(tempfile.mkdtemp(prefix="wikisum-tests-tmp-", dir=OUTER_TMP))
    (TESTS_CACHE / "torchinductor").mkdir(parents=True, exist_ok=True)
    (folder / torch_cache_name()).symlink_to(TESTS_CACHE / "torchinductor")
    patch = pytest.MonkeyPatch()
    patch.setenv(OUTER_TMP_ENV, str(OUTER_TMP))
    patch.setenv("PYTEST_DEBUG_TEMPROOT", os.environ.get("PYTEST_DEBUG_TEMPROOT") or str(OUTER_TMP))
    patch.setenv("TMPDIR", str(folder))
    patch.setattr(tempfile, "tempdir", str(folder))  # this process's tempfile read TMPDIR already
    config.stash[SESSION_TMP] = folder, patch


def left_in(folder: Path) -> list[str]:
    """What is in ``folder``, less pytest's own base folders and the link the session made
    (:func:`torch_cache_name`): one line an entry."""
    lines = []
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith("pytest-of-") or entry.name == torch_cache_name():
            continue
        if entry.is_dir() and not entry.is_symlink():
            inside = sum(1 for _ in entry.rglob("*"))
            lines.append(f"{entry.name}/ ({inside} entries inside)" if inside
                         else f"{entry.name}/ (empty)")
        else:
            lines.append(entry.name)
    return lines


@pytest.hookimpl(trylast=True)  # after pytest-xdist's, which stops the workers
def pytest_sessionfinish(session, exitstatus):
    # A suite whose every test was skipped or deselected exits 0; for CI that is a suite that
    # tested nothing, so it fails like pytest's own "no tests ran" (exit code 5).
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None and exitstatus == 0 and not reporter.stats.get("passed"):
        session.exitstatus = 5
    if SESSION_TMP not in session.config.stash or session.exitstatus not in (
            pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):  # interrupted, or nothing ran
        return
    folder, _ = session.config.stash[SESSION_TMP]
    left = left_in(folder)
    if left:
        # A failure of the run, not a warning: leftovers are only seen once every test (and
        # every worker) has finished, and warnings are what let them pile up.
        session.config.stash[LEFT_IN_TMP] = left
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    left = config.stash.get(LEFT_IN_TMP, None)
    if not left:
        return
    folder, _ = config.stash[SESSION_TMP]
    terminalreporter.section("left in the temporary folder", sep="=", red=True, bold=True)
    terminalreporter.line(
        f"The run fails: the tests, or the jobs and Beam runs they started, left {len(left)} "
        f"entries in the session's temporary folder\n{folder} (removed at the end of the run). "
        "Each belongs in its test's tmp_path, or must be removed by what made it:", red=True)
    for line in left:
        terminalreporter.line(f"  {line}", red=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    if SESSION_TMP not in config.stash:
        return
    folder, patch = config.stash[SESSION_TMP]
    patch.undo()
    shutil.rmtree(folder, ignore_errors=True)
