"""What the Beam jobs count and the summary they write: one vocabulary of tallies and one
schema of ``summary.json``, for every job that settles each record it reads (ingest, rank,
crawl, cc-fetch).

A tally is ``((stage, outcome), n)``: ``n`` records of ``stage`` had ``outcome``. Per stage,
:data:`IN` counts what entered it, :data:`KEPT` what it passed on, and every other outcome is
the reason it dropped something, so that

    in = kept + sum(dropped)

which the summary checks for every stage (``balanced``). The jobs emit tallies with
:func:`wikisum.pipeline.beamio.tally` (or a :class:`~wikisum.pipeline.beamio.Tallying` DoFn),
sum them (:class:`~wikisum.pipeline.beamio.SumTallies`), and make their summary with
:func:`job_summary`::

    {"job": "wikisum ingest", "format": 3, "options": {the job's config},
     "stages": {"pages": {"in": 9, "kept": 6, "dropped": {"redirect": 3}, "balanced": true},
                ...},
     "balanced": true,  # every stage is
     ...}               # the job's own keys: ingest's shards; crawl's run_id, outcomes, ...

Tallies of other things (failures by cause, bytes fetched) take the same form under a name
that is not an accounted stage. Nothing here imports Beam.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import asdict

IN = "_in"  # the outcome that counts what entered a stage
KEPT = "kept"  # the outcome that counts what a stage passed on; any other one is a drop

# The stages of a job that reads URL lists (crawl, cc-fetch).
LINES = "lines"  # every line of the lists -> distinct URLs (dropped: ignored, duplicate)
URLS = "urls"  # distinct URLs -> fetched (dropped: by outcome)

SUMMARY_KEYS = ("job", "format", "options", "stages", "balanced")

Tally = tuple[tuple[str, str], int]


def by_stage(tallies: Iterable[Tally]) -> dict[str, Counter]:
    """Tallies summed per stage: {stage: Counter(outcome -> n)}."""
    counts: dict[str, Counter] = {}
    for (stage_name, outcome), n in tallies:
        counts.setdefault(stage_name, Counter())[outcome] += n
    return counts


def stage(entered: int, kept: int, dropped: Mapping[str, int]) -> dict:
    """One stage's accounting: ``in``, ``kept``, ``dropped`` (by reason) and ``balanced``."""
    dropped = dict(sorted(dropped.items()))
    return {"in": entered, "kept": kept, "dropped": dropped,
            "balanced": entered == kept + sum(dropped.values())}


def stages(tallies: Iterable[Tally], names: Iterable[str] | None = None) -> dict[str, dict]:
    """The accounting (:func:`stage`) of every stage named, from the tallies; ``names`` None:
    of every stage tallied, in name order."""
    counts = by_stage(tallies)
    out = {}
    for name in sorted(counts) if names is None else names:
        c = counts.get(name, Counter())
        out[name] = stage(c[IN], c[KEPT], {k: v for k, v in c.items() if k not in (IN, KEPT)})
    return out


def job_summary(command: str, config, tallies: Iterable[Tally],
                accounted: Iterable[str] | None = None, **extra) -> dict:
    """A job's ``summary.json``: ``job`` ("wikisum COMMAND"), ``format``, ``options`` (its
    config dataclass), ``stages`` (the :func:`stages` of the ``accounted`` stages; None: of
    every stage tallied), ``balanced`` (every stage is), and the job's own keys, ``extra``."""
    from wikisum.core.schemas import FORMAT_VERSION  # pyarrow: only when a summary is made

    clash = set(extra) & set(SUMMARY_KEYS)
    if clash:
        raise ValueError(f"a job's own summary keys may not be {sorted(clash)}")
    accounts = stages(tallies, accounted)
    return {"job": f"wikisum {command}", "format": FORMAT_VERSION, "options": asdict(config),
            "stages": accounts, "balanced": all(s["balanced"] for s in accounts.values()),
            **extra}


def summary_json(summary: Mapping) -> str:
    """The text of ``summary.json``."""
    return json.dumps(summary, indent=1, sort_keys=True) + "\n"
