"""``wikisum rank``: the Beam job writing training shards with every extractor's ranking."""

from __future__ import annotations

import argparse
import logging

from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from wikisum import extractors
from wikisum.extractors import learned
from wikisum.pipeline import beamio, outputs, rank, shards
from wikisum.workflows import checks

HELP = "Beam job: ingest shards -> training shards (token ids + every extractor x corpus)"
# Every registered extractor, so that a new one is listed without editing this text.
RANKERS = ", ".join(name for name in extractors.NAMES if name != "learned")
DESCRIPTION = f"""\
Tokenise every article (title, lead, each reference paragraph) once with the vocabulary and
rank its paragraphs with every extractor ({RANKERS}, and
learned when a model is given or trained) on every corpus (citations, search, combined).

Outputs in --out:
  {{train,dev,test}}-NNNNN-of-NNNNN.parquet   one row per article (schema: docs/data.md)
  dataset.json                              vocabulary, special ids, extractors, row counts
  learned.pkl                               the learned extractor, with --train-learned
  rank_dead_letters/                        articles an extractor failed on
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("rank", help=HELP, description=DESCRIPTION,
                              epilog="Beam pipeline options are passed through (see `wikisum "
                                     "ingest --help`).",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    p.add_argument("--in", dest="ingest_dir", required=True, metavar="DIR",
                   help="output directory of `wikisum ingest`")
    p.add_argument("--vocab", required=True, metavar="MODEL", help="sentencepiece model")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--shard-buffer-mb", type=checks.count(1, 1_000_000),
                   default=shards.DEFAULT_BUFFER_BYTES // (1024 * 1024), metavar="MB",
                   help="rows a shard writer holds in memory before it sorts them on local "
                        "disk; bounds a worker's memory per shard (default: %(default)s)")
    p.set_defaults(func=run, beam_args=True)


def add_arguments(p) -> None:
    """Options shared with `wikisum build`."""
    p.add_argument("--train-learned", action="store_true",
                   help="fit the learned extractor on the train split first (saved as "
                        "OUT/learned.pkl) and rank with it too")
    p.add_argument("--learned", metavar="PATH",
                   help="rank with this learned-extractor model as well")
    p.add_argument("--learned-articles", type=checks.count(1), default=learned.DEFAULT_MAX_ARTICLES,
                   metavar="N", help="train articles sampled to fit it (default: %(default)s)")
    p.add_argument("--rank-shards", type=checks.count(1, 100_000), default=rank.DEFAULT_SHARDS,
                   metavar="N",
                   help="shards per split (default: %(default)s)")


def learned_model(args, ingest_dir: str, out: str, dry_run: bool = False) -> str | None:
    """The learned extractor to rank with: --learned, or fitted now with --train-learned (a
    dry run only names where it would be)."""
    if not args.train_learned:
        return args.learned
    path = FileSystems.join(out, "learned.pkl")
    if dry_run:
        return path
    rows = shards.iter_rows(outputs.article_shards(ingest_dir),
                            ["title", "split", "lead", "references"])
    model = learned.train((r for r in rows if r["split"] == "train"), args.learned_articles)
    model.save(path)
    print(f"learned extractor: fitted on {model.info['paragraphs']} paragraphs of "
          f"{model.info['articles']} train articles -> {path}")
    return path


def run(args: argparse.Namespace, beam_argv: list[str] | None = None) -> int:
    logging.getLogger("wikisum").setLevel(logging.INFO)
    options = PipelineOptions(beam_argv or [])
    dry = beamio.is_dry_run(options)
    if not dry:
        checks.output_dir(args.out, "rank")
    try:
        model = learned_model(args, args.ingest_dir, args.out, dry)
        config = rank.RankConfig(args.ingest_dir, args.vocab, args.out, model, args.rank_shards,
                                 args.shard_buffer_mb * 1024 * 1024)
        info = rank.run(config, options)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum rank: {exc}") from exc
    if info is None:
        return 0
    print(f"rank: {info['rows']} articles ranked by {len(info['extractors'])} extractors x "
          f"{len(info['corpora'])} corpora -> {args.out} ({info['errors']} errors)")
    return 0 if info["errors"] == 0 else 1
