"""Paragraphs of a page's text: split one per line, and the rules that drop a paragraph that is
not the article's text (page furniture, lines without a letter; for plain text, C4's line rules).

Both stages use them: ingest on extracted pages (:mod:`wikisum.pipeline.webtext`), and
summarising new text (:mod:`wikisum.generation.inference`) on what a user passes.
"""

from __future__ import annotations

import functools
import re

from wikisum.core import language
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
# The sentence-final punctuation of the other scripts: Unicode's Sentence_Terminal characters
# beyond ASCII (Unicode 16.0, as ICU 77 lists them: the Devanagari danda and double danda, the
# Arabic question mark and full stop, the Urdu full stop, Armenian, Syriac, N'Ko, Ethiopic,
# Burmese (its full stop; its little section, a comma, is not one), Khmer, Mongolian,
# Balinese, ...) and the Tibetan shad, at a word end as above; and
# the ideographic and full-width stops wherever they follow a letter or a closing mark (Chinese
# and Japanese write the next sentence straight after them; a stop after a digit numbers a
# list, one that opens a line ends nothing).
_CLOSE = "\"'”’»)\\]」』）】〕〉》"
_SCRIPT_SENTENCE_END = re.compile(
    "[\u0589\u061D-\u061F\u06D4\u0700-\u0702\u07F9\u0837\u0839\u083D-\u083E\u0964-\u0965"
    "\u0F0D-\u0F0E\u104B\u1362\u1367-\u1368\u166E\u1735-\u1736\u17D4-\u17D5\u1803"
    "\u1809\u1944-\u1945\u1AA8-\u1AAB\u1B4E-\u1B4F\u1B5A-\u1B5B\u1B5E-\u1B5F\u1B7D-\u1B7F"
    "\u1C3B-\u1C3C\u1C7E-\u1C7F\u2024\u203C-\u203D\u2047-\u2049\u2CF9-\u2CFB\u2E2E\u2E3C"
    "\u2E53-\u2E54\uA4FF\uA60E-\uA60F\uA6F3\uA6F7\uA876-\uA877\uA8CE-\uA8CF\uA92F"
    "\uA9C8-\uA9C9\uAA5D-\uAA5F\uAAF0-\uAAF1\uABEB\uFE52\uFE56-\uFE57"
    "\U00010A56-\U00010A57\U00010F55-\U00010F59\U00010F86-\U00010F89\U00011047-\U00011048"
    "\U000110BE-\U000110C1\U00011141-\U00011143\U000111C5-\U000111C6\U000111CD"
    "\U000111DE-\U000111DF\U00011238-\U00011239\U0001123B-\U0001123C\U000112A9"
    "\U000113D4-\U000113D5\U0001144B-\U0001144C\U000115C2-\U000115C3\U000115C9-\U000115D7"
    "\U00011641-\U00011642\U0001173C-\U0001173E\U00011944\U00011946\U00011A42-\U00011A43"
    "\U00011A9B-\U00011A9C\U00011C41-\U00011C42\U00011EF7-\U00011EF8\U00011F43-\U00011F44"
    "\U00016A6E-\U00016A6F\U00016AF5\U00016B37-\U00016B38\U00016B44\U00016D6E-\U00016D6F"
    "\U00016E98\U0001BC9F\U0001DA88]"
    f"(?=[\\s{_CLOSE}]|$)"
    f"|(?:(?<=[^\\W\\d_])|(?<=[{_CLOSE}]))[\u3002\uFF01\uFF1F\uFF0E\uFF61\uFE12\uFE15\uFE16]")
# Thai and Lao mark no sentence end: a space closes a clause or a sentence. A run between
# spaces of at least this many words (`wikisum.core.text.words`, which segments them) is
# taken as a sentence; a menu's items ("หน้าแรก ข่าว กีฬา") are one to three words each.
_UNPUNCTUATED_SCRIPT = re.compile("[\u0e00-\u0eff]")
_MIN_CLAUSE_WORDS = 5
_MIN_LIST_ITEMS = 3


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
      - "no_sentence", only when `main_text` is False: no sentence end in any script
        (`has_sentence_end`), and it looks like a menu, a title or a caption rather than
        prose: fewer than 15 words, a menu separator, or mostly capitalised words (counted
        over letters with case only).

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
    if not main_text and not has_sentence_end(paragraph) \
            and _looks_like_non_prose(paragraph, n_words):
        return "no_sentence"
    return None


def has_sentence_end(paragraph: str) -> bool:
    """Whether ``paragraph`` holds the end of a sentence, in any script: `.`, `!`, `?` or the
    ellipsis at a word's end; another script's sentence-final punctuation anywhere (。！？ । ॥ ؟
    ۔ ։ ። ။ ។ ...); or, in Thai and Lao, which mark none, a run of at least
    `_MIN_CLAUSE_WORDS` words between spaces."""
    if _SENTENCE_END.search(paragraph) is not None:
        return True
    if paragraph.isascii():
        return False
    if _SCRIPT_SENTENCE_END.search(paragraph) is not None:
        return True
    return _UNPUNCTUATED_SCRIPT.search(paragraph) is not None and any(
        len(words(run)) >= _MIN_CLAUSE_WORDS for run in paragraph.split()
        if _UNPUNCTUATED_SCRIPT.search(run))


def _looks_like_non_prose(paragraph: str, n_words: int) -> bool:
    """Fewer than `_MIN_UNPUNCTUATED_WORDS` words, a menu separator, or more than half of the
    words that start with a letter with case capitalised, as a title's or a menu's are. Only
    words that start with a letter with case are counted, and only in a line mostly made of
    them: a line in a caseless script (Arabic, Devanagari, Han, Thai, ...) is never a title by
    this test, and is a menu when its items stand between spaces (`_is_item_list`)."""
    if n_words < _MIN_UNPUNCTUATED_WORDS or any(ch in _MENU_SEPARATORS for ch in paragraph):
        return True
    tokens = [token for token in paragraph.split() if token[0].isalpha()]
    cased = [token for token in tokens if token[0].isupper() or token[0].islower()]
    if 2 * len(cased) <= len(tokens):  # mostly a caseless script: capitals tell nothing
        return _is_item_list(paragraph)
    capitalised = sum(1 for token in cased if token[0].isupper())
    return capitalised > _MAX_CAPITALISED_SHARE * len(cased)


def _is_item_list(paragraph: str) -> bool:
    """A line of a script written without spaces (Chinese, Japanese, Thai, ...) whose every
    space-separated run of that script is one or two words: a menu's or a tag list's items,
    where prose runs on for a clause between spaces."""
    runs = [run for run in paragraph.split() if language.needs_dictionary(run)]
    return len(runs) >= _MIN_LIST_ITEMS and all(len(words(run)) <= 2 for run in runs)


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
