"""The dataset statistics of ``wikisum report`` (paper, Table 2), read from the ingest shards.

The shards are those the dataset was ranked from (``dataset.json``'s ``source``). Over the
scored articles: percentiles of lead size, article size (the lead and every section, headings
included), number of sections after the lead, number of citations, citation size, number of
search results and search-result size, in words; citation coverage; clones and self pages
removed; and what the ingest run dropped, by stage and reason (its ``summary.json``). Beam's
``ApproximateQuantiles`` keeps them bounded (exact on small data).
"""

from __future__ import annotations

import logging

import apache_beam as beam
from apache_beam.transforms.stats import ApproximateQuantiles

from wikisum.core import outputs, shards
from wikisum.pipeline.report_scores import split_words

log = logging.getLogger("wikisum.report")

PERCENTILES = (20, 40, 50, 60, 80, 100)
STAT_NAMES = ("lead_words", "article_words", "sections", "citations", "citation_words",
              "search_results", "search_words")
TOTAL_NAMES = ("articles", "citations_listed", "citations_found", "search_listed",
               "search_found", "clones_removed", "self_removed", "other_language_removed",
               "duplicate_references_removed", "duplicate_paragraphs_removed")


def article_stats(row: dict, lang: str | None = None
                  ) -> tuple[list[tuple[str, float]], dict[str, int]]:
    """Table 2 of the paper for one ingest article: (stat name, value) pairs, and totals; words
    are :func:`split_words` of the dataset's language."""
    citations = [r for r in row["references"] if "citation" in r["sources"]]
    search = [r for r in row["references"] if "search" in r["sources"]]

    def count(text):
        return len(split_words(text, lang))

    def ref_words(ref):
        return sum(count(p) for p in ref["paragraphs"])

    sections = row.get("sections") or []
    # the whole article, as its targets hold it (section 6): the lead, then each heading and text
    article = count(row["lead"]) + sum(count(s["title"]) + count(s["text"]) for s in sections)
    values = [("lead_words", count(row["lead"])), ("article_words", article),
              ("sections", len(sections)), ("citations", len(citations)),
              ("search_results", len(search))]
    values += [("citation_words", ref_words(r)) for r in citations]
    values += [("search_words", ref_words(r)) for r in search]
    totals = {"articles": 1}
    for name in TOTAL_NAMES[1:]:
        totals[name] = int(row.get(name) or 0)  # format 1 shards lack the newer counts
    return values, totals


def source_shards(info: dict) -> list[str]:
    """The finished ingest output the dataset was ranked from (for the statistics), or []
    with a warning when it is not there any more."""
    source = info.get("source")
    if not source:
        return []
    try:
        return outputs.article_shards(source)
    except (FileNotFoundError, ValueError) as exc:
        log.warning("report: no dataset statistics: %s", exc)
        return []


class DatasetStatistics(beam.PTransform):
    """Scored articles -> the paper's Table 2 over the same articles of the ingest output the
    dataset came from: (name, percentiles) and (name, total)."""

    def __init__(self, info):
        super().__init__()
        self.info = info

    def expand(self, scored):
        ids = beam.pvalue.AsDict(scored | "Ids" >> beam.Map(lambda m: (m["id"], True)))
        stats = (self.info | "SourceShards" >> beam.FlatMap(source_shards)
                 | "Spread" >> beam.Reshuffle()
                 | "ReadIngest" >> beam.io.ReadAllFromParquet()
                 | "SameArticles" >> beam.Filter(lambda r, keep: r["id"] in keep, ids)
                 | "Stats" >> beam.Map(lambda r, i: article_stats(r, i["language"]),
                                       beam.pvalue.AsSingleton(self.info)))
        quantiles = (stats | "Values" >> beam.FlatMap(lambda vt: vt[0])
                     | "Quantiles" >> ApproximateQuantiles.PerKey(101))
        totals = (stats | "Totals" >> beam.FlatMap(lambda vt: vt[1].items())
                  | "SumTotals" >> beam.CombinePerKey(sum))
        return {"quantiles": quantiles, "totals": totals}


def ingest_drops(source: str | None) -> dict[str, dict[str, int]] | None:
    """What the ingest run the dataset was ranked from dropped: {stage: {reason: n}} from its
    summary.json, or None when it is not there any more."""
    if not source:
        return None
    try:
        stages = outputs.read_summary(source).get("stages", {})
    except (FileNotFoundError, ValueError, shards.IncompleteOutput) as exc:
        log.warning("report: no ingest drop counts: %s", exc)
        return None
    return {stage: {"in": counts.get("in", 0), **dict(sorted(counts.get("dropped", {}).items()))}
            for stage, counts in stages.items()}
