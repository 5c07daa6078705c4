"""Metrics of generated summaries: ROUGE, DUC-style 75-byte recall, redundancy and perplexity,
and for whole articles summary-level ROUGE-Lsum and ROUGE per section. Pure functions over
strings and numbers; :mod:`wikisum.generation.evaluation` scores predictions files with them.

ROUGE is :mod:`wikisum.core.rouge`, one reference per example, in each example's language (a
language per example, or one for all): for English, google-research ``rouge-score`` with Porter
stemming and its default tokenizer (lower-cased ASCII letters and digits), bit for bit; for any
other language the project's words of every script with the language's Snowball stemmer; None
is English. Scores are macro-averaged: the mean over examples of each example's F1, precision
and recall. :func:`rouge_warnings` says what could not be scored as it should (text in another
script scored as English, unsegmented runs, no stemmer), with counts.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

from wikisum.core import rouge as multilingual
from wikisum.core.articlelayout import ArticleSection
from wikisum.core.text import content_words, sentences
from wikisum.generation import structure

# ROUGE-L is rouge-score's "rougeL": one longest common subsequence over the whole text, no
# sentence splitting. That is the computation of tensor2tensor's rouge_l_sentence_level, which
# the WikiSum paper (Liu et al., 2018) reports (it treats each summary as a single "sentence"),
# and it does not depend on line breaks, which the models' outputs do not reliably contain
# ("rougeLsum" would need sentences split by newlines). One difference remains: tensor2tensor's
# F-measure weights recall by beta = P / R, rouge-score's is the plain F1 (beta = 1).
# Whole articles, whose sections and sentences give the lines, add "rougeLsum" beside it
# (summary_lines).
ROUGE_TYPES = multilingual.ROUGE_TYPES
DUC_LIMIT_BYTES = 75
PARTS = ("f", "p", "r")


def _check_pairs(predictions: Sequence[str], references: Sequence[str]) -> None:
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    if not predictions:
        raise ValueError("no predictions to score")


Langs = Sequence[str | None] | str | None  # one language per example, or one for all


def _lang_of(langs: Langs, i: int) -> str | None:
    return langs if langs is None or isinstance(langs, str) else langs[i]


def rouge_per_example(predictions: Sequence[str], references: Sequence[str],
                      langs: Langs = None) -> list[dict[str, dict[str, float]]]:
    """ROUGE-1, -2 and -L of each prediction against its reference, in its language (``langs``:
    one per example, or one for all; None is English):
    ``[{"rouge1": {"f", "p", "r"}, "rouge2": ..., "rougeL": ...}, ...]``, fractions in [0, 1]."""
    _check_pairs(predictions, references)
    if langs is not None and not isinstance(langs, str) and len(langs) != len(predictions):
        raise ValueError(f"{len(predictions)} predictions but {len(langs)} languages")
    return [multilingual.score(reference, prediction, _lang_of(langs, i))
            for i, (prediction, reference) in enumerate(zip(predictions, references,
                                                            strict=True))]


def rouge_warnings(predictions: Sequence[str], references: Sequence[str],
                   langs: Langs = None) -> list[str]:
    """What ROUGE could not score as it should in these pairs, one line per kind with counts of
    the references concerned (:meth:`wikisum.core.rouge.Coverage.warnings`); [] when
    nothing."""
    _check_pairs(predictions, references)
    return multilingual.coverage_warnings(references, langs)


def _mean(per_example: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    n = len(per_example)
    return {name: {part: sum(e[name][part] for e in per_example) / n for part in ("f", "p", "r")}
            for name in ROUGE_TYPES}


def rouge(predictions: Sequence[str], references: Sequence[str], langs: Langs = None
          ) -> dict[str, dict[str, float]]:
    """Mean ROUGE-1, -2 and -L (F1, precision, recall) over examples; per-example scores are
    :func:`rouge_per_example`. ``{"rouge1": {"f": .., "p": .., "r": ..}, "rouge2", "rougeL"}``."""
    return _mean(rouge_per_example(predictions, references, langs))


def summary_lines(sections: Sequence[ArticleSection]) -> str:
    """An article as summary-level ROUGE-Lsum reads it: one sentence a line
    (:func:`wikisum.core.text.sentences`), each section's title on a line of its own before
    its text's sentences (the lead has none)."""
    lines = []
    for section in sections:
        title = " ".join(section.title.split())
        if title:
            lines.append(title)
        lines += sentences(section.text)
    return "\n".join(lines)


def rouge_lsum(predicted: Sequence[ArticleSection],
               reference: Sequence[ArticleSection], lang: str | None = None) -> dict[str, float]:
    """Summary-level ROUGE-Lsum (rouge-score's "rougeLsum", stemming, in ``lang``) of one
    article: ``{"f", "p", "r"}``. Each reference sentence takes the union of its longest
    common subsequences with every predicted sentence, so sentences matched in another order
    still count, where ROUGE-L's one subsequence over the whole text keeps one order."""
    return multilingual.score(summary_lines(reference), summary_lines(predicted), lang,
                              ("rougeLsum",))["rougeLsum"]


def section_rouge(predicted: Sequence[ArticleSection], reference: Sequence[ArticleSection],
                  lang: str | None = None) -> tuple[dict[str, dict[str, float]], int]:
    """ROUGE-1/2/L of one article per section: the mean over the matched pairs (the leads and
    the sections whose headings match, :func:`wikisum.generation.structure.matched_sections`)
    and the number of pairs. Sections whose headings match nothing are left out (the
    structure scores count them); no pair at all scores 0."""
    pairs = structure.matched_sections(predicted, reference)
    if not pairs:
        return {name: dict.fromkeys(PARTS, 0.0) for name in ROUGE_TYPES}, 0
    return (_mean(rouge_per_example([p for p, _ in pairs], [r for _, r in pairs], lang)),
            len(pairs))


def truncate_bytes(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding fits in ``limit`` bytes; a character
    that the limit would split is dropped whole. A lone surrogate (text that is not UTF-8)
    counts as the three bytes it would take and is kept as it is, never an error."""
    data = text.encode("utf-8", errors="surrogatepass")
    if len(data) <= limit:
        return text
    end = max(limit, 0)
    while end > 0 and 0x80 <= data[end] < 0xC0:  # data[end] continues the character before
        end -= 1
    return data[:end].decode("utf-8", errors="surrogatepass")


def duc_recall(predictions: Sequence[str], references: Sequence[str],
               limit_bytes: int = DUC_LIMIT_BYTES, langs: Langs = None) -> dict[str, float]:
    """DUC-2004-style ROUGE recall (ROUGE-1.5.5 ``-b 75``): each prediction is cut to its first
    ``limit_bytes`` bytes before scoring, so a longer output gains nothing; references are whole.
    Returns the mean recall of each ROUGE type, ``{"rouge1": .., "rouge2": .., "rougeL": ..}``.
    """
    if limit_bytes < 1:
        raise ValueError(f"limit_bytes must be >= 1, got {limit_bytes}")
    cut = [truncate_bytes(p, limit_bytes) for p in predictions]
    means = rouge(cut, references, langs)
    return {name: means[name]["r"] for name in ROUGE_TYPES}


def redundancy(predictions: Sequence[str], lang: str | None = "en",
               ignore: Collection[str] = frozenset()) -> dict[str, float]:
    """How much outputs repeat themselves (what WFE is meant to cut):

    share_repeating: the share of outputs in which some content word occurs twice or more;
    repeated_tokens_per_output: the mean number of content tokens that repeat a word seen
    earlier in the same output ("a cat saw a cat cat" has 2).

    Content words are :func:`wikisum.core.text.content_words` of ``lang``, less the words in
    ``ignore`` (a marker such as "unk" that stands for different words each time).
    """
    if not predictions:
        raise ValueError("no predictions to measure")
    repeating = repeated = 0
    for text in predictions:
        extra = repeats(text, lang, ignore)
        repeated += extra
        repeating += extra > 0
    n = len(predictions)
    return {"share_repeating": repeating / n, "repeated_tokens_per_output": repeated / n}


def repeats(text: str, lang: str | None = "en", ignore: Collection[str] = frozenset()) -> int:
    """Content tokens of ``text`` that repeat a word seen earlier in it."""
    words = [w for w in content_words(text, lang) if w not in ignore]
    return len(words) - len(set(words))


def perplexity(total_nll_nats: float, total_tokens: int) -> float:
    """Per-wordpiece perplexity ``exp(nll / tokens)`` from the summed NLL (nats) of the target
    tokens (</s> included, as :class:`wikisum.models.base.ModelOutput` counts them); inf on
    overflow."""
    if total_tokens <= 0:
        raise ValueError(f"perplexity needs a positive token count, got {total_tokens}")
    if not math.isfinite(total_nll_nats) or total_nll_nats < 0:
        raise ValueError(f"total NLL must be a finite number of nats >= 0, got {total_nll_nats}")
    mean = total_nll_nats / total_tokens
    return math.exp(mean) if mean < 709.0 else math.inf
