"""The identity of a model's vocabulary: the SHA-256 of its sentencepiece file.

A model's token ids mean the pieces of one vocabulary. A run records the SHA-256 of the file it
trained with (``RUN/config.json`` and every checkpoint: ``"vocab_sha256"``), an export that of its
``tokenizer.model`` (``config.json``: ``"tokenizer_sha256"``), and everything that reads the ids
(resuming, decoding, evaluating, exporting, summarizing) checks the file against it first:
another vocabulary in its place would resume training or decode to other words without an error.

Runs and exports written before the hash was recorded are used unchecked, with a warning (once
per file and process).
"""

from __future__ import annotations

import sys
from pathlib import Path

from wikisum.core import ownership

KEY = "vocab_sha256"  # in RUN/config.json and each checkpoint

_warned: set[str] = set()


class VocabularyMismatch(ValueError):
    """A vocabulary file is not the one a model was trained with."""


def sha256(path: str | Path) -> str:
    """The hex SHA-256 of the file's bytes (a local path or a URL)."""
    return ownership.sha256(str(path))


def check(path: str | Path, expected: str | None, recorded_in: str, remedy: str) -> str | None:
    """The hash of ``path``, after checking it is ``expected`` (recorded in ``recorded_in``);
    with nothing recorded, a warning (once per file) and no check.

    Raises:
        VocabularyMismatch: the file is another vocabulary; the message names both.
    """
    if not expected:
        key = str(Path(path).absolute())
        if key not in _warned:
            _warned.add(key)
            print(f"warning: {recorded_in} records no vocabulary hash (written by an older "
                  f"wikisum): {path} is used unchecked", file=sys.stderr, flush=True)
        return None
    found = sha256(path)
    if found != expected:
        raise VocabularyMismatch(
            f"{path} is not the vocabulary the model was trained with: its SHA-256 is {found}, "
            f"{recorded_in} records {expected}; decoding with another vocabulary gives other "
            f"words. {remedy}")
    return found
