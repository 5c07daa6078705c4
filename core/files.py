"""Files by path or URL, for both stages: local paths through the operating system, URLs
(``gs://``, ``s3://``, ``memory://`` ...) through a backend.

The default backend is fsspec (what Hugging Face datasets and PyTorch Lightning use; ``gs://``
needs ``gcsfs``, ``s3://`` needs ``s3fs``), so stage two (training, checkpoints, export,
decoding) reads and writes a build on a bucket without Apache Beam. The Beam jobs register
Beam's own FileSystems as the backend when :mod:`wikisum.pipeline.beamio` is imported
(:func:`use_backend`), so their workers keep the filesystems Dataflow configures.

Every function takes a path or URL and raises ``FileNotFoundError`` (or ``OSError``) as the
built-in file functions do.
"""

from __future__ import annotations

import contextlib
import glob
import os
import posixpath
import re
import shutil
from collections.abc import Iterator
from typing import IO, Protocol


class Backend(Protocol):
    """What a URL filesystem provides (paths here are whole URLs)."""

    def exists(self, url: str) -> bool: ...
    def is_dir(self, url: str) -> bool: ...
    def match(self, pattern: str) -> list[str]: ...
    def open_read(self, url: str) -> IO[bytes]: ...
    def open_write(self, url: str) -> IO[bytes]: ...
    def delete(self, url: str) -> None: ...
    def rename(self, source: str, destination: str) -> None: ...
    def entries(self, folder: str, limit: int) -> list[str]: ...


class FsspecBackend:
    """URLs through fsspec (imported on first use)."""

    @staticmethod
    def _fs(url: str):
        import fsspec

        return fsspec.core.url_to_fs(url)

    def exists(self, url: str) -> bool:
        fs, path = self._fs(url)
        return fs.exists(path)

    def is_dir(self, url: str) -> bool:
        fs, path = self._fs(url)
        return fs.isdir(path)

    def match(self, pattern: str) -> list[str]:
        """URLs spelt as ``pattern`` is (``memory://b/x``, not fsspec's ``memory:///b/x``)."""
        fs, path = self._fs(pattern)
        scheme, rest = pattern.split("://", 1)
        lead = "" if rest.startswith("/") else "/"
        return sorted(f"{scheme}://{p[len(lead):] if lead and p.startswith(lead) else p}"
                      for p in fs.glob(path))

    def open_read(self, url: str) -> IO[bytes]:
        fs, path = self._fs(url)
        return fs.open(path, "rb")

    def open_write(self, url: str) -> IO[bytes]:
        fs, path = self._fs(url)
        return fs.open(path, "wb")

    def delete(self, url: str) -> None:
        fs, path = self._fs(url)
        fs.rm(path.rstrip("/"), recursive=True)

    def rename(self, source: str, destination: str) -> None:
        fs, path = self._fs(source)
        fs.mv(path, self._fs(destination)[1])

    def entries(self, folder: str, limit: int) -> list[str]:
        fs, path = self._fs(folder)
        try:
            names = fs.ls(path, detail=False)
        except FileNotFoundError:
            return []
        return sorted(posixpath.basename(n.rstrip("/")) for n in names)[:limit]


_backend: Backend = FsspecBackend()


def use_backend(backend: Backend) -> Backend:
    """Route URLs through ``backend`` from now on; returns the one it replaces."""
    global _backend
    previous, _backend = _backend, backend
    return previous


def backend() -> Backend:
    return _backend


def is_url(path: str) -> bool:
    return "://" in path


def join(base: str, *parts: str) -> str:
    """``base/part/...`` for a path or a URL (URLs always with ``/``)."""
    if is_url(base):
        return posixpath.join(base, *parts)
    return os.path.join(base, *parts)


def exists(path: str) -> bool:
    return _backend.exists(path) if is_url(path) else os.path.exists(path)


def is_dir(path: str) -> bool:
    return _backend.is_dir(path) if is_url(path) else os.path.isdir(path)


def match(pattern: str) -> list[str]:
    """Sorted paths matching a glob (``*``, ``?``, ``[...]``); [] when none."""
    if is_url(pattern):
        return sorted(_backend.match(pattern))
    return sorted(glob.glob(pattern))


def open_read(path: str) -> IO[bytes]:
    """A binary file to read (a ``with`` block closes it)."""
    return _backend.open_read(path) if is_url(path) else open(path, "rb")


def open_write(path: str) -> IO[bytes]:
    """A binary file to write, replacing one that is there; local folders are made."""
    if is_url(path):
        return _backend.open_write(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    return open(path, "wb")


@contextlib.contextmanager
def naming(path: str) -> Iterator[None]:
    """Writes to ``path`` inside the block raise an ``OSError`` that names it: a failed write
    or close (a full disk) raises one with no file name, and a library that writes from C or
    Rust (pyarrow, safetensors) an error that keeps its errno only in its text; either is
    raised again as an ``OSError`` with that errno and ``path`` as its ``filename``, the
    original as its cause. Other errors pass unchanged."""
    try:
        yield
    except Exception as exc:
        code = written_errno(exc)
        if code is None or getattr(exc, "filename", None) is not None:
            raise
        raise OSError(code, os.strerror(code), path) from exc


def write_text_atomically(path, text: str) -> None:
    """``text`` to the local file ``path`` whole or not at all: written to a temporary file
    beside it, then renamed; a failed write removes the temporary file and names ``path``."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    folder, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{name}.tmp")
    try:
        with naming(path), open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.remove(tmp)
        raise
    os.replace(tmp, path)


def written_errno(exc: BaseException) -> int | None:
    """The errno of a failed write: an ``OSError``'s, or the one a library's error keeps in its
    text (pyarrow: ``[Errno 28]``; safetensors, from Rust: ``(os error 28)``); None if none."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc.errno
    found = re.search(r"\[errno (\d+)\]|\(os error (\d+)\)", str(exc), re.IGNORECASE)
    return int(found.group(1) or found.group(2)) if found else None


def read_bytes(path: str) -> bytes:
    with open_read(path) as f:
        return f.read()


def read_text(path: str) -> str:
    return read_bytes(path).decode("utf-8")


def delete(path: str) -> None:
    """A file, or a folder with everything in it (a URL prefix: every object under it)."""
    if is_url(path):
        _backend.delete(path)
    elif os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def rename(source: str, destination: str) -> None:
    """Move a file to ``destination`` (which must not be there, or be a file to replace)."""
    if is_url(source) or is_url(destination):
        _backend.rename(source, destination)
    else:
        os.replace(source, destination)


def entries(folder: str, limit: int = 1000) -> list[str]:
    """Names in a folder, sorted, at most ``limit`` ([] when it is not there)."""
    if is_url(folder):
        return _backend.entries(folder, limit)
    try:
        return sorted(os.listdir(folder))[:limit]
    except (FileNotFoundError, NotADirectoryError):
        return []
