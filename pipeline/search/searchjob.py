"""The ``search`` job over a local index: every title asked of every shard (scatter), each
title's answers merged into its top k (gather), one results line per title in the order the
titles came, written whole with the summary beside it.

Stages (the summary's ``stages``, each in = kept + dropped):

- ``titles``: every title read -> searched; dropped as ``empty_title``, ``title_too_long``,
  ``control_characters``, ``not_text``, ``duplicate_title`` (the same title, as MediaWiki
  compares titles, listed again: its first place is kept), and for a titles file
  ``line_too_long`` and ``bad_encoding``;
- ``result_urls``: every URL the shards returned for a title -> written; dropped as
  ``wikipedia``, ``mirror`` (an index built with another site list) or ``beyond_k``.
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from wikisum.core import files, shards
from wikisum.core.accounting import IN, KEPT, job_summary, summary_json
from wikisum.core.progress import WorkerProgress
from wikisum.core.records import DeadLetter
from wikisum.pipeline import beamio
from wikisum.pipeline.beamio import DEAD, FILES, TALLY, Commit, Tallying, dead
from wikisum.pipeline.search import index as idx
from wikisum.pipeline.search import titles as tt
from wikisum.pipeline.search.analysis import Analyzer
from wikisum.pipeline.search.results import RESULT_URLS, kept_results, result_line, summary_path
from wikisum.pipeline.search.sites import MIRROR_SITES
from wikisum.pipeline.urls import normalize_title

log = logging.getLogger("wikisum.search")

TITLES = "titles"
BATCH = 256  # titles asked of a shard together
MAX_FAILED_LISTED = 1000  # dropped titles the summary names; the counts hold them all
SORT_BUFFER_BYTES = 64 * 1024 * 1024  # results lines held in memory while they are put in order


@dataclass(frozen=True)
class SearchConfig:
    """A search of a local index.

    Attributes:
        titles: A titles file (one a line), or none.
        wiki: Dumps whose articles' titles are searched.
        ingest: A finished ingest output whose articles' titles are searched.
        k: Results per title.
        query: How a title becomes a query (:data:`titles.QUERY_MODES`).
        mirrors: Hosts left out of the results besides Wikipedia's.
    """

    index: str
    out: str
    titles: str | None = None
    wiki: tuple[str, ...] = ()
    ingest: str | None = None
    k: int = 10
    query: str = tt.DEFAULT_QUERY
    mirrors: tuple[str, ...] = ()


# ------------------------------------------------------------------------------------------
# Titles in: (order, title), order a tuple that sorts as the sources list them


class ReadTitleFile(Tallying):
    """A titles file (plain, .gz, .bz2 or .xz) -> (order, title) of each line; a line too long
    or not UTF-8 is a counted drop, a file that stops being readable keeps the titles before."""

    def process(self, path: str) -> Iterator[Any]:
        from apache_beam.io.filesystem import CompressionTypes

        self.count(FILES, IN)
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as raw, \
                    tt.decompressed(raw, path) as f:
                for number, text, problem in tt.file_lines(f):
                    if problem is None:
                        yield (0, path, number), text
                        continue
                    self.count(TITLES, IN)
                    self.count(TITLES, problem)
                    detail = (f"longer than {tt.MAX_LINE_BYTES} bytes"
                              if problem == "line_too_long" else "not UTF-8")
                    yield dead(DeadLetter(path, f"line {number}", "", TITLES, problem, detail))
        except ValueError as exc:
            yield from self.file_failed(path, "", exc)
            return
        self.count(FILES, KEPT)


class ReadDumpTitles(Tallying):
    """A dump -> (order, title) of its articles; a dump that stops being readable keeps the
    titles before."""

    def process(self, path: str) -> Iterator[Any]:
        from wikisum.pipeline.dumps import DumpError
        from wikisum.pipeline.ingest.articles import open_dump

        self.count(FILES, IN)
        n = 0
        try:
            with open_dump(path) as f:
                for n, title in enumerate(tt.dump_titles(f)):
                    yield (1, path, n), title
        except DumpError as exc:
            yield from self.file_failed(path, f"after {n} titles", exc)
            return
        self.count(FILES, KEPT)


def ingest_titles(out: str):
    """(order, title) of a finished ingest output's articles."""
    from wikisum.core.outputs import article_shards

    for path in article_shards(out):
        for row, rec in enumerate(shards.iter_rows([path], columns=["title"])):
            yield (2, path, row), rec["title"]


class CheckTitles(Tallying):
    """(order, title) -> (normalised title, (order, title)); a title that cannot be one is a
    counted drop."""

    def process(self, item) -> Iterator[Any]:
        order, title = item
        self.count(TITLES, IN)
        problem = tt.title_problem(title)
        if problem is not None:
            self.count(TITLES, problem)
            shown = title[:200].encode("utf-8", "backslashreplace").decode("utf-8")
            yield dead(DeadLetter(str(order[1]), str(order[2]), "", TITLES, problem, shown))
            return
        yield normalize_title(title), (order, title)


class FirstOfTitle(Tallying):
    """(normalised title, its places) -> (order, title) of its first place; the others are
    ``duplicate_title``."""

    def process(self, item) -> Iterator[Any]:
        _, places = item
        places = sorted(places)
        for order, title in places[1:]:
            self.count(TITLES, "duplicate_title")
            yield dead(DeadLetter(str(order[1]), str(order[2]), "", TITLES, "duplicate_title",
                                  title[:200]))
        self.count(TITLES, KEPT)
        yield places[0]


# ------------------------------------------------------------------------------------------
# Scatter and gather


class MakeQueries(beam.DoFn):
    """(order, title) -> (order, title, query, terms), analysed in the index's language (the
    index's record, a side input)."""

    def __init__(self, mode: str):
        self.mode = mode
        self.analyzers: dict[str, Analyzer] = {}

    def process(self, item, info: dict) -> Iterator[Any]:
        order, title = item
        lang = info["lang"]
        if lang not in self.analyzers:
            self.analyzers[lang] = Analyzer(lang)
        query = tt.query_for(title, self.mode)
        yield order, title, query, self.analyzers[lang].query_terms(query)


class QueryShard(beam.DoFn):
    """(shard number, batches of (order, title, query, terms)) -> (order, (title, query, hits))
    for every title, the shard opened once for all of them. The index's record is the one the
    job read at its start (a side input): every shard asked is of that run."""

    def __init__(self, index: str, k: int):
        self.index, self.k = index, k

    def setup(self):
        self.progress = WorkerProgress("search", "titles")

    def process(self, item, info: dict) -> Iterator[Any]:
        number, batches = item
        shard = idx.Shard(self.index, info["run"], info["shards"][number])
        try:
            for batch in batches:
                for order, title, query, terms in batch:
                    hits = shard.search(terms, self.k)
                    yield order, (title, query, [(h.score, h.url) for h in hits])
                    if number == 0:
                        self.progress.update()
        finally:
            shard.close()
            self.progress.flush()


class MergeHits(beam.CombineFn):
    """Each title's shards' answers -> (title, query, top hits of all)."""

    def __init__(self, k: int):
        self.k = k

    def create_accumulator(self):
        return None, None, []

    def add_input(self, acc, value):
        title, query, hits = value
        merged = acc[2] + hits
        return title, query, self._top(merged)

    def merge_accumulators(self, accumulators):
        title = query = None
        merged: list = []
        for t, q, hits in accumulators:
            title, query = title or t, query or q
            merged += hits
        return title, query, self._top(merged)

    def extract_output(self, acc):
        return acc

    def _top(self, hits):
        return [(h.score, h.url) for h in idx.merge_hits([[idx.Hit(s, u) for s, u in hits]],
                                                          self.k)]


class ResultLines(Tallying):
    """(order, (title, query, hits)) -> (order, results line) with at most k URLs, Wikipedia's
    and the mirrors' left out."""

    def __init__(self, k: int, mirrors: tuple[str, ...]):
        self.k, self.mirrors = k, mirrors

    def process(self, item) -> Iterator[Any]:
        order, (title, query, hits) = item
        kept = kept_results(((url, score) for score, url in hits), self.k, self.mirrors,
                            lambda outcome: self.count(RESULT_URLS, outcome))
        urls = [url for url, _ in kept]
        scores = [round(score, 6) for _, score in kept]
        yield order, result_line(title, urls, scores, "local", query)


def write_lines(item, out: str, staging: str, buffer_bytes: int = SORT_BUFFER_BYTES):
    """Every (order, line) -> the results file staged, lines in order; sorted in bounded
    memory (:func:`wikisum.core.shards.sorted_spilled`: runs spilled to local disk), so one
    worker writes the results of millions of titles."""
    _, lines = item
    temporary = beamio.staging_path(staging, out)
    with tempfile.TemporaryDirectory(prefix="wikisum-search-") as work, \
            files.open_write(temporary) as f:
        pairs = ((order, line.encode("utf-8")) for order, line in
                 (kv for kv in lines if kv is not None))
        for _, line in shards.sorted_spilled(pairs, work, buffer_bytes):
            f.write(line)
    return beamio.Staged(out, temporary, 0)


def summary_text(staged, counts: list, failed: list, info: dict, config: SearchConfig) -> str:
    return summary_json(job_summary(
        "search", config, counts, engine="local", index_documents=info["documents"],
        index_lang=info["lang"],
        dropped_titles=sorted(failed, key=dropped_order)[:MAX_FAILED_LISTED]))


def build(p: beam.Pipeline, config: SearchConfig, token: str) -> None:
    """Add the search job to pipeline ``p``. The index's record is read when the job runs (a
    dry run reads nothing)."""
    out = config.out
    staging = beamio.temp_dir(FileSystems.split(out)[0] or ".", token)
    sources, accounts = [], []
    if config.titles:
        read = (p | "MatchTitles" >> beamio.MatchFiles([config.titles])
                | "ReadTitles" >> beam.ParDo(ReadTitleFile()).with_outputs(DEAD, TALLY,
                                                                           main="titles"))
        sources.append(read.titles)
        accounts.append(read)
    if config.wiki:
        read = (p | "MatchDumps" >> beamio.MatchFiles(config.wiki)
                | "ReadDumpTitles" >> beam.ParDo(ReadDumpTitles()).with_outputs(
                    DEAD, TALLY, main="titles"))
        sources.append(read.titles)
        accounts.append(read)
    if config.ingest:
        sources.append(p | "Ingest" >> beamio.Values([config.ingest])
                       | "IngestTitles" >> beam.FlatMap(ingest_titles))
    checked = ((sources | "AllTitles" >> beam.Flatten())
               | "CheckTitles" >> beam.ParDo(CheckTitles()).with_outputs(DEAD, TALLY,
                                                                         main="titles"))
    first = (checked.titles | "GroupByTitle" >> beam.GroupByKey()
             | "FirstOfTitle" >> beam.ParDo(FirstOfTitle()).with_outputs(DEAD, TALLY,
                                                                          main="titles"))
    accounts += [checked, first]
    index = config.index
    records = (p | "Index" >> beamio.Values([index])
               | "ReadIndexRecord" >> beam.Map(lambda path: idx.read_record(path)["index"]))
    info = beam.pvalue.AsSingleton(records)
    ask = config.k * 2  # room for URLs left out after the merge
    batches = (first.titles | "Queries" >> beam.ParDo(MakeQueries(config.query), info)
               | "Batch" >> beam.BatchElements(min_batch_size=BATCH, max_batch_size=BATCH))
    answers = (batches
               | "Scatter" >> beam.FlatMap(
                   lambda batch, info: ((s, batch) for s in range(len(info["shards"]))), info)
               | "GroupByShard" >> beam.GroupByKey()
               | "QueryShards" >> beam.ParDo(QueryShard(config.index, ask), info)
               | "Gather" >> beam.CombinePerKey(MergeHits(ask)))
    lines = answers | "ResultLines" >> beam.ParDo(ResultLines(config.k, config.mirrors)
                                                   ).with_outputs(TALLY, main="lines")
    accounts.append(lines)
    # One element besides the lines, so that the file is written when there is no title.
    nothing = p | "NoLine" >> beamio.Values([(None, None)])
    staged = ((lines.lines | "One" >> beam.Map(lambda kv: (None, kv)), nothing)
              | "WithNoLine" >> beam.Flatten()
              | "AllLines" >> beam.GroupByKey()
              | "Stage" >> beam.Map(write_lines, out, staging))
    counts = (tuple(a[TALLY] for a in accounts) | "AllTallies" >> beam.Flatten()
              | "SumTallies" >> beamio.SumTallies())
    failed_list = (tuple(a[DEAD] for a in accounts if a is not lines)
                   | "AllDropped" >> beam.Flatten()
                   | "Named" >> beam.Map(dead_entry)
                   | "Sample" >> beam.combiners.Top.Smallest(MAX_FAILED_LISTED, key=dropped_order))
    _ = (staged | "Commit" >> Commit(
        summary_path(out), lambda files_, c, f, i: summary_text(files_, c, f, i, config), [],
        staging, side=[counts, failed_list, records]))


def dropped_order(entry: tuple) -> tuple:
    """Dropped titles in the order they came: by file, then place (line 2 before line 10)."""
    return entry[0], len(entry[1]), entry[1], entry[2:]


def dead_entry(letter: DeadLetter) -> tuple:
    """A dropped title as the summary lists it: (file, place, reason, the title or why)."""
    return letter.input_file, letter.record, letter.reason, letter.error


def run(config: SearchConfig, pipeline_options, watch=contextlib.nullcontext) -> dict | None:
    """Run the search and return its summary; None for a dry run. The index is checked first,
    and only then does the job start, inside ``watch()`` (a progress display, say). Without
    ``mirrors`` given, the results leave out the mirrors the index's own list names (a dry run,
    which reads nothing: the bundled list).

    Raises:
        BadIndex: the index is not finished, damaged, or of another version.
    """
    import dataclasses
    import json

    mirrors = MIRROR_SITES
    if not beamio.is_dry_run(pipeline_options):
        info = idx.read_record(config.index)["index"]
        mirrors = info.get("mirrors", MIRROR_SITES)
        if "://" not in config.index:  # checked here, before any work, where it is cheap
            for entry in info["shards"]:
                idx.verify_shard(FileSystems.join(config.index, idx.SHARDS, info["run"],
                                                  entry["name"]), entry, config.index)
    if not config.mirrors:
        config = dataclasses.replace(config, mirrors=tuple(mirrors))
    token = beamio.new_token()
    with watch():
        if not beamio.launch("search", pipeline_options, lambda p: build(p, config, token),
                             [config.out, summary_path(config.out)]):
            return None
    with files.open_read(summary_path(config.out)) as f:
        return json.loads(f.read().decode("utf-8"))
