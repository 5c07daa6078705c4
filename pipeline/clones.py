"""Filters for documents that would leak the target: Wikipedia clones and the article itself.

Liu et al. (2018, "Generating Wikipedia by Summarizing Long Sequences") drop a source document
that is a copy of the Wikipedia article, detected by the recall of the article's unigrams in the
document; here the article is its lead, the text the model learns to produce. A model trained on
pairs whose input contains the target would learn to copy.
"""

from __future__ import annotations

from wikisum.pipeline.text import words
from wikisum.pipeline.urls import normalize_title, wikipedia_title

DEFAULT_CLONE_THRESHOLD = 0.5


def lead_recall(lead: str, document_text: str) -> float:
    """Share of the lead's distinct words that occur in the document; 0.0 for an empty lead.

    Words are `wikisum.pipeline.text.words` tokens, so the comparison ignores case and punctuation.
    """
    lead_words = set(words(lead))
    if not lead_words:
        return 0.0
    return len(lead_words & set(words(document_text))) / len(lead_words)


def is_clone(lead: str, document_text: str, threshold: float = DEFAULT_CLONE_THRESHOLD) -> bool:
    """Whether the document recalls strictly more than `threshold` of the lead's words."""
    return lead_recall(lead, document_text) > threshold


def is_self_page(url: str, title: str) -> bool:
    """Whether `url` is the Wikipedia page titled `title`, in any language edition.

    Titles compare as MediaWiki does: underscores equal spaces and the first letter is
    case-insensitive ("iPod" and "IPod" are the same page); the rest is case-sensitive.
    """
    parsed = wikipedia_title(url)
    if parsed is None:
        return False
    wanted = normalize_title(title)
    return bool(wanted) and parsed[1] == wanted
