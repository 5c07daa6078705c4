"""A capture -> a reference: cleaning and its drop reasons, choosing among captures of one URL,
attaching references to an article without self pages and clones."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from builders import reference

from wikisum.core.records import Article, Link, Reference
from wikisum.pipeline.ingest.config import AttachConfig, CleanConfig, DedupConfig
from wikisum.pipeline.references import attach, clean_capture, clean_captures, pick_capture
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


def test_language_is_identified_only_where_a_reference_language_is_wanted(monkeypatch):
    from wikisum.pipeline import references

    assert clean_capture(_cap(PROSE.encode())).reference.language == "en"
    monkeypatch.setattr(references, "identify_many", lambda texts: pytest.fail("identified"))
    ref = clean_capture(_cap(PROSE.encode()), CleanConfig(identify_language=False)).reference
    assert (ref.language, ref.language_confidence) == ("und", 0.0)
    wants = [AttachConfig(article_lang=a, lang=r).wants_language
             for a, r in [("en", None), ("en", "any"), ("en", ""), (None, None), (None, "de"),
                          ("en", " ANY ")]]
    assert wants == [True, False, False, False, True, False]


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
    kept, dropped, paragraphs = attach(art, found)
    assert [(a.url, a.source, a.sources) for a in kept] == [
        ("http://c.example/", "citation", ("citation", "search")),
        ("http://d.example/", "citation", ("citation",)),
        ("http://s.example/", "search", ("search",))]
    assert [(u, r) for u, r, _ in dropped] == [
        ("http://mirror.example/k", "clone"),
        ("https://en.m.wikipedia.org/wiki/Kestrel_Works", "self")]


def _article(lead="The Kestrel Works is a water mill on the Oder river built in 1801."):
    return Article(1, "Kestrel Works", "https://en.wikipedia.org/wiki/Kestrel_Works", lead, (),
                   (), "dump")


def _ref(url, *paragraphs, language="und", confidence=0.0):
    return Reference(url, "f", 0, f"<{url}>", "2020-01-01T00:00:00Z", "warc", paragraphs,
                     language, confidence)


def test_clean_capture_records_the_language():
    cleaned = clean_capture(_cap(PROSE.encode()))
    assert cleaned.reference.language == "en"
    assert cleaned.reference.language_confidence > 0.9
    german = PROSE.replace(
        "The Kestrel Works mill has ground corn on the river since 1801, and it still runs on "
        "water power today.", "Die Mühle mahlt seit 1801 Korn am Fluss, und sie läuft noch "
        "heute mit Wasserkraft, wie die Besucher jeden Samstag sehen können.").replace(
        "Visitors can watch the millers at work every Saturday morning in summer.",
        "Im Sommer kann man den Müllern jeden Samstagmorgen bei der Arbeit zusehen.")
    assert clean_capture(_cap(german.encode())).reference.language == "de"


def test_attach_drops_references_in_another_language():
    found = [(Link(1, "citation", 0), _ref("http://en.example/", "The mill was built.",
                                            language="en", confidence=0.99)),
             (Link(1, "citation", 1), _ref("http://de.example/", "Die Mühle wurde gebaut.",
                                            language="de", confidence=0.99)),
             (Link(1, "citation", 2), _ref("http://unsure.example/", "Mill.",
                                            language="nl", confidence=0.6)),
             (Link(1, "citation", 3), _ref("http://short.example/", "1801"))]
    kept, dropped, _ = attach(_article(), found, AttachConfig(article_lang="en"))
    assert [a.url for a in kept] == ["http://en.example/", "http://unsure.example/",
                                     "http://short.example/"]
    assert dropped == [("http://de.example/", "wrong_language", "de 0.99")]
    for lang in ("", "any"):
        kept, dropped, _ = attach(_article(), found, AttachConfig(lang=lang))
        assert len(kept) == 4 and not dropped


def test_clone_measure_content_ignores_function_words():
    lead = "The mill is on the river and it was built in 1801 by the Kestrel family of Oder."
    page = ("It is said that the best of all of them was in the town, and it was there by the "
            "time they came on the first day of the year. " * 3)
    found = [(Link(1, "citation", 0), _ref("http://page.example/", page))]
    unigram = attach(_article(lead), found,
                     AttachConfig(clone_measure="unigram", article_lang="en"))
    content = attach(_article(lead), found,
                     AttachConfig(clone_measure="content", article_lang="en"))
    assert [r for _, r, _ in unigram.dropped] == ["clone"]
    assert [a.url for a in content.kept] == ["http://page.example/"]
    mirror = [(Link(1, "citation", 0), _ref("http://mirror.example/", lead, "More text."))]
    assert [r for _, r, _ in attach(_article(lead), mirror).dropped] == ["clone"]


SYNDICATED = ("The regional council approved the new bridge over the river on Monday after "
              "three years of planning and a public consultation.")


def test_attach_drops_paragraphs_repeated_across_references():
    found = [
        (Link(1, "search", 1), _ref("http://b.example/", "Bridge opens.",
                                    SYNDICATED.replace("Monday", "Tuesday"))),
        (Link(1, "citation", 0), _ref("http://a.example/", SYNDICATED, "It cost four million.")),
        (Link(1, "search", 2), _ref("http://c.example/", SYNDICATED.upper())),
    ]
    kept, dropped, paragraphs = attach(_article(), found)
    # The citation comes first, so its copy is kept; the search result loses its near copy and
    # the all-repeat reference is dropped whole.
    assert [(a.url, a.reference.paragraphs) for a in kept] == [
        ("http://a.example/", (SYNDICATED, "It cost four million.")),
        ("http://b.example/", ("Bridge opens.",))]
    assert [(u, r) for u, r, _ in dropped] == [("http://c.example/", "duplicate_reference")]
    assert paragraphs == {"kept": 3, "near_duplicate": 1, "duplicate": 1}
    kept, dropped, paragraphs = attach(_article(), found, AttachConfig(dedup=None))
    assert sum(len(a.reference.paragraphs) for a in kept) == 5 and not dropped
    assert paragraphs == {"kept": 5}
    exact = attach(_article(), found, AttachConfig(dedup=replace(DedupConfig(), near=False)))
    assert exact.paragraphs == {"kept": 4, "duplicate": 1}


def test_cleaning_a_batch_gives_each_capture_what_cleaning_it_alone_gives():
    german = ("<html><body><article><p>Die Kestrel-Mühle mahlt seit 1801 Korn am Fluss, und sie "
              "läuft noch heute mit Wasserkraft.</p></article></body></html>")
    caps = [_cap(PROSE.encode()), _cap(PROSE.encode(), status=404),
            _cap(b"%PDF-1.4 ...", ctype="application/pdf"), _cap(german.encode()),
            _cap(b"\x00\x01\x02\x03" * 100, ctype="text/html"),
            _cap(b"Menu | Home\nThe Kestrel Works mill has ground corn on the river since 1801, "
                 b"and it still runs.\n", rtype="conversion", ctype="text/plain"),
            _cap(b"<html><body></body></html>"), _cap(PROSE.encode(), truncated=True)]
    for config in (CleanConfig(), CleanConfig(identify_language=False)):
        assert clean_captures(caps, config) == [clean_capture(c, config) for c in caps]
    assert clean_captures([]) == []


def test_a_batch_drops_the_pages_whose_extraction_fails_or_times_out_and_keeps_the_rest(
        monkeypatch):
    from wikisum.pipeline import webtext

    def extract(html, url=None, **kwargs):  # trafilatura, stood in for: no first-call delay
        if url.startswith("http://slow."):
            time.sleep(2.0)
        if url.startswith("http://broken."):
            raise ValueError("no tree")
        return ("The Kestrel Works mill has ground corn on the river since 1801, and it still "
                "runs on water power today.")

    monkeypatch.setattr(webtext.trafilatura, "extract", extract)
    caps = [_cap(PROSE.encode(), url=f"http://{c}.example/x")
            for c in ("a", "slow", "broken", "b")]
    config = CleanConfig(timeout_s=0.5)
    cleaned = clean_captures(caps, config)
    assert [(c.reason, c.reference and c.reference.url) for c in cleaned] == [
        ("", "http://a.example/x"), ("extraction_timeout", None),
        ("extraction_error", None), ("", "http://b.example/x")]
    assert "ValueError: no tree" in cleaned[2].error
    assert [clean_capture(c, config) for c in caps] == cleaned


@pytest.mark.parametrize("timeout_s", [0, -1.0, float("inf")])
def test_a_clean_config_refuses_a_time_limit_that_is_not_one(timeout_s):
    with pytest.raises(ValueError, match="timeout_s"):
        CleanConfig(timeout_s=timeout_s)


def test_a_capture_that_raises_in_a_batch_gets_its_exception_in_its_place(monkeypatch):
    from wikisum.pipeline import references

    real = references.extract_main_texts

    def crashes_on_b(pages, **kwargs):
        return [RecursionError("too deep") if url == "http://b.example/x"
                else real([(html, url)], **kwargs)[0] for html, url in pages]

    monkeypatch.setattr(references, "extract_main_texts", crashes_on_b)
    caps = [_cap(PROSE.encode(), url=f"http://{c}.example/x") for c in "abc"]
    a, b, c = clean_captures(caps)
    assert isinstance(b, RecursionError)
    assert a.reference.url == "http://a.example/x" and c.reference.url == "http://c.example/x"


def test_a_language_identifier_that_fails_on_a_batch_costs_only_the_page_it_fails_on(
        monkeypatch):
    from wikisum.pipeline import references

    real = references.identify_many

    def fails_on_b(texts, **kwargs):
        if any("Bravo" in t for t in texts):
            raise MemoryError("the language model")
        return real(texts, **kwargs)

    monkeypatch.setattr(references, "identify_many", fails_on_b)
    caps = [_cap(PROSE.replace("Kestrel", name).encode(), url=f"http://{name}.example/x")
            for name in ("Alpha", "Bravo", "Charlie")]
    a, b, c = clean_captures(caps)
    assert isinstance(b, MemoryError)
    assert (a.reference.language, c.reference.language) == ("en", "en")


def test_capture_batches_close_at_their_page_count_and_before_their_bytes(monkeypatch):
    from wikisum.pipeline import references

    monkeypatch.setattr(references, "CLEAN_BATCH_PAGES", 3)
    monkeypatch.setattr(references, "CLEAN_BATCH_BYTES", 100)
    batches = references.CaptureBatches()
    caps = [_cap(b"x" * n, url=f"http://{i}.example/") for i, n in
            enumerate([10, 10, 10, 60, 50, 500, 10])]
    done = [batch for cap in caps for batch in batches.add(cap)] + [batches.rest()]
    assert [[len(c.body) for c in batch] for batch in done] == [
        [10, 10, 10],  # three pages
        [60],          # 60 + 50 would pass 100 bytes
        [50],          # and so would 50 + 500
        [500],         # a larger page alone
        [10]]          # the rest
    assert batches.rest() == []
