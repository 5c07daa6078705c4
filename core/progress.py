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
import os
import shutil
import sys
import tempfile
import threading
import time
import uuid
from typing import TextIO

QUIET, NORMAL, VERBOSE = 0, 1, 2
_verbosity = NORMAL
# Beam's Dataflow runner: the submitted job, its console page, its state (shown under -v).
DATAFLOW_LOGGER = "apache_beam.runners.dataflow"


def set_verbosity(level: int) -> None:
    """QUIET, NORMAL or VERBOSE for this process, and the logging that goes with it.

    What a command has to say goes through :func:`say`, :func:`detail` and :class:`Progress`;
    log records are details. So the ``wikisum`` logger is at :func:`log_level` (its records
    show under ``--verbose`` only: a line per shard written, per host crawled), and every
    other library stays at warnings whatever the verbosity: Beam's own records (a line per
    type hint it converts, the runner it picks) say nothing a user of ``wikisum`` acts on.
    Dataflow's runner is the exception under ``--verbose``: its records name the submitted job,
    its console page and its state. One handler on stderr prints them all, whether or not Beam
    (whose options install the same one) has been imported.
    """
    global _verbosity
    _verbosity = level
    logging.basicConfig()  # nothing when the root logger has a handler already
    logging.getLogger().setLevel(logging.WARNING)
    logging.getLogger("wikisum").setLevel(log_level())
    logging.getLogger(DATAFLOW_LOGGER).setLevel(
        logging.INFO if level >= VERBOSE else logging.NOTSET)


def verbosity() -> int:
    return _verbosity


def log_level() -> int:
    """The level of the ``wikisum`` logger for this verbosity: warnings only, unless verbose
    (then debug lines too)."""
    return logging.DEBUG if _verbosity >= VERBOSE else logging.WARNING


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

    def note(self, line: str) -> None:
        """A line of its own (a result along the way), above the bar where one is drawn;
        silent when quiet."""
        if _verbosity < NORMAL:
            return
        if self._bar is not None:
            self._bar.write(line, file=self.stream)
        else:
            self._write(line)

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
    """Progress inside a Beam DoFn, never a bar (workers have no terminal and run in parallel).

    Where the launcher watches the job (a local runner, :func:`watch_job`), it names a spool
    folder in ``WIKISUM_PROGRESS_SPOOL``, which in-process workers see and worker processes
    inherit: the count then goes to a small file of this instance's there, at most every
    ``SPOOL_EVERY_S`` seconds and at :meth:`flush` (call it in ``finish_bundle``), and the
    launcher shows the sum of every worker's count against the total it knows. Elsewhere
    (Dataflow, a test pipeline) a plain log line every ``every`` seconds per worker
    ("rank: 1,200 articles, 35.2 articles/s"): a worker only knows its own share.

    Args:
        what: the name in log lines ("rank").
        unit: what an item is ("articles").
        every: seconds between log lines.
        key: the spool counter this feeds (default: ``unit``); the launcher sums by key.
    """

    def __init__(self, what: str, unit: str = "items", every: float = 30.0,
                 key: str | None = None):
        self.what, self.unit, self.every = what, unit, every
        self.key = key or unit
        self._reset()

    def _reset(self) -> None:
        self.done = 0
        self.started = self.last = None
        self._lock = threading.Lock()
        self._spool: str | None = None  # the file this instance's count goes to, if any
        self._spooled = None  # when it was last written

    def __getstate__(self) -> dict:  # a DoFn's copy on a worker counts from zero, on its own
        return {"what": self.what, "unit": self.unit, "every": self.every, "key": self.key}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._reset()

    def update(self, n: int = 1) -> None:
        with self._lock:
            now = time.monotonic()
            if self.started is None:
                self.started = self.last = now
                self._spool = spool_file(self.key)
            self.done += n
            if self._spool is not None:
                if self._spooled is None or now - self._spooled >= SPOOL_EVERY_S:
                    self._spooled = now
                    write_count(self._spool, self.done)
                return
            if now - self.last >= self.every:
                self.last = now
                rate = self.done / max(now - self.started, 1e-9)
                logging.getLogger("wikisum.progress").info(
                    "%s: %s %s, %.1f %s/s", self.what, f"{self.done:,}", self.unit, rate,
                    self.unit)

    def flush(self) -> None:
        """Write the count to the spool now (the launcher's last read is then exact)."""
        with self._lock:
            if self._spool is not None:
                self._spooled = time.monotonic()
                write_count(self._spool, self.done)


# ------------------------------------------------------------------------------------------
# A local Beam job, watched by its launcher

SPOOL_ENV = "WIKISUM_PROGRESS_SPOOL"
SPOOL_EVERY_S = 0.5  # how often a worker rewrites its count
POLL_S = 1.0  # how often the launcher sums them
JOB_EVERY_S = 10.0  # seconds between the launcher's plain lines
# Runners whose workers run on this machine (threads or child processes): they see the spool.
LOCAL_RUNNERS = ("directrunner", "bundlebaseddirectrunner", "switchingdirectrunner",
                 "fnapirunner", "localrunner", "prismrunner", "direct", "prism")


def spool_file(key: str) -> str | None:
    """A file of its own in the launcher's spool folder for one counter of one worker
    instance, or None when no launcher watches."""
    folder = os.environ.get(SPOOL_ENV)
    if not folder or not os.path.isdir(folder):
        return None
    return os.path.join(folder, f"{key}~{os.getpid()}~{uuid.uuid4().hex[:12]}")


def write_count(path: str, n: int) -> None:
    """Replace the count in ``path`` (atomically: a reader never sees half a number)."""
    folder, name = os.path.split(path)
    temporary = os.path.join(folder, f".{name}")
    try:
        with open(temporary, "w") as f:
            f.write(f"{n}\n")
        os.replace(temporary, path)
    except OSError:  # the launcher has gone and taken its folder: nobody is watching
        pass


def read_spool(folder: str) -> dict[str, int]:
    """Every worker's count in a spool folder, summed by key."""
    counts: dict[str, int] = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return counts
    for name in names:
        if name.startswith(".") or "~" not in name:
            continue
        try:
            with open(os.path.join(folder, name)) as f:
                n = int(f.read().strip() or 0)
        except (OSError, ValueError):
            continue
        key = name.split("~", 1)[0]
        counts[key] = counts.get(key, 0) + n
    return counts


def is_local_runner(runner) -> bool:
    """Whether a Beam runner (a name, a runner object or None: the default, DirectRunner)
    runs its workers on this machine, where they can report to the launcher."""
    if runner is None:
        return True
    name = runner if isinstance(runner, str) else type(runner).__name__
    return name.rsplit(".", 1)[-1].strip().lower() in LOCAL_RUNNERS


def counts_postfix(counts: dict[str, int], keys) -> str:
    """'12,345 pages, 678 records' for the counters of ``keys`` that have counted anything."""
    return ", ".join(f"{counts[k]:,} {k}" for k in keys if counts.get(k))


class JobProgress:
    """The launcher's view of a local Beam job while it runs: the job's workers count into a
    spool folder (:class:`WorkerProgress`), a thread sums them every ``POLL_S`` seconds and
    feeds a :class:`Progress` with the total where the launcher knows it (a bar on a terminal,
    plain lines with rate and ETA elsewhere). Use it as a ``with`` block around the run.

    Args:
        what: the name shown first ("ingest", "build [3/3] rank").
        key: the counter that moves towards ``total`` (a WorkerProgress key).
        unit: what it counts (default: ``key``).
        total: how many there will be, or a function that says (called only when something
            is shown; an error there leaves the total unknown).
        others: further counters shown after it ("1,234 pages, 5,678 records").
    """

    def __init__(self, what: str, key: str, unit: str | None = None, total=None,
                 others: tuple[str, ...] = (), every: float | None = None,
                 stream: TextIO | None = None):
        self.what, self.key, self.unit, self.others = what, key, unit or key, tuple(others)
        self.total, self.every, self.stream = total, every, stream
        self.progress: Progress | None = None
        self.counts: dict[str, int] = {}
        self._folder: str | None = None
        self._previous_env: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> JobProgress:
        self._folder = tempfile.mkdtemp(prefix="wikisum-progress-")
        self._previous_env = os.environ.get(SPOOL_ENV)
        os.environ[SPOOL_ENV] = self._folder
        if _verbosity >= NORMAL:  # quiet: the spool still keeps the workers' lines away
            total = self.total
            if callable(total):
                try:
                    total = total()
                except Exception as exc:  # the job itself says what is wrong with its input
                    detail(f"{self.what}: no total ({type(exc).__name__}: {exc})")
                    total = None
            self.progress = Progress(self.what, total, self.unit,
                                     every=JOB_EVERY_S if self.every is None else self.every,
                                     stream=self.stream)
            self.progress.note(f"{self.what}: " + (f"{total:,} {self.unit} in all" if total
                                                   else f"counting {self.unit}"))
            self._thread = threading.Thread(target=self._watch, name="wikisum-progress",
                                            daemon=True)
            self._thread.start()
        return self

    def _watch(self) -> None:
        while not self._stop.wait(POLL_S):
            self.poll()

    def poll(self) -> None:
        """Read the workers' counts and move the progress to them."""
        if self._folder is None:
            return
        self.counts = read_spool(self._folder)
        if self.progress is not None:
            done = self.counts.get(self.key, 0)
            self.progress.update(max(0, done - self.progress.done),
                                 postfix=counts_postfix(self.counts, self.others))

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.poll()
        if self.progress is not None:
            self.progress.close()
        if self._previous_env is None:
            os.environ.pop(SPOOL_ENV, None)
        else:
            os.environ[SPOOL_ENV] = self._previous_env
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None

