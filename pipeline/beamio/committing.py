"""How a job's outputs become visible all at once (the guarantee of Beam's own file sinks):

    rows --WriteShards--> NAME-SSSSS-of-NNNNN.parquet under OUT/.temp-TOKEN/  (Staged records)
    every Staged record, the job's tallies --Commit--> one step, after everything is staged:
        1. delete the completion record (summary.json, dataset.json, ...)
        2. delete the job's earlier outputs that this run does not replace
        3. rename every staged file to its final name (a retried commit skips what is done)
        4. write the completion record, last
        5. delete OUT/.temp-TOKEN/

A job killed before step 1 leaves the earlier output whole and untouched; killed after it, no
completion record, so every reader refuses the output and names the command to rerun.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterable
from typing import NamedTuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from wikisum.core import shards

log = logging.getLogger("wikisum.beam")

class Staged(NamedTuple):
    """A file written under a temporary name, to be renamed to ``final`` by :class:`Commit`."""

    final: str
    temporary: str
    rows: int


def new_token() -> str:
    """A run's name for its temporary folder (no filesystem access)."""
    return time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + "-" + uuid.uuid4().hex[:8]


def temp_dir(out: str, token: str) -> str:
    """Where a run stages its files: hidden, so no reader's glob sees them."""
    return FileSystems.join(out, f".temp-{token}")


def staging_path(staging: str, final: str) -> str:
    """Where one attempt stages the file that becomes ``final``: a name of its own per attempt,
    so a retried bundle never writes over the file a slower twin may still be writing (Commit
    takes the attempt whose Staged record came out)."""
    return FileSystems.join(staging, f"{final.rsplit('/', 1)[-1]}.{uuid.uuid4().hex[:12]}")


def describe_set(paths: list[str]) -> str:
    """A set of output files in one line: the first and the last, and how many."""
    paths = sorted(paths)
    if len(paths) == 1:
        return paths[0]
    return f"{paths[0]} ... {paths[-1].rsplit('/', 1)[-1]} ({len(paths)} files)"


def stage_text(path: str, staging: str, text: str) -> Staged:
    """A small text file, staged like a shard (call it inside a step of the job)."""
    temporary = staging_path(staging, path)
    shards.write_text(temporary, text)
    return Staged(path, temporary, text.count("\n"))


def publish(s: Staged) -> None:
    """One staged file renamed to its final name; one already renamed (a retried commit) is
    left as it is.

    Raises:
        FileNotFoundError: it is neither at its temporary nor at its final name.
    """
    if FileSystems.exists(s.temporary):
        shards.rename(s.temporary, s.final)
    elif not FileSystems.exists(s.final):
        raise FileNotFoundError(f"{s.temporary} was staged but is gone, and {s.final} is not "
                                "there; rerun the job")


def commit(staged: list[Staged], record: str, record_text: str, clear: Iterable[str],
           staging: str | None = None, obsolete: Iterable[str] = ()) -> None:
    """Make staged files visible and write the completion record last (steps 1-5 above).

    Idempotent, so that a retried step finishes the job: a staged file already renamed is
    taken as done; earlier outputs are matched by the ``clear`` globs and deleted unless this
    run writes a file of the same name. Files matching the ``obsolete`` globs (state the job
    kept while it ran) are deleted after the record is written.

    Raises:
        FileNotFoundError: a staged file is neither at its temporary nor at its final name.
    """
    if FileSystems.exists(record):
        FileSystems.delete([record])
    finals = {s.final for s in staged}
    for pattern in clear:
        stale = [path for path in shards.match(pattern) if path not in finals]
        if stale:
            FileSystems.delete(stale)
    for s in sorted(staged):
        publish(s)
    shards.write_text(record, record_text)
    for pattern in obsolete:
        shards.delete(pattern)
    if staging is not None:
        shards.remove_dir(staging)
    log.info("committed %d file(s) and %s", len(staged), record)


class Commit(beam.PTransform):
    """Every Staged record of a job -> its files visible, then its completion record, in one step
    that runs once everything is staged (:func:`commit`). ``record_text(staged, *side)`` makes
    the record's text from the staged files and the ``side`` inputs (singletons: a summary
    from the job's tallies, say)."""

    def __init__(self, record: str, record_text: Callable[..., str], clear: Iterable[str],
                 staging: str, side: Iterable = (), obsolete: Iterable[str] = ()):
        super().__init__()
        self.record, self.record_text = record, record_text
        self.clear, self.staging, self.side = list(clear), staging, list(side)
        self.obsolete = list(obsolete)

    def expand(self, staged):
        record, record_text, clear, staging, obsolete = (
            self.record, self.record_text, self.clear, self.staging, self.obsolete)

        def run(files, *side):
            files = sorted(files)
            commit(files, record, record_text(files, *side), clear, staging, obsolete)
            return record

        # One element whose step sees every staged file as a side input (ready only once all
        # are staged); a list made by a combine took seven steps more.
        return (staged.pipeline | "Once" >> beam.Impulse()
                | "CommitFiles" >> beam.Map(
                    lambda _, files, *side: run(files, *side), beam.pvalue.AsList(staged),
                    *[beam.pvalue.AsSingleton(s) for s in self.side]))


class CommitRun(beam.PTransform):
    """Staged files -> the run's ``summary`` text (a singleton PCollection) staged beside them as
    ``summary-RUN.json``, then everything committed with ``summary.json`` (the same text)
    written last; files matching the ``obsolete`` globs (state the run kept while it ran) are
    deleted then. The commit of jobs that keep one summary per run (crawl, cc-fetch)."""

    def __init__(self, out: str, run_id: str, staging: str, summary,
                 obsolete: Iterable[str] = ()):
        super().__init__()
        self.out, self.run_id, self.staging = out, run_id, staging
        self.summary, self.obsolete = summary, list(obsolete)

    def expand(self, staged):
        summary = self.summary
        run_summary = FileSystems.join(self.out, f"summary-{self.run_id}.json")
        staging = self.staging
        staged_summary = summary | "StageRunSummary" >> beam.Map(
            lambda text: stage_text(run_summary, staging, text))
        return ((staged, staged_summary) | "AllStaged" >> beam.Flatten()
                | "Commit" >> Commit(FileSystems.join(self.out, "summary.json"),
                                     lambda files, text: text, [], staging, side=[summary],
                                     obsolete=self.obsolete))
