"""Where a long command is: progress with a rate and an ETA, and how much a command says.

One verbosity for the process (``--quiet`` / ``--verbose``, set once by the ``wikisum`` command
through :func:`set_verbosity`): quiet prints results and warnings only, verbose adds details.

:class:`Progress` draws a tqdm bar where stderr is a terminal, and otherwise (a log file, CI, a
Beam worker) writes a plain line every ``every`` seconds::

    rank: 1,200/5,000 articles (24%), 35.2 articles/s, ETA 1m48s

with the total where it is known, and a closing line with the count and the time taken. Quiet
runs show none of it.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

QUIET, NORMAL, VERBOSE = 0, 1, 2
_verbosity = NORMAL


def set_verbosity(level: int) -> None:
    """QUIET, NORMAL or VERBOSE for this process; also the root logger's level (warnings only
    when quiet, debug lines when verbose)."""
    global _verbosity
    _verbosity = level
    logging.getLogger().setLevel(
        {QUIET: logging.WARNING, NORMAL: logging.INFO, VERBOSE: logging.DEBUG}[level])


def verbosity() -> int:
    return _verbosity


def say(message: str, *, file: TextIO | None = None) -> None:
    """A line of normal output (silent under ``--quiet``)."""
    if _verbosity >= NORMAL:
        print(message, file=file or sys.stdout, flush=True)


def detail(message: str, *, file: TextIO | None = None) -> None:
    """A line only ``--verbose`` shows."""
    if _verbosity >= VERBOSE:
        print(message, file=file or sys.stderr, flush=True)


def format_seconds(seconds: float) -> str:
    """42s, 3m05s, 2h01m."""
    seconds = max(0, int(round(seconds)))
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def progress_line(what: str, done: int, total: int | None, unit: str, rate: float) -> str:
    """'what: done/total unit (pct%), rate unit/s, ETA t' (no total: no share and no ETA)."""
    line = f"{what}: {done:,}"
    if total:
        line += f"/{total:,} {unit} ({100 * done / total:.0f}%)"
    else:
        line += f" {unit}"
    line += f", {rate:,.1f} {unit}/s"
    if total and rate > 0 and done < total:
        line += f", ETA {format_seconds((total - done) / rate)}"
    return line


class Progress:
    """Progress of one piece of work: ``update(n)`` as items finish, ``close()`` (or a ``with``
    block) at the end.

    Args:
        what: the name shown first ("rank", "decode test").
        total: how many items there will be, where known (an ETA needs it).
        unit: what an item is ("articles", "steps", "examples").
        every: seconds between plain lines (no terminal).
        bar: a tqdm bar (default: when ``stream`` is a terminal and tqdm is installed).
        initial: items already done (a resumed run).
        stream: where it goes (stderr).
    """

    def __init__(self, what: str, total: int | None = None, unit: str = "items",
                 every: float = 10.0, bar: bool | None = None, initial: int = 0,
                 stream: TextIO | None = None):
        self.what, self.total, self.unit, self.every = what, total, unit, every
        self.stream = stream or sys.stderr
        self.done = self.start_done = initial
        self.enabled = _verbosity >= NORMAL
        self.started = self.last = time.monotonic()
        self.postfix = ""
        self._bar = None
        if bar is None:
            bar = bool(getattr(self.stream, "isatty", lambda: False)())
        if self.enabled and bar:
            try:
                from tqdm import tqdm
            except ImportError:  # plain lines then
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=total, initial=initial, desc=what, unit=f" {unit}",
                                 file=self.stream, dynamic_ncols=True, leave=True)

    def update(self, n: int = 1, postfix: str = "") -> None:
        self.done += n
        if postfix:
            self.postfix = postfix
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.update(n)
            if postfix:
                self._bar.set_postfix_str(postfix, refresh=False)
            return
        now = time.monotonic()
        if now - self.last >= self.every:
            self.last = now
            self._write(self._line(now))

    def set_total(self, total: int | None) -> None:
        self.total = total
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def _line(self, now: float) -> str:
        # the rate counts this run's items only (a resumed run's earlier ones took no time)
        elapsed = now - self.started
        rate = (self.done - self.start_done) / elapsed if elapsed > 0 else 0.0
        line = progress_line(self.what, self.done, self.total, self.unit, rate)
        return f"{line}, {self.postfix}" if self.postfix else line

    def _write(self, line: str) -> None:
        print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if not self.enabled:
            return
        if self._bar is not None:
            self._bar.close()
            self._bar = None
            return
        elapsed = time.monotonic() - self.started
        tail = f", {self.postfix}" if self.postfix else ""
        self._write(f"{self.what}: {self.done:,} {self.unit} in {format_seconds(elapsed)}{tail}")
        self.enabled = False

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class WorkerProgress:
    """Progress inside a Beam DoFn: a plain log line every ``every`` seconds per worker
    process ("rank worker: 1,200 articles, 35.2/s"), never a bar (workers have no terminal and
    run in parallel). Totals are the launcher's business; a worker only knows its own share.
    """

    def __init__(self, what: str, unit: str = "items", every: float = 30.0):
        self.what, self.unit, self.every = what, unit, every
        self.done = 0
        self.started = self.last = None

    def update(self, n: int = 1) -> None:
        now = time.monotonic()
        if self.started is None:
            self.started = self.last = now
        self.done += n
        if now - self.last >= self.every:
            self.last = now
            rate = self.done / max(now - self.started, 1e-9)
            logging.getLogger("wikisum.progress").info(
                "%s: %s %s, %.1f %s/s", self.what, f"{self.done:,}", self.unit, rate, self.unit)
