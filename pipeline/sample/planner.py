"""Planning the sample corpus: what exists, what refers to what, every hard case; no bytes.

Which articles and web documents exist, which article cites or finds which document, every hard
case the real formats throw at ingest, the documents' content and the file that holds each
capture.

Every random draw comes from the planner's one ``random.Random(seed)``, in a fixed order, so the
same seed gives the same plan.
"""

from __future__ import annotations

import hashlib
import random
import re
import unicodedata
from datetime import timedelta

from wikisum.pipeline.clones import lead_recall
from wikisum.pipeline.sample import pages, world
from wikisum.pipeline.sample.config import WET_NAME
from wikisum.pipeline.sample.pages import Citation, Site
from wikisum.pipeline.sample.records import (
    BASE_DATE,
    EMPTY,
    HTTP_STATUS,
    NON_HTML,
    OK,
    SUPERSEDED,
    TOO_LARGE,
    TRUNCATED,
    UNREFERENCED,
    ArticlePlan,
    Document,
    Paragraph,
    wikipedia_url,
)
from wikisum.pipeline.sample.world import Entity

# A page above every sensible per-page size limit (Common Crawl itself truncates at 1 MiB).
LARGE_PAGE_BYTES = 6 * 1024 * 1024
# Ground-truth guard rails for the clone filter (default threshold 0.5): ordinary references stay
# clearly below it, clones clearly above, so that the expected outcome does not hinge on
# tokenisation details.
MAX_RECALL_KEPT = 0.40
MIN_RECALL_CLONE = 0.60


def _slug(text: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


class Planner:
    """The plan of one sample: ``plan()`` decides what exists and who refers to what,
    ``render()`` fills in the content, ``assign_files()`` places and dates the captures."""

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
