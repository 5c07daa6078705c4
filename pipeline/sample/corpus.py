"""The sample corpus: a deterministic, small WikiSum input in the real formats.

``write_sample(out_dir, articles=60, seed=0)`` writes

- ``enwiki-sample-pages-articles.xml.bz2``: a MediaWiki export (schema 0.10) of the articles,
  plus redirects, a disambiguation page, non-article namespaces and two articles that the
  pipeline must drop (an empty lead, no references);
- ``warc/sample-NNNNN.warc.gz``: WARC/1.0 files, gzip per record, with ``warcinfo``, ``request``
  and ``response`` records (and one ``resource`` record), as Common Crawl and wget write them;
- ``wet/sample-00000.warc.wet.gz``: text conversions (``conversion`` records) for pages that are
  in no WARC file;
- ``search_results.jsonl``: one ``{"title": ..., "urls": [...]}`` per article;
- ``cc-index/...`` and ``urls.txt``: the WARC captures as a Common Crawl URL index (CDXJ and
  the columnar Parquet table) and every URL the articles refer to (``ccindex``);
- ``manifest.json`` and ``manifest-articles.parquet`` / ``manifest-documents.parquet``: the
  ground truth (what every reference is, which paragraphs are relevant to which article, and
  what the pipeline is expected to do with it).

Planning (what exists, which article refers to what) is separated from writing (bytes), and the
same seed gives byte-identical files: every random draw comes from one ``random.Random(seed)``,
and every timestamp, record id and ordering is derived from it.
"""

from __future__ import annotations

import bz2
import hashlib
import io
import json
import random
import re
import unicodedata
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
import pyarrow.parquet as pq
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from wikisum.core import schemas
from wikisum.pipeline.clones import lead_recall
from wikisum.pipeline.sample import ccindex, pages, world
from wikisum.pipeline.sample.config import (
    DEFAULT_ARTICLES,
    DEFAULT_SEED,
    DUMP_NAME,
    SEARCH_NAME,
    WET_NAME,
)
from wikisum.pipeline.sample.pages import Citation, Site
from wikisum.pipeline.sample.world import Entity

GENERATOR_VERSION = 1
BASE_DATE = datetime(2019, 6, 1, tzinfo=timezone.utc)
# A page above every sensible per-page size limit (Common Crawl itself truncates at 1 MiB).
LARGE_PAGE_BYTES = 6 * 1024 * 1024
# Ground-truth guard rails for the clone filter (default threshold 0.5): ordinary references stay
# clearly below it, clones clearly above, so that the expected outcome does not hinge on
# tokenisation details.
MAX_RECALL_KEPT = 0.40
MIN_RECALL_CLONE = 0.60

# Outcomes of a document, whoever refers to it (the manifest's ``outcome`` column).
OK = "ok"
NON_HTML = "non_html"
TRUNCATED = "truncated"
HTTP_STATUS = "http_status"
EMPTY = "empty"
TOO_LARGE = "too_large"
SUPERSEDED = "superseded_capture"
UNREFERENCED = "unreferenced"


@dataclass
class Paragraph:
    text: str
    relevant_to: list[str] = field(default_factory=list)  # article titles
    pinned: bool = False  # never trimmed (it carries what the document is there to test)


@dataclass
class Document:
    """One captured URL (or, for ``missing``, one cited URL that nothing captured)."""

    url: str
    kind: str
    site: Site | None = None
    headline: str = ""
    paragraphs: list[Paragraph] = field(default_factory=list)
    container: str = "warc"  # warc | wet | none
    record_type: str = "response"  # response | resource | conversion
    status: int = 200
    content_type: str = "text/html; charset=utf-8"
    charset: str = "utf-8"
    http_equiv: bool = False
    meta_charset: str | None = None  # a <meta> charset that differs from the real one
    outcome: str = OK
    location: str = ""
    date: str = ""
    file: str = ""
    raw_body: bytes | None = None  # for non-HTML bodies
    body_html: str | None = None  # for pages rendered outside the site layouts
    author: str = ""

    def text(self) -> str:
        """The text a pipeline sees: main text for HTML, everything for a WET conversion."""
        paragraphs = [p.text for p in self.paragraphs]
        if self.container == "wet":
            return pages.render_wet_text(self.site, self.headline, paragraphs)
        return "\n".join([self.headline] + paragraphs)


@dataclass
class Reference:
    url: str
    sources: list[str]
    raw_url: str = ""


@dataclass
class ArticlePlan:
    entity: Entity
    page_id: int
    citations: list[Citation] = field(default_factory=list)
    refs: dict[str, Reference] = field(default_factory=dict)  # capture URL -> reference
    search_urls: list[str] = field(default_factory=list)
    rendered: pages.RenderedArticle | None = None

    @property
    def title(self) -> str:
        return self.entity.title

    def add(self, url: str, source: str, raw_url: str = "") -> None:
        ref = self.refs.setdefault(url, Reference(url, []))
        if source not in ref.sources:
            ref.sources.append(source)
        if raw_url:
            ref.raw_url = raw_url
        if source == "search" and url not in self.search_urls:
            self.search_urls.append(url)


def wikipedia_url(title: str, host: str = "en.wikipedia.org") -> str:
    return f"https://{host}/wiki/" + quote(title.replace(" ", "_"), safe="/:(),'!*")


def _slug(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


# --------------------------------------------------------------------------------------------
# Planning


class Planner:
    def __init__(self, seed: int, n_articles: int):
        if n_articles < 1:
            raise ValueError("the sample needs at least one article")
        self.rng = random.Random(seed)
        self.seed = seed
        self.entities = world.make_world(self.rng, n_articles)
        self.sites = self._make_sites()
        self.docs: dict[str, Document] = {}
        self.extra_docs: list[Document] = []  # second captures of a URL
        self.articles = [ArticlePlan(e, 1000 + 7 * i) for i, e in enumerate(self.entities)]
        self.by_title = {a.title: a for a in self.articles}

    def _make_sites(self) -> list[Site]:
        names = world.NameBook(self.rng)
        sites = []
        for layout, suffixes in [("news", ["Gazette", "Herald", "Courier", "Post"]),
                                 ("blog", ["Notebook", "Journal", "Diaries"]),
                                 ("guide", ["Travel Guide", "Explorer", "Days Out"]),
                                 ("database", ["Records", "Archive", "Register"])]:
            for suffix in suffixes:
                word = names.word()
                host = f"www.{word.lower()}-{_slug(suffix)}.example"
                scheme = "http" if self.rng.random() < 0.3 else "https"
                sites.append(Site(host, f"The {word} {suffix}", layout, scheme))
        return sites

    # -- documents -------------------------------------------------------------------------

    def _new_url(self, site: Site, headline: str) -> str:
        year = self.rng.randrange(2009, 2020)
        section = {"news": "news", "blog": "posts", "guide": "places",
                   "database": "records"}[site.layout]
        for n in range(100):
            url = f"{site.scheme}://{site.host}/{section}/{year}/{_slug(headline)}"
            url += f"-{n}" if n else ""
            if url not in self.docs:
                return url
        raise RuntimeError("URL space exhausted")

    def _relevant_paragraphs(self, e: Entity, facts: list[str]) -> list[Paragraph]:
        options = world.paraphrases(e)
        out = []
        for i in range(0, len(facts), 2):
            sentences = [self.rng.choice(options[f]) for f in facts[i:i + 2]]
            if self.rng.random() < 0.6:
                sentences.insert(self.rng.randrange(len(sentences) + 1),
                                 self.rng.choice(world.ASIDES))
            out.append(Paragraph(" ".join(sentences), [e.title]))
        return out

    def _off_topic(self, k: int) -> list[Paragraph]:
        return [Paragraph(t) for t in self.rng.sample(world.OFF_TOPIC, k)]

    def page_about(self, e: Entity, *, kind: str = "page", n_facts: int | None = None,
                   extra: list[Paragraph] = ()) -> Document:
        """A web page about ``e``: a few of its facts in other words, amid off-topic prose."""
        site = self.rng.choice(self.sites)
        facts = list(world.paraphrases(e))
        n_facts = n_facts or self.rng.randrange(2, 5)
        chosen = self.rng.sample(facts, min(n_facts, len(facts)))
        paragraphs = self._relevant_paragraphs(e, chosen) + self._off_topic(
            self.rng.randrange(1, 4)) + list(extra)
        self.rng.shuffle(paragraphs)
        headline = self.rng.choice([f"{e.title}: what you need to know",
                                    f"A closer look at {e.title}", f"Notes on {e.title}",
                                    f"Why {e.title} matters", f"{e.title} in brief"])
        doc = Document(self._new_url(site, headline), kind, site, headline, paragraphs,
                       author=self.rng.choice(world.FIRST_NAMES) + " "
                       + self.rng.choice(["Berg", "Holm", "Marsh", "Reid", "Varga"]))
        self.docs[doc.url] = doc
        return doc

    def shared_page(self, entities: list[Entity]) -> Document:
        """A page covering several articles' subjects (a regional guide, a round-up)."""
        site = self.rng.choice([s for s in self.sites if s.layout in ("guide", "news")])
        paragraphs = []
        for e in entities:
            facts = self.rng.sample(list(world.paraphrases(e)), 2)
            paragraphs += self._relevant_paragraphs(e, facts)
        paragraphs += self._off_topic(2)
        self.rng.shuffle(paragraphs)
        headline = f"Around the {entities[0].region}: {len(entities)} names to know"
        doc = Document(self._new_url(site, headline), "shared", site, headline, paragraphs,
                       author="Staff writer")
        self.docs[doc.url] = doc
        return doc

    def cite(self, a: ArticlePlan, doc: Document, *, style: str | None = None,
             raw_url: str | None = None, name: str = "") -> None:
        style = style or self.rng.choice(["cite web", "cite web", "cite news", "bare", "bracket"])
        site_name = doc.site.name if doc.site else doc.url.split("/")[2]
        date = f"{self.rng.randrange(1, 28)} {self.rng.choice(world.MONTHS)} 2019"
        title = doc.headline or a.title
        a.citations.append(Citation(raw_url or doc.url, title, site_name, date, style, name))
        a.add(doc.url, "citation", raw_url or doc.url)

    def plan(self) -> None:
        rng = self.rng
        # Ordinary references: each article cites 2-4 pages and has 2-4 more in its search
        # results.
        for a in self.articles:
            for i in range(rng.randrange(2, 5)):
                self.cite(a, self.page_about(a.entity), name=f"{_slug(a.title)}-{i}" if i == 1
                          else "")
            for _ in range(rng.randrange(2, 5)):
                a.add(self.page_about(a.entity).url, "search")
        # Shared pages: articles of one region share a round-up, cited by the first and found
        # by search for the others.
        by_region: dict[str, list[ArticlePlan]] = {}
        for a in self.articles:
            by_region.setdefault(a.entity.region, []).append(a)
        for region in sorted(by_region):
            group = by_region[region]
            for start in range(0, len(group) - 1, 3):
                members = group[start:start + 3]
                if len(members) < 2:
                    continue
                doc = self.shared_page([m.entity for m in members])
                self.cite(members[0], doc, style="cite web")
                for m in members[1:]:
                    m.add(doc.url, "search")
        # Off-topic search results: a page about another article's subject.
        if len(self.articles) > 1:
            for i, a in enumerate(self.articles[::4]):
                other = self.articles[(4 * i + 1) % len(self.articles)]
                a.add(self.page_about(other.entity).url, "search")
        self._hard_cases()

    def _article(self, j: int, *, accented: bool = False) -> ArticlePlan:
        """The article that hosts the j-th hard case (accented: prefer an accented title)."""
        if accented:
            pool = [a for a in self.articles if a.entity.accented]
            if pool:
                return pool[j % len(pool)]
        return self.articles[(5 * j + 2) % len(self.articles)]

    def _hard_cases(self) -> None:
        """Every case the real formats throw at ingest, each hosted by a few articles; the
        order is fixed (it decides what the seeded generator draws for each)."""
        for case in (self._self_pages, self._clones, self._non_html, self._legacy_encodings,
                     self._conflicting_charset, self._truncated_record,
                     self._not_found_and_redirects, self._empty_and_large, self._two_captures,
                     self._url_variants, self._archived_citation, self._cited_and_searched,
                     self._resource_record, self._missing_captures,
                     self._unreferenced_captures, self._wet_conversions):
            case()

    def _self_pages(self) -> None:
        """The article's own Wikipedia page among its search results."""
        # Every third article; the second of them has the mobile host.
        for i, a in enumerate(self.articles[::3]):
            host = "en.m.wikipedia.org" if i == 1 else "en.wikipedia.org"
            doc = Document(wikipedia_url(a.title, host), "self", None, a.title)
            self.docs[doc.url] = doc
            a.add(doc.url, "search")

    def _clones(self) -> None:
        """Exact mirrors (clones) and near-clones (most of the lead copied)."""
        for j in range(2):
            a = self._article(j)
            mirror = ["wikimirror", "encyclopedia-copies"][j]
            doc = Document(f"https://www.{mirror}.example/wiki/{_slug(a.title)}", "clone",
                           None, a.title)
            self.docs[doc.url] = doc
            a.add(doc.url, "search")
            b = self._article(j + 2)
            near = self.page_about(b.entity, kind="near_clone", n_facts=2)
            b.add(near.url, "search")

    def _non_html(self) -> None:
        """Non-HTML responses: a cited PDF and an image in the search results."""
        a = self._article(4)
        pdf = Document(f"https://www.{_slug(a.title)}-council.example/files/annual-report.pdf",
                       "non_html", headline="Annual report", outcome=NON_HTML,
                       content_type="application/pdf", raw_body=pages.PDF_BYTES)
        self.docs[pdf.url] = pdf
        self.cite(a, pdf, style="cite web")
        img = Document(f"https://images.photostock.example/{_slug(a.title)}.png", "non_html",
                       outcome=NON_HTML, content_type="image/png", raw_body=pages.PNG_BYTES)
        self.docs[img.url] = img
        a.add(img.url, "search")

    def _legacy_encodings(self) -> None:
        """Legacy encodings declared only in the page, with accented letters in the text."""
        # windows-1252 in <meta charset>, ISO-8859-1 in <meta http-equiv>.
        for j, (charset, equiv) in enumerate([("windows-1252", False), ("iso-8859-1", True)]):
            a = self._article(j, accented=True)
            doc = self.page_about(a.entity, kind="legacy_encoding", extra=[Paragraph(
                "The café on the square serves crème brûlée beneath a restored façade, and "
                "the naïve murals inside are a local favourite.", pinned=True)])
            doc.charset, doc.http_equiv, doc.content_type = charset, equiv, "text/html"
            self.cite(a, doc, style="cite web")

    def _conflicting_charset(self) -> None:
        """A page whose HTTP header charset is right and whose <meta> one is wrong."""
        # The header wins.
        a = self._article(5, accented=True)
        doc = self.page_about(a.entity, kind="conflicting_charset")
        doc.meta_charset = "iso-8859-1"
        a.add(doc.url, "search")

    def _truncated_record(self) -> None:
        """A record cut off mid-way (the end of an interrupted WARC file)."""
        self._cited_page(6, "truncated", outcome=TRUNCATED)

    def _not_found_and_redirects(self) -> None:
        """404 and redirect responses to cited URLs."""
        for j in range(2):
            a = self._article(7 + j)
            site = self.rng.choice(self.sites)
            base = f"{site.scheme}://{site.host}"
            gone = Document(f"{base}/archive/{_slug(a.title)}-{j}", "not_found", site,
                            outcome=HTTP_STATUS, status=404)
            self.docs[gone.url] = gone
            self.cite(a, gone, style="cite web")
            moved = Document(f"{site.scheme}://{site.host}/old/{_slug(a.title)}-{j}", "redirect",
                             site, outcome=HTTP_STATUS, status=301)
            moved.location = f"{site.scheme}://{site.host}/new/{_slug(a.title)}-{j}"
            self.docs[moved.url] = moved
            self.cite(a, moved, style="cite news")

    def _empty_and_large(self) -> None:
        """An empty page and a very large one."""
        a = self._article(9)
        empty = Document(f"https://www.{_slug(a.title)}-news.example/", "empty", None,
                         outcome=EMPTY)
        self.docs[empty.url] = empty
        self.cite(a, empty, style="bare")
        big = self.page_about(a.entity, kind="large")
        big.outcome = TOO_LARGE
        a.add(big.url, "search")

    def _two_captures(self) -> None:
        """Two captures of one URL: the later one wins and has one paragraph more."""
        for j in range(2):
            a = self._article(10 + j)
            newer = self.page_about(a.entity, kind="two_captures")
            older = Document(newer.url, "two_captures", newer.site, newer.headline,
                             [p for p in newer.paragraphs if p.relevant_to][:1]
                             + [p for p in newer.paragraphs if not p.relevant_to],
                             outcome=SUPERSEDED, author=newer.author)
            self.extra_docs.append(older)
            self.cite(a, newer)

    def _url_variants(self) -> None:
        """URLs cited in another spelling of the captured URL."""
        for j, variant in enumerate(["case_port", "fragment", "percent", "default_path"]):
            a = self._article(12 + j)
            doc = self.page_about(a.entity, kind="url_variant")
            scheme, rest = doc.url.split("://", 1)
            host, path = rest.split("/", 1)
            if variant == "case_port":
                port = ":80" if scheme == "http" else ":443"
                raw = f"{scheme.upper()}://{host.upper()}{port}/{path}"
            elif variant == "fragment":
                raw = doc.url + "#comments"
            elif variant == "percent":
                # Capture URL percent-encoded, cited with the raw UTF-8 character.
                self._move(doc, f"{scheme}://{host}/{path}/caf%C3%A9-guide")
                raw = f"{scheme}://{host}/{path}/café-guide"
            else:
                self._move(doc, f"{scheme}://{host}/")
                raw = f"{scheme}://{host.upper()}"
            self.cite(a, doc, style="cite web", raw_url=raw)

    def _cited_page(self, j: int, kind: str, **fields) -> None:
        """A page about the j-th host article, of ``kind``, with ``fields`` set, cited by it."""
        a = self._article(j)
        doc = self.page_about(a.entity, kind=kind)
        for name, value in fields.items():
            setattr(doc, name, value)
        self.cite(a, doc)

    def _move(self, doc: Document, url: str) -> None:
        """Serve ``doc`` at ``url`` instead of the URL it was made with."""
        del self.docs[doc.url]
        doc.url = url
        self.docs[doc.url] = doc

    def _archived_citation(self) -> None:
        """A {{cite web}} with only archive-url=: the archived copy is the reference."""
        a = self._article(16)
        doc = self.page_about(a.entity, kind="archived")
        self._move(doc, "https://web.archive.org/web/20190101000000/" + doc.url)
        self.cite(a, doc, style="archive")

    def _cited_and_searched(self) -> None:
        """One page both cited and in the same article's search results."""
        a = self._article(17)
        doc = self.page_about(a.entity)
        self.cite(a, doc)
        a.add(doc.url, "search")

    def _resource_record(self) -> None:
        """One page served as a WARC "resource" record (wget writes these)."""
        self._cited_page(18, "resource_record", record_type="resource")

    def _missing_captures(self) -> None:
        """Cited URLs that no capture provides."""
        for j in range(4):
            a = self._article(19 + j)
            site = self.rng.choice(self.sites)
            url = f"{site.scheme}://{site.host}/lost/{_slug(a.title)}-{j}"
            doc = Document(url, "missing", site, f"Lost page about {a.title}", container="none")
            self.docs[url] = doc
            self.cite(a, doc)

    def _unreferenced_captures(self) -> None:
        """Captures that no article refers to (Common Crawl holds mostly those)."""
        for j in range(3):
            e = self.entities[(3 * j) % len(self.entities)]
            doc = self.page_about(e, kind="unreferenced")
            doc.outcome = UNREFERENCED

    def _wet_conversions(self) -> None:
        """Text conversions: about one good page in twelve is in the WET file only."""
        ordinary = [d for d in self.docs.values() if d.kind == "page"]
        for d in ordinary[5::12]:
            d.container, d.record_type, d.content_type = "wet", "conversion", "text/plain"

    # -- content that needs the rendered articles --------------------------------------------

    def render(self) -> None:
        for a in self.articles:
            a.rendered = pages.render_article(a.entity, a.citations, self.rng)
        for doc in self.docs.values():
            owner = next((a for a in self.articles if doc.url in a.refs), None)
            if doc.kind in ("self", "clone") and owner:
                r = owner.rendered
                mirror = None if doc.kind == "self" else doc.url.split("/")[2]
                doc.body_html = pages.render_wikipedia_html(owner.title, r.lead,
                                                            list(r.sections), mirror=mirror)
                doc.paragraphs = [Paragraph(p) for p in r.lead.split("\n\n")] + [
                    Paragraph(t) for _, t in r.sections]
            elif doc.kind == "near_clone" and owner:
                sentences = re.split(r"(?<=\.) ", owner.rendered.lead.replace("\n\n", " "))
                copied = " ".join(sentences[:max(1, len(sentences) - 1)])
                doc.paragraphs.insert(0, Paragraph(copied, [owner.title]))
                if lead_recall(owner.rendered.lead, doc.text()) < MIN_RECALL_CLONE:
                    doc.paragraphs[0] = Paragraph(" ".join(sentences), [owner.title])
            elif doc.kind == "large":
                filler = [Paragraph(world.OFF_TOPIC[i % len(world.OFF_TOPIC)])
                          for i in range(LARGE_PAGE_BYTES // 150)]
                doc.paragraphs = doc.paragraphs + filler
        self._bound_recall()

    def _bound_recall(self) -> None:
        """Keep every ordinary reference clearly below the clone threshold and every clone
        clearly above it, trimming paragraphs where a draw came out too close."""
        for a in self.articles:
            lead = a.rendered.lead
            for url in a.refs:
                doc = self.docs[url]
                if doc.kind == "missing" or doc.outcome not in (OK, UNREFERENCED):
                    continue
                if doc.kind in ("clone", "near_clone", "self"):
                    if lead_recall(lead, doc.text()) < MIN_RECALL_CLONE:
                        raise AssertionError(f"clone {url} too far from {a.title}")
                    continue
                while lead_recall(lead, doc.text()) > MAX_RECALL_KEPT:
                    # Off-topic first, then relevant paragraphs beyond the first.
                    idx = [i for i, p in enumerate(doc.paragraphs)
                           if a.title not in p.relevant_to and not p.pinned]
                    idx = idx or [i for i, p in enumerate(doc.paragraphs) if not p.pinned][1:]
                    if not idx:
                        raise AssertionError(f"cannot keep {url} below the clone threshold")
                    del doc.paragraphs[idx[-1]]

    # -- dates and files ----------------------------------------------------------------------

    def assign_files(self) -> list[str]:
        docs = [d for d in self.docs.values() if d.container == "warc"]
        n_files = max(2, min(8, len(docs) // 120 + 1))
        names = [f"warc/sample-{i:05d}.warc.gz" for i in range(n_files)]
        for d in docs:
            h = int(hashlib.sha1(d.url.encode()).hexdigest(), 16)
            d.file = names[h % n_files]
        for d in self.docs.values():
            if d.container == "wet":
                d.file = WET_NAME
        # The truncated record closes the first file; the older capture of a URL lives in
        # another file than the newer one.
        for d in docs:
            if d.outcome == TRUNCATED:
                d.file = names[0]
        for d in self.extra_docs:
            newer = self.docs[d.url]
            d.file = names[(names.index(newer.file) + 1) % n_files]
        for i, d in enumerate(sorted(self.all_captures(), key=lambda d: (d.file, d.url,
                                                                          d.outcome))):
            d.date = (BASE_DATE + timedelta(minutes=7 * i)).strftime("%Y-%m-%dT%H:%M:%SZ")
        for d in self.extra_docs:  # the older capture is a year older
            d.date = "2018" + d.date[4:]
        return names

    def all_captures(self) -> list[Document]:
        return [d for d in self.docs.values() if d.container != "none"] + self.extra_docs


# --------------------------------------------------------------------------------------------
# Writing


def _body(doc: Document) -> bytes:
    if doc.raw_body is not None:
        return doc.raw_body
    if doc.kind == "empty":
        return b"<!DOCTYPE html>\n<html><head><title></title></head><body></body></html>\n"
    if doc.status != 200:
        return (f"<html><body><h1>{doc.status}</h1><p>"
                f"{'Not Found' if doc.status == 404 else 'Moved'}</p></body></html>\n").encode()
    if doc.body_html is not None:
        return doc.body_html.encode("utf-8")
    if doc.container == "wet":
        return pages.render_wet_text(doc.site, doc.headline,
                                     [p.text for p in doc.paragraphs]).encode("utf-8")
    declared = doc.meta_charset or doc.charset
    html = pages.render_html(doc.site, doc.headline, [p.text for p in doc.paragraphs],
                             date=doc.date[:10], author=doc.author, charset=declared,
                             http_equiv=doc.http_equiv)
    return html.encode(doc.charset)


def _record_id(seed: int, *parts) -> str:
    name = "/".join(str(p) for p in (seed,) + parts)
    return f"<urn:uuid:{uuid.uuid5(uuid.NAMESPACE_URL, name)}>"


def _http_headers(doc: Document, body: bytes) -> StatusAndHeaders:
    reason = {200: "OK", 301: "Moved Permanently", 404: "Not Found"}[doc.status]
    when = datetime.strptime(doc.date, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    headers = [("Date", format_datetime(when, usegmt=True)), ("Server", "nginx"),
               ("Content-Type", doc.content_type), ("Content-Length", str(len(body)))]
    if doc.location:
        headers.append(("Location", doc.location))
    return StatusAndHeaders(f"{doc.status} {reason}", headers, protocol="HTTP/1.1")


def _write_warc(path: Path, name: str, docs: list[Document], seed: int) -> Counter:
    counts: Counter = Counter()
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    info = writer.create_warcinfo_record(name, {"software": "wikisum sample",
                                                "format": "WARC File Format 1.0"})
    info.rec_headers.replace_header("WARC-Record-ID", _record_id(seed, name, "info"))
    info.rec_headers.replace_header("WARC-Date", BASE_DATE.strftime("%Y-%m-%dT%H:%M:%SZ"))
    writer.write_record(info)
    counts["warcinfo"] += 1
    truncated = []
    for doc in docs:
        if doc.outcome == TRUNCATED:
            truncated.append(doc)
            continue
        _write_capture(writer, doc, seed, counts)
    for doc in truncated:
        # Written whole, then cut in the middle of the response record's gzip member.
        tmp = io.BytesIO()
        _write_capture(WARCWriter(tmp, gzip=True), doc, seed, Counter())
        data = tmp.getvalue()
        buf.write(data[: len(data) - len(data) // 3])
        counts["request"] += 1
        counts["response_truncated"] += 1
    path.write_bytes(buf.getvalue())
    return counts


def _write_capture(writer: WARCWriter, doc: Document, seed: int, counts: Counter) -> None:
    body = _body(doc)
    if doc.record_type == "resource":
        rec = writer.create_warc_record(doc.url, "resource", payload=io.BytesIO(body),
                                        warc_content_type=doc.content_type)
    else:
        host = doc.url.split("/")[2]
        req = writer.create_warc_record(
            doc.url, "request", payload=io.BytesIO(b""),
            http_headers=StatusAndHeaders(
                "GET /" + doc.url.split("/", 3)[-1] + " HTTP/1.1",
                [("Host", host), ("User-Agent", "wikisum-sample/1.0")], is_http_request=True))
        req.rec_headers.replace_header("WARC-Record-ID", _record_id(seed, doc.url, doc.date,
                                                                    "request"))
        req.rec_headers.replace_header("WARC-Date", doc.date)
        writer.write_record(req)
        counts["request"] += 1
        rec = writer.create_warc_record(doc.url, "response", payload=io.BytesIO(body),
                                        http_headers=_http_headers(doc, body))
    rec.rec_headers.replace_header("WARC-Record-ID", _record_id(seed, doc.url, doc.date))
    rec.rec_headers.replace_header("WARC-Date", doc.date)
    writer.write_record(rec)
    counts[doc.record_type] += 1


def _write_wet(path: Path, docs: list[Document], seed: int) -> Counter:
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    info = writer.create_warcinfo_record(WET_NAME.split("/")[-1], {
        "software": "wikisum sample", "description": "Text conversions of HTML pages"})
    info.rec_headers.replace_header("WARC-Record-ID", _record_id(seed, WET_NAME, "info"))
    info.rec_headers.replace_header("WARC-Date", BASE_DATE.strftime("%Y-%m-%dT%H:%M:%SZ"))
    writer.write_record(info)
    for doc in docs:
        rec = writer.create_warc_record(doc.url, "conversion", payload=io.BytesIO(_body(doc)),
                                        warc_content_type="text/plain")
        rec.rec_headers.replace_header("WARC-Record-ID", _record_id(seed, doc.url, "wet"))
        rec.rec_headers.replace_header("WARC-Date", doc.date)
        rec.rec_headers.add_header("WARC-Refers-To", _record_id(seed, doc.url, doc.date))
        writer.write_record(rec)
    path.write_bytes(buf.getvalue())
    return Counter({"warcinfo": 1, "conversion": len(docs)})


def _xml_escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def _sha1_base36(text: str) -> str:
    n = int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out.rjust(31, "0")


SITEINFO = """  <siteinfo>
    <sitename>Wikipedia</sitename>
    <dbname>enwiki</dbname>
    <base>https://en.wikipedia.org/wiki/Main_Page</base>
    <generator>MediaWiki 1.35.0-wmf.25</generator>
    <case>first-letter</case>
    <namespaces>
      <namespace key="0" case="first-letter" />
      <namespace key="1" case="first-letter">Talk</namespace>
      <namespace key="4" case="first-letter">Wikipedia</namespace>
      <namespace key="10" case="first-letter">Template</namespace>
      <namespace key="14" case="first-letter">Category</namespace>
    </namespaces>
  </siteinfo>
"""


def _page_xml(page_id: int, title: str, ns: int, text: str, i: int,
              redirect: str | None = None) -> str:
    stamp = (BASE_DATE - timedelta(days=400 - i)).strftime("%Y-%m-%dT%H:%M:%SZ")
    redirect_el = f'    <redirect title="{_xml_escape(redirect)}" />\n' if redirect else ""
    return (
        "  <page>\n"
        f"    <title>{_xml_escape(title)}</title>\n"
        f"    <ns>{ns}</ns>\n"
        f"    <id>{page_id}</id>\n"
        f"{redirect_el}"
        "    <revision>\n"
        f"      <id>{900000 + page_id}</id>\n"
        f"      <parentid>{800000 + page_id}</parentid>\n"
        f"      <timestamp>{stamp}</timestamp>\n"
        "      <contributor>\n        <username>Sample editor</username>\n"
        "        <id>4242</id>\n      </contributor>\n"
        "      <comment>sample revision</comment>\n"
        "      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
        f'      <text bytes="{len(text.encode("utf-8"))}" xml:space="preserve">'
        f"{_xml_escape(text)}</text>\n"
        f"      <sha1>{_sha1_base36(text)}</sha1>\n"
        "    </revision>\n"
        "  </page>\n"
    )


def _extra_pages(planner: Planner) -> list[dict]:
    """Pages the pipeline must drop: redirects, other namespaces, a disambiguation page, an
    article with an empty lead and one without references."""
    arts = planner.articles
    first = arts[0]
    extra = []
    for j, a in enumerate(arts[:3]):
        title = f"{a.title} ({a.entity.kind})" if j != 1 else a.title.upper()
        if title == a.title:
            title += " (redirect)"
        extra.append(dict(title=title, ns=0, kind="redirect", redirect_to=a.title,
                          text=f"#REDIRECT [[{a.title}]]\n\n{{{{R from alternative name}}}}\n"))
    extra.append(dict(title=f"Talk:{first.title}", ns=1, kind="non_article",
                      text="== Sources ==\nThe lead needs a better citation. ~~~~\n"))
    extra.append(dict(title="Template:Infobox settlement", ns=10, kind="non_article",
                      text="{| class=\"infobox\"\n|-\n| {{{name}}}\n|}\n<noinclude>"
                           "[[Category:Infobox templates]]</noinclude>\n"))
    extra.append(dict(title="Wikipedia:Sample corpus", ns=4, kind="non_article",
                      text="This page describes the sample corpus. It is not an article.\n"))
    links = "\n".join(f"* [[{a.title}]], a {a.entity.kind} in the {a.entity.region}"
                      for a in arts[:3])
    extra.append(dict(title=f"{first.title.split()[0]} (disambiguation)", ns=0,
                      kind="disambiguation",
                      text=f"'''{first.title.split()[0]}''' may refer to:\n{links}\n\n"
                           "{{disambiguation}}\n"))
    site = planner.sites[0]
    extra.append(dict(title="History of the sample valleys", ns=0, kind="empty_lead",
                      text="{{Use dmy dates|date=March 2020}}\n== Early history ==\nThe valleys "
                           "were settled slowly.<ref>{{cite web |url=" + site.scheme + "://"
                           + site.host + "/history/valleys |title=Valleys}}</ref>\n"))
    extra.append(dict(title="Minor sample hamlet", ns=0, kind="no_references",
                      text="'''Minor sample hamlet''' is a hamlet with no sources.\n\n"
                           "== Geography ==\nIt is small.\n"))
    return extra


def write_sample(out_dir: str | Path, articles: int = DEFAULT_ARTICLES,
                 seed: int = DEFAULT_SEED) -> dict:
    """Write the sample corpus to ``out_dir`` and return its manifest."""
    out = Path(out_dir)
    planner = Planner(seed, articles)
    planner.plan()
    planner.render()
    warc_names = planner.assign_files()
    (out / "warc").mkdir(parents=True, exist_ok=True)
    (out / "wet").mkdir(parents=True, exist_ok=True)

    # Dump: articles interleaved with the pages to drop, in page-id order.
    extra = _extra_pages(planner)
    entries = [(a.page_id, a.title, 0, a.rendered.wikitext, "article", None)
               for a in planner.articles]
    last_id = planner.articles[-1].page_id
    for j, p in enumerate(extra):
        entries.append((last_id + 3 + 2 * j, p["title"], p["ns"], p["text"], p["kind"],
                        p.get("redirect_to")))
    entries.sort(key=lambda x: x[0])
    xml = ['<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" '
           'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
           'xsi:schemaLocation="http://www.mediawiki.org/xml/export-0.10/ '
           'http://www.mediawiki.org/xml/export-0.10.xsd" version="0.10" xml:lang="en">\n',
           SITEINFO]
    for i, (pid, title, ns, text, _kind, redirect) in enumerate(entries):
        xml.append(_page_xml(pid, title, ns, text, i, redirect))
    xml.append("</mediawiki>\n")
    (out / DUMP_NAME).write_bytes(bz2.compress("".join(xml).encode("utf-8"), 9))

    # WARC and WET files.
    record_counts: dict[str, dict[str, int]] = {}
    captures = planner.all_captures()
    for name in warc_names:
        docs = sorted((d for d in captures if d.file == name), key=lambda d: (d.date, d.url))
        record_counts[name] = dict(sorted(_write_warc(out / name, name, docs, seed).items()))
    wet_docs = sorted((d for d in captures if d.file == WET_NAME), key=lambda d: d.url)
    record_counts[WET_NAME] = dict(_write_wet(out / WET_NAME, wet_docs, seed))

    # Search results.
    lines = [json.dumps({"title": a.title, "urls": a.search_urls}, ensure_ascii=False)
             for a in planner.articles if a.search_urls]
    (out / SEARCH_NAME).write_text("\n".join(lines) + "\n", encoding="utf-8")

    # The captures as a Common Crawl URL index, and the URLs the articles refer to.
    urls = list(dict.fromkeys(
        [c.raw_url for a in planner.articles for c in a.citations]
        + [u for a in planner.articles for u in a.search_urls]))
    index = ccindex.write_index(out, warc_names, urls)

    manifest = _manifest(planner, extra, entries, warc_names, record_counts, articles, seed)
    manifest["files"]["cc_index"] = index
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n",
                                       encoding="utf-8")
    _write_parquet(out / "manifest-articles.parquet", manifest["articles"],
                   schemas.MANIFEST_ARTICLES)
    _write_parquet(out / "manifest-documents.parquet", manifest["documents"],
                   schemas.MANIFEST_DOCUMENTS)
    return manifest


def _write_parquet(path: Path, rows: list[dict], schema: pa.Schema) -> None:
    table = pa.Table.from_pylist(rows, schema=schema)
    # No timestamps or library versions in the file, so that a seed gives the same bytes.
    pq.write_table(table, path, compression="zstd", store_schema=True,
                   write_statistics=False)


def expected_outcome(doc: Document) -> str:
    """What the pipeline should do with a reference to ``doc``."""
    if doc.kind == "missing":
        return "missing"
    if doc.kind == "self":
        return "self"
    if doc.kind in ("clone", "near_clone"):
        return "clone"
    if doc.outcome != OK:
        return doc.outcome
    return "kept"


def _manifest(planner: Planner, extra: list[dict], entries, warc_names, record_counts,
              n_articles: int, seed: int) -> dict:
    articles = []
    for a in planner.articles:
        refs = []
        for url, ref in a.refs.items():
            doc = planner.docs[url]
            refs.append({
                "url": url,
                "raw_url": ref.raw_url or url,
                "sources": sorted(ref.sources),
                "kind": doc.kind,
                "expected": expected_outcome(doc),
                "relevant_paragraphs": [p.text for p in doc.paragraphs
                                        if a.title in p.relevant_to],
            })
        articles.append({
            "page_id": a.page_id,
            "title": a.title,
            "url": wikipedia_url(a.title),
            "kind": a.entity.kind,
            "lead": a.rendered.lead,
            "section_titles": list(a.rendered.section_titles),
            "citation_urls": [c.raw_url for c in a.citations],
            "search_urls": a.search_urls,
            "references": refs,
        })
    documents = []
    for d in sorted(planner.all_captures() + [x for x in planner.docs.values()
                                              if x.container == "none"],
                    key=lambda d: (d.url, d.date)):
        documents.append({
            "url": d.url,
            "kind": d.kind,
            "outcome": "missing" if d.container == "none" else d.outcome,
            "container": d.container,
            "file": d.file,
            "record_type": d.record_type if d.container != "none" else "",
            "status": d.status if d.container != "none" else 0,
            "content_type": d.content_type if d.container != "none" else "",
            "charset": d.charset,
            "capture_date": d.date,
            "location": d.location,
            "body_bytes": len(_body(d)) if d.container != "none" else 0,
            "paragraphs": [{"text": p.text, "relevant_to": p.relevant_to}
                           for p in d.paragraphs] if d.kind != "large" else
                          [{"text": p.text, "relevant_to": p.relevant_to}
                           for p in d.paragraphs if p.relevant_to],
            "boilerplate": pages.boilerplate_texts(d.site) if d.site else [],
        })
    pages_ = ([{"page_id": a.page_id, "title": a.title, "ns": 0, "kind": "article",
                "redirect_to": ""} for a in planner.articles]
              + [{"page_id": pid, "title": t, "ns": ns, "kind": k, "redirect_to": r or ""}
                 for pid, t, ns, _x, k, r in entries if k != "article"])
    pages_.sort(key=lambda p: p["page_id"])
    kinds = Counter(d["kind"] for d in documents)
    outcomes = Counter(d["outcome"] for d in documents)
    return {
        "generator": "wikisum sample",
        "version": GENERATOR_VERSION,
        "seed": seed,
        "articles_requested": n_articles,
        "files": {"dump": DUMP_NAME, "warc": warc_names, "wet": [WET_NAME],
                  "search_results": SEARCH_NAME},
        "counts": {
            "pages": len(pages_),
            "pages_by_kind": dict(sorted(Counter(p["kind"] for p in pages_).items())),
            "articles": len(articles),
            "search_result_lines": sum(1 for a in planner.articles if a.search_urls),
            "records": record_counts,
            "documents": len(documents),
            "documents_by_kind": dict(sorted(kinds.items())),
            "documents_by_outcome": dict(sorted(outcomes.items())),
            "references": sum(len(a["references"]) for a in articles),
        },
        "pages": pages_,
        "articles": articles,
        "documents": documents,
    }
