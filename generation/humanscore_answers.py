"""Reading a human evaluation's files for ``wikisum human-eval score``: the page's key and the
annotators' answers files, checked, with what cannot be used counted by reason.

Reading the answers (:func:`read_answers`): a file that is not JSON, not an answers file, of
another version, without an annotator name or with a wrong structure is an error naming the
file and what is wrong; answers from another page (``page_id`` not the key's) are refused,
naming the file and both ids. Inside a valid file these are counted in a :class:`Tally` (the
result's ``"skipped"``) with their reason, and the rest is used:

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
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

KEY_FORMAT = "wikisum-human-eval-key"
ANSWERS_FORMAT = "wikisum-human-eval-answers"
SUPPORTED_VERSIONS = (1,)
SCALE = (1, 2, 3, 4, 5)
CHOICES = ("A", "B", "none")
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
