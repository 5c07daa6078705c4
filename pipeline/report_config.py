"""What ``wikisum report`` is asked to do: :class:`ReportConfig` and its defaults.

Apart from the job (:mod:`wikisum.pipeline.report`, which imports Beam and numpy) so that the
command line shows these defaults without importing it: each is declared here once.
"""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_LENGTHS = (100, 500, 1000, 2000, 4000, 11000)  # input lengths L of the recall curves
BOOTSTRAP_SAMPLES = 1000


@dataclass(frozen=True)
class ReportConfig:
    data: str
    out: str
    split: str = "dev"
    lengths: tuple[int, ...] = DEFAULT_LENGTHS
    sample: int | None = None  # score only this many articles (the smallest stable hashes)
    bootstrap: int = BOOTSTRAP_SAMPLES
    seed: int = 0
    per_article_in_json: int = 100  # per-article rows also copied into metrics.json
