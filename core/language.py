"""What the project knows of a language and a script: where words break in scripts written
without spaces, which Snowball stemmer a language has, and how a language tag is read.

:mod:`wikisum.core.text` defines words and sentences for every stage on top of this module;
:mod:`wikisum.core.rouge` scores with it. Nothing here depends on the language being listed
anywhere: text in any script is split into words, and what is language-specific (a stemmer,
function words) is used where it exists and skipped, said so, where it does not.

Word segmentation of Chinese, Japanese, Thai, Lao, Khmer and Burmese is ICU's word break
iterator (PyICU, through the ``pyicu-wheels`` build that bundles ICU), which uses ICU's
dictionaries for those scripts; every other script separates words with spaces or punctuation,
which a regular expression finds (:func:`wikisum.core.text.words`). Stemming is Snowball's
(PyStemmer) for the languages Snowball covers; English keeps Porter's stemmer, as rouge-score
uses it.
"""

from __future__ import annotations

import functools
import re
import threading
import unicodedata
from collections.abc import Callable

# Scripts written without spaces between words, which ICU segments with a dictionary: Han
# (with the iteration mark 々 and the CJK symbols' letters), Hiragana, Katakana (with the
# prolonged sound mark and the half-width forms), Thai, Lao, Khmer, Myanmar. Hangul is left
# out: Korean separates its words (eojeol) with spaces.
_DICTIONARY_SCRIPT_RANGES = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f\ua9e0-\ua9ff\uaa60-\uaa7f"  # Myanmar and its extensions
    "\u1780-\u17ff\u19e0-\u19ff"  # Khmer, Khmer symbols
    "\u3005-\u3007\u3021-\u3029\u3031-\u3035\u303b\u303c"  # 々〆〇, Hangzhou numerals, kana marks
    "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f"  # Hiragana, Katakana, half-width Katakana
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"  # CJK ideographs, extension A, compatibility
    "\U00020000-\U0003134f"  # CJK extensions B to G
)
_DICTIONARY_SCRIPT = re.compile(f"[{_DICTIONARY_SCRIPT_RANGES}]")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def _bmp_complement(ranges: list[tuple[int, int]]) -> str:
    """The BMP characters outside ``ranges`` as a regex class's ranges."""
    out, start = [], 0
    for first, last in sorted(ranges):
        if first > start:
            out.append(f"{re.escape(chr(start))}-{re.escape(chr(first - 1))}")
        start = last + 1
    if start <= 0xFFFF:
        out.append(f"{re.escape(chr(start))}-{re.escape(chr(0xFFFF))}")
    return "".join(out)


# A character of a dictionary script or beyond the BMP, written as "not one of the other BMP
# characters": a negated class of BMP characters alone is matched in constant time per
# character, where a class with ranges beyond the BMP is tried range by range.
_DICTIONARY_OR_ASTRAL = re.compile("[^" + _bmp_complement(
    [(ord(a), ord(b)) for a, b in re.findall("(.)-(.)", _DICTIONARY_SCRIPT_RANGES)
     if ord(b) <= 0xFFFF]) + "]")

# ICU's "rule status" of a word-break boundary: 0-99 none (spaces, punctuation), 100-199 a
# number, 200-299 a letter word, 300-399 kana, 400-499 ideographs.
_RULE_STATUS_WORD = 100


def needs_dictionary(text: str) -> bool:
    """Whether ``text`` holds a letter of a script that ICU segments with a dictionary."""
    return _DICTIONARY_SCRIPT.search(text) is not None


def needs_dictionary_or_astral(text: str) -> bool:
    """Whether ``text`` holds a character of a script that ICU segments with a dictionary or a
    character beyond the Basic Multilingual Plane (one scan, the cheapest)."""
    return _DICTIONARY_OR_ASTRAL.search(text) is not None


def has_astral(text: str) -> bool:
    """Whether ``text`` holds a character beyond the Basic Multilingual Plane."""
    return _ASTRAL.search(text) is not None


class _Segmenter(threading.local):
    """ICU's word break iterator, one per thread (an iterator holds the text it walks)."""

    def __init__(self) -> None:
        import icu  # PyICU (the pyicu-wheels distribution)

        self.icu = icu
        self.iterator = icu.BreakIterator.createWordInstance(icu.Locale.getRoot())


@functools.cache
def _segmenter_local() -> _Segmenter:
    return _Segmenter()


def segment(token: str) -> list[str]:
    """ICU's words of ``token`` (a run of letters, digits and marks without spaces), those that
    hold a letter or a digit, in order. Offsets are UTF-16 units in ICU, so the text is sliced
    as ICU's own string type to stay right past the Basic Multilingual Plane."""
    segmenter = _segmenter_local()
    ustring = segmenter.icu.UnicodeString(token)
    iterator = segmenter.iterator
    iterator.setText(ustring)
    pieces = []
    start = iterator.first()
    for end in iterator:
        if iterator.getRuleStatus() >= _RULE_STATUS_WORD:
            pieces.append(str(ustring[start:end]))
        start = end
    return pieces


def primary_subtag(lang: str | None) -> str | None:
    """The primary subtag of a language tag, lowercased: "pt-BR", "pt_br", "PT" -> "pt";
    None or "" -> None. Three-letter codes are returned as they are."""
    if not lang:
        return None
    primary = lang.replace("_", "-").split("-", 1)[0].strip().lower()
    return primary or None


# Snowball's algorithms (PyStemmer's names) by ISO 639-1 code, and by the ISO 639-2/3 codes
# Wikipedia uses where a language has no two-letter code. English is Porter's original
# algorithm, the stemmer rouge-score applies.
_SNOWBALL = {
    "ar": "arabic", "hy": "armenian", "eu": "basque", "ca": "catalan", "da": "danish",
    "nl": "dutch", "en": "porter", "eo": "esperanto", "et": "estonian", "fi": "finnish",
    "fr": "french", "de": "german", "el": "greek", "hi": "hindi", "hu": "hungarian",
    "id": "indonesian", "ga": "irish", "it": "italian", "lt": "lithuanian", "ne": "nepali",
    "no": "norwegian", "nb": "norwegian", "nn": "norwegian", "pl": "polish", "pt": "portuguese",
    "ro": "romanian", "ru": "russian", "sr": "serbian", "es": "spanish", "sv": "swedish",
    "ta": "tamil", "tr": "turkish", "yi": "yiddish", "ms": "indonesian", "cs": "czech",
    "fa": "persian", "st": "sesotho",
}


@functools.cache
def _available_algorithms() -> frozenset[str]:
    import Stemmer  # PyStemmer

    return frozenset(Stemmer.algorithms())


def stemmer_name(lang: str | None, english: str = "porter") -> str | None:
    """The Snowball algorithm that stems ``lang``'s words, or None where Snowball has none.
    English is Porter's stemmer, as rouge-score stems it; ``english="english"`` gives
    Snowball's own English stemmer (Porter2) instead, as the search index uses."""
    primary = primary_subtag(lang) or ""
    name = english if primary == "en" else _SNOWBALL.get(primary)
    return name if name is not None and name in _available_algorithms() else None


class _Stemmers(threading.local):
    """PyStemmer's stemmers by algorithm, one set per thread (a stemmer keeps a cache)."""

    def __init__(self) -> None:
        self.by_name: dict = {}


_stemmers = _Stemmers()


def stemmer(lang: str | None, english: str = "porter"
            ) -> Callable[[list[str]], list[str]] | None:
    """A function that stems a list of ``lang``'s lowercased words, or None where Snowball has
    no stemmer for it (``english``: as in :func:`stemmer_name`)."""
    name = stemmer_name(lang, english)
    if name is None:
        return None

    def stem_words(words: list[str]) -> list[str]:
        found = _stemmers.by_name.get(name)
        if found is None:
            import Stemmer

            found = _stemmers.by_name[name] = Stemmer.Stemmer(name)
        return found.stemWords(words)

    return stem_words


def letter_count(text: str) -> int:
    """Letters in ``text`` (characters whose Unicode category is L*)."""
    return sum(1 for ch in text if ch.isalpha())


# Georgian's Mkhedruli letters are lower case in Unicode, but Georgian text is written in them
# alone: its sentences start with them.
_LOWER_BY_DEFAULT = re.compile("[\u10d0-\u10ff\u1c90-\u1cbf]")


def is_caseless_letter(ch: str) -> bool:
    """A letter of a script without case in use (Han, Arabic, Devanagari, Thai, Georgian, ...):
    a sentence may start with it where a cased script would need a capital."""
    if _LOWER_BY_DEFAULT.match(ch):
        return True
    return ch.isalpha() and not ch.isupper() and not ch.islower() \
        and unicodedata.category(ch) != "Lt"
