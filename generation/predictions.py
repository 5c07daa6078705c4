"""Predictions files (JSON Lines of `wikisum decode`: one record a line with at least ``id``,
``prediction`` and ``reference``), read the one way every reader of them shares: `evaluate`,
`human-eval make`, the whole-article view."""

from __future__ import annotations

import json
import math
import numbers
import reprlib
from collections.abc import Iterator, Mapping
from pathlib import Path

from wikisum.core.articlelayout import ArticleSection
from wikisum.generation.structure import sections_from_json

REQUIRED = ("id", "prediction", "reference")
# The longest line read: a record holds one example's prediction and reference (a whole
# article's are tens of KB); a longer line is refused, never held whole.
MAX_LINE_BYTES = 8 << 20
BOM = b"\xef\xbb\xbf"
_SHOWN = reprlib.Repr()  # values in messages: long strings and big collections abbreviated
_SHOWN.maxstring = _SHOWN.maxother = 60


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
    """The records of a predictions file, in file order; blank lines are skipped, a UTF-8 BOM
    opening the file is skipped, a line may end in CRLF.

    Lines are split at line feeds alone (a JSON string may hold U+2028 or a form feed), read
    in chunks of at most :data:`MAX_LINE_BYTES`: a longer line is refused without being held
    whole. Every record is checked as :func:`check_record` says (whether ids repeat is the
    reader's to say: :func:`check_unique_ids`).

    Raises:
        FileNotFoundError: the file cannot be read.
        ValueError: a line is not UTF-8, is over :data:`MAX_LINE_BYTES`, is not a JSON object
            (NaN and Infinity are not JSON), nests too deep or fails :func:`check_record`;
            or the file holds no record (unless ``empty_ok``). The message names
            ``path:line`` and what is wrong.
    """
    records = []
    try:
        handle = open(path, "rb")  # noqa: SIM115 - closed below, OSError named as a read error
    except OSError as exc:
        raise FileNotFoundError(f"cannot read predictions {path}: {exc.strerror or exc}"
                                ) from exc
    with handle:
        for number, line in enumerate(_lines(handle, path), 1):
            if not line.strip():
                continue
            records.append(_parse(line, f"{path}:{number}"))
    if not records and not empty_ok:
        raise ValueError(f"{path} holds no predictions")
    return records


def check_unique_ids(records: list[Mapping], path: str | Path) -> None:
    """Refuse records of which two have one id (by :func:`id_key`): each example is scored
    once. The message names ``path`` and both records."""
    first: dict[str, int] = {}
    for number, record in enumerate(records, 1):
        key = id_key(record["id"])
        if key in first:
            raise ValueError(f"{path}: id {_shown(record['id'])} occurs more than once "
                             f"(records {first[key]} and {number}); each example is scored "
                             "once, so each id must be unique")
        first[key] = number


def _lines(handle, path) -> Iterator[bytes]:
    """The lines of ``handle`` without their line ends (LF or CRLF; a BOM opening the file
    dropped), each read in at most :data:`MAX_LINE_BYTES` + 1 bytes."""
    number = 0
    while True:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if not line:
            return
        number += 1
        if number == 1 and line.startswith(BOM):
            line = line[len(BOM):]
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            raise ValueError(f"{path}:{number}: the line is over {MAX_LINE_BYTES:,} bytes; a "
                             "prediction record is far shorter (refused unread)")
        yield line.rstrip(b"\n").removesuffix(b"\r")


def _parse(line: bytes, where: str) -> dict:
    """One line as a checked record; errors name ``where``."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{where}: not UTF-8 (byte {line[exc.start]:#04x} at column "
                         f"{exc.start + 1})") from None
    try:
        record = json.loads(text, parse_constant=_not_json)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: not JSON ({exc.msg.removesuffix(' at')} at column "
                         f"{exc.colno})") from None
    except RecursionError:
        raise ValueError(f"{where}: not a prediction record (JSON nested too deep)") from None
    except ValueError as exc:
        raise ValueError(f"{where}: not JSON ({exc})") from None
    if not isinstance(record, dict):
        raise ValueError(f"{where}: a record must be a JSON object")
    check_record(record, where)
    return record


def _not_json(name: str):
    raise ValueError(f"{name} is not a JSON number")


def check_record(record: Mapping, where: str) -> None:
    """Refuse a record that cannot be scored as it stands, naming ``where`` and the field:
    one lacking :data:`REQUIRED`, an ``id`` that is not a string or an integer, a
    ``prediction`` or ``reference`` that is not text, text holding a lone surrogate (no
    UTF-8 writes it), a ``reference_nll`` that is not a finite number >= 0, or a
    ``reference_tokens`` that is not a count."""
    missing = [k for k in REQUIRED if k not in record]
    if missing:
        raise ValueError(f"{where}: no {', '.join(missing)}")
    value = record["id"]
    if isinstance(value, bool) or not isinstance(value, str | numbers.Integral):
        raise ValueError(f"{where}: id is {_kind(value)}; an id is a string or an integer")
    for key in ("id", "prediction", "reference"):
        value = record[key]
        if key != "id" and not isinstance(value, str):
            raise ValueError(f"{where}: {key} is {_kind(value)}, not text")
        if isinstance(value, str) and not _is_unicode(value):
            raise ValueError(f"{where}: {key} holds a lone surrogate (an escape such as "
                             "\\ud800 alone), not text")
    nll = record.get("reference_nll")
    if nll is not None and (isinstance(nll, bool) or not isinstance(nll, numbers.Real)
                            or not math.isfinite(nll) or nll < 0):
        raise ValueError(f"{where}: reference_nll is {_shown(nll)}, not a finite number >= 0")
    tokens = record.get("reference_tokens")
    if tokens is not None and (isinstance(tokens, bool)
                               or not isinstance(tokens, numbers.Integral) or tokens < 0):
        raise ValueError(f"{where}: reference_tokens is {_shown(tokens)}, not a count >= 0")


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _kind(value: object) -> str:
    """What a JSON value is, for a message: "a list ([1, 2])", "null"."""
    names = {dict: "an object", list: "a list", bool: "a boolean", float: "a number",
             int: "a number", str: "text"}
    if value is None:
        return "null"
    return f"{names.get(type(value), type(value).__name__)} ({_shown(value)})"


def _shown(value: object) -> str:
    return _SHOWN.repr(value)
