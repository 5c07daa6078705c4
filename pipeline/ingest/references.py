"""The references: WARC/WET records read and cleaned into references keyed by normalised URL
(:func:`wikisum.pipeline.references.clean_captures`, a batch of a file's pages at a time), and
the articles' links joined with them by URL, redirects followed, one capture per URL
(:func:`wikisum.pipeline.references.pick_capture`).
"""

from __future__ import annotations

import logging
from urllib.parse import urljoin

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import TaggedOutput

from wikisum.core.accounting import IN, KEPT
from wikisum.core.progress import WorkerProgress
from wikisum.core.records import CAPTURES, LINKS, PARAGRAPHS, RECORDS, DeadLetter
from wikisum.pipeline import language
from wikisum.pipeline.beamio import DEAD, FILES, TALLY, MatchFiles, Tallying, dead
from wikisum.pipeline.ingest.config import MISSING_CITATION, MISSING_SEARCH, CleanConfig
from wikisum.pipeline.references import (
    CaptureBatches,
    clean_captures,
    pick_capture,
)
from wikisum.pipeline.urls import normalize_url
from wikisum.pipeline.warcs import (
    Alias,
    Broken,
    Capture,
    EmptyFile,
    Skipped,
    WarcError,
    iter_records,
)

log = logging.getLogger("wikisum.ingest")

REDIRECTS = "redirects"  # the output of (url, target) pairs that the captures record
MAX_REDIRECTS = 10


class ReadAndCleanRecords(Tallying):
    """WARC/WET file -> cleaned references, keyed by URL.

    Reading and cleaning are fused: the captured bodies never cross a shuffle, and the work is
    spread by file (a crawl has many thousands of files, each of about a gigabyte). On a few
    huge files only, put a Reshuffle between ``iter_records`` and the cleaning instead.
    """

    def __init__(self, config: CleanConfig):
        self.config = config

    def setup(self):
        # Load the language model here, so that a worker without it fails at once rather
        # than turning every record into an error dead letter (not at all where the job
        # wants no reference language: --reference-lang any, or no article language known).
        if self.config.identify_language:
            language.load()
        self.records = WorkerProgress("ingest", "records")
        self.files = WorkerProgress("ingest", "files")

    def process(self, path: str):
        self.count(FILES, IN)
        batches = CaptureBatches()  # cleaned a batch at a time (clean_captures)
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                for rec in iter_records(f, path, max_bytes=self.config.max_page_bytes):
                    self.records.update()
                    self.count(RECORDS, IN)
                    if isinstance(rec, Alias):
                        # A citation spelled otherwise than its capture (cc-fetch): joined as a
                        # redirect to the captured URL.
                        self.count(RECORDS, "alias")
                        source, target = normalize_url(rec.url), normalize_url(rec.target)
                        if source and target and source != target:
                            yield TaggedOutput(REDIRECTS, (source, target))
                    elif isinstance(rec, Skipped):
                        # warcinfo/request/metadata/revisit never hold a page: counted, but not
                        # written as dead letters (they are most records of a crawl).
                        self.count(RECORDS, f"not_a_page:{rec.record_type}")
                    elif isinstance(rec, Broken):  # read past; the file reads on after it
                        self.count(RECORDS, rec.reason)
                        yield dead(DeadLetter(path, rec.record_id or f"{path}@{rec.offset}",
                                              rec.url, RECORDS, rec.reason,
                                              f"offset {rec.offset}: {rec.detail}"))
                    else:
                        for batch in batches.add(rec):
                            yield from self.clean(batch)
        except EmptyFile as exc:
            # A WARC without a record is a failed download, not a crawl that found nothing.
            log.warning("%s: %s", path, exc)
            self.count(FILES, "empty_file")
            yield dead(DeadLetter(path, "offset 0", "", FILES, "empty_file", str(exc)))
            return
        except WarcError as exc:
            yield from self.clean(batches.rest())  # the pages read before the damage are kept
            yield from self.file_failed(path, f"offset {exc.offset}", exc)
            return
        finally:
            self.files.update()
            self.files.flush()
            self.records.flush()
        yield from self.clean(batches.rest())
        self.count(FILES, KEPT)

    def clean(self, caps: list[Capture]):
        for cap, cleaned in zip(caps, clean_captures(caps, self.config), strict=True):
            if isinstance(cleaned, Exception):
                # a page that crashes a library is a dead letter, not a crash
                self.count(RECORDS, "error")
                yield dead(DeadLetter(cap.source_file, cap.record_id, cap.url, RECORDS, "error",
                                      f"{type(cleaned).__name__}: {cleaned}"[:1000]))
                continue
            if cleaned.paragraphs:
                self.count(PARAGRAPHS, IN, sum(cleaned.paragraphs.values()))
            for outcome, n in cleaned.paragraphs.items():
                self.count(PARAGRAPHS, outcome, n)
            if cleaned.reference is None:
                self.count(RECORDS, cleaned.reason)
                yield dead(DeadLetter(cap.source_file, cap.record_id, cap.url, RECORDS,
                                      cleaned.reason, cleaned.error))
                alias = redirect_alias(cap)
                if alias is not None:  # no page, but where the page is: citations follow it
                    yield TaggedOutput(REDIRECTS, alias)
                continue
            self.count(RECORDS, KEPT)
            self.count(CAPTURES, IN)
            yield cleaned.reference.url, cleaned.reference


def redirect_alias(cap: Capture) -> tuple[str, str] | None:
    """(normalised URL, normalised target) of a 3xx capture with a Location, else None."""
    if not cap.location:
        return None
    source = normalize_url(cap.url)
    target = normalize_url(urljoin(cap.url, cap.location))
    if source is None or target is None or source == target:
        return None
    return source, target


def follow_redirects(url: str, aliases: dict[str, str], limit: int = MAX_REDIRECTS) -> str:
    """Where the redirect records of the crawl lead ``url``: the last URL of the chain (at most
    ``limit`` hops; a loop ends where it closes). A URL without a redirect record is itself."""
    seen = {url}
    for _ in range(limit):
        nxt = aliases.get(url)
        if nxt is None or nxt in seen:
            break
        seen.add(nxt)
        url = nxt
    return url


def join_by_url(item, count):
    """CoGroupByKey(url) of links and cleaned captures -> (article id, (link, reference)),
    with ``count(stage, outcome, n)`` told what happened to them.

    Links are keyed by the URL their redirects lead to and carry the URL as cited:
    ``(url, (cited_url, link))`` (see ``follow_redirects``). One capture per URL is kept
    (``pick_capture``); choosing it here rather than in a shuffle of its own saves a pass of
    every reference over the network.
    """
    url, grouped = item
    # The links come in one group or several (one per source of links, see JoinReferences).
    cited = sorted((e for tag, group in grouped.items() if tag != "refs" for e in group),
                   key=lambda e: (e[1].article_id, e[1].source, e[1].rank, e[0]))
    links = [link for _, link in cited]
    refs = list(grouped["refs"])
    if not refs:
        for cited_url, link in cited:  # reported as cited: what a crawl should fetch
            count(LINKS, "missing", 1)
            yield dead(DeadLetter("", str(link.article_id), cited_url, LINKS, "missing",
                                  f"{link.source} not captured"))
            yield TaggedOutput(MISSING_CITATION if link.source == "citation" else MISSING_SEARCH,
                               cited_url)
        return
    ref, superseded = pick_capture(refs)
    for old in superseded:
        count(CAPTURES, "superseded_capture", 1)
        yield dead(DeadLetter(old.source_file, old.record_id, url, CAPTURES,
                              "superseded_capture", f"kept {ref.record_id}"))
    if not links:
        count(CAPTURES, "unreferenced", 1)
        yield dead(DeadLetter(ref.source_file, ref.record_id, url, CAPTURES, "unreferenced", ""))
        return
    count(CAPTURES, KEPT, 1)
    for link in links:
        yield link.article_id, (link, ref)


class JoinByUrl(Tallying):
    """:func:`join_by_url` as a DoFn whose tallies are summed per bundle."""

    def process(self, item):
        yield from join_by_url(item, self.count)


class ReadReferences(beam.PTransform):
    """WARC and WET globs -> cleaned references keyed by normalised URL, and the redirects the
    captures record (``redirects``: (url, target))."""

    def __init__(self, patterns, clean: CleanConfig):
        super().__init__()
        self.patterns, self.clean = patterns, clean

    def expand(self, pbegin):
        records = (pbegin | "MatchCaptures" >> MatchFiles(self.patterns)
                   | "ReadAndCleanRecords" >> beam.ParDo(ReadAndCleanRecords(self.clean))
                   .with_outputs(DEAD, TALLY, REDIRECTS, main="references"))
        return {"main": records.references, REDIRECTS: records[REDIRECTS],
                DEAD: records[DEAD], TALLY: records[TALLY]}


class JoinReferences(beam.PTransform):
    """(url, Link) (one PCollection, or a tuple of them: one per source of links) and (url,
    Reference) -> (article id, (link, reference)), one capture per URL; a cited URL that the
    captures record as a redirect joins the page at the end of its chain (a crawler such as
    `wikisum crawl` stores the 3xx response under the cited URL and the page under the final
    one). Links no capture serves come out as ``missing_citation`` and ``missing_search``
    URLs."""

    def __init__(self, redirects):
        super().__init__()
        self.redirects = redirects

    def expand(self, inputs):
        links, references = inputs
        if isinstance(links, beam.pvalue.PCollection):
            links = (links,)
        # The least target of each redirecting URL (repeats of a pair change no minimum).
        aliases = beam.pvalue.AsDict(self.redirects | "OneTargetEach" >> beam.CombinePerKey(min))
        # Each source of links is a group of its own in the join rather than flattened first:
        # a local runner makes every Flatten of several inputs a stage that decodes and encodes
        # each element again, and the join flattens its inputs anyway.
        groups = {"refs": references}
        for i, part in enumerate(links):
            groups[f"links{i}"] = part | f"FollowRedirects{i or ''}" >> beam.Map(
                lambda kv, aliases: (follow_redirects(kv[0], aliases), kv), aliases)
        joined = (groups
                  | "GroupByUrl" >> beam.CoGroupByKey()
                  | "JoinByUrl" >> beam.ParDo(JoinByUrl()).with_outputs(
                      DEAD, TALLY, MISSING_CITATION, MISSING_SEARCH, main="found"))
        return {"main": joined.found, MISSING_CITATION: joined[MISSING_CITATION],
                MISSING_SEARCH: joined[MISSING_SEARCH], DEAD: joined[DEAD],
                TALLY: joined[TALLY]}
