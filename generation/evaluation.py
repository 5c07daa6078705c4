"""Metrics of generated summaries: ROUGE, DUC-style 75-byte recall, redundancy and perplexity.

Pure functions over strings and numbers; ``wikisum evaluate`` reads a predictions file and prints
:func:`score_predictions` of its records (and :func:`format_table` of that).

ROUGE is google-research ``rouge-score`` with Porter stemming, its default tokenizer (lower-cased
ASCII letters and digits; other characters separate tokens) and one reference per example.
Scores are macro-averaged: the mean over examples of each example's F1, precision and recall.

With ``bootstrap=N``, :func:`score_predictions` adds a percentile bootstrap interval to every score
(:mod:`wikisum.core.stats`), from the per-example scores of :func:`per_example_scores`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence

from rouge_score import rouge_scorer

from wikisum.core import stats
from wikisum.core.text import content_words

# ROUGE-L is rouge-score's "rougeL": one longest common subsequence over the whole text, no
# sentence splitting. That is the computation of tensor2tensor's rouge_l_sentence_level, which
# the WikiSum paper (Liu et al., 2018) reports (it treats each summary as a single "sentence"),
# and it does not depend on line breaks, which the models' outputs do not reliably contain
# ("rougeLsum" would need sentences split by newlines). One difference remains: tensor2tensor's
# F-measure weights recall by beta = P / R, rouge-score's is the plain F1 (beta = 1).
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
DUC_LIMIT_BYTES = 75



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
        extra = _repeats(text, lang, ignore)
        repeated += extra
        repeating += extra > 0
    n = len(predictions)
    return {"share_repeating": repeating / n, "repeated_tokens_per_output": repeated / n}


def _repeats(text: str, lang: str | None = "en", ignore: Collection[str] = frozenset()) -> int:
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


REQUIRED = ("id", "prediction", "reference")


# Every score that score_predictions averages over examples, by its dotted path in its dict:
# (path, label, scale for display: 100 shows a fraction in percent).
SCORES = (
    *((f"rouge.{name}.{part}", f"{label} {part_label}", 100.0)
      for name, label in (("rouge1", "ROUGE-1"), ("rouge2", "ROUGE-2"), ("rougeL", "ROUGE-L"))
      for part, part_label in (("f", "F1"), ("p", "P"), ("r", "R"))),
    *((f"duc_recall_75b.{name}", f"{label} recall, 75 bytes", 100.0)
      for name, label in (("rouge1", "ROUGE-1"), ("rouge2", "ROUGE-2"), ("rougeL", "ROUGE-L"))),
    ("redundancy.share_repeating", "outputs repeating a word (%)", 100.0),
    ("redundancy.repeated_tokens_per_output", "repeated tokens / output", 1.0),
    ("prediction_words", "words / output", 1.0),
    ("reference_words", "words / reference", 1.0),
    ("empty_predictions", "empty outputs (%)", 100.0),
)


def _validated(records: Iterable[Mapping]) -> tuple[list[str], list[str], list[float], list[int]]:
    """Predictions, references and per-record reference NLL and tokens (0 and 0 where a record
    lacks either) of prediction records; a bad record is an error naming it."""
    records = list(records)
    if not records:
        raise ValueError("no prediction records to evaluate")
    predictions, references, nll, tokens = [], [], [], []
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
            nll.append(float(record["reference_nll"]))
            tokens.append(int(record["reference_tokens"]))
        else:
            nll.append(0.0)
            tokens.append(0)
    return predictions, references, nll, tokens


def _per_example(predictions: Sequence[str], references: Sequence[str]) -> dict[str, list[float]]:
    full = rouge_per_example(predictions, references)
    cut = rouge_per_example([truncate_bytes(p, DUC_LIMIT_BYTES) for p in predictions],
                            references)
    scores = {f"rouge.{name}.{part}": [e[name][part] for e in full]
              for name in ROUGE_TYPES for part in ("f", "p", "r")}
    scores.update({f"duc_recall_75b.{name}": [e[name]["r"] for e in cut] for name in ROUGE_TYPES})
    repeats = [_repeats(p) for p in predictions]
    scores["redundancy.share_repeating"] = [float(r > 0) for r in repeats]
    scores["redundancy.repeated_tokens_per_output"] = [float(r) for r in repeats]
    scores["prediction_words"] = [float(len(p.split())) for p in predictions]
    scores["reference_words"] = [float(len(r.split())) for r in references]
    scores["empty_predictions"] = [float(not p.strip()) for p in predictions]
    return scores


def per_example_scores(records: Iterable[Mapping]) -> dict[str, list[float]]:
    """One value per record, in order, for each score in :data:`SCORES` (keyed by its dotted
    path in :func:`score_predictions`' dict: ``"rouge.rouge1.f"``, ``"duc_recall_75b.rouge2"``,
    ``"redundancy.share_repeating"``, ...). ``empty_predictions`` is 1.0 for an empty output and
    0.0 otherwise (score_predictions reports their count). Bootstrap intervals and paired tests
    resample these."""
    predictions, references, _, _ = _validated(records)
    return _per_example(predictions, references)


def _set_path(tree: dict, path: str, value) -> None:
    *parents, leaf = path.split(".")
    for key in parents:
        tree = tree.setdefault(key, {})
    tree[leaf] = value


def _safe_exp(x: float) -> float:
    return math.exp(x) if x < 709.0 else math.inf


def score_predictions(records: Iterable[Mapping], *, bootstrap: int = 0,
                      seed: int = stats.DEFAULT_SEED, level: float = stats.DEFAULT_LEVEL) -> dict:
    """The metrics ``wikisum evaluate`` prints, from prediction records
    ``{"id", "prediction", "reference", "reference_nll"?, "reference_tokens"?}``.

    Perplexity sums NLL and tokens over the records that have both (a corpus-level figure, not
    a mean of per-example perplexities) and is None when none has.

    With ``bootstrap`` > 0, ``"intervals"`` holds the percentile bootstrap interval
    ``[low, high]`` of every score at the same path as the score (``intervals["rouge"]["rouge1"]
    ["f"]``; the perplexity's resamples the examples that have an NLL), from ``bootstrap``
    resamples of the examples drawn with ``seed``, and ``"bootstrap"`` records those settings.
    """
    predictions, references, nll, tokens = _validated(records)
    return _aggregate(_per_example(predictions, references), nll, tokens, bootstrap, seed, level)


def _aggregate(scores: dict[str, list[float]], nll: list[float], tokens: list[int],
               bootstrap: int, seed: int, level: float) -> dict:
    n = len(nll)
    total_nll, total_tokens = sum(nll), sum(tokens)
    metrics = {
        "examples": n,
        "rouge": {name: {part: sum(scores[f"rouge.{name}.{part}"]) / n
                         for part in ("f", "p", "r")} for name in ROUGE_TYPES},
        "duc_recall_75b": {name: sum(scores[f"duc_recall_75b.{name}"]) / n
                           for name in ROUGE_TYPES},
        "redundancy": {key: sum(scores[f"redundancy.{key}"]) / n
                       for key in ("share_repeating", "repeated_tokens_per_output")},
        "prediction_words": sum(scores["prediction_words"]) / n,
        "reference_words": sum(scores["reference_words"]) / n,
        "empty_predictions": int(sum(scores["empty_predictions"])),
        "perplexity": perplexity(total_nll, total_tokens) if total_tokens else None,
        "perplexity_examples": sum(t > 0 for t in tokens),
        "perplexity_tokens": total_tokens,
    }
    if bootstrap:
        found = stats.bootstrap_intervals(scores, resamples=bootstrap, level=level, seed=seed)
        found["empty_predictions"] = found["empty_predictions"].scaled(n)  # a count
        intervals: dict = {}
        for path, interval in found.items():
            _set_path(intervals, path, [interval.low, interval.high])
        if total_tokens:
            ppl = stats.bootstrap_ratio_interval(nll, tokens, resamples=bootstrap, level=level,
                                                 seed=seed).mapped(_safe_exp)
            intervals["perplexity"] = [ppl.low, ppl.high]
        metrics["intervals"] = intervals
        metrics["bootstrap"] = {"resamples": bootstrap, "level": level, "seed": seed,
                                "method": "percentile bootstrap over examples"}
    return metrics


def _cell(value: float, interval, scale: float, digits: int, unit: str = "") -> str:
    if interval is None:
        return f"{value * scale:.{digits}f}{unit}"
    low, high = interval
    return (f"{value * scale:.{digits}f}{unit} "
            f"[{low * scale:.{digits}f}{unit}, {high * scale:.{digits}f}{unit}]")


def format_table(metrics: Mapping) -> str:
    """A short plain-text table of :func:`score_predictions`' dict; ROUGE in percent. With intervals
    in ``metrics``, each score is followed by its interval, ``31.20 [30.10, 32.40]``."""
    ci = metrics.get("intervals")

    def interval(*path):
        node = ci
        for key in path:
            if not isinstance(node, Mapping) or key not in node:
                return None
            node = node[key]
        return node

    width = 22 if ci else 8
    level = metrics.get("bootstrap", {}).get("level", stats.DEFAULT_LEVEL)
    head = [f"{name} [{100 * level:g}% interval]" if ci else name for name in ("F1", "P", "R")]
    lines = ["metric".ljust(28) + "".join(h.rjust(width) for h in head)]
    names = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L"}
    for key, label in names.items():
        s = metrics["rouge"][key]
        lines.append(label.ljust(28) + "".join(
            _cell(s[part], interval("rouge", key, part), 100, 2).rjust(width)
            for part in ("f", "p", "r")))
    for key, label in names.items():
        lines.append(f"{label + ' recall, 75 bytes':<28}{'':>{2 * width}}"
                     + _cell(metrics["duc_recall_75b"][key], interval("duc_recall_75b", key),
                             100, 2).rjust(width))
    ppl = metrics.get("perplexity")
    red = metrics["redundancy"]
    rows = [
        ("examples", f"{metrics['examples']}"),
        ("perplexity (per wordpiece)",
         "n/a" if ppl is None else _cell(ppl, interval("perplexity"), 1, 3)),
        ("outputs repeating a word",
         _cell(red["share_repeating"], interval("redundancy", "share_repeating"), 100, 1, "%")),
        ("repeated tokens / output",
         _cell(red["repeated_tokens_per_output"],
               interval("redundancy", "repeated_tokens_per_output"), 1, 2)),
        ("words / output (reference)",
         _cell(metrics["prediction_words"], interval("prediction_words"), 1, 1)
         + f" ({metrics['reference_words']:.1f})"),
        ("empty outputs", _cell(metrics["empty_predictions"], interval("empty_predictions"), 1,
                                0)),
    ]
    value_width = 3 * width - 8 if ci else 24
    lines += [f"{label:<28}{value:>{value_width}}" for label, value in rows]
    return "\n".join(lines)


# Scores that `wikisum evaluate --compare` tests: all of SCORES but the references' length,
# which does not depend on the system.
COMPARED = tuple(entry for entry in SCORES if entry[0] != "reference_words")


def compare(records_a: Sequence[Mapping], records_b: Sequence[Mapping], *,
            bootstrap: int = stats.DEFAULT_RESAMPLES, seed: int = stats.DEFAULT_SEED,
            level: float = stats.DEFAULT_LEVEL) -> dict:
    """System B against system A on the same examples: ``records_a[i]`` and ``records_b[i]``
    must be the same example (the caller pairs them, e.g. by id). Each file's
    :func:`score_predictions` (with intervals) and, for every score in :data:`COMPARED`, a
    :func:`wikisum.core.stats.paired_bootstrap` of ``B - A``: mean difference, its
    percentile interval, a two-sided approximate randomization p-value and a one-line verdict
    (in display units: ROUGE and shares in percentage points).

    Perplexity is not tested: two models with different vocabularies count different
    wordpieces, so their per-example NLLs do not pair; each file's perplexity interval is in
    its metrics."""
    if len(records_a) != len(records_b):
        raise ValueError(f"{len(records_a)} records in A but {len(records_b)} in B: a paired "
                         "comparison needs the same examples")
    if bootstrap < 1:
        raise ValueError(f"a paired comparison needs bootstrap resamples >= 1, got {bootstrap}")
    metrics, scores = {}, {}
    for side, records in (("a", records_a), ("b", records_b)):
        predictions, references, nll, tokens = _validated(records)
        scores[side] = _per_example(predictions, references)
        metrics[side] = _aggregate(scores[side], nll, tokens, bootstrap, seed, level)
    keys = [key for key, _, _ in COMPARED]
    results = stats.paired_bootstraps({k: scores["a"][k] for k in keys},
                                      {k: scores["b"][k] for k in keys},
                                      resamples=bootstrap, level=level, seed=seed)
    differences = {}
    for key, label, scale in COMPARED:
        result = results[key]
        differences[key] = {"label": label, "scale": scale, **result.as_dict(),
                            "verdict": result.verdict(scale=scale, digits=2)}
    return {"examples": len(records_a), "a": metrics["a"], "b": metrics["b"],
            "test": {"difference": "B - A, per example, averaged",
                     "interval": f"paired bootstrap, percentile, {100 * level:g}%",
                     "p_value": "two-sided approximate randomization (random sign flips of "
                                "the per-example differences)",
                     "resamples": bootstrap, "seed": seed, "level": level},
            "differences": differences}


def format_comparison(comparison: Mapping) -> str:
    """A plain-text table of :func:`compare`'s dict: each score's mean in A and in B and the
    verdict ``B above A: +1.20 [0.40, 2.00], p = 0.003`` (ROUGE and shares in percent)."""
    level = comparison["test"]["level"]
    lines = [f"{'score':<30}{'A':>9}{'B':>9}  verdict (B - A [{100 * level:g}% interval], "
             f"p-value)"]
    for entry in comparison["differences"].values():
        scale = entry["scale"]
        lines.append(f"{entry['label']:<30}{entry['mean_a'] * scale:>9.2f}"
                     f"{entry['mean_b'] * scale:>9.2f}  {entry['verdict']}")
    ppl = [comparison[side].get("perplexity") for side in ("a", "b")]
    if all(p is not None for p in ppl):
        lines.append(f"{'perplexity (not tested)':<30}{ppl[0]:>9.3f}{ppl[1]:>9.3f}")
    return "\n".join(lines)
