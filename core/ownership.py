"""What wikisum may write over: nothing a user owns is ever deleted or overwritten.

Every output a command names is checked before any work, and recognised by what wikisum
wrote there, not by its name:

- **A directory output** (``--out DIR`` of ingest, rank, train, ...) is wikisum's when it holds
  the marker :data:`MARKER` (written when a command claims the directory, naming the command).
  A missing or empty directory is claimed; one that holds anything and no marker is the
  user's and is refused, naming what is there; one claimed by another command is refused too
  (``wikisum ingest --out RUN`` does not write into a training run). Inside its own directory
  a job writes and replaces only its own names: a file the user put beside them stays.
- **A file output** (``vocab --out MODEL``, ``decode --out PREDS``, ``evaluate --out JSON``) is
  wikisum's when the folder's record :data:`FILES` lists it with the SHA-256 of the bytes the
  command left there (or as being written, for a command that was stopped while writing). A
  directory there, a file the record does not list, or one whose bytes changed since, is
  refused. A missing file is free.

Everything here is a pure check over the filesystem or a small record write; nothing heavy is
imported (URLs such as ``gs://`` through :mod:`wikisum.core.files`).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fnmatch
import hashlib
import json
import os
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

from wikisum.core import files

MARKER = ".wikisum"
FILES = ".wikisum-files.json"
WRITING = "writing"
_CHUNK = 1 << 20
# The lock a running command holds on its output directory (core.outputlocks.LOCK): not the
# user's, so a directory holding only it is empty, and a failed command removes it with the
# marker.
_LOCK = ".wikisum.lock"
# The names wikisum keeps in an output directory for its own bookkeeping, beside the output.
BOOKKEEPING = frozenset({MARKER, FILES, _LOCK})


def _is_bookkeeping(name: str) -> bool:
    """The marker, the files record, the lock, or the temporary file of a marker or record
    whose writer was killed (``..wikisum.PID.tmp``: see :func:`_write`)."""
    return name in BOOKKEEPING or (name.startswith(f".{MARKER}") and name.endswith(".tmp"))


class NotOurs(Exception):
    """An output that wikisum may not write: the message is one line for the user."""


@dataclass(frozen=True)
class Output:
    """One output a command will write: its option (``--out``), path and kind (``dir`` or
    ``file``)."""

    option: str
    path: str
    kind: str  # "dir" | "file"

    def __post_init__(self):
        if self.kind not in ("dir", "file"):
            raise ValueError(f"kind must be dir or file, got {self.kind!r}")


@dataclass(frozen=True)
class Input:
    """One path a command reads: its option (``--data``) and the path as the user gave it;
    ``pattern`` when the path is a glob the command expands (``--warc 'dir/*.warc.gz'``)."""

    option: str
    path: str
    pattern: bool = False


# -- filesystem access: local paths with os, URLs through wikisum.core.files ---------------


def _is_url(path: str) -> bool:
    return files.is_url(path)


def _join(folder: str, name: str) -> str:
    if _is_url(folder):
        return folder.rstrip("/") + "/" + name
    return os.path.join(folder, name)


def _exists(path: str) -> bool:
    if _is_url(path):
        return files.exists(path)
    return os.path.lexists(path)


def _is_dir(path: str) -> bool:
    if _is_url(path):
        return bool(_entries(path, 1))
    return os.path.isdir(path)


def _entries(folder: str, limit: int) -> list[str]:
    """Up to ``limit`` names in ``folder`` (for a URL, objects under the prefix)."""
    if _is_url(folder):
        return files.entries(folder, limit)
    names = []
    with os.scandir(folder) as it:
        for entry in it:
            if _is_bookkeeping(entry.name) and entry.name != MARKER:
                continue
            names.append(entry.name + ("/" if entry.is_dir() else ""))
            if len(names) >= limit:
                break
    return names


def _read(path: str) -> bytes:
    return files.read_bytes(path)


def _write(path: str, data: bytes) -> None:
    """``data`` to ``path``, whole or not at all."""
    if _is_url(path):
        with files.open_write(path) as f:
            f.write(data)
        return
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def _delete(path: str) -> None:
    if _is_url(path):
        files.delete(path)
    else:
        os.remove(path)


def _folder_and_name(path: str) -> tuple[str, str]:
    if _is_url(path):
        folder, _, name = path.rstrip("/").rpartition("/")
        return folder, name
    absolute = os.path.abspath(path)
    return os.path.dirname(absolute), os.path.basename(absolute)


def sha256(path: str) -> str:
    digest = hashlib.sha256()
    if _is_url(path):
        digest.update(_read(path))
        return digest.hexdigest()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _version() -> str:
    from wikisum import __version__

    return __version__


def _listing(names: list[str], more: bool) -> str:
    return ", ".join(names) + (", ..." if more else "")


# -- directory outputs ---------------------------------------------------------------------


def read_marker(folder: str) -> dict | None:
    """The marker of a directory wikisum claimed (``{}`` for an empty marker file); None when
    there is none."""
    path = _join(folder, MARKER)
    if not _exists(path):
        return None
    try:
        value = json.loads(_read(path).decode("utf-8") or "{}")
    except (ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def check_dir(path: str, command: str, option: str = "--out") -> None:
    """``path`` may be ``command``'s output directory: missing, empty, or claimed by the same
    command.

    Raises:
        NotOurs: it is a file, holds anything without wikisum's marker, or was written by
            another command.
    """
    where = f"wikisum {command}: {option} {path}"
    if not _is_url(path) and os.path.lexists(path) and not os.path.isdir(path):
        raise NotOurs(f"{where} is a file, not a directory; give a new or empty directory")
    if not _is_url(path) and not os.path.exists(path):
        return
    marker = read_marker(path)
    if marker is None:
        names = _entries(path, 4)
        if not names:
            return
        raise NotOurs(f"{where} holds files wikisum did not write "
                      f"({_listing(names[:3], len(names) > 3)}); "
                      "give a new or empty directory (an output of wikisum 0.1.0 has no "
                      f"marker: `touch {_join(path, MARKER)}` adopts it)")
    owner = marker.get("command")
    if owner and owner != command:
        raise NotOurs(f"{where} is the output of `wikisum {owner}`, not of `wikisum {command}`; "
                      "give a new or empty directory")
    if not _is_url(path):
        link = first_link(path)
        if link is not None:
            raise NotOurs(f"{where}: {link} is a symbolic link (to {os.readlink(link)}); wikisum "
                          "writes nothing through a link inside its output: remove the link "
                          f"(rm {shlex.quote(link)}) and run the command again")


def first_link(folder: str) -> str | None:
    """The first symbolic link found anywhere inside ``folder`` (links are not followed);
    None when there is none. wikisum makes no links, so one inside its output was put there
    by someone else, and writing or deleting through it would reach outside the output."""
    for root, dirs, names in os.walk(folder, followlinks=False):
        for name in sorted(dirs) + sorted(names):
            full = os.path.join(root, name)
            if os.path.islink(full):
                return full
    return None


def _inside(path: str, folder: str) -> bool:
    return os.path.commonpath([path, folder]) == folder and path != folder


def check_names(command: str, outputs: list[Output], inputs: list[Input]) -> None:
    """Every path is valid UTF-8: the formats wikisum writes (Parquet through pyarrow, JSON
    records that name other files) hold paths as UTF-8 text. A name of other bytes (which
    Python carries as lone surrogates) is refused before any work; spaces, line breaks and
    leading dashes are ordinary names.

    Raises:
        NotOurs: naming the option, the path (its bytes escaped) and the first bad byte.
    """
    for item in [*outputs, *inputs]:
        try:
            item.path.encode("utf-8")
        except UnicodeEncodeError as exc:
            raw = os.fsencode(item.path)
            shown = raw.decode("utf-8", "backslashreplace")
            bad = os.fsencode(item.path[exc.start:exc.end])
            raise NotOurs(f"wikisum {command}: {item.option} {shown}: the path is not valid "
                          f"UTF-8 (byte 0x{bad[0]:02x}); wikisum's files (Parquet, JSON records)"
                          " name paths in UTF-8: rename it") from None


def check_apart(command: str, outputs: list[Output], inputs: list[Input]) -> None:
    """No output is an input, and no output directory lies inside an input directory or holds
    an input: a rerun's cleanup of its own output never reaches what the command reads, and a
    reader never takes the output for input. Paths are compared as they resolve (links,
    ``..``, the same file by another name). A file output may lie inside an input directory
    (``decode --run RUN --out RUN/preds.jsonl``).

    Raises:
        NotOurs: naming the output, the input and the option of each.
    """
    patterns = [inp for inp in inputs if inp.pattern and not _is_url(inp.path)]
    paths = [(inp, os.path.realpath(inp.path), _identity(inp.path)) for inp in inputs
             if not inp.pattern and not _is_url(inp.path) and os.path.lexists(inp.path)]
    for out in outputs:
        if _is_url(out.path):
            continue
        real_out, out_identity = os.path.realpath(out.path), _identity(out.path)
        where = f"wikisum {command}: {out.option} {out.path}"
        for inp in patterns:
            if fnmatch.fnmatchcase(os.path.abspath(out.path), os.path.abspath(inp.path)):
                raise NotOurs(f"{where} matches the input {inp.option} {inp.path}: the command "
                              "would read its own output; give a path the pattern does not "
                              "match")
        for inp, real_in, in_identity in paths:
            if real_out == real_in or (out_identity is not None and out_identity == in_identity):
                raise NotOurs(f"{where} is also the input {inp.option} {inp.path}; give the "
                              "output a path of its own")
            if out.kind != "dir":
                continue
            if os.path.isdir(real_in) and _inside(real_out, real_in):
                raise NotOurs(f"{where} lies inside the input {inp.option} {inp.path}; give an "
                              "output directory outside every input")
            if _inside(real_in, real_out):
                raise NotOurs(f"{where} holds the input {inp.option} {inp.path}; give an output "
                              "directory that holds no input")


def _identity(path: str) -> tuple[int, int] | None:
    """The file behind ``path`` (device and inode: the same file under another name or a
    hard link); None when nothing is there."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def claim_dir(path: str, command: str) -> bool:
    """Mark ``path`` as ``command``'s output (made if missing). Returns whether the directory
    was created by this call. Check it with :func:`check_dir` first."""
    created = not _is_url(path) and not os.path.exists(path)
    if not _is_url(path):
        os.makedirs(path, exist_ok=True)
        for name in os.listdir(path):  # what a command killed while claiming it left
            if _is_bookkeeping(name) and name.endswith(".tmp"):
                with contextlib.suppress(OSError):
                    os.remove(os.path.join(path, name))
    if read_marker(path) is None:
        record = {"written_by": "wikisum", "command": command, "version": _version(),
                  "created": _now()}
        _write(_join(path, MARKER), (json.dumps(record, indent=1) + "\n").encode("utf-8"))
    return created


def release_dir(path: str) -> None:
    """Undo :func:`claim_dir` of a directory this invocation created, when nothing but the
    marker is in it (a command that failed before writing anything)."""
    if _is_url(path) or not os.path.isdir(path):
        return
    names = os.listdir(path)
    if any(not _is_bookkeeping(name) for name in names):
        return
    for name in names:
        with contextlib.suppress(OSError):
            os.remove(os.path.join(path, name))
    with contextlib.suppress(OSError):
        os.rmdir(path)


def is_ours_dir(path: str, command: str | None = None) -> bool:
    """Whether ``path`` is a directory wikisum claimed (for ``command``, when given)."""
    if not _is_dir(path):
        return False
    marker = read_marker(path)
    return marker is not None and (command is None or marker.get("command") in (None, command))


def remove_dir(path: str, command: str) -> None:
    """Delete ``command``'s output directory ``path`` and everything in it, if it is there.

    Raises:
        NotOurs: ``path`` is there and is not ``command``'s (nothing is deleted).
    """
    if not _exists(path):
        return
    if not is_ours_dir(path, command):
        raise NotOurs(f"{path} is not an output of `wikisum {command}`; not deleting it")
    files.delete(path.rstrip("/") + "/" if _is_url(path) else path)


# -- file outputs --------------------------------------------------------------------------


def _files_record(folder: str) -> dict:
    path = _join(folder, FILES)
    if not _exists(path):
        return {}
    try:
        value = json.loads(_read(path).decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}
    return value.get("files", {}) if isinstance(value, dict) else {}


def _write_files_record(folder: str, files: dict) -> None:
    path = _join(folder, FILES)
    if not files:
        if _exists(path):
            _delete(path)
        return
    body = {"written_by": "wikisum", "about": "files wikisum wrote in this folder, with the "
            "SHA-256 of what it left; wikisum replaces only these", "files": files}
    _write(path, (json.dumps(body, indent=1, sort_keys=True) + "\n").encode("utf-8"))


def file_entry(path: str) -> dict | None:
    folder, name = _folder_and_name(path)
    return _files_record(folder).get(name)


def is_ours_file(path: str, command: str | None = None) -> bool:
    """Whether the file at ``path`` is one wikisum wrote (by ``command``, when given) and left
    as it is: the folder's record lists it with these bytes' SHA-256, or as being written."""
    entry = file_entry(path)
    if entry is None or (command is not None and entry.get("command") not in (None, command)):
        return False
    if entry.get("state") == WRITING:
        return True
    return entry.get("sha256") == sha256(path)


def check_file(path: str, command: str, option: str = "--out") -> None:
    """``path`` may be written by ``command``: missing, or a file ``command`` wrote.

    Raises:
        NotOurs: a directory is there, or a file wikisum did not write (or that changed since).
    """
    where = f"wikisum {command}: {option} {path}"
    if not _exists(path):
        if not _is_url(path):
            parent = os.path.dirname(os.path.abspath(path))
            probe = parent
            while probe and not os.path.exists(probe):
                probe = os.path.dirname(probe)
            if probe and not os.path.isdir(probe):
                raise NotOurs(f"{where}: {probe} is a file, not a directory")
        return
    if not _is_url(path) and os.path.islink(path):
        raise NotOurs(f"{where} is a symbolic link (to {os.readlink(path)}); wikisum writes "
                      "nothing through a link: give a new path")
    if _is_dir(path):
        name = {"vocab": "vocab.model", "evaluate": "metrics.json",
                "decode": "preds.jsonl"}.get(command, "NAME")
        raise NotOurs(f"{where} is a directory; this option takes a file's path "
                      f"(e.g. {option} {_join(path.rstrip('/'), name)})")
    entry = file_entry(path)
    if entry is None:
        raise NotOurs(f"{where} is a file wikisum did not write; give a new path (it is never "
                      "overwritten)")
    owner = entry.get("command")
    if owner and owner != command:
        raise NotOurs(f"{where} was written by `wikisum {owner}`, not `wikisum {command}`; "
                      "give a new path")
    if entry.get("state") != WRITING and entry.get("sha256") != sha256(path):
        raise NotOurs(f"{where} changed since wikisum wrote it; give a new path (it is never "
                      "overwritten)")


def begin_file(path: str, command: str) -> None:
    """Record that ``command`` is writing ``path`` (so that a run stopped halfway may resume or
    replace it). Check it with :func:`check_file` first."""
    folder, name = _folder_and_name(path)
    if not _is_url(folder):
        os.makedirs(folder, exist_ok=True)
    files = _files_record(folder)
    previous = files.get(name, {})
    files[name] = {"command": command, "state": WRITING, "started": _now(),
                   **({"sha256": previous["sha256"]} if "sha256" in previous else {})}
    _write_files_record(folder, files)


def end_file(path: str, command: str) -> None:
    """Record the bytes ``command`` left at ``path`` (or forget the entry if it wrote none)."""
    folder, name = _folder_and_name(path)
    files = _files_record(folder)
    if _exists(path) and not _is_dir(path):
        files[name] = {"command": command, "sha256": sha256(path), "written": _now()}
    else:
        files.pop(name, None)
    _write_files_record(folder, files)


# -- one command's outputs -----------------------------------------------------------------


class Guard:
    """A command's outputs, checked before it runs and recorded after.

    ``check()`` refuses (:class:`NotOurs`) before anything is written; ``lock()`` takes each
    output's lock (:mod:`wikisum.core.outputlocks`: a second command on the same output
    stops); ``claim()`` marks the directories and records the files as being written;
    ``finish(ok)`` records the bytes of each file output, drops the locks and, for a command
    that failed, removes directories it created that hold nothing but the marker, so that the
    corrected command is not refused."""

    def __init__(self, command: str, outputs: list[Output]):
        self.command = command
        self.outputs = outputs
        self._created: list[str] = []
        self._claimed_files: list[str] = []
        self._locks: list = []
        self.stale: list[tuple[Output, dict]] = []

    def lock(self) -> None:
        """Lock every local output, then check them again (another command may have written
        there between the first check and the lock).

        Raises:
            outputlocks.Busy: another command holds one of them (the ones taken are dropped).
            NotOurs: as :meth:`check`.
        """
        from wikisum.core import outputlocks

        try:
            for out in self.outputs:
                created = out.kind == "dir" and not _is_url(out.path) \
                    and not os.path.exists(out.path)
                held = outputlocks.acquire(out.path, out.kind, self.command, out.option)
                if created:
                    self._created.append(out.path)
                if held is not None:
                    self._locks.append(held)
                    if held.stale:
                        self.stale.append((out, held.stale))
            self.check()
        except BaseException:
            self.unlock()
            for path in self._created:
                release_dir(path)
            raise

    def unlock(self) -> None:
        from wikisum.core import outputlocks

        while self._locks:
            outputlocks.release(self._locks.pop())

    def check(self) -> None:
        for out in self.outputs:
            if out.kind == "dir":
                check_dir(out.path, self.command, out.option)
            else:
                check_file(out.path, self.command, out.option)

    def claim(self) -> None:
        for out in self.outputs:
            if out.kind == "dir":
                if claim_dir(out.path, self.command) and out.path not in self._created:
                    self._created.append(out.path)
            else:
                begin_file(out.path, self.command)
                self._claimed_files.append(out.path)

    def finish(self, ok: bool) -> None:
        for path in self._claimed_files:
            end_file(path, self.command)
        self.unlock()
        if not ok:
            for path in self._created:
                release_dir(path)


@contextlib.contextmanager
def guarded(command: str, outputs: list[Output]) -> Iterator[Guard]:
    """``check``, ``claim``, then ``finish`` around the body."""
    guard = Guard(command, outputs)
    guard.check()
    guard.lock()
    guard.claim()
    ok = False
    try:
        yield guard
        ok = True
    finally:
        guard.finish(ok)
