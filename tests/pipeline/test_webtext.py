import gzip
import random
import threading
import time
import weakref
from collections import Counter
from concurrent.futures import ThreadPoolExecutor

import pytest

from wikisum.core import paragraphs as webtext_paragraphs
from wikisum.core.paragraphs import paragraph_drop_reason, split_paragraphs
from wikisum.pipeline import webtext
from wikisum.pipeline.webtext import (
    DecodeError,
    ExtractionError,
    ExtractionTimeout,
    decode_body,
    extract_main_text,
    extract_main_texts,
)

# --- decode_body --------------------------------------------------------------------------------


def test_windows_1252_declared_only_in_meta():
    body = (
        b'<html><head><meta http-equiv="Content-Type" content="text/html; charset=windows-1252">'
        b"</head><body><p>Caf\xe9 \x93quoted\x94 costs \x805</p></body></html>"
    )
    text, encoding = decode_body(body, "text/html")
    assert encoding == "cp1252"
    assert "<p>Café “quoted” costs €5</p>" in text


def test_header_charset_overrides_meta():
    # These UTF-8 bytes also decode strictly as windows-1252 (to "cafÃ©"), so only the header
    # decides between the two.
    body = '<meta charset="windows-1252"><p>café</p>'.encode()
    assert decode_body(body, "text/html; charset=UTF-8") == (
        '<meta charset="windows-1252"><p>café</p>',
        "utf-8",
    )
    assert decode_body(body, "text/html")[0].endswith("<p>cafÃ©</p>")


def test_bogus_header_charset_falls_through_to_meta():
    body = b"<meta charset='windows-1252'><p>na\xefve</p>"
    assert decode_body(body, "text/html; charset=x-no-such-charset") == (
        "<meta charset='windows-1252'><p>naïve</p>",
        "cp1252",
    )


def test_declared_charset_that_fails_strictly_falls_through():
    # The header claims UTF-8 but \xe9 alone is not UTF-8; the meta is right.
    body = b'<meta charset="windows-1252"><p>caf\xe9</p>'
    assert decode_body(body, "text/html; charset=utf-8")[1] == "cp1252"


@pytest.mark.parametrize("label", ["iso-8859-1", "ISO_8859-1", "latin1", "us-ascii"])
def test_latin1_and_ascii_labels_decode_as_windows_1252(label):
    assert decode_body(b"\x93Hi\x94", f"text/html; charset={label}") == ("“Hi”", "cp1252")


def test_bom_wins_over_declarations_and_is_stripped():
    body = b"\xef\xbb\xbf<p>caf\xc3\xa9</p>"
    assert decode_body(body, "text/html; charset=windows-1252") == ("<p>café</p>", "utf-8")
    utf16 = "\ufeff<p>hé</p>".encode("utf-16-le")
    assert decode_body(utf16, None) == ("<p>hé</p>", "utf-16-le")


def test_utf16_in_meta_means_utf8():
    body = '<meta charset="utf-16"><p>café</p>'.encode()
    assert decode_body(body, None) == ('<meta charset="utf-16"><p>café</p>', "utf-8")


def test_undeclared_utf8_is_detected():
    text = "<p>Grüße aus Köln, einer schönen Stadt am Rhein, wo man gern spazieren geht.</p>"
    assert decode_body(text.encode(), None)[0] == text


def test_empty_body_is_empty_text():
    assert decode_body(b"", None)[0] == ""


@pytest.mark.parametrize(
    "body",
    [
        b"\x89PNG\r\n\x1a\n" + bytes(200),
        b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj",
        gzip.compress(b"<html><body>compressed twice</body></html>" * 20),
        random.Random(0).randbytes(5000),
        b"\x00\x01\x02\x03\x04\x05\x06\x07" * 200,
    ],
    ids=["png", "pdf", "gzip", "random", "control-bytes"],
)
def test_binary_bodies_raise(body):
    with pytest.raises(DecodeError):
        decode_body(body, "text/html; charset=utf-8")


# --- extract_main_text --------------------------------------------------------------------------

PARAGRAPHS = [
    "The river rises on the moor and flows south through the old market town, where it once "
    "powered three mills that ground corn for the surrounding parishes.",
    "In 1850 the town council built a stone bridge at the ford, replacing a wooden crossing "
    "that had been swept away by floods several times during the previous century.",
    "Today the valley is a nature reserve, and the former mill buildings house a museum of "
    "local history that is open to visitors throughout the summer months.",
]

PAGE = f"""<!DOCTYPE html>
<html><head><title>The river</title></head>
<body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/news">News</a></li>
<li><a href="/about">About us</a></li></ul></nav>
<article>
<p>{PARAGRAPHS[0]}</p>
<table><tr><td>Length</td><td>TABLECELL 42 km</td></tr></table>
<p>{PARAGRAPHS[1]}</p>
<p>{PARAGRAPHS[2]}</p>
</article>
<section id="comments" class="comments"><h3>Comments</h3>
<div class="comment"><p>COMMENTTEXT I visited last year and loved the walk along the river bank.</p>
</div></section>
<footer><p>Copyright 2024 River Trust. All rights reserved.</p></footer>
</body></html>"""


def test_extract_main_text_keeps_article_paragraphs_only():
    text = extract_main_text(PAGE, "https://river.example/history")
    assert split_paragraphs(text) == PARAGRAPHS
    assert "TABLECELL" not in text
    assert "COMMENTTEXT" not in text


def test_extract_main_text_does_not_depend_on_pages_seen_before():
    # With trafilatura's deduplication, repeated segments vanish after a few calls.
    outputs = {extract_main_text(PAGE) for _ in range(5)}
    assert len(outputs) == 1
    assert outputs.pop() != ""


@pytest.mark.parametrize("html", ["", "   \n", "<html><body></body></html>"])
def test_extract_main_text_of_empty_page(html):
    assert extract_main_text(html) == ""


def _slow_extract(*args, **kwargs):
    time.sleep(3)
    return "too late"


@pytest.mark.parametrize("in_worker_thread", [False, True])
def test_extraction_timeout(monkeypatch, in_worker_thread):
    monkeypatch.setattr(webtext.trafilatura, "extract", _slow_extract)
    start = time.monotonic()
    with pytest.raises(ExtractionTimeout):
        if in_worker_thread:
            with ThreadPoolExecutor(max_workers=1) as pool:
                pool.submit(extract_main_text, PAGE, timeout_s=0.2).result()
        else:
            extract_main_text(PAGE, timeout_s=0.2)
    assert time.monotonic() - start < 2


@pytest.mark.parametrize("timeout_s", [None, 5.0])
def test_extraction_failure_is_wrapped(monkeypatch, timeout_s):
    def broken(*args, **kwargs):
        raise KeyError("boom")

    monkeypatch.setattr(webtext.trafilatura, "extract", broken)
    with pytest.raises(ExtractionError, match="boom") as raised:
        extract_main_text(PAGE, timeout_s=timeout_s)
    assert not isinstance(raised.value, ExtractionTimeout)


def test_input_is_cut_to_max_chars(monkeypatch):
    seen = []

    def record(html, **kwargs):
        seen.append((html, threading.current_thread() is threading.main_thread()))
        return " extracted \n"

    monkeypatch.setattr(webtext.trafilatura, "extract", record)
    assert extract_main_text("<p>" + "a" * 100, max_chars=10, timeout_s=None) == "extracted"
    assert seen == [("<p>aaaaaaa", True)]


def _by_url(calls, slow_s=3.0):
    """A stand-in for trafilatura.extract whose answer depends on the page's URL: "slow" sleeps
    ``slow_s``, "broken" raises; every call is recorded as (url, thread)."""

    def extract(html, url=None, **kwargs):
        calls.append((url, threading.current_thread()))
        if url == "slow":
            time.sleep(slow_s)
        if url == "broken":
            raise KeyError("boom")
        return f" {url} text \n"

    return extract


@pytest.mark.parametrize("timeout_s", [None, 5.0])
def test_extract_main_texts_gives_each_page_what_it_alone_gives(monkeypatch, timeout_s):
    calls = []
    monkeypatch.setattr(webtext.trafilatura, "extract", _by_url(calls))
    pages = [("<p>a</p>", "a"), ("   ", "empty"), ("<p>b</p>", "broken"), ("<p>c</p>", "c")]
    texts = extract_main_texts(pages, timeout_s=timeout_s)
    assert texts[0] == "a text" and texts[1] == "" and texts[3] == "c text"
    assert isinstance(texts[2], ExtractionError) and "boom" in str(texts[2])
    assert not isinstance(texts[2], ExtractionTimeout)
    assert [url for url, _ in calls] == ["a", "broken", "c"]  # a blank page is not extracted
    # with a time limit the pages go to one helper thread in one hand-off
    threads = {thread for _, thread in calls}
    assert len(threads) == 1
    assert (threads.pop() is threading.current_thread()) == (timeout_s is None)
    assert extract_main_texts([], timeout_s=timeout_s) == []


def test_a_page_past_its_limit_times_out_alone_and_the_pages_after_it_are_extracted(
        monkeypatch):
    calls = []
    monkeypatch.setattr(webtext.trafilatura, "extract", _by_url(calls, slow_s=1.0))
    start = time.monotonic()
    texts = extract_main_texts([("<p>a</p>", "a"), ("<p>s</p>", "slow"), ("<p>c</p>", "c"),
                                ("<p>d</p>", "d")], timeout_s=0.3)
    assert time.monotonic() - start < 0.9  # not waiting for the slow page
    assert texts[0] == "a text" and texts[2:] == ["c text", "d text"]
    assert isinstance(texts[1], ExtractionTimeout)
    time.sleep(1.0)  # the retired helper finishes the slow page, and starts nothing after it
    assert sorted(url for url, _ in calls) == ["a", "c", "d", "slow"]
    first, slow = calls[0][1], calls[1][1]
    assert first is slow and calls[2][1] is not slow  # the pages after it: a fresh helper
    assert extract_main_texts([("<p>e</p>", "e")], timeout_s=0.3) == ["e text"]


def test_the_limit_is_each_pages_not_the_batchs(monkeypatch):
    def paced(html, url=None, **kwargs):
        time.sleep(0.15)
        return url

    monkeypatch.setattr(webtext.trafilatura, "extract", paced)
    pages = [("<p>x</p>", str(i)) for i in range(5)]  # 0.75 s together, 0.15 s each
    assert extract_main_texts(pages, timeout_s=0.4) == [str(i) for i in range(5)]


def test_an_interrupt_in_the_helper_reaches_the_caller(monkeypatch):
    def interrupted(html, url=None, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(webtext.trafilatura, "extract", interrupted)
    with pytest.raises(KeyboardInterrupt):
        extract_main_texts([("<p>a</p>", "a")], timeout_s=5.0)


@pytest.mark.parametrize("timeout_s", [0, -1.0, float("inf")])
def test_a_time_limit_that_is_not_one_is_refused(timeout_s):
    with pytest.raises(ValueError, match="timeout_s"):
        extract_main_texts([("<p>a</p>", "a")], timeout_s=timeout_s)


def test_an_idle_helper_holds_no_page():
    class Page:  # a page's call, whose lifetime a weak reference can follow
        def __call__(self):
            return "text"

    page = Page()
    alive = weakref.ref(page)
    helper = webtext._ExtractionThread()
    try:
        assert helper.run([page], 5.0) == (["text"], True)
        del page
        deadline = time.monotonic() + 2.0
        while alive() is not None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert alive() is None
    finally:
        helper.requests.put(None)


class _InterruptedWait(threading.Event):
    def wait(self, timeout=None):
        raise KeyboardInterrupt


def test_an_interrupted_caller_gives_its_batch_up_and_its_helper(monkeypatch):
    calls = []
    monkeypatch.setattr(webtext.trafilatura, "extract", _by_url(calls, slow_s=0.2))
    real_batch = webtext._Batch

    class Interrupted(real_batch):
        def __init__(self, functions):
            super().__init__(functions)
            self.done = _InterruptedWait()

    monkeypatch.setattr(webtext, "_Batch", Interrupted)
    with pytest.raises(KeyboardInterrupt):
        extract_main_texts([("<p>s</p>", "slow"), ("<p>b</p>", "b"), ("<p>c</p>", "c")],
                           timeout_s=5.0)
    assert getattr(webtext._workers, "thread", None) is None  # retired
    time.sleep(0.6)  # the helper finishes what it had begun, and begins nothing more
    assert [url for url, _ in calls] in ([], ["slow"])
    monkeypatch.setattr(webtext, "_Batch", real_batch)
    assert extract_main_texts([("<p>d</p>", "d")], timeout_s=5.0) == ["d text"]


def test_an_error_on_the_callers_side_takes_the_pages_left_and_keeps_those_done(monkeypatch):
    calls = []
    monkeypatch.setattr(webtext.trafilatura, "extract", _by_url(calls, slow_s=1.0))
    real_thread = webtext._ExtractionThread
    started = []

    def helpers():
        if started:
            raise RuntimeError("can't start new thread")
        started.append(1)
        return real_thread()

    monkeypatch.setattr(webtext._workers, "thread", None)
    monkeypatch.setattr(webtext, "_ExtractionThread", helpers)
    texts = extract_main_texts([("<p>a</p>", "a"), ("<p>s</p>", "slow"), ("<p>b</p>", "b"),
                                ("<p>c</p>", "c")], timeout_s=0.3)
    assert texts[0] == "a text" and isinstance(texts[1], ExtractionTimeout)
    assert [type(t) for t in texts[2:]] == [RuntimeError, RuntimeError]
    monkeypatch.setattr(webtext, "_ExtractionThread", real_thread)
    with pytest.raises(RuntimeError, match="can't start"):
        monkeypatch.setattr(webtext, "_ExtractionThread", helpers)
        extract_main_text("<p>d</p>", "d", timeout_s=0.3)


def test_settings_read_once_give_trafilaturas_values():
    from trafilatura.settings import DEFAULT_CONFIG

    settings = webtext._SettingsReadOnce(DEFAULT_CONFIG)
    options = [(section, option) for section in ["DEFAULT", *DEFAULT_CONFIG.sections()]
               for option in DEFAULT_CONFIG[section]]
    assert len(options) > 10
    for section, option in options:
        for how in ("get", "getint", "getfloat", "getboolean"):
            try:
                expected = getattr(DEFAULT_CONFIG, how)(section, option)
            except ValueError:
                with pytest.raises(ValueError):
                    getattr(settings, how)(section, option)
                continue
            assert getattr(settings, how)(section, option) == expected  # read
            assert getattr(settings, how)(section, option) == expected  # kept
    assert settings.getint("DEFAULT", "NO_SUCH_SETTING", fallback=7) == 7


def _trafilatura_with_its_own_settings(html, url):
    return (webtext.trafilatura.extract(
        html, url=url, output_format="txt", include_comments=False, include_tables=False,
        include_images=False, include_links=False, include_formatting=False,
        deduplicate=False, with_metadata=False) or "").strip()


def test_extraction_with_the_settings_read_once_is_trafilaturas(sample_corpus):
    from wikisum.pipeline.warcs import Capture, iter_records

    folder, _ = sample_corpus
    pages = []
    for path in sorted((folder / "warc").glob("*.warc.gz"))[:1]:
        with open(path, "rb") as f:
            pages += [(decode_body(r.body, r.content_type)[0], r.url)
                      for r in iter_records(f, str(path), max_bytes=10**7)
                      if isinstance(r, Capture) and "html" in r.content_type][:150]
    assert len(pages) >= 50
    for html, url in [(PAGE, "https://river.example/history"), *pages]:
        assert extract_main_text(html, url, timeout_s=None) == (
            _trafilatura_with_its_own_settings(html, url))


@pytest.mark.shared_data
def test_extraction_with_the_settings_read_once_is_trafilaturas_on_real_pages(shared_data):
    folder = shared_data / "extraction" / "pages"
    for path in sorted(folder.glob("*.html.gz"))[:60]:
        html, _ = decode_body(gzip.decompress(path.read_bytes()), None)
        url = f"https://{path.name}.example/"
        assert extract_main_text(html, url, timeout_s=None) == (
            _trafilatura_with_its_own_settings(html, url))


# --- paragraphs ---------------------------------------------------------------------------------


def test_split_paragraphs():
    text = "  First   line \n\n- item one\n\t\n• second  item\n-not a marker\nLast"
    assert split_paragraphs(text) == [
        "First line",
        "item one",
        "second item",
        "-not a marker",
        "Last",
    ]


# Lines of the kinds found on the development pages (trafilatura's evaluation set): what a real
# article's main text holds and must keep, and the furniture inside it that must go.
ARTICLE_LINES = [
    # headings, often short and without a final period
    "Künstlerischer Lebenslauf",
    "Besonderheiten in den Regionen",
    "Weitere US-Zellprojekte im Aufbau",
    "So erkennst du deine persönlichen Grenzen",
    "Local Council Approves New Budget For Schools And Roads",
    # list items: ingredients, specifications, steps
    "6 mittelgroße Eier",
    "can (20 oz) pineapple slices in juice, drained, juice reserved",
    "Art der Aufnahme: Digitalfoto",
    "Ausstattung Sicherheit: 1",
    "Przygotowanie krok po kroku",
    # quoted verse and captions
    "„Azad war mein Vorbild, doch ist innerlich am Sack",
    "Marco Odermatt, Ski-Star aus der Schweiz.",
    # prose
    "The council approved the budget on Monday.",
    'He said it was "over." Nobody agreed',
    "Il a dit « non » puis il est parti sans un mot !",
    "Version 3.5 released for example.com users today",
    "Von 1990 bis 2000 war er Bürgermeister der Stadt und setzte sich für den Bau der "
    "neuen Brücke ein.",
    "By the end of the year the museum had doubled its collection.",
    "Die Verbraucherzentrale rät, Cookies regelmäßig zu löschen, wenn man den Browser "
    "schließt, und vergleicht in ihrem Bericht vier Browser.",
    # prose that opens like furniture
    "Share prices fell by 20 percent in 2008.",
    "Stand 2021 hatte die Gemeinde 1.234 Einwohner.",
    "Published in 1851, the novel was a commercial failure.",
    "Tel Aviv was founded in 1909.",
    "Die Werbung für Zigaretten ist seit 2003 verboten.",
    "The newsletter was first published in 1978 by the society.",
    "Related species include the red fox.",
    "Weitere Informationen zur Geschichte finden sich im Stadtarchiv.",
    "The court ruled that websites must ask consent before they use cookies.",
    "Von Trier",
    "About",
]

FURNITURE_LINES = [
    ("Home | News | About us | Contact", "navigation"),
    ("Startseite » Aktuelles » Pressemitteilungen", "navigation"),
    ("Tags: Klima, Energie, Windkraft", "navigation"),
    ("Bild anzeigen", "navigation"),
    ("Back to top", "navigation"),
    ("Share on Twitter", "share"),
    ("Facebook Twitter WhatsApp E-Mail", "share"),
    ("Artikel teilen", "share"),
    ("Read more »", "read_more"),
    ("Lesen Sie auch: Die Winterreifen-Pflicht im Überblick", "read_more"),
    ("Czytaj też: Czy grozi nam wojna atomowa?", "read_more"),
    ("Le puede interesar: Nuevas reglas para el transporte público", "read_more"),
    ("Weitere Informationen:", "read_more"),
    ("Never miss the latest news by signing up to our newsletter today!", "call_to_action"),
    ("Du musst eingeloggt sein, um Kommentare zu schreiben!", "call_to_action"),
    ("ANZEIGE", "call_to_action"),
    ("Subscribe now to our print edition for the full story.", "call_to_action"),
    ("Copyright 2024", "byline"),
    ("© 2020 Agentur Beispiel. Alle Rechte vorbehalten.", "byline"),
    ("By Jane Doe", "byline"),
    ("Foto: dpa", "byline"),
    ("Fot. Jan Kowalski / Agencja Gazeta", "byline"),
    ("Aktualisiert am 17.01.2021.", "byline"),
    ("5 min read", "byline"),
    ("We use cookies to improve your experience. By continuing you accept our use of "
     "cookies.", "cookie"),
    ("Diese Website verwendet Cookies. Mit der Nutzung stimmen Sie zu.", "cookie"),
    ("© 2024", "no_letters"),
    ("12:30 – 14:00", "no_letters"),
]


@pytest.mark.parametrize("paragraph", ARTICLE_LINES)
def test_article_lines_are_kept(paragraph):
    assert paragraph_drop_reason(paragraph) is None


@pytest.mark.parametrize(("paragraph", "reason"), FURNITURE_LINES)
def test_furniture_is_dropped_with_its_reason(paragraph, reason):
    assert paragraph_drop_reason(paragraph) == reason


def test_long_prose_is_never_furniture():
    # The same openings as furniture, but sentences of an article.
    for paragraph in [
        "Share prices fell sharply on Monday after the central bank raised interest rates "
        "for the third time this year, and analysts expect further falls.",
        "Read more widely than your syllabus, the headmaster told the assembly, because the "
        "examiners reward pupils who can connect what they learned.",
    ]:
        assert paragraph_drop_reason(paragraph) is None


def test_each_furniture_rule_holds_up_to_its_word_limit_and_not_one_word_past(monkeypatch):
    """The rules look at a line's words only up to the longest limit (50, cookie notices):
    a notice of exactly its rule's limit is furniture, one word more is prose, also past 50."""
    from wikisum.core import boilerplate

    cookie = "We use cookies on this website; by continuing you accept our cookie policy"
    filler = " more"
    n_cookie = len(boilerplate._WORD.findall(cookie.lower()))
    padded = cookie + filler * (50 - n_cookie)
    assert len(boilerplate._WORD.findall(padded.lower())) == 50
    assert boilerplate.boilerplate_reason(padded) == "cookie"
    assert boilerplate.boilerplate_reason(padded + " too") is None
    assert boilerplate.boilerplate_reason(padded + filler * 200) is None
    menu = " | ".join(["Home", "News", "Sport", "Weather", "Contact"] * 30)  # 150 words
    assert boilerplate.boilerplate_reason(menu) == "navigation"
    byline = "Photo: Jane Smith"
    assert boilerplate.boilerplate_reason(byline) == "byline"
    assert boilerplate.boilerplate_reason(byline + " walked" * 10) is None


def test_the_separator_scan_answers_as_splitting_every_line_did(monkeypatch):
    """A line is split into menu items only where it holds a separator's character; random
    lines of words, spaces and every separator give the reason splitting every line gave."""
    import re

    from wikisum.core import boilerplate

    rng = random.Random(7)
    pieces = ["Home", "News", "the", "river", "rises", "in", "hills", "Kontakt", "a", "b",
              " ", " ", " ", "|", "•", "·", "»", "›", "¦", ">", "/", "«", "-", ":", "."]
    lines = ["".join(rng.choice(pieces) + rng.choice(["", " "]) for _ in range(rng.randint(1, 14)))
             for _ in range(3000)]
    lines += ["Home / News / Sport", "Berlin / Hamburg", "A › B › C", "Home ¦ News",
              "Home » News » Sport", "Start • Nachrichten • Sport", "Home · News · Sport",
              "x>y>z", "Home > News > Sport", "Home|News", "a·b", "one • two"]
    scanned = [boilerplate.boilerplate_reason(line) for line in lines]
    monkeypatch.setattr(boilerplate, "_SEPARATOR_CHAR", re.compile(""))  # every line split
    split = [boilerplate.boilerplate_reason(line) for line in lines]
    assert scanned == split
    assert Counter(split)["navigation"] > 100


def test_min_words_is_configurable():
    assert paragraph_drop_reason("Bodmin is a town.") is None
    assert paragraph_drop_reason("Bodmin is a town.", min_words=5) == "too_few_words"
    assert paragraph_drop_reason("Bodmin is a town.", min_words=4) is None


def test_filter_paragraphs_keeps_order_and_reports_drops():
    kept, dropped = webtext_paragraphs.filter_paragraphs(
        ["Rivers", "Share on Facebook", "The river rises in the hills.", "© 2024", "Lakes"])
    assert kept == ["Rivers", "The river rises in the hills.", "Lakes"]
    assert dropped == [("Share on Facebook", "share"), ("© 2024", "no_letters")]


@pytest.mark.shared_data
def test_filter_keeps_recall_and_raises_precision_on_real_pages(shared_data):
    """On real pages with known main-text snippets, the filter loses no article snippet the
    extraction found and removes some furniture snippets (experiments/extraction/run.py
    measures the whole set)."""
    import json

    folder = shared_data / "extraction"
    entries = json.loads((folder / "evaldata.json").read_text(encoding="utf-8"))
    found = Counter()
    for url, entry in sorted(entries.items(), key=lambda item: item[1]["file"])[:120]:
        body = gzip.decompress((folder / "pages" / (entry["file"] + ".gz")).read_bytes())
        html, _ = decode_body(body, None)
        paragraphs = split_paragraphs(extract_main_text(html, url, timeout_s=None))
        kept, _ = webtext_paragraphs.filter_paragraphs(paragraphs)
        for name, text in (("all", paragraphs), ("kept", kept)):
            flat = " " + " ".join(" ".join(text).split()) + " "
            for kind in ("with", "without"):
                found[name, kind] += sum(" ".join(s.split()) in flat for s in entry[kind])
    assert found["kept", "with"] >= found["all", "with"] - 2
    assert found["kept", "without"] < found["all", "without"] - 5


@pytest.mark.shared_data
def test_filter_keeps_the_prose_of_real_wikipedia_articles(shared_data):
    """Every line of 71 real articles (lead and sections, several languages) is article text:
    the furniture rules must leave (almost) all of it; one table caption "Source: 2011 ..." is
    the only line they take today."""
    from wikisum.pipeline.wikitext import parse_article

    lines = dropped = 0
    for path in sorted((shared_data / "wikipedia" / "wikitext" / "articles").iterdir()):
        article = parse_article(path.stem, path.read_text(encoding="utf-8"))
        for text in [article.lead, *(s.text for s in article.sections)]:
            for line in filter(None, (x.strip() for x in text.splitlines())):
                lines += 1
                dropped += paragraph_drop_reason(line) not in (None, "no_letters")
    assert lines > 1500
    assert dropped <= 2


def test_a_text_is_binary_past_five_percent_of_controls_but_tab_newline_and_escape():
    from wikisum.pipeline.webtext import _looks_binary

    text = "a" * 95
    assert not _looks_binary(text + "\x00" * 5)  # 5 of 100: not over the share
    assert _looks_binary(text + "\x00" * 4 + "\x7f\ufffd")  # 6 of 101
    assert not _looks_binary(text + "\t\n\r\f\x1b" * 20)
    assert _looks_binary("\x1c\x1f\x0b\x08")
    assert not _looks_binary("")

