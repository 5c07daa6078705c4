"""The dataset readers: each format's files as :class:`~wikisum.formats.examples.SourceExample`
records, streamed (:mod:`wikisum.formats.datasets` has the layouts)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from wikisum.core import files
from wikisum.formats import torchfiles
from wikisum.formats.config import DEFAULT_LIMITS, ReadLimits
from wikisum.formats.examples import (
    AMBIGUOUS_SEPARATOR,
    BAD_TARGET_IDS,
    MISSING_FIELD,
    MULTINEWS_RELEASE_SEPARATOR,
    MULTINEWS_SEPARATOR,
    NO_DOCUMENTS,
    SPLIT_NAMES,
    TOO_MANY_PARAGRAPHS,
    WRONG_TYPE,
    Problem,
    SourceExample,
    clean_lines,
    expand,
    file_name,
    has_suffix,
    hiersumm_summary,
    hiersumm_symbols,
    multinews_documents,
    multinews_summary,
    require_split,
    split_of,
    wikicatsum_text,
)
from wikisum.formats.sources import (
    Bad,
    Record,
    convert,
    documents_of,
    field_of,
    ids_of,
    is_source_text,
    is_table,
    json_records,
    line_pairs,
    object_of,
    strings_of,
    summary_of,
    table_records,
    target_of,
    text_sources,
)


def _target_ids(tgt: tuple[int, ...], bos: int | None, eos: int | None,
                limits: ReadLimits) -> tuple[int, ...]:
    """hiersumm's ``tgt`` without its BOS and EOS: the model reads ``tgt[:-1]`` and is trained
    on ``tgt[1:]`` (model_builder.py, loss.py), so both ends are always there; between them no
    id of ``limits.reserved_ids`` (a second EOS would end the target early)."""
    if len(tgt) < 2:
        raise Bad(BAD_TARGET_IDS, f"tgt has {len(tgt)} ids; [BOS, ..., EOS] has two at least")
    if bos is not None and (tgt[0], tgt[-1]) != (bos, eos):
        raise Bad(BAD_TARGET_IDS, f"tgt runs {tgt[0]} ... {tgt[-1]}, not <S> ({bos}) ... "
                  f"</S> ({eos})")
    inner = tgt[1:-1]
    inside = next((i for i, v in enumerate(inner) if v in limits.reserved_ids), None)
    if inside is not None:
        raise Bad(BAD_TARGET_IDS, f"tgt[{inside + 1}] is {inner[inside]}, an id that marks "
                  "structure (a control piece or hiersumm's <S>, </S>, <PAD>) inside the target")
    return inner


def _special(sp) -> tuple[int | None, int | None]:
    if sp is None:
        return None, None
    ids = hiersumm_symbols(sp)
    return ids["BOS"], ids["EOS"]


def _ids_example(record, split: str, id_: str, bos: int | None, eos: int | None,
                 limits: ReadLimits, extra_fields: tuple[str, ...] = ()) -> SourceExample:
    """A hiersumm/GraphSum record: ranked paragraphs as ids, the target as ids and text."""
    record = object_of(record, "record")
    src = field_of(record, "src", (list, tuple))
    if len(src) > limits.max_paragraphs:  # checked before the ids are read
        raise Bad(TOO_MANY_PARAGRAPHS, f"{len(src):,} paragraphs, over "
                  f"{limits.max_paragraphs:,}")
    paragraph_ids = tuple(ids_of(p, f"src[{i}]", limits.vocab_size, limits.reserved_ids)
                          for i, p in enumerate(src))
    if not paragraph_ids:
        raise Bad(NO_DOCUMENTS, "src holds no paragraph")
    summary_ids = _target_ids(ids_of(field_of(record, "tgt", (list, tuple)), "tgt",
                                     limits.vocab_size), bos, eos, limits)
    summary = summary_of(hiersumm_summary(field_of(record, "tgt_str", str)))
    documents = ()
    if record.get("src_str") is not None:
        documents = tuple(clean_lines(s) for s in strings_of(record["src_str"], "src_str"))
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


def read_hiersumm(paths: Iterable[str], sp=None, limits: ReadLimits = DEFAULT_LIMITS
                  ) -> Iterator[SourceExample | Problem]:
    """hiersumm's ``WIKI.{train,valid,test}.N.pt`` shards, one file at a time. With ``sp``
    (its ``spm9998_3.model``) each ``tgt`` is checked to run ``<S> ... </S>``; without, its two
    ends are taken as BOS and EOS, as hiersumm's model takes them."""
    bos, eos = _special(sp)
    for path in expand(paths, lambda p: re.search(r"\.(train|valid|test)(\.\d+)?\.pt$",
                                                  file_name(p)) is not None):
        split = require_split(path)
        yield from convert(_drained(torchfiles.load_records(path)), path,
                           lambda i, r, path=path, split=split:
                           _ids_example(r, split, f"{file_name(path)}:{i}", bos, eos, limits),
                           limits)


GRAPHS = ("sim_graph", "topic_graph", "discourse_graph")  # graphsum_reader.py, graph_type


def read_graphsum(paths: Iterable[str], sp=None, limits: ReadLimits = DEFAULT_LIMITS
                  ) -> Iterator[SourceExample | Problem]:
    """GraphSum's ``*.N.json`` files (one JSON array each), element by element. ``src_str``,
    when there, gives the documents (the text of each ``src`` unit); the graphs go to
    ``extra``."""
    bos, eos = _special(sp)
    for path in expand(paths, lambda p: has_suffix(p, ".json")):
        split = require_split(path)
        yield from convert(json_records(path, limits.max_record_bytes), path,
                           lambda i, r, path=path, split=split:
                           _ids_example(r, split, f"{file_name(path)}:{i}", bos, eos, limits,
                                        GRAPHS), limits)


def _primera_example(record, split: str, id_: str) -> SourceExample:
    record = object_of(record, "entry")
    documents = documents_of(strings_of(field_of(record, "text", (list, tuple)), "text"))
    summary = summary_of(clean_lines(field_of(record, "tgt", str)))
    return SourceExample(split, id_, "", documents, summary)


def read_primera(paths: Iterable[str], sp=None, limits: ReadLimits = DEFAULT_LIMITS
                 ) -> Iterator[SourceExample | Problem]:
    """PRIMERA's ``train.pt``, ``valid.pt`` (``val.pt``), ``test.pt``: a whole split a file."""
    for path in expand(paths, lambda p: has_suffix(p, ".pt")):
        split = require_split(path)
        yield from convert(_drained(torchfiles.load_records(path)), path,
                           lambda i, r, path=path, split=split:
                           _primera_example(r, split, f"{file_name(path)}:{i}"), limits)


def _wikicatsum_summary(value) -> tuple[str, list[int] | None]:
    """GEM's ``summary``: ``{text: [sentences], topic: [labels]}`` (or, as some conversions
    store it, a list of ``{text, topic}``), or a plain string."""
    value = torchfiles.to_plain(value)
    if isinstance(value, str):
        return wikicatsum_text(value), None
    if isinstance(value, list) and all(isinstance(v, dict) for v in value):
        value = {"text": [v.get("text") for v in value], "topic": [v.get("topic") for v in value]}
    if not isinstance(value, dict):
        raise Bad(WRONG_TYPE, f"'summary' is a {type(value).__name__}")
    texts = strings_of(value.get("text"), "summary.text")
    topics = value.get("topic")
    if topics is not None:
        topics = list(ids_of(topics, "summary.topic"))
    return wikicatsum_text(" ".join(texts)), topics


def _wikicatsum_record(record, split: str, id_: str) -> SourceExample:
    record = object_of(record, "record")
    documents = documents_of(wikicatsum_text(p) for p in strings_of(
        field_of(record, "paragraphs", (list, tuple)), "paragraphs"))
    summary, topics = _wikicatsum_summary(field_of(record, "summary", (dict, list, str)))
    title = record.get("title")
    if title is not None and not isinstance(title, str):
        raise Bad(WRONG_TYPE, f"'title' is a {type(title).__name__}")
    extra = {"topics": topics} if topics is not None else {}
    if record.get("gem_id") is not None and record.get("id") is not None:
        extra["wikicatsum_id"] = str(record["id"])
    source_id = record.get("gem_id", record.get("id"))
    return SourceExample(split, str(source_id) if source_id is not None else id_,
                         wikicatsum_text(title or ""), documents, summary_of(summary), None, None,
                         extra or None)


def _wikicatsum_lines(src_line: str, tgt_line: str, split: str, id_: str) -> SourceExample:
    """A line of the release's ``.src`` (``title <EOT> paragraph <EOP> ...``) and ``.tgt``
    (``sentence <SNT> sentence ...``), as fairseq/fairseq/tokenizerWCSParagraph.py splits
    them."""
    if src_line.count("<EOT>") > 1:
        raise Bad(AMBIGUOUS_SEPARATOR, f"the source line holds <EOT> {src_line.count('<EOT>')} "
                  "times: which one ends the title is unclear")
    title, sep, body = src_line.partition("<EOT>")
    if not sep:
        title, body = "", src_line
    marker = next((m for m in ("<EOP>", "<SNT>", "<NLTOKEN>") if m in title), None)
    if marker is not None:
        raise Bad(AMBIGUOUS_SEPARATOR, f"{marker} before the source line's <EOT>: the title "
                  "would hold a paragraph or sentence break")
    documents = documents_of(wikicatsum_text(p) for p in body.split("<EOP>"))
    return SourceExample(split, id_, clean_lines(title), documents,
                         summary_of(wikicatsum_text(tgt_line)))


def _tables_and_lines(paths: Iterable[str], from_record: Callable[[object, str, str],
                      SourceExample], from_lines: Callable[[str, str, str, str], SourceExample],
                      limits: ReadLimits) -> Iterator[SourceExample | Problem]:
    """The examples of a format read either as table files (JSON Lines, CSV, Parquet: each
    record through ``from_record(record, split, id)``) or as a release's line-aligned
    ``.src``/``.tgt`` files (each pair through ``from_lines(src, tgt, split, id)``)."""
    chosen = expand(paths, lambda p: is_table(p) or is_source_text(p))
    for path in chosen:
        if is_table(path):
            split = require_split(path)
            yield from convert(table_records(path, limits.max_record_bytes), path,
                               lambda i, r, path=path, split=split:
                               from_record(r, split, f"{file_name(path)}:{i}"), limits)
    for src in text_sources(chosen):
        split = require_split(src)
        yield from convert(line_pairs(src, target_of(src), limits.max_record_bytes), src,
                           lambda i, r, src=src, split=split:
                           from_lines(r[0], r[1], split, f"{file_name(src)}:{i}"), limits)


def read_wikicatsum(paths: Iterable[str], sp=None, limits: ReadLimits = DEFAULT_LIMITS
                    ) -> Iterator[SourceExample | Problem]:
    """WikiCatSum: GEM's JSON Lines or Parquet (``id`` is ``gem_id``, unique across the three
    domains; topic labels in ``extra``), or the release's ``.src``/``.tgt`` text files."""
    return _tables_and_lines(paths, _wikicatsum_record, _wikicatsum_lines, limits)


def _multinews_record(record, split: str, id_: str) -> SourceExample:
    record = object_of(record, "record")
    document = field_of(record, "document", str)
    if MULTINEWS_SEPARATOR in document and MULTINEWS_RELEASE_SEPARATOR in document:
        raise Bad(AMBIGUOUS_SEPARATOR, f"the document holds both {MULTINEWS_SEPARATOR} and "
                  f"{MULTINEWS_RELEASE_SEPARATOR}: which one separates its documents is unclear")
    documents = documents_of(multinews_documents(document))
    summary = summary_of(multinews_summary(field_of(record, "summary", str)))
    source_id = record.get("id")
    return SourceExample(split, str(source_id) if source_id not in (None, "") else id_, "",
                         documents, summary)


def read_multinews(paths: Iterable[str], sp=None, limits: ReadLimits = DEFAULT_LIMITS
                   ) -> Iterator[SourceExample | Problem]:
    """Multi-News: the hub's files (JSON Lines, CSV, Parquet with ``document`` and ``summary``)
    or the release's ``{split}.src[.cleaned]``/``{split}.tgt`` lines."""
    return _tables_and_lines(paths, _multinews_record, lambda src, tgt, split, id_:
                             _multinews_record({"document": src, "summary": tgt}, split, id_),
                             limits)


def _generic_record(record, path: str, id_: str) -> SourceExample:
    record = object_of(record, "record")
    split = record.get("split")
    if split is not None:
        if split not in SPLIT_NAMES:
            raise Bad(WRONG_TYPE, f"'split' is {split!r}, not one of {sorted(SPLIT_NAMES)}")
        split = SPLIT_NAMES[split]
    else:
        split = split_of(path)
        if split is None:
            raise Bad(MISSING_FIELD, "no 'split' field, and no split in the file's name")
    documents = documents_of(strings_of(field_of(record, "documents", (list, tuple)), "documents"))
    # wikisum's own generic format: the summary as written (its paragraphs kept), stripped
    summary = summary_of(field_of(record, "summary", str).strip())
    title = record.get("title") or ""
    if not isinstance(title, str):
        raise Bad(WRONG_TYPE, f"'title' is a {type(title).__name__}")
    source_id = record.get("id")
    return SourceExample(split, str(source_id) if source_id not in (None, "") else id_,
                         clean_lines(title), documents, summary)


def read_jsonl(paths: Iterable[str], sp=None, limits: ReadLimits = DEFAULT_LIMITS
               ) -> Iterator[SourceExample | Problem]:
    """JSON Lines (or Parquet) of ``{id, title, documents: [...], summary}``; the split from a
    ``split`` field, else from the file's name."""
    for path in expand(paths, lambda p: has_suffix(p, ".jsonl", ".json", ".parquet")):
        yield from convert(table_records(path, limits.max_record_bytes), path,
                           lambda i, r, path=path:
                           _generic_record(r, path, f"{file_name(path)}:{i}"), limits)


READERS: dict[str, Callable[..., Iterator[SourceExample | Problem]]] = {
    "hiersumm": read_hiersumm,
    "graphsum": read_graphsum,
    "primera": read_primera,
    "wikicatsum": read_wikicatsum,
    "multinews": read_multinews,
    "jsonl": read_jsonl,
}


def read(format: str, paths: list[str], *, sp=None, limits: ReadLimits = DEFAULT_LIMITS
         ) -> Iterator[SourceExample | Problem]:
    """The examples of ``paths`` (files, folders, globs) in ``format``, streamed.

    Args:
        sp: hiersumm's/GraphSum's sentencepiece model, to check each target's BOS and EOS
            ids; other formats ignore it.
        limits: what one example may be (its size, its paragraphs, its ids); the others are
            Problems.

    Raises:
        ValueError: an unknown format, or a file with no split in its name.
        torchfiles.RefusedFile: a ``.pt`` file that holds more than plain data.
    """
    if format not in READERS:
        raise ValueError(f"unknown format {format!r}: one of {', '.join(READERS)}")
    return READERS[format](list(paths), sp=sp, limits=limits)


def detect(paths: list[str]) -> str:
    """The format of ``paths``, from file names and the first record's fields.

    Raises:
        ValueError: no file, or nothing that says which format it is.
    """
    found = expand(paths, lambda p: is_table(p) or is_source_text(p) or has_suffix(p, ".pt"))
    for path in found:
        name = file_name(path)
        if re.search(r"\.(train|valid|test)(\.\d+)?\.pt$", name):
            return "hiersumm"
        if has_suffix(path, ".pt") and split_of(path):
            return "primera"
        if is_source_text(path):
            with files.open_read(path) as f:
                head = f.readline(1 << 20).decode("utf-8", "replace")
            return "wikicatsum" if "<EOT>" in head or "<EOP>" in head else "multinews"
        if is_table(path):
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


