"""The scores of a predictions file: ``wikisum evaluate`` reads one and prints
:func:`score_predictions` of its records (and :func:`format_table` of that), or :func:`compare`
of two files of the same examples. The metrics are :mod:`wikisum.generation.metrics`' (their
names stay importable from here).

ROUGE is scored in each record's language (its ``lang``, or the language a caller passes for
all); a record without a language is scored as English. Scores are macro-averaged: the mean
over examples of each example's score.

With ``bootstrap=N``, :func:`score_predictions` adds a percentile bootstrap interval to every score
(:mod:`wikisum.core.stats`), from the per-example scores of :func:`per_example_scores`.

Records of whole articles (Liu et al. 2018, section 6: ``prediction_sections`` and
``reference_sections`` beside the article as text) add, under ``"article"``: summary-level
ROUGE-Lsum, ROUGE-1/2/L per section over the sections whose headings match, and the structure
scores of :mod:`wikisum.generation.structure`, each a per-example score like the others.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from wikisum.core import stats
from wikisum.core.articlelayout import ArticleSection
from wikisum.generation import metrics, structure

# The metrics' names are importable from here too (rouge, summary_lines, duc_recall, redundancy
# and Langs: re-exported)
from wikisum.generation.metrics import (  # noqa: F401
    DUC_LIMIT_BYTES,
    PARTS,
    ROUGE_TYPES,
    Langs,
    duc_recall,
    perplexity,
    redundancy,
    rouge,
    rouge_lsum,
    rouge_per_example,
    rouge_warnings,
    section_rouge,
    summary_lines,
    truncate_bytes,
)
from wikisum.generation.predictions import (
    REQUIRED,
    check_record,
    describe,
    is_article,
    record_sections,
)

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

_ROUGE_LABELS = (("rouge1", "ROUGE-1"), ("rouge2", "ROUGE-2"), ("rougeL", "ROUGE-L"))
_PART_LABELS = (("f", "F1"), ("p", "P"), ("r", "R"))

# The scores that records of whole articles add, under "article" (same form as SCORES).
ARTICLE_SCORES = (
    *((f"article.rougeLsum.{part}", f"ROUGE-Lsum {part_label}", 100.0)
      for part, part_label in _PART_LABELS),
    *((f"article.per_section.{name}.{part}", f"{label} {part_label}, per section", 100.0)
      for name, label in _ROUGE_LABELS for part, part_label in _PART_LABELS),
    ("article.per_section.matched", "sections matched / article", 1.0),
    ("article.structure.heading_precision", "heading precision (%)", 100.0),
    ("article.structure.heading_recall", "heading recall (%)", 100.0),
    ("article.structure.heading_f1", "heading F1 (%)", 100.0),
    ("article.structure.sections", "sections / article", 1.0),
    ("article.structure.reference_sections", "sections / reference", 1.0),
    ("article.structure.repeated_sections", "repeated sections (%)", 100.0),
)

Article = tuple[list[ArticleSection], list[ArticleSection]]  # (predicted, reference)


@dataclass(frozen=True)
class _Examples:
    """Validated prediction records, one entry per record in each list."""
    predictions: list[str]
    references: list[str]
    nll: list[float]  # 0.0 where a record has no reference NLL
    tokens: list[int]  # 0 where a record has no reference NLL
    articles: list[Article] | None  # None: the records are leads
    cut: list[int | None]  # articles: reference tokens cut for the perplexity, None: unrecorded
    langs: list[str | None]  # each record's language (the caller's, else its "lang"; None: en)


def _articles(records: Sequence[Mapping]) -> tuple[list[Article] | None, list[int | None]]:
    """The sections of article records and their ``reference_cut`` (None, [] for leads); a
    file mixing leads and articles, or an article record without its sections, is an error."""
    kinds = [is_article(r) for r in records]
    if not any(kinds):
        return None, []
    if not all(kinds):
        lead = records[kinds.index(False)]
        raise ValueError(
            f"{sum(kinds)} prediction records are whole articles (with prediction_sections) "
            f"and {kinds.count(False)} are leads (the first: id {lead.get('id')!r}); a "
            f"predictions file holds one kind of target: score leads and articles apart")
    articles, cut = [], []
    for record in records:
        articles.append((record_sections(record, "prediction_sections"),
                         record_sections(record, "reference_sections")))
        value = record.get("reference_cut")
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 0):
            raise ValueError(f"{describe(record)}: reference_cut is {value!r}, not a count of "
                             "tokens >= 0")
        cut.append(value)
    return articles, cut


def record_lang(record: Mapping, lang: str | None = None) -> str | None:
    """The language a record is scored in: ``lang`` when given, else the record's ``"lang"``
    (a language tag; anything else is an error naming the record), else None (English)."""
    if lang:
        return lang
    value = record.get("lang")
    if value is None or value == "":
        return None
    if not isinstance(value, str) or len(value) > 64 or not value.isprintable():
        raise ValueError(f"prediction record id {record.get('id')!r}: lang is {value!r:.80}, "
                         "not a language tag")
    return value


def _validated(records: Iterable[Mapping], lang: str | None = None) -> _Examples:
    """Predictions, references, per-record reference NLL and tokens (0 and 0 where a record
    lacks either), each record's language (``lang`` for all when given) and, for whole
    articles, their sections of prediction records; a bad record is an error naming it
    (:func:`wikisum.generation.predictions.check_record`)."""
    records = list(records)
    if not records:
        raise ValueError("no prediction records to evaluate")
    predictions, references, nll, tokens, langs = [], [], [], [], []
    for i, record in enumerate(records):
        missing = [k for k in REQUIRED if k not in record]
        if missing:
            raise ValueError(f"prediction record {i} (id {record.get('id')!r}) lacks "
                             f"{', '.join(missing)}")
        check_record(record, f"prediction record {i} (id {str(record['id'])[:60]!r})")
        predictions.append(record["prediction"])
        references.append(record["reference"])
        langs.append(record_lang(record, lang))
        if record.get("reference_nll") is not None and record.get("reference_tokens"):
            nll.append(float(record["reference_nll"]))
            tokens.append(int(record["reference_tokens"]))
        else:
            nll.append(0.0)
            tokens.append(0)
    articles, cut = _articles(records)
    return _Examples(predictions, references, nll, tokens, articles, cut, langs)


def _article_per_example(articles: Sequence[Article], langs: Sequence[str | None]
                         ) -> dict[str, list[float]]:
    """One value per article for each score in :data:`ARTICLE_SCORES`."""
    scores: dict[str, list[float]] = {key: [] for key, _, _ in ARTICLE_SCORES}
    for (predicted, reference), lang in zip(articles, langs, strict=True):
        for part, value in rouge_lsum(predicted, reference, lang).items():
            scores[f"article.rougeLsum.{part}"].append(value)
        means, matched = section_rouge(predicted, reference, lang)
        for name in ROUGE_TYPES:
            for part in PARTS:
                scores[f"article.per_section.{name}.{part}"].append(means[name][part])
        scores["article.per_section.matched"].append(float(matched))
        for key, value in structure.structure_scores(predicted, reference).items():
            scores[f"article.structure.{key}"].append(float(value))
    return scores


def _scores(examples: _Examples) -> dict[str, list[float]]:
    scores = _per_example(examples.predictions, examples.references, examples.langs)
    if examples.articles is not None:
        scores.update(_article_per_example(examples.articles, examples.langs))
    return scores


def _per_example(predictions: Sequence[str], references: Sequence[str],
                 langs: Sequence[str | None]) -> dict[str, list[float]]:
    full = rouge_per_example(predictions, references, langs)
    cut = rouge_per_example([truncate_bytes(p, DUC_LIMIT_BYTES) for p in predictions],
                            references, langs)
    scores = {f"rouge.{name}.{part}": [e[name][part] for e in full]
              for name in ROUGE_TYPES for part in ("f", "p", "r")}
    scores.update({f"duc_recall_75b.{name}": [e[name]["r"] for e in cut] for name in ROUGE_TYPES})
    repeats = [metrics.repeats(p, lang or "en") for p, lang in zip(predictions, langs, strict=True)]
    scores["redundancy.share_repeating"] = [float(r > 0) for r in repeats]
    scores["redundancy.repeated_tokens_per_output"] = [float(r) for r in repeats]
    scores["prediction_words"] = [float(len(p.split())) for p in predictions]
    scores["reference_words"] = [float(len(r.split())) for r in references]
    scores["empty_predictions"] = [float(not p.strip()) for p in predictions]
    return scores


def per_example_scores(records: Iterable[Mapping], lang: str | None = None
                       ) -> dict[str, list[float]]:
    """One value per record, in order, for each score in :data:`SCORES` (keyed by its dotted
    path in :func:`score_predictions`' dict: ``"rouge.rouge1.f"``, ``"duc_recall_75b.rouge2"``,
    ``"redundancy.share_repeating"``, ...), and for whole articles in :data:`ARTICLE_SCORES`
    too (``"article.rougeLsum.f"``, ...). ``empty_predictions`` is 1.0 for an empty output and
    0.0 otherwise (score_predictions reports their count). Bootstrap intervals and paired tests
    resample these. ROUGE is in ``lang`` when given, else in each record's (:func:`record_lang`).
    """
    return _scores(_validated(records, lang))


def _set_path(tree: dict, path: str, value) -> None:
    *parents, leaf = path.split(".")
    for key in parents:
        tree = tree.setdefault(key, {})
    tree[leaf] = value


def _safe_exp(x: float) -> float:
    return math.exp(x) if x < 709.0 else math.inf


def score_predictions(records: Iterable[Mapping], *, bootstrap: int = 0,
                      seed: int = stats.DEFAULT_SEED, level: float = stats.DEFAULT_LEVEL,
                      lang: str | None = None) -> dict:
    """The metrics ``wikisum evaluate`` prints, from prediction records
    ``{"id", "prediction", "reference", "reference_nll"?, "reference_tokens"?}``.

    Perplexity sums NLL and tokens over the records that have both (a corpus-level figure, not
    a mean of per-example perplexities) and is None when none has.

    Records of whole articles (all with ``prediction_sections`` and ``reference_sections``)
    add ``"article"``: ``rougeLsum``, ``per_section`` (ROUGE per matched section and
    ``matched``, the pairs per article), ``structure`` (means of
    :func:`wikisum.generation.structure.structure_scores`), and the references cut for the
    perplexity by the run's max_target_tokens (``references_cut`` of
    ``reference_cut_recorded`` records that say, ``reference_cut_tokens`` in all).

    With ``bootstrap`` > 0, ``"intervals"`` holds the percentile bootstrap interval
    ``[low, high]`` of every score at the same path as the score (``intervals["rouge"]["rouge1"]
    ["f"]``; the perplexity's resamples the examples that have an NLL), from ``bootstrap``
    resamples of the examples drawn with ``seed``, and ``"bootstrap"`` records those settings.

    ROUGE is scored in ``lang`` when given, else in each record's ``"lang"`` (English where a
    record has none); ``"languages"`` counts the records per language scored in, and
    ``"rouge_warnings"`` (:func:`rouge_warnings`) says what could not be scored as it should.
    """
    return _aggregate(_validated(records, lang), bootstrap, seed, level)


def _aggregate(examples: _Examples, bootstrap: int, seed: int, level: float,
               scores: dict[str, list[float]] | None = None) -> dict:
    scores = _scores(examples) if scores is None else scores
    nll, tokens = examples.nll, examples.tokens
    n = len(nll)
    total_nll, total_tokens = sum(nll), sum(tokens)
    metrics = {
        "examples": n,
        "languages": dict(sorted(Counter(lang or "en" for lang in examples.langs).items())),
        "rouge_warnings": rouge_warnings(examples.predictions, examples.references,
                                         examples.langs),
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
    if examples.articles is not None:
        for key, _, _ in ARTICLE_SCORES:
            _set_path(metrics, key, sum(scores[key]) / n)
        recorded = [c for c in examples.cut if c is not None]
        metrics["article"].update(references_cut=sum(c > 0 for c in recorded),
                                  reference_cut_tokens=sum(recorded),
                                  reference_cut_recorded=len(recorded))
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


def cut_note(metrics: Mapping) -> str | None:
    """The line that says how many article references the perplexity saw cut (None for
    leads): ``perplexity over targets cut to the run's max_target_tokens: 3 of 50 cut``."""
    article = metrics.get("article")
    if article is None:
        return None
    recorded = article["reference_cut_recorded"]
    note = (f"perplexity over targets cut to the run's max_target_tokens: "
            f"{article['references_cut']} of {recorded} cut")
    unknown = metrics["examples"] - recorded
    return note + (f" (not recorded for {unknown} more)" if unknown else "")


def format_table(metrics: Mapping) -> str:
    """A short plain-text table of :func:`score_predictions`' dict; ROUGE in percent. With intervals
    in ``metrics``, each score is followed by its interval, ``31.20 [30.10, 32.40]``. Whole
    articles add ROUGE-Lsum, ROUGE per matched section, the structure scores and a line on
    the references cut for the perplexity."""
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
    names = dict(_ROUGE_LABELS)

    def rouge_row(label: str, path: tuple[str, ...]) -> str:
        node = metrics
        for key in path:
            node = node[key]
        return label.ljust(28) + "".join(
            _cell(node[part], interval(*path, part), 100, 2).rjust(width) for part in PARTS)

    for key, label in names.items():
        lines.append(rouge_row(label, ("rouge", key)))
    article = metrics.get("article")
    if article is not None:
        lines.append(rouge_row("ROUGE-Lsum", ("article", "rougeLsum")))
        lines += [rouge_row(f"{label} per section", ("article", "per_section", key))
                  for key, label in names.items()]
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
    if article is not None:
        struct = article["structure"]

        def share(key: str) -> str:
            return _cell(struct[key], interval("article", "structure", key), 100, 1, "%")

        rows += [
            ("sections matched / article",
             _cell(article["per_section"]["matched"],
                   interval("article", "per_section", "matched"), 1, 2)),
            ("heading precision", share("heading_precision")),
            ("heading recall", share("heading_recall")),
            ("heading F1", share("heading_f1")),
            ("sections / article (ref.)",
             _cell(struct["sections"], interval("article", "structure", "sections"), 1, 2)
             + f" ({struct['reference_sections']:.2f})"),
            ("repeated sections", share("repeated_sections")),
        ]
    value_width = 3 * width - 8 if ci else 24
    lines += [f"{label:<28}{value:>{value_width}}" for label, value in rows]
    note = cut_note(metrics)
    if note:
        lines.append(note)
    return "\n".join(lines)


# Scores that `wikisum evaluate --compare` tests: all of SCORES (and of ARTICLE_SCORES, for
# whole articles) but the references' length, which does not depend on the system.
COMPARED = tuple(entry for entry in SCORES if entry[0] != "reference_words")
ARTICLE_COMPARED = tuple(entry for entry in ARTICLE_SCORES
                         if entry[0] != "article.structure.reference_sections")


def compare(records_a: Sequence[Mapping], records_b: Sequence[Mapping], *,
            bootstrap: int = stats.DEFAULT_RESAMPLES, seed: int = stats.DEFAULT_SEED,
            level: float = stats.DEFAULT_LEVEL, lang: str | None = None) -> dict:
    """System B against system A on the same examples: ``records_a[i]`` and ``records_b[i]``
    must be the same example (the caller pairs them, e.g. by id). Each file's
    :func:`score_predictions` (with intervals) and, for every score in :data:`COMPARED`, a
    :func:`wikisum.core.stats.paired_bootstrap` of ``B - A``: mean difference, its
    percentile interval, a two-sided approximate randomization p-value and a one-line verdict
    (in display units: ROUGE and shares in percentage points). Whole articles are tested on
    :data:`ARTICLE_COMPARED` too; both files must hold the same kind of target.

    Perplexity is not tested: two models with different vocabularies count different
    wordpieces, so their per-example NLLs do not pair; each file's perplexity interval is in
    its metrics."""
    if len(records_a) != len(records_b):
        raise ValueError(f"{len(records_a)} records in A but {len(records_b)} in B: a paired "
                         "comparison needs the same examples")
    if bootstrap < 1:
        raise ValueError(f"a paired comparison needs bootstrap resamples >= 1, got {bootstrap}")
    examples = {"a": _validated(records_a, lang), "b": _validated(records_b, lang)}
    kinds = {side: "leads" if e.articles is None else "whole articles"
             for side, e in examples.items()}
    if kinds["a"] != kinds["b"]:
        raise ValueError(f"A holds {kinds['a']} and B {kinds['b']}: a paired comparison needs "
                         "predictions of the same targets")
    compared = COMPARED if examples["a"].articles is None else COMPARED + ARTICLE_COMPARED
    metrics, scores = {}, {}
    for side, found in examples.items():
        scores[side] = _scores(found)
        metrics[side] = _aggregate(found, bootstrap, seed, level, scores[side])
    keys = [key for key, _, _ in compared]
    results = stats.paired_bootstraps({k: scores["a"][k] for k in keys},
                                      {k: scores["b"][k] for k in keys},
                                      resamples=bootstrap, level=level, seed=seed)
    differences = {}
    for key, label, scale in compared:
        result = results[key]
        differences[key] = {"label": label, "scale": scale, **result.as_dict(),
                            "verdict": result.verdict(scale=scale, digits=2)}
    return {"examples": len(records_a), "lang": lang, "a": metrics["a"], "b": metrics["b"],
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
    for side in ("a", "b"):
        note = cut_note(comparison[side])
        if note:
            lines.append(f"{side.upper()}: {note}")
    return "\n".join(lines)
