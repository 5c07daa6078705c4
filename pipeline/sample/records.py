"""The planned sample's records: web documents, references, articles, and planned outcomes.

A document is one captured (or missing) URL with the outcome it is planned to have; an article
holds its citations and the references it makes to documents.

:mod:`~wikisum.pipeline.sample.planner` fills them in; the writers
(:mod:`~wikisum.pipeline.sample.dump`, :mod:`~wikisum.pipeline.sample.warcs`,
:mod:`~wikisum.pipeline.sample.manifest`) turn them into bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from urllib.parse import quote

from wikisum.pipeline.sample import pages
from wikisum.pipeline.sample.pages import Citation, Site
from wikisum.pipeline.sample.world import Entity

# Every date of the sample (captures, revisions, record headers) is counted from here.
BASE_DATE = datetime(2019, 6, 1, tzinfo=timezone.utc)

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
