"""URLs of any script: IDN hosts and raw or percent-encoded non-ASCII paths have one key
(`normalize_url`), Wikipedia's own pages are recognised in every edition and variant
(`is_self_page`), and the search-results reader and cc-fetch's index keys follow."""

import random

import pytest

from wikisum.pipeline.ccfetch.index import lookup_key
from wikisum.pipeline.ccfetch.surt import surt_key
from wikisum.pipeline.clones import is_self_page
from wikisum.pipeline.ingest.search import rank_search_urls
from wikisum.pipeline.urls import normalize_url, wikipedia_title

# Each group: spellings of one URL (raw Unicode, upper case, lower-case escapes, punycode),
# then its key.
SAME_URL = [
    # Cyrillic (Ukrainian .укр, Russian .рф)
    (["http://пример.укр/путь", "http://ПРИМЕР.УКР/путь",
      "http://пример.укр./%d0%bf%d1%83%d1%82%d1%8c",
      "http://xn--e1afmkfd.xn--j1amh/%D0%BF%D1%83%D1%82%D1%8C",
      "http://%D0%BF%D1%80%D0%B8%D0%BC%D0%B5%D1%80.%D1%83%D0%BA%D1%80/путь"],
     "http://xn--e1afmkfd.xn--j1amh/%D0%BF%D1%83%D1%82%D1%8C"),
    (["https://uk.wikipedia.org/wiki/Київ",
      "https://uk.wikipedia.org/wiki/%D0%9A%D0%B8%D1%97%D0%B2",
      "https://uk.wikipedia.org/wiki/%d0%9a%d0%b8%d1%97%d0%b2#Історія"],
     "https://uk.wikipedia.org/wiki/%D0%9A%D0%B8%D1%97%D0%B2"),
    (["https://президент.рф/новости?год=2020", "https://xn--d1abbgf6aiiy.xn--p1ai/%D0%BD%D0%BE"
      "%D0%B2%D0%BE%D1%81%D1%82%D0%B8?%D0%B3%D0%BE%D0%B4=2020"],
     "https://xn--d1abbgf6aiiy.xn--p1ai/%D0%BD%D0%BE%D0%B2%D0%BE%D1%81%D1%82%D0%B8"
     "?%D0%B3%D0%BE%D0%B4=2020"),
    # Japanese: the ideographic full stop separates labels as "." does
    (["https://日本語.jp/", "https://日本語。jp", "HTTPS://XN--WGV71A119E.JP/"],
     "https://xn--wgv71a119e.jp/"),
    (["http://例え.テスト/東京?q=首都", "http://xn--r8jz45g.xn--zckzah/%E6%9D%B1%E4%BA%AC"
      "?q=%E9%A6%96%E9%83%BD"],
     "http://xn--r8jz45g.xn--zckzah/%E6%9D%B1%E4%BA%AC?q=%E9%A6%96%E9%83%BD"),
    # Arabic (right to left in the text, in logical order in the URL)
    (["http://مثال.إختبار/مسار?ق=١", "http://xn--mgbh0fb.xn--kgbechtv/%D9%85%D8%B3%D8%A7%D8%B1"
      "?%D9%82=%D9%A1"],
     "http://xn--mgbh0fb.xn--kgbechtv/%D9%85%D8%B3%D8%A7%D8%B1?%D9%82=%D9%A1"),
    # Hindi (Devanagari, vowel signs and virama inside the labels)
    (["http://उदाहरण.भारत/पथ", "http://xn--p1b6ci4b4b3a.xn--h2brj9c/%e0%a4%aa%e0%a4%a5"],
     "http://xn--p1b6ci4b4b3a.xn--h2brj9c/%E0%A4%AA%E0%A4%A5"),
    # Chinese
    (["http://中国.cn/路径", "http://中國。cn/路径".replace("中國", "中国"),
      "http://xn--fiqs8s.cn/%E8%B7%AF%E5%BE%84"],
     "http://xn--fiqs8s.cn/%E8%B7%AF%E5%BE%84"),
    # Greek and Hebrew hosts; full-width Latin maps to ASCII
    (["http://ΠΑΡΆΔΕΙΓΜΑ.δοκιμή/", "http://xn--hxajbheg2az3al.xn--jxalpdlp/"],
     "http://xn--hxajbheg2az3al.xn--jxalpdlp/"),
    (["http://דוגמה.טעסט/", "http://xn--6dbbec0c.xn--deba0ad/"],
     "http://xn--6dbbec0c.xn--deba0ad/"),
    (["http://ｅｘａｍｐｌｅ.com/", "http://example.com"], "http://example.com/"),
]


@pytest.mark.parametrize(("spellings", "key"), SAME_URL)
def test_every_spelling_of_a_url_has_one_key(spellings, key):
    assert [normalize_url(u) for u in spellings] == [key] * len(spellings)
    assert normalize_url(key) == key  # idempotent


def test_idn_hosts_follow_idna_2008_not_2003():
    """UTS #46 non-transitional, as browsers resolve: ß and ς are letters of their own."""
    assert normalize_url("http://faß.de/") == "http://xn--fa-hia.de/"
    assert normalize_url("http://βόλος.gr/") == "http://xn--nxasmm1c.gr/"
    # a symbol IDNA 2008 refuses but browsers resolve: IDNA 2003's encoding
    assert normalize_url("http://☃.net/") == "http://xn--n3h.net/"
    # ASCII labels of a mixed host stay as they are
    assert normalize_url("http://_dmarc.пример.укр/") == "http://_dmarc.xn--e1afmkfd.xn--j1amh/"


@pytest.mark.parametrize("url", [
    "http://" + "я" * 70 + ".com/",  # a label longer than 63 bytes as punycode
    "http://a\u3000b.рф/",  # a space in a label
    "http://\ud800x.рф/",  # a lone surrogate
    "http://%FF%FE.com/",  # a percent-encoded host that is not UTF-8
    "http://ex%61mple.com/",  # a percent-encoded ASCII host stays refused
])
def test_an_invalid_host_has_no_key(url):
    assert normalize_url(url) is None


def test_invalid_escapes_are_kept_not_errors():
    # a "%" without two hex digits is itself encoded; a Latin-1 escape is other bytes than é
    assert normalize_url("http://пример.укр/%zz%E9é") == \
        "http://xn--e1afmkfd.xn--j1amh/%25zz%E9%C3%A9"
    assert normalize_url("http://x.org/%E9") != normalize_url("http://x.org/é")


def test_no_unicode_text_makes_it_raise():
    rng = random.Random(7)
    alphabet = ("пример日本語مثالउदाहरण中国%.:/?#@[]\\ \u200d\u0301\u3002\uff0e"
                "\ud800\U0001f355ß-_0aZ")
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 20)))
        for url in ("http://" + text, "https://" + text + "/p", "http://h.com/" + text):
            key = normalize_url(url)
            assert key is None or (key.isascii() and normalize_url(key) == key)


SELF_PAGES = [
    ("https://zh.wikipedia.org/zh-cn/北京市", "北京市"),
    ("https://zh.wikipedia.org/zh-tw/%E5%8C%97%E4%BA%AC%E5%B8%82", "北京市"),
    ("https://zh.wikipedia.org/zh-hans/北京市", "北京市"),
    ("https://zh.wikipedia.org/zh-hant/北京市#歷史", "北京市"),
    ("https://zh.m.wikipedia.org/zh-hk/北京市", "北京市"),
    ("https://zh.wikipedia.org/zh/北京市", "北京市"),
    ("https://zh.wikipedia.org/w/index.php?title=%E5%8C%97%E4%BA%AC%E5%B8%82&variant=zh-cn",
     "北京市"),
    ("https://sr.wikipedia.org/sr-el/Beograd", "Beograd"),
    ("https://sr.wikipedia.org/sr-ec/Београд", "Београд"),
    ("https://kk.wikipedia.org/kk-latn/Almaty", "Almaty"),
    ("https://ja.m.wikipedia.org/wiki/%E6%9D%B1%E4%BA%AC%E9%83%BD", "東京都"),
    ("https://ja.wikipedia.org/wiki/東京都?oldid=1", "東京都"),
    ("https://ar.wikipedia.org/w/index.php?title=%D9%85%D8%B5%D8%B1", "مصر"),
    ("https://ar.m.wikipedia.org/wiki/مصر", "مصر"),
    ("https://hi.wikipedia.org/wiki/%E0%A4%AD%E0%A4%BE%E0%A4%B0%E0%A4%A4", "भारत"),
    ("https://uk.wikipedia.org/wiki/%D0%9A%D0%B8%D1%97%D0%B2", "Київ"),
    ("https://ru.wikipedia.org/wiki/москва", "Москва"),  # the first letter's case
    # a title written decomposed (e + combining acute) is the composed one MediaWiki stores
    ("https://fr.wikipedia.org/wiki/Cafe\u0301", "Café"),
]


@pytest.mark.parametrize(("url", "title"), SELF_PAGES)
def test_wikipedias_own_page_is_recognised_in_every_edition_and_variant(url, title):
    assert is_self_page(url, title)
    assert not is_self_page(url, title + " (значення)")


@pytest.mark.parametrize("url", [
    "https://zh.wikipedia.org/static/images/x.png",  # not a variant path
    "https://zh.wikipedia.org/api/rest_v1/page/北京市",
    "https://zh.wikipedia.org/zh-cn/",  # a variant without a title
    "https://commons.wikimedia.org/wiki/北京市",
    "https://zh.wikipedia.org.example.com/zh-cn/北京市",
    "https://wikiwand.com/zh-cn/北京市",
])
def test_other_pages_are_not_the_self_page(url):
    assert not is_self_page(url, "北京市")


def test_wikipedia_title_gives_the_edition_of_a_variant_path():
    assert wikipedia_title("https://zh.wikipedia.org/zh-tw/北京市") == ("zh", "北京市")
    assert wikipedia_title("https://sr.m.wikipedia.org/sr-el/Beograd") == ("sr", "Beograd")


def test_search_results_rank_each_url_once_whatever_its_spelling():
    lines = [["http://пример.укр/путь", "https://日本語.jp/", "http://" + "я" * 70 + ".com/"],
             ["http://xn--e1afmkfd.xn--j1amh/%D0%BF%D1%83%D1%82%D1%8C", "http://中国.cn/路径"]]
    ranked, bad = rank_search_urls(lines)
    assert ranked == ["http://xn--e1afmkfd.xn--j1amh/%D0%BF%D1%83%D1%82%D1%8C",
                      "https://xn--wgv71a119e.jp/", "http://xn--fiqs8s.cn/%E8%B7%AF%E5%BE%84"]
    assert bad == ["http://" + "я" * 70 + ".com/"]  # counted as bad_url by the job


def test_cc_fetch_looks_a_url_up_by_its_canonical_form():
    """The key of a non-ASCII URL is that of its canonical (punycode, percent-encoded) form,
    which is what Common Crawl keyed the capture by and what the lookup queries; an ASCII URL
    keys as it always did."""
    for spellings, key in SAME_URL:
        assert {lookup_key(u) for u in spellings} == {surt_key(key)}
    assert lookup_key("http://faß.de/x") == surt_key("http://xn--fa-hia.de/x") == \
        "de,xn--fa-hia)/x"
    assert lookup_key("http://" + "я" * 70 + ".com/") is None
    for url in ("http://www.Example.com/a/?b=2&a=1", "http://ex%61mple.com/", "http:////x.com"):
        assert lookup_key(url) == surt_key(url)
