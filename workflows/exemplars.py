"""``wikisum exemplars``: retrieve each example's training exemplar (AdaDec, Peng et al. 2019)."""

from __future__ import annotations

import argparse
import logging
import time

from wikisum.pipeline import exemplars
from wikisum.workflows import checks

HELP = "retrieve each example's most similar training example (AdaDec's exemplars)"
DESCRIPTION = """\
For every train, dev and test example of a dataset, find the training example whose source is
most similar by bag-of-words cosine (top-1; a training example never gets itself; ties go to
the smallest id). Its target is the exemplar that AdaDec conditions on; its source serves only
retrieval. Exact sparse search, in blocks of queries: memory stays bounded on millions of
examples.

The source is the model input: for a ranked (WikiSum) dataset the loader's input for
--extractor x --corpus x --max-input-tokens (title <t> ranked paragraphs, cut to L); for a
headline-pair dataset (`wikisum convert-pairs`) the whole source, and these options are ignored.

Input: --data, the output directory of `wikisum rank` or `wikisum convert-pairs`.
Outputs, next to the shards they index (there is no --out):
  exemplars-{split}.parquet   id, exemplar_id (a train id), similarity (schema: docs/data.md)
Then read them with pipeline.loader.Dataset(DIR).examples(..., exemplars=True).
"""
REPORT_EVERY_S = 5.0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("exemplars", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, metavar="DIR",
                   help="dataset directory (shards and dataset.json); the outputs go here")
    p.add_argument("--extractor", default=exemplars.DEFAULT_EXTRACTOR,
                   help="ranked datasets: extractor of the model input (default: %(default)s)")
    p.add_argument("--corpus", default=exemplars.DEFAULT_CORPUS,
                   help="ranked datasets: corpus of the model input (default: %(default)s)")
    p.add_argument("--max-input-tokens", type=checks.count(1),
                   default=exemplars.DEFAULT_MAX_INPUT_TOKENS,
                   metavar="L", help="ranked datasets: input length L (default: %(default)s)")
    p.add_argument("--block-size", type=checks.count(1), metavar="N",
                   help="queries per block (default: as many as keep one block's similarities "
                        f"under {exemplars.DEFAULT_MAX_CELLS:,} floats, at most "
                        f"{exemplars.MAX_BLOCK})")
    p.add_argument("--workers", type=checks.count(1), default=exemplars.default_workers(),
                   metavar="N",
                   help="threads, one block each (default: the usable CPUs, at most 8: "
                        "%(default)s here)")
    p.set_defaults(func=run)


class ProgressPrinter:
    """Prints `split: done/total` at most every ``every`` seconds, and when a split is done."""

    def __init__(self, every: float = REPORT_EVERY_S):
        self.every, self.started = every, time.monotonic()
        self.last = self.started

    def __call__(self, split: str, done: int, total: int) -> None:
        now = time.monotonic()
        if done == total or now - self.last >= self.every:
            self.last = now
            print(f"exemplars: {split}: {done}/{total} rows ({100 * done / max(1, total):.0f}%),"
                  f" {now - self.started:.1f} s", flush=True)


def run(args: argparse.Namespace) -> int:
    logging.getLogger("wikisum").setLevel(logging.INFO)
    if args.block_size is not None and args.block_size < 1:
        raise SystemExit("wikisum exemplars: --block-size must be at least 1")
    if args.workers < 1:
        raise SystemExit("wikisum exemplars: --workers must be at least 1")
    if args.max_input_tokens < 1:
        raise SystemExit("wikisum exemplars: --max-input-tokens must be at least 1")
    config = exemplars.ExemplarConfig(args.data, args.extractor, args.corpus,
                                      args.max_input_tokens, args.block_size, args.workers)
    try:
        summary = exemplars.run(config, ProgressPrinter())
    except (FileNotFoundError, ValueError, KeyError) as exc:
        raise SystemExit(f"wikisum exemplars: {exc}") from exc
    for split, entry in summary["splits"].items():
        print(f"  {split}: {entry['rows']} rows, mean similarity "
              f"{entry['mean_similarity']:.3f}, {entry['seconds']:.1f} s -> {entry['path']}")
    print(f"exemplars: {sum(e['rows'] for e in summary['splits'].values())} rows in "
          f"{summary['seconds']:.1f} s (blocks of {summary['block_size']}, "
          f"{summary['workers']} workers)")
    return 0
