"""The ``search-index`` job: WARC/WET pages cleaned as ingest cleans them, Wikipedia and its
mirrors left out, analysed, and written as BM25 shards (:mod:`.index`) with ``index.json`` last.

Stages (counted in index.json's ``stages``, each in = kept + dropped):

- ``files``, ``records``, ``paragraphs``: ingest's own (:class:`ReadReferences`: the same
  reading, text extraction, boilerplate rules and language identification);
- ``index_pages``: every cleaned page -> indexed; dropped as ``wikipedia``, ``mirror``,
  ``wrong_language`` (identified with confidence as another language than ``--reference-lang``),
  ``no_terms`` (nothing left after analysis) or ``superseded_capture`` (another capture of the
  same URL is kept: the latest, as ingest picks).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import TaggedOutput

from wikisum.core import files, schemas
from wikisum.core.accounting import IN, KEPT, job_summary, summary_json
from wikisum.core.progress import WorkerProgress
from wikisum.core.records import DeadLetter, stable_hash
from wikisum.pipeline import beamio, language
from wikisum.pipeline.beamio import DEAD, TALLY, Commit, Staged, Tallying, WriteSpilledShards, dead
from wikisum.pipeline.ingest.config import CleanConfig
from wikisum.pipeline.ingest.job import (
    DEAD_LETTER_SHARDS,
    dead_letter_key,
    dead_letter_row,
    dead_letter_shard,
    shard_paths,
)
from wikisum.pipeline.ingest.references import ReadReferences
from wikisum.pipeline.language import is_wrong_language
from wikisum.pipeline.references import capture_order
from wikisum.pipeline.search import index as idx
from wikisum.pipeline.search.analysis import ENGLISH_STEMMER, Analyzer
from wikisum.pipeline.search.sites import MIRROR_SITES, excluded

log = logging.getLogger("wikisum.search")

INDEX_PAGES = "index_pages"
SHARD_ENTRIES = "shards"
# The stages index.json accounts for (ingest's reading counts "captures" too, which its join
# balances; here a capture is an index page).
ACCOUNTED = ("files", "records", "paragraphs", INDEX_PAGES)


@dataclass(frozen=True)
class IndexConfig:
    """What the job reads and how it builds the index.

    Attributes:
        lang: The language the pages and the queries are analysed in (stop words, stemmer).
        reference_lang: Pages identified with confidence as another language are dropped;
            "any" keeps every language; None means ``lang``.
        mirrors: Hosts whose pages are Wikipedia's copies (:mod:`.sites`); Wikipedia's own
            are always left out.
    """

    out: str
    warc: tuple[str, ...] = ()
    wet: tuple[str, ...] = ()
    num_shards: int = 1
    lang: str = "en"
    reference_lang: str | None = None
    mirrors: tuple[str, ...] = MIRROR_SITES
    clean: CleanConfig = field(default_factory=CleanConfig)
    heap_bytes: int = idx.WRITER_HEAP_BYTES
    buffer_bytes: int = 64 * 1024 * 1024

    @property
    def wanted_language(self) -> str:
        return self.lang if self.reference_lang is None else self.reference_lang


class PreparePages(Tallying):
    """(url, Reference) -> (url, (capture order, terms)); Wikipedia, mirrors, pages in another
    language and pages without a term are counted drops with a dead letter."""

    def __init__(self, config: IndexConfig):
        self.config = config

    def setup(self):
        self.analyzer = Analyzer(self.config.lang)

    def process(self, item) -> Iterator[Any]:
        url, ref = item
        self.count(INDEX_PAGES, IN)
        reason = excluded(url, self.config.mirrors)
        detail = ""
        if reason is None and is_wrong_language(
                language.Language(ref.language, ref.language_confidence),
                self.config.wanted_language):
            reason, detail = "wrong_language", f"{ref.language} ({ref.language_confidence:.2f})"
        terms = None
        if reason is None:
            terms = self.analyzer.terms(ref.text())
            if not terms:
                reason = "no_terms"
        if reason is not None:
            self.count(INDEX_PAGES, reason)
            yield dead(DeadLetter(ref.source_file, ref.record_id, url, INDEX_PAGES, reason,
                                  detail))
            return
        yield url, (capture_order(ref), ref.source_file, ref.record_id, terms)


class PickCapture(Tallying):
    """(url, its captures) -> (shard, (url, terms)) of the capture ingest would keep (the
    latest); the others are ``superseded_capture``."""

    def __init__(self, num_shards: int):
        self.num_shards = num_shards

    def process(self, item) -> Iterator[Any]:
        url, captures = item
        best = None  # walked once, holding one capture's terms at a time
        for capture in captures:
            if best is None:
                best = capture
                continue
            if capture[0] < best[0]:
                best, capture = capture, best
            self.count(INDEX_PAGES, "superseded_capture")
            yield dead(DeadLetter(capture[1], capture[2], url, INDEX_PAGES,
                                  "superseded_capture", "a later capture is kept"))
        self.count(INDEX_PAGES, KEPT)
        yield stable_hash(url) % self.num_shards, (url, best[3])


class WriteIndexShard(beam.DoFn):
    """(shard, its pages) -> the shard's tantivy files staged (Staged records), and its entry
    for index.json (``shards``: name, documents, files with bytes and SHA-256). The index is
    built in a local temporary folder and copied to the output's filesystem."""

    def __init__(self, out: str, run: str, staging: str, num_shards: int, heap_bytes: int):
        self.out, self.run, self.staging = out, run, staging
        self.num_shards, self.heap_bytes = num_shards, heap_bytes

    def setup(self):
        self.progress = WorkerProgress("search-index", "shards")

    def process(self, item):
        shard, pages = item
        name = idx.shard_name(shard, self.num_shards)
        local = tempfile.mkdtemp(prefix="wikisum-index-")
        try:
            documents = idx.build_shard(local, (page for page in pages if page is not None),
                                        self.heap_bytes)
            entry = {"name": name, "documents": documents, "files": {}}
            for file_name in idx.shard_files(local):
                final = FileSystems.join(self.out, idx.SHARDS, self.run, name, file_name)
                temporary = beamio.staging_path(self.staging, final)
                source = os.path.join(local, file_name)
                size, digest = idx.file_digest(source)
                with open(source, "rb") as src, files.open_write(temporary) as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                entry["files"][file_name] = {"bytes": size, "sha256": digest}
                yield Staged(final, temporary, 0)
            yield TaggedOutput(SHARD_ENTRIES, entry)
        finally:
            shutil.rmtree(local, ignore_errors=True)
            self.progress.update()
            self.progress.flush()


def record_text(staged: list[Staged], counts: list, entries: list[dict], config: IndexConfig,
                run: str) -> str:
    """index.json: the job's summary (stages, options) with the index's own description."""
    entries = sorted(entries, key=lambda e: e["name"])
    analyzer = Analyzer(config.lang)
    from wikisum.core.language import stemmer_name

    info = {"format": idx.FORMAT, "version": idx.VERSION, "engine": "tantivy",
            "engine_version": idx.engine_version(), "lang": config.lang,
            "stemmer": stemmer_name(config.lang, ENGLISH_STEMMER),
            "query_drops_function_words": bool(analyzer.stop),
            "run": run, "documents": sum(e["documents"] for e in entries),
            "mirrors": list(config.mirrors), "shards": entries}
    folders = Counter(s.final.rsplit("/", 2)[-2] for s in staged if s.final.endswith(".parquet"))
    return summary_json(job_summary("search-index", config, counts, ACCOUNTED, index=info,
                                    shards={"dead_letters": folders["dead_letters"]}))


# The folder of one run's shards: beamio.new_token's name, holding shard-SSSSS-of-NNNNN folders.
_RUN_FOLDER = re.compile(r"\d{8}T\d{6}-[0-9a-f]{8}")
_SHARD_FOLDER = re.compile(r"shard-\d{5}-of-\d{5}")


def remove_other_runs(record: str, out: str, run: str) -> str:
    """After the commit: the shard folders of earlier runs into the same index removed. Only
    what a run writes goes: a folder named as a run's, holding shard folders; anything else in
    ``shards/`` is left as it is."""
    root = files.join(out, idx.SHARDS)
    if "://" in root:
        for path in files.match(files.join(root, "*", "shard-*", "*")):
            run_name, shard = path[len(root):].strip("/").split("/")[:2]
            if (run_name != run and _RUN_FOLDER.fullmatch(run_name)
                    and _SHARD_FOLDER.fullmatch(shard)):
                files.delete(path)
        return record
    if not os.path.isdir(root):
        return record
    for name in os.listdir(root):
        folder = os.path.join(root, name)
        if (name == run or not _RUN_FOLDER.fullmatch(name) or os.path.islink(folder)
                or not os.path.isdir(folder)):
            continue
        inside = os.listdir(folder)
        if all(_SHARD_FOLDER.fullmatch(n) and os.path.isdir(os.path.join(folder, n))
               and not os.path.islink(os.path.join(folder, n)) for n in inside):
            shutil.rmtree(folder, ignore_errors=True)
    return record


def build(p: beam.Pipeline, config: IndexConfig, token: str) -> None:
    """Add the search-index job to pipeline ``p``."""
    out = config.out
    staging = beamio.temp_dir(out, token)
    references = p | "ReadReferences" >> ReadReferences(config.warc + config.wet, config.clean)
    prepared = references["main"] | "PreparePages" >> beam.ParDo(
        PreparePages(config)).with_outputs(DEAD, TALLY, main="pages")
    picked = (prepared.pages | "GroupByUrl" >> beam.GroupByKey()
              | "PickCapture" >> beam.ParDo(PickCapture(config.num_shards)).with_outputs(
                  DEAD, TALLY, main="pages"))
    # Every shard is written, an empty one too: the key of each given once with no page.
    every = p | "EveryShard" >> beamio.Values([(i, None) for i in range(config.num_shards)])
    written = ((picked.pages, every) | "AllPages" >> beam.Flatten()
               | "GroupByShard" >> beam.GroupByKey()
               | "WriteShards" >> beam.ParDo(WriteIndexShard(
                   out, token, staging, config.num_shards, config.heap_bytes)).with_outputs(
                   SHARD_ENTRIES, main="staged"))
    accounts = [references, prepared, picked]
    dead_letters = (tuple(a[DEAD] for a in accounts) | "WriteDeadLetters" >> WriteSpilledShards(
        shard_paths(out, "dead_letters", DEAD_LETTER_SHARDS), staging, schemas.DEAD_LETTERS,
        dead_letter_shard, dead_letter_key, config.buffer_bytes, to_row=dead_letter_row))
    counts = (tuple(a[TALLY] for a in accounts) | "AllTallies" >> beam.Flatten()
              | "SumTallies" >> beamio.SumTallies())
    entries = written[SHARD_ENTRIES] | "ShardEntries" >> beam.combiners.ToList()
    record = FileSystems.join(out, idx.RECORD)
    _ = ((written.staged, dead_letters) | "AllStaged" >> beam.Flatten()
         | "Commit" >> Commit(record, lambda staged, c, e: record_text(staged, c, e, config,
                                                                        token),
                              [FileSystems.join(out, "dead_letters", "dead_letters-*.parquet")],
                              staging, side=[counts, entries])
         | "RemoveOtherRuns" >> beam.Map(remove_other_runs, out, token))


def writes(config: IndexConfig) -> list[str]:
    """Where the job writes, for a dry run's account."""
    return [FileSystems.join(config.out, idx.SHARDS, "RUN",
                             f"shard-*-of-{config.num_shards:05d}"),
            FileSystems.join(config.out, "dead_letters"), FileSystems.join(config.out, idx.RECORD)]


def run(config: IndexConfig, pipeline_options) -> dict | None:
    """Run the job and return index.json as written; None for a dry run."""
    import json

    log.info("search-index: WARC %s, WET %s -> %s", ", ".join(config.warc) or "none",
             ", ".join(config.wet) or "none", config.out)
    if config.clean.identify_language and beamio.workers_in_this_process(pipeline_options):
        language.preload()
    token = beamio.new_token()
    if not beamio.launch("search-index", pipeline_options, lambda p: build(p, config, token),
                         writes(config)):
        return None
    with files.open_read(FileSystems.join(config.out, idx.RECORD)) as f:
        return json.loads(f.read().decode("utf-8"))
