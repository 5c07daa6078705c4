"""A dump page -> an article: lead, sections, normalised citations, and the pages that are not
articles."""

from __future__ import annotations

import pytest

from wikisum.core.records import Article
from wikisum.pipeline.articles import page_to_article
from wikisum.pipeline.dumps import RawPage

PAGE = ("'''Kestrel Works''' is a [[mill]] in [[Ostrania]].<ref>{{cite web "
        "|url=HTTP://Example.COM:80/a#x |title=A}}</ref> It grinds corn.<ref>http://b.example/p"
        "</ref>\n\n== History ==\nBuilt in 1801.<ref>{{cite web |url=http://example.com/a}}</ref>")


def test_page_to_article_keeps_lead_and_normalised_citations():
    article = page_to_article(RawPage(7, "Kestrel Works", 0, None, PAGE, 0), "dump.xml")
    assert isinstance(article, Article)
    assert article.lead == "Kestrel Works is a mill in Ostrania. It grinds corn."
    assert article.citation_urls == ("http://example.com/a", "http://b.example/p")
    assert [s.title for s in article.sections] == ["History"]
    assert article.url == "https://en.wikipedia.org/wiki/Kestrel_Works"


@pytest.mark.parametrize("page,reason", [
    (RawPage(1, "Talk:X", 1, None, "text", 0), "non_article_namespace"),
    (RawPage(1, "X", 0, "Y", "#REDIRECT [[Y]]", 0), "redirect"),
    (RawPage(1, "X", 0, None, "#redirect [[Y]]", 0), "redirect"),
    (RawPage(1, "X", 0, None, "'''X''' may be:\n* [[X (a)]]\n{{disambiguation}}", 0),
     "disambiguation"),
    (RawPage(1, "X", 0, None, "{{Infobox x}}\n== History ==\nText.", 0), "empty_lead"),
])
def test_pages_that_are_not_articles_have_a_reason(page, reason):
    assert page_to_article(page, "dump.xml") == reason


@pytest.mark.parametrize("page,reason", [
    (RawPage(-1, "X", 0, None, "'''X''' is.", 0, problem="bad_id", detail="<id> missing"),
     "bad_id"),
    (RawPage(1, "X", -1, None, "'''X''' is.", 0, problem="bad_ns", detail="<ns> 'one'"),
     "bad_ns"),
    (RawPage(2**63, "X", 0, None, "'''X''' is.", 0), "bad_id"),  # not an int64
    (RawPage(-5, "X", 0, None, "'''X''' is.", 0), "bad_id"),
])
def test_a_page_without_a_usable_id_or_namespace_is_never_an_article(page, reason):
    assert page_to_article(page, "dump.xml") == reason


def test_an_entity_naming_a_surrogate_becomes_a_replacement_character():
    # A lone surrogate is no text: it would stop the shard writer (UTF-8) after all the work.
    text = "'''X''' is &#xD800;&#56320; here.\n== S &#xDFFF; ==\nBody &#55296;."
    article = page_to_article(RawPage(1, "X", 0, None, text, 0), "dump.xml")
    assert article.lead == "X is \ufffd\ufffd here."
    assert [(s.title, s.text) for s in article.sections] == [("S \ufffd", "Body \ufffd.")]
