"""The search results: the lines of the search-results file (``{"title": ..., "urls":
[...]}``) read and parsed, each matched to an article by normalised title -> (url, Link)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import TaggedOutput

from wikisum.core.accounting import IN, KEPT
from wikisum.core.records import LINKS, SEARCH, DeadLetter, Link
from wikisum.pipeline.beamio import DEAD, TALLY, MatchFiles, dead, tally
from wikisum.pipeline.urls import normalize_title, normalize_url

SEARCH_URLS = "search_urls"  # the URLs of the search-results lines: kept | not_a_string
MAX_SEARCH_LINE_BYTES = 4 * 1024 * 1024  # a longer search-results line is a dead letter


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
