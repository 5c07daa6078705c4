"""The truncated real Japanese, Ukrainian and Vietnamese dumps read as articles: the dump's
language from its <siteinfo>, leads, citation URLs that are URLs, redirects in the local magic
word, no category or file link in a lead."""

from __future__ import annotations

import lzma
import re
from collections import Counter
from urllib.parse import urlsplit

import pytest

from wikisum.core.records import Article
from wikisum.pipeline import dumps, wikitext
from wikisum.pipeline.articles import page_to_article

pytestmark = pytest.mark.shared_data

# dump, language, least articles, least citation URLs (the dumps hold 183, 345 and 264
# articles citing 2,961, 2,047 and 7,662 URLs)
DUMPS = [("jawiki", "ja", 150, 2500), ("ukwiki", "uk", 300, 1800), ("viwiki", "vi", 200, 6000)]


@pytest.fixture(scope="module", params=DUMPS, ids=[d[1] for d in DUMPS])
def dump(request, shared_data):
    wiki, lang, least_articles, least_urls = request.param
    path = shared_data / "wikipedia" / "multilingual" / f"{wiki}-truncated-100k.xml.xz"
    with lzma.open(path) as f:
        head = dumps.read_siteinfo(f)
    sites: list[dumps.SiteInfo] = []
    results = []
    with pytest.raises(dumps.DumpError):  # each dump is cut mid-page
        for page in dumps.iter_pages(lzma.open(path), on_siteinfo=sites.append):
            results.append((page, page_to_article(page, path.name, lang, sites[0])))
    return {"lang": lang, "head": head, "site": sites[0], "results": results,
            "least_articles": least_articles, "least_urls": least_urls}


def _articles(dump) -> list[Article]:
    return [r for _, r in dump["results"] if isinstance(r, Article)]


def test_the_dumps_language_is_read_from_its_head(dump):
    assert dump["head"].language == dump["lang"]
    assert dump["head"] == dump["site"]
    assert dump["site"].names(14) and dump["site"].names(6)


def test_articles_are_parsed_with_leads(dump):
    articles = _articles(dump)
    assert len(articles) >= dump["least_articles"]
    assert all(a.lead.strip() for a in articles)
    assert all(a.url.startswith(f"https://{dump['lang']}.wikipedia.org/wiki/") for a in articles)


def test_citation_urls_are_plausible(dump):
    urls = [u for a in _articles(dump) for u in a.citation_urls]
    assert len(urls) >= dump["least_urls"]
    for url in urls:
        assert not any(ch.isspace() for ch in url), url
        parts = urlsplit(url)
        assert parts.scheme in ("http", "https") and "." in parts.netloc, url


def test_redirects_are_never_articles_and_their_local_word_is_known(dump):
    redirects = [(page, result) for page, result in dump["results"]
                 if page.ns == 0 and page.redirect is not None]
    assert redirects
    assert all(result == "redirect" for _, result in redirects)
    # the wikitext alone says so too, whatever the language's magic word (#転送, #đổi, ...)
    assert all(wikitext.parse_article(page.title, page.text, dump["lang"]).is_redirect
               for page, _ in redirects)
    local = Counter(page.text.split("[[")[0].strip().lower() for page, _ in redirects)
    assert set(local) - {"#redirect"}, local


def test_no_category_or_file_link_shows_in_a_lead(dump):
    site = dump["site"]
    categories = [*site.names(14), "Category"]
    files = [*site.names(6), "File", "Image"]
    for article in _articles(dump):
        for name in categories:
            assert f"{name}:" not in article.lead, (article.title, name)
        for name in files:
            # a file link shows no text; `[[:Tập tin:X.png|Tập tin:X.png]]`, a visible link to
            # the file's page, shows its label as MediaWiki does
            for match in re.finditer(re.escape(f"{name}:") + r"[^\s|\]]+", article.lead):
                page = next(p for p, r in dump["results"] if r is article)
                assert f"[[:{match.group()}" in page.text or f"|{match.group()}" in page.text, (
                    article.title, match.group())
