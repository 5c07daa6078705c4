"""``wikisum ingest``: Wikipedia dump + WARC/WET captures -> filtered article shards.

The Beam job wires the pure functions of ``wikisum.pipeline.articles``,
``wikisum.pipeline.references`` and ``wikisum.pipeline.warcs`` together, one labelled
composite transform per stage (one box each in Dataflow's job graph); each returns a dict of
PCollections: its main output, its dead letters and its tallies.

    ReadArticles     dump globs, matched by the job -> pages -> articles        articles.py
    SearchLinks      search-results lines matched to articles by title -> (url, link)
                                                                                search.py
    CitationLinks    articles -> (url, link) of their citations                 articles.py
    ReadReferences   WARC/WET globs, matched by the job -> cleaned references by URL
                                                                                references.py
    JoinReferences   links x references by URL (redirects followed; one capture per URL)
                                                                                references.py
    FilterReferences per article: its own Wikipedia page, references in another language,
                     its clones and paragraphs repeated across its references dropped -> rows
                                                                                assemble.py
    WriteShards      rows -> articles-SSSSS-of-NNNNN.parquet, staged (bounded memory)
    WriteDeadLetters every drop -> dead_letters-SSSSS-of-NNNNN.parquet, staged (written to
                     files where they are made: bounded memory, whatever their number)
    Commit           staged files renamed into place, then summary.json, last   job.py

The settings (:class:`IngestConfig` and those of its steps) are ``config.py``, which imports
no Beam: the command line reads its defaults there. This package's own import is as light;
:func:`run` imports the job.

Every step that drops something emits a dead letter and a tally ``((stage, outcome), n)``
(:mod:`wikisum.core.accounting`); ``summary.json`` sums the tallies, so that for every
stage in = kept + dropped. The same tallies feed Beam counters (``wikisum`` namespace) for live
monitoring. The plumbing (tallies, file matching, shard writing, the commit) is
``wikisum.pipeline.beamio``.
"""

from __future__ import annotations

from wikisum.pipeline.ingest.config import (
    ARTICLE_OUTCOMES,
    MISSING_CITATION,
    MISSING_FILES,
    MISSING_SEARCH,
    IngestConfig,
)


def run(config: IngestConfig, pipeline_options) -> dict | None:
    """Run the job (:func:`wikisum.pipeline.ingest.job.run`) and return the summary it wrote;
    None for a dry run."""
    from wikisum.pipeline.ingest import job

    return job.run(config, pipeline_options)


__all__ = ["ARTICLE_OUTCOMES", "MISSING_CITATION", "MISSING_FILES", "MISSING_SEARCH",
           "IngestConfig", "run"]
