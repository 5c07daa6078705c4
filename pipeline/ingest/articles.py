"""The dump's articles: pages read (``ReadPages``), grouped by title and parsed
(``ParseArticles``, with :func:`wikisum.pipeline.articles.page_to_article`; one article per
title), and the links of their citations. Each dump's ``<siteinfo>`` goes to the parse beside
its pages (its local namespace names), and :func:`dump_siteinfo` reads the first dump's for
the launcher (the articles' language)."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from wikisum.core.accounting import IN, KEPT
from wikisum.core.progress import WorkerProgress
from wikisum.core.records import LINKS, PAGES, Article, DeadLetter, Link
from wikisum.pipeline.articles import page_to_article
from wikisum.pipeline.beamio import (
    DEAD,
    FILES,
    TALLY,
    MatchFiles,
    Tallying,
    dead,
    match_paths,
    split_patterns,
    tally,
)
from wikisum.pipeline.dumps import (
    DEFAULT_MAX_TEXT_BYTES,
    DumpError,
    SiteInfo,
    iter_pages,
    read_siteinfo,
)
from wikisum.pipeline.urls import normalize_title

DUPLICATE_TITLE = "duplicate_title"
SITE = "site"  # ReadPages' output of (path, the dump's SiteInfo)


def open_dump(path: str):
    """A dump opened for reading, decompressed by its extension (bz2, gz, xz, plain)."""
    return FileSystems.open(path, compression_type=CompressionTypes.AUTO)


def dump_siteinfo(patterns) -> tuple[str, SiteInfo | None]:
    """The first dump (the first of the first glob's matches, sorted) and the
    :class:`SiteInfo` of its head (None: it has none).

    Raises:
        BeamIOError: the glob matches nothing (an OSError).
        OSError: the file cannot be opened.
    """
    path = sorted(match_paths(split_patterns(patterns)[:1]))[0]
    with open_dump(path) as f:
        return path, read_siteinfo(f)


class ReadPages(Tallying):
    def __init__(self, max_article_bytes: int = DEFAULT_MAX_TEXT_BYTES):
        self.max_article_bytes = max_article_bytes

    def setup(self):
        self.pages = WorkerProgress("ingest", "pages")
        self.files = WorkerProgress("ingest", "files")

    def process(self, path: str):
        """Yields (path, page) for each page, and (path, SiteInfo) to ``SITE`` once where the
        dump has a ``<siteinfo>`` (before its pages)."""
        self.count(FILES, IN)
        sites: list[SiteInfo] = []
        try:
            with open_dump(path) as f:
                for page in iter_pages(f, self.max_article_bytes, sites.append):
                    if sites:
                        yield beam.pvalue.TaggedOutput(SITE, (path, sites.pop()))
                    self.pages.update()
                    self.count(PAGES, IN)
                    yield path, page
            if sites:  # a dump of no page
                yield beam.pvalue.TaggedOutput(SITE, (path, sites.pop()))
        except DumpError as exc:  # corrupt_file, or a limit of the reader (too_deep, ...)
            self.count(FILES, exc.reason)
            yield dead(DeadLetter(path, f"page #{exc.pages_read}", "", FILES, exc.reason,
                                  str(exc)))
            return
        finally:
            self.files.update()
            self.files.flush()
            self.pages.flush()
        self.count(FILES, KEPT)


class ParseArticles(Tallying):
    """(title, its pages) -> the article of the title, or each page's drop reason.

    A title names one article: where several pages of different ids hold it (two dumps of
    different dates given together, or a forged one), the page of the highest id is kept, since
    MediaWiki numbers pages in order of creation and a title deleted and created again, or freed
    by a move, belongs to the newer page; the others are ``duplicate_title``. Pages of one id
    all go on, for the join by id to count as ``duplicate_id``. ``sites`` (a side input) maps
    each dump to its ``<siteinfo>``.
    """

    def __init__(self, lang: str):
        self.lang = lang

    def process(self, item, sites=None):
        _, pages = item
        sites = sites or {}
        best: list[Article] = []  # the articles of the highest id so far
        others: list[tuple[str, int]] = []  # (file, id) of the articles of lower ids
        for path, page in pages:
            try:
                result = page_to_article(page, path, self.lang, sites.get(path))
            except Exception as exc:  # one bad page never stops the job
                result = "parse_error"
                error = f"{type(exc).__name__}: {exc}"
            else:
                error = ""
            if isinstance(result, Article):
                if not best or result.id == best[0].id:
                    best.append(result)
                elif result.id > best[0].id:
                    others += [(a.source_file, a.id) for a in best]
                    best = [result]
                else:
                    others.append((result.source_file, result.id))
                continue
            self.count(PAGES, result)
            record = str(page.page_id) if page.page_id >= 0 else f"page #{page.position}"
            detail = f"{page.detail}: {page.title}" if page.problem else page.title
            yield dead(DeadLetter(path, record, "", PAGES, result, error or detail))
        for source_file, page_id in sorted(others):
            self.count(PAGES, DUPLICATE_TITLE)
            yield dead(DeadLetter(source_file, str(page_id), best[0].url, PAGES, DUPLICATE_TITLE,
                                  f"page {best[0].id} has this title"))
        yield from best


def citation_links(article: Article):
    if article.citation_urls:
        yield tally(LINKS, IN, len(article.citation_urls))
    for rank, url in enumerate(article.citation_urls):
        yield url, Link(article.id, "citation", rank)


class ReadArticles(beam.PTransform):
    """Dump globs -> parsed articles (matched, read and parsed by the job)."""

    def __init__(self, patterns, lang: str, max_article_bytes: int):
        super().__init__()
        self.patterns, self.lang, self.max_article_bytes = patterns, lang, max_article_bytes

    def expand(self, pbegin):
        pages = (pbegin | "MatchDumps" >> MatchFiles(self.patterns)
                 | "ReadPages" >> beam.ParDo(ReadPages(self.max_article_bytes)).with_outputs(
                     DEAD, TALLY, SITE, main="pages"))
        # Grouping by title spreads the pages over the workers as a reshuffle would.
        parsed = (pages.pages
                  | "PagesByTitle" >> beam.Map(lambda pp: (normalize_title(pp[1].title), pp))
                  | "GroupByTitle" >> beam.GroupByKey()
                  | "ParseArticles" >> beam.ParDo(
                      ParseArticles(self.lang), sites=beam.pvalue.AsDict(pages[SITE])
                  ).with_outputs(DEAD, TALLY, main="articles"))
        return {"main": parsed.articles,
                DEAD: (pages[DEAD], parsed[DEAD]) | "Dead" >> beam.Flatten(),
                TALLY: (pages[TALLY], parsed[TALLY]) | "Tallies" >> beam.Flatten()}
