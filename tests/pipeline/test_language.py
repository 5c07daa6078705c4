"""Language identification: its rules, and real pages and articles in ../shared/data."""

from __future__ import annotations

import gzip
import json
import pickle
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from wikisum.pipeline import language
from wikisum.pipeline.language import (
    DEFAULT_MIN_CONFIDENCE,
    UNDETERMINED,
    Language,
    identify,
    is_wrong_language,
)

ENGLISH = (
    "The river rises in the hills north of the town and flows south through a wide valley. "
    "In the nineteenth century its water drove several mills, and the railway that followed "
    "the valley brought coal to the factories that replaced them."
)
GERMAN = (
    "Der Fluss entspringt in den Hügeln nördlich der Stadt und fließt durch ein breites Tal "
    "nach Süden. Im neunzehnten Jahrhundert trieb sein Wasser mehrere Mühlen an, und die "
    "Eisenbahn brachte Kohle zu den Fabriken, die sie ersetzten."
)
NONE = Language(UNDETERMINED, 0.0)


# --- identify -----------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "   \n\t ", "12.03.2020 14:55 | 1,234 €", "Contact us",
                                  "Personal life", "-> >> ** ::"])
def test_empty_and_short_text_is_undetermined(text):
    assert identify(text) == NONE


def test_min_letters_is_the_boundary():
    assert identify("Awards and nominations").code == "en"  # 20 letters
    assert identify("Awards and nominations", min_letters=21) == NONE
    assert identify("Personal life", min_letters=0).code != UNDETERMINED


def test_the_letter_count_stops_where_it_is_decided_and_agrees_with_counting_all():
    import random

    from wikisum.pipeline.language import _has_letters

    rng = random.Random(0)
    alphabet = "ab é日ß²½_-1 \n.Ωд"  # letters, digits, numerics that are not letters, marks
    for _ in range(2000):
        sample = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60)))
        for wanted in (0, 1, 5, 20, 30):
            assert _has_letters(sample, wanted) == (sum(map(str.isalpha, sample)) >= wanted)


def test_non_language_is_undetermined():
    hashes = ("d41d8cd98f00b204e9800998ecf8427e 9e107d9d372bb6826bd81d3542a419d6 "
              "e4d909c290d0fb1ca068ffaddf22cbd0")
    assert identify(hashes) == NONE


def test_only_the_first_max_chars_are_looked_at():
    text = "0123456789 " * 100 + ENGLISH
    assert identify(text) == NONE
    assert identify(text, max_chars=len(text)).code == "en"
    assert identify(GERMAN + " " + ENGLISH, max_chars=len(GERMAN)).code == "de"


def test_identify_gives_the_language_and_a_probability():
    english, german = identify(ENGLISH), identify(GERMAN)
    assert english.code == "en" and german.code == "de"
    for found in (english, german):
        assert isinstance(found.confidence, float)
        assert DEFAULT_MIN_CONFIDENCE <= found.confidence <= 1.0


def test_identify_is_deterministic_and_picklable():
    first = [identify(t) for t in (ENGLISH, GERMAN, ENGLISH[:60])]
    again = [identify(t) for t in (ENGLISH[:60], GERMAN, ENGLISH)][::-1]
    assert first == again
    assert pickle.loads(pickle.dumps(first)) == first


def test_threads_share_one_identifier_loaded_once(monkeypatch):
    from py3langid.langid import LanguageIdentifier

    texts = [ENGLISH, GERMAN, ENGLISH[:80], GERMAN[:80]] * 8
    expected = [identify(t) for t in texts]
    loads = []
    load = LanguageIdentifier.from_model_file

    def counting_load(cls, *args, **kwargs):
        loads.append(1)
        return load.__func__(cls, *args, **kwargs)

    monkeypatch.setattr(LanguageIdentifier, "from_model_file", classmethod(counting_load))
    monkeypatch.setenv("WIKISUM_CACHE_DIR", "off")  # the model itself, not a cached copy
    monkeypatch.setattr(language, "_identifier", None)
    with ThreadPoolExecutor(8) as pool:
        assert list(pool.map(identify, texts)) == expected
    assert len(loads) == 1


def test_a_preload_loads_once_in_the_background_and_identify_waits_for_it(monkeypatch):
    from py3langid.langid import LanguageIdentifier

    expected = identify(GERMAN)
    loads = []
    load = LanguageIdentifier.from_model_file

    def counting_load(cls, *args, **kwargs):
        loads.append(threading.current_thread().name)
        return load.__func__(cls, *args, **kwargs)

    monkeypatch.setattr(LanguageIdentifier, "from_model_file", classmethod(counting_load))
    monkeypatch.setenv("WIKISUM_CACHE_DIR", "off")  # the model itself, not a cached copy
    monkeypatch.setattr(language, "_identifier", None)
    monkeypatch.setattr(language, "_preloading", False)
    language.preload()
    language.preload()  # already under way: nothing more
    loader = next(t for t in threading.enumerate() if t.name == "wikisum-language-model")
    loader.join(timeout=60)
    assert identify(GERMAN) == expected
    language.preload()  # loaded: nothing more
    assert loads == ["wikisum-language-model"]


def test_a_failed_preload_is_raised_by_the_next_load(monkeypatch):
    from py3langid.langid import LanguageIdentifier

    def broken(cls, *args, **kwargs):
        raise OSError("model file damaged")

    monkeypatch.setattr(LanguageIdentifier, "from_model_file", classmethod(broken))
    monkeypatch.setenv("WIKISUM_CACHE_DIR", "off")  # the model itself, not a cached copy
    monkeypatch.setattr(language, "_identifier", None)
    monkeypatch.setattr(language, "_preloading", False)
    language.preload()
    with pytest.raises(OSError, match="model file damaged"):
        language.load()


# --- is_wrong_language --------------------------------------------------------------------------

def test_wrong_language_needs_a_determined_other_language_with_confidence():
    assert is_wrong_language(Language("de", 0.99), "en")
    assert not is_wrong_language(Language("en", 0.99), "en")
    assert not is_wrong_language(NONE, "en")
    assert not is_wrong_language(Language("de", 0.89), "en")
    assert is_wrong_language(Language("de", 0.5), "en", min_confidence=0.5)
    assert not is_wrong_language(Language("de", 0.5), "en", min_confidence=0.51)


@pytest.mark.parametrize("wanted", ["", "  ", "any", "ANY"])
def test_no_wanted_language_means_no_check(wanted):
    assert not is_wrong_language(Language("de", 1.0), wanted)


@pytest.mark.parametrize("wanted", ["en", "EN", " en ", "en-GB", "en_US", "simple"])
def test_wanted_tags_and_editions_name_their_language(wanted):
    assert not is_wrong_language(Language("en", 1.0), wanted)
    assert is_wrong_language(Language("de", 1.0), wanted)


@pytest.mark.parametrize(("found", "wanted"), [
    ("no", "nb"), ("no", "no"), ("nn", "no"), ("nn", "nb"), ("no", "nn"),
    ("yue", "zh"), ("wuu", "zh"), ("zh", "zh-yue"), ("zh", "yue"),
    ("hr", "sr"), ("bs", "hr"), ("sr", "sh"), ("id", "ms"), ("ms", "id"), ("arz", "ar"),
    ("he", "iw"),
])
def test_aliases_and_macrolanguage_members_are_one_language(found, wanted):
    assert not is_wrong_language(Language(found, 1.0), wanted)


@pytest.mark.parametrize(("found", "wanted"), [("de", "nb"), ("da", "no"), ("ja", "zh"),
                                                ("sl", "hr"), ("lb", "de"), ("pcm", "en")])
def test_other_languages_stay_other(found, wanted):
    assert is_wrong_language(Language(found, 1.0), wanted)


@pytest.mark.parametrize("wanted", ["xx", "nds", "zh-min-nan", "roa-tara"])
def test_a_language_the_model_does_not_know_is_not_checked(wanted):
    assert not is_wrong_language(Language("de", 1.0), wanted)


# --- Real pages and articles (skipped when ../shared/data is absent) ----------------------------

# Pages of trafilatura's evaluation set whose language is unambiguous (declared and written).
PAGES = {
    "en": ["hackernoon.com.scrape.html", "wired.com.burn.html",
           "timesofisrael.com.washington.html"],
    "de": ["rete-mirabile.net.15jahre.html", "lernpfadprismen.wordpress.com.masse.html",
           "silvias.net.wahlzensur.html"],
    "pl": ["Eurostat_ Polska z najniższym bezrobociem w całej UE.html",
           "Windows 10 od lipca przestanie obsługiwać Adobe Flash.html",
           "Koncesjonowana opozycja -Leszek Jażdżewski - Liberté!.html"],
    "fr": ["ledevoir.com.trottinettes.html", "lapresse.tn.parite.html",
           "dalloz-actualite.fr.raoult.html"],
}
# Wikipedia articles as wikitext: (file stem, language written in).
ARTICLES = [("Keilwelle", "de"), ("Maurische-Netzwuhle", "de"), ("Bodmin", "en"),
            ("Ewelina-Setowska-Dryk", "en"),  # English Wikipedia on a Polish runner
            ("statoil", "nn"), ("Mark-Behr", "af")]


@pytest.fixture(scope="module")
def page_texts(shared_data) -> dict[str, str]:
    """file -> main text, by ingest's own path, for the pages in PAGES."""
    from wikisum.pipeline import webtext

    folder = shared_data / "extraction"
    entries = json.loads((folder / "evaldata.json").read_text(encoding="utf-8"))
    urls = {entry["file"]: url for url, entry in entries.items()}
    texts = {}
    for name in (n for names in PAGES.values() for n in names):
        body = gzip.decompress((folder / "pages" / (name + ".gz")).read_bytes())
        html, _ = webtext.decode_body(body, None)
        texts[name] = webtext.extract_main_text(html, urls[name], timeout_s=None)
    return texts


@pytest.fixture(scope="module")
def article_texts(shared_data) -> dict[str, str]:
    """stem -> lead and sections, as plain text."""
    from wikisum.pipeline.wikitext import parse_article

    folder = shared_data / "wikipedia" / "wikitext" / "articles"
    texts = {}
    for stem, _ in ARTICLES:
        article = parse_article(stem, (folder / f"{stem}.txt").read_text(encoding="utf-8"))
        texts[stem] = "\n".join([article.lead, *(s.text for s in article.sections)])
    return texts


@pytest.mark.shared_data
@pytest.mark.parametrize(("lang", "name"), [(lang, n) for lang, names in PAGES.items()
                                            for n in names])
def test_real_pages_are_identified_with_confidence(page_texts, lang, name):
    found = identify(page_texts[name])
    assert found.code == lang
    assert found.confidence >= DEFAULT_MIN_CONFIDENCE


@pytest.mark.shared_data
def test_real_english_pages_are_kept_and_foreign_ones_are_not(page_texts):
    for lang, names in PAGES.items():
        for name in names:
            found = identify(page_texts[name])
            assert is_wrong_language(found, "en") == (lang != "en"), name
            assert not is_wrong_language(found, lang), name
    german = identify(page_texts[PAGES["de"][0]])
    assert is_wrong_language(german, "pl") and is_wrong_language(german, "fr")


@pytest.mark.shared_data
@pytest.mark.parametrize(("stem", "lang"), ARTICLES)
def test_real_articles_are_identified(article_texts, stem, lang):
    found = identify(article_texts[stem])
    assert found.code == lang
    assert found.confidence >= DEFAULT_MIN_CONFIDENCE
    assert is_wrong_language(found, "en") == (lang != "en")


@pytest.mark.shared_data
def test_real_nynorsk_article_is_norwegian(article_texts):
    found = identify(article_texts["statoil"])
    assert not any(is_wrong_language(found, wanted) for wanted in ("no", "nb", "nn"))
    assert is_wrong_language(found, "da") and is_wrong_language(found, "sv")
