"""``wikisum human-eval score``: the statistics of a human evaluation as Liu et al. (2018) report
it (Tables 5 and 6), from the answer files that the annotation page exports and the page's key.

    result = score_answers(["ann1.json", "ann2.json"], "eval/key.json", against="tfidf")
    write_report(result, "eval/scores")     # report.html, report.md, scores.json
    print(format_summary(result))

What is computed (every choice is also stated in the report; the formulas are in
:mod:`wikisum.generation.humanstats`):

- **Linguistic quality** (Table 5): per system and DUC question, the mean of all ratings pooled
  (each annotator's 1-5 rating of one output is one observation, as DUC pools its assessors'
  ratings per summary; ``n`` counts ratings, ``items`` the distinct outputs rated), its 95%
  interval ``mean +- t(0.975, n-1) * s / sqrt(n)``, and Welch's two-sample t-test of every
  system against ``against`` (default: the key's first system): t, the Welch-Satterthwaite
  degrees of freedom and a two-sided p, marked ``**`` below 0.001 (the paper's level) and
  ``*`` below 0.05. Pooling treats two annotators' ratings of one output as independent, which
  they are not quite; with one annotator per output it is exact.
- **Preference** (Table 6): per pair of systems (unordered, written "X vs Y" in the key's
  system order), how many judgments prefer X, prefer Y or neither ("A"/"B" mapped to systems
  through the key's ``a``/``b`` of each item), and a two-sided exact sign test (binomial,
  p = 1/2) on the judgments with a preference; ties are reported apart, not split.
- **Agreement**: Krippendorff's alpha from its coincidence matrix (Krippendorff 2011,
  "Computing Krippendorff's Alpha-Reliability"), ordinal per quality question and nominal for
  the preference choice ("A", "B", "none"), over the items that two or more annotators
  answered; ``None`` with a reason where no item was, or where every answer is the same value
  (chance agreement is then total and alpha is 0/0).
- **Preference and ROUGE-L**: for every judgment with a preference (ties excluded), x =
  ROUGE-L(a) - ROUGE-L(b) from ``key["rouge_l"]`` and y = +1 (prefer a) or -1 (prefer b): the
  point-biserial correlation (Pearson's r of x and y) with its t-test p, and the share of
  judgments whose preferred output has the higher ROUGE-L (outputs with equal ROUGE-L apart)
  with a sign test of that share against 1/2.

Reading the key and the answers files, and what is skipped with which reason:
:mod:`wikisum.generation.humanscore_answers`. The report (``report.html``, ``report.md``,
``scores.json``) and the console summary: :mod:`wikisum.generation.humanscore_report`.

The result (plain JSON values; ``None`` where a number cannot be computed, with a ``reason``):

    {"format": "wikisum-human-eval-scores", "version": 1, "key": path, "page_id", "kind",
     "systems": [...], "dimensions": [...], "against": name,
     "method": {...}, "annotators": [{"name", "file", "exported", "quality_ratings",
     "preference_judgments"}],
     "quality": None | {"systems": {sys: {dim: {"mean", "sd", "n", "items", "low", "high"}}},
                        "welch": {sys: {dim: {"against", "difference", "t", "df", "p",
                                              "stars", "reason"}}}},
     "preference": None | {"pairs": [{"pair": "X vs Y", "x", "y", "prefer_x", "prefer_y",
                                      "no_preference", "n", "p", "reason"}]},
     "agreement": {"quality": None | {dim: alpha entry}, "preference": None | alpha entry},
     "rouge_correlation": None | {...},
     "skipped": {reason: {"count", "text", "files": {file: count}, "examples": [...]}}}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from wikisum.generation.humanscore_answers import (
    CHOICES,
    SCALE,
    Answers,
    HumanEvalError,
    Tally,
    keep_one_per_annotator,
    read_answers,
    read_key,
)
from wikisum.generation.humanscore_report import format_summary, write_report
from wikisum.generation.humanstats import (
    LEVEL,
    LOOSE_P,
    STRICT_P,
    krippendorff_alpha,
    mean_interval,
    point_biserial,
    sign_test,
    stars,
    welch,
)
from wikisum.generation.predictions import id_key

FORMAT = "wikisum-human-eval-scores"
VERSION = 1


def _quality_ratings(key: dict, annotators: list[Answers]) -> dict:
    """system -> dimension -> (ratings pooled over annotators, ids of the items rated)."""
    system_of = {item["item"]: item["system"] for item in key["quality_items"]}
    out = {s: {d: ([], set()) for d in key["dimensions"]} for s in key["systems"]}
    for answers in annotators:
        for item, ratings in answers.quality.items():
            for dimension, value in ratings.items():
                values, items = out[system_of[item]][dimension]
                values.append(value)
                items.add(item)
    return out


def quality_table(key: dict, annotators: list[Answers], against: str) -> dict:
    """Table 5: mean, interval and Welch's test against ``against`` per system and question."""
    pooled = _quality_ratings(key, annotators)
    systems, welch_rows = {}, {}
    for system, by_dimension in pooled.items():
        systems[system] = {}
        for dimension, (values, items) in by_dimension.items():
            systems[system][dimension] = {**mean_interval(values), "items": len(items)}
        if system != against:
            welch_rows[system] = {
                d: {"against": against, **welch(pooled[system][d][0], pooled[against][d][0])}
                for d in key["dimensions"]}
    return {"systems": systems, "welch": welch_rows}


def _pair_order(key: dict, a: str, b: str) -> tuple[str, str]:
    order = list(key["systems"])
    return (a, b) if order.index(a) < order.index(b) else (b, a)


def _judgments(key: dict, annotators: list[Answers]) -> list[tuple[dict, str, str]]:
    """(key item, answers file, choice) of every valid preference answer."""
    items = {item["item"]: item for item in key["preference_items"]}
    return [(items[item], answers.path, choice)
            for answers in annotators for item, choice in answers.preference.items()]


def preference_table(key: dict, annotators: list[Answers]) -> dict:
    """Table 6: per unordered pair, judgments preferring each side and ties, and the sign test
    on the judgments with a preference."""
    pairs: dict[tuple[str, str], Counter] = {}
    for item in key["preference_items"]:
        pairs.setdefault(_pair_order(key, item["a"], item["b"]), Counter())
    for item, _, choice in _judgments(key, annotators):
        counts = pairs[_pair_order(key, item["a"], item["b"])]
        counts[{"A": item["a"], "B": item["b"]}.get(choice, None)] += 1
    rows = []
    for (x, y), counts in pairs.items():
        n = counts[x] + counts[y]
        p = sign_test(counts[x], n)
        rows.append({"pair": f"{x} vs {y}", "x": x, "y": y, "prefer_x": counts[x],
                     "prefer_y": counts[y], "no_preference": counts[None], "n": n, "p": p,
                     "stars": stars(p),
                     "reason": None if n else "no judgment with a preference"})
    return {"pairs": rows}


def _units(answers_by_annotator: Iterable[dict[str, object]]) -> list[list[object]]:
    by_item: dict[str, list[object]] = {}
    for answers in answers_by_annotator:
        for item, value in answers.items():
            by_item.setdefault(item, []).append(value)
    return list(by_item.values())


def agreement(key: dict, annotators: list[Answers]) -> dict:
    """Krippendorff's alpha: ordinal per quality question, nominal for the preference choice;
    ``annotators`` in each entry counts those who answered an item that another answered."""

    def with_people(entry: dict, per_annotator: list[dict]) -> dict:
        shared = Counter(item for answers in per_annotator for item in answers)
        people = sum(1 for answers in per_annotator if any(shared[i] >= 2 for i in answers))
        return {**entry, "annotators": people}

    quality = None
    if key["quality_items"]:
        quality = {}
        for dimension in key["dimensions"]:
            per_annotator = [{item: ratings[dimension] for item, ratings in a.quality.items()
                              if dimension in ratings} for a in annotators]
            entry = krippendorff_alpha(_units(per_annotator), "ordinal", values=SCALE)
            quality[dimension] = with_people(entry, per_annotator)
    preference = None
    if key["preference_items"]:
        per_annotator = [a.preference for a in annotators]
        preference = with_people(krippendorff_alpha(_units(per_annotator), "nominal",
                                                    values=CHOICES), per_annotator)
    return {"quality": quality, "preference": preference}


def rouge_correlation(key: dict, annotators: list[Answers], tally: Tally) -> dict:
    """How the judgments with a preference follow ROUGE-L: the point-biserial r of
    x = ROUGE-L(a) - ROUGE-L(b) and y = +1 (prefer a) / -1 (prefer b), and the share of those
    judgments whose preferred output has the higher ROUGE-L."""
    rouge = key.get("rouge_l") or {}
    xs, ys, ties = [], [], 0
    for item, path, choice in _judgments(key, annotators):
        if choice == "none":
            ties += 1
            continue
        scores = rouge.get(id_key(item["example"])) or {}
        ra, rb = scores.get(item["a"]), scores.get(item["b"])
        if not all(isinstance(r, (int, float)) and not isinstance(r, bool) for r in (ra, rb)):
            tally.add("no_rouge_l", path, example=item["item"])
            continue
        xs.append(float(ra) - float(rb))
        ys.append(1.0 if choice == "A" else -1.0)
    agree = sum(1 for x, y in zip(xs, ys, strict=True) if x * y > 0)
    disagree = sum(1 for x, y in zip(xs, ys, strict=True) if x * y < 0)
    decided = agree + disagree
    share_p = sign_test(agree, decided)
    return {"n": len(xs), "ties_excluded": ties, **point_biserial(xs, ys),
            "higher_rouge_preferred": agree, "lower_rouge_preferred": disagree,
            "equal_rouge": len(xs) - decided, "share": agree / decided if decided else None,
            "share_p": share_p}


def score_answers(answer_paths: list[str], key_path: str, against: str | None = None) -> dict:
    """The statistics of Tables 5 and 6 (and agreement, and the link with ROUGE-L) from the
    answer files of one page and its key; see the module docstring for the result."""
    if not answer_paths:
        raise HumanEvalError("no answer files given")
    key = read_key(key_path)
    systems = list(key["systems"])
    if against is None:
        against = systems[0]
    elif against not in key["systems"]:
        raise HumanEvalError(f"--against {against!r} is not a system of the key "
                             f"({', '.join(systems)})")
    read = [read_answers(path, key, position) for position, path in enumerate(answer_paths)]
    tally = Tally()
    annotators = keep_one_per_annotator(read, tally)
    for answers in annotators:
        tally.merge(answers.tally)
    has_quality, has_preference = bool(key["quality_items"]), bool(key["preference_items"])
    result = {
        "format": FORMAT, "version": VERSION, "key": str(key_path), "page_id": key["page_id"],
        "kind": key.get("kind"), "systems": systems, "dimensions": list(key["dimensions"]),
        "against": against,
        "method": {"level": LEVEL, "unit": "rating", "significance": [STRICT_P, LOOSE_P],
                   "quality_test": "welch", "preference_test": "sign",
                   "agreement": "krippendorff-alpha", "correlation": "point-biserial"},
        "annotators": [{"name": a.annotator, "file": a.path, "exported": a.exported,
                        "quality_ratings": sum(len(r) for r in a.quality.values()),
                        "preference_judgments": len(a.preference)} for a in annotators],
        "quality": quality_table(key, annotators, against) if has_quality else None,
        "preference": preference_table(key, annotators) if has_preference else None,
        "agreement": agreement(key, annotators),
        "rouge_correlation": (rouge_correlation(key, annotators, tally)
                              if has_preference else None),
    }
    result["skipped"] = tally.counts
    return result


# With the reading and report functions that the command line and users import from here.
__all__ = ["SCALE", "HumanEvalError", "agreement", "format_summary", "preference_table",
           "quality_table", "read_answers", "read_key", "rouge_correlation", "score_answers",
           "write_report"]
