"""Wikitext -> the URLs an article cites: citation templates and links inside ``<ref>`` tags,
and the citation templates of its references sections (a URL parameter of any template inside
a ``<ref>`` is a citation whatever the template's name); archived copies are only a fallback.
:func:`wikisum.pipeline.wikitext.parse_article` calls :func:`cited_urls` on the tree it parsed
once, and renders its text with the readers of template names and parameter values here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from mwparserfromhell.nodes import Comment, ExternalLink, Node, Tag, Template, Wikilink
from mwparserfromhell.wikicode import Wikicode

# Sections whose bare citation templates are citations too: older articles list their sources
# there instead of using <ref> tags.
_REFERENCE_SECTIONS = frozenset(
    {
        "references", "notes", "sources", "bibliography", "citations", "works cited",
        "footnotes", "notes and references", "references and notes", "literature cited",
    }
)


def cited_urls(lead: list[Node], sections: Iterable[tuple[str, list[Node]]]
               ) -> tuple[str, ...]:
    """The http(s) URLs an article cites, in order of first appearance, without duplicates and
    not yet normalised: those inside ``<ref>`` tags of its lead and sections, and the citation
    templates of its references sections.

    Args:
        lead: The nodes before the first heading.
        sections: Each section's title (rendered) and its nodes, in order.
    """
    citations: dict[str, None] = {}
    _collect_citations(lead, citations, in_ref=False, in_template=False, cite_bare=False)
    for title, body in sections:
        in_references = title.lower() in _REFERENCE_SECTIONS
        _collect_citations(
            body, citations, in_ref=False, in_template=False, cite_bare=in_references
        )
    return tuple(citations)


def template_name(name: Wikicode) -> str:
    """A template's name as names are compared: without comments, lowercased, underscores as
    spaces, no ``Template:`` prefix."""
    text = "".join(str(n) for n in name.nodes if not isinstance(n, Comment))
    text = " ".join(text.replace("_", " ").split()).lower()
    return text.removeprefix("template:").strip()


def plain_value(value: Wikicode) -> str:
    """The source text of a parameter or link target without comments and templates.

    Templates go too: `url=http://x.com/a{{dead link|date=...}}` is common. A URL inside a
    parameter is often parsed as an external link, so its target is cleaned the same way.
    """
    parts = []
    for node in value.nodes:
        if isinstance(node, ExternalLink) and node.title is None and not node.brackets:
            parts.append(plain_value(node.url))
        elif not isinstance(node, (Comment, Template)):
            parts.append(str(node))
    return "".join(parts).strip()


def _is_citation_template(name: str) -> bool:
    # "cite web", "Cite news", "cite_journal", "citation", plus the German and Polish web-citation
    # templates, since German and Polish articles are in the corpus.
    return name.startswith(("cite", "citation", "internetquelle", "cytuj"))


def _collect_citations(
    nodes: list[Node],
    found: dict[str, None],
    *,
    in_ref: bool,
    in_template: bool,
    cite_bare: bool,
) -> None:
    """Adds cited URLs under `nodes` to `found` (an insertion-ordered set), in document order.

    Args:
        nodes: The nodes to walk.
        found: Collected URLs, as dict keys to keep their first-seen order.
        in_ref: Whether the nodes are inside a `<ref>` tag.
        in_template: Whether the nodes are inside a template argument; a link there belongs to
            the template (e.g. `archive-url=`) rather than to the citation text.
        cite_bare: Whether citation templates count outside `<ref>` (references sections).
    """
    for node in nodes:
        if isinstance(node, Tag):
            if node.contents is None:
                continue
            is_ref = str(node.tag).strip().lower() == "ref"
            _collect_citations(
                node.contents.nodes,
                found,
                in_ref=in_ref or is_ref,
                in_template=in_template and not is_ref,
                cite_bare=cite_bare,
            )
        elif isinstance(node, Template):
            if (in_ref or cite_bare) and _is_citation_template(template_name(node.name)):
                url = _citation_url(node)
                if url is not None:
                    found.setdefault(url)
            elif in_ref:
                for url in _template_urls(node):
                    found.setdefault(url)
            for param in node.params:
                _collect_citations(
                    param.value.nodes, found, in_ref=in_ref, in_template=True, cite_bare=cite_bare
                )
        elif isinstance(node, ExternalLink):
            if in_ref and not in_template:
                url = _web_url(plain_value(node.url))
                if url is not None:
                    found.setdefault(url)
            if node.title is not None:
                _collect_citations(
                    node.title.nodes, found, in_ref=in_ref, in_template=in_template,
                    cite_bare=cite_bare,
                )
        elif isinstance(node, Wikilink):
            # File captions and link labels can hold <ref> tags.
            if node.text is not None:
                _collect_citations(
                    node.text.nodes, found, in_ref=in_ref, in_template=in_template,
                    cite_bare=cite_bare,
                )


def _citation_url(template: Template) -> str | None:
    url = archive_url = ""
    for param in template.params:
        name = str(param.name).strip()
        if name in ("url", "URL"):
            url = plain_value(param.value)
        elif name in ("archive-url", "archiveurl", "archive_url"):
            archive_url = plain_value(param.value)
    # The archive is only a fallback: the original URL is what a crawl would have captured.
    return _web_url(url) or _web_url(archive_url)


# Words for "archive" in citation templates' parameter names (`archive-url`, `archiv-url`,
# `urlarchivo`, `arquivourl`, `archiwum`, `архив`, `архів`, `مسار أرشيف`, `アーカイブ`,
# `存档`, `url lưu trữ`, `arşivurl`): a parameter so named holds an archived copy, which a crawl
# of the cited page would not have captured. Matched in the lowercased name.
_ARCHIVE_WORDS = ("archiv", "arquiv", "archief", "archiw", "arkiv", "arhiv", "arşiv", "архив",
                  "архів", "أرشيف", "بایگانی", "ארכיון", "アーカイブ", "存档", "存檔", "保存",
                  "lưu trữ", "संग्रह")
# A template so named links to an archived copy (`{{webarchive}}`, `{{Wayback}}`, `{{WebCite}}`).
_ARCHIVE_TEMPLATE_WORDS = (*_ARCHIVE_WORDS, "wayback", "webcite")
# Hosts of web archives: a URL there is an archived copy whatever the parameter's name
# (`{{webarchive|url=https://web.archive.org/...}}`).
_ARCHIVE_HOST = re.compile(
    r"(?:https?:)?//(?:[^/?#]*\.)?(?:web\.archive\.org|archive\.(?:today|is|ph|li|vn|fo|md)|"
    r"webcitation\.org|wayback\.archive-it\.org|webarchive\.[^/?#]+)(?:[:/?#]|$)",
    re.IGNORECASE)


def _template_urls(template: Template) -> list[str]:
    """The cited URLs of a template inside a ``<ref>`` that is not a known citation template
    (``{{Статья|ссылка=...}}``, ``{{استشهاد ويب|مسار=...}}``, ``{{url|...}}``): every
    parameter, named or not, whose value is one http(s) URL, in order, leaving out archived
    copies (by the parameter's name or the URL's host). Unlike a citation template's, an
    archived copy is never taken as a fallback: beside a citation it is often a template of
    its own (``{{webarchive}}``, ``{{Wayback}}``), whose every URL is left out."""
    name = template_name(template.name)
    if any(word in name for word in _ARCHIVE_TEMPLATE_WORDS):
        return []
    urls: list[str] = []
    for param in template.params:
        url = _web_url(plain_value(param.value))
        if url is None:
            continue
        name = str(param.name).strip().lower()
        if not _ARCHIVE_HOST.match(url) and not any(word in name for word in _ARCHIVE_WORDS):
            urls.append(url)
    return urls


# Where a URL ends: whitespace of any kind (`str.isspace`: the ideographic space U+3000, the
# no-break spaces, U+2000-U+200A, the line and paragraph separators as well as ASCII's).
_URL_END = re.compile(r"\s")


def _web_url(url: str) -> str | None:
    """An http(s) URL (protocol-relative ones as https), ending at the first whitespace.

    MediaWiki ends a URL at whitespace of any kind (its URL class excludes ``\\p{Zs}``): in
    ``https://x.jp/a\u3000「Title」`` the ideographic space U+3000 starts the text after the link,
    and in ``url=https://x.org/ a b`` the link is ``https://x.org/``. mwparserfromhell ends a bare
    URL at ASCII whitespace only, so every URL is cut here."""
    url = url.strip()
    end = _URL_END.search(url)
    if end is not None:
        url = url[:end.start()]
    if url.startswith("//"):
        url = "https:" + url
    if url.lower().startswith(("http://", "https://")) and len(url) > len("https://"):
        return url
    return None
