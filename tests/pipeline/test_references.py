"""A capture -> a reference: cleaning and its drop reasons, choosing among captures of one URL,
attaching references to an article without self pages and clones."""

from __future__ import annotations

import pytest
from builders import reference

from wikisum.pipeline.records import Article, Link
from wikisum.pipeline.references import CleanConfig, attach, clean_capture, pick_capture
from wikisum.pipeline.warcs import Capture


def _cap(body: bytes, *, status=200, ctype="text/html; charset=utf-8", url="http://a.example/x",
         rtype="response", truncated=False, too_large=False) -> Capture:
    return Capture(url, "f.warc.gz", 0, "<id>", rtype, "2020-01-01T00:00:00Z", status, ctype,
                   body, truncated, too_large)


PROSE = ("<html><body><nav><a>Home</a> <a>News</a></nav><main><article><h1>On mills</h1>"
         "<p>The Kestrel Works mill has ground corn on the river since 1801, and it still runs "
         "on water power today.</p><p>Visitors can watch the millers at work every Saturday "
         "morning in summer.</p></article></main><footer>Copyright 2021</footer></body></html>")


def test_clean_capture_keeps_prose_paragraphs_only():
    cleaned = clean_capture(_cap(PROSE.encode()))
    assert cleaned.reference.paragraphs == (
        "On mills",  # the heading: kept; the menu and the copyright line are not
        "The Kestrel Works mill has ground corn on the river since 1801, and it still runs on "
        "water power today.",
        "Visitors can watch the millers at work every Saturday morning in summer.")
    assert cleaned.reference.url == "http://a.example/x"
    assert cleaned.paragraphs["kept"] == 3 and sum(cleaned.paragraphs.values()) >= 3


@pytest.mark.parametrize("cap,reason", [
    (_cap(PROSE.encode(), status=404), "http_status"),
    (_cap(PROSE.encode(), status=301), "http_status"),
    (_cap(b"%PDF-1.4 ...", ctype="application/pdf"), "non_html"),
    (_cap(b"\x89PNG\r\n", ctype="image/png"), "non_html"),
    (_cap(PROSE.encode(), truncated=True), "truncated"),
    (_cap(b"", too_large=True), "too_large"),
    (_cap(b"<html><body></body></html>"), "empty_text"),
    (_cap(b"<html><body><p>Home | News</p></body></html>"), "empty_text"),
    (_cap(PROSE.encode(), url="mailto:someone@example.com"), "bad_url"),
    (_cap(b"\x00\x01\x02\x03" * 100, ctype="text/html"), "decode_error"),
])
def test_clean_capture_drop_reasons(cap, reason):
    cleaned = clean_capture(cap)
    assert cleaned.reference is None and cleaned.reason == reason


def test_clean_capture_uses_wet_text_as_is():
    text = ("Menu | Home\nThe Kestrel Works mill has ground corn on the river since 1801, and "
            "it still runs.\n")
    cleaned = clean_capture(_cap(text.encode(), rtype="conversion", ctype="text/plain"))
    assert cleaned.reference.paragraphs == (text.splitlines()[1],)
    assert cleaned.reference.container == "wet"


def test_clean_capture_respects_page_size_limit():
    cleaned = clean_capture(_cap(PROSE.encode()), CleanConfig(max_page_bytes=100))
    assert cleaned.reason == "too_large"


def test_pick_capture_prefers_latest_then_warc_then_position():
    old = reference("u", "2019-01-01T00:00:00Z")
    new_wet = reference("u", "2020-01-01T00:00:00Z", container="wet")
    new_warc = reference("u", "2020-01-01T00:00:00Z", source_file="z")
    for order in ([old, new_wet, new_warc], [new_warc, old, new_wet]):
        keep, rest = pick_capture(order)
        assert keep == new_warc and sorted(rest, key=str) == sorted([old, new_wet], key=str)


def test_attach_drops_self_and_clones_and_orders_citations_first():
    lead = "The Kestrel Works is a water mill on the Oder river built in 1801."
    art = Article(1, "Kestrel Works", "https://en.wikipedia.org/wiki/Kestrel_Works", lead, (),
                  ("http://c.example/", "http://d.example/"), "dump")
    found = [
        (Link(1, "search", 0), reference("https://en.m.wikipedia.org/wiki/Kestrel_Works", "d",
                                         text="anything")),
        (Link(1, "search", 1), reference("http://mirror.example/k", "d", text=lead)),
        (Link(1, "search", 2), reference("http://s.example/", "d",
                                         text="Unrelated words here.")),
        (Link(1, "citation", 1), reference("http://d.example/", "d", text="A mill of note.")),
        (Link(1, "citation", 0), reference("http://c.example/", "d", text="Corn is ground.")),
        (Link(1, "search", 3), reference("http://c.example/", "d", text="Corn is ground.")),
    ]
    kept, dropped = attach(art, found, clone_threshold=0.5)
    assert [(a.url, a.source, a.sources) for a in kept] == [
        ("http://c.example/", "citation", ("citation", "search")),
        ("http://d.example/", "citation", ("citation",)),
        ("http://s.example/", "search", ("search",))]
    assert [(u, r) for u, r, _ in dropped] == [
        ("http://mirror.example/k", "clone"),
        ("https://en.m.wikipedia.org/wiki/Kestrel_Works", "self")]
