"""The direction of a page's text (`text_direction`) and the lang/dir a page carries."""

import pytest

from wikisum.core import htmlpage
from wikisum.core.htmlpage import lang_attrs, page, text_direction

RTL = ["ar", "he", "fa", "ur", "yi", "ps", "sd", "dv", "ckb", "ug", "arz", "mzn", "azb", "pnb",
       "ks", "glk", "lrc", "ary", "nqo", "syc", "arc", "skr", "bgn", "sdh",
       # ISO 639-2/3 codes and the deprecated ones
       "ara", "heb", "fas", "per", "urd", "yid", "pus", "snd", "div", "uig", "iw", "ji",
       # a code not listed, whose likely script (CLDR, through ICU) is right to left
       "bqi", "khw"]
LTR = ["en", "de", "ru", "uk", "ja", "zh", "ko", "hi", "bn", "th", "am", "ka", "hy", "el",
       "vi", "tr", "ku", "tg", "ms", "sw",
       # listed because CLDR's likely script is right to left where their Wikipedia is Latin
       "lad", "rhg"]


@pytest.mark.parametrize("lang", RTL)
def test_right_to_left_languages(lang):
    assert text_direction(lang) == "rtl"
    assert text_direction(lang.upper()) == "rtl"


@pytest.mark.parametrize("lang", LTR)
def test_left_to_right_languages(lang):
    assert text_direction(lang) == "ltr"
    assert text_direction(lang, "نص عربي كله") == "ltr"  # a known code decides, not the text


@pytest.mark.parametrize(("tag", "expected"), [
    ("ar-EG", "rtl"), ("AR_eg", "rtl"), ("he-IL", "rtl"), ("ckb-IQ", "rtl"),
    ("ku-Arab", "rtl"), ("az-Arab", "rtl"), ("pa-Arab", "rtl"), ("ff-Adlm", "rtl"),
    ("ar-Latn", "ltr"), ("sr-Latn", "ltr"), ("zh-Hant-TW", "ltr"), ("uz-Cyrl", "ltr"),
    ("ar-Zyyy", "rtl"),  # a script code that names no script: the language decides
])
def test_a_script_subtag_decides_before_the_language(tag, expected):
    assert text_direction(tag) == expected


@pytest.mark.parametrize("lang", [None, "", "und", "mul", "xyz", "12", "x!"])
def test_an_unknown_language_takes_the_direction_of_most_of_its_text(lang):
    assert text_direction(lang) == "ltr"
    assert text_direction(lang, "مصر دولة عربية in Africa") == "rtl"
    assert text_direction(lang, "ירושלים היא עיר הבירה (2021)") == "rtl"
    assert text_direction(lang, "Cairo (القاهرة) is the capital of Egypt") == "ltr"
    assert text_direction(lang, "1234 — !?") == "ltr"  # no letter with a direction


def test_lang_attrs_and_the_page_element():
    assert lang_attrs("ar") == 'lang="ar" dir="rtl"'
    assert lang_attrs("ja_JP") == 'lang="ja-JP" dir="ltr"'
    assert lang_attrs(None, "שלום עולם") == 'dir="rtl"'
    assert lang_attrs('x"><script>') == 'lang="x&quot;&gt;&lt;script&gt;" dir="ltr"'
    arabic = page("t", "<p>x</p>", lang="ar")
    assert '<html lang="ar" dir="rtl">' in arabic
    assert f"<body {htmlpage.CHROME}>" in arabic  # the English interface inside it
    english = page("t", "<p>x</p>")
    assert '<html lang="en" dir="ltr">' in english and "<body>\n" in english
    assert '<html dir="rtl">' in page("t", "", lang=None, sample_text="مرحبا بالعالم")
