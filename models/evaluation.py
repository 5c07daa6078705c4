"""Metrics of generated summaries: ROUGE, DUC-style 75-byte recall, redundancy and perplexity.

Pure functions over strings and numbers; ``wikisum evaluate`` reads a predictions file and prints
:func:`summarize` of its records (and :func:`format_table` of that).

ROUGE is google-research ``rouge-score`` with Porter stemming, its default tokenizer (lower-cased
ASCII letters and digits; other characters separate tokens) and one reference per example.
Scores are macro-averaged: the mean over examples of each example's F1, precision and recall.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

from rouge_score import rouge_scorer
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

# ROUGE-L is rouge-score's "rougeL": one longest common subsequence over the whole text, no
# sentence splitting. That is the computation of tensor2tensor's rouge_l_sentence_level, which
# the WikiSum paper (Liu et al., 2018) reports (it treats each summary as a single "sentence"),
# and it does not depend on line breaks, which the models' outputs do not reliably contain
# ("rougeLsum" would need sentences split by newlines). One difference remains: tensor2tensor's
# F-measure weights recall by beta = P / R, rouge-score's is the plain F1 (beta = 1).
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
STOPWORDS = frozenset(ENGLISH_STOP_WORDS)  # the 318 function words that SumBasic also skips
DUC_LIMIT_BYTES = 75

_WORD = re.compile(r"\w+")


def _scorer() -> rouge_scorer.RougeScorer:
    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)


def _check_pairs(predictions: Sequence[str], references: Sequence[str]) -> None:
    if len(predictions) != len(references):
        raise ValueError(f"{len(predictions)} predictions but {len(references)} references")
    if not predictions:
        raise ValueError("no predictions to score")


def rouge_per_example(predictions: Sequence[str], references: Sequence[str]
                      ) -> list[dict[str, dict[str, float]]]:
    """ROUGE-1, -2 and -L of each prediction against its reference:
    ``[{"rouge1": {"f", "p", "r"}, "rouge2": ..., "rougeL": ...}, ...]``, fractions in [0, 1]."""
    _check_pairs(predictions, references)
    scorer = _scorer()
    out = []
    for prediction, reference in zip(predictions, references, strict=True):
        scores = scorer.score(reference, prediction)  # rouge-score takes (target, prediction)
        out.append({name: {"f": s.fmeasure, "p": s.precision, "r": s.recall}
                    for name, s in scores.items()})
    return out


def _mean(per_example: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    n = len(per_example)
    return {name: {part: sum(e[name][part] for e in per_example) / n for part in ("f", "p", "r")}
            for name in ROUGE_TYPES}


def rouge(predictions: Sequence[str], references: Sequence[str]) -> dict[str, dict[str, float]]:
    """Mean ROUGE-1, -2 and -L (F1, precision, recall) over examples; per-example scores are
    :func:`rouge_per_example`. ``{"rouge1": {"f": .., "p": .., "r": ..}, "rouge2", "rougeL"}``."""
    return _mean(rouge_per_example(predictions, references))


def truncate_bytes(text: str, limit: int) -> str:
    """The longest prefix of ``text`` whose UTF-8 encoding fits in ``limit`` bytes; a character
    that the limit would split is dropped whole."""
    return text.encode("utf-8")[:limit].decode("utf-8", errors="ignore")


def duc_recall(predictions: Sequence[str], references: Sequence[str],
               limit_bytes: int = DUC_LIMIT_BYTES) -> dict[str, float]:
    """DUC-2004-style ROUGE recall (ROUGE-1.5.5 ``-b 75``): each prediction is cut to its first
    ``limit_bytes`` bytes before scoring, so a longer output gains nothing; references are whole.
    Returns the mean recall of each ROUGE type, ``{"rouge1": .., "rouge2": .., "rougeL": ..}``.
    """
    if limit_bytes < 1:
        raise ValueError(f"limit_bytes must be >= 1, got {limit_bytes}")
    cut = [truncate_bytes(p, limit_bytes) for p in predictions]
    means = rouge(cut, references)
    return {name: means[name]["r"] for name in ROUGE_TYPES}


def content_words(text: str, stopwords: frozenset[str] | set[str] = STOPWORDS) -> list[str]:
    """The case-folded alphabetic tokens of ``text`` that are not stopwords, in order."""
    return [w for w in _WORD.findall(text.casefold()) if w.isalpha() and w not in stopwords]


def redundancy(predictions: Sequence[str], stopwords: frozenset[str] | set[str] = STOPWORDS
               ) -> dict[str, float]:
    """How much outputs repeat themselves (what WFE is meant to cut):

    share_repeating: the share of outputs in which some content word occurs twice or more;
    repeated_tokens_per_output: the mean number of content tokens that repeat a word seen
    earlier in the same output ("a cat saw a cat cat" has 2).
    """
    if not predictions:
        raise ValueError("no predictions to measure")
    repeating = repeated = 0
    for text in predictions:
        words = content_words(text, stopwords)
        extra = len(words) - len(set(words))
        repeated += extra
        repeating += extra > 0
    n = len(predictions)
    return {"share_repeating": repeating / n, "repeated_tokens_per_output": repeated / n}


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


REQUIRED = ("id", "prediction", "reference")


def summarize(records: Iterable[Mapping]) -> dict:
    """The metrics ``wikisum evaluate`` prints, from prediction records
    ``{"id", "prediction", "reference", "reference_nll"?, "reference_tokens"?}``.

    Perplexity sums NLL and tokens over the records that have both (a corpus-level figure, not
    a mean of per-example perplexities) and is None when none has.
    """
    records = list(records)
    if not records:
        raise ValueError("no prediction records to evaluate")
    predictions, references = [], []
    nll = 0.0
    tokens = scored = 0
    for i, record in enumerate(records):
        missing = [k for k in REQUIRED if k not in record]
        if missing:
            raise ValueError(f"prediction record {i} (id {record.get('id')!r}) lacks "
                             f"{', '.join(missing)}")
        for key in ("prediction", "reference"):
            if not isinstance(record[key], str):
                raise ValueError(f"prediction record id {record['id']!r}: {key} is "
                                 f"{type(record[key]).__name__}, not text")
        predictions.append(record["prediction"])
        references.append(record["reference"])
        if record.get("reference_nll") is not None and record.get("reference_tokens"):
            nll += float(record["reference_nll"])
            tokens += int(record["reference_tokens"])
            scored += 1
    n = len(records)
    return {
        "examples": n,
        "rouge": rouge(predictions, references),
        "duc_recall_75b": duc_recall(predictions, references),
        "redundancy": redundancy(predictions),
        "prediction_words": sum(len(p.split()) for p in predictions) / n,
        "reference_words": sum(len(r.split()) for r in references) / n,
        "empty_predictions": sum(not p.strip() for p in predictions),
        "perplexity": perplexity(nll, tokens) if tokens else None,
        "perplexity_examples": scored,
        "perplexity_tokens": tokens,
    }


def format_table(metrics: Mapping) -> str:
    """A short plain-text table of :func:`summarize`'s dict; ROUGE in percent."""
    lines = [f"{'metric':<28}{'F1':>8}{'P':>8}{'R':>8}"]
    names = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L"}
    for key, label in names.items():
        s = metrics["rouge"][key]
        lines.append(f"{label:<28}{100 * s['f']:>8.2f}{100 * s['p']:>8.2f}{100 * s['r']:>8.2f}")
    for key, label in names.items():
        lines.append(f"{label + ' recall, 75 bytes':<28}{'':>16}"
                     f"{100 * metrics['duc_recall_75b'][key]:>8.2f}")
    ppl = metrics.get("perplexity")
    rows = [
        ("examples", f"{metrics['examples']}"),
        ("perplexity (per wordpiece)", "n/a" if ppl is None else f"{ppl:.3f}"),
        ("outputs repeating a word", f"{100 * metrics['redundancy']['share_repeating']:.1f}%"),
        ("repeated tokens / output",
         f"{metrics['redundancy']['repeated_tokens_per_output']:.2f}"),
        ("words / output (reference)",
         f"{metrics['prediction_words']:.1f} ({metrics['reference_words']:.1f})"),
        ("empty outputs", f"{metrics['empty_predictions']}"),
    ]
    lines += [f"{label:<28}{value:>24}" for label, value in rows]
    return "\n".join(lines)
