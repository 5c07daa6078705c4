"""The dump's articles: pages read (``ReadPages``), parsed (``ParseArticles``, with
:func:`wikisum.pipeline.articles.page_to_article`), and the links of their citations."""

from __future__ import annotations

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from wikisum.core.accounting import IN, KEPT
from wikisum.core.progress import WorkerProgress
from wikisum.core.records import LINKS, PAGES, Article, DeadLetter, Link
from wikisum.pipeline.articles import page_to_article
from wikisum.pipeline.beamio import DEAD, FILES, TALLY, MatchFiles, Tallying, dead, tally
from wikisum.pipeline.dumps import DEFAULT_MAX_TEXT_BYTES, DumpError, iter_pages


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
