"""A URL's key (`normalize_url`) is a fixed point whatever characters its host holds: a
character that IDNA maps to a full stop, and brackets outside an IPv6 literal, make the URL
invalid rather than give a key that changes when normalised again."""

import random

import pytest

from wikisum.pipeline.urls import normalize_url


@pytest.mark.parametrize("url", [
    "http://⒈/",  # IDNA 2003 maps it to "1.": two labels, not one
    "http://_z⒈.рф/",
    "http://пример⒉укр/",
    "http://a[.com/",  # a bracket belongs to an IPv6 literal only
    "http://İ[/",  # refused by IDNA 2008, accepted by IDNA 2003 with the bracket
    "http://x@a[::1]/",
])
def test_a_host_that_would_not_stay_the_same_is_invalid(url):
    assert normalize_url(url) is None


def test_ipv6_literals_and_empty_labels_keep_their_keys():
    assert normalize_url("http://[::1]:8080/ж") == "http://[::1]:8080/%D0%B6"
    assert normalize_url("http://пример..укр/") == "http://xn--e1afmkfd..xn--j1amh/"
    assert normalize_url("http://a..b.com/") == "http://a..b.com/"


def test_every_key_is_ascii_and_a_fixed_point():
    rng = random.Random(11)
    alphabet = list("пример日本語مثالउदाहरण中国%.:/?#@[]\\ \u200d\u200f\u0301\u3002\uff0e"
                    "\ud800\U0001f355ß-_0aZ⒈ℌ\u00ad\u034f\ufeffİı") + [
        "xn--", "%E0%A4", "%ff", "%2e", "[::1]", ":99999"]
    for _ in range(4000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        for url in ("http://" + text, "https://" + text + "/p"):
            key = normalize_url(url)
            assert key is None or (key.isascii() and normalize_url(key) == key), (url, key)
