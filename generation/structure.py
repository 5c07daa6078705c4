"""How well a generated whole article is organised (Liu et al. 2018, section 6): its headings
against the reference's, its number of sections, and how many of its sections repeat an
earlier one.

Sections are :class:`wikisum.core.articlelayout.ArticleSection` lists, the lead first (title
""). Headings are compared after case folding and with runs of whitespace and punctuation
made one space (``Early life`` matches ``early  life.``), each reference heading matched at
most once. A section repeats an earlier one when their bigram overlap (ROUGE-2 F1 on the words
of :func:`wikisum.core.text.words`, every script segmented) is above a threshold.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

from wikisum.core.articlelayout import ArticleSection
from wikisum.core.text import words

REPEAT_THRESHOLD = 0.5  # ROUGE-2 F1 above which a section repeats an earlier one

_WORD = re.compile(r"\w+")


def heading_key(title: str) -> str:
    """A heading as it is compared: case folded, punctuation and whitespace runs one space."""
    return " ".join(_WORD.findall(title.casefold().replace("_", " ")))


def _ratio(matched: int, total: int, other: int) -> float:
    # nothing to find and nothing found is perfect; something on one side only is 0
    return matched / total if total else (1.0 if other == 0 else 0.0)


def heading_scores(predicted: Sequence[ArticleSection],
                   reference: Sequence[ArticleSection]) -> dict[str, float]:
    """Precision, recall and F1 of the predicted headings (the sections after the lead)
    against the reference's, each heading matched once at most."""
    pred = Counter(heading_key(s.title) for s in predicted[1:])
    ref = Counter(heading_key(s.title) for s in reference[1:])
    matched = sum((pred & ref).values())
    n_pred, n_ref = sum(pred.values()), sum(ref.values())
    p, r = _ratio(matched, n_pred, n_ref), _ratio(matched, n_ref, n_pred)
    return {"precision": p, "recall": r, "f1": 2 * p * r / (p + r) if p + r else 0.0}


def _bigrams(text: str) -> Counter:
    found = words(text)
    return Counter(zip(found, found[1:], strict=False))


def bigram_f1(a: str, b: str) -> float:
    """ROUGE-2 F1 of two texts on their words (:func:`wikisum.core.text.words`, no stemming)."""
    x, y = _bigrams(a), _bigrams(b)
    overlap = sum((x & y).values())
    if not overlap:
        return 0.0
    p, r = overlap / sum(x.values()), overlap / sum(y.values())
    return 2 * p * r / (p + r)


def repeated_share(sections: Sequence[ArticleSection],
                   threshold: float = REPEAT_THRESHOLD) -> float:
    """The share of sections after the first with text whose text repeats an earlier
    section's (bigram F1 above ``threshold``); 0 for an article of one section."""
    texts = [s.text for s in sections if s.text.strip()]
    if len(texts) < 2:
        return 0.0
    repeats = sum(any(bigram_f1(texts[k], texts[j]) > threshold for j in range(k))
                  for k in range(1, len(texts)))
    return repeats / (len(texts) - 1)


def matched_indices(predicted: Sequence[ArticleSection],
                    reference: Sequence[ArticleSection]) -> list[tuple[int, int]]:
    """(predicted index, reference index) of the leads, ``(0, 0)``, and of each predicted
    section whose heading matches a reference heading: in the predicted order, each reference
    section used once, the first unused of its heading taken."""
    pairs = []
    if predicted and reference:
        pairs.append((0, 0))
    unused: dict[str, list[int]] = {}
    for j, section in enumerate(reference[1:], 1):
        unused.setdefault(heading_key(section.title), []).append(j)
    for i, section in enumerate(predicted[1:], 1):
        candidates = unused.get(heading_key(section.title))
        if candidates:
            pairs.append((i, candidates.pop(0)))
    return pairs


def matched_sections(predicted: Sequence[ArticleSection],
                     reference: Sequence[ArticleSection]) -> list[tuple[str, str]]:
    """(predicted text, reference text) of the lead and of each section whose heading matches
    a reference heading (:func:`matched_indices`), for per-section ROUGE."""
    return [(predicted[i].text, reference[j].text)
            for i, j in matched_indices(predicted, reference)]


def sections_from_json(items: object) -> list[ArticleSection]:
    """Sections as a predictions record holds them (``[{"title": str, "text": str}, ...]``,
    the lead first) as :class:`ArticleSection` s.

    Raises:
        ValueError: ``items`` is not a list of such objects (the message says which item).
    """
    if not isinstance(items, list):
        raise ValueError(f"sections must be a list, not {type(items).__name__}")
    out = []
    for k, item in enumerate(items):
        if not (isinstance(item, dict) and isinstance(item.get("title"), str)
                and isinstance(item.get("text"), str)):
            raise ValueError(f"section {k} is not an object with a text title and text")
        out.append(ArticleSection(item["title"], item["text"]))
    return out


def structure_scores(predicted: Sequence[ArticleSection], reference: Sequence[ArticleSection],
                     threshold: float = REPEAT_THRESHOLD) -> dict[str, float]:
    """One article's structure scores: heading precision/recall/F1, the number of sections
    (the lead counted) of each side, and the predicted article's repeated-section share."""
    headings = heading_scores(predicted, reference)
    return {"heading_precision": headings["precision"], "heading_recall": headings["recall"],
            "heading_f1": headings["f1"], "sections": float(len(predicted)),
            "reference_sections": float(len(reference)),
            "repeated_sections": repeated_share(predicted, threshold)}
