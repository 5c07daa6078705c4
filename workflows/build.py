"""``wikisum build``: ingest, vocab and rank in sequence with one set of options."""

from __future__ import annotations

import argparse
import logging

from wikisum.workflows import checks, defaults, progress
from wikisum.workflows import ingest as ingest_cmd
from wikisum.workflows import rank as rank_cmd

HELP = "ingest + vocab + rank in one go: from dump and crawl to training shards"
DESCRIPTION = """\
Run the three stage-one jobs in sequence with one set of options:

  OUT/ingest        `wikisum ingest` (articles + references, clone-filtered)
  OUT/vocab.model   `wikisum vocab` (sentencepiece, shared by inputs and targets)
  OUT/data          `wikisum rank` (training shards with every extractor x corpus ranking;
                    the learned extractor is fitted first unless --no-learned)
  OUT/README.md     dataset card: `datasets.load_dataset("OUT")` gives train/dev/test of
                    the ready model inputs (--model-inputs; the first is the default)

The trainers read OUT/data (pipeline.loader.Dataset). Shards: --ingest-shards article shards
in OUT/ingest, --shards training shards per split in OUT/data.
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("build", help=HELP, description=DESCRIPTION,
                              epilog="Beam pipeline options are passed through to both Beam "
                                     "jobs (see `wikisum ingest --help`).\n" + checks.SIZES,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    ingest_cmd.add_arguments(p, shards_option="--ingest-shards")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--vocab-size", type=checks.count(16), default=defaults.VOCAB_SIZE, metavar="N",
                   help="vocabulary size, an upper bound (default: %(default)s)")
    p.add_argument("--max-texts", type=checks.count(1), default=defaults.VOCAB_MAX_TEXTS,
                   metavar="N",
                   help="texts sampled to train the vocabulary (default: %(default)s)")
    p.add_argument("--no-learned", dest="train_learned", action="store_false",
                   help="do not fit the learned extractor")
    rank_cmd.add_arguments(p)
    p.set_defaults(func=run, beam_args=True, train_learned=True)


def run(args: argparse.Namespace, beam_argv: list[str] | None = None) -> int:
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions

    from wikisum.pipeline import beamio, card, ingest, rank, vocab

    logging.getLogger("wikisum").setLevel(progress.log_level())
    options = PipelineOptions(beam_argv or [])
    ingest_dir = FileSystems.join(args.out, "ingest")
    vocab_path = FileSystems.join(args.out, "vocab.model")
    data_dir = FileSystems.join(args.out, "data")
    dry = beamio.is_dry_run(options)
    if dry:
        return dry_run(args, options, ingest_dir, vocab_path, data_dir)
    ingest_cmd.check_inputs(args, args.out, "build")
    try:
        progress.say(f"build [1/3] ingest -> {ingest_dir}")
        config = ingest_cmd.config_from_args(args, ingest_dir)
        with ingest_cmd.watch(config, options, "build [1/3] ingest"):
            summary = ingest.run(config, options)
        progress.say(ingest_cmd.format_summary(summary, ingest_dir))
        if ingest_cmd.empty(summary, "build", args.allow_empty):
            return 1
        if not summary["balanced"]:
            print("build: ingest accounting is not balanced; stopping")
            return 1
        progress.say(f"build [2/3] vocab -> {vocab_path}")
        vocab.train_vocab(vocab.training_texts(ingest_dir, args.max_texts), vocab_path,
                          args.vocab_size)
        progress.say(f"build [3/3] rank -> {data_dir}")
        model = rank_cmd.learned_model(args, ingest_dir, data_dir)
        with rank_cmd.watch(ingest_dir, options, "build [3/3] rank"):
            info = rank.run(rank_cmd.with_model_inputs(args, rank.RankConfig(
                ingest_dir, vocab_path, data_dir, model, args.rank_shards, args.shard_buffer)),
                            options)
        # The build's own card: `datasets.load_dataset(OUT)` reads OUT/data's configs.
        card.write_card(args.out, info, prefix="data/")
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum build: {exc}") from exc
    print(f"build finished: {info['rows']} articles, {info['vocab_size']} subwords, "
          f"extractors {', '.join(info['extractors'])} x corpora "
          f"{', '.join(info['corpora'])}\n  training shards: {data_dir}")
    return 0 if info["errors"] == 0 else 1


def dry_run(args, options, ingest_dir: str, vocab_path: str, data_dir: str) -> int:
    """Both Beam jobs built and validated (``--dry_run true``); the vocabulary, trained on the
    launching machine between them, is only named."""
    from wikisum.pipeline import ingest, rank

    try:
        ingest.run(ingest_cmd.config_from_args(args, ingest_dir), options)
        print(f"wikisum build: the vocabulary would be trained here, between the jobs -> "
              f"{vocab_path}")
        model = rank_cmd.learned_model(args, ingest_dir, data_dir, dry_run=True)
        rank.run(rank_cmd.with_model_inputs(args, rank.RankConfig(
            ingest_dir, vocab_path, data_dir, model, args.rank_shards, args.shard_buffer)),
            options)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum build: {exc}") from exc
    return 0
