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

Reading the answers (:func:`read_answers`): a file that is not JSON, not an answers file, of
another version, without an annotator name or with a wrong structure is an error naming the
file and what is wrong; answers from another page (``page_id`` not the key's) are refused,
naming the file and both ids. Inside a valid file these are counted in ``result["skipped"]``
with their reason, and the rest is used:

- ``unknown_item``: an item id that the key does not have;
- ``out_of_range``: a rating that is not an integer 1..5, a choice not "A", "B" or "none";
- ``unknown_dimension``: a rating under a question name that the key does not have;
- ``incomplete_item``: a quality item answered on only some questions. Its answered questions
  are used (each question is scored on its own, so an unanswered one removes nothing from the
  others); the missing ones count as unanswered (``missing`` says how many);
- ``duplicate_annotator``: a second file of an annotator already read (the same name, after
  trimming spaces, on the same page). The page keeps answers in the browser and every export
  holds all of them so far, so the latest export (``exported``; on a tie or an unreadable time,
  the later file on the command line) is kept and the others are skipped whole;
- ``no_rouge_l``: a preference judgment whose example lacks a ROUGE-L of either system in the
  key; left out of the ROUGE-L correlation only.

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

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from wikisum.core import htmlpage
from wikisum.core.htmlpage import escape, page
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
KEY_FORMAT = "wikisum-human-eval-key"
ANSWERS_FORMAT = "wikisum-human-eval-answers"
SUPPORTED_VERSIONS = (1,)
SCALE = (1, 2, 3, 4, 5)
CHOICES = ("A", "B", "none")
DIMENSION_LABELS = {
    "grammaticality": "Grammaticality",
    "non_redundancy": "Non-redundancy",
    "referential_clarity": "Referential clarity",
    "focus": "Focus",
    "structure_coherence": "Structure and coherence",
}
SKIP_REASONS = {
    "unknown_item": "answers to item ids that the key does not have (another version of the "
                    "page, or a file edited by hand); skipped",
    "out_of_range": "answers that are not a rating 1-5 (an integer) or a choice A / B / none; "
                    "skipped",
    "unknown_dimension": "ratings under a question that the key does not have; skipped",
    "incomplete_item": "quality items answered on only some questions: the questions answered "
                       "are used, the others count as unanswered",
    "duplicate_annotator": "answer files of an annotator already read from another file (same "
                           "name, same page): the latest export is kept, these are skipped whole",
    "no_rouge_l": "preference judgments whose example has no ROUGE-L for both systems in the "
                  "key; left out of the ROUGE-L correlation only",
}
MAX_EXAMPLES = 5  # item ids or values kept per skip reason, to show what was skipped


class HumanEvalError(ValueError):
    """A key or answers file that cannot be read, or answers that do not belong to the key."""


# ---------------------------------------------------------------------------------- reading


@dataclass
class Tally:
    """Counts of what was skipped, by reason and file, with a few examples of each."""

    counts: dict = field(default_factory=dict)

    def add(self, reason: str, file: str, n: int = 1, example: object = None,
            **extra: int) -> None:
        entry = self.counts.setdefault(reason, {"count": 0, "text": SKIP_REASONS[reason],
                                                "files": {}, "examples": []})
        entry["count"] += n
        entry["files"][file] = entry["files"].get(file, 0) + n
        for name, value in extra.items():
            entry[name] = entry.get(name, 0) + value
        if example is not None and len(entry["examples"]) < MAX_EXAMPLES:
            entry["examples"].append(example)

    def merge(self, other: Tally) -> None:
        for reason, entry in other.counts.items():
            mine = self.counts.setdefault(reason, {"count": 0, "text": entry["text"],
                                                   "files": {}, "examples": []})
            mine["count"] += entry["count"]
            for file, n in entry["files"].items():
                mine["files"][file] = mine["files"].get(file, 0) + n
            for name, value in entry.items():
                if name not in ("count", "text", "files", "examples"):
                    mine[name] = mine.get(name, 0) + value
            room = MAX_EXAMPLES - len(mine["examples"])
            mine["examples"] += entry["examples"][:max(room, 0)]


@dataclass(frozen=True)
class Answers:
    """One annotator's valid answers: ratings per quality item and question, choices per
    preference item."""

    path: str
    annotator: str
    exported: str | None
    position: int  # on the command line, to break ties between exports of one annotator
    quality: dict  # item id -> {dimension: 1..5}
    preference: dict  # item id -> "A" | "B" | "none"
    tally: Tally


def _no_duplicate_keys(pairs: list[tuple[str, object]]) -> dict:
    keys = [k for k, _ in pairs]
    repeated = sorted({k for k in keys if keys.count(k) > 1})
    if repeated:
        raise ValueError(f"repeated key(s) {', '.join(map(repr, repeated))}")
    return dict(pairs)


def _load_json(path: str, what: str) -> dict:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise HumanEvalError(f"cannot read {what} {path}: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise HumanEvalError(f"{what} {path} is not UTF-8 text: {exc}") from exc
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys)
    except ValueError as exc:  # JSONDecodeError, or a repeated key
        raise HumanEvalError(f"{what} {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise HumanEvalError(f"{what} {path} is not a JSON object but {type(data).__name__}")
    return data


def _check_header(data: dict, path: str, what: str, expected: str) -> None:
    if data.get("format") != expected:
        raise HumanEvalError(f"{path} is not a {what} (its format is {data.get('format')!r}, "
                             f"expected {expected!r})")
    if data.get("version") not in SUPPORTED_VERSIONS:
        raise HumanEvalError(f"{what} {path} has version {data.get('version')!r}; this wikisum "
                             f"reads version(s) {', '.join(map(str, SUPPORTED_VERSIONS))}")


def read_key(path: str) -> dict:
    """The key of an annotation page (``human-eval make``'s ``key.json``), checked."""
    key = _load_json(path, "key")
    _check_header(key, path, "wikisum human-eval key", KEY_FORMAT)

    def need(name: str, kind: type) -> None:
        if not isinstance(key.get(name), kind):
            raise HumanEvalError(f"key {path}: '{name}' is missing or not a "
                                 f"{'list' if kind is list else 'JSON ' + kind.__name__}")

    for name, kind in (("page_id", str), ("systems", dict), ("dimensions", list),
                       ("quality_items", list), ("preference_items", list)):
        need(name, kind)
    if not key["systems"]:
        raise HumanEvalError(f"key {path}: no systems")
    for n, item in enumerate(key["quality_items"]):
        if not (isinstance(item, dict) and isinstance(item.get("item"), str)
                and item.get("system") in key["systems"]):
            raise HumanEvalError(f"key {path}: quality_items[{n}] is not an item of a system "
                                 "of the key")
    for n, item in enumerate(key["preference_items"]):
        if not (isinstance(item, dict) and isinstance(item.get("item"), str)
                and item.get("a") in key["systems"] and item.get("b") in key["systems"]
                and item["a"] != item["b"]):
            raise HumanEvalError(f"key {path}: preference_items[{n}] is not a pair of two "
                                 "systems of the key")
    if not isinstance(key.get("rouge_l", {}), dict):
        raise HumanEvalError(f"key {path}: 'rouge_l' is not a JSON object")
    return key


def _rating_ok(value: object) -> bool:
    return type(value) is int and value in SCALE  # not bool, not 3.0


def read_answers(path: str, key: dict, position: int = 0) -> Answers:
    """One answers file checked against ``key``: its valid answers, and a tally of what it
    skipped. Raises :class:`HumanEvalError` for a malformed file or another page's answers."""
    data = _load_json(path, "answers file")
    _check_header(data, path, "wikisum human-eval answers file", ANSWERS_FORMAT)
    if data.get("page_id") != key["page_id"]:
        raise HumanEvalError(
            f"answers file {path} is from page {data.get('page_id')!r}, but the key is for page "
            f"{key['page_id']!r}: answers from another page are refused")
    annotator = data.get("annotator")
    if not isinstance(annotator, str) or not annotator.strip():
        raise HumanEvalError(f"answers file {path} has no annotator name")
    exported = data.get("exported")
    quality = data.get("quality", {})
    preference = data.get("preference", {})
    for name, value in (("quality", quality), ("preference", preference)):
        if not isinstance(value, dict):
            raise HumanEvalError(f"answers file {path}: '{name}' is not a JSON object")
    quality_items = {item["item"] for item in key["quality_items"]}
    preference_items = {item["item"] for item in key["preference_items"]}
    dimensions = key["dimensions"]
    tally = Tally()
    ratings: dict[str, dict[str, int]] = {}
    for item, answer in quality.items():
        if not isinstance(answer, dict):
            raise HumanEvalError(f"answers file {path}: the quality answer to {item!r} is not "
                                 "a JSON object of ratings")
        if item not in quality_items:
            tally.add("unknown_item", path, example=item)
            continue
        kept = {}
        for dimension, value in answer.items():
            if dimension not in dimensions:
                tally.add("unknown_dimension", path, example=dimension)
            elif not _rating_ok(value):
                tally.add("out_of_range", path, example=value)
            else:
                kept[dimension] = value
        if len(kept) < len(dimensions):
            tally.add("incomplete_item", path, example=item, missing=len(dimensions) - len(kept))
        if kept:
            ratings[item] = kept
    choices: dict[str, str] = {}
    for item, value in preference.items():
        if item not in preference_items:
            tally.add("unknown_item", path, example=item)
        elif not (isinstance(value, str) and value in CHOICES):
            tally.add("out_of_range", path, example=value)
        else:
            choices[item] = value
    return Answers(path=path, annotator=annotator.strip(),
                   exported=exported if isinstance(exported, str) else None, position=position,
                   quality=ratings, preference=choices, tally=tally)


def _export_time(answers: Answers) -> datetime | None:
    try:
        moment = datetime.fromisoformat(answers.exported or "")
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _latest(group: list[Answers]) -> Answers:
    """The latest export of one annotator; a file without a readable time counts as older
    than any with one, and the later file on the command line wins a tie."""
    floor = datetime.min.replace(tzinfo=timezone.utc)
    return max(group, key=lambda a: (_export_time(a) or floor, a.position))


def keep_one_per_annotator(read: list[Answers], tally: Tally) -> list[Answers]:
    """The latest export of each annotator, in command-line order; the others counted in
    ``tally`` as ``duplicate_annotator``."""
    groups: dict[str, list[Answers]] = {}
    for answers in read:
        groups.setdefault(answers.annotator, []).append(answers)
    kept = []
    for name, group in groups.items():
        latest = _latest(group)
        kept.append(latest)
        for answers in group:
            if answers is not latest:
                tally.add("duplicate_annotator", answers.path,
                          example=f"{name}: {answers.path} (kept {latest.path})")
    return sorted(kept, key=lambda a: a.position)


# ---------------------------------------------------------------------------------- tables


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


# ---------------------------------------------------------------------------------- scoring


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


# ---------------------------------------------------------------------------------- report


def _label(dimension: str) -> str:
    return DIMENSION_LABELS.get(dimension, dimension.replace("_", " ").capitalize())


def _num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def format_p(p: float | None) -> str:
    if p is None:
        return "-"
    if p < 1e-16:
        return "< 1e-16"
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def _n_range(values: list[int]) -> str:
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"


# A table is (caption, header, rows, text columns): the Markdown and HTML show the same cells.


def table5(result: dict) -> tuple | None:
    quality = result["quality"]
    if not quality:
        return None
    header = ["system"] + [_label(d) for d in result["dimensions"]] + ["ratings (n)", "outputs"]
    rows = []
    for system in result["systems"]:
        cells = quality["systems"][system]
        row = [system]
        for d in result["dimensions"]:
            c = cells[d]
            mark = quality["welch"].get(system, {}).get(d, {}).get("stars", "")
            interval = (f" [{_num(c['low'])}, {_num(c['high'])}]" if c["low"] is not None
                        else "")
            row.append(f"{_num(c['mean'])}{interval}{mark}" if c["mean"] is not None else "-")
        row += [_n_range([cells[d]["n"] for d in result["dimensions"]]),
                _n_range([cells[d]["items"] for d in result["dimensions"]])]
        rows.append(row)
    return (f"Mean rating (1-5) [95% t interval]; ** p < {STRICT_P:g}, * p < {LOOSE_P:g} in "
            f"Welch's t-test against {result['against']}", header, rows, {0})


def _welch_cell(w: dict) -> str:
    if w["t"] is None:
        return w["reason"]
    # two lines in HTML (a cell with a line break wraps there), one in Markdown
    return (f"{w['difference']:+.2f}, p {format_p(w['p'])}{w['stars']}\n"
            f"(t {w['t']:.2f}, df {w['df']:.1f})")


def welch_table(result: dict) -> tuple | None:
    quality = result["quality"]
    if not quality or not quality["welch"]:
        return None
    header = ["system"] + [_label(d) for d in result["dimensions"]]
    rows = [[system] + [_welch_cell(by_dimension[d]) for d in result["dimensions"]]
            for system, by_dimension in quality["welch"].items()]
    return (f"Welch's two-sample t-test of each system against {result['against']}: "
            "difference of the means, t, Welch-Satterthwaite df, two-sided p", header, rows,
            {0})


def table6(result: dict) -> tuple | None:
    preference = result["preference"]
    if not preference:
        return None
    header = ["pair (X vs Y)", "prefer X", "prefer Y", "no preference", "sign test p", "note"]
    rows = [[r["pair"], str(r["prefer_x"]), str(r["prefer_y"]), str(r["no_preference"]),
             format_p(r["p"]) + r["stars"], r["reason"] or ""] for r in preference["pairs"]]
    return ("Side-by-side preference: judgments per pair; two-sided exact sign test on the "
            "judgments with a preference (ties apart)", header, rows, {0, 5})


def agreement_table(result: dict) -> tuple | None:
    agree = result["agreement"]
    rows = []
    for d, entry in (agree["quality"] or {}).items():
        rows.append([_label(d), entry])
    if agree["preference"]:
        rows.append(["Preference (A / B / none)", agree["preference"]])
    if not rows:
        return None
    header = ["question", "metric", "alpha", "items (2+ annotators)", "answers", "annotators",
              "note"]
    return ("Krippendorff's alpha over the items that two or more annotators answered",
            header, [[name, e["metric"], _num(e["alpha"], 3), str(e["items"]), str(e["values"]),
                     str(e["annotators"]), e["reason"] or ""] for name, e in rows], {0, 1, 6})


def correlation_table(result: dict) -> tuple | None:
    c = result["rouge_correlation"]
    if c is None:
        return None
    share = "-" if c["share"] is None else f"{100 * c['share']:.1f}%"
    rows = [["judgments with a preference (ties excluded)", str(c["n"])],
            ["ties (no preference), excluded", str(c["ties_excluded"])],
            ["point-biserial r (ROUGE-L(a) - ROUGE-L(b) vs prefer a / b)",
             _num(c["r"], 3) + (f" ({c['reason']})" if c["reason"] else "")],
            ["p of r (two-sided)", format_p(c["p"])],
            ["preferred output has the higher ROUGE-L",
             f"{c['higher_rouge_preferred']} of "
             f"{c['higher_rouge_preferred'] + c['lower_rouge_preferred']} ({share})"],
            ["sign test p of that share against 1/2", format_p(c["share_p"])],
            ["judgments of outputs with equal ROUGE-L", str(c["equal_rouge"])]]
    return ("Do the judgments follow ROUGE-L?", ["", "value"], rows, {0})


def annotators_table(result: dict) -> tuple:
    rows = [[a["name"], a["file"], a["exported"] or "-", str(a["quality_ratings"]),
             str(a["preference_judgments"])] for a in result["annotators"]]
    return ("Annotators (one answers file each)",
            ["annotator", "file", "exported", "quality ratings", "preference judgments"], rows,
            {0, 1, 2})


def skipped_table(result: dict) -> tuple | None:
    if not result["skipped"]:
        return None
    rows = []
    for reason, entry in result["skipped"].items():
        extra = f"; {entry['missing']} ratings missing" if entry.get("missing") else ""
        files = ", ".join(f"{f} ({n})" for f, n in entry["files"].items())
        examples = ", ".join(map(str, entry["examples"]))
        rows.append([reason, str(entry["count"]), entry["text"] + extra, files, examples])
    return ("What was skipped or incomplete, and why", ["reason", "count", "what", "files",
                                                        "examples"], rows, {0, 2, 3, 4})


def _method_lines(result: dict) -> list[str]:
    return [
        "Quality: every rating is one observation (ratings of all annotators pooled per "
        "system and question, as DUC pools its assessors' ratings); n counts ratings, "
        "outputs the distinct outputs rated. Interval: mean +- t(0.975, n-1) s / sqrt(n).",
        f"Welch's two-sample t-test against {result['against']} per question (unequal "
        "variances, Welch-Satterthwaite df, two-sided); the paper reports significance at "
        f"p = {STRICT_P:g}.",
        "Preference: A / B mapped to systems through the key; the exact sign test is "
        "binomial with p = 1/2 on the judgments with a preference; ties are reported apart.",
        "Agreement: Krippendorff's alpha from the coincidence matrix (Krippendorff 2011), "
        "ordinal for the 1-5 ratings, nominal for the preference choice.",
        "ROUGE-L: per judgment with a preference, x = ROUGE-L(a) - ROUGE-L(b) (from the key), "
        "y = +1 prefer a, -1 prefer b; point-biserial r, and the share of judgments whose "
        "preferred output has the higher ROUGE-L.",
    ]


SECTIONS = (
    ("Linguistic quality (Table 5)", (table5, welch_table),
     "This page asked no quality questions."),
    ("Preference (Table 6)", (table6,), "This page asked no preference questions."),
    ("Agreement between annotators", (agreement_table,), "No questions to agree on."),
    ("Preference and ROUGE-L", (correlation_table,), "This page asked no preference questions."),
    ("Skipped answers", (skipped_table,), "Nothing was skipped: every answer was used."),
    ("Annotators", (annotators_table,), ""),
)
TITLE = "Human evaluation scores"


def _subtitle(result: dict) -> str:
    names = ", ".join(result["systems"])
    return (f"page {result['page_id']} · {result['kind']} · systems {names} · "
            f"{len(result['annotators'])} annotator(s) · key {result['key']}")


def _md_cell(text: str) -> str:
    """Text as one Markdown table cell: pipes, asterisks (the significance marks) and anything
    that could open an HTML tag escaped, line breaks as spaces."""
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*")
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", text).replace("\n", " ")


def _md_table(table: tuple) -> str:
    caption, header, rows, _ = table
    lines = [f"*{_md_cell(caption)}*", "", "| " + " | ".join(map(_md_cell, header)) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def to_markdown(result: dict) -> str:
    out = [f"# {TITLE}", "", _md_cell(_subtitle(result)), ""]
    for title, makers, missing in SECTIONS:
        out += [f"## {title}", ""]
        tables = [t for t in (make(result) for make in makers) if t]
        out += [_md_table(t) for t in tables] if tables else [missing, ""]
    out += ["## Method", ""] + [f"- {_md_cell(line)}" for line in _method_lines(result)] + [""]
    return "\n".join(out)


NUMERIC = re.compile(r"^([-+]?\d|-$|<)")

CSS = htmlpage.REPORT_CSS + """th.t,td.t{text-align:left}
td.w{white-space:normal;min-width:16em}
td.lines{white-space:pre-line}
"""


WRAPPED = {"note", "what", "files", "examples"}  # long text: wraps, the others do not


def _html_table(table: tuple) -> str:
    caption, header, rows, text_columns = table

    def kind(i: int, cell: str) -> str:
        if header[i] in WRAPPED:
            return " class='t w'"
        if "\n" in cell:
            return " class='lines'"
        return " class='t'" if i in text_columns or not NUMERIC.match(cell) else ""

    left = " class='t'"
    head = "".join(f"<th{left if i in text_columns else ''}>{escape(h)}</th>"
                   for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(f"<td{kind(i, c)}>{escape(c)}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return (f"<p class='caption'>{escape(caption)}</p><div class='scroll'><table>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def to_html(result: dict) -> str:
    parts = [f"<h1>{escape(TITLE)}</h1>", f"<p class='sub'>{escape(_subtitle(result))}</p>"]
    for title, makers, missing in SECTIONS:
        parts.append(f"<h2>{escape(title)}</h2>")
        tables = [t for t in (make(result) for make in makers) if t]
        parts += [_html_table(t) for t in tables] if tables else [
            f"<p class='note'>{escape(missing)}</p>"]
    parts += ["<h2>Method</h2><ul>"] + [f"<li>{escape(line)}</li>"
                                        for line in _method_lines(result)] + ["</ul>"]
    return page(TITLE, "<main>" + "".join(parts) + "</main>", css=CSS)


def write_report(result: dict, out: str) -> dict[str, str]:
    """``out``/report.html, report.md and scores.json (the result); their paths by kind."""
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"html": folder / "report.html", "markdown": folder / "report.md",
             "json": folder / "scores.json"}
    paths["html"].write_text(to_html(result), encoding="utf-8")
    paths["markdown"].write_text(to_markdown(result), encoding="utf-8")
    paths["json"].write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n",
                             encoding="utf-8")
    return {kind: str(path) for kind, path in paths.items()}


# ---------------------------------------------------------------------------------- console


def format_summary(result: dict) -> str:
    """A short plain-text summary: Table 5's means (with the Welch marks), Table 6's counts,
    alpha, the ROUGE-L link and the skip counts."""
    lines = [f"{len(result['annotators'])} annotator(s): "
             + ", ".join(a["name"] for a in result["annotators"])]
    quality = result["quality"]
    if quality:
        dims = result["dimensions"]
        width = max(len(s) for s in result["systems"]) + 2
        lines.append("")
        lines.append(f"Quality: mean rating (1-5); ** p < {STRICT_P:g}, * p < {LOOSE_P:g} "
                     f"(Welch) vs {result['against']}")
        lines.append("system".ljust(width) + "".join(_short(d).rjust(9) for d in dims)
                     + "n".rjust(8))
        for system in result["systems"]:
            cells = quality["systems"][system]
            row = system.ljust(width)
            for d in dims:
                mark = quality["welch"].get(system, {}).get(d, {}).get("stars", "")
                row += (_num(cells[d]["mean"]) + mark).rjust(9)
            lines.append(row + _n_range([cells[d]["n"] for d in dims]).rjust(8))
    if result["preference"]:
        lines += ["", "Preference: prefer X / prefer Y / no preference, sign test p"]
        for r in result["preference"]["pairs"]:
            lines.append(f"  {r['pair']}: {r['prefer_x']} / {r['prefer_y']} / "
                         f"{r['no_preference']}, p = {format_p(r['p'])}{r['stars']}")
    alphas = [(_label(d), e) for d, e in (result["agreement"]["quality"] or {}).items()]
    if result["agreement"]["preference"]:
        alphas.append(("Preference", result["agreement"]["preference"]))
    if alphas:
        lines += ["", "Krippendorff's alpha: " + ", ".join(
            f"{name} {_num(e['alpha'], 3)}" for name, e in alphas)]
    c = result["rouge_correlation"]
    if c:
        share = "-" if c["share"] is None else f"{100 * c['share']:.1f}%"
        lines.append(f"Preference vs ROUGE-L difference: r = {_num(c['r'], 3)} (n = {c['n']}), "
                     f"higher ROUGE-L preferred in {share}")
    if result["skipped"]:
        lines += ["", "Skipped: " + ", ".join(f"{reason} {entry['count']}"
                                              for reason, entry in result["skipped"].items())]
    return "\n".join(lines)


SHORT = {"grammaticality": "Gram.", "non_redundancy": "Non-red.",
         "referential_clarity": "Ref.", "focus": "Focus", "structure_coherence": "Struct."}


def _short(dimension: str) -> str:
    return SHORT.get(dimension, dimension[:8])
