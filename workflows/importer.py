"""``wikisum import``: a dataset in another system's format -> a wikisum dataset."""

from __future__ import annotations

import argparse
import logging
import os

from wikisum.core import progress
from wikisum.core.inputs import DEFAULT_INPUT
from wikisum.core.vocab_config import DEFAULT_SIZE
from wikisum.formats import config as formats_config
from wikisum.workflows import checks

COMMAND = "import"  # the module cannot be named after a Python keyword
HELP = "a dataset in another system's format (hiersumm, Multi-News, ...) -> a wikisum dataset"
DESCRIPTION = """\
Read a multi-document summarization dataset as another system published it and write a
wikisum dataset that train, decode, evaluate, report, exemplars and `datasets.load_dataset`
read unchanged. Formats:
{formats}

Documents given as text are split into paragraphs (their lines), tokenised, and ranked by every
extractor on the one corpus `combined`, so the extractor report runs on the result. An example
without a title (Multi-News) is ranked by tf-idf with its documents' ten most frequent content
words as the query. Token-id formats (hiersumm, GraphSum) keep their paragraphs in the order
given (the extractor `given`) and their ids, with the source's sentencepiece model
(--source-vocab) as the vocabulary; --vocab tokenises their decoded text again. Splits are
kept (valid = dev).

Without --vocab, a vocabulary is trained on the train split first (one more pass over the
source). Examples that cannot be converted are counted by reason and listed in
OUT/import_problems/: malformed_json, malformed_row, missing_field, wrong_type,
empty_summary, no_documents, unpaired_line, unread_rest, unknown_split, rank_error; too_large
(a record or example over --max-record-bytes, skipped unread, never cut), too_deep (JSON nested
too deep to walk), too_many_paragraphs (over --max-paragraphs), bad_encoding (not UTF-8),
control_characters (NUL and the like), bad_ids and bad_target_ids (token ids outside the
vocabulary or its markers), ambiguous_separator (a format's separators saying two things),
reserved_piece (text holding the vocabulary's <t> or <sep>). `.pt` files are read with
torch.load(weights_only=True): a file that needs more than plain lists, dicts, strings and
numbers is refused. A folder that holds no file of the format, a file whose split cannot be
told, and an unfinished `wikisum write-as` output are refused, naming the path.

Outputs in --out (those of `wikisum rank`):
  {{train,dev,test}}-NNNNN-of-NNNNN.parquet   one row per example (schema: docs/data.md)
  inputs/EXTRACTOR-combined-L/              ready model inputs, one set per --model-inputs
  dataset.json, README.md                   what the shards hold; the dataset card
  vocab.model                               the vocabulary, trained or the source's
  import_problems/                          examples not converted, with their reasons
"""


def add_parser(subparsers) -> None:
    formats = "\n".join(f"  {name:<11} {text}"
                        for name, text in formats_config.IMPORT_FORMATS.items())
    p = subparsers.add_parser(COMMAND, help=HELP, description=DESCRIPTION.format(
        formats=formats), formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("format", choices=list(formats_config.IMPORT_FORMATS), metavar="FORMAT",
                   help=f"one of {', '.join(formats_config.IMPORT_FORMATS)}")
    p.add_argument("sources", nargs="+", metavar="PATH",
                   help="the dataset's files, folders or globs (splits from the file names)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--vocab", metavar="MODEL",
                   help="sentencepiece model to tokenise with (default: trained on the train "
                        "split; for hiersumm and graphsum, --source-vocab's)")
    p.add_argument("--source-vocab", metavar="MODEL",
                   help="hiersumm/graphsum: the sentencepiece model of the ids "
                        "(spm9998_3.model)")
    p.add_argument("--vocab-size", type=checks.count(16), default=DEFAULT_SIZE, metavar="N",
                   help="pieces of a trained vocabulary, an upper bound (default: %(default)s)")
    p.add_argument("--vocab-texts", type=checks.count(1),
                   default=formats_config.IMPORT_VOCAB_TEXTS, metavar="N",
                   help="texts sampled to train it; sentencepiece holds several times their "
                        "size (default: %(default)s)")
    p.add_argument("--extractors", metavar="NAME[,...]",
                   help="rank with these (default: every one but learned)")
    p.add_argument("--model-inputs", metavar="EXTRACTOR-combined-L[,...]",
                   help="ready model inputs to write, the first the default (default: "
                        f"{DEFAULT_INPUT.name}; given-combined-"
                        f"{DEFAULT_INPUT.max_input_tokens} for hiersumm and graphsum)")
    p.add_argument("--shards", type=checks.count(1, 100_000),
                   default=formats_config.DEFAULT_SHARDS, metavar="N",
                   help="shards per split (default: %(default)s)")
    p.add_argument("--workers", type=checks.count(1, 1024), default=os.cpu_count() or 1,
                   metavar="N", help="processes ranking examples (default: the cores, "
                                     "%(default)s)")
    p.add_argument("--limit", type=checks.count(1), metavar="N",
                   help="import the first N examples only (a quick look)")
    p.add_argument("--max-record-bytes", type=checks.byte_size(),
                   default=formats_config.MAX_RECORD_BYTES, metavar="SIZE",
                   help="a larger record or example (text, and ids at 4 bytes each) is a "
                        "too_large problem, skipped without being held (default: "
                        f"{checks.format_size(formats_config.MAX_RECORD_BYTES)})")
    p.add_argument("--max-paragraphs", type=checks.count(1),
                   default=formats_config.MAX_EXAMPLE_PARAGRAPHS, metavar="N",
                   help="an example with more paragraphs is a too_many_paragraphs problem "
                        "(default: %(default)s)")
    p.set_defaults(func=run)


def make_config(args: argparse.Namespace) -> formats_config.ImportConfig:
    from dataclasses import replace

    from wikisum.core.inputs import parse_inputs

    ids_only = args.format in formats_config.IDS_ONLY
    names = (formats_config.GIVEN,) if ids_only else tuple(
        n.strip() for n in (args.extractors or "").split(",") if n.strip())
    config = formats_config.ImportConfig(
        args.format, tuple(args.sources), args.out, vocab=args.vocab,
        source_vocab=args.source_vocab, vocab_size=args.vocab_size,
        max_vocab_texts=args.vocab_texts, extractors=() if ids_only else names,
        num_shards=args.shards, workers=args.workers, limit=args.limit,
        max_record_bytes=args.max_record_bytes, max_paragraphs=args.max_paragraphs)
    if ids_only:
        default = f"{formats_config.GIVEN}-combined-{DEFAULT_INPUT.max_input_tokens}"
        available = [formats_config.GIVEN]
    else:
        from wikisum import extractors

        available = list(names) or [n for n in extractors.NAMES if n != "learned"]
        rankers = [n for n in extractors.NAMES if n != "learned"]
        unknown = [n for n in available if n not in rankers]
        if unknown:
            raise SystemExit(f"wikisum import: --extractors: unknown {', '.join(unknown)}; "
                             f"choose from {', '.join(rankers)}")
        default = DEFAULT_INPUT.name if DEFAULT_INPUT.extractor in available else \
            f"{available[0]}-combined-{DEFAULT_INPUT.max_input_tokens}"
    try:
        inputs = parse_inputs(args.model_inputs or default, available)
    except ValueError as exc:
        raise SystemExit(f"wikisum import: --model-inputs: {exc}") from None
    return replace(config, inputs=inputs)


def run(args: argparse.Namespace) -> int:
    logging.getLogger("wikisum").setLevel(progress.log_level())
    checks.output_dir(args.out, COMMAND)
    for option, path in (("--vocab", args.vocab), ("--source-vocab", args.source_vocab)):
        if path:
            checks.input_path(path, option, COMMAND)
    config = make_config(args)
    from wikisum.formats import importing

    try:
        info = importing.run(config)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum import: {exc}") from exc
    print(format_summary(info, args.out))
    return 0


def format_summary(info: dict, out: str) -> str:
    stage = info["stages"]["import"]
    dropped = ", ".join(f"{k} {v:,}" for k, v in stage["dropped"].items()) or "none"
    rows = ", ".join(f"{s} {n:,}" for s, n in info["rows"].items())
    lines = [f"import: {stage['kept']:,} of {stage['in']:,} examples -> {out} ({rows}); "
             f"not converted: {dropped}"]
    if stage["dropped"]:
        lines.append(f"  problems listed in {out}/import_problems/")
    query = info["imported"].get("query")
    if query and query.get(formats_config.QUERY_CENTROID):
        lines.append(f"  {query[formats_config.QUERY_CENTROID]:,} examples without a title: "
                     "tf-idf queried their documents' most frequent content words")
    lines.append(f"  extractors: {', '.join(info['extractors'])}; default model input "
                 f"{info['default_inputs']}")
    return "\n".join(lines)


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (core.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
