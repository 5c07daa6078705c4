"""The articles and reference URLs of tensor2tensor's released WikiSum files, in the ingest job
(``--t2t-wiki-content``, ``--t2t-wiki-urls``; formats in :mod:`wikisum.formats.t2t`).

    ReadT2TArticles   wiki_content TFRecords -> articles (lead and sections as the authors
                      parsed them; the split of the shard, as tensor2tensor assigns it)
    WithDumpCitations the authors' articles given the citations of the same title in a dump
    ReadT2TUrls       wiki_urls JSON shards -> (article key, refs)
    T2TLinks          articles joined with their URL lists by article URL -> the links of each
                      reference URL, labelled ``citation`` or ``search`` by the article's
                      citations where a dump gives them, else ``listed``

The authors' lists mix an article's citations with its search results and do not say which is
which (:mod:`wikisum.formats.t2t`). With a dump beside them, a listed URL that the article
cites is a citation and the others are search results; without one, every URL is ``listed``,
and the job's summary records the one corpus that can be told apart, ``combined``.
"""

from __future__ import annotations

import dataclasses
import urllib.parse

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import TaggedOutput

from wikisum.core.accounting import IN, KEPT
from wikisum.core.progress import WorkerProgress
from wikisum.core.records import LINKS, PAGES, Article, DeadLetter, Link, Section, stable_hash
from wikisum.formats import t2t
from wikisum.pipeline.beamio import DEAD, FILES, TALLY, MatchFiles, Tallying, dead, tally
from wikisum.pipeline.urls import normalize_title, normalize_url

T2T_CONTENT = "t2t_content"  # records of the wiki_content shards -> articles
T2T_URLS = "t2t_urls"  # entries of the wiki_urls shards -> joined to an article
T2T_DUMP = "t2t_dump"  # the authors' articles -> matched to a dump article by title
LISTED = "listed"  # the source of a URL of the authors' lists where nothing tells its kind
LINKS_OUT = "links"
SEARCH_LISTED = "search_listed"


def article_id(title: str) -> int:
    """A stable 63-bit id for an article known by its title (the authors' files have no page
    ids): the same title gives the same id, so a duplicate title is a duplicate id."""
    return stable_hash(normalize_title(title)) >> 1


def wiki_key(url: str) -> str:
    """The join key of a Wikipedia article URL: its host, lowercased, and its title as MediaWiki
    stores it (``https://en.wikipedia.org/wiki/Foo_bar`` and ``http://en.wikipedia.org/wiki/Foo
    bar`` meet); any other URL is kept whole."""
    parts = urllib.parse.urlsplit(url.strip())
    if "/wiki/" not in parts.path:
        return url.strip()
    title = urllib.parse.unquote(parts.path.split("/wiki/", 1)[1])
    return f"{parts.hostname or ''}/{normalize_title(title)}"


def split_of_file(path: str) -> str:
    """The split tensor2tensor gives a wiki_content shard's articles (by its shard id); "" when
    the file is not named ``...-NNNNN-of-01000`` (the title then decides, as for a dump)."""
    try:
        return t2t.split_of_shard(t2t.shard_id_of(path.rsplit("/", 1)[-1]))
    except ValueError:
        return ""


def to_article(item: t2t.ContentArticle) -> Article:
    a = item.article
    return Article(
        id=article_id(a["title"]), title=a["title"], url=a["url"], lead=a["lead"],
        sections=tuple(Section(s["title"], s["level"], s["text"]) for s in a["sections"]),
        citation_urls=(), source_file=item.source, split=split_of_file(item.source))


def _problem_letter(p: t2t.Problem, stage: str) -> DeadLetter:
    return DeadLetter(p.source, f"offset {p.offset}", p.key, stage, p.reason, p.detail)


class ReadT2TContent(Tallying):
    """A wiki_content shard -> its articles; a record that cannot be read (a checksum, a cut
    record, a bad Example) is a dead letter naming the file and offset."""

    def setup(self):
        self.progress = WorkerProgress("ingest", "articles")

    def process(self, path: str):
        self.count(FILES, IN)
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            for item in t2t.iter_wiki_content(f, path):
                self.count(T2T_CONTENT, IN)
                if isinstance(item, t2t.Problem):
                    self.count(T2T_CONTENT, item.reason)
                    yield dead(_problem_letter(item, T2T_CONTENT))
                    continue
                self.progress.update()
                yield to_article(item)  # its outcome is tallied when it is assembled
        self.progress.flush()
        self.count(FILES, KEPT)


class ReadT2TArticles(beam.PTransform):
    """wiki_content globs -> articles."""

    def __init__(self, patterns):
        super().__init__()
        self.patterns = patterns

    def expand(self, pbegin):
        read = (pbegin | "MatchContent" >> MatchFiles(self.patterns)
                | "ReadContent" >> beam.ParDo(ReadT2TContent()).with_outputs(
                    DEAD, TALLY, main="articles"))
        return {"main": read.articles | "SpreadArticles" >> beam.Reshuffle(),
                DEAD: read[DEAD], TALLY: read[TALLY]}


class MatchDumpCitations(beam.DoFn):
    """CoGroupByKey(title) -> the authors' article with the citations of the dump's article of
    the same title. Counted: each authors' article matched or ``not_in_dump``; each dump
    article (the outcome of its page) ``labels_t2t`` or ``not_in_t2t_files``."""

    def process(self, item):
        _, grouped = item
        ours = sorted(grouped["t2t"], key=lambda a: (a.source_file, a.url))
        dumps = sorted(grouped["dump"], key=lambda a: (a.source_file, a.id))
        if dumps:
            yield tally(PAGES, "labels_t2t" if ours else "not_in_t2t_files", len(dumps))
        for article in ours:
            yield tally(T2T_DUMP, IN)
            if dumps:
                yield tally(T2T_DUMP, KEPT)
                yield dataclasses.replace(article, citation_urls=dumps[0].citation_urls)
            else:
                yield tally(T2T_DUMP, "not_in_dump")
                yield article


class WithDumpCitations(beam.PTransform):
    """(the authors' articles, a dump's articles) -> the authors' articles with the dump's
    citations of the same title."""

    def expand(self, inputs):
        ours, dumps = inputs
        matched = ({"t2t": ours | "T2TByTitle" >> beam.Map(
                        lambda a: (normalize_title(a.title), a)),
                    "dump": dumps | "DumpByTitle" >> beam.Map(
                        lambda a: (normalize_title(a.title), a))}
                   | "GroupByTitle" >> beam.CoGroupByKey()
                   | "Match" >> beam.ParDo(MatchDumpCitations()).with_outputs(
                       TALLY, main="articles"))
        return {"main": matched.articles, TALLY: matched[TALLY]}


class ReadT2TUrlShard(Tallying):
    """A wiki_urls shard -> (article key, its refs); problems are dead letters."""

    def process(self, path: str):
        self.count(FILES, IN)
        with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as f:
            for item in t2t.iter_wiki_urls(f, path):
                if isinstance(item, t2t.Problem):
                    if item.reason == "ref_not_a_string":  # the entry itself is kept
                        self.count(T2T_URLS, "urls_not_strings", item.count)
                    else:
                        self.count(T2T_URLS, IN)
                        self.count(T2T_URLS, item.reason)
                    yield dead(_problem_letter(item, T2T_URLS))
                    continue
                self.count(T2T_URLS, IN)
                yield wiki_key(item.wiki_url), (path, item.wiki_url, item.refs)
        self.count(FILES, KEPT)


class T2TLinks(beam.DoFn):
    """CoGroupByKey(article key) -> the article (its citations those of its list, in list
    order), and per listed URL a link: ``citation`` where the article cites it (a dump gave its
    citations), else ``search`` (with a dump) or ``listed`` (without). A list without an article,
    and a second list for one article, are counted dead letters."""

    def __init__(self, labelled: bool):
        self.labelled = labelled

    def process(self, item):
        _, grouped = item
        articles = sorted(grouped["article"], key=lambda a: (a.source_file, a.id))
        lists = sorted(grouped["refs"])
        for path, wiki_url, _ in lists[1:] if articles else lists:
            reason = "duplicate_list" if articles else "no_article"
            yield tally(T2T_URLS, reason)
            yield dead(DeadLetter(path, wiki_url, wiki_url, T2T_URLS, reason,
                                  "a second list for this article" if articles else
                                  "no article of the authors' files has this URL"))
        if not articles:
            return
        refs = []
        if lists:
            yield tally(T2T_URLS, KEPT)
            refs = lists[0][2]
        cited = set(articles[0].citation_urls)
        citations, seen, ranks = [], set(), {"citation": 0, "search": 0, LISTED: 0}
        # The lists hold an article's citations and its search results: a cited URL listed
        # again is also a search result (as the dump route links it twice); any other repeat
        # is a duplicate.
        for url in refs:
            yield tally(LINKS, IN)
            key = normalize_url(url)
            if key is None:
                yield tally(LINKS, "bad_url")
                yield dead(DeadLetter(lists[0][0], wiki_url_of(lists), url[:500], LINKS,
                                      "bad_url", ""))
                continue
            source = "citation" if key in cited else "search" if self.labelled else LISTED
            if (key, source) in seen and source == "citation":
                source = "search"
            if (key, source) in seen:
                yield tally(LINKS, "duplicate")
                continue
            seen.add((key, source))
            if source == "citation":
                citations.append(key)
            yield TaggedOutput(LINKS_OUT, (key, Link(articles[0].id, source, ranks[source])))
            ranks[source] += 1
        for article in articles:
            yield dataclasses.replace(article, citation_urls=tuple(citations))
        others = ranks["search"] + ranks[LISTED]
        if others:
            yield TaggedOutput(SEARCH_LISTED, (articles[0].id, others))


def wiki_url_of(lists: list) -> str:
    return lists[0][1] if lists else ""


class JoinT2TUrls(beam.PTransform):
    """(articles, wiki_urls globs) -> {main: articles, links, search_listed, DEAD, TALLY}."""

    def __init__(self, patterns, labelled: bool):
        super().__init__()
        self.patterns, self.labelled = patterns, labelled

    def expand(self, articles):
        lists = (articles.pipeline | "MatchUrlShards" >> MatchFiles(self.patterns)
                 | "ReadUrlShards" >> beam.ParDo(ReadT2TUrlShard()).with_outputs(
                     DEAD, TALLY, main="lists"))
        joined = ({"article": articles | "ArticleByUrl" >> beam.Map(
                       lambda a: (wiki_key(a.url), a)),
                   "refs": lists.lists}
                  | "GroupByArticleUrl" >> beam.CoGroupByKey()
                  | "Links" >> beam.ParDo(T2TLinks(self.labelled)).with_outputs(
                      LINKS_OUT, SEARCH_LISTED, DEAD, TALLY, main="articles"))
        return {"main": joined.articles, LINKS_OUT: joined[LINKS_OUT],
                SEARCH_LISTED: joined[SEARCH_LISTED],
                DEAD: (lists[DEAD], joined[DEAD]) | "T2TDead" >> beam.Flatten(),
                TALLY: (lists[TALLY], joined[TALLY]) | "T2TTallies" >> beam.Flatten()}
