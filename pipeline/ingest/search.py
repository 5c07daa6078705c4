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
from wikisum.pipeline.beamio import DEAD, TALLY, MatchFiles, Tallying, dead
from wikisum.pipeline.urls import is_text, normalize_title, normalize_url

# The URLs of the search-results lines: kept | not_a_string | bad_encoding
SEARCH_URLS = "search_urls"
MAX_SEARCH_LINE_BYTES = 4 * 1024 * 1024  # a longer search-results line is a dead letter
UTF8_BOM = b"\xef\xbb\xbf"


def search_lines(f, max_bytes: int) -> Iterator[tuple[int, bytes | None]]:
    """(byte offset, line) for every line of a binary file; a line longer than ``max_bytes``
    comes as (offset, None) and is skipped a chunk at a time, so memory stays bounded and the
    time linear whatever the line. A UTF-8 byte order mark opening the file is no part of its
    first line (offsets still count it)."""
    offset = 0
    while True:
        line = f.readline(max_bytes + 1)
        if not line:
            return
        start, offset = offset, offset + len(line)
        if start == 0 and line.startswith(UTF8_BOM):
            line = line[len(UTF8_BOM):]
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


class ParseSearch(Tallying):
    """A line of a search-results file -> (normalised title, (file, byte offset, urls)): where
    the line was, so that a title's lines rank in file order; a line that is not UTF-8
    JSON with a string title and a list of URLs (``bad_encoding``, ``bad_line``), nested too
    deep to parse (``too_deep``), or longer than the limit (``line_too_long``), is a dead letter
    with its file and byte offset; so is a URL that is not a string or not text (a lone
    surrogate), alone."""

    def __init__(self, max_line_bytes: int = MAX_SEARCH_LINE_BYTES):
        self.max_line_bytes = max_line_bytes

    def process(self, item):
        path, offset, raw = item
        if raw is not None and not raw.strip():
            return
        self.count(SEARCH, IN)
        where = f"offset {offset}"
        if raw is None:
            self.count(SEARCH, "line_too_long")
            yield dead(DeadLetter(path, where, "", SEARCH, "line_too_long",
                                  f"longer than {self.max_line_bytes} bytes"))
            return
        # Only a \u escape makes a lone surrogate: strict UTF-8 decoding refuses encoded ones.
        escapes = b"\\u" in raw
        try:
            obj = json.loads(raw.decode("utf-8"))
            title, urls = obj["title"], obj["urls"]
            if not isinstance(title, str) or not isinstance(urls, list):
                raise TypeError("title must be a string and urls a list")
            if escapes and not is_text(title):
                raise UnicodeError("the title is not text (a lone surrogate)")
        except UnicodeError as exc:  # not UTF-8, or a title that is not text
            self.count(SEARCH, "bad_encoding")
            yield dead(DeadLetter(path, where, "", SEARCH, "bad_encoding",
                                  f"{exc}: {raw[:200]!r}"))
            return
        except RecursionError:  # json.loads gives up on nesting deeper than the stack
            self.count(SEARCH, "too_deep")
            yield dead(DeadLetter(path, where, "", SEARCH, "too_deep",
                                  f"JSON nested too deep to parse: {raw[:200]!r}"))
            return
        except (ValueError, KeyError, TypeError) as exc:
            self.count(SEARCH, "bad_line")
            yield dead(DeadLetter(path, where, "", SEARCH, "bad_line",
                                  f"{exc}: {raw[:200].decode('utf-8', 'replace')}"))
            return
        good = [u for u in urls if isinstance(u, str)]
        strings = len(good)
        if escapes:
            good = [u for u in good if is_text(u)]
        self.count(SEARCH_URLS, IN, len(urls))
        self.count(SEARCH_URLS, KEPT, len(good))
        for reason, n, what in (("not_a_string", len(urls) - strings, "not strings"),
                                ("bad_encoding", strings - len(good),
                                 "not text (lone surrogates)")):
            if n:
                self.count(SEARCH_URLS, reason, n)
                yield dead(DeadLetter(path, where, "", SEARCH_URLS, reason,
                                      f"{n} of {len(urls)} URLs are {what}"))
        yield normalize_title(title), (path, offset, good)


class MatchSearchTitles(Tallying):
    """CoGroupByKey(title) of articles and search lines ((file, byte offset, urls)) -> search
    links, and per article the number of search results it lists. A title's lines are ranked
    in file order (by file, then offset), whatever order the grouping gives them in: ranks do
    not change from run to run or with the number of workers."""

    def __init__(self, path: str):
        self.path = path

    def process(self, item):
        title, grouped = item
        articles = sorted(grouped["articles"])
        lines = [urls for _, _, urls in sorted(grouped["search"], key=lambda line: line[:2])]
        if not lines:
            return
        if not articles:
            self.count(SEARCH, "unknown_title", len(lines))
            for _ in lines:
                yield dead(DeadLetter(self.path, title, "", SEARCH, "unknown_title",
                                      "no article with this title"))
            return
        article_id = articles[0]
        self.count(SEARCH, KEPT, len(lines))
        ranked, bad = rank_search_urls(lines)
        listed = sum(len(urls) for urls in lines)
        self.count(LINKS, IN, listed)
        if bad:
            self.count(LINKS, "bad_url", len(bad))
        if listed - len(bad) - len(ranked):
            self.count(LINKS, "duplicate", listed - len(bad) - len(ranked))
        for url in bad:
            yield dead(DeadLetter(self.path, title, url[:500], LINKS, "bad_url", ""))
        for rank, key in enumerate(ranked):
            yield TaggedOutput("links", (key, Link(article_id, "search", rank)))
        yield TaggedOutput("listed", (article_id, len(ranked)))


def rank_search_urls(lines: list[list[str]]) -> tuple[list[str], list[str]]:
    """The search URLs of one title's lines -> (their distinct normalised URLs in the order
    first listed, which is their rank; the URLs that do not normalise). Linear in the URLs."""
    ranked: list[str] = []
    seen: set[str] = set()
    bad: list[str] = []
    for urls in lines:
        for url in urls:
            key = normalize_url(url)
            if key is None:
                bad.append(url)
            elif key not in seen:
                seen.add(key)
                ranked.append(key)
    return ranked, bad


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
