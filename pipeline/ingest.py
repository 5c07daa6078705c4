"""``wikisum ingest``: Wikipedia dump + WARC/WET captures -> clone-filtered article shards.

The Beam job wires the pure functions of ``wikisum.pipeline.articles``,
``wikisum.pipeline.references`` and ``wikisum.pipeline.warcs`` together:

    dump files --ReadPages--> pages --ParseArticles--> articles ----------------------+
    search results --ParseSearch--> (title, urls) --MatchTitles--> search links --+   |
    articles --CitationLinks--> citation links ----------------------------------+|   |
    WARC/WET files --ReadRecords--> captures --CleanCaptures--> references        ||   |
         --JoinByUrl (CoGroupByKey with links; one capture per URL)---------------+    |
         --> (article id, link, reference) --AssembleArticles (CoGroupByKey)----------+
         --> self/clone filter --> rows --WriteShards--> articles-NNNNN-of-NNNNN.parquet

Every step that drops something emits a dead letter and a tally ``(stage, outcome, n)``;
``summary.json`` is the sum of the tallies, so that for every stage read = kept + dropped. The
same tallies feed Beam counters (``wikisum.ingest`` namespace) for live monitoring.
"""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from urllib.parse import urljoin

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.pvalue import TaggedOutput
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from wikisum.pipeline import schemas, shards
from wikisum.pipeline.articles import page_to_article
from wikisum.pipeline.dumps import DEFAULT_MAX_TEXT_BYTES, DumpError, iter_pages
from wikisum.pipeline.records import (
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
from wikisum.pipeline.references import CleanConfig, attach, clean_capture, pick_capture
from wikisum.pipeline.urls import normalize_title, normalize_url
from wikisum.pipeline.warcs import Capture, Skipped, WarcError, iter_records

log = logging.getLogger("wikisum.ingest")

FILES = "files"  # input files -> read to the end, or stopped by corrupt data
IN = "_in"  # the tally of what entered a stage
DEAD = "dead"
TALLY = "tally"
MISSING_CITATION = "missing_citation"
MISSING_SEARCH = "missing_search"
DEFAULT_SHARDS = 8
DEAD_LETTER_SHARDS = 2
# Outcomes of the pages stage for a page that was an article (the others: not an article).
ARTICLE_OUTCOMES = ("kept", "duplicate_id", "no_references", "no_references_found")
SEARCH_URLS = "search_urls"  # the URLs of the search-results lines: kept | not_a_string
MAX_SEARCH_LINE_BYTES = 4 * 1024 * 1024  # a longer search-results line is a dead letter
# The completion record, written by the launcher after the whole job has finished (and removed
# first when a run starts); the job itself writes its tallies to TALLIES.
SUMMARY = "summary.json"
TALLIES = ".summary.tallies.json"


@dataclass(frozen=True)
class IngestConfig:
    """The job's own options (Beam's pipeline options are separate)."""

    wiki: tuple[str, ...]
    out: str
    warc: tuple[str, ...] = ()
    wet: tuple[str, ...] = ()
    search_results: str | None = None
    clone_threshold: float = 0.5
    num_shards: int = DEFAULT_SHARDS
    lang: str = "en"
    clean: CleanConfig = CleanConfig()
    max_article_bytes: int = DEFAULT_MAX_TEXT_BYTES  # a longer dump page is a dead letter


# ------------------------------------------------------------------------------------------
# Accounting


def tally(stage: str, outcome: str, n: int = 1) -> TaggedOutput:
    """A count for summary.json, mirrored in a Beam counter for live monitoring."""
    Metrics.counter("wikisum.ingest", f"{stage}:{outcome}").inc(n)
    return TaggedOutput(TALLY, ((stage, outcome), n))


def dead(letter: DeadLetter) -> TaggedOutput:
    return TaggedOutput(DEAD, letter)


class Tallying(beam.DoFn):
    """A DoFn for hot paths: tallies are summed per bundle and emitted once when it finishes,
    instead of one element (and one counter update) per page."""

    def start_bundle(self):
        self._tallies: Counter = Counter()

    def count(self, stage: str, outcome: str, n: int = 1) -> None:
        self._tallies[(stage, outcome)] += n

    def finish_bundle(self):
        for (stage, outcome), n in sorted(self._tallies.items()):
            Metrics.counter("wikisum.ingest", f"{stage}:{outcome}").inc(n)
            yield TaggedOutput(TALLY, WindowedValue(((stage, outcome), n), MIN_TIMESTAMP,
                                                    [GlobalWindow()]))
        self._tallies = Counter()

    def file_failed(self, path: str, where: str, exc: Exception):
        """A file that stopped being readable at ``where``: what came before it is kept."""
        self.count(FILES, "corrupt_file")
        yield dead(DeadLetter(path, where, "", FILES, "corrupt_file", str(exc)))


class _Progress:
    """Logs a records/s line at most every ``every_s`` seconds."""

    def __init__(self, what: str, every_s: float = 10.0):
        self.what, self.every_s = what, every_s
        self.start = self.last = time.monotonic()
        self.n = 0

    def tick(self, source: str) -> None:
        self.n += 1
        now = time.monotonic()
        if now - self.last >= self.every_s:
            self.last = now
            log.info("%s: %d %s read (%.0f/s)", source, self.n, self.what,
                     self.n / (now - self.start))


# ------------------------------------------------------------------------------------------
# Articles


class ReadPages(Tallying):
    def __init__(self, max_article_bytes: int = DEFAULT_MAX_TEXT_BYTES):
        self.max_article_bytes = max_article_bytes

    def process(self, path: str):
        self.count(FILES, IN)
        progress = _Progress("pages")
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as f:
                for page in iter_pages(f, self.max_article_bytes):
                    progress.tick(path)
                    self.count(PAGES, IN)
                    yield path, page
        except DumpError as exc:
            yield from self.file_failed(path, f"page #{exc.pages_read}", exc)
            return
        self.count(FILES, "read")


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
        yield tally(SEARCH_URLS, "kept", len(good))
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
        yield tally(SEARCH, "matched", len(lines))
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

    def process(self, path: str):
        self.count(FILES, IN)
        progress = _Progress("records")
        try:
            with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
                for rec in iter_records(f, path, max_bytes=self.config.max_page_bytes):
                    progress.tick(path)
                    self.count(RECORDS, IN)
                    if isinstance(rec, Skipped):
                        # warcinfo/request/metadata/revisit never hold a page: counted, but not
                        # written as dead letters (they are most records of a crawl).
                        self.count(RECORDS, f"not_a_page:{rec.record_type}")
                    else:
                        yield from self.clean(rec)
        except WarcError as exc:
            yield from self.file_failed(path, f"offset {exc.offset}", exc)
            return
        self.count(FILES, "read")

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
        self.count(RECORDS, "kept")
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
    yield tally(CAPTURES, "kept")
    for link in links:
        yield link.article_id, (link, ref)


class AssembleArticles(beam.DoFn):
    """CoGroupByKey(article id) -> one row per article, self pages and clones removed."""

    def __init__(self, clone_threshold: float, num_shards: int):
        self.clone_threshold = clone_threshold
        self.num_shards = num_shards

    def process(self, item):
        article_id, grouped = item
        articles = sorted(grouped["article"], key=lambda a: (a.source_file, a.title))
        found = list(grouped["found"])
        search_listed = sum(grouped["search_listed"])
        if not articles:
            # Links come only from parsed articles, so this group holds nothing to account for.
            return
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
        kept, dropped = attach(article, found, self.clone_threshold)
        links_per_url = Counter(ref.url for _, ref in found)
        for url, reason, detail in dropped:
            yield tally(LINKS, reason, links_per_url[url])
            yield dead(DeadLetter(article.source_file, str(article.id), url, LINKS, reason,
                                  detail))
        yield tally(LINKS, "kept", sum(links_per_url[a.url] for a in kept))
        if not kept:
            yield tally(PAGES, "no_references_found")
            yield dead(DeadLetter(article.source_file, str(article.id), article.url, PAGES,
                                  "no_references_found", f"{listed} listed"))
            return
        yield tally(PAGES, "kept")
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
            "references": [{"url": a.url, "source": a.source, "sources": list(a.sources),
                            "capture_date": a.reference.capture_date,
                            "source_file": a.reference.source_file,
                            "paragraphs": list(a.reference.paragraphs)} for a in kept],
        }
        yield stable_hash(str(article.id)) % self.num_shards, row


# ------------------------------------------------------------------------------------------
# Writing


def article_shards_pattern(out: str) -> str:
    """The glob of the article shards an ingest run wrote into ``out``."""
    return FileSystems.join(out, "articles", "articles-*.parquet")


def read_summary(out: str) -> dict:
    """``summary.json`` of a finished ingest run in ``out``.

    Raises:
        IncompleteOutput: there is none: the job never ran there, or did not finish.
    """
    path = FileSystems.join(out, SUMMARY)
    if not FileSystems.exists(path):
        raise shards.IncompleteOutput(
            f"{out} holds no finished ingest output ({SUMMARY} is written last and is missing: "
            f"the job did not run there, or did not finish); rerun `wikisum ingest --out {out}`")
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


def shard_name(out: str, table: str, index: int, total: int) -> str:
    return FileSystems.join(out, table, f"{table}-{index:05d}-of-{total:05d}.parquet")


class WriteShard(beam.DoFn):
    """(shard, rows) -> one Parquet file, rows sorted so that a rerun writes the same bytes."""

    def __init__(self, out: str, table: str, total: int, schema: pa.Schema, sort_key):
        self.out, self.table, self.total = out, table, total
        self.schema, self.sort_key = schema, sort_key

    def process(self, item):
        index, rows = item
        rows = sorted((r for r in rows if r is not None), key=self.sort_key)
        path = shard_name(self.out, self.table, index, self.total)
        shards.write_table(path, rows, self.schema)
        yield path


def summarize(counts: list, config: IngestConfig) -> dict:
    """Tallies -> per-stage read/kept/dropped, with the balance check of each stage."""
    by_stage: dict[str, Counter] = {}
    for (stage, outcome), n in counts:
        by_stage.setdefault(stage, Counter())[outcome] += n
    stages = {}
    for stage in sorted(by_stage):
        c = by_stage[stage]
        kept_name = {FILES: "read", SEARCH: "matched"}.get(stage, "kept")
        entered = c.get(IN, 0)
        kept = c.get(kept_name, 0)
        dropped = {k: v for k, v in sorted(c.items()) if k not in (kept_name, IN)}
        stages[stage] = {"in": entered, "kept": kept, "dropped": dropped,
                         "balanced": entered == kept + sum(dropped.values())}
    return {
        "job": "wikisum ingest",
        "balanced": all(st["balanced"] for st in stages.values()),
        "format": schemas.FORMAT_VERSION,
        "options": {k: v for k, v in asdict(config).items()},
        "stages": stages,
    }


def expand_patterns(patterns) -> list[str]:
    """Paths matching local or remote globs, sorted; a pattern that matches nothing is an
    error, since a typo would otherwise give an empty dataset."""
    paths = []
    for pattern in patterns:
        for piece in pattern.split(","):
            piece = piece.strip()
            if not piece:
                continue
            matched = shards.match(piece)
            if not matched:
                raise FileNotFoundError(f"no input file matches {piece!r}")
            paths.extend(matched)
    return sorted(set(paths))


def clear_outputs(out: str) -> None:
    """Remove this job's own earlier outputs, its completion record first, so that a killed
    rerun never leaves an older summary beside a partial set, and a rerun with fewer shards
    leaves no stale shard behind. Nothing else in ``out`` is touched."""
    for pattern in (SUMMARY, TALLIES, "articles/articles-*.parquet",
                    "dead_letters/dead_letters-*.parquet"):
        shards.delete(FileSystems.join(out, pattern))


def build(p: beam.Pipeline, config: IngestConfig, wiki_paths: list[str], warc_paths: list[str],
          wet_paths: list[str], search_paths: list[str] = ()) -> None:
    """Add the ingest job to pipeline ``p``."""
    out = config.out
    # -- articles
    pages = (p | "WikiFiles" >> beam.Create(wiki_paths)
             | "SpreadWikiFiles" >> beam.Reshuffle()
             | "ReadPages" >> beam.ParDo(ReadPages(config.max_article_bytes)).with_outputs(
                 DEAD, TALLY, main="pages"))
    parsed = (pages.pages | "SpreadPages" >> beam.Reshuffle()
              | "ParseArticles" >> beam.ParDo(ParseArticles(config.lang)).with_outputs(
                  DEAD, TALLY, main="articles"))
    articles = parsed.articles
    # -- search results
    search_dead, search_tally = [], []
    if config.search_results:
        lines = (p | "SearchFiles" >> beam.Create(search_paths)
                 | "ReadSearchLines" >> beam.ParDo(ReadSearchLines(MAX_SEARCH_LINE_BYTES))
                 | "SpreadSearchLines" >> beam.Reshuffle()
                 | "ParseSearch" >> beam.ParDo(ParseSearch(MAX_SEARCH_LINE_BYTES)).with_outputs(
                     DEAD, TALLY, main="lines"))
        by_title = ({"articles": articles | "ArticleIdByTitle" >> beam.Map(
                        lambda a: (normalize_title(a.title), a.id)),
                     "search": lines.lines}
                    | "GroupByTitle" >> beam.CoGroupByKey()
                    | "MatchSearchTitles" >> beam.ParDo(MatchSearchTitles(
                        config.search_results)).with_outputs(DEAD, TALLY, "links", "listed"))
        search_links, search_listed = [by_title.links], by_title.listed
        search_dead += [lines[DEAD], by_title[DEAD]]
        search_tally += [lines[TALLY], by_title[TALLY]]
    else:
        search_links, search_listed = [], p | "NoSearchResults" >> beam.Create([])
    cited = articles | "CitationLinks" >> beam.FlatMap(citation_links).with_outputs(
        TALLY, main="links")
    links = [cited.links] + search_links | "AllLinks" >> beam.Flatten()
    # -- references
    record_files = ([(path, "warc") for path in warc_paths] + [(path, "wet") for path in wet_paths])
    records = (p | "RecordFiles" >> beam.Create([path for path, _ in record_files])
               | "SpreadRecordFiles" >> beam.Reshuffle()
               | "ReadAndCleanRecords" >> beam.ParDo(ReadAndCleanRecords(config.clean))
               .with_outputs(DEAD, TALLY, REDIRECTS, main="references"))
    # -- join. A cited URL that the crawl recorded as a redirect joins with the page at the end
    # of its chain (a crawler such as `wikisum crawl` stores the 3xx response under the cited
    # URL and the page under the final one).
    aliases = beam.pvalue.AsDict(records[REDIRECTS] | "DistinctRedirects" >> beam.Distinct()
                                 | "OneTargetEach" >> beam.CombinePerKey(min))
    links = links | "FollowRedirects" >> beam.Map(
        lambda kv, aliases: (follow_redirects(kv[0], aliases), kv), aliases)
    joined = ({"links": links, "refs": records.references}
              | "GroupByUrl" >> beam.CoGroupByKey()
              | "JoinByUrl" >> beam.FlatMap(join_by_url).with_outputs(
                  DEAD, TALLY, MISSING_CITATION, MISSING_SEARCH, main="found"))
    rows = ({"article": articles | "ArticleById" >> beam.Map(lambda a: (a.id, a)),
             "found": joined.found, "search_listed": search_listed}
            | "GroupByArticle" >> beam.CoGroupByKey()
            | "AssembleArticles" >> beam.ParDo(AssembleArticles(
                config.clone_threshold, config.num_shards)).with_outputs(DEAD, TALLY, main="rows"))
    # -- write
    empty_shards = p | "AllShards" >> beam.Create([(i, None) for i in range(config.num_shards)])
    _ = ((rows.rows, empty_shards) | "RowsAndShards" >> beam.Flatten()
         | "GroupShards" >> beam.GroupByKey()
         | "WriteShards" >> beam.ParDo(WriteShard(out, "articles", config.num_shards,
                                                  schemas.ARTICLES, lambda r: r["id"])))
    dead_letters = ([pages[DEAD], parsed[DEAD], records[DEAD],
                     joined[DEAD], rows[DEAD]] + search_dead | "AllDeadLetters" >> beam.Flatten())
    empty_dead = p | "AllDeadShards" >> beam.Create([(i, None) for i in range(DEAD_LETTER_SHARDS)])
    _ = ((dead_letters | "DeadLetterShard" >> beam.Map(
            lambda d: (stable_hash(f"{d.input_file}|{d.record}|{d.url}|{d.stage}")
                       % DEAD_LETTER_SHARDS, asdict(d))), empty_dead)
         | "DeadLettersAndShards" >> beam.Flatten()
         | "GroupDeadShards" >> beam.GroupByKey()
         | "WriteDeadLetters" >> beam.ParDo(WriteShard(
             out, "dead_letters", DEAD_LETTER_SHARDS, schemas.DEAD_LETTERS,
             lambda d: (d["stage"], d["input_file"], d["record"], d["url"], d["reason"]))))
    for tag, name in [(MISSING_CITATION, "missing_urls.txt"),
                      (MISSING_SEARCH, "missing_search_urls.txt")]:
        _ = (joined[tag] | f"Distinct_{tag}" >> beam.Distinct()
             | f"Collect_{tag}" >> beam.combiners.ToList()
             | f"Write_{tag}" >> beam.Map(
                 lambda urls, name=name: shards.write_text(FileSystems.join(out, name),
                                                   "".join(u + "\n" for u in sorted(urls)))))
    tallies = ([pages[TALLY], parsed[TALLY], cited[TALLY], records[TALLY],
                joined[TALLY], rows[TALLY]] + search_tally
               | "AllTallies" >> beam.Flatten())
    _ = (tallies | "SumTallies" >> beam.CombinePerKey(sum)
         | "CollectTallies" >> beam.combiners.ToList()
         | "WriteTallies" >> beam.Map(lambda counts: shards.write_text(
             FileSystems.join(out, TALLIES),
             json.dumps(summarize(counts, config), indent=1, sort_keys=True) + "\n")))


def run(config: IngestConfig, pipeline_options) -> dict:
    """Run the job and return the summary it wrote."""
    wiki_paths = expand_patterns(config.wiki)
    warc_paths = expand_patterns(config.warc)
    wet_paths = expand_patterns(config.wet)
    search_paths = expand_patterns([config.search_results]) if config.search_results else []
    if not warc_paths and not wet_paths:
        log.warning("no --warc or --wet input: every reference will be missing")
    clear_outputs(config.out)
    log.info("ingest: %d dump file(s), %d WARC file(s), %d WET file(s) -> %s",
             len(wiki_paths), len(warc_paths), len(wet_paths), config.out)
    with beam.Pipeline(options=pipeline_options) as p:
        build(p, config, wiki_paths, warc_paths, wet_paths, search_paths)
    return commit(config)


def commit(config: IngestConfig) -> dict:
    """After the job: check that every shard is there, then write ``summary.json`` (last), so
    that an output with a summary is a whole one."""
    out = config.out
    rerun = f"rerun `wikisum ingest --out {out}`"
    articles = shards.complete_set(article_shards_pattern(out), config.num_shards,
                                   f"{out}: the article set", rerun)
    shards.complete_set(FileSystems.join(out, "dead_letters", "dead_letters-*.parquet"),
                        DEAD_LETTER_SHARDS, f"{out}: the dead-letter set", rerun)
    tallies = FileSystems.join(out, TALLIES)
    summary = json.loads(shards.read_text(tallies))
    summary["shards"] = {"articles": len(articles), "dead_letters": DEAD_LETTER_SHARDS}
    shards.write_text(FileSystems.join(out, SUMMARY),
                      json.dumps(summary, indent=1, sort_keys=True) + "\n")
    FileSystems.delete([tallies])
    return summary
