"""``wikisum exemplars``: retrieve each example's training exemplar (AdaDec, Peng et al. 2019)."""

from __future__ import annotations

import argparse
import logging

from wikisum.core import progress
from wikisum.pipeline import exemplars_config
from wikisum.workflows import checks

HELP = "retrieve each example's most similar training example (AdaDec's exemplars)"
DESCRIPTION = """\
For every train, dev and test example of a dataset, find the training example whose source is
most similar by bag-of-words cosine (top-1; a training example never gets itself; ties go to
the smallest id). Its target is the exemplar that AdaDec conditions on; its source serves only
retrieval. Exact sparse search, in blocks of queries: memory stays bounded on millions of
examples.

No leakage (--max-similarity S, default {max_similarity}): a training example also skips every
candidate whose source has a cosine above S with its own (a near copy: the same story filed
again) and every candidate whose target equals its own (whitespace and case ignored), so a
model does not learn to copy an exemplar that dev and test examples rarely have. S 1 turns both
rules off. Dev and test retrieval is the same for every S. The default is the largest S (0.01
steps) that leaves no more training exemplars at cosine >= 0.9 than dev has, measured on the
Gigaword sample: 26.3% of train against 0.5% of dev unfiltered, 0.0% of train with S 0.9
(experiments/exemplar_leakage). The output compares the splits:
mean top-1 cosine, share >= 0.9, and for train the same unfiltered and the candidates skipped.

The source is the model input: for a ranked (WikiSum) dataset the loader's input for
--extractor x --corpus x --max-input-tokens (title <t> ranked paragraphs, cut to L); for a
headline-pair dataset (`wikisum convert-pairs`) the whole source, and these options are ignored.

Input: --data, the output directory of `wikisum rank` or `wikisum convert-pairs`.
Outputs, next to the shards they index (there is no --out):
  exemplars-{split}.parquet   id, exemplar_id (a train id), similarity (schema: docs/data.md);
                              the schema metadata records S (wikisum.exemplars.max_similarity)
Then read them with pipeline.loader.Dataset(DIR).examples(..., exemplars=True).
""".replace("{max_similarity}", str(exemplars_config.DEFAULT_MAX_SIMILARITY))
REPORT_EVERY_S = 5.0


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("exemplars", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, metavar="DIR",
                   help="dataset directory (shards and dataset.json); the outputs go here")
    p.add_argument("--extractor", default=exemplars_config.DEFAULT_EXTRACTOR,
                   help="ranked datasets: extractor of the model input (default: %(default)s)")
    p.add_argument("--corpus", default=exemplars_config.DEFAULT_CORPUS,
                   help="ranked datasets: corpus of the model input (default: %(default)s)")
    p.add_argument("--max-input-tokens", type=checks.count(1),
                   default=exemplars_config.DEFAULT_MAX_INPUT_TOKENS,
                   metavar="L", help="ranked datasets: input length L (default: %(default)s)")
    p.add_argument("--block-size", type=checks.count(1), metavar="N",
                   help="queries per block (default: as many as keep one block's similarities "
                        f"under {exemplars_config.DEFAULT_MAX_CELLS:,} floats, at most "
                        f"{exemplars_config.MAX_BLOCK})")
    p.add_argument("--workers", type=checks.count(1), default=exemplars_config.default_workers(),
                   metavar="N",
                   help="threads, one block each (default: the usable CPUs, at most "
                        f"{exemplars_config.MAX_WORKERS}: %(default)s here)")
    p.add_argument("--max-similarity", type=checks.number(0.0, 1.0),
                   default=exemplars_config.DEFAULT_MAX_SIMILARITY, metavar="S",
                   help="a training example skips candidates whose source has a cosine above S "
                        "with its own, or whose target equals its own; 1: skip none "
                        "(default: %(default)s, chosen on Gigaword: see above)")
    p.set_defaults(func=run)


class SplitProgress:
    """The callback ``exemplars.run`` reports (split, rows done, rows of the split) to: one
    :class:`~wikisum.core.progress.Progress` per split, with the split's rows as its
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
    if not 0.0 <= args.max_similarity <= 1.0:
        raise SystemExit("wikisum exemplars: --max-similarity must be in [0, 1]")
    data = checks.dataset(args.data, "--data", "exemplars")
    config = exemplars.ExemplarConfig(data, args.extractor, args.corpus,
                                      args.max_input_tokens, args.block_size, args.workers,
                                      args.max_similarity)
    try:
        shown = SplitProgress()
        try:
            summary = exemplars.run(config, shown)
        finally:
            shown.close()
    except (FileNotFoundError, ValueError, KeyError) as exc:
        raise SystemExit(f"wikisum exemplars: {exc}") from exc
    print(format_summary(summary))
    return 0


def format_summary(summary: dict) -> str:
    """The splits side by side (mean top-1 cosine, share at or above the near-duplicate
    cosine, for train the same without the filter and the candidates each rule skipped), the
    files, and the totals."""
    s, near = summary["max_similarity"], summary["near_duplicate"]
    rule = (f"training examples skip candidates with a cosine above {s:g} or their own target"
            if s < 1 else "--max-similarity 1: training examples skip only themselves")
    header = (f"  {'split':<18}{'rows':>9}{'mean top-1':>12}{f'>= {near:g}':>9}"
              f"{f'skipped: cosine > {s:g}':>24}{'same target':>13}{'changed':>9}"
              f"{'seconds':>9}")
    lines = [f"exemplars ({rule}):", header]

    def row(name: str, rows: int, stats: dict, rest: str) -> str:
        return (f"  {name:<18}{rows:>9,}{stats['mean_similarity']:>12.3f}"
                f"{100 * stats['near_duplicate_share']:>8.1f}%{rest}")

    for split, entry in summary["splits"].items():
        skipped = entry.get("skipped")
        rest = (f"{skipped['near_duplicate']:>24,}{skipped['same_target']:>13,}"
                f"{entry['changed']:>9,}" if skipped else f"{'-':>24}{'-':>13}{'-':>9}")
        lines.append(row(split, entry["rows"], entry, f"{rest}{entry['seconds']:>9.1f}"))
        if "unfiltered" in entry:
            lines.append(row(f"{split} unfiltered", entry["rows"], entry["unfiltered"], ""))
    lines += [f"  {split} -> {entry['path']}" for split, entry in summary["splits"].items()]
    no_candidate = sum(e.get("no_candidate", 0) for e in summary["splits"].values())
    if no_candidate:
        lines.append(f"  {no_candidate:,} training examples had every candidate skipped: they "
                     "keep their unfiltered exemplar")
    lines.append(f"exemplars: {sum(e['rows'] for e in summary['splits'].values()):,} rows in "
                 f"{summary['seconds']:.1f} s (blocks of {summary['block_size']}, "
                 f"{summary['workers']} workers)")
    return "\n".join(lines)


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership): no option names
    an output; the exemplar files go into the dataset directory, beside the shards they index."""
    return []
