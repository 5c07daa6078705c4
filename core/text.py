"""Tokenisation shared by the clone filter, the paragraph filter, the extractors and the
metrics.

The functions are deliberately simple and deterministic: they define what a "word", a "content
word" and a "sentence" are for the whole project, so that a recall computed by the clone filter
and a score computed by an extractor count the same units.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from wikisum.core import language
from wikisum.core.stopwords import ENGLISH, FUNCTION_WORDS, language_key

# A word starts with a Unicode letter or digit and runs on over letters, digits, combining marks
# (the vowel signs and viramas of Indic scripts, Thai and Arabic vowel marks, accents written as
# a separate mark) and the zero-width joiners that Persian and Indic words hold; anything else
# separates words. Underscores separate words too, so `snake_case` is two words. Apostrophes
# and hyphens split words ("don't" -> "don", "t"; "well-known" -> "well", "known"): this keeps
# the vocabulary small and makes "well-known" and "well known" agree, which is what overlap
# measures want. A run in a script written without spaces (Chinese, Japanese, Thai, Lao, Khmer,
# Burmese) is then split into its words by ICU (`wikisum.core.language.segment`).
_JOINERS = "\u200c\u200d"
_ASCII_WORD = re.compile(r"[^\W_]+")

# A candidate sentence end: terminal punctuation, optional closing quotes/brackets, whitespace.
# Whether it really ends a sentence is decided in `sentences` by looking at both neighbours.
# Two kinds: the Latin stops (which abbreviations and initials also use), followed by
# whitespace; and the stops of other scripts (Devanagari danda, Arabic and Urdu question mark and
# full stop, Armenian, Ethiopic, Burmese, Tibetan, Khmer, Mongolian, Syriac, the ideographic
# full stops), with or without a space after them.
_BOUNDARY = re.compile(
    r"(?P<latin>[.!?]+)(?P<latin_close>[\"'”’»)\]]*)(?P<latin_space>\s+)"
    r"|(?P<script>[\u0964\u0965\u061f\u06d4\u0589\u1362\u1367\u1368\u104b\u0f0d\u0f0e"
    r"\u17d4\u17d5\u1803\u0700\u0701\u3002\uff01\uff0e\uff1f\uff61‼⁇⁈⁉]+)"
    r"(?P<script_close>[\"'”’»)\]」』）】〕〉》]*)(?P<script_space>\s*)"
)

# Blank lines are paragraph breaks, and a sentence never spans two paragraphs.
_PARAGRAPH_BREAK = re.compile(r"\n[ \t\r\f\v]*\n\s*")

# Opening quotes/brackets that may precede the first letter of the next sentence.
_OPENERS = "\"'“‘«(["

# Lowercased tokens (without the final period) that are almost always abbreviations when followed
# by a period. "etc" is left out on purpose: it ends sentences at least as often as not.
_ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "dr", "prof", "st", "jr", "sr", "sen", "rep", "gov", "gen", "col",
        "lt", "capt", "sgt", "rev", "hon", "mt", "ft", "vs", "no", "nos", "vol", "vols", "fig",
        "figs", "pp", "ed", "eds", "approx", "ca", "cf", "al", "inc", "ltd", "co", "corp", "dept",
        "univ", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov",
        "dec",
    }
)

# Shortest content word, in characters: two in a listed language (single letters are fragments
# of elisions and abbreviations, initials, list markers), three in any other language, whose
# function words are not listed but are mostly one or two letters long.
_MIN_CHARS_LISTED = 2
_MIN_CHARS_UNLISTED = 3
# Scripts in which one character is a syllable or a word: Han, kana, Hangul, Yi, and the
# scripts ICU segments with a dictionary.
_SYLLABIC = re.compile("[\u0e00-\u0eff\u1000-\u109f\u1780-\u17ff\u1100-\u11ff\u3005-\u3007"
                       "\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf"
                       "\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003134f]")

# Tokens made of single letters joined by periods: "e.g", "i.e", "U.S", "a.m". Also a lone
# capital letter, i.e. an initial as in "J. R. R. Tolkien".
_DOTTED = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]|[^\W\d_]", re.UNICODE)


def _mark_ranges(first: int, last: int) -> str:
    """The combining marks (Mn, Mc, Me) from ``first`` to ``last`` as a regex class's ranges."""
    ranges, start, previous = [], None, None
    for cp in range(first, last + 1):
        if unicodedata.category(chr(cp)) in ("Mn", "Mc", "Me"):
            if start is None:
                start = cp
            previous = cp
        elif start is not None:
            ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(previous))}")
            start = None
    if start is not None:
        ranges.append(f"{re.escape(chr(start))}-{re.escape(chr(previous))}")
    return "".join(ranges)


@functools.cache
def _word_rest() -> str:
    r"""What a word runs on over after its first character, as a regex: letters, digits, the
    combining marks of the Basic Multilingual Plane and the joiners. The class of marks is read
    from the Unicode database on first use (about 20 ms), which importing this module should
    not pay. With underscores replaced by spaces first, `\w` is "a letter or digit" here."""
    return f"[\\w{_mark_ranges(0x300, 0xFFFF)}{_JOINERS}]*"


@functools.cache
def _word_pattern() -> re.Pattern[str]:
    """The word pattern for text within the Basic Multilingual Plane. A class of BMP
    characters alone is matched in constant time per character, so this pattern is as fast as
    the plain one."""
    return re.compile(f"[^\\W_]{_word_rest()}")


@functools.cache
def _astral_word_pattern() -> re.Pattern[str]:
    """The word pattern for text with characters beyond the BMP (Adlam, Chakma, Sharada, CJK
    extension B, ...): their marks too, in a second class tried at a word's end."""
    astral = _mark_ranges(0x10000, 0x1FFFF) + _mark_ranges(0xE0100, 0xE01EF)
    return re.compile(f"[^\\W_]{_word_rest()}(?:[{astral}]{_word_rest()})*")


def words(text: str) -> list[str]:
    """Lowercased word tokens of text in any script: runs of Unicode letters, digits and the
    marks inside words, split on everything else (underscores included), and runs of a script
    written without spaces split into ICU's words (after putting the text in Unicode's composed
    form, NFC, so that marks stored in another order give the same word)."""
    text = text.lower()
    if text.isascii():  # no marks, no script without spaces: the plain pattern
        return _ASCII_WORD.findall(text)
    if "_" in text:
        text = text.replace("_", " ")
    tokens = _word_pattern().findall(text)
    # Typographic quotes and dashes leave every word ASCII: one join, no scan of the text.
    # Otherwise a scan of the words alone says whether a script ICU segments is there.
    joined = "".join(tokens)
    if joined.isascii() or not language.needs_dictionary_or_astral(joined):
        return tokens
    # ICU's dictionaries know composed text: Burmese marks stored out of canonical order would
    # cut a syllable in two.
    if not unicodedata.is_normalized("NFC", text):
        text = unicodedata.normalize("NFC", text)
        tokens = _word_pattern().findall(text)
    if language.has_astral(joined):
        tokens = _astral_word_pattern().findall(text)
    out: list[str] = []
    for token in tokens:
        if language.needs_dictionary(token):
            out.extend(language.segment(token))
        else:
            out.append(token)
    return out


def content_words(text: str, lang: str | None = "en") -> list[str]:
    """The `words` of `text` that carry content, in order, with repeats: what the clone filter
    measures a lead's recall by, SumBasic weighs and the redundancy metric counts repeats of.

    Dropped: function words of the language (`wikisum.core.stopwords`; the tag may carry a
    region, "de-CH"), tokens made only of digits ("2019", "15") and single characters. For a
    language that is not listed (or None) the English list is used and tokens shorter than three
    characters are dropped as well, a language-neutral stand-in for that language's own list;
    a word of a script in which one character is a syllable or a word (Chinese, Japanese, Korean,
    Thai, Lao, Khmer, Burmese) needs only two characters, since most of its content words have
    two and its particles one.
    """
    key = language_key(lang)
    stop = FUNCTION_WORDS[key] if key else ENGLISH
    min_chars = _MIN_CHARS_LISTED if key else _MIN_CHARS_UNLISTED
    return [w for w in words(text)
            if len(w) >= (_MIN_CHARS_LISTED if _SYLLABIC.match(w) else min_chars)
            and w not in stop and not w.isdigit()]


def sentences(text: str) -> list[str]:
    """Splits text into sentences with a light, deterministic heuristic.

    A sentence ends at `.`, `!` or `?` (plus any closing quotes or brackets) followed by
    whitespace and then an uppercase letter, a letter of a script without case, a digit or an
    opening quote; a blank line always ends one. A period after a known abbreviation ("Dr.",
    "Inc.", "e.g.") or an initial ("J.") does not end a sentence. The stops of other scripts
    (。！？ । ॥ ؟ ۔ ։ ። ။ ...) end a sentence wherever text follows them, with or without a
    space. Whitespace inside each sentence is collapsed to single spaces and empty sentences
    are dropped. Scripts that mark no sentence end (Thai, Lao) give one sentence a paragraph.
    """
    result: list[str] = []
    for paragraph in _PARAGRAPH_BREAK.split(text):
        start = 0
        for match in _BOUNDARY.finditer(paragraph):
            if _ends_sentence(paragraph, match):
                close = "latin_close" if match.group("latin") else "script_close"
                _append(result, paragraph[start : match.end(close)])
                start = match.end()
        _append(result, paragraph[start:])
    return result


def _ends_sentence(text: str, match: re.Match[str]) -> bool:
    after = text[match.end() : match.end() + 2]
    if not after:
        return False
    if match.group("script"):
        return True
    first = after[0]
    if first in _OPENERS and len(after) > 1:
        first = after[1]
    if not (first.isupper() or first.isdigit() or after[0] in _OPENERS
            or language.is_caseless_letter(first)):
        return False
    if match.group("latin") != "." or match.group("latin_close"):
        # "!", "?", "..." or a period inside closing quotes: never an abbreviation.
        return True
    token = text[: match.start()].rsplit(None, 1)[-1] if text[: match.start()].strip() else ""
    token = token.lstrip(_OPENERS)
    if token.lower() in _ABBREVIATIONS:
        return False
    return _DOTTED.fullmatch(token) is None


def _append(result: list[str], sentence: str) -> None:
    normalised = " ".join(sentence.split())
    if normalised:
        result.append(normalised)
