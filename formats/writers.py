"""The dataset writers: :class:`~wikisum.formats.examples.OutExample` records laid out as each
system's loader reads them (:mod:`wikisum.formats.datasets` has the layouts)."""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Callable, Iterable
from typing import IO

from wikisum.core import files, shards
from wikisum.core.text import sentences
from wikisum.formats import torchfiles
from wikisum.formats.examples import (
    DEFAULT_SHARD_SIZE,
    EMPTY_SUMMARY,
    MAX_PARAGRAPHS,
    MULTINEWS_SEPARATOR,
    MULTINEWS_SUMMARY_PREFIX,
    NO_PARAGRAPHS,
    SPLIT_NAMES,
    SPLITS,
    OutExample,
    WriteReport,
    clean_lines,
    file_name,
    hiersumm_symbols,
)


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

    def commit(self, forget: Iterable[str] = ()) -> tuple[str, ...]:
        """Every staged file renamed into place, after removing ``forget`` (the files of an
        earlier run that this one does not replace, its record first)."""
        finals = {path for _, path in self.pairs}
        for path in forget:
            if path not in finals and files.exists(path):
                files.delete(path)
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
            if not file_name(p).startswith(".")]


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
          shard_size: int = DEFAULT_SHARD_SIZE, max_paragraphs: int = MAX_PARAGRAPHS,
          replace: tuple[str, ...] | None = None,
          also: dict[str, bytes] | None = None) -> WriteReport:
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
            mix the two runs), and ``replace`` is None.

    ``replace`` (for ``out_dir`` an earlier output of this writer): files removed once every new
    file is whole, before any is renamed into place (the earlier run's record); the earlier
    files of the format that this run does not replace go then too. Until then the earlier
    output is untouched, so a run that fails while it writes (a full disk) leaves it whole.
    ``also``: more files (path -> bytes) staged and renamed into place with the format's.
    """
    if format not in WRITERS:
        raise ValueError(f"cannot write {format!r}: one of {', '.join(WRITERS)}")
    if shard_size < 1:
        raise ValueError(f"shard_size is {shard_size}; a shard holds one example at least")
    pattern, writer = WRITERS[format]
    there = _existing(out_dir, pattern)
    if there and replace is None:
        raise FileExistsError(f"{out_dir} already holds {len(there)} {pattern} files "
                              f"({file_name(there[0])} ...): write to an empty folder")
    staging = _Staging()
    report = {"written": Counter(), "dropped": []}
    try:
        for path, data in (also or {}).items():
            staging.write_bytes(path, data)
        writer(examples, out_dir, staging, report, sp=sp, shard_size=shard_size,
               max_paragraphs=max_paragraphs)
        written = staging.commit((*(replace or ()), *there) if replace is not None else ())
    except BaseException:
        staging.abort()
        raise
    written = tuple(path for path in written if path not in (also or {}))
    return WriteReport(written, dict(report["written"]), tuple(report["dropped"]))
