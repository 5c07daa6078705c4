"""Dump page -> ``Article``, or the reason it is not one."""

from __future__ import annotations

from wikisum.core.records import Article
from wikisum.pipeline.dumps import BAD_ID, MAX_PAGE_ID, RawPage, SiteInfo
from wikisum.pipeline.urls import normalize_url
from wikisum.pipeline.wikitext import parse_article


def page_to_article(page: RawPage, source_file: str, lang: str = "en",
                    site: SiteInfo | None = None) -> Article | str:
    """The article of a dump page, or why it is dropped.

    A redirect is known by the dump's ``<redirect>`` element (in every language) or by its
    wikitext (:func:`wikisum.pipeline.wikitext.parse_article`); ``site``, the dump's
    ``<siteinfo>``, gives the local names of the namespaces whose links are not text.

    Returns one of the drop reasons ``bad_id`` or ``bad_ns`` (the reader found the value
    garbled, missing or out of range: such a page fails closed), ``non_article_namespace``,
    ``redirect``, ``too_large`` (its text was over the reader's limit), ``disambiguation``,
    ``empty_lead`` instead of an article. Pages without references are only known after the
    join with the search results, so that check is the join's.
    """
    if page.problem:
        return page.problem
    if not 0 <= page.page_id <= MAX_PAGE_ID:  # the id column is int64
        return BAD_ID
    if page.ns != 0:
        return "non_article_namespace"
    if page.redirect is not None:
        return "redirect"
    if page.too_large:
        return "too_large"
    parsed = parse_article(page.title, page.text, lang=lang, site=site)
    if parsed.is_redirect:
        return "redirect"
    if parsed.is_disambiguation:
        return "disambiguation"
    if not parsed.lead.strip():
        return "empty_lead"
    citations = []
    for url in parsed.citation_urls:
        key = normalize_url(url)
        if key and key not in citations:
            citations.append(key)
    return Article(id=page.page_id, title=parsed.title, url=parsed.url, lead=parsed.lead,
                   sections=parsed.sections, citation_urls=tuple(citations),
                   source_file=source_file)
