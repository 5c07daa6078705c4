"""One writer per output: a command holds a lock on each output it writes for as long as it runs.

A second command started on the same output stops at once with a message naming the holder
(its command, process id, host and start time). The lock is the kernel's (``flock``) on a file
beside the output: ``OUT/.wikisum.lock`` for a directory, ``.NAME.wikisum-lock`` next to a file.
The kernel drops it when its holder exits however it exits, ``kill -9`` included, so a lock file
that a killed command leaves behind holds no lock: the next command takes it over and says that
the earlier one was stopped. A lock file is removed when its holder finishes.

Outputs on object stores (``gs://``, ``s3://``) have no such lock; a job writing there relies on
its completion record alone (see docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import fcntl
import json
import os
import socket
from dataclasses import dataclass

from wikisum.core import files

LOCK = ".wikisum.lock"
_RECORD_LIMIT = 4096


class Busy(Exception):
    """Another command is writing the output: the message is one line for the user."""


@dataclass
class Held:
    """A lock this process holds: its file and descriptor, and what an earlier holder that was
    stopped left in it (None when the lock was free and clean)."""

    path: str
    fd: int
    stale: dict | None


def lock_path(path: str, kind: str) -> str | None:
    """The lock file of the output at ``path`` (``kind`` ``dir`` or ``file``); None for an
    output on an object store."""
    if files.is_url(path):
        return None
    absolute = os.path.abspath(path)
    if kind == "dir":
        return os.path.join(absolute, LOCK)
    folder, name = os.path.split(absolute)
    return os.path.join(folder, f".{name}.wikisum-lock")


def _holder(fd: int) -> dict | None:
    """What the lock file's last holder wrote about itself; None when it holds nothing."""
    os.lseek(fd, 0, os.SEEK_SET)
    data = os.read(fd, _RECORD_LIMIT)
    if not data.strip():
        return None
    try:
        value = json.loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError):
        return {}
    return value if isinstance(value, dict) else {}


def describe(holder: dict | None) -> str:
    """``wikisum rank`` (pid 4121 on host-a, since 2026-11-29T07:30:00Z)."""
    if not holder:
        return "another wikisum command"
    who = f"`wikisum {holder.get('command', '?')}`"
    process = " on ".join(str(holder[k]) if k == "host" else f"pid {holder[k]}"
                          for k in ("pid", "host") if k in holder)
    facts = ", ".join(f for f in (process, f"since {holder['started']}"
                                  if "started" in holder else "") if f)
    return f"{who} ({facts})" if facts else who


def acquire(path: str, kind: str, command: str, option: str = "--out") -> Held | None:
    """Lock the output at ``path`` for ``command`` (a directory output is made if missing).

    Raises:
        Busy: another process holds the lock.
        OSError: the lock file cannot be made (the message names it), e.g. it is a symbolic
            link (never followed).
    """
    lock = lock_path(path, kind)
    if lock is None:
        return None
    os.makedirs(os.path.dirname(lock), exist_ok=True)
    while True:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise Busy(f"wikisum {command}: {option} {path}: cannot open its lock file {lock} "
                       f"({exc.strerror}); remove {lock} if it is not wikisum's") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise Busy(f"wikisum {command}: {option} {path} is being written by "
                       f"{describe(holder)}; wait for it to finish, or give another {option}"
                       ) from None
        # The holder before us may have removed the file between our open and our lock: a lock
        # on a removed file locks nothing, so open the path again.
        try:
            now = os.stat(lock, follow_symlinks=False)
        except FileNotFoundError:
            os.close(fd)
            continue
        mine = os.fstat(fd)
        if (now.st_dev, now.st_ino) != (mine.st_dev, mine.st_ino):
            os.close(fd)
            continue
        break
    stale = _holder(fd)
    record = {"command": command, "pid": os.getpid(), "host": socket.gethostname(),
              "started": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(record) + "\n").encode("utf-8"), 0)
    return Held(lock, fd, stale)


def release(held: Held | None) -> None:
    """Remove the lock file and drop the lock (in that order, so that a command waiting for
    the file cannot lock the removed one and miss the next holder's)."""
    if held is None:
        return
    with contextlib.suppress(FileNotFoundError):
        os.unlink(held.path)
    os.close(held.fd)
