"""What a run knows of the data it was trained on: the length of the targets, from which
decoding takes its default ``max_len``.

``wikisum train`` writes ``RUN/data_stats.json`` when it prepares a run (and into a run that
lacks it when resumed)::

    {"split": "train", "target": "lead", "examples": 9812, "read": 9812,
     "max_target_tokens": null, "long_targets": "cut",
     "target_tokens": {"mean": 61.2, "p50": 55, "p90": 104, "p99": 171, "max": 390},
     "over_limit": {"examples": 0, "of": 9812, "share": 0.0}}

Target lengths count wordpieces as decoding does, ``</s>`` included, as training sees them:
cut to ``max_target_tokens``, or without the longer ones where training skips them. At most
:data:`SAMPLE_ROWS` rows are read (the shards are assigned by a hash of the id, so their first
rows are a fair sample). ``over_limit`` counts the non-empty targets of the whole split longer
than ``max_target_tokens`` (:func:`over_limit`): what training skips or cuts, said in its
start-up lines.

``decode`` and :func:`wikisum.generation.summarize` default ``max_len`` to twice the 99th
percentile, at most :data:`MAX_LEN_CAP` (:data:`ARTICLE_MAX_LEN_CAP` for whole articles, the
paper's longest): a model that never emits ``</s>`` stops at about twice the longest usual
target instead of running on. A run without the file (trained before it existed) gets
:data:`FALLBACK_MAX_LEN`, with a warning.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Iterator
from itertools import chain, islice
from pathlib import Path

STATS_FILE = "data_stats.json"
SAMPLE_ROWS = 20_000
MAX_LEN_FACTOR = 2
MAX_LEN_CAP = 1024
ARTICLE_MAX_LEN_CAP = 4000  # the paper's title-only model writes articles up to 4,000 tokens
FALLBACK_MAX_LEN = 500
DEFAULT_MAX_LEN_HELP = (f"{MAX_LEN_FACTOR} x the 99th percentile of the target length on the "
                        f"run's training data, at most {MAX_LEN_CAP} ({ARTICLE_MAX_LEN_CAP} "
                        f"for whole articles); {FALLBACK_MAX_LEN} for a run without "
                        f"{STATS_FILE}")


def percentile(ordered: list[int], q: float) -> int:
    """The nearest-rank ``q`` percentile (0 < q <= 100) of sorted values."""
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def split_target_lengths(dataset, split: str = "train", target: str = "lead"
                         ) -> Iterator[int]:
    """The length of every ``target`` of ``split`` in shard order, ``</s>`` not counted: for
    an article the last of its ``section_boundaries`` (a few integers a row, not its ids)."""
    if dataset.kind != "pairs" and target == "article":
        for row in dataset.rows(split, ["section_boundaries"]):
            bounds = row["section_boundaries"]
            yield int(bounds[-1]) if bounds else 0
        return
    column = dataset.target_column(target)
    for row in dataset.rows(split, [column]):
        yield len(row[column] or ())


def over_limit(lengths: Iterable[int], max_target_tokens: int | None) -> dict:
    """How many of the non-empty ``lengths`` are longer than ``max_target_tokens``:
    ``{"examples", "of", "share"}`` (all 0 without a limit, nothing read)."""
    over = total = 0
    if max_target_tokens is not None:
        for n in lengths:
            if n:
                total += 1
                over += n > max_target_tokens
    return {"examples": over, "of": total, "share": round(over / total, 6) if total else 0.0}


def length_stats(lengths: Iterable[int], max_target_tokens: int | None = None,
                 split: str = "train", *, target: str = "lead",
                 long_targets: str = "cut") -> dict | None:
    """The statistics of target ``lengths`` (``</s>`` not counted) as training sees them
    (``long_targets`` "cut" or "skip" past ``max_target_tokens``); None when none is
    non-empty."""
    kept, read = [], 0
    for n in lengths:
        read += 1
        if not n or (long_targets == "skip" and max_target_tokens and n > max_target_tokens):
            continue
        kept.append(min(n, max_target_tokens or n) + 1)  # </s> included
    if not kept:
        return None
    kept.sort()
    return {"split": split, "target": target, "examples": len(kept), "read": read,
            "max_target_tokens": max_target_tokens, "long_targets": long_targets,
            "target_tokens": {"mean": round(sum(kept) / len(kept), 2),
                              "p50": percentile(kept, 50), "p90": percentile(kept, 90),
                              "p99": percentile(kept, 99), "max": kept[-1]}}


def target_lengths(dataset, max_target_tokens: int | None = None, split: str = "train",
                   rows: int = SAMPLE_ROWS, *, target: str = "lead",
                   long_targets: str = "cut") -> dict | None:
    """:func:`length_stats` of (the first ``rows`` rows of) ``split`` of a
    :class:`wikisum.core.loader.Dataset`."""
    return length_stats(islice(split_target_lengths(dataset, split, target), rows),
                        max_target_tokens, split, target=target, long_targets=long_targets)


def write(run: str | Path, dataset, max_target_tokens: int | None = None, *,
          target: str = "lead", long_targets: str = "cut") -> dict | None:
    """Compute the statistics of ``dataset``'s train split (the first :data:`SAMPLE_ROWS`
    rows) and its :func:`over_limit` (the whole split, read on from those rows, in the same
    pass) and write them to ``RUN/data_stats.json``."""
    from wikisum.core.files import write_text_atomically

    stream = split_target_lengths(dataset, "train", target)
    head = list(islice(stream, SAMPLE_ROWS))
    stats = length_stats(head, max_target_tokens, target=target, long_targets=long_targets)
    if stats is not None:
        rest = stream if max_target_tokens is not None else ()
        stats["over_limit"] = over_limit(chain(head, rest), max_target_tokens)
        write_text_atomically(Path(run) / STATS_FILE, json.dumps(stats, indent=1) + "\n")
    return stats


def read(run: str | Path) -> dict | None:
    """``RUN/data_stats.json`` (a run or an export directory), or None where there is none."""
    path = Path(run) / STATS_FILE
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise ValueError(f"{path} is not JSON ({exc}); delete it and `wikisum train` the run "
                         "again (it writes the file before training on)") from exc


def max_len_from(stats: dict | None) -> int | None:
    """Twice the 99th percentile of the target length, at most :data:`MAX_LEN_CAP` (at most
    :data:`ARTICLE_MAX_LEN_CAP` for whole articles)."""
    if not stats:
        return None
    p99 = int(stats["target_tokens"]["p99"])
    cap = ARTICLE_MAX_LEN_CAP if stats.get("target") == "article" else MAX_LEN_CAP
    return max(1, min(cap, MAX_LEN_FACTOR * p99))


def default_max_len(run: str | Path, warn: bool = True) -> int:
    """The default ``max_len`` of decoding with ``run`` (module docstring)."""
    value = max_len_from(read(run))
    if value is None:
        if warn:
            print(f"warning: {Path(run) / STATS_FILE} not found (a run trained before target "
                  f"lengths were recorded): --max-len defaults to {FALLBACK_MAX_LEN}; set it "
                  "to about twice the longest usual target", file=sys.stderr, flush=True)
        return FALLBACK_MAX_LEN
    return value
