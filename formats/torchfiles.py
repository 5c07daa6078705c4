"""The ``.pt`` files other systems publish their datasets as: hiersumm's ``WIKI.{split}.N.pt``
shards and PRIMERA's ``{train,valid,test}.pt``, each one ``torch.save``d list of plain dicts.

A ``.pt`` file is a pickle, and unpickling runs whatever code the file names. These files are
downloaded from third parties, so they are read with ``torch.load(weights_only=True)`` only: its
unpickler builds lists, dicts, numbers, strings and tensors and refuses every other object
*before* calling anything, so a file that holds more is refused (:class:`RefusedFile`, naming the
file and the object it asked for) without a line of its code running.

This is the only module of :mod:`wikisum.formats` that imports torch, and it does so inside its
functions: reading Multi-News JSON Lines needs no torch installed.
"""

from __future__ import annotations

import io
import pickle
import re

from wikisum.core import files


class RefusedFile(ValueError):
    """A ``.pt`` file that holds more than plain data (an object whose loading would run code);
    the message names the file and what it asked for."""


class CorruptFile(ValueError):
    """A ``.pt`` file that is truncated or not a ``torch.save`` file; the message names it."""


_GLOBAL = re.compile(r"Unsupported global: GLOBAL ([\w.]+)")
_WEIGHTS_ERROR = re.compile(r"WeightsUnpickler error:\s*(.+?)\s*(?:\n\s*\n|$)", re.S)


def refusal_reason(message: str) -> str:
    """What a ``weights_only`` refusal says, in one line: the global the file asked for when it
    asked for one (``io.open``, ``__main__.Payload``), else the unpickler's own complaint."""
    found = _GLOBAL.search(message)
    if found:
        return (f"it holds a {found.group(1)} object: loading it would call code, and only "
                "lists, dicts, numbers, strings and tensors are read")
    found = _WEIGHTS_ERROR.search(message)
    detail = found.group(1) if found else message.strip().splitlines()[0] if message else "?"
    return f"torch.load(weights_only=True) cannot read it ({detail.splitlines()[0]})"


def load_records(path: str) -> list:
    """The list a ``.pt`` file holds, loaded whole with ``weights_only=True`` (one file at a
    time is what hiersumm's own loader holds too).

    Raises:
        RefusedFile: the file holds objects other than plain data; nothing of it was run.
        CorruptFile: the file is truncated, not a ``torch.save`` file, or not a list.
    """
    import torch

    try:
        if files.is_url(path):
            with files.open_read(path) as f:
                data = torch.load(io.BytesIO(f.read()), weights_only=True, map_location="cpu")
        else:
            data = torch.load(path, weights_only=True, map_location="cpu")
    except pickle.UnpicklingError as exc:
        raise RefusedFile(f"{path} is refused: {refusal_reason(str(exc))}") from exc
    except (RuntimeError, EOFError, OSError, ValueError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise CorruptFile(f"{path} is not a readable torch.save file "
                          f"({type(exc).__name__}: {str(exc).strip()[:200]})") from exc
    if not isinstance(data, list):
        raise CorruptFile(f"{path} holds a {type(data).__name__}, not the list of examples "
                          "hiersumm and PRIMERA save")
    return data


def to_plain(value):
    """A tensor as the list (or number) it holds; anything else unchanged. Lets a reader accept
    ids saved as tensors as well as lists without importing torch itself."""
    tolist = getattr(value, "tolist", None)
    return tolist() if callable(tolist) and not isinstance(value, (list, tuple)) else value


def dump_records(records: list) -> bytes:
    """``records`` (plain lists, dicts, ints, strings) as the bytes ``torch.save`` writes: what
    ``torch.load(path)`` in hiersumm and PRIMERA reads, and ``weights_only=True`` accepts."""
    import torch

    buffer = io.BytesIO()
    torch.save(records, buffer)
    return buffer.getvalue()
