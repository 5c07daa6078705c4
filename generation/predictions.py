"""Predictions files (JSON Lines of `wikisum decode`: one record a line with at least ``id``,
``prediction`` and ``reference``), read the one way every reader of them shares: `evaluate`,
`human-eval make`, the whole-article view."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from wikisum.core.articlelayout import ArticleSection
from wikisum.generation.structure import sections_from_json

REQUIRED = ("id", "prediction", "reference")


def id_key(value: object) -> str:
    """An example id as a key: its JSON text (ids of any JSON type pair and sort alike, and
    key.json's ``rouge_l`` can hold them as object keys)."""
    return json.dumps(value, sort_keys=True)


def describe(record: Mapping) -> str:
    return f"prediction record id {record.get('id')!r}"


def is_article(record: Mapping) -> bool:
    """Whether ``record`` is a whole article (``target`` "article", or sections present).

    Raises:
        ValueError: a ``target`` that is neither "lead" nor "article".
    """
    target = record.get("target", "lead")
    if target not in ("lead", "article"):
        raise ValueError(f"{describe(record)}: target is {target!r}, not 'lead' or 'article'")
    return target == "article" or "prediction_sections" in record


def record_sections(record: Mapping, key: str) -> list[ArticleSection]:
    """The sections a whole-article record holds under ``key`` (``prediction_sections`` or
    ``reference_sections``).

    Raises:
        ValueError: the record has no ``key``, or not a list of ``{"title", "text"}`` there
            (the message names the record).
    """
    if key not in record:
        raise ValueError(f"{describe(record)} is a whole article but has no {key}")
    try:
        return sections_from_json(record[key])
    except ValueError as exc:
        raise ValueError(f"{describe(record)}: {key}: {exc}") from exc


def read_predictions(path: str | Path, *, empty_ok: bool = False) -> list[dict]:
    """The records of a predictions file, in file order; blank lines are skipped.

    Raises:
        FileNotFoundError: the file cannot be read.
        ValueError: a line is not a JSON object holding :data:`REQUIRED`, or the file holds no
            record (unless ``empty_ok``); the message names ``path:line``.
    """
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise FileNotFoundError(f"cannot read predictions {path}: {exc}") from exc
    records = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON ({exc})") from exc
        if not isinstance(record, dict):
            raise ValueError(f"{path}:{number}: a record must be a JSON object")
        missing = [k for k in REQUIRED if k not in record]
        if missing:
            raise ValueError(f"{path}:{number}: no {', '.join(missing)}")
        records.append(record)
    if not records and not empty_ok:
        raise ValueError(f"{path} holds no predictions")
    return records
