"""Tokenisation shared by the clone filter, the paragraph filter, the extractors and the
metrics.

The functions are deliberately simple and deterministic: they define what a "word", a "content
word" and a "sentence" are for the whole project, so that a recall computed by the clone filter
and a score computed by an extractor count the same units.
"""

from __future__ import annotations

import re

from wikisum.core.stopwords import ENGLISH, FUNCTION_WORDS, language_key

# A word is a maximal run of Unicode letters or digits. `[^\W_]` is "a word character that is not
# an underscore", so `snake_case` is two words. Apostrophes and hyphens split words too
# ("don't" -> "don", "t"; "well-known" -> "well", "known"): this keeps the vocabulary small and
# makes "well-known" and "well known" agree, which is what overlap measures want.
_WORD = re.compile(r"[^\W_]+")

# A candidate sentence end: terminal punctuation, optional closing quotes/brackets, whitespace.
# Whether it really ends a sentence is decided in `sentences` by looking at both neighbours.
_BOUNDARY = re.compile(r"([.!?]+)([\"'”’»)\]]*)(\s+)")

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

# Tokens made of single letters joined by periods: "e.g", "i.e", "U.S", "a.m". Also a lone
# capital letter, i.e. an initial as in "J. R. R. Tolkien".
_DOTTED = re.compile(r"(?:[^\W\d_]\.)+[^\W\d_]|[^\W\d_]", re.UNICODE)


def words(text: str) -> list[str]:
    """Lowercased word tokens: maximal runs of Unicode letters/digits, underscores excluded."""
    return _WORD.findall(text.lower())


def content_words(text: str, lang: str | None = "en") -> list[str]:
    """The `words` of `text` that carry content, in order, with repeats: what the clone filter
    measures a lead's recall by, SumBasic weighs and the redundancy metric counts repeats of.

    Dropped: function words of the language (`wikisum.core.stopwords`; the tag may carry a
    region, "de-CH"), tokens made only of digits ("2019", "15") and single characters. For a
    language that is not listed (or None) the English list is used and tokens shorter than three
    characters are dropped as well, a language-neutral stand-in for that language's own list.
    """
    key = language_key(lang)
    stop = FUNCTION_WORDS[key] if key else ENGLISH
    min_chars = _MIN_CHARS_LISTED if key else _MIN_CHARS_UNLISTED
    return [w for w in words(text)
            if len(w) >= min_chars and w not in stop and not w.isdigit()]


def sentences(text: str) -> list[str]:
    """Splits text into sentences with a light, deterministic heuristic.

    A sentence ends at `.`, `!` or `?` (plus any closing quotes or brackets) followed by
    whitespace and then an uppercase letter, a digit or an opening quote; a blank line always ends
    one. A period after a known abbreviation ("Dr.", "Inc.", "e.g.") or an initial ("J.") does not
    end a sentence. Whitespace inside each sentence is collapsed to single spaces and empty
    sentences are dropped.
    """
    result: list[str] = []
    for paragraph in _PARAGRAPH_BREAK.split(text):
        start = 0
        for match in _BOUNDARY.finditer(paragraph):
            if _ends_sentence(paragraph, match):
                _append(result, paragraph[start : match.end(2)])
                start = match.end()
        _append(result, paragraph[start:])
    return result


def _ends_sentence(text: str, match: re.Match[str]) -> bool:
    after = text[match.end() : match.end() + 2]
    if not after:
        return False
    first = after[0]
    if first in _OPENERS and len(after) > 1:
        first = after[1]
    if not (first.isupper() or first.isdigit() or after[0] in _OPENERS):
        return False
    if match.group(1) != "." or match.group(2):
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
