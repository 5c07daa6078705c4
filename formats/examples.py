"""What every dataset format converts to and from (:mod:`wikisum.formats.datasets`): the
examples, the reasons a record is not converted, file names and splits as each system names them,
and each system's text markup as plain text."""

from __future__ import annotations

import os
import posixpath
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from wikisum.core import files

SPLITS = ("train", "dev", "test")
# How each system names a split in its file names, to ours.
SPLIT_NAMES = {"train": "train", "valid": "dev", "val": "dev", "validation": "dev", "dev": "dev",
               "test": "test"}

# Problem reasons: what the caller counts a record under.
MALFORMED_JSON = "malformed_json"  # a line (or an array element) that is not JSON
MALFORMED_ROW = "malformed_row"  # a CSV row the csv module cannot parse
BAD_ENCODING = "bad_encoding"  # a line that is not UTF-8
MISSING_FIELD = "missing_field"  # a field the format requires is absent
WRONG_TYPE = "wrong_type"  # a field (or the record) is not of the format's type
EMPTY_SUMMARY = "empty_summary"  # no summary text once markers are removed
NO_DOCUMENTS = "no_documents"  # no source text (or, for the id formats, no paragraph)
BAD_TARGET_IDS = "bad_target_ids"  # hiersumm/GraphSum tgt not [BOS, ..., EOS]
UNPAIRED_LINE = "unpaired_line"  # a .src line without its .tgt line, or the reverse
UNREAD_REST = "unread_rest"  # a JSON array broken here: the rest of its file cannot be read
TOO_LARGE = "too_large"  # a record or example over ReadLimits.max_record_bytes
TOO_DEEP = "too_deep"  # JSON nested deeper than the parser's recursion limit
CONTROL_CHARACTERS = "control_characters"  # NUL or another control character in the text
BAD_IDS = "bad_ids"  # a token id that is not an integer of the vocabulary
TOO_MANY_PARAGRAPHS = "too_many_paragraphs"  # over ReadLimits.max_paragraphs
AMBIGUOUS_SEPARATOR = "ambiguous_separator"  # the format's separators where none can be
RESERVED_PIECE = "reserved_piece"  # text holding a piece the vocabulary reserves (<t>, <sep>)
REASONS = (MALFORMED_JSON, MALFORMED_ROW, BAD_ENCODING, MISSING_FIELD, WRONG_TYPE, EMPTY_SUMMARY,
           NO_DOCUMENTS, BAD_TARGET_IDS, UNPAIRED_LINE, UNREAD_REST, TOO_LARGE, TOO_DEEP,
           CONTROL_CHARACTERS, BAD_IDS, TOO_MANY_PARAGRAPHS, AMBIGUOUS_SEPARATOR, RESERVED_PIECE)

# The sentencepiece pieces hiersumm's code looks up (src/train_abstractive.py, `symbols`): with a
# vocabulary that lacks one, PieceToId gives <unk> for it and BOS, EOS and PAD collapse into one.
HIERSUMM_PIECES = {"BOS": "<S>", "EOS": "</S>", "PAD": "<PAD>", "EOT": "<T>", "EOP": "<P>",
                   "EOQ": "<Q>"}
MAX_PARAGRAPHS = 40  # hiersumm's ranked WikiSum keeps the top 40 paragraphs (its README)
DEFAULT_SHARD_SIZE = 2000  # examples a hiersumm shard: its loader holds one shard whole
MULTINEWS_SEPARATOR = "|||||"  # between Multi-News documents (the hub's description)
MULTINEWS_RELEASE_SEPARATOR = "story_separator_special_tag"  # the same, in the release's files
MULTINEWS_SUMMARY_PREFIX = "– "  # how every Multi-News summary starts in the hub's files


@dataclass(frozen=True)
class SourceExample:
    split: str  # "train" | "dev" | "test" (valid/validation -> dev)
    id: str  # the source's id, or "<file name>:<index>" when it has none
    title: str  # "" when the format has none
    documents: tuple[str, ...]  # raw text documents (paragraphs separated by "\n"), () when ids
    summary: str  # the reference summary as plain text (markers turned into text: module doc)
    paragraph_ids: tuple[tuple[int, ...], ...] | None = None  # hiersumm/GraphSum ranked ids
    summary_ids: tuple[int, ...] | None = None  # hiersumm/GraphSum target ids, no BOS/EOS
    extra: dict | None = None  # e.g. WikiCatSum's topic labels, GraphSum's sim_graph


@dataclass(frozen=True)
class Problem:
    """A record that could not be converted: counted by the caller under ``reason``."""

    file: str
    record: int  # 0-based position of the record in its file
    reason: str  # one of REASONS
    detail: str


@dataclass(frozen=True)
class OutExample:
    split: str  # "train" | "dev" | "test"
    id: str
    title: str
    documents: tuple[str, ...]  # raw text documents
    paragraphs: tuple[str, ...]  # ranked paragraphs, best first
    paragraph_ids: tuple[tuple[int, ...], ...] | None  # their ids in the writer's vocabulary
    summary: str
    summary_ids: tuple[int, ...] | None  # without BOS/EOS


@dataclass(frozen=True)
class WriteReport:
    files: tuple[str, ...]  # every file written, in writing order
    written: dict[str, int]  # examples written per split
    dropped: tuple[tuple[str, str], ...]  # (example id, reason) of each example not written

    def dropped_counts(self) -> dict[str, int]:
        return dict(Counter(reason for _, reason in self.dropped))


# Writer drop reasons.
NO_PARAGRAPHS = "no_paragraphs"  # nothing to write as the source (no paragraph, no document)


# -- what every example must be -------------------------------------------------------------

# Lone surrogates: bytes that are not UTF-8 (decoded as surrogate escapes) or a JSON escape of
# half a pair (\ud800 written in JSON); no UTF-8 file can hold them.
_SURROGATE = re.compile("[\ud800-\udfff]")
# Control characters that are not whitespace (tab, newlines, vertical tab, form feed and the
# separators U+001C to U+001F are whitespace, collapsed like spaces): NUL, ESC, DEL, ...
_CONTROL = re.compile("[\x00-\x08\x0e-\x1b\x7f]")


def _texts(example: SourceExample) -> Iterator[tuple[str, str]]:
    yield "id", example.id
    yield "title", example.title
    yield "summary", example.summary
    for i, document in enumerate(example.documents):
        yield f"document {i}", document


def example_problem(example: SourceExample, max_bytes: int, max_paragraphs: int
                    ) -> tuple[str, str] | None:
    """(reason, detail) where ``example`` is not one to keep, else None: over ``max_bytes`` of
    text (UTF-8) and token ids (4 bytes each), text that is not Unicode (lone surrogates) or
    holds control characters, more than ``max_paragraphs`` paragraphs (the lines of its
    documents, or its ranked paragraphs of ids)."""
    size = 4 * (sum(len(p) for p in example.paragraph_ids or ()) + len(example.summary_ids or ()))
    for name, text in _texts(example):
        size += len(text.encode("utf-8", "surrogatepass"))
        if size > max_bytes:
            return TOO_LARGE, f"over {max_bytes:,} bytes of text and ids (at the {name})"
    for name, text in _texts(example):
        found = _SURROGATE.search(text)
        if found:
            return BAD_ENCODING, (f"the {name} is not Unicode at character {found.start():,} "
                                  "(bytes that are not UTF-8, or half a surrogate pair)")
        found = _CONTROL.search(text)
        if found:
            return CONTROL_CHARACTERS, (f"the {name} holds the control character "
                                        f"U+{ord(found.group()):04X} at character "
                                        f"{found.start():,}")
    paragraphs = len(example.paragraph_ids) if example.paragraph_ids is not None else sum(
        document.count("\n") + 1 for document in example.documents)
    if paragraphs > max_paragraphs:
        return TOO_MANY_PARAGRAPHS, f"{paragraphs:,} paragraphs, over {max_paragraphs:,}"
    return None


def safe_text(text: str, max_chars: int = 2000) -> str:
    """``text`` as a report may hold it: lone surrogates escaped (``\\udcff``), cut to
    ``max_chars`` with the number of characters left out said."""
    if len(text) > max_chars:
        text = f"{text[:max_chars]}... ({len(text) - max_chars:,} more characters)"
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# -- file names and splits --------------------------------------------------------------------


def split_of(path: str) -> str | None:
    """Our split of a file from its name as the systems name them (``WIKI.valid.3.pt``,
    ``validation-00000-of-00001.parquet``, ``valid-animal.jsonl``, ``val.src.cleaned``), else
    from its folder's name (``train/0000.parquet``); None when neither says."""
    name = posixpath.basename(path.replace(os.sep, "/"))
    for token in re.split(r"[^a-z0-9]+", name.lower()):
        if token in SPLIT_NAMES:
            return SPLIT_NAMES[token]
    folder = posixpath.basename(posixpath.dirname(path.replace(os.sep, "/"))).lower()
    return SPLIT_NAMES.get(folder)


def no_split(path: str) -> str:
    """Why the split of the file ``path`` cannot be told, and how to name it so that it can."""
    name = file_name(path)
    suffix = name[name.index("."):] if "." in name else ""
    return (f"{path}: no split in its name or its folder's, so its split cannot be told: name "
            f"it for its split (train{suffix}, dev{suffix} or test{suffix}; valid, val and "
            "validation are dev) or put it in a folder so named")


def require_split(path: str) -> str:
    """The split of ``path`` (:func:`split_of`).

    Raises:
        ValueError: neither its name nor its folder's says one (:func:`no_split`).
    """
    split = split_of(path)
    if split is None:
        raise ValueError(no_split(path))
    return split


def _natural(path: str) -> list:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", path)]


def expand(paths: Iterable[str], accept: Callable[[str], bool]) -> list[str]:
    """Files named by ``paths``: a file as given, a glob's matches, a folder's files (walked,
    hidden ones skipped: temporary files start with a dot) that ``accept`` takes. Sorted with
    numbers in numeric order (``.2.pt`` before ``.10.pt``), each once.

    Raises:
        FileNotFoundError: a path that is not there, or a glob that matches nothing.
    """
    out: list[str] = []
    for path in paths:
        if any(c in path for c in "*?["):
            found = [p for p in files.match(path) if not files.is_dir(p)]
            if not found:
                raise FileNotFoundError(f"no file matches {path}")
            out += sorted(found, key=_natural)
        elif files.is_dir(path):
            out += sorted((p for p in _walk(path) if accept(p)), key=_natural)
        elif files.exists(path):
            out.append(path)
        else:
            raise FileNotFoundError(f"{path} is not there")
    return list(dict.fromkeys(out))


def _walk(folder: str) -> Iterator[str]:
    if files.is_url(folder):
        for path in files.match(files.join(folder, "**")):
            if not files.is_dir(path) and not posixpath.basename(path).startswith("."):
                yield path
        return
    for root, dirs, names in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        yield from (os.path.join(root, n) for n in names if not n.startswith("."))


def file_name(path: str) -> str:
    return posixpath.basename(path.replace(os.sep, "/"))


def has_suffix(path: str, *suffixes: str) -> bool:
    return file_name(path).lower().endswith(suffixes)


# -- text ------------------------------------------------------------------------------------


_SPACES = re.compile(r"\s+")  # what str.split() splits at (the characters str.isspace() takes)


def clean_lines(text: str) -> str:
    """Paragraphs one a line: whitespace collapsed within each line, blank lines dropped. Done
    without a list of the words, so a long line costs a few copies of itself, not tens of bytes
    a word."""
    lines = (_SPACES.sub(" ", line).strip() for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def hiersumm_summary(tgt_str: str) -> str:
    """hiersumm's ``tgt_str`` as plain text: ``<Q>`` (between sentences) a space and ``<t>``,
    ``</t>`` dropped, as its scorer does (predictor_builder.py, ``translate``)."""
    text = tgt_str.replace("<t>", " ").replace("</t>", " ").replace("<Q>", " ")
    return clean_lines(text)


def wikicatsum_text(text: str) -> str:
    """WikiCatSum text as plain text: ``<EOP>`` and ``<NLTOKEN>`` newlines, ``<SNT>`` and
    ``<EOT>`` spaces (fairseq/fairseq/preprocess/Constants.py)."""
    for marker, plain in (("<EOP>", "\n"), ("<NLTOKEN>", "\n"), ("<SNT>", " "), ("<EOT>", " ")):
        text = text.replace(marker, plain)
    return clean_lines(text)


def multinews_documents(document: str) -> list[str]:
    """A Multi-News ``document`` field as its documents: split at ``|||||`` (at the processed
    release's ``story_separator_special_tag`` when it has that instead), ``NEWLINE_CHAR`` a
    newline, empty pieces (the trailing separator's) dropped."""
    separator = (MULTINEWS_RELEASE_SEPARATOR if MULTINEWS_RELEASE_SEPARATOR in document
                 else MULTINEWS_SEPARATOR)
    pieces = (clean_lines(p.replace("NEWLINE_CHAR", "\n")) for p in document.split(separator))
    return [p for p in pieces if p]


def multinews_summary(summary: str) -> str:
    """A Multi-News summary without the ``– `` every one starts with in the hub's files."""
    return clean_lines(re.sub(r"^\s*[–-]\s+", "", summary))


def hiersumm_symbols(sp) -> dict[str, int]:
    """hiersumm's special ids in ``sp``, as its code looks them up (train_abstractive.py).

    Raises:
        ValueError: ``sp`` lacks one of :data:`HIERSUMM_PIECES` (the message lists them).
    """
    ids = {name: sp.piece_to_id(piece) for name, piece in HIERSUMM_PIECES.items()}
    unk = sp.unk_id()
    missing = [HIERSUMM_PIECES[name] for name, i in ids.items()
               if i == unk or sp.id_to_piece(i) != HIERSUMM_PIECES[name]]
    if missing:
        raise ValueError(f"the vocabulary lacks hiersumm's pieces {' '.join(missing)} (it needs "
                         f"{' '.join(HIERSUMM_PIECES.values())} as user-defined symbols)")
    return ids

