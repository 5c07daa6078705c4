import gzip
import html
import json
import re

import pytest

from wikisum.core.stopwords import FUNCTION_WORDS, language_key
from wikisum.core.text import content_words, words
from wikisum.pipeline.clones import (
    CLONE_MEASURES,
    DEFAULT_CLONE_MEASURE,
    clone_recall,
    content_recall,
    lead_recall,
)

# --- content_words / content_recall -------------------------------------------------------------


def test_content_words_drop_function_words():
    assert content_words("The cat sat on the mat, and it was happy.") == [
        "cat", "sat", "mat", "happy"]


def test_content_words_drop_digits_and_single_characters_but_keep_mixed_tokens():
    text = "In 1826 J. R. Smith sold 15 RTX 3080 cards in the 1990s; it's a UK firm."
    assert content_words(text) == ["smith", "sold", "rtx", "cards", "1990s", "uk", "firm"]


def test_content_recall_ignores_function_words():
    lead = "The history of the town of Bodmin is told in a book."
    page = "It is the start of a long story that is told to all of us in the town hall."
    assert lead_recall(lead, page) > 0.5
    # content words {history, town, bodmin, told, book}: town and told are in the page
    assert content_recall(lead, page) == pytest.approx(2 / 5)


def test_content_recall_ignores_case_and_punctuation():
    assert content_recall("BODMIN, Cornwall!", "bodmin ... cornwall") == 1.0
    assert content_recall("Well-known town", "a well known town") == 1.0


def test_content_recall_of_empty_lead_or_document():
    assert content_recall("", "anything at all") == 0.0
    assert content_recall("It is what it is, 2019.", "it is what it is 2019") == 0.0
    assert content_recall("Bodmin", "") == 0.0


def test_content_recall_counts_distinct_lead_words():
    assert content_recall("cat cat cat dog", "a cat") == pytest.approx(1 / 2)


def test_german_and_polish_lists_are_used():
    assert content_words("Der Hund und die Katze sind in dem Haus.", "de") == [
        "hund", "katze", "haus"]
    # under the English list German function words are content
    assert "und" in content_words("Der Hund und die Katze", "en")
    assert content_words("To jest dom, który zbudował Jack, i nie ma w nim kota.", "pl") == [
        "dom", "zbudował", "jack", "kota"]
    lead = "Die Stadt liegt an dem Fluss und hat eine Burg aus dem Mittelalter."
    page = "Die Zeit, in der wir leben, hat eine Geschichte; und an dem Tag liegt es aus."
    assert lead_recall(lead, page) > 0.5
    # content words {stadt, liegt, fluss, burg, mittelalter}: only liegt is in the page
    assert content_recall(lead, page, "de") == pytest.approx(1 / 5)
    assert content_recall(lead, page, "en") > 0.5


def test_language_tags_with_regions_and_three_letter_codes():
    assert language_key("de-CH") == language_key("DE") == language_key("deu") == "de"
    assert language_key("pt_BR") == "pt"
    assert language_key("ru") == language_key("rus") == "ru"
    assert language_key("bg") is None
    assert language_key("") is None
    assert language_key(None) is None
    assert content_words("Der Hund", "de-AT") == ["hund"]


def test_unknown_language_uses_english_list_and_drops_short_tokens():
    # Bulgarian is not listed: tokens under three characters go, whatever they are
    assert content_words("Котка и куче в къщата на улицата", "bg") == [
        "котка", "куче", "къщата", "улицата"]
    assert content_words("The UK and the EU signed the deal", None) == ["signed", "deal"]
    assert content_words("The UK and the EU signed the deal", "en") == [
        "uk", "eu", "signed", "deal"]
    assert content_recall("Котка и куче", "куче", "bg") == pytest.approx(1 / 2)


def test_function_word_lists():
    assert set(FUNCTION_WORDS) >= {"en", "de", "fr", "es", "it", "nl", "pl", "pt", "ru", "uk",
                                   "vi", "ja", "zh"}
    for lang, listed in FUNCTION_WORDS.items():
        # Japanese particles are single characters, which every language drops anyway
        assert (50 if lang == "ja" else 100) <= len(listed) <= 300, lang
        for word in listed:
            assert words(word) == [word], (lang, word)  # lowercase, one `words` token


def test_clone_recall_dispatches_on_the_measure():
    lead, page = "The cat sat on the mat.", "the cat and the dog"
    assert CLONE_MEASURES == ("unigram", "content")
    assert DEFAULT_CLONE_MEASURE == "content"  # the better detector in experiments/clones/run.py
    assert clone_recall(lead, page) == content_recall(lead, page)
    assert clone_recall(lead, page, "unigram") == lead_recall(lead, page)
    assert clone_recall(lead, page, "unigram", "de") == lead_recall(lead, page)
    assert clone_recall(lead, page, "content") == content_recall(lead, page)
    assert clone_recall("Der Hund", "hund", "content", "de") == 1.0
    with pytest.raises(ValueError, match="unknown clone measure"):
        clone_recall(lead, page, "bigram")


# --- Real pages (../shared/data) ----------------------------------------------------------------


def _extraction_page(shared_data, url):
    from wikisum.pipeline import webtext

    folder = shared_data / "extraction"
    entry = json.loads((folder / "evaldata.json").read_text(encoding="utf-8"))[url]
    body = gzip.decompress((folder / "pages" / (entry["file"] + ".gz")).read_bytes())
    page, _ = webtext.decode_body(body, None)
    return html.unescape(entry["description"]), webtext.extract_main_text(page, url,
                                                                         timeout_s=None)


@pytest.mark.shared_data
@pytest.mark.parametrize(
    ("lead_url", "page_url", "lang"),
    [
        # a 27-word description of an RTX 3000 buying guide; a 1,000-word page on skin care
        ("https://www.tomshardware.com/uk/news/where-and-how-to-buy-rtx-3080-3090-3070",
         "https://hellogiggles.com/beauty/dead-skin-cells-build-up/", "en"),
        # a 29-word description of a lesson on variables; a 1,450-word magazine article
        ("https://it-for-kids.org/blog/191211_variables/",
         "https://missy-magazine.de/blog/2023/10/30/interabled-sex-education/", "de"),
    ],
)
def test_real_short_description_against_an_unrelated_long_page(shared_data, lead_url,
                                                                page_url, lang):
    description, _ = _extraction_page(shared_data, lead_url)
    _, text = _extraction_page(shared_data, page_url)
    assert len(words(text)) > 1000
    assert lead_recall(description, text) > 0.6  # dropped as a clone by the unigram measure
    assert content_recall(description, text, lang) < 0.2


def _mirror(title, parts):
    body = "".join(f"<p>{html.escape(part)}</p>" for part in parts if part)
    return (f'<html><head><title>{title} - Mirror</title></head><body><nav><a href="/">Home'
            f'</a> | <a href="/random">Random</a></nav><article><h1>{title}</h1>'
            f"<p>From Wikipedia, the free encyclopedia</p>{body}</article><footer><p>Text "
            "under CC BY-SA 4.0. Privacy | Contact</p></footer></body></html>")


@pytest.mark.shared_data
@pytest.mark.parametrize(("name", "lang"), [("Bodmin", "en"), ("Keilwelle", "de")])
def test_real_wikipedia_mirror_is_caught_by_both_measures(shared_data, name, lang):
    from wikisum.pipeline import webtext
    from wikisum.pipeline.wikitext import parse_article

    path = shared_data / "wikipedia" / "wikitext" / "articles" / f"{name}.txt"
    article = parse_article(name, path.read_text(encoding="utf-8"), lang)
    parts = [article.lead] + [p for s in article.sections for p in (s.title, s.text)]
    text = webtext.extract_main_text(_mirror(name, parts), timeout_s=None)
    for measure in CLONE_MEASURES:
        assert clone_recall(article.lead, text, measure, lang) > 0.9, measure
    # a light paraphrase of the lead alone: every 5th word dropped
    tokens = article.lead.split()
    lead_only = " ".join(t for i, t in enumerate(tokens, 1) if i % 5)
    text = webtext.extract_main_text(_mirror(name, [lead_only]), timeout_s=None)
    for measure in CLONE_MEASURES:
        assert clone_recall(article.lead, text, measure, lang) > 0.7, measure


@pytest.mark.shared_data
def test_real_common_crawl_wikipedia_capture_is_caught_by_both_measures(shared_data):
    from wikisum.pipeline.warcs import Capture, iter_records

    folder = shared_data / "warc" / "cc-whirlwind"
    captures = {}
    for name in ("whirlwind.warc.gz", "whirlwind.warc.wet.gz"):
        with open(folder / name, "rb") as stream:
            for record in iter_records(stream, name, max_bytes=1 << 24):
                if isinstance(record, Capture):
                    captures[record.record_type] = record
    page = captures["response"].body.decode("utf-8")
    content = page[page.index("mw-parser-output"):]
    content = content[:re.search(r"<h2\b|class=\"mw-heading", content).start()]
    lead = " ".join(html.unescape(re.sub(r"<[^>]+>", "", p))
                    for p in re.findall(r"<p\b[^>]*>(.*?)</p>", content, re.S))
    assert lead.startswith("Escopete ye un municipio")
    wet = captures["conversion"].body.decode("utf-8")
    # Aragonese ("an") is not listed: the content measure falls back
    assert language_key("an") is None
    for measure in CLONE_MEASURES:
        assert clone_recall(lead, wet, measure, "an") == 1.0, measure
