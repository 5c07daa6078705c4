"""Filters for documents that would leak the target: Wikipedia clones and the article itself.

Liu et al. (2018, "Generating Wikipedia by Summarizing Long Sequences") drop a source document
that is a copy of the Wikipedia article, detected by the recall of the article's unigrams in the
document; here the article is its lead, the text the model learns to produce. A model trained on
pairs whose input contains the target would learn to copy.

Two measures of that recall (`CLONE_MEASURES`): ``unigram``, the paper's, over all of the lead's
distinct words, and ``content``, over its content words only
(`wikisum.core.text.content_words`). Unigram recall counts function words, which any long page
in the language holds, so a long page that is not a copy can recall more than half of a short
lead's words; ``bench/clones.py`` measures both.
"""

from __future__ import annotations

import unicodedata

from wikisum.core.text import content_words, words
from wikisum.pipeline.urls import normalize_title, wikipedia_title

DEFAULT_CLONE_THRESHOLD = 0.5

CLONE_MEASURES = ("unigram", "content")
DEFAULT_CLONE_MEASURE = "content"


def lead_recall(lead: str, document_text: str) -> float:
    """Share of the lead's distinct words that occur in the document; 0.0 for an empty lead.

    Words are `wikisum.core.text.words` tokens, so the comparison ignores case and punctuation.
    """
    lead_words = set(words(lead))
    if not lead_words:
        return 0.0
    return len(lead_words & set(words(document_text))) / len(lead_words)


def content_recall(lead: str, document_text: str, lang: str | None = "en") -> float:
    """Share of the lead's distinct content words (`content_words`) that occur in the document.

    0.0 when the lead has no content words. The document's words are matched as `words` yields
    them; only the lead is filtered.
    """
    lead_words = set(content_words(lead, lang))
    if not lead_words:
        return 0.0
    return len(lead_words & set(words(document_text))) / len(lead_words)


def clone_recall(lead: str, document_text: str, measure: str = DEFAULT_CLONE_MEASURE,
                 lang: str | None = "en") -> float:
    """The lead's recall in the document by `measure`, one of `CLONE_MEASURES`.

    ``unigram`` is `lead_recall` and ignores `lang`; ``content`` is `content_recall`.
    """
    return recall_of(lead_words(lead, measure, lang), set(words(document_text)))


def lead_words(lead: str, measure: str = DEFAULT_CLONE_MEASURE,
               lang: str | None = "en") -> frozenset[str]:
    """The lead's distinct words that `measure` recalls (all of them, or its content words):
    computed once per article, then :func:`recall_of` each reference's words."""
    if measure == "unigram":
        return frozenset(words(lead))
    if measure == "content":
        return frozenset(content_words(lead, lang))
    raise ValueError(f"unknown clone measure {measure!r}; expected one of {CLONE_MEASURES}")


def recall_of(lead: frozenset[str], document_words: set[str]) -> float:
    """The share of ``lead`` (from :func:`lead_words`) among a document's words; 0.0 for an
    empty lead."""
    return len(lead & document_words) / len(lead) if lead else 0.0


def is_clone(lead: str, document_text: str, threshold: float = DEFAULT_CLONE_THRESHOLD) -> bool:
    """Whether the document recalls strictly more than `threshold` of the lead's words."""
    return lead_recall(lead, document_text) > threshold


def is_self_page(url: str, title: str) -> bool:
    """Whether `url` is the Wikipedia page titled `title`, in any language edition: desktop or
    mobile, `/wiki/`, `?title=` or a language variant's path (`/zh-tw/`, `/sr-el/`), the title
    raw or percent-encoded (`wikisum.pipeline.urls.wikipedia_title`).

    Titles compare as MediaWiki does: underscores equal spaces, the first letter is
    case-insensitive ("iPod" and "IPod" are the same page) and Unicode's composed and
    decomposed spellings of a letter are the same (NFC); the rest is case-sensitive.
    """
    parsed = wikipedia_title(url)
    if parsed is None:
        return False
    wanted = normalize_title(unicodedata.normalize("NFC", title))
    return bool(wanted) and parsed[1] == wanted
