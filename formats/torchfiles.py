"""The ``.pt`` files other systems publish their datasets as: hiersumm's ``WIKI.{split}.N.pt``
shards and PRIMERA's ``{train,valid,test}.pt``, each one ``torch.save``d list of plain dicts.

A ``.pt`` file is a pickle, and unpickling runs whatever code the file names. These files are
downloaded from third parties, so they are read with ``torch.load(weights_only=True)`` only: its
unpickler builds lists, dicts, numbers, strings and tensors and refuses every other object
*before* calling anything, so a file that holds more is refused (:class:`RefusedFile`, naming the
file and the object it asked for) without a line of its code running.

Tensors are refused unread where the file declares more than it holds (:func:`check_sizes`):
torch allocates what a file declares before it reads it, so a few kilobytes that declare a
billion elements (a compressed zip record, or the element count of a storage in the legacy
format) would cost gigabytes. Memory is then bounded by the file: its bytes, and the Python
objects unpickled from them (a 100 MiB hiersumm shard is about 900 MiB of lists).

This is the only module of :mod:`wikisum.formats` that imports torch, and it does so inside its
functions: reading Multi-News JSON Lines needs no torch installed.
"""

from __future__ import annotations

import contextlib
import io
import pickle
import re
import zipfile

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
    check_sizes(path)
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


# Bytes an element of each storage type of the legacy format takes (torch/storage.py); a type
# not listed is taken at the largest, so that a declared size is never under-counted.
_ELEMENT_BYTES = {"Double": 8, "Float": 4, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4,
                  "Short": 2, "Char": 1, "Byte": 1, "Bool": 1, "ComplexFloat": 8,
                  "ComplexDouble": 16}
_LARGEST_ELEMENT = max(_ELEMENT_BYTES.values())


def check_sizes(path: str) -> None:
    """Refuses a ``.pt`` file that declares more bytes than it holds, before torch reads it.

    A zip ``.pt`` (torch 1.6 and later) must hold every record stored as written (torch.save
    compresses nothing; a compressed record is inflated to its declared size); a legacy one
    must hold the bytes its storages declare (their element counts are read from the pickle's
    persistent ids without running it).

    Raises:
        CorruptFile: naming the file, the record or storage, and both sizes.
    """
    with files.open_read(path) as f:
        size = f.seek(0, io.SEEK_END)
        f.seek(0)
        if f.read(4) == b"PK\x03\x04":
            f.seek(0)
            _check_zip(path, f, size)
        else:
            f.seek(0)
            _check_legacy(path, f, size)


def _check_zip(path: str, f, size: int) -> None:
    try:
        records = zipfile.ZipFile(f).infolist()
    except (zipfile.BadZipFile, OSError, ValueError):
        return  # torch.load says what is wrong with it
    for info in records:
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size \
                or info.header_offset + info.compress_size > size:
            raise CorruptFile(f"{path} is refused: its record {info.filename} declares "
                              f"{info.file_size:,} bytes from {info.compress_size:,} stored in a "
                              f"file of {size:,} (torch.save stores records as they are; "
                              "loading it would allocate what it declares)")


class _Stub:
    """What every global of a pickle becomes in :func:`_check_legacy`: a class of that name
    (:func:`_stub`) whose objects accept any arguments and state, so that nothing the file names
    is imported or called."""

    def __init__(self, *args, **kwargs):
        pass

    def __setstate__(self, state):
        pass

    def __setitem__(self, key, value):
        pass

    def append(self, value):
        pass

    def extend(self, values):
        pass


def _stub(name: str) -> type:
    return type(name, (_Stub,), {})


class _SizeReader(pickle.Unpickler):
    """Reads a pickle's structure with every global a :class:`_Stub` and every persistent id
    (a storage of the legacy format) recorded instead of loaded."""

    def __init__(self, f):
        super().__init__(f)
        self.ids: list[tuple] = []

    def find_class(self, module, name):
        return _stub(str(name))

    def persistent_load(self, pid):
        if isinstance(pid, tuple):
            self.ids.append(pid)
        return _Stub()


def _check_legacy(path: str, f, size: int) -> None:
    """The legacy format: pickles of the magic number, the protocol, the system's sizes and
    the data (storages as persistent ids ``("storage", type, key, location, count, view)``),
    then the storage keys and each storage's bytes. The data pickle is read with
    :class:`_SizeReader`, which calls nothing the file names; the storages it declares before
    anything it cannot read count too."""
    try:
        for _ in range(3):
            _SizeReader(f).load()
    except Exception:  # noqa: BLE001 - not a legacy file: torch.load says what is wrong with it
        return
    reader = _SizeReader(f)
    with contextlib.suppress(Exception):  # what it declares up to what it cannot read counts
        reader.load()
    declared: dict[str, int] = {}
    for pid in reader.ids:
        if len(pid) >= 5 and pid[0] == "storage" and isinstance(pid[4], int):
            kind = getattr(pid[1], "__name__", str(pid[1]))
            element = _ELEMENT_BYTES.get(kind.removesuffix("Storage"), _LARGEST_ELEMENT)
            declared[str(pid[2])] = max(pid[4], 0) * element
    total = sum(declared.values())
    if total > size:
        key, most = max(declared.items(), key=lambda item: item[1])
        raise CorruptFile(f"{path} is refused: its tensors declare {total:,} bytes (storage "
                          f"{key}: {most:,}) in a file of {size:,} (loading it would allocate "
                          "what it declares)")


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
