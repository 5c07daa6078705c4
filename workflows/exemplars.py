"""``wikisum exemplars``: retrieve each example's training exemplar (AdaDec, Peng et al. 2019)."""

from __future__ import annotations

import argparse
import logging

from wikisum.workflows import checks, defaults, progress

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
    p.add_argument("--extractor", default=defaults.EXEMPLAR_EXTRACTOR,
                   help="ranked datasets: extractor of the model input (default: %(default)s)")
    p.add_argument("--corpus", default=defaults.EXEMPLAR_CORPUS,
                   help="ranked datasets: corpus of the model input (default: %(default)s)")
    p.add_argument("--max-input-tokens", type=checks.count(1),
                   default=defaults.EXEMPLAR_MAX_INPUT_TOKENS,
                   metavar="L", help="ranked datasets: input length L (default: %(default)s)")
    p.add_argument("--block-size", type=checks.count(1), metavar="N",
                   help="queries per block (default: as many as keep one block's similarities "
                        f"under {defaults.EXEMPLAR_MAX_CELLS:,} floats, at most "
                        f"{defaults.EXEMPLAR_MAX_BLOCK})")
    p.add_argument("--workers", type=checks.count(1), default=defaults.exemplar_workers(),
                   metavar="N",
                   help="threads, one block each (default: the usable CPUs, at most 8: "
                        "%(default)s here)")
    p.set_defaults(func=run)


class SplitProgress:
    """The callback ``exemplars.run`` reports (split, rows done, rows of the split) to: one
    :class:`~wikisum.workflows.progress.Progress` per split, with the split's rows as its
    total (a bar on a terminal; otherwise a line every ``every`` seconds with rate and ETA)."""

    def __init__(self, every: float = REPORT_EVERY_S):
        self.every = every
        self.current: progress.Progress | None = None

    def __call__(self, split: str, done: int, total: int) -> None:
        what = f"exemplars {split}"
        if self.current is None or self.current.what != what:
            self.close()
            self.current = progress.Progress(what, total, "rows", every=self.every)
            self.current.note(f"{what}: {total:,} rows in all")
        self.current.update(done - self.current.done)
        if done >= total:
            self.close()

    def close(self) -> None:
        if self.current is not None:
            self.current.close()
            self.current = None


def run(args: argparse.Namespace) -> int:
    from wikisum.pipeline import exemplars

    logging.getLogger("wikisum").setLevel(progress.log_level())
    if args.block_size is not None and args.block_size < 1:
        raise SystemExit("wikisum exemplars: --block-size must be at least 1")
    if args.workers < 1:
        raise SystemExit("wikisum exemplars: --workers must be at least 1")
    if args.max_input_tokens < 1:
        raise SystemExit("wikisum exemplars: --max-input-tokens must be at least 1")
    config = exemplars.ExemplarConfig(args.data, args.extractor, args.corpus,
                                      args.max_input_tokens, args.block_size, args.workers)
    try:
        shown = SplitProgress()
        try:
            summary = exemplars.run(config, shown)
        finally:
            shown.close()
    except (FileNotFoundError, ValueError, KeyError) as exc:
        raise SystemExit(f"wikisum exemplars: {exc}") from exc
    for split, entry in summary["splits"].items():
        print(f"  {split}: {entry['rows']} rows, mean similarity "
              f"{entry['mean_similarity']:.3f}, {entry['seconds']:.1f} s -> {entry['path']}")
    print(f"exemplars: {sum(e['rows'] for e in summary['splits'].values())} rows in "
          f"{summary['seconds']:.1f} s (blocks of {summary['block_size']}, "
          f"{summary['workers']} workers)")
    return 0
