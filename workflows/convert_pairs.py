"""``wikisum convert-pairs``: headline pairs (Gigaword, Rush et al. format) -> Parquet shards."""

from __future__ import annotations

import argparse
import logging

from wikisum.core import progress
from wikisum.pipeline import pairs_config
from wikisum.workflows import checks

HELP = "headline pairs (*.article.txt / *.title.txt) -> token-id shards (AdaDec's Gigaword data)"
DESCRIPTION = """\
Convert one split of headline-generation pairs in the format of Rush et al. (2015) -- two
aligned text files, one example a line: the article's first sentence and its headline -- into
Parquet shards of subword ids, the data of AdaDec (Peng et al. 2019) and the other headline
models. Run it once per split into the same --out; dataset.json is merged, not replaced.

Subwords: sentencepiece, shared by sources and targets. Without --vocab, the vocabulary that
--out already records (or --out/vocab.model) is reused; when there is none, converting the
train split trains a BPE model (--vocab-size types at most, AdaDec's 25k by default) on its
files and writes --out/vocab.model. Converting another split first is an error.

Both files must have the same number of lines. A pair with an empty (or non-UTF-8) line is
dropped, counted by reason and listed by line number. An example's id is its line number.

Outputs in --out:
  {split}-NNNNN-of-NNNNN.parquet   one row per pair, consecutive lines (schema: docs/data.md)
  dataset.json                     "kind": "pairs", vocabulary, special ids, rows per split
  drops-{split}.json               lines read, rows written, drops by reason and line number
  vocab.model                      the BPE model, when one was trained
  README.md                        dataset card (`datasets.load_dataset(OUT)` reads the splits)
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("convert-pairs", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", required=True, metavar="FILE",
                   help="source lines, e.g. train.article.txt (plain, .gz or .bz2)")
    p.add_argument("--target", required=True, metavar="FILE",
                   help="target lines aligned with --source, e.g. train.title.txt")
    p.add_argument("--split", required=True, metavar="NAME",
                   help="split name: train, dev, test, ... (letters, digits, '_')")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--vocab", metavar="MODEL",
                   help="sentencepiece model to encode with (default: the one --out records, "
                        "or --out/vocab.model, trained on the train split when missing)")
    p.add_argument("--vocab-size", type=checks.count(16), default=pairs_config.DEFAULT_VOCAB_SIZE,
                   metavar="N",
                   help="BPE types when a vocabulary is trained, an upper bound "
                        "(default: %(default)s)")
    p.add_argument("--max-texts", type=checks.count(1), default=pairs_config.DEFAULT_MAX_TEXTS,
                   metavar="N",
                   help="lines sampled to train the vocabulary (default: %(default)s)")
    p.add_argument("--shards", type=checks.count(1, 100_000), default=pairs_config.DEFAULT_SHARDS,
                   metavar="N",
                   help="shards for this split (default: %(default)s)")
    p.set_defaults(func=run)


def format_summary(summary: dict, out: str) -> str:
    dropped = sum(summary["dropped"].values())
    reasons = ", ".join(f"{k} {v}" for k, v in summary["dropped"].items()) or "none"
    lines = [f"convert-pairs: {summary['split']}: {summary['rows']} rows written of "
             f"{summary['lines']} lines, {dropped} dropped ({reasons}) -> {out} "
             f"({len(summary['shards'])} shards)",
             f"  vocabulary: {summary['vocab']}"
             + (" (trained, BPE)" if summary["vocab_trained"] else "")]
    if summary["exemplars_removed"]:
        lines.append(f"  removed stale exemplars: {', '.join(summary['exemplars_removed'])}; "
                     f"rerun `wikisum exemplars --data {out}`")
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    from wikisum.pipeline import pairs

    logging.getLogger("wikisum").setLevel(progress.log_level())
    checks.output_dir(args.out, "convert-pairs")
    if args.vocab_size < 16:
        raise SystemExit("wikisum convert-pairs: --vocab-size must be at least 16")
    if args.shards < 1:
        raise SystemExit("wikisum convert-pairs: --shards must be at least 1")
    if args.max_texts < 1:
        raise SystemExit("wikisum convert-pairs: --max-texts must be at least 1")
    for option, path in (("--source", args.source), ("--target", args.target),
                         ("--vocab", args.vocab)):
        if path:
            checks.input_path(path, option, "convert-pairs")
    config = pairs.PairsConfig(args.source, args.target, args.split, args.out, args.vocab,
                               args.vocab_size, args.shards, args.max_texts)
    try:
        summary = pairs.convert(config)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum convert-pairs: {exc}") from exc
    print(format_summary(summary, args.out))
    return 0


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
