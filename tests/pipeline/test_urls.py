import pytest

from wikisum.pipeline.urls import normalize_title, normalize_url, wikipedia_title

NORMALIZED = [
    # scheme and host lowercased, default port, dot segments and fragment dropped, escapes of
    # unreserved characters decoded, other escapes uppercased
    (
        "HTTP://WWW.Example.COM:80/a/../b/./c?q=%7e&x=%2f#frag",
        "http://www.example.com/b/c?q=~&x=%2F",
    ),
    # whitespace and angle brackets (as wget writes WARC-Target-URI), IDNA host, UTF-8 path
    (" <https://café.fr/café> ", "https://xn--caf-dma.fr/caf%C3%A9"),
    ("https://x.org/caf%c3%a9", "https://x.org/caf%C3%A9"),
    ("https://x.org/caf%C3%A9", "https://x.org/caf%C3%A9"),
    ("https://x.org/café", "https://x.org/caf%C3%A9"),
    ("http://a.b:8080", "http://a.b:8080/"),
    ("https://example.com:443/", "https://example.com/"),
    ("https://example.com:80/", "https://example.com:80/"),
    ("http://user:pw@Example.com./x", "http://example.com/x"),
    ('http://a.com/a b"c', "http://a.com/a%20b%22c"),
    ("http://a.com/100%", "http://a.com/100%25"),
    ("http://a.com/%41%2D%5F%7E", "http://a.com/A-_~"),
    ("http://a.com/?b=2&a=1", "http://a.com/?b=2&a=1"),
    ("http://a.com/p?q=caf%c3%a9 x", "http://a.com/p?q=caf%C3%A9%20x"),
    ("http://a.com/x/..", "http://a.com/"),
    ("http://a.com//double//slash", "http://a.com//double//slash"),
    ("http://[2001:DB8::1]:8080/x", "http://[2001:db8::1]:8080/x"),
]

NOT_WEB_URLS = [
    "",
    "ftp://x.org/file",
    "mailto:a@b.c",
    "javascript:alert(1)",
    "http://",
    "https:///path-only",
    "not a url",
    "//example.com/no-scheme",
    "http://x.com:99999/",
    "http://exa mple.com/",
]


@pytest.mark.parametrize(("url", "expected"), NORMALIZED)
def test_normalize_url(url, expected):
    assert normalize_url(url) == expected


@pytest.mark.parametrize("url", NOT_WEB_URLS)
def test_normalize_url_rejects_non_web_urls(url):
    assert normalize_url(url) is None


def test_http_and_https_stay_distinct():
    assert normalize_url("http://example.com/a") != normalize_url("https://example.com/a")


@pytest.mark.parametrize(
    "url",
    [url for url, _ in NORMALIZED]
    + ["http://a.com/%zz%4", "http://a.com/%2e%2E/x", "http://a.com/ü?ä=ö#x", "http://A.com/%25"],
)
def test_normalize_url_is_idempotent(url):
    once = normalize_url(url)
    assert once is not None
    assert normalize_url(once) == once


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://en.wikipedia.org/wiki/Bodmin", ("en", "Bodmin")),
        ("http://en.m.wikipedia.org/wiki/Caf%C3%A9_de_Flore#History", ("en", "Café de Flore")),
        ("https://de.wikipedia.org/w/index.php?title=k%C3%B6ln&oldid=1", ("de", "Köln")),
        ("https://en.wikipedia.org/wiki/iPod", ("en", "IPod")),
        ("https://EN.Wikipedia.org/wiki/AC/DC", ("en", "AC/DC")),
        ("https://zh-classical.wikipedia.org/wiki/x", ("zh-classical", "X")),
    ],
)
def test_wikipedia_title(url, expected):
    assert wikipedia_title(url) == expected


@pytest.mark.parametrize(
    "url",
    [
        "https://www.wikipedia.org/wiki/Bodmin",
        "https://en.wikipedia.org/wiki/",
        "https://en.wikipedia.org/",
        "https://en.wiktionary.org/wiki/cat",
        "https://commons.wikimedia.org/wiki/File:X.jpg",
        "https://example.com/wiki/Bodmin",
        "https://en.wikipedia.org.evil.com/wiki/Bodmin",
        "https://en.wikipedia.org/w/index.php?search=Bodmin",
        "ftp://en.wikipedia.org/wiki/Bodmin",
    ],
)
def test_wikipedia_title_rejects_other_urls(url):
    assert wikipedia_title(url) is None


def test_normalize_title():
    assert normalize_title("  foo_bar   baz ") == "Foo bar baz"
    assert normalize_title("ßeta") == "ßeta"
    assert normalize_title("élan") == "Élan"
    assert normalize_title("") == ""


def _escapes_one_character_at_a_time(component: str) -> str:
    """The escape normalisation spelled out character by character (RFC 3986 sections 2.1,
    2.3 and 6.2.2.2): the reference the regular-expression version is checked against."""
    from wikisum.pipeline.urls import _KEEP, _UNRESERVED

    hexdigits = set("0123456789abcdefABCDEF")
    out, i = [], 0
    while i < len(component):
        ch = component[i]
        escape = component[i + 1:i + 3]
        if ch == "%" and len(escape) == 2 and set(escape) <= hexdigits:
            byte = int(escape, 16)
            out.append(chr(byte) if byte in _UNRESERVED else "%" + escape.upper())
            i += 3
            continue
        if ch == "%":
            out.append("%25")
        elif ch in _KEEP:
            out.append(ch)
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass")))
        i += 1
    return "".join(out)


def test_escape_normalisation_equals_the_character_by_character_rule():
    import random

    from wikisum.pipeline.urls import _normalize_escapes

    rng = random.Random(0)
    alphabet = "aZ09-._~:/?[]@!$&'()*+,;=% <>\"{}|\\^`é日\ud800\n" + "%4a%2F%zz"
    for _ in range(20000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        assert _normalize_escapes(text) == _escapes_one_character_at_a_time(text), repr(text)
    assert _normalize_escapes("/a%7e%2fb%") == "/a~%2Fb%25"
    assert _normalize_escapes("/caf\u00e9 x") == "/caf%C3%A9%20x"


def test_only_urls_naming_wikipedia_are_parsed_as_wikipedia_titles():
    assert wikipedia_title("https://EN.WIKIPEDIA.org/wiki/Bodmin") == ("en", "Bodmin")
    assert wikipedia_title("https://example.org/wiki/Bodmin") is None
    # urlsplit drops tabs and line breaks anywhere: such a URL still names the page
    assert wikipedia_title("https://en.wiki\tpedia.org/wiki/Foo") == ("en", "Foo")
    assert wikipedia_title("https://en.wikipe\ndia.org/wiki/Foo") == ("en", "Foo")
