"""What a run knows of the data it was trained on: the length of the targets, from which
decoding takes its default ``max_len``.

``wikisum train`` writes ``RUN/data_stats.json`` when it prepares a run (and into a run that
lacks it when resumed)::

    {"split": "train", "examples": 9812, "read": 9812, "max_target_tokens": null,
     "target_tokens": {"mean": 61.2, "p50": 55, "p90": 104, "p99": 171, "max": 390}}

Target lengths count wordpieces as decoding does, ``</s>`` included, after training's
``max_target_tokens`` cut. At most :data:`SAMPLE_ROWS` rows are read (the shards are assigned by
a hash of the id, so their first rows are a fair sample).

``decode`` and :func:`wikisum.generation.summarize` default ``max_len`` to twice the 99th
percentile, at most :data:`MAX_LEN_CAP`: a model that never emits ``</s>`` stops at about twice
the longest usual target instead of running on. A run without the file (trained before it
existed) gets :data:`FALLBACK_MAX_LEN`, with a warning.
"""

from __future__ import annotations

import json
import math
import sys
from itertools import islice
from pathlib import Path

STATS_FILE = "data_stats.json"
SAMPLE_ROWS = 20_000
MAX_LEN_FACTOR = 2
MAX_LEN_CAP = 1024
FALLBACK_MAX_LEN = 500
DEFAULT_MAX_LEN_HELP = (f"{MAX_LEN_FACTOR} x the 99th percentile of the target length on the "
                        f"run's training data, at most {MAX_LEN_CAP}; {FALLBACK_MAX_LEN} for a "
                        f"run without {STATS_FILE}")


def percentile(ordered: list[int], q: float) -> int:
    """The nearest-rank ``q`` percentile (0 < q <= 100) of sorted values."""
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def target_lengths(dataset, max_target_tokens: int | None = None, split: str = "train",
                   rows: int = SAMPLE_ROWS) -> dict | None:
    """The target-length statistics of (the first ``rows`` rows of) ``split`` of a
    :class:`wikisum.core.loader.Dataset`; None when it has no non-empty target."""
    column = dataset.target_column
    lengths, read = [], 0
    for row in islice(dataset.rows(split, [column]), rows):
        read += 1
        n = len(row[column])
        if n:
            lengths.append(min(n, max_target_tokens or n) + 1)  # </s> included
    if not lengths:
        return None
    lengths.sort()
    return {"split": split, "examples": len(lengths), "read": read,
            "max_target_tokens": max_target_tokens,
            "target_tokens": {"mean": round(sum(lengths) / len(lengths), 2),
                              "p50": percentile(lengths, 50), "p90": percentile(lengths, 90),
                              "p99": percentile(lengths, 99), "max": lengths[-1]}}


def write(run: str | Path, dataset, max_target_tokens: int | None = None) -> dict | None:
    """Compute the statistics of ``dataset`` and write them to ``RUN/data_stats.json``."""
    from wikisum.training.checkpoint import write_text_atomically

    stats = target_lengths(dataset, max_target_tokens)
    if stats is not None:
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
    """Twice the 99th percentile of the target length, at most :data:`MAX_LEN_CAP`."""
    if not stats:
        return None
    p99 = int(stats["target_tokens"]["p99"])
    return max(1, min(MAX_LEN_CAP, MAX_LEN_FACTOR * p99))


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
