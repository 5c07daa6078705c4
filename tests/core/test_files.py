"""wikisum.core.files: local paths through the operating system, URLs through a backend
(fsspec by default; Beam's FileSystems inside the Beam jobs), and stage two reading a build
from a URL without Beam."""

from __future__ import annotations

import shutil
from pathlib import Path

import fsspec
import pytest

from wikisum.core import files
from wikisum.core.loader import Dataset


@pytest.fixture
def fsspec_urls():
    """URLs through fsspec (a Beam job imported earlier in the session registers Beam's), and
    an empty in-memory filesystem."""
    previous = files.use_backend(files.FsspecBackend())
    memory = fsspec.filesystem("memory")
    memory.store.clear()
    memory.pseudo_dirs.clear()
    memory.pseudo_dirs.append("")
    yield memory
    memory.store.clear()
    files.use_backend(previous)


def test_local_paths(tmp_path):
    path = str(tmp_path / "a" / "b" / "x.txt")
    with files.open_write(path) as f:  # folders are made
        f.write(b"one")
    assert files.read_text(path) == "one" and files.exists(path)
    other = str(tmp_path / "a" / "y.txt")
    with files.open_write(other) as f:
        f.write(b"two")
    files.rename(other, path)  # replaces the file there
    assert files.read_bytes(path) == b"two" and not files.exists(other)
    assert files.match(str(tmp_path / "a" / "*" / "*.txt")) == [path]
    assert files.match(str(tmp_path / "nothing-*")) == []
    assert files.entries(str(tmp_path / "a")) == ["b"] and files.is_dir(str(tmp_path / "a"))
    assert files.entries(str(tmp_path / "missing")) == []
    assert files.join(str(tmp_path), "a", "b") == str(tmp_path / "a" / "b")
    files.delete(str(tmp_path / "a"))  # a folder with everything in it
    assert not files.exists(str(tmp_path / "a"))


def test_urls_go_through_the_backend(fsspec_urls):
    url = "memory://bucket/run/x.bin"
    with files.open_write(url) as f:
        f.write(b"\x00\x01")
    assert files.is_url(url) and files.exists(url) and files.read_bytes(url) == b"\x00\x01"
    assert files.join("memory://bucket", "run", "y.bin") == "memory://bucket/run/y.bin"
    files.rename(url, "memory://bucket/run/y.bin")
    assert files.match("memory://bucket/run/*.bin") == ["memory://bucket/run/y.bin"]
    assert files.entries("memory://bucket/run") == ["y.bin"]
    assert files.is_dir("memory://bucket/run")
    files.delete("memory://bucket/run")
    assert not files.exists("memory://bucket/run/y.bin")


def test_another_backend_takes_every_url(tmp_path):
    seen = []

    class Recording(files.FsspecBackend):
        def exists(self, url):
            seen.append(url)
            return False

    previous = files.use_backend(Recording())
    try:
        assert not files.exists("gs://bucket/x") and seen == ["gs://bucket/x"]
        assert files.exists(str(tmp_path))  # local paths never reach a backend
        assert seen == ["gs://bucket/x"]
    finally:
        files.use_backend(previous)


def test_stage_two_reads_a_build_from_a_url(built_sample, fsspec_urls):
    """The loader reads a dataset on a URL through fsspec (as a GPU machine reads gs://) and
    gives the examples it gives from the local copy."""
    local = Path(built_sample[0]) / "data"
    for path in sorted(local.rglob("*")):
        if path.is_file():
            with fsspec_urls.open(f"/build/data/{path.relative_to(local)}", "wb") as f:
                f.write(path.read_bytes())
    remote = Dataset("memory://build")  # a build's root reads as its data/
    assert remote.dir == "memory://build/data"
    here = Dataset(str(local))
    assert remote.splits() == here.splits()

    def examples(dataset):
        return [(e.id, e.inputs, e.targets)
                for e in dataset.examples("dev", "tfidf", "combined", max_input_tokens=64)]

    assert examples(remote) == examples(here) and examples(here)


def test_nothing_of_stage_one_is_needed_to_read_files():
    import subprocess
    import sys

    code = ("import sys\n"
            "import wikisum.core.files, wikisum.core.loader, wikisum.training.loop, "
            "wikisum.generation.decode, wikisum.generation.export\n"
            "heavy = [m for m in ('apache_beam', 'trafilatura', 'warcio') if m in sys.modules]\n"
            "assert not heavy, heavy\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_shutil_is_not_needed_for_a_url_delete(fsspec_urls, monkeypatch):
    monkeypatch.setattr(shutil, "rmtree", lambda *a, **k: pytest.fail("rmtree on a URL"))
    with files.open_write("memory://b/x") as f:
        f.write(b"x")
    files.delete("memory://b")
    assert not files.exists("memory://b/x")
