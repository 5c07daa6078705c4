"""``wikisum import``: a dataset another system published -> a wikisum dataset that ``train``,
``decode``, ``evaluate``, ``report``, ``exemplars`` and ``datasets.load_dataset`` read unchanged.

The source is read as a stream of examples (:mod:`wikisum.formats.datasets`): never a whole file
in memory, except a ``.pt`` file, which torch loads whole (one at a time). Each example becomes
what ``wikisum rank`` writes for an article: its title, its summary as the target ("lead"), its
paragraphs tokenised once, and every extractor's ranking, by the same function
(:func:`wikisum.extractors.ranking.rank_article`), so the extractor report runs on the result.

- Raw documents (PRIMERA, WikiCatSum, Multi-News, JSON Lines): each document is one reference,
  its lines the paragraphs; every extractor ranks them on the one corpus ``combined``. An
  example without a title is ranked by the title-based extractors (tf-idf) with a stated query
  instead: the ten most frequent content words of its documents (:func:`query_of`; recorded in
  dataset.json and the card).
- Ranked token ids (hiersumm, GraphSum): the paragraphs' order is the source's own ranking,
  kept as the extractor ``given``; their ids are kept with the source's sentencepiece model as
  the vocabulary (special pieces it lacks appended, every id unchanged), or the decoded text is
  tokenised again with ``--vocab``. The other extractors are not computed, and dataset.json
  says why (``extractors_unavailable``), as the report does.

Before anything is read, each source is checked (:func:`check_sources`): a folder or glob must
hold files of the format, each file's split must be told by its name (or, for ``jsonl``, by a
``split`` field), and no source may be a ``wikisum write-as`` output that its run did not
finish; a source that holds no example at all is refused too. The vocabulary, where none is
given, is trained on a bounded sample of the train split (a first pass over the source).
Outputs are staged under ``OUT/.temp-TOKEN`` and renamed into place; the dataset card, then
``dataset.json``, are written last, so a killed import leaves no dataset a reader would take,
and a finished one always has its card.
Every example the source holds is accounted for: imported, or a counted problem written to
``OUT/import_problems/`` with its file, record and reason. Besides what the readers count
(:mod:`wikisum.formats.datasets`: records over ``max_record_bytes`` or ``max_paragraphs``,
token ids outside the ids' vocabulary, text that is not Unicode or holds control characters),
an example whose text holds a marker of the vocabulary it is tokenised with (``<t>``,
``<sep>``: sentencepiece would read it as that marker) is a ``reserved_piece`` problem.
"""

from __future__ import annotations

import itertools
import json
import logging
import multiprocessing
import os
import posixpath
import re
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator

from wikisum import extractors
from wikisum.core import accounting, card, files, loader, outputs, schemas, shards, vocab
from wikisum.core.progress import Progress, detail
from wikisum.core.text import content_words
from wikisum.extractors.ranking import rank_article
from wikisum.formats import datasets, writing
from wikisum.formats.config import GIVEN, IDS_ONLY, QUERY_CENTROID, ImportConfig, ReadLimits
from wikisum.formats.examples import (
    RESERVED_PIECE,
    expand,
    file_name,
    has_suffix,
    hiersumm_symbols,
    no_split,
    require_split,
    safe_text,
    split_of,
)
from wikisum.formats.sources import is_source_text, is_table, table_records

log = logging.getLogger("wikisum.import")

SPLITS = ("train", "dev", "test")
STAGE = "import"
PROBLEMS = "import_problems"
SOURCE = "document"  # the source of an imported paragraph (not a citation, not a search result)
CORPORA = ("combined",)
WINDOW = 256  # examples in flight between the reader and the ranking processes

UNAVAILABLE_IDS_ONLY = (
    "the source holds its paragraphs as token ids, already ranked and cut by its own ranker; "
    "the order given is kept as the extractor 'given'")


QUERY_WORDS = 10  # words of the stand-in query (experiments/titleless_query: 5 to 20 alike)


def query_of(example) -> tuple[str, bool]:
    """The title-based extractors' query for ``example``: its title, or where it has none the
    :data:`QUERY_WORDS` most frequent content words of its paragraphs (ties in order of first
    appearance); and whether that stand-in was used. On the sample, measured against the real
    title (experiments/titleless_query): ROUGE-L recall of the lead at L 100, 0.167 against the
    title's 0.168, where the first sentence of the first document got 0.135 (no better than no
    ranking, 0.137)."""
    if example.title.strip():
        return example.title, False
    counts = Counter(w for document in example.documents for w in content_words(document))
    return " ".join(w for w, _ in counts.most_common(QUERY_WORDS)), True


def paragraphs_of(document: str) -> list[str]:
    """A document's paragraphs: its non-empty lines, stripped."""
    return [line.strip() for line in document.split("\n") if line.strip()]


def article_row(example, row_id: int) -> dict:
    """An example with raw documents -> an ingest-shaped row (what :func:`rank_article` reads):
    one reference per document, its lines the paragraphs."""
    return {
        "id": row_id, "title": example.title, "split": example.split, "lead": example.summary,
        "url": example.id,
        "references": [{"url": "", "sources": [SOURCE], "paragraphs": paragraphs_of(doc)}
                       for doc in example.documents],
    }


def given_row(example, row_id: int, source_sp, sp) -> dict:
    """An example of ranked token ids -> a training row: ids kept when ``sp`` is the source's
    model (``source_sp`` None), else decoded with ``source_sp`` and tokenised with ``sp``."""
    decode = (source_sp or sp).decode
    texts = [decode(list(ids)) for ids in example.paragraph_ids]
    if source_sp is None:
        ids = [list(p) for p in example.paragraph_ids]
        lead_ids = list(example.summary_ids) if example.summary_ids is not None else \
            sp.encode(example.summary)
    else:
        ids = sp.encode(texts) if texts else []
        lead_ids = sp.encode(example.summary)
    return {
        "id": row_id, "title": example.title, "split": example.split,
        "title_ids": sp.encode(example.title), "lead": example.summary, "lead_ids": lead_ids,
        "reference_urls": [""] * len(texts),
        "paragraphs": [{"text": text, "ids": p_ids, "reference": i, "sources": [SOURCE]}
                       for i, (text, p_ids) in enumerate(zip(texts, ids, strict=True))],
        "rankings": [{"extractor": GIVEN, "corpus": "combined", "order": list(range(len(texts)))}],
        "source_id": example.id,
    }


# -- ranking, in this process or a pool (each process loads the vocabulary and rankers once) ---

_WORKER: dict = {}


def _init_worker(vocab_path: str, names: tuple[str, ...]) -> None:
    """What a ranking process needs, loaded on its first example: the pool is started before
    the vocabulary is trained (its processes are forked from a small parent, not from one
    holding the vocabulary's sample), so the vocabulary may not exist yet."""
    _WORKER.clear()
    _WORKER["setup"] = (vocab_path, names)


def _rank(item: tuple[dict, str]) -> dict | str:
    """(ingest-shaped row, query) -> training row, or the error text."""
    if "sp" not in _WORKER:
        vocab_path, names = _WORKER["setup"]
        _WORKER["sp"] = vocab.load(vocab_path)
        _WORKER["rankers"] = {name: extractors.get(name) for name in names}
    row, query = item
    try:
        out = rank_article(row, _WORKER["sp"], _WORKER["rankers"], CORPORA, query=query)
    except Exception as exc:  # noqa: BLE001 - one example that breaks a ranker is a problem
        return f"{type(exc).__name__}: {exc}"
    out["source_id"] = row["url"]
    return out


def _windows(items: Iterable, size: int) -> Iterator[list]:
    iterator = iter(items)
    while window := list(itertools.islice(iterator, size)):
        yield window


class _Ranker:
    """Ranks windows of items in ``workers`` processes (1: here), in order, so that at most
    :data:`WINDOW` examples are in memory between the reader and the writer."""

    def __init__(self, vocab_path: str, names: tuple[str, ...], workers: int):
        self.pool = None
        if workers > 1:
            context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
            self.pool = context.Pool(workers, _init_worker, (vocab_path, names))
        else:
            _init_worker(vocab_path, names)

    def map(self, items: list) -> list:
        if self.pool is None:
            return [_rank(item) for item in items]
        return self.pool.map(_rank, items, chunksize=max(1, len(items) // 16))

    def close(self) -> None:
        if self.pool is not None:
            self.pool.close()
            self.pool.join()


# -- the import ------------------------------------------------------------------------------

def _row_bytes(row: dict) -> int:
    return sum(len(p["text"]) + 4 * len(p["ids"]) for p in row.get("paragraphs", ())) + \
        len(row.get("lead", "")) + 4 * len(row.get("lead_ids", ()))


def _counted(items: Iterable, bar: Progress) -> Iterator:
    for item in items:
        bar.update()
        yield item


def _vocab_texts(examples: Iterable, split: str, problems: Counter | None = None
                 ) -> Iterator[str]:
    """The texts of ``split``'s examples; ``problems`` counts the records that are problems,
    by reason."""
    for ex in examples:
        if isinstance(ex, datasets.Problem):
            if problems is not None:
                problems[ex.reason] += 1
            continue
        if ex.split != split:
            continue
        yield ex.summary
        if ex.title:
            yield ex.title
        for document in ex.documents:
            yield from paragraphs_of(document)


def train_vocabulary(config: ImportConfig, path: str) -> None:
    """A vocabulary trained on the source's train split (a bounded sample, a first pass)."""
    problems: Counter = Counter()
    with Progress("import: vocabulary sample", unit="examples") as bar:
        texts, seen = vocab.smallest_hash_sample(
            _vocab_texts(_counted(_source(config), bar), "train", problems),
            config.max_vocab_texts)
        records = bar.done
    if not texts:  # a dataset without a train split: its other splits
        texts, seen = vocab.smallest_hash_sample(
            (t for s in SPLITS[1:] for t in _vocab_texts(_source(config), s)),
            config.max_vocab_texts)
    if not texts:
        why = f"{records:,} records read, none with text"
        if problems and sum(problems.values()) == records:
            why = (f"all {records:,} records are problems ("
                   + ", ".join(f"{reason} {n:,}" for reason, n in problems.most_common())
                   + ")")
        raise ValueError(f"no example with text in {', '.join(config.sources)} to train a "
                         f"vocabulary on: {why}")
    detail(f"import: vocabulary from {len(texts):,} of {seen:,} texts")
    vocab.train_vocab(texts, path, config.vocab_size)


def _source(config: ImportConfig, check_sp=None, ids_sp=None) -> Iterator:
    """The source's examples and problems, streamed (``check_sp``: the model of a token-id
    format's ids, whose start and end ids its targets are checked against; ``ids_sp``: the
    model the ids are read in, whose size bounds them and whose control pieces none may be)."""
    stream = datasets.read(config.format, list(config.sources), sp=check_sp,
                           limits=read_limits(config, ids_sp))
    return itertools.islice(stream, config.limit) if config.limit else stream


def read_limits(config: ImportConfig, ids_sp=None) -> ReadLimits:
    """What the import accepts of one example: ``config``'s size and paragraphs, and with
    ``ids_sp`` ids of that model only, none of them a piece that marks structure (its control
    pieces; with hiersumm's pieces, its ``<S>``, ``</S>`` and ``<PAD>``)."""
    if ids_sp is None:
        return ReadLimits(config.max_record_bytes, config.max_paragraphs)
    size = ids_sp.get_piece_size()
    reserved = {i for i in range(size) if ids_sp.is_control(i)}
    try:
        symbols = hiersumm_symbols(ids_sp)
    except ValueError:  # a vocabulary without hiersumm's pieces: its control pieces only
        symbols = {}
    reserved |= {symbols[name] for name in ("BOS", "EOS", "PAD") if name in symbols}
    return ReadLimits(config.max_record_bytes, config.max_paragraphs, size,
                      frozenset(reserved))


def reserved_pieces(sp) -> tuple[str, ...]:
    """The pieces of ``sp`` that text is never to hold: wikisum's markers, which sentencepiece
    matches in text as one token (``<t>`` between the title and the paragraphs of a model input,
    ``<sep>`` between input and target)."""
    return tuple(p for p in (vocab.TITLE_SEP, vocab.SEP) if sp.piece_to_id(p) != sp.unk_id())


def reserved_problem(example, pieces: tuple[str, ...], texts=None) -> datasets.Problem | None:
    """A ``reserved_piece`` Problem where the text of ``example`` (or ``texts``, the text
    tokenised for it) holds one of ``pieces``: tokenised, it would read as that marker."""
    if texts is None:
        texts = (example.title, example.summary, *example.documents)
    for text in texts:
        found = next((p for p in pieces if p in text), None)
        if found is not None:
            return datasets.Problem("", example.id, RESERVED_PIECE, f"the text holds {found!r}, "
                                    "the vocabulary's marker: tokenised, it would read as one")
    return None


# -- the sources, checked before anything is read or written -----------------------------------

# The files each format's reader takes from a folder (formats.readers), and how they are named.
FORMAT_FILES = {
    "hiersumm": (lambda p: re.search(r"\.(train|valid|test)(\.\d+)?\.pt$", file_name(p))
                 is not None, "WIKI.{train,valid,test}.N.pt"),
    "graphsum": (lambda p: has_suffix(p, ".json"),
                 "*.json arrays, the split in the name or the folder: train/, valid/, test/"),
    "primera": (lambda p: has_suffix(p, ".pt"), "train.pt, valid.pt or val.pt, test.pt"),
    "wikicatsum": (lambda p: is_table(p) or is_source_text(p),
                   "{train,valid,test}-DOMAIN.jsonl, .json, .csv or .parquet, or the release's "
                   "{train,valid,test}.src with its .tgt"),
    "multinews": (lambda p: is_table(p) or is_source_text(p),
                  "{train,validation,test} .jsonl, .json, .csv or .parquet, or the release's "
                  "{train,val,test}.src with its .tgt"),
    "jsonl": (lambda p: has_suffix(p, ".jsonl", ".json", ".parquet"),
              "*.jsonl, *.json or *.parquet named for a split, train.jsonl, dev.jsonl, "
              "test.jsonl, or whose records have a 'split' field"),
}


def source_files(format: str, source: str) -> list[str]:
    """The files of the source ``source`` (a file, a folder or a glob) that the ``format``
    reader reads.

    Raises:
        FileNotFoundError: ``source`` is not there, or is a glob that matches nothing.
        ValueError: a folder or glob that holds no file of the format, or a write-as output
            whose run did not finish (:func:`wikisum.formats.writing.unfinished`).
    """
    accept, named = FORMAT_FILES[format]
    if files.is_dir(source) and (reason := writing.unfinished(source)):
        raise ValueError(reason)
    found = expand([source], accept)
    if files.is_dir(source) or any(c in source for c in "*?["):
        found = [p for p in found if accept(p)]
        if not found:
            raise ValueError(f"{source} holds no {format} files ({named})")
    for folder in dict.fromkeys(posixpath.dirname(p.replace(os.sep, "/")) or "." for p in found):
        if reason := writing.unfinished(folder):
            raise ValueError(reason)
    return found


def check_sources(config: ImportConfig) -> None:
    """Each source holds files of ``config.format`` whose split can be told (from the name, or
    for ``jsonl`` from a ``split`` field), and none is an unfinished ``wikisum write-as``
    output: else ValueError naming the path, before anything is read or written."""
    for source in config.sources:
        for path in source_files(config.format, source):
            if config.format != "jsonl":
                require_split(path)
            elif split_of(path) is None and not _first_record_has_split(path, config):
                raise ValueError(f"{no_split(path)}; or give each record a 'split' field "
                                 "(its first has none)")


def _first_record_has_split(path: str, config: ImportConfig) -> bool:
    """Whether the first record of the JSON Lines (or Parquet) file ``path`` that reads as an
    object has a ``split`` field (True for a file without one: its records are counted
    problems)."""
    records = table_records(path, config.max_record_bytes)
    try:
        for item in records:
            if not isinstance(item, datasets.Problem) and isinstance(item[1], dict):
                return "split" in item[1]
    finally:
        records.close()
    return True


class _Output:
    """The three sets of shards an import writes, staged under ``staging``: the training rows,
    the ready model inputs and the problems."""

    def __init__(self, config: ImportConfig, staging: str):
        out, n = config.out, config.num_shards
        self.inputs_specs = config.inputs
        self.num_shards = n
        self.ranked = shards.ShardSetWriter(
            {(s, i): shards.shard_path(out, s, i, n) for s in SPLITS for i in range(n)},
            files.join(staging, "ranked"), schemas.RANKED, _row_bytes)
        self.inputs = shards.ShardSetWriter(
            {(spec.name, s, i): shards.shard_path(files.join(out, loader.INPUTS, spec.name), s,
                                                  i, n)
             for spec in config.inputs for s in SPLITS for i in range(n)},
            files.join(staging, "inputs"), schemas.MODEL_INPUTS, _row_bytes)
        self.problems = shards.ShardSetWriter(
            {0: shards.shard_path(files.join(out, PROBLEMS), PROBLEMS, 0, 1)},
            files.join(staging, "problems"), schemas.DEAD_LETTERS)

    def row(self, row: dict, sp, title_sep: int) -> None:
        shard = row["id"] % self.num_shards
        self.ranked.write((row["split"], shard), row)
        for spec in self.inputs_specs:
            self.inputs.write((spec.name, row["split"], shard),
                              loader.model_input_row(row, spec, sp, title_sep))

    def problem(self, p) -> None:
        self.problems.write(0, {"input_file": safe_text(p.file), "record": safe_text(str(p.record)),
                                "url": "", "stage": STAGE, "reason": p.reason,
                                "error": safe_text(p.detail)})

    def abort(self) -> None:
        for writer in (self.ranked, self.inputs, self.problems):
            writer.abort()

    def commit(self) -> tuple[dict, dict, int]:
        """(rows per split, rows per model input and split, problems)."""
        rows = {s: 0 for s in SPLITS}
        for (split, _), n in self.ranked.commit().items():
            rows[split] += n
        input_rows = {spec.name: {s: 0 for s in SPLITS} for spec in self.inputs_specs}
        for (name, split, _), n in self.inputs.commit().items():
            input_rows[name][split] += n
        return rows, input_rows, self.problems.commit()[0]


def run(config: ImportConfig) -> dict:
    """Import ``config.sources`` into the dataset ``config.out``; returns its dataset.json."""
    ids_only = config.format in IDS_ONLY
    if ids_only and not (config.source_vocab or config.vocab):
        raise ValueError(f"{config.format} holds token ids: give --source-vocab, the "
                         "sentencepiece model they come from (hiersumm's spm9998_3.model), to "
                         "keep them (and --vocab to tokenise their text again with another)")
    names = (GIVEN,) if ids_only else (config.extractors or tuple(
        n for n in extractors.NAMES if n != "learned"))
    _check_inputs(config, names)
    check_sources(config)
    staging = files.join(config.out, f".temp-{uuid.uuid4().hex[:12]}")
    try:
        info = _run(config, names, staging)
    finally:
        if files.exists(staging):
            files.delete(staging)
    return info


def _run(config: ImportConfig, names: tuple[str, ...], staging: str) -> dict:
    ids_only = config.format in IDS_ONLY
    # The ranking processes start first, from a parent that holds no vocabulary sample yet.
    ranker = None if ids_only else _Ranker(_vocabulary_path(config, staging), names,
                                           config.workers)
    try:
        vocab_path, source_sp = _vocabulary(config, staging)
    except BaseException:
        if ranker is not None:
            ranker.close()
        raise
    sp = vocab.load(vocab_path)
    title_sep = vocab.special_ids(sp).title_sep
    output = _Output(config, staging)
    counts: Counter = Counter()
    queries: Counter = Counter()
    check = vocab.load(config.source_vocab) if ids_only and config.source_vocab else None
    ids_sp = (check or sp) if ids_only else None  # the model the source's ids are in
    pieces = reserved_pieces(sp)
    bar = Progress("import", unit="examples")
    next_id = 0
    try:
        for window in _windows(_source(config, check, ids_sp), WINDOW):
            rows, work = [], []
            for item in window:
                counts["in"] += 1
                problem = _problem_of(item, pieces, source_sp)
                if problem is not None:
                    counts[problem.reason] += 1
                    output.problem(problem)
                elif ids_only:
                    rows.append(given_row(item, next_id, source_sp, sp))
                    next_id += 1
                else:
                    query, stand_in = query_of(item)
                    queries["centroid" if stand_in else "title"] += 1
                    work.append((item, (article_row(item, next_id), query)))
                    next_id += 1
            results = ranker.map([w for _, w in work]) if work else []
            for (item, _), result in zip(work, results, strict=True):
                if isinstance(result, str):  # an extractor failed on it
                    counts["rank_error"] += 1
                    output.problem(datasets.Problem("", item.id, "rank_error", result))
                else:
                    rows.append(result)
            for row in rows:
                output.row(row, sp, title_sep)
                counts["kept"] += 1
            bar.update(len(window), postfix=f"{counts['kept']:,} kept")
    except BaseException:
        output.abort()
        raise
    finally:
        if ranker is not None:
            ranker.close()
        bar.close()
    if not counts["in"]:
        output.abort()
        holds = "holds" if len(config.sources) == 1 else "hold"
        raise ValueError(f"{', '.join(config.sources)} {holds} no {config.format} example (its "
                         "files are empty): nothing to import")
    _forget_earlier(config.out)
    rows, input_rows, errors = output.commit()
    if vocab_path.startswith(staging):
        shards.rename(vocab_path, files.join(config.out, "vocab.model"))
        vocab_path = files.join(config.out, "vocab.model")
    dropped = {k: v for k, v in counts.items() if k not in ("in", "kept")}
    info = loader.dataset_record(
        config.out, vocab_path=vocab_path, sp=sp, extractors=list(names),
        corpora=list(CORPORA), num_shards=config.num_shards, rows=rows, errors=errors,
        source=None, inputs=list(config.inputs), input_rows=input_rows,
        stages={STAGE: accounting.stage(counts["in"], counts["kept"], dropped)},
        imported=_imported(config, queries, ids_only, source_sp is not None),
        extractors_unavailable=_unavailable(names, ids_only),
        corpora_note="combined: every document of an example (an imported document is "
                     "neither a citation nor a search result)")
    # The card before the completion record: a dataset.json is never without its card.
    card.write_card(config.out, info)
    shards.write_text(files.join(config.out, outputs.DATASET_RECORD),
                      json.dumps(info, indent=1) + "\n")
    return info


def _problem_of(item, pieces: tuple[str, ...], source_sp) -> datasets.Problem | None:
    """Why ``item`` (an example or a Problem) is not imported, or None: a Problem as read, a
    split not ours, or text that holds a marker of the vocabulary it is tokenised with (of a
    token-id format, the text of its ids decoded with ``source_sp`` where they are tokenised
    again; kept ids are not)."""
    if isinstance(item, datasets.Problem):
        return item
    if item.split not in SPLITS:
        return datasets.Problem("", item.id, "unknown_split", f"split {item.split!r}")
    if item.paragraph_ids is None:
        return reserved_problem(item, pieces)
    if source_sp is not None:
        return reserved_problem(item, pieces, (
            item.title, item.summary, *(source_sp.decode(list(p)) for p in item.paragraph_ids)))
    return None


def _forget_earlier(out: str) -> None:
    """An earlier import's record, then its shards, removed before this one's are renamed in
    (the record first: a reader never sees it beside other shards). Only the names this
    command writes: anything else in ``out`` stays."""
    shards.delete(files.join(out, outputs.DATASET_RECORD))
    for pattern in ([files.join(out, f"{s}-*-of-*.parquet") for s in SPLITS]
                    + [files.join(out, loader.INPUTS, "*", "*-*-of-*.parquet"),
                       files.join(out, PROBLEMS, f"{PROBLEMS}-*.parquet")]):
        shards.delete(pattern)


def _vocabulary_path(config: ImportConfig, staging: str) -> str:
    """Where :func:`_vocabulary` leaves the vocabulary of a text format."""
    return config.vocab or files.join(staging, "vocab.model")


def _vocabulary(config: ImportConfig, staging: str):
    """(the vocabulary's path, the source's model where ids are tokenised again or None)."""
    if config.format in IDS_ONLY:
        if config.vocab:  # text decoded with the source's model, tokenised with this one
            return config.vocab, vocab.load(config.source_vocab) if config.source_vocab else None
        data, added = vocab.with_special_pieces(files.read_bytes(config.source_vocab))
        path = files.join(staging, "vocab.model")
        shards.write_bytes(path, data)
        if added:
            detail(f"import: {', '.join(added)} appended to {config.source_vocab}'s pieces "
                   "(every id kept)")
        return path, None
    if config.vocab:
        return config.vocab, None
    path = files.join(staging, "vocab.model")
    train_vocabulary(config, path)
    return path, None


def _check_inputs(config: ImportConfig, names: tuple[str, ...]) -> None:
    for spec in config.inputs:
        if spec.extractor not in names or spec.corpus not in CORPORA:
            raise ValueError(f"model inputs {spec.name}: an imported {config.format} dataset "
                             f"has the extractors {', '.join(names)} and the corpus "
                             f"{', '.join(CORPORA)} (e.g. --model-inputs "
                             f"{names[0] if config.format in IDS_ONLY else 'tfidf'}-combined-500)")


def _imported(config: ImportConfig, queries: Counter, ids_only: bool, retokenised: bool) -> dict:
    record = {"format": config.format, "sources": list(config.sources)}
    if ids_only:
        record["ids"] = "tokenised again with the vocabulary" if retokenised or config.vocab \
            else "kept, with the source's sentencepiece model as the vocabulary"
    else:
        record["query"] = {
            "title": queries["title"], QUERY_CENTROID: queries["centroid"],
            "note": "the title-based extractors (tfidf) query an example's title; an example "
                    f"without one, the {QUERY_WORDS} most frequent content words of its "
                    "documents"}
    return record


def _unavailable(names: tuple[str, ...], ids_only: bool) -> dict:
    if not ids_only:
        return {}
    return {n: UNAVAILABLE_IDS_ONLY for n in extractors.NAMES if n not in names}

