"""The outputs one job leaves for the next: where they are, and the checks a reader makes that
the job that wrote them finished (its completion record is there and its shard set is whole).
Readers import this, never the job that wrote the files.
"""

from __future__ import annotations

import json

from apache_beam.io.filesystems import FileSystems

from wikisum.pipeline import shards

# ``wikisum ingest``: OUT/articles/articles-SSSSS-of-NNNNN.parquet, and OUT/summary.json written
# last (with the number of shards of each set).
INGEST_SUMMARY = "summary.json"


def article_shards_pattern(out: str) -> str:
    """The glob of the article shards an ingest run wrote into ``out``."""
    return FileSystems.join(out, "articles", "articles-*.parquet")


def read_summary(out: str) -> dict:
    """``summary.json`` of a finished ingest run in ``out``.

    Raises:
        IncompleteOutput: there is none: the job never ran there, or did not finish.
    """
    path = FileSystems.join(out, INGEST_SUMMARY)
    if not FileSystems.exists(path):
        raise shards.IncompleteOutput(
            f"{out} holds no finished ingest output ({INGEST_SUMMARY} is written last and is "
            "missing: the job did not run there, or did not finish); rerun `wikisum ingest "
            f"--out {out}`")
    try:
        return json.loads(shards.read_text(path))
    except ValueError as exc:
        raise ValueError(f"{path} does not parse ({exc}): rerun `wikisum ingest --out {out}`"
                         ) from exc


def article_shards(out: str) -> list[str]:
    """The article shards of a finished ingest output, checked to be the whole set its
    ``summary.json`` records; a clear error naming the job to rerun otherwise."""
    summary = read_summary(out)
    expected = summary.get("shards", {}).get("articles")
    return shards.complete_set(article_shards_pattern(out), expected, f"{out}: the article set",
                               f"rerun `wikisum ingest --out {out}`")
