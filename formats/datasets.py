"""Readers and writers of the multi-document summarisation datasets researchers train on, so that
data built here trains their systems and theirs can be imported here.

Each reader turns one format into :class:`SourceExample` records, streamed: JSON Lines, CSV and
text files line by line, JSON arrays element by element, Parquet by row batches, ``.pt`` files one
file at a time (:mod:`wikisum.formats.torchfiles`, ``weights_only``), so memory is bounded by the
largest record (or ``.pt`` file), never by the dataset. A record that cannot be converted is
yielded as a :class:`Problem` (file, record, reason, detail) for the caller to count, and the
next record is read: never a crash, never a silent loss. A whole file that cannot be read (no
split in its name, a refused ``.pt``) raises, naming the file.

Each writer is the inverse: :func:`write` takes :class:`OutExample` records and lays out the files
exactly as the system's own loader globs and reads them. Every file is written under a temporary
name and renamed, all together, once every one is whole.

The layouts, as each system's code reads them:

- ``hiersumm`` (Liu & Lapata 2019, nlpyang/hiersumm): ``WIKI.{train,valid,test}.N.pt``, each a
  list of ``{"src": [[ids] per ranked paragraph], "tgt": [BOS, ids..., EOS], "tgt_str": str}``
  (src/abstractive/data_loader.py ``load_dataset`` and ``AbstracticeIterator.preprocess``).
  ``<Q>`` separates the target's sentences (``tgt_str`` words and ``EOQ`` ids).
- ``graphsum`` (Li et al. 2020, PaddlePaddle/Research NLP/ACL2020-GraphSum): one JSON *array*
  per file, ``*.{split}.N.json`` in ``train/``, ``valid/``, ``test/`` folders, elements
  ``{"src", "tgt", "src_str"?, "tgt_str", "sim_graph"}`` (graphsum_reader.py ``load_dataset``).
- ``primera`` (Xiao et al. 2022, allenai/PRIMER): ``train.pt``, ``valid.pt`` (or ``val.pt``),
  ``test.pt``, each a list of ``{"text": [documents], "tgt": str}`` (script/dataloader.py).
- ``wikicatsum`` (Perez-Beltrachini et al. 2019): GEM/wiki_cat_sum's JSON Lines
  ``main_splits/{train,valid,test}-{animal,company,film}.jsonl`` (or its Parquet conversion) of
  ``{gem_id, id, title, paragraphs: [...], summary: {text: [sentences], topic: [ids]}}``, or the
  release's ``{split}.src``/``{split}.tgt`` lines: ``title <EOT> paragraph <EOP> paragraph``
  and ``sentence <SNT> sentence``.
- ``multinews`` (Fabbri et al. 2019): ``document`` (documents separated by ``|||||``) and
  ``summary``; the hub's ``train``/``validation``/``test`` files (JSON Lines, CSV, Parquet) or the
  release's ``{train,val,test}.src[.cleaned]``/``.tgt`` lines, whose newlines are written
  ``NEWLINE_CHAR`` and whose summaries start with ``– ``.
- ``jsonl``: JSON Lines of ``{id, title, documents: [...], summary}``, one file a split.

How markers become text in :attr:`SourceExample.summary` and ``documents``: a paragraph break
(WikiCatSum's ``<EOP>`` and ``<NLTOKEN>``, Multi-News' ``NEWLINE_CHAR``) is a newline; a sentence
break (``<SNT>``, hiersumm's ``<Q>``) is a space, as hiersumm's own scorer turns ``<Q>`` into
one; ``<t>``/``</t>`` are dropped; Multi-News' leading ``– `` is dropped. Whitespace is collapsed
within each line and blank lines are dropped.
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import posixpath
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import IO

from wikisum.core import files, shards
from wikisum.core.text import sentences
from wikisum.formats import torchfiles

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
REASONS = (MALFORMED_JSON, MALFORMED_ROW, BAD_ENCODING, MISSING_FIELD, WRONG_TYPE, EMPTY_SUMMARY,
           NO_DOCUMENTS, BAD_TARGET_IDS, UNPAIRED_LINE, UNREAD_REST)

# The sentencepiece pieces hiersumm's code looks up (src/train_abstractive.py, `symbols`): with a
# vocabulary that lacks one, PieceToId gives <unk> for it and BOS, EOS and PAD collapse into one.
HIERSUMM_PIECES = {"BOS": "<S>", "EOS": "</S>", "PAD": "<PAD>", "EOT": "<T>", "EOP": "<P>",
                   "EOQ": "<Q>"}
MAX_PARAGRAPHS = 40  # hiersumm's ranked WikiSum keeps the top 40 paragraphs (its README)
DEFAULT_SHARD_SIZE = 2000  # examples a hiersumm shard: its loader holds one shard whole
MULTINEWS_SEPARATOR = "|||||"  # between Multi-News documents (the hub's description)
MULTINEWS_SUMMARY_PREFIX = "– "  # how every Multi-News summary starts in the hub's files
# A JSON array element longer than this is malformed: bounds memory on a broken array.
MAX_JSON_ELEMENT_CHARS = 64 * 1024 * 1024
_CHUNK_CHARS = 1 << 20


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


def _require_split(path: str) -> str:
    split = split_of(path)
    if split is None:
        raise ValueError(f"{path}: no split in its name or its folder's (one of "
                         f"{', '.join(sorted(SPLIT_NAMES))} is expected, as each system names "
                         "its files)")
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


def _name(path: str) -> str:
    return posixpath.basename(path.replace(os.sep, "/"))


def _suffix_in(path: str, *suffixes: str) -> bool:
    return _name(path).lower().endswith(suffixes)


# -- text ------------------------------------------------------------------------------------


def clean_lines(text: str) -> str:
    """Paragraphs one a line: whitespace collapsed within each line, blank lines dropped."""
    return "\n".join(" ".join(line.split()) for line in text.split("\n") if line.strip())


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
    separator = ("story_separator_special_tag" if "story_separator_special_tag" in document
                 else MULTINEWS_SEPARATOR)
    pieces = (clean_lines(p.replace("NEWLINE_CHAR", "\n")) for p in document.split(separator))
    return [p for p in pieces if p]


def multinews_summary(summary: str) -> str:
    """A Multi-News summary without the ``– `` every one starts with in the hub's files."""
    return clean_lines(re.sub(r"^\s*[–-]\s+", "", summary))


# -- record sources --------------------------------------------------------------------------

# A record source yields (index, record) or a Problem.
Record = tuple[int, object]


def _lines(path: str) -> Iterator[tuple[int, str | None, str]]:
    """(line index, text, "") of each line, streamed; (line index, None, the decoding error)
    for a line that is not UTF-8."""
    with files.open_read(path) as f:
        for n, raw in enumerate(f):
            try:
                yield n, raw.decode("utf-8").rstrip("\r\n"), ""
            except UnicodeDecodeError as exc:
                yield n, None, str(exc)


def json_records(path: str) -> Iterator[Record | Problem]:
    """The records of a JSON file: the elements of a JSON array (GraphSum writes one array a
    file) or JSON Lines, whichever the first character says. Blank lines are not records."""
    with files.open_read(path) as f:
        head = f.read(4096).lstrip()
    if head[:1] == b"[":
        yield from _json_array(path)
        return
    index = 0
    for n, text, error in _lines(path):
        if text is None:
            yield Problem(path, index, BAD_ENCODING, f"line {n + 1}: {error}")
            index += 1
            continue
        if not text.strip():
            continue
        try:
            yield index, json.loads(text)
        except json.JSONDecodeError as exc:
            yield Problem(path, index, MALFORMED_JSON, f"line {n + 1}: {exc}")
        index += 1


def _json_array(path: str) -> Iterator[Record | Problem]:
    """The elements of one JSON array, decoded one at a time from a buffer refilled in chunks
    (doubling for a long element), so memory is bounded by the largest element. A broken array
    cannot be resynchronised: the rest of the file is one ``unread_rest`` Problem."""
    decoder = json.JSONDecoder()
    index = 0
    with files.open_read(path) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8")
        buf, pos, eof = "", 0, False

        def more() -> bool:
            nonlocal buf, pos, eof
            if eof:
                return False
            piece = text.read(max(_CHUNK_CHARS, len(buf) - pos))
            buf, pos, eof = buf[pos:] + piece, 0, not piece
            return bool(piece)

        def next_char() -> str | None:
            nonlocal pos
            while True:
                while pos < len(buf) and buf[pos].isspace():
                    pos += 1
                if pos < len(buf):
                    return buf[pos]
                if not more():
                    return None

        try:
            if next_char() != "[":
                yield Problem(path, 0, UNREAD_REST, "the file does not start a JSON array")
                return
            pos += 1
            if next_char() == "]":
                return
            while True:
                while True:
                    try:
                        value, end = decoder.raw_decode(buf, pos)
                    except json.JSONDecodeError as exc:
                        if len(buf) - pos <= MAX_JSON_ELEMENT_CHARS and more():
                            continue  # the element may go on in the next chunk
                        yield Problem(path, index, UNREAD_REST, f"element {index}: {exc}; the "
                                      "rest of the file cannot be read")
                        return
                    if end == len(buf) and more():
                        continue  # a number cut at the buffer's end: decode it again, whole
                    break
                pos = end
                yield index, value
                index += 1
                c = next_char()
                if c == ",":
                    pos += 1
                    next_char()
                elif c == "]":
                    return
                else:
                    yield Problem(path, index, UNREAD_REST, f"after element {index - 1}: "
                                  f"{'the file ends' if c is None else repr(c)} where ',' or "
                                  "']' is expected; the rest of the file cannot be read")
                    return
        except UnicodeDecodeError as exc:
            yield Problem(path, index, UNREAD_REST, f"not UTF-8 ({exc}); the rest of the file "
                          "cannot be read")


def csv_records(path: str) -> Iterator[Record | Problem]:
    """The rows of a CSV file with a header, as dicts, streamed (quoted fields may span
    lines)."""
    csv.field_size_limit(max(csv.field_size_limit(), 1 << 30))
    with files.open_read(path) as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8", newline="")
        reader = csv.DictReader(text)
        index = 0
        while True:
            try:
                row = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield Problem(path, index, MALFORMED_ROW, f"line {reader.line_num}: {exc}")
                index += 1
                continue
            except UnicodeDecodeError as exc:
                yield Problem(path, index, UNREAD_REST, f"not UTF-8 ({exc}); the rest of the "
                              "file cannot be read")
                return
            yield index, row
            index += 1


def parquet_records(path: str, batch_rows: int = 64) -> Iterator[Record | Problem]:
    """The rows of a Parquet file, as dicts, a batch of ``batch_rows`` at a time."""
    index = 0
    for row in shards.iter_rows([path], batch_rows=batch_rows):
        yield index, row
        index += 1


def table_records(path: str) -> Iterator[Record | Problem]:
    """The records of a JSON, JSON Lines, CSV or Parquet file, by its extension."""
    if _suffix_in(path, ".parquet"):
        return parquet_records(path)
    if _suffix_in(path, ".csv"):
        return csv_records(path)
    return json_records(path)


def _line_pairs(src: str, tgt: str) -> Iterator[Record | Problem]:
    """(index, (src line, tgt line)) of two line-aligned files, streamed together; a line of
    one without its partner in the other is an ``unpaired_line`` Problem."""
    for left, right in itertools.zip_longest(_lines(src), _lines(tgt)):
        if left is None or right is None:
            n = (right or left)[0]
            have, lack = (tgt, src) if left is None else (src, tgt)
            yield Problem(src, n, UNPAIRED_LINE, f"{_name(have)} line {n + 1} has no line in "
                          f"{_name(lack)}")
            continue
        (n, a, a_error), (_, b, b_error) = left, right
        if a is None or b is None:
            yield Problem(src, n, BAD_ENCODING, f"line {n + 1}: {a_error or b_error}")
            continue
        yield n, (a, b)


def _target_of(src: str) -> str:
    """The ``.tgt`` file beside a ``.src`` (``train.src.cleaned`` -> ``train.tgt``)."""
    name = _name(src)
    base = re.sub(r"\.src(\.cleaned)?$", "", name)
    tgt = src[: len(src) - len(name)] + base + ".tgt"
    if not files.exists(tgt):
        raise FileNotFoundError(f"{src} has no {base}.tgt beside it: a .src file is read with "
                                "its .tgt, line for line")
    return tgt


def _is_source_text(path: str) -> bool:
    return _suffix_in(path, ".src", ".src.cleaned") and ".bow." not in _name(path)


def _is_table(path: str) -> bool:
    return _suffix_in(path, ".jsonl", ".json", ".csv", ".parquet")


def _text_sources(paths: list[str]) -> list[str]:
    """The ``.src`` files of ``paths``; a ``.tgt`` file is read as a ``.src`` file's partner,
    so one given without its ``.src`` is an error, not a silent skip."""
    sources = [p for p in paths if _is_source_text(p)]
    partners = {os.path.normpath(_target_of(p)) for p in sources}
    for path in paths:
        if _suffix_in(path, ".tgt") and ".bow." not in _name(path) and \
                os.path.normpath(path) not in partners:
            raise FileNotFoundError(f"{path} has no .src file read with it")
    return sources


# -- field checks ----------------------------------------------------------------------------


class _Bad(Exception):
    """A record that cannot be converted: becomes a Problem with this reason and detail."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


def _field(record: dict, name: str, kind: type | tuple[type, ...]):
    if name not in record or record[name] is None:
        raise _Bad(MISSING_FIELD, f"no {name!r} field (fields: {', '.join(map(str, record))})")
    value = torchfiles.to_plain(record[name])
    if not isinstance(value, kind):
        raise _Bad(WRONG_TYPE, f"{name!r} is a {type(value).__name__}")
    return value


def _strings(value, name: str) -> list[str]:
    value = torchfiles.to_plain(value)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise _Bad(WRONG_TYPE, f"{name!r} is not a list of strings")
    return list(value)


def _ids(value, name: str) -> tuple[int, ...]:
    value = torchfiles.to_plain(value)
    if not isinstance(value, (list, tuple)) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        raise _Bad(WRONG_TYPE, f"{name!r} is not a list of token ids")
    return tuple(value)


def _dict(record, what: str) -> dict:
    if not isinstance(record, dict):
        raise _Bad(WRONG_TYPE, f"the {what} is a {type(record).__name__}, not an object")
    return record


def _documents(texts: Iterable[str]) -> tuple[str, ...]:
    docs = tuple(d for d in (clean_lines(t) for t in texts) if d)
    if not docs:
        raise _Bad(NO_DOCUMENTS, "no source text")
    return docs


def _summary(text: str) -> str:
    if not text:
        raise _Bad(EMPTY_SUMMARY, "the summary is empty")
    return text


def _convert(source: Iterable[Record | Problem], path: str,
             make: Callable[[int, object], SourceExample]) -> Iterator[SourceExample | Problem]:
    for item in source:
        if isinstance(item, Problem):
            yield item
            continue
        index, record = item
        try:
            yield make(index, record)
        except _Bad as bad:
            yield Problem(path, index, bad.reason, bad.detail)


# -- readers ---------------------------------------------------------------------------------


def _target_ids(tgt: tuple[int, ...], bos: int | None, eos: int | None) -> tuple[int, ...]:
    """hiersumm's ``tgt`` without its BOS and EOS: the model reads ``tgt[:-1]`` and is trained
    on ``tgt[1:]`` (model_builder.py, loss.py), so both ends are always there."""
    if len(tgt) < 2:
        raise _Bad(BAD_TARGET_IDS, f"tgt has {len(tgt)} ids; [BOS, ..., EOS] has two at least")
    if bos is not None and (tgt[0], tgt[-1]) != (bos, eos):
        raise _Bad(BAD_TARGET_IDS, f"tgt runs {tgt[0]} ... {tgt[-1]}, not <S> ({bos}) ... "
                   f"</S> ({eos})")
    return tgt[1:-1]


def _special(sp) -> tuple[int | None, int | None]:
    if sp is None:
        return None, None
    ids = hiersumm_symbols(sp)
    return ids["BOS"], ids["EOS"]


def _ids_example(record, split: str, id_: str, bos: int | None, eos: int | None,
                 extra_fields: tuple[str, ...] = ()) -> SourceExample:
    """A hiersumm/GraphSum record: ranked paragraphs as ids, the target as ids and text."""
    record = _dict(record, "record")
    src = _field(record, "src", (list, tuple))
    paragraph_ids = tuple(_ids(p, "src") for p in src)
    if not paragraph_ids:
        raise _Bad(NO_DOCUMENTS, "src holds no paragraph")
    summary_ids = _target_ids(_ids(_field(record, "tgt", (list, tuple)), "tgt"), bos, eos)
    summary = _summary(hiersumm_summary(_field(record, "tgt_str", str)))
    documents = ()
    if record.get("src_str") is not None:
        documents = tuple(clean_lines(s) for s in _strings(record["src_str"], "src_str"))
    extra = {name: record[name] for name in extra_fields if record.get(name) is not None}
    return SourceExample(split, id_, "", documents, summary, paragraph_ids, summary_ids,
                         extra or None)


def _drained(records: list) -> Iterator[Record]:
    """(index, record) of a loaded file's list, each record let go as it is taken, so that the
    file's memory is handed back while it is converted and no two files are ever held at once
    (a 100 MiB hiersumm shard is about 900 MiB of Python lists)."""
    records.reverse()
    index = 0
    while records:
        yield index, records.pop()
        index += 1


def read_hiersumm(paths: Iterable[str], sp=None) -> Iterator[SourceExample | Problem]:
    """hiersumm's ``WIKI.{train,valid,test}.N.pt`` shards, one file at a time. With ``sp``
    (its ``spm9998_3.model``) each ``tgt`` is checked to run ``<S> ... </S>``; without, its two
    ends are taken as BOS and EOS, as hiersumm's model takes them."""
    bos, eos = _special(sp)
    for path in expand(paths, lambda p: re.search(r"\.(train|valid|test)(\.\d+)?\.pt$",
                                                  _name(p)) is not None):
        split = _require_split(path)
        yield from _convert(_drained(torchfiles.load_records(path)), path,
                            lambda i, r, path=path, split=split:
                            _ids_example(r, split, f"{_name(path)}:{i}", bos, eos))


GRAPHS = ("sim_graph", "topic_graph", "discourse_graph")  # graphsum_reader.py, graph_type


def read_graphsum(paths: Iterable[str], sp=None) -> Iterator[SourceExample | Problem]:
    """GraphSum's ``*.N.json`` files (one JSON array each), element by element. ``src_str``,
    when there, gives the documents (the text of each ``src`` unit); the graphs go to
    ``extra``."""
    bos, eos = _special(sp)
    for path in expand(paths, lambda p: _suffix_in(p, ".json")):
        split = _require_split(path)
        yield from _convert(json_records(path), path, lambda i, r, path=path, split=split:
                            _ids_example(r, split, f"{_name(path)}:{i}", bos, eos, GRAPHS))


def _primera_example(record, split: str, id_: str) -> SourceExample:
    record = _dict(record, "entry")
    documents = _documents(_strings(_field(record, "text", (list, tuple)), "text"))
    summary = _summary(clean_lines(_field(record, "tgt", str)))
    return SourceExample(split, id_, "", documents, summary)


def read_primera(paths: Iterable[str], sp=None) -> Iterator[SourceExample | Problem]:
    """PRIMERA's ``train.pt``, ``valid.pt`` (``val.pt``), ``test.pt``: a whole split a file."""
    for path in expand(paths, lambda p: _suffix_in(p, ".pt")):
        split = _require_split(path)
        yield from _convert(_drained(torchfiles.load_records(path)), path,
                            lambda i, r, path=path, split=split:
                            _primera_example(r, split, f"{_name(path)}:{i}"))


def _wikicatsum_summary(value) -> tuple[str, list[int] | None]:
    """GEM's ``summary``: ``{text: [sentences], topic: [labels]}`` (or, as some conversions
    store it, a list of ``{text, topic}``), or a plain string."""
    value = torchfiles.to_plain(value)
    if isinstance(value, str):
        return wikicatsum_text(value), None
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        value = {"text": [v.get("text") for v in value], "topic": [v.get("topic") for v in value]}
    if not isinstance(value, dict):
        raise _Bad(WRONG_TYPE, f"'summary' is a {type(value).__name__}")
    texts = _strings(value.get("text"), "summary.text")
    topics = value.get("topic")
    if topics is not None:
        topics = list(_ids(topics, "summary.topic"))
    return wikicatsum_text(" ".join(texts)), topics


def _wikicatsum_record(record, split: str, id_: str) -> SourceExample:
    record = _dict(record, "record")
    documents = _documents(wikicatsum_text(p) for p in _strings(
        _field(record, "paragraphs", (list, tuple)), "paragraphs"))
    summary, topics = _wikicatsum_summary(_field(record, "summary", (dict, list, str)))
    title = record.get("title")
    if title is not None and not isinstance(title, str):
        raise _Bad(WRONG_TYPE, f"'title' is a {type(title).__name__}")
    extra = {"topics": topics} if topics is not None else {}
    if record.get("gem_id") is not None and record.get("id") is not None:
        extra["wikicatsum_id"] = str(record["id"])
    source_id = record.get("gem_id", record.get("id"))
    return SourceExample(split, str(source_id) if source_id is not None else id_,
                         wikicatsum_text(title or ""), documents, _summary(summary), None, None,
                         extra or None)


def _wikicatsum_lines(src_line: str, tgt_line: str, split: str, id_: str) -> SourceExample:
    """A line of the release's ``.src`` (``title <EOT> paragraph <EOP> ...``) and ``.tgt``
    (``sentence <SNT> sentence ...``), as fairseq/fairseq/tokenizerWCSParagraph.py splits
    them."""
    title, sep, body = src_line.partition("<EOT>")
    if not sep:
        title, body = "", src_line
    documents = _documents(wikicatsum_text(p) for p in body.split("<EOP>"))
    return SourceExample(split, id_, clean_lines(title), documents,
                         _summary(wikicatsum_text(tgt_line)))


def read_wikicatsum(paths: Iterable[str], sp=None) -> Iterator[SourceExample | Problem]:
    """WikiCatSum: GEM's JSON Lines or Parquet (``id`` is ``gem_id``, unique across the three
    domains; topic labels in ``extra``), or the release's ``.src``/``.tgt`` text files."""
    chosen = expand(paths, lambda p: _is_table(p) or _is_source_text(p))
    for path in chosen:
        if _is_table(path):
            split = _require_split(path)
            yield from _convert(table_records(path), path, lambda i, r, path=path, split=split:
                                _wikicatsum_record(r, split, f"{_name(path)}:{i}"))
    for src in _text_sources(chosen):
        split = _require_split(src)
        yield from _convert(_line_pairs(src, _target_of(src)), src,
                            lambda i, r, src=src, split=split:
                            _wikicatsum_lines(r[0], r[1], split, f"{_name(src)}:{i}"))


def _multinews_record(record, split: str, id_: str) -> SourceExample:
    record = _dict(record, "record")
    documents = _documents(multinews_documents(_field(record, "document", str)))
    summary = _summary(multinews_summary(_field(record, "summary", str)))
    source_id = record.get("id")
    return SourceExample(split, str(source_id) if source_id not in (None, "") else id_, "",
                         documents, summary)


def read_multinews(paths: Iterable[str], sp=None) -> Iterator[SourceExample | Problem]:
    """Multi-News: the hub's files (JSON Lines, CSV, Parquet with ``document`` and ``summary``)
    or the release's ``{split}.src[.cleaned]``/``{split}.tgt`` lines."""
    chosen = expand(paths, lambda p: _is_table(p) or _is_source_text(p))
    for path in chosen:
        if _is_table(path):
            split = _require_split(path)
            yield from _convert(table_records(path), path, lambda i, r, path=path, split=split:
                                _multinews_record(r, split, f"{_name(path)}:{i}"))
    for src in _text_sources(chosen):
        split = _require_split(src)
        yield from _convert(_line_pairs(src, _target_of(src)), src,
                            lambda i, r, src=src, split=split: _multinews_record(
                                {"document": r[0], "summary": r[1]}, split, f"{_name(src)}:{i}"))


def _generic_record(record, path: str, id_: str) -> SourceExample:
    record = _dict(record, "record")
    split = record.get("split")
    if split is not None:
        if split not in SPLIT_NAMES:
            raise _Bad(WRONG_TYPE, f"'split' is {split!r}, not one of {sorted(SPLIT_NAMES)}")
        split = SPLIT_NAMES[split]
    else:
        split = split_of(path)
        if split is None:
            raise _Bad(MISSING_FIELD, "no 'split' field, and no split in the file's name")
    documents = _documents(_strings(_field(record, "documents", (list, tuple)), "documents"))
    # wikisum's own generic format: the summary as written (its paragraphs kept), stripped
    summary = _summary(_field(record, "summary", str).strip())
    title = record.get("title") or ""
    if not isinstance(title, str):
        raise _Bad(WRONG_TYPE, f"'title' is a {type(title).__name__}")
    source_id = record.get("id")
    return SourceExample(split, str(source_id) if source_id not in (None, "") else id_,
                         clean_lines(title), documents, summary)


def read_jsonl(paths: Iterable[str], sp=None) -> Iterator[SourceExample | Problem]:
    """JSON Lines (or Parquet) of ``{id, title, documents: [...], summary}``; the split from a
    ``split`` field, else from the file's name."""
    for path in expand(paths, lambda p: _suffix_in(p, ".jsonl", ".json", ".parquet")):
        yield from _convert(table_records(path), path, lambda i, r, path=path:
                            _generic_record(r, path, f"{_name(path)}:{i}"))


READERS: dict[str, Callable[..., Iterator[SourceExample | Problem]]] = {
    "hiersumm": read_hiersumm,
    "graphsum": read_graphsum,
    "primera": read_primera,
    "wikicatsum": read_wikicatsum,
    "multinews": read_multinews,
    "jsonl": read_jsonl,
}


def read(format: str, paths: list[str], *, sp=None) -> Iterator[SourceExample | Problem]:
    """The examples of ``paths`` (files, folders, globs) in ``format``, streamed.

    Args:
        sp: hiersumm's/GraphSum's sentencepiece model, to check each target's BOS and EOS
            ids; other formats ignore it.

    Raises:
        ValueError: an unknown format, or a file with no split in its name.
        torchfiles.RefusedFile: a ``.pt`` file that holds more than plain data.
    """
    if format not in READERS:
        raise ValueError(f"unknown format {format!r}: one of {', '.join(READERS)}")
    return READERS[format](list(paths), sp=sp)


def detect(paths: list[str]) -> str:
    """The format of ``paths``, from file names and the first record's fields.

    Raises:
        ValueError: no file, or nothing that says which format it is.
    """
    found = expand(paths, lambda p: _is_table(p) or _is_source_text(p) or _suffix_in(p, ".pt"))
    for path in found:
        name = _name(path)
        if re.search(r"\.(train|valid|test)(\.\d+)?\.pt$", name):
            return "hiersumm"
        if _suffix_in(path, ".pt") and split_of(path):
            return "primera"
        if _is_source_text(path):
            with files.open_read(path) as f:
                head = f.readline(1 << 20).decode("utf-8", "replace")
            return "wikicatsum" if "<EOT>" in head or "<EOP>" in head else "multinews"
        if _is_table(path):
            records = table_records(path)
            try:
                keys = next((set(r[1]) for r in records
                             if not isinstance(r, Problem) and isinstance(r[1], dict)), set())
            finally:
                records.close()
            for fields, format in (({"src", "tgt", "tgt_str"}, "graphsum"),
                                   ({"paragraphs", "summary"}, "wikicatsum"),
                                   ({"document", "summary"}, "multinews"),
                                   ({"documents", "summary"}, "jsonl")):
                if fields <= keys:
                    return format
    raise ValueError(f"cannot tell the format of {', '.join(paths) or 'no path'}: name it "
                     f"({', '.join(READERS)})")


# -- writers ---------------------------------------------------------------------------------


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


class _Staging:
    """Files written under temporary names, renamed all together when every one is whole."""

    def __init__(self):
        self.pairs: list[tuple[str, str]] = []

    def temporary(self, path: str) -> str:
        tmp = shards.temporary_name(path)
        self.pairs.append((tmp, path))
        return tmp

    def write_bytes(self, path: str, data: bytes) -> None:
        with files.open_write(self.temporary(path)) as f:
            f.write(data)

    def commit(self) -> tuple[str, ...]:
        for tmp, path in self.pairs:
            shards.rename(tmp, path)
        return tuple(path for _, path in self.pairs)

    def abort(self) -> None:
        for tmp, _ in self.pairs:
            if files.exists(tmp):
                files.delete(tmp)


class _Lines:
    """One JSON Lines file a split, opened on its first example, under a temporary name."""

    def __init__(self, staging: _Staging, out_dir: str, name: Callable[[str], str]):
        self.staging, self.out_dir, self.name = staging, out_dir, name
        self.open: dict[str, IO[str]] = {}

    def write(self, split: str, record: dict) -> None:
        if split not in self.open:
            raw = files.open_write(self.staging.temporary(files.join(self.out_dir,
                                                                     self.name(split))))
            self.open[split] = io.TextIOWrapper(raw, encoding="utf-8", newline="\n")
        self.open[split].write(json.dumps(record, ensure_ascii=False) + "\n")

    def close(self) -> None:
        for f in self.open.values():
            f.close()


def _existing(out_dir: str, pattern: str) -> list[str]:
    return [p for p in files.match(files.join(out_dir, pattern))
            if not _name(p).startswith(".")]


HIERSUMM_SPLITS = {"train": "train", "dev": "valid", "test": "test"}
MULTINEWS_SPLITS = {"train": "train", "dev": "validation", "test": "test"}


def _split(example: OutExample) -> str:
    split = SPLIT_NAMES.get(example.split)
    if split is None:
        raise ValueError(f"example {example.id!r} has split {example.split!r}, not one of "
                         f"{', '.join(SPLITS)}")
    return split


def hiersumm_record(example: OutExample, sp, symbols: dict[str, int],
                    max_paragraphs: int = MAX_PARAGRAPHS) -> dict | None:
    """An example as hiersumm's loader reads it; None when it has no paragraph or summary.

    ``src``: the ids of the top ``max_paragraphs`` ranked paragraphs (``paragraph_ids`` when
    given, else ``sp`` encodes ``paragraphs``), one list each, no marker: the loader adds
    ``<P>`` between them itself when it flattens (``preprocess``, non-hierarchical mode).
    ``tgt``: ``<S>``, the summary's ids, ``</S>``: ``summary_ids`` when given, else each
    sentence encoded and joined by ``<Q>``, as GraphSum builds hiersumm-style targets
    (data_builder_graphsum.py, ``SummData.preprocess``). ``tgt_str``: the sentences joined by
    `` <Q> ``, the form hiersumm's scorer reads (``<Q>`` -> space). Paragraph breaks of the
    summary are not kept: the format has no marker for them.
    """
    if example.paragraph_ids is not None:
        src = [list(p) for p in example.paragraph_ids[:max_paragraphs] if p]
    else:
        texts = example.paragraphs or example.documents
        src = [ids for ids in (sp.encode(p) for p in texts[:max_paragraphs]) if ids]
    sents = sentences(example.summary)
    if not src or not sents:
        return None
    if example.summary_ids is not None:
        body = list(example.summary_ids)
    else:
        body = []
        for k, sentence in enumerate(sents):
            body += ([symbols["EOQ"]] if k else []) + sp.encode(sentence)
    return {"src": src, "tgt": [symbols["BOS"], *body, symbols["EOS"]],
            "tgt_str": " <Q> ".join(sents)}


def _write_hiersumm(examples, out_dir, staging, report, *, sp, shard_size, max_paragraphs):
    if sp is None:
        raise ValueError("hiersumm stores token ids: pass the sentencepiece model (sp) whose ids "
                         "are written, and train hiersumm with that model (-vocab_path)")
    symbols = hiersumm_symbols(sp)
    buffers: dict[str, list[dict]] = {}
    counts: Counter = Counter()

    def flush(split: str) -> None:
        name = f"WIKI.{HIERSUMM_SPLITS[split]}.{counts[split]}.pt"
        staging.write_bytes(files.join(out_dir, name), torchfiles.dump_records(buffers[split]))
        counts[split] += 1
        buffers[split] = []

    for example in examples:
        split = _split(example)
        record = hiersumm_record(example, sp, symbols, max_paragraphs)
        if record is None:
            report["dropped"].append((example.id, _why_not(example)))
            continue
        buffers.setdefault(split, []).append(record)
        report["written"][split] += 1
        if len(buffers[split]) >= shard_size:
            flush(split)
    for split in list(buffers):
        if buffers[split]:
            flush(split)


def _why_not(example: OutExample) -> str:
    has_source = example.paragraph_ids if example.paragraph_ids is not None else \
        any(p.strip() for p in example.paragraphs or example.documents)
    return NO_PARAGRAPHS if not has_source else EMPTY_SUMMARY


def _write_primera(examples, out_dir, staging, report, *, max_paragraphs, **_):
    """PRIMERA reads a split as one ``torch.save``d list (``torch.load(data_path +
    "train.pt")``), so a split is held whole here too: memory is bounded by the largest
    split, not by one example."""
    entries: dict[str, list[dict]] = {}
    for example in examples:
        split = _split(example)
        # PRIMERA is a multi-document model: ``text`` is the list of source documents
        texts = [clean_lines(t) for t in (example.documents or example.paragraphs)]
        texts = [t for t in texts if t]
        summary = clean_lines(example.summary)
        if not texts or not summary:
            report["dropped"].append((example.id, NO_PARAGRAPHS if not texts else EMPTY_SUMMARY))
            continue
        entries.setdefault(split, []).append({"text": texts, "tgt": summary})
        report["written"][split] += 1
    for split, records in entries.items():
        staging.write_bytes(files.join(out_dir, f"{HIERSUMM_SPLITS[split]}.pt"),
                            torchfiles.dump_records(records))


def multinews_record(example: OutExample) -> dict | None:
    """An example as the hub's Multi-News row: the documents each followed by `` |||||`` (a
    trailing separator: PRIMERA keeps ``document.split("|||||")[:-1]``, script/dataloader.py,
    and would drop the last document without it), the summary after ``– ``."""
    docs = [clean_lines(d) for d in (example.documents or example.paragraphs)]
    docs = [d.replace(MULTINEWS_SEPARATOR, " ") for d in docs if d]
    summary = clean_lines(example.summary)
    if not docs or not summary:
        return None
    document = "".join(f"{d} {MULTINEWS_SEPARATOR} " for d in docs).rstrip()
    return {"document": document, "summary": MULTINEWS_SUMMARY_PREFIX + summary}


def _write_lines(examples, out_dir, staging, report, *, make, name, **_):
    lines = _Lines(staging, out_dir, name)
    try:
        for example in examples:
            split = _split(example)
            record = make(example)
            if record is None:
                report["dropped"].append((example.id, _why_not(example)))
                continue
            lines.write(split, record)
            report["written"][split] += 1
    finally:
        lines.close()


def jsonl_record(example: OutExample) -> dict | None:
    """An example as the generic JSON Lines record; the ranked paragraphs stand for the
    documents when it has none."""
    docs = [d for d in (clean_lines(t) for t in (example.documents or example.paragraphs)) if d]
    summary = example.summary.strip()  # as written: its paragraphs kept
    if not docs or not summary:
        return None
    return {"id": example.id, "title": example.title, "documents": docs, "summary": summary}


# Each writer: the files it writes (a glob in out_dir, for the refusal to mix runs) and how.
WRITERS = {
    "hiersumm": ("WIKI.*.pt", _write_hiersumm),
    "primera": ("*.pt", _write_primera),
    "multinews": ("*.jsonl", lambda *a, **k: _write_lines(
        *a, make=multinews_record, name=lambda s: f"{MULTINEWS_SPLITS[s]}.jsonl", **k)),
    "jsonl": ("*.jsonl", lambda *a, **k: _write_lines(
        *a, make=jsonl_record, name=lambda s: f"{s}.jsonl", **k)),
}


def write(format: str, examples: Iterable[OutExample], out_dir: str, *, sp=None,
          shard_size: int = DEFAULT_SHARD_SIZE,
          max_paragraphs: int = MAX_PARAGRAPHS) -> WriteReport:
    """``examples`` as ``format``'s files in ``out_dir``, laid out as its loader reads them.

    ``hiersumm`` streams shards of ``shard_size`` examples (``WIKI.{train,valid,test}.N.pt``)
    and needs ``sp``, the sentencepiece model whose ids it writes, with hiersumm's pieces
    (:data:`HIERSUMM_PIECES`). ``primera`` holds a split in memory (its format is one list a
    split). ``multinews`` and ``jsonl`` stream JSON Lines, one file a split. Every file is
    renamed into place only when all are whole; a failure leaves none.

    Raises:
        ValueError: an unknown format, an example with an unknown split, no ``sp`` for
            hiersumm or one without its pieces.
        FileExistsError: ``out_dir`` already holds files of the format (a reader's glob would
            mix the two runs).
    """
    if format not in WRITERS:
        raise ValueError(f"cannot write {format!r}: one of {', '.join(WRITERS)}")
    if shard_size < 1:
        raise ValueError(f"shard_size is {shard_size}; a shard holds one example at least")
    pattern, writer = WRITERS[format]
    there = _existing(out_dir, pattern)
    if there:
        raise FileExistsError(f"{out_dir} already holds {len(there)} {pattern} files "
                              f"({_name(there[0])} ...): write to an empty folder")
    staging = _Staging()
    report = {"written": Counter(), "dropped": []}
    try:
        writer(examples, out_dir, staging, report, sp=sp, shard_size=shard_size,
               max_paragraphs=max_paragraphs)
        written = staging.commit()
    except BaseException:
        staging.abort()
        raise
    return WriteReport(written, dict(report["written"]), tuple(report["dropped"]))
