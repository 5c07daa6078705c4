"""Paragraphs of a page's text: split one per line, and the rules that drop a paragraph that is
not the article's text (page furniture, lines without a letter; for plain text, C4's line rules).

Both stages use them: ingest on extracted pages (:mod:`wikisum.pipeline.webtext`), and
summarising new text (:mod:`wikisum.generation.inference`) on what a user passes.
"""

from __future__ import annotations

import functools
import re

from wikisum.core.text import words

# trafilatura renders each <li> as "- item"; the marker is formatting, not text.
_LIST_MARKER = re.compile(r"^(?:[-*•·▪◦]\s+)+")

# Short lines are kept: on real pages (bench/extraction.py) a line under five words is as often
# a heading, a list item or a caption of the article as page furniture, and the furniture is
# recognised by what it says (`wikisum.core.boilerplate`). A larger value drops every
# shorter paragraph as ``too_few_words`` (C4, Raffel et al. 2020, keeps lines of 5 words).
DEFAULT_MIN_WORDS = 1

# Text that no main-text extraction has seen (a WET conversion: every visible line of the page,
# menus and buttons included; a text/plain body) gets C4's line rules as well: at least this
# many words, and a line without sentence punctuation only when it reads like prose.
PLAIN_TEXT_MIN_WORDS = 5
_MIN_UNPUNCTUATED_WORDS = 15
_MAX_CAPITALISED_SHARE = 0.5
_MENU_SEPARATORS = frozenset("|•·»«›‹>¦")
# `.`, `!`, `?`, the ellipsis and CJK full stops, at a word end (followed by a space, a closing
# quote or bracket, or the end), so that "3.5" and "example.com" are not sentence ends.
_SENTENCE_END = re.compile(r"[.!?…。！？](?=[\s\"'”’»)\]]|$)")


def split_paragraphs(text: str) -> list[str]:
    """Splits extracted text into paragraphs: one per non-empty line, whitespace collapsed.

    Leading list markers ("- ", "• ") are removed.
    """
    paragraphs = []
    for line in text.splitlines():
        paragraph = _LIST_MARKER.sub("", " ".join(line.split()))
        if paragraph:
            paragraphs.append(paragraph)
    return paragraphs


def paragraph_drop_reason(paragraph: str, *, min_words: int = DEFAULT_MIN_WORDS,
                          main_text: bool = True) -> str | None:
    """Why a paragraph is not the article's text, or None to keep it.

    Reasons, checked in this order:
      - "no_letters": not a single letter ("12:30", "* * *", "2024").
      - a `wikisum.core.boilerplate` reason: "cookie", "share", "read_more",
        "call_to_action", "byline" or "navigation".
      - "too_few_words": fewer than `min_words` words (`wikisum.core.text.words`); with the
        default of 1 only a paragraph without a word, which "no_letters" has already taken.
      - "no_sentence", only when `main_text` is False: no sentence-final punctuation, and it
        looks like a menu, a title or a caption rather than prose.

    Args:
        paragraph: One paragraph, as from `split_paragraphs`.
        min_words: The fewest words a kept paragraph has.
        main_text: Whether the paragraph comes from main-text extraction. Plain text (a WET
            conversion, a text/plain page) holds the page's menus and buttons, and gets
            C4's rules too: at least `PLAIN_TEXT_MIN_WORDS` words and "no_sentence".
    """
    if not any(ch.isalpha() for ch in paragraph):
        return "no_letters"
    reason = _boilerplate().boilerplate_reason(paragraph)
    if reason is not None:
        return reason
    if main_text and min_words <= 1:
        return None
    n_words = len(words(paragraph))
    if n_words < (min_words if main_text else max(min_words, PLAIN_TEXT_MIN_WORDS)):
        return "too_few_words"
    if not main_text and _SENTENCE_END.search(paragraph) is None \
            and _looks_like_non_prose(paragraph, n_words):
        return "no_sentence"
    return None


def _looks_like_non_prose(paragraph: str, n_words: int) -> bool:
    if n_words < _MIN_UNPUNCTUATED_WORDS or any(ch in _MENU_SEPARATORS for ch in paragraph):
        return True
    alphabetic = [token for token in paragraph.split() if token[0].isalpha()]
    capitalised = sum(1 for token in alphabetic if token[0].isupper())
    return capitalised > _MAX_CAPITALISED_SHARE * len(alphabetic)


def filter_paragraphs(paragraphs: list[str], *, min_words: int = DEFAULT_MIN_WORDS,
                      main_text: bool = True) -> tuple[list[str], list[tuple[str, str]]]:
    """The paragraphs kept, in order, and the (paragraph, reason) of those dropped
    (`paragraph_drop_reason`)."""
    kept, dropped = [], []
    for paragraph in paragraphs:
        reason = paragraph_drop_reason(paragraph, min_words=min_words, main_text=main_text)
        if reason is None:
            kept.append(paragraph)
        else:
            dropped.append((paragraph, reason))
    return kept, dropped


@functools.cache
def _boilerplate():
    """wikisum.core.boilerplate, imported on first use: its patterns take about 20 ms to
    compile, which `wikisum --help` (reading ingest's defaults from here) should not pay."""
    from wikisum.core import boilerplate

    return boilerplate
