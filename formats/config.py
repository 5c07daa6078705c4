"""What ``wikisum import`` and ``wikisum write-as`` are asked to do, and their defaults, declared
once here without heavy imports, so that the command line shows them without importing
pyarrow, torch or sentencepiece."""

from __future__ import annotations

from dataclasses import dataclass

from wikisum.core.inputs import DEFAULT_INPUT, InputSpec
from wikisum.core.vocab_config import DEFAULT_SIZE

# The formats `wikisum import` reads, and what each holds.
IMPORT_FORMATS = {
    "hiersumm": "Liu & Lapata 2019's ranked WikiSum: WIKI.{train,valid,test}.N.pt (token ids)",
    "graphsum": "GraphSum's JSON of the ranked WikiSum: *.N.json (token ids, sim_graph)",
    "primera": "PRIMERA's wikisum subset: {train,valid,test}.pt of {text: [documents], tgt}",
    "wikicatsum": "WikiCatSum (GEM/wiki_cat_sum JSON or Parquet, or the release's text files)",
    "multinews": "Multi-News: document (documents joined by |||||) and summary; JSON Lines, "
                 "CSV or Parquet, one file per split or the hub's folder",
    "jsonl": "JSON Lines of {id, title, documents: [...], summary}",
}
# Formats that hold ranked paragraphs as token ids only (no raw text to rank again).
IDS_ONLY = ("hiersumm", "graphsum")
# The formats `wikisum write-as` writes.
WRITE_FORMATS = ("hiersumm", "primera", "multinews", "jsonl")

# The query of the title-based extractors (tf-idf) for an example without a title (Multi-News):
# the most frequent content words of its documents (measured: experiments/titleless_query).
QUERY_CENTROID = "frequent-words"

# The ranking of a format that gives its paragraphs already ranked (hiersumm, GraphSum).
GIVEN = "given"

DEFAULT_SHARDS = 4
# Texts sampled to train an import's vocabulary. sentencepiece's trainer holds several times its
# input: on Multi-News paragraphs (about 1 KB each) 300,000 texts (the build's default) peaked at
# 1.9 GB in the importing process, 100,000 at 685 MB (bench/import_formats.py,
# docs/import-and-formats.md).
IMPORT_VOCAB_TEXTS = 100_000

# What one example may be, whatever the format: larger ones are counted problems, never cut.
# A record as stored (a JSON line or array element, a CSV row, a line of .src with its .tgt line)
# over this many bytes is skipped in chunks without being held (``too_large``); so is an example
# whose text (UTF-8) and token ids (4 bytes each) come to more, from Parquet or a .pt file.
# Twice the 8 MB a dump page may have in `wikisum ingest`.
MAX_RECORD_BYTES = 16 * 1024 * 1024
# Paragraphs an example may have (``too_many_paragraphs``): every extractor ranks them all.
# Their cost is bounded by the record's size (``MAX_RECORD_BYTES``) and TextRank's graph by its
# ``max_pairs``: a cluster of 10,000 two-sentence documents imports in 14 s, 1.4 GB at the peak.
# Multi-News has at most 10 documents, hiersumm keeps 40 paragraphs; a whole WikiSum article's
# references can reach thousands.
MAX_EXAMPLE_PARAGRAPHS = 20_000


@dataclass(frozen=True)
class ReadLimits:
    """What a dataset reader accepts of one example (the rest are counted problems)."""

    max_record_bytes: int = MAX_RECORD_BYTES
    max_paragraphs: int = MAX_EXAMPLE_PARAGRAPHS
    vocab_size: int | None = None  # token ids must lie in [0, vocab_size) (None: not checked)
    # ids that mark structure (the vocabulary's control pieces, hiersumm's <S> </S> <PAD>): none
    # may stand inside a paragraph or between a target's two ends
    reserved_ids: frozenset[int] = frozenset()


DEFAULT_LIMITS = ReadLimits()


@dataclass(frozen=True)
class ImportConfig:
    format: str
    sources: tuple[str, ...]  # files, folders or globs
    out: str  # the dataset directory written
    vocab: str | None = None  # tokenise with this model; None: train one (or keep the ids)
    source_vocab: str | None = None  # the model of a token-id format's ids (hiersumm's spm)
    vocab_size: int = DEFAULT_SIZE
    max_vocab_texts: int = IMPORT_VOCAB_TEXTS
    extractors: tuple[str, ...] = ()  # () : every registered one but learned
    inputs: tuple[InputSpec, ...] = (DEFAULT_INPUT,)
    num_shards: int = DEFAULT_SHARDS
    workers: int = 1  # processes ranking examples
    limit: int | None = None  # at most this many examples (a quick look at a big dataset)
    max_record_bytes: int = MAX_RECORD_BYTES  # a larger example is a ``too_large`` problem
    max_paragraphs: int = MAX_EXAMPLE_PARAGRAPHS  # more: a ``too_many_paragraphs`` problem


@dataclass(frozen=True)
class WriteAsConfig:
    format: str
    data: str  # a wikisum dataset (or a build's root)
    out: str
    extractor: str = DEFAULT_INPUT.extractor
    corpus: str = DEFAULT_INPUT.corpus
    max_paragraphs: int = 40  # hiersumm keeps the top 40 paragraphs
    max_paragraph_tokens: int | None = None  # cut each paragraph's ids (None: whole)
    shard_size: int = 2000  # examples per hiersumm .pt shard
    splits: tuple[str, ...] = ("train", "dev", "test")
