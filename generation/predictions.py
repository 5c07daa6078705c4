"""Predictions files (JSON Lines of `wikisum decode`: one record a line with at least ``id``,
``prediction`` and ``reference``), read the one way every reader of them shares: `evaluate`,
`human-eval make`, the whole-article view."""

from __future__ import annotations

import json
from pathlib import Path

REQUIRED = ("id", "prediction", "reference")


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
