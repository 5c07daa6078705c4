"""``wikisum ingest``: Wikipedia dump + WARC/WET captures -> filtered article shards.

The Beam job wires the pure functions of ``wikisum.pipeline.articles``,
``wikisum.pipeline.references`` and ``wikisum.pipeline.warcs`` together, one labelled
composite transform per stage (one box each in Dataflow's job graph):

    ReadArticles     dump globs, matched by the job -> pages -> articles
    SearchLinks      search-results lines matched to articles by title -> (url, link)
    CitationLinks    articles -> (url, link) of their citations
    ReadReferences   WARC/WET globs, matched by the job -> cleaned references by URL
    JoinReferences   links x references by URL (redirects followed; one capture per URL)
    FilterReferences per article: its own Wikipedia page, references in another language,
                     its clones and paragraphs repeated across its references dropped -> rows
    WriteShards      rows -> articles-SSSSS-of-NNNNN.parquet, staged (bounded memory)
    WriteDeadLetters every drop -> dead_letters-SSSSS-of-NNNNN.parquet, staged
    Commit           staged files renamed into place, then summary.json, last

Every step that drops something emits a dead letter and a tally ``(stage, outcome, n)``;
``summary.json`` is the sum of the tallies, so that for every stage read = kept + dropped. The
same tallies feed Beam counters (``wikisum`` namespace) for live monitoring. The plumbing
(tallies, file matching, shard writing, the commit) is ``wikisum.pipeline.beamio``.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from urllib.parse import urljoin

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import TaggedOutput

from wikisum.core import schemas, shards
from wikisum.core.outputs import INGEST_SUMMARY, article_shards_pattern, read_summary
from wikisum.core.progress import WorkerProgress
from wikisum.core.records import (
    ARTICLE_PARAGRAPHS,
    CAPTURES,
    LINKS,
    PAGES,
    PARAGRAPHS,
    RECORDS,
    SEARCH,
    Article,
    DeadLetter,
    Link,
    split_of,
    stable_hash,
)
from wikisum.pipeline import beamio, language
from wikisum.pipeline.accounting import IN, KEPT, job_summary, summary_json
from wikisum.pipeline.articles import page_to_article
from wikisum.pipeline.beamio import (
    DEAD,
    FILES,
    TALLY,
    Commit,
    MatchFiles,
    Staged,
    Tallying,
    WriteShards,
    dead,
    tally,
)
from wikisum.pipeline.dumps import DEFAULT_MAX_TEXT_BYTES, DumpError, iter_pages
from wikisum.pipeline.references import (
    AttachConfig,
    CleanConfig,
    attach,
    clean_capture,
    pick_capture,
)
from wikisum.pipeline.urls import normalize_title, normalize_url
from wikisum.pipeline.warcs import Alias, Capture, Skipped, WarcError, iter_records

log = logging.getLogger("wikisum.ingest")

MISSING_CITATION = "missing_citation"
MISSING_SEARCH = "missing_search"
DEFAULT_SHARDS = 8
DEAD_LETTER_SHARDS = 2
# Outcomes of the pages stage for a page that was an article (the others: not an article).
ARTICLE_OUTCOMES = ("kept", "duplicate_id", "no_references", "no_references_found")
SEARCH_URLS = "search_urls"  # the URLs of the search-results lines: kept | not_a_string
MAX_SEARCH_LINE_BYTES = 4 * 1024 * 1024  # a longer search-results line is a dead letter
MISSING_FILES = {MISSING_CITATION: "missing_urls.txt", MISSING_SEARCH: "missing_search_urls.txt"}


@dataclass(frozen=True)
class IngestConfig:
    """The job's own options (Beam's pipeline options are separate)."""

    wiki: tuple[str, ...]
    out: str
    warc: tuple[str, ...] = ()
    wet: tuple[str, ...] = ()
    search_results: str | None = None
    num_shards: int = DEFAULT_SHARDS
    lang: str = "en"
    clean: CleanConfig = CleanConfig()
    attach: AttachConfig = AttachConfig()  # article_lang unset: the dump's `lang`
    max_article_bytes: int = DEFAULT_MAX_TEXT_BYTES  # a longer dump page is a dead letter
    buffer_bytes: int = shards.DEFAULT_BUFFER_BYTES  # rows a shard writer holds in memory

    def __post_init__(self) -> None:
        if self.attach.article_lang is None:  # the articles are in the dump's language
            object.__setattr__(self, "attach", replace(self.attach, article_lang=self.lang))


# ------------------------------------------------------------------------------------------
# Articles


class ReadPages(Tallying):
    def __init__(self, max_article_bytes: int = DEFAULT_MAX_TEXT_BYTES):
        self.max_article_bytes = max_article_bytes

    def setup(self):
        self.pages = WorkerProgress("ingest", "pages")
        self.files = WorkerProgress("ingest", "files")

    def process(self, path: str):
        self.count(FILES, IN)
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as f:
                for page in iter_pages(f, self.max_article_bytes):
                    self.pages.update()
                    self.count(PAGES, IN)
                    yield path, page
        except DumpError as exc:
            yield from self.file_failed(path, f"page #{exc.pages_read}", exc)
            return
        finally:
            self.files.update()
            self.files.flush()
            self.pages.flush()
        self.count(FILES, KEPT)


class ParseArticles(Tallying):
    def __init__(self, lang: str):
        self.lang = lang

    def process(self, item):
        path, page = item
        try:
            result = page_to_article(page, path, self.lang)
        except Exception as exc:  # one bad page never stops the job
            result = "parse_error"
            error = f"{type(exc).__name__}: {exc}"
        else:
            error = ""
        if isinstance(result, Article):
            yield result
            return
        self.count(PAGES, result)
        yield dead(DeadLetter(path, str(page.page_id), "", PAGES, result, error or page.title))


def citation_links(article: Article):
    if article.citation_urls:
        yield tally(LINKS, IN, len(article.citation_urls))
    for rank, url in enumerate(article.citation_urls):
        yield url, Link(article.id, "citation", rank)


def search_lines(f, max_bytes: int) -> Iterator[tuple[int, bytes | None]]:
    """(byte offset, line) for every line of a binary file; a line longer than ``max_bytes``
    comes as (offset, None) and is skipped a chunk at a time, so memory stays bounded and the
    time linear whatever the line."""
    offset = 0
    while True:
        line = f.readline(max_bytes + 1)
        if not line:
            return
        start, offset = offset, offset + len(line)
        if len(line) > max_bytes and not line.endswith(b"\n"):
            while True:
                chunk = f.readline(1 << 20)
                offset += len(chunk)
                if not chunk or chunk.endswith(b"\n"):
                    break
            yield start, None
        else:
            yield start, line


class ReadSearchLines(beam.DoFn):
    """A search-results file (plain or compressed) -> (file, byte offset, line bytes)."""

    def __init__(self, max_line_bytes: int):
        self.max_line_bytes = max_line_bytes

    def process(self, path: str):
        with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as f:
            for offset, line in search_lines(f, self.max_line_bytes):
                yield path, offset, line


class ParseSearch(beam.DoFn):
    """A line of a search-results file -> (normalised title, urls); a line that is not UTF-8
    JSON with a string title and a list of URLs, or longer than the limit, is a dead letter with
    its file and byte offset."""

    def __init__(self, max_line_bytes: int = MAX_SEARCH_LINE_BYTES):
        self.max_line_bytes = max_line_bytes

    def process(self, item):
        path, offset, raw = item
        if raw is not None and not raw.strip():
            return
        yield tally(SEARCH, IN)
        where = f"offset {offset}"
        if raw is None:
            yield tally(SEARCH, "line_too_long")
            yield dead(DeadLetter(path, where, "", SEARCH, "line_too_long",
                                  f"longer than {self.max_line_bytes} bytes"))
            return
        try:
            obj = json.loads(raw.decode("utf-8"))
            title, urls = obj["title"], obj["urls"]
            if not isinstance(title, str) or not isinstance(urls, list):
                raise TypeError("title must be a string and urls a list")
        except UnicodeDecodeError as exc:
            yield tally(SEARCH, "bad_encoding")
            yield dead(DeadLetter(path, where, "", SEARCH, "bad_encoding",
                                  f"{exc}: {raw[:200]!r}"))
            return
        except (ValueError, KeyError, TypeError) as exc:
            yield tally(SEARCH, "bad_line")
            yield dead(DeadLetter(path, where, "", SEARCH, "bad_line",
                                  f"{exc}: {raw[:200].decode('utf-8', 'replace')}"))
            return
        good = [u for u in urls if isinstance(u, str)]
        yield tally(SEARCH_URLS, IN, len(urls))
        yield tally(SEARCH_URLS, KEPT, len(good))
        if len(good) < len(urls):
            yield tally(SEARCH_URLS, "not_a_string", len(urls) - len(good))
            yield dead(DeadLetter(path, where, "", SEARCH_URLS, "not_a_string",
                                  f"{len(urls) - len(good)} of {len(urls)} URLs are not "
                                  "strings"))
        yield normalize_title(title), good


class MatchSearchTitles(beam.DoFn):
    """CoGroupByKey(title) of articles and search lines -> search links, and per article the
    number of search results it lists."""

    def __init__(self, path: str):
        self.path = path

    def process(self, item):
        title, grouped = item
        articles = sorted(grouped["articles"])
        lines = list(grouped["search"])
        if not lines:
            return
        if not articles:
            yield tally(SEARCH, "unknown_title", len(lines))
            for _ in lines:
                yield dead(DeadLetter(self.path, title, "", SEARCH, "unknown_title",
                                      "no article with this title"))
            return
        article_id = articles[0]
        yield tally(SEARCH, KEPT, len(lines))
        seen: list[str] = []
        for urls in lines:
            for url in urls:
                yield tally(LINKS, IN)
                key = normalize_url(url)
                if key is None:
                    yield tally(LINKS, "bad_url")
                    yield dead(DeadLetter(self.path, title, url[:500], LINKS, "bad_url", ""))
                elif key in seen:
                    yield tally(LINKS, "duplicate")
                else:
                    seen.append(key)
        for rank, key in enumerate(seen):
            yield TaggedOutput("links", (key, Link(article_id, "search", rank)))
        yield TaggedOutput("listed", (article_id, len(seen)))


# ------------------------------------------------------------------------------------------
# References


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
        # than turning every record into an error dead letter.
        language.load()
        self.records = WorkerProgress("ingest", "records")
        self.files = WorkerProgress("ingest", "files")

    def process(self, path: str):
        self.count(FILES, IN)
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
                    else:
                        yield from self.clean(rec)
        except WarcError as exc:
            yield from self.file_failed(path, f"offset {exc.offset}", exc)
            return
        finally:
            self.files.update()
            self.files.flush()
            self.records.flush()
        self.count(FILES, KEPT)

    def clean(self, cap: Capture):
        try:
            cleaned = clean_capture(cap, self.config)
        except Exception as exc:  # a page that crashes a library is a dead letter, not a crash
            self.count(RECORDS, "error")
            yield dead(DeadLetter(cap.source_file, cap.record_id, cap.url, RECORDS, "error",
                                  f"{type(exc).__name__}: {exc}"[:1000]))
            return
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
            return
        self.count(RECORDS, KEPT)
        self.count(CAPTURES, IN)
        yield cleaned.reference.url, cleaned.reference


REDIRECTS = "redirects"
MAX_REDIRECTS = 10


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


def join_by_url(item):
    """CoGroupByKey(url) of links and cleaned captures -> (article id, (link, reference)).

    Links are keyed by the URL their redirects lead to and carry the URL as cited:
    ``(url, (cited_url, link))`` (see ``follow_redirects``). One capture per URL is kept
    (``pick_capture``); choosing it here rather than in a shuffle of its own saves a pass of
    every reference over the network.
    """
    url, grouped = item
    cited = sorted(grouped["links"],
                   key=lambda e: (e[1].article_id, e[1].source, e[1].rank, e[0]))
    links = [link for _, link in cited]
    refs = list(grouped["refs"])
    if not refs:
        for cited_url, link in cited:  # reported as cited: what a crawl should fetch
            yield tally(LINKS, "missing")
            yield dead(DeadLetter("", str(link.article_id), cited_url, LINKS, "missing",
                                  f"{link.source} not captured"))
            yield TaggedOutput(MISSING_CITATION if link.source == "citation" else MISSING_SEARCH,
                               cited_url)
        return
    ref, superseded = pick_capture(refs)
    for old in superseded:
        yield tally(CAPTURES, "superseded_capture")
        yield dead(DeadLetter(old.source_file, old.record_id, url, CAPTURES,
                              "superseded_capture", f"kept {ref.record_id}"))
    if not links:
        yield tally(CAPTURES, "unreferenced")
        yield dead(DeadLetter(ref.source_file, ref.record_id, url, CAPTURES, "unreferenced", ""))
        return
    yield tally(CAPTURES, KEPT)
    for link in links:
        yield link.article_id, (link, ref)


class AssembleArticles(beam.DoFn):
    """CoGroupByKey(article id) -> one row per article: self pages, references in another
    language, clones and paragraphs repeated across the article's references removed."""

    def __init__(self, config: AttachConfig, num_shards: int):
        self.config = config
        self.num_shards = num_shards

    def setup(self):
        self.progress = WorkerProgress("ingest", "articles")

    def finish_bundle(self):
        self.progress.flush()

    def process(self, item):
        article_id, grouped = item
        articles = sorted(grouped["article"], key=lambda a: (a.source_file, a.title))
        found = list(grouped["found"])
        search_listed = sum(grouped["search_listed"])
        if not articles:
            # Links come only from parsed articles, so this group holds nothing to account for.
            return
        self.progress.update()
        article = articles[0]
        for twin in articles[1:]:
            yield tally(PAGES, "duplicate_id")
            yield dead(DeadLetter(twin.source_file, str(twin.id), twin.url, PAGES,
                                  "duplicate_id", f"same id as {article.title!r}"))
        listed = len(article.citation_urls) + search_listed
        if listed == 0:
            yield tally(PAGES, "no_references")
            yield dead(DeadLetter(article.source_file, str(article.id), article.url, PAGES,
                                  "no_references", ""))
            return
        kept, dropped, paragraphs = attach(article, found, self.config)
        if paragraphs:
            yield tally(ARTICLE_PARAGRAPHS, IN, sum(paragraphs.values()))
            for outcome, n in paragraphs.items():
                yield tally(ARTICLE_PARAGRAPHS, outcome, n)
        links_per_url = Counter(ref.url for _, ref in found)
        for url, reason, detail in dropped:
            yield tally(LINKS, reason, links_per_url[url])
            yield dead(DeadLetter(article.source_file, str(article.id), url, LINKS, reason,
                                  detail))
        yield tally(LINKS, KEPT, sum(links_per_url[a.url] for a in kept))
        if not kept:
            yield tally(PAGES, "no_references_found")
            yield dead(DeadLetter(article.source_file, str(article.id), article.url, PAGES,
                                  "no_references_found", f"{listed} listed"))
            return
        yield tally(PAGES, KEPT)
        found_sources = Counter(link.source for link, _ in found)
        row = {
            "id": article.id,
            "title": article.title,
            "url": article.url,
            "split": split_of(article.title),
            "lead": article.lead,
            "sections": [{"title": s.title, "level": s.level, "text": s.text}
                         for s in article.sections],
            "citations_listed": len(article.citation_urls),
            "citations_found": found_sources["citation"],
            "search_listed": search_listed,
            "search_found": found_sources["search"],
            "clones_removed": sum(1 for _, r, _ in dropped if r == "clone"),
            "self_removed": sum(1 for _, r, _ in dropped if r == "self"),
            "other_language_removed": sum(1 for _, r, _ in dropped if r == "wrong_language"),
            "duplicate_references_removed": sum(1 for _, r, _ in dropped
                                                if r == "duplicate_reference"),
            "duplicate_paragraphs_removed": paragraphs["duplicate"]
            + paragraphs["near_duplicate"],
            "references": [{"url": a.url, "source": a.source, "sources": list(a.sources),
                            "capture_date": a.reference.capture_date,
                            "source_file": a.reference.source_file,
                            "language": a.reference.language,
                            "language_confidence": a.reference.language_confidence,
                            "paragraphs": list(a.reference.paragraphs)} for a in kept],
        }
        yield stable_hash(str(article.id)) % self.num_shards, row


# ------------------------------------------------------------------------------------------
# The job's stages, each a labelled composite transform (one box in Dataflow's job graph).
# Each returns a dict of PCollections: its main output, its dead letters and its tallies.


class ReadArticles(beam.PTransform):
    """Dump globs -> parsed articles (matched, read and parsed by the job)."""

    def __init__(self, patterns, lang: str, max_article_bytes: int):
        super().__init__()
        self.patterns, self.lang, self.max_article_bytes = patterns, lang, max_article_bytes

    def expand(self, pbegin):
        pages = (pbegin | "MatchDumps" >> MatchFiles(self.patterns)
                 | "ReadPages" >> beam.ParDo(ReadPages(self.max_article_bytes)).with_outputs(
                     DEAD, TALLY, main="pages"))
        parsed = (pages.pages | "SpreadPages" >> beam.Reshuffle()
                  | "ParseArticles" >> beam.ParDo(ParseArticles(self.lang)).with_outputs(
                      DEAD, TALLY, main="articles"))
        return {"main": parsed.articles,
                DEAD: (pages[DEAD], parsed[DEAD]) | "Dead" >> beam.Flatten(),
                TALLY: (pages[TALLY], parsed[TALLY]) | "Tallies" >> beam.Flatten()}


class SearchLinks(beam.PTransform):
    """Articles -> the links of their search results: the search-results file read by the job,
    each line matched to an article by normalised title. Outputs ``links`` (url, Link) and
    ``listed`` (article id, number of distinct search URLs) besides the accounting."""

    def __init__(self, path: str):
        super().__init__()
        self.path = path

    def expand(self, articles):
        lines = (articles.pipeline | "MatchSearchResults" >> MatchFiles([self.path])
                 | "ReadSearchLines" >> beam.ParDo(ReadSearchLines(MAX_SEARCH_LINE_BYTES))
                 | "SpreadSearchLines" >> beam.Reshuffle()
                 | "ParseSearch" >> beam.ParDo(ParseSearch(MAX_SEARCH_LINE_BYTES)).with_outputs(
                     DEAD, TALLY, main="lines"))
        matched = ({"articles": articles | "ArticleIdByTitle" >> beam.Map(
                        lambda a: (normalize_title(a.title), a.id)),
                    "search": lines.lines}
                   | "GroupByTitle" >> beam.CoGroupByKey()
                   | "MatchSearchTitles" >> beam.ParDo(MatchSearchTitles(self.path)).with_outputs(
                       DEAD, TALLY, "links", "listed"))
        return {"links": matched.links, "listed": matched.listed,
                DEAD: (lines[DEAD], matched[DEAD]) | "Dead" >> beam.Flatten(),
                TALLY: (lines[TALLY], matched[TALLY]) | "Tallies" >> beam.Flatten()}


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
    """(url, Link) and (url, Reference) -> (article id, (link, reference)), one capture per
    URL; a cited URL that the captures record as a redirect joins the page at the end of its
    chain (a crawler such as `wikisum crawl` stores the 3xx response under the cited URL and the
    page under the final one). Links no capture serves come out as ``missing_citation`` and
    ``missing_search`` URLs."""

    def __init__(self, redirects):
        super().__init__()
        self.redirects = redirects

    def expand(self, inputs):
        links, references = inputs
        aliases = beam.pvalue.AsDict(self.redirects | "DistinctRedirects" >> beam.Distinct()
                                     | "OneTargetEach" >> beam.CombinePerKey(min))
        links = links | "FollowRedirects" >> beam.Map(
            lambda kv, aliases: (follow_redirects(kv[0], aliases), kv), aliases)
        joined = ({"links": links, "refs": references}
                  | "GroupByUrl" >> beam.CoGroupByKey()
                  | "JoinByUrl" >> beam.FlatMap(join_by_url).with_outputs(
                      DEAD, TALLY, MISSING_CITATION, MISSING_SEARCH, main="found"))
        return {"main": joined.found, MISSING_CITATION: joined[MISSING_CITATION],
                MISSING_SEARCH: joined[MISSING_SEARCH], DEAD: joined[DEAD],
                TALLY: joined[TALLY]}


class FilterReferences(beam.PTransform):
    """Articles, the references found for them and their search counts -> one row per article
    (schema ``ARTICLES``), keyed by shard, filtered by `attach` (`AttachConfig`)."""

    def __init__(self, config: AttachConfig, num_shards: int):
        super().__init__()
        self.config, self.num_shards = config, num_shards

    def expand(self, inputs):
        articles, found, search_listed = inputs
        rows = ({"article": articles | "ArticleById" >> beam.Map(lambda a: (a.id, a)),
                 "found": found, "search_listed": search_listed}
                | "GroupByArticle" >> beam.CoGroupByKey()
                | "AssembleArticles" >> beam.ParDo(AssembleArticles(
                    self.config, self.num_shards)).with_outputs(DEAD, TALLY, main="rows"))
        return {"main": rows.rows, DEAD: rows[DEAD], TALLY: rows[TALLY]}


# ------------------------------------------------------------------------------------------
# Outputs


def shard_paths(out: str, table: str, total: int) -> dict[int, str]:
    """Shard index -> final path of ``OUT/TABLE/TABLE-SSSSS-of-NNNNN.parquet``."""
    return {i: shards.shard_path(FileSystems.join(out, table), table, i, total)
            for i in range(total)}


def dead_letter_key(d: dict) -> tuple:
    return d["stage"], d["input_file"], d["record"], d["url"], d["reason"]


def summary_text(staged: list[Staged], counts: list, config: IngestConfig) -> str:
    """summary.json (:func:`~wikisum.pipeline.accounting.job_summary`): every stage's in = kept
    + dropped from the tallies, and ``shards``, the number of files of each committed set."""
    folders = Counter(s.final.rsplit("/", 2)[-2] for s in staged if s.final.endswith(".parquet"))
    return summary_json(job_summary(
        "ingest", config, counts,
        shards={"articles": folders["articles"], "dead_letters": folders["dead_letters"]}))


def output_globs(out: str) -> list[str]:
    """What a run writes (and replaces) in ``out``, as globs."""
    return [article_shards_pattern(out),
            FileSystems.join(out, "dead_letters", "dead_letters-*.parquet"),
            *(FileSystems.join(out, name) for name in MISSING_FILES.values()),
            FileSystems.join(out, INGEST_SUMMARY)]


class StageUrlList(beam.PTransform):
    """URLs -> one sorted text file of the distinct URLs, staged for the commit."""

    def __init__(self, path: str, staging: str):
        super().__init__()
        self.path, self.staging = path, staging

    def expand(self, urls):
        path, staging = self.path, self.staging
        return (urls | "Distinct" >> beam.Distinct()
                | "Collect" >> beam.combiners.ToList()
                | "Stage" >> beam.Map(lambda us: beamio.stage_text(
                    path, staging, "".join(u + "\n" for u in sorted(us)))))


def build(p: beam.Pipeline, config: IngestConfig, token: str) -> None:
    """Add the ingest job to pipeline ``p`` (no filesystem is touched here: the job matches its
    inputs when it runs, and stages its outputs under ``OUT/.temp-TOKEN``)."""
    out = config.out
    staging = beamio.temp_dir(out, token)
    articles = p | "ReadArticles" >> ReadArticles(config.wiki, config.lang,
                                                   config.max_article_bytes)
    accounts = [articles]
    cited = articles["main"] | "CitationLinks" >> beam.FlatMap(citation_links).with_outputs(
        TALLY, main="links")
    links = [cited.links]
    if config.search_results:
        search = articles["main"] | "SearchLinks" >> SearchLinks(config.search_results)
        links.append(search["links"])
        search_listed = search["listed"]
        accounts.append(search)
    else:
        search_listed = p | "NoSearchResults" >> beam.Create([])
    references = p | "ReadReferences" >> ReadReferences(config.warc + config.wet, config.clean)
    joined = ((links | "AllLinks" >> beam.Flatten(), references["main"])
              | "JoinReferences" >> JoinReferences(references[REDIRECTS]))
    rows = ((articles["main"], joined["main"], search_listed)
            | "FilterReferences" >> FilterReferences(config.attach, config.num_shards))
    accounts += [references, joined, rows]

    staged = [rows["main"] | "WriteShards" >> WriteShards(
        shard_paths(out, "articles", config.num_shards), staging, schemas.ARTICLES,
        lambda r: r["id"], config.buffer_bytes)]
    dead_letters = [a[DEAD] for a in accounts] | "AllDeadLetters" >> beam.Flatten()
    staged.append(dead_letters
                  | "DeadLetterShard" >> beam.Map(
                      lambda d: (stable_hash(f"{d.input_file}|{d.record}|{d.url}|{d.stage}")
                                 % DEAD_LETTER_SHARDS, asdict(d)))
                  | "WriteDeadLetters" >> WriteShards(
                      shard_paths(out, "dead_letters", DEAD_LETTER_SHARDS), staging,
                      schemas.DEAD_LETTERS, dead_letter_key, config.buffer_bytes))
    for tag, name in MISSING_FILES.items():
        staged.append(joined[tag] | f"StageList_{tag}" >> StageUrlList(
            FileSystems.join(out, name), staging))
    counts = ([a[TALLY] for a in accounts] + [cited[TALLY]]
              | "AllTallies" >> beam.Flatten()
              | "SumTallies" >> beamio.SumTallies())
    _ = (staged | "AllStaged" >> beam.Flatten()
         | "Commit" >> Commit(FileSystems.join(out, INGEST_SUMMARY),
                              lambda files, c: summary_text(files, c, config),
                              output_globs(out)[:-1], staging, side=[counts]))


def run(config: IngestConfig, pipeline_options) -> dict | None:
    """Run the job and return the summary it wrote; None for a dry run (``--dry_run true`` on
    Dataflow: the job is built and validated, nothing is read or written)."""
    log.info("ingest: dumps %s, WARC %s, WET %s -> %s", ", ".join(config.wiki),
             ", ".join(config.warc) or "none", ", ".join(config.wet) or "none", config.out)
    if not config.warc and not config.wet:
        log.warning("no --warc or --wet input: every reference will be missing")
    token = beamio.new_token()
    writes = [beamio.describe_set(list(shard_paths(config.out, "articles",
                                                   config.num_shards).values())),
              beamio.describe_set(list(shard_paths(config.out, "dead_letters",
                                                   DEAD_LETTER_SHARDS).values())),
              *output_globs(config.out)[2:]]
    if not beamio.launch("ingest", pipeline_options, lambda p: build(p, config, token), writes):
        return None
    return read_summary(config.out)
