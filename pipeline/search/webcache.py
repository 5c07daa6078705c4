"""What a web search keeps between runs, in its cache folder: every answer (:class:`AnswerCache`)
and the requests sent each UTC day (:class:`QuotaLedger`). Nothing here holds a key: an answer
is filed under a hash of what decides it, the key aside.

The folder is a ``wikisum search`` output (:mod:`wikisum.core.ownership`): it holds the marker,
so that a later run, or another output's run given the same ``--cache``, takes it up again::

    CACHE/.wikisum                 the marker
    CACHE/quota-ENGINE.json        {"engine", "day" (UTC), "used"}
    CACHE/quota-ENGINE.json.lock   taken while a request is counted (runs sharing the folder)
    CACHE/answers/ab/abcd....json  {"format", "engine", "endpoint", "query", "count", "urls",
                                    "asked"}
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import logging
import os
import time
from collections.abc import Callable

from wikisum.core import ownership
from wikisum.pipeline.search.engines import Credentials, Engine

log = logging.getLogger("wikisum.search")

COMMAND = "search"  # the command whose output the cache folder is
ANSWERS = "answers"  # the subfolder of answers
CACHE_FORMAT = 1


class QuotaLedger:
    """The requests sent to one engine on the current UTC day, by every run that used this
    cache folder: ``quota-ENGINE.json`` there, rewritten whole after each request. Every request
    sent counts, a retried one too, so that the ledger errs on the side of stopping early."""

    def __init__(self, folder: str, engine: str, limit: int | None,
                 wall: Callable[[], float] = time.time):
        self.path = os.path.join(folder, f"quota-{engine}.json")
        self.engine, self.limit, self.wall = engine, limit, wall
        self.day, self.used = self.today(), 0
        try:
            with open(self.path, encoding="utf-8") as f:
                record = json.load(f)
            if record.get("day") == self.day and isinstance(record.get("used"), int):
                self.used = record["used"]
        except FileNotFoundError:
            pass
        except (OSError, ValueError, AttributeError):
            log.warning("search: %s could not be read; counting today's requests from 0",
                        self.path)

    def today(self) -> str:
        return dt.datetime.fromtimestamp(self.wall(), dt.timezone.utc).date().isoformat()

    def _roll(self) -> None:
        day = self.today()
        if day != self.day:
            self.day, self.used = day, 0

    def spent(self) -> bool:
        self._roll()
        return self.limit is not None and self.used >= self.limit

    def remaining(self) -> int | None:
        self._roll()
        return None if self.limit is None else max(0, self.limit - self.used)

    def spend(self) -> None:
        """One request more, counted under a lock on the ledger: two runs sharing the cache
        folder add up, never write over each other's counts."""
        import fcntl

        self._roll()
        with open(self.path + ".lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                with open(self.path, encoding="utf-8") as f:
                    record = json.load(f)
                if record.get("day") == self.day and isinstance(record.get("used"), int):
                    self.used = max(self.used, record["used"])
            except (OSError, ValueError, AttributeError):
                pass  # none yet, or unreadable: this run's own count stands
            self.used += 1
            write_atomic(self.path, json.dumps({"engine": self.engine, "day": self.day,
                                                "used": self.used}) + "\n")


class AnswerCache:
    """Answers on disk, one JSON file each under ``answers/`` (256 subfolders), named by the
    SHA-256 of (engine, endpoint, what else decides the answer, query, count): never the key.
    A file is written whole (a temporary name, then a rename), so a killed run leaves none
    half-written; one that does not read as an answer of that query is ignored (counted)."""

    def __init__(self, folder: str, engine: Engine, endpoint: str, credentials: Credentials,
                 wall: Callable[[], float] = time.time):
        self.folder, self.wall = folder, wall
        self.engine, self.endpoint = engine, engine.url(endpoint)
        self.identity = engine.identity(credentials)
        self.bad_entries = 0

    def path(self, query: str, count: int | None) -> str:
        key = json.dumps([self.engine.name, self.endpoint, *self.identity, query, count],
                         ensure_ascii=True)
        digest = hashlib.sha256(key.encode("ascii")).hexdigest()
        return os.path.join(self.folder, ANSWERS, digest[:2], digest + ".json")

    def get(self, query: str, count: int | None, count_bad: bool = True) -> list[str] | None:
        path = self.path(query, count)
        try:
            with open(path, encoding="utf-8") as f:
                entry = json.load(f)
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError):
            entry = None
        if (isinstance(entry, dict) and entry.get("format") == CACHE_FORMAT
                and entry.get("engine") == self.engine.name
                and entry.get("endpoint") == self.endpoint and entry.get("query") == query
                and entry.get("count") == count and isinstance(entry.get("urls"), list)
                and all(isinstance(u, str) for u in entry["urls"])):
            return entry["urls"]
        if count_bad:
            self.bad_entries += 1
            log.debug("search: cache entry %s is not an answer; asking again", path)
        return None

    def put(self, query: str, count: int | None, urls: list[str]) -> None:
        entry = {"format": CACHE_FORMAT, "engine": self.engine.name, "endpoint": self.endpoint,
                 "query": query, "count": count, "urls": urls,
                 "asked": dt.datetime.fromtimestamp(self.wall(), dt.timezone.utc).strftime(
                     "%Y-%m-%dT%H:%M:%SZ")}
        write_atomic(self.path(query, count), json.dumps(entry, ensure_ascii=True) + "\n")


def write_atomic(path: str, text: str) -> None:
    """``text`` to the local file ``path``, whole or not at all."""
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    temporary = os.path.join(folder, f".{os.path.basename(path)}.{os.getpid()}.tmp")
    with open(temporary, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(temporary, path)


def open_cache_folder(folder: str) -> None:
    """Make the cache folder, marked as a ``wikisum search`` output (core.ownership), or accept
    the one an earlier search made.

    Raises:
        ownership.NotOurs: it is a file, or holds files wikisum did not write.
    """
    ownership.check_dir(folder, COMMAND, "--cache")
    ownership.claim_dir(folder, COMMAND)
