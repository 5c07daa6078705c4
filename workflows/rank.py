"""``wikisum rank``: the Beam job writing training shards with every extractor's ranking."""

from __future__ import annotations

import argparse
import logging

from wikisum import extractors
from wikisum.core import progress
from wikisum.core.inputs import CORPORA, DEFAULT_INPUT
from wikisum.pipeline import rank_config
from wikisum.workflows import checks

HELP = "Beam job: ingest shards -> training shards (token ids + every extractor x corpus)"
DESCRIPTION = """\
Tokenise every article (title, lead, each reference paragraph) once with the vocabulary and
rank its paragraphs with every extractor ({rankers}, and
learned when a model is given or trained) on every corpus ({corpora}).

Input: --data, the --out directory of `wikisum ingest`. Outputs in --out:
  {{train,dev,test}}-NNNNN-of-NNNNN.parquet   one row per article (schema: docs/data.md)
  dataset.json                              vocabulary, special ids, extractors, row counts
  inputs/EXTRACTOR-CORPUS-L/                ready model inputs, one set per --model-inputs
  README.md                                 dataset card: `datasets.load_dataset(OUT)` reads
                                            the default model inputs, (OUT, "ranked") all
  learned.json                              the learned extractor, with --train-learned
  rank_dead_letters/                        articles an extractor failed on
"""


def description() -> str:
    """DESCRIPTION with the extractors of the registry as it is now: a new one is listed
    without editing this text."""
    rankers = [name for name in extractors.REGISTRY if name != "learned"]
    return DESCRIPTION.format(rankers=", ".join(rankers),
                              corpora=", ".join(CORPORA))


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("rank", help=HELP, description=description(),
                              epilog="Beam pipeline options are passed through (see `wikisum "
                                     "ingest --help`).\n" + checks.SIZES,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    checks.add_option(p, "--data", retired=["--in"], dest="ingest_dir", required=True,
                      metavar="DIR", help="output directory of `wikisum ingest`")
    p.add_argument("--vocab", required=True, metavar="MODEL", help="sentencepiece model")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    checks.add_shard_buffer(p)
    p.set_defaults(func=run, beam_args=True)


def add_arguments(p) -> None:
    """Options shared with `wikisum build`."""
    p.add_argument("--train-learned", action="store_true",
                   help="fit the learned extractor on the train split first (saved as "
                        "OUT/learned.json) and rank with it too")
    p.add_argument("--learned", metavar="PATH",
                   help="rank with this learned-extractor model as well")
    p.add_argument("--learned-articles", type=checks.count(1),
                   default=extractors.LEARNED_MAX_ARTICLES, metavar="N",
                   help="train articles sampled to fit it (default: %(default)s)")
    p.add_argument("--model-inputs", default=DEFAULT_INPUT.name,
                   metavar="EXTRACTOR-CORPUS-L[,...]",
                   help="ready model inputs to write (OUT/inputs/NAME/, a config of the dataset "
                        "card, the first one the default), or 'all': every extractor x corpus "
                        f"at L {DEFAULT_INPUT.max_input_tokens} (default: "
                        "%(default)s)")
    p.add_argument("--targets", default=",".join(rank_config.DEFAULT_TARGETS),
                   metavar="lead[,article]",
                   help="targets each row holds: the lead (always), and with 'article' the "
                        "whole article, its sections marked (the paper's section 6) "
                        "(default: %(default)s)")
    checks.add_option(p, "--shards", retired=["--rank-shards"], dest="rank_shards",
                      type=checks.count(1, 100_000), default=rank_config.DEFAULT_SHARDS,
                      metavar="N",
                      help="training shards per split (default: %(default)s)")


def check_inputs(args) -> None:
    """The ingest output, the vocabulary and --learned, before any work."""
    checks.ingest_output(args.ingest_dir, "--data", "rank")
    checks.input_path(args.vocab, "--vocab", "rank")
    check_learned(args, "rank")


def check_learned(args, command: str) -> None:
    """--learned names a learned-extractor model that loads (where it is given): a pickle of
    an older wikisum, or any file that is not the model's JSON, is refused before any work."""
    if args.learned:
        checks.input_path(args.learned, "--learned", command)
        if "://" in args.learned:
            return  # read by the job
        from wikisum.extractors import learned

        try:
            learned.load(args.learned)
        except ValueError as exc:
            raise SystemExit(f"wikisum {command}: --learned {exc}") from None


def learned_model(args, ingest_dir: str, out: str, dry_run: bool = False) -> str | None:
    """The learned extractor to rank with: --learned, or fitted now with --train-learned (a
    dry run only names where it would be)."""
    if not args.train_learned:
        return args.learned
    from apache_beam.io.filesystems import FileSystems

    from wikisum.core import outputs, shards
    from wikisum.extractors import learned

    path = FileSystems.join(out, learned.FILE_NAME)
    if dry_run:
        return path
    rows = shards.iter_rows(outputs.article_shards(ingest_dir),
                            ["title", "split", "lead", "references"])
    model = learned.train((r for r in rows if r["split"] == "train"), args.learned_articles)
    model.save(path)
    progress.say(f"learned extractor: fitted on {model.info['paragraphs']} paragraphs of "
          f"{model.info['articles']} train articles -> {path}")
    return path


def with_model_inputs(args, config, dry_run: bool = False):
    """``config`` with the ready model inputs --model-inputs names (checked against the
    extractors this run ranks with)."""
    from dataclasses import replace

    # a dry run reads nothing: the corpora of a finished ingest output are read when it runs
    corpora = (None if dry_run else ingest_corpora(config.ingest_dir)) or config.corpora
    inputs = rank_config.parse_inputs(args.model_inputs, config.extractor_names())
    if args.model_inputs.strip() == "all":
        inputs = tuple(spec for spec in inputs if spec.corpus in corpora)
    outside = [spec.name for spec in inputs if spec.corpus not in corpora]
    if outside:
        raise ValueError(f"--model-inputs {', '.join(outside)}: {config.ingest_dir} has the "
                         f"corpora {', '.join(corpora)} only (tensor2tensor's URL lists without "
                         "a dump do not tell citations from search results)")
    return replace(config, inputs=inputs, corpora=tuple(corpora),
                   targets=rank_config.parse_targets(getattr(args, "targets", "lead")))


def ingest_corpora(ingest_dir: str) -> list[str] | None:
    """The corpora an ingest output's summary.json records (None where it does not say, or
    cannot be read yet: a dry run on Dataflow, where the job reads it)."""
    from wikisum.core import outputs

    try:
        return outputs.read_summary(ingest_dir).get("corpora")
    except (OSError, ValueError):
        return None


def watch(ingest_dir: str, options, what: str = "rank"):
    """Progress of a local rank run: articles ranked of the rows the ingest shards hold (their
    Parquet footers say)."""

    def total() -> int:
        from wikisum.core import outputs, shards

        return sum(shards.row_count(path) for path in outputs.article_shards(ingest_dir))

    from wikisum.pipeline import beamio

    return beamio.watch_job(what, options, "articles", total=total)


def run(args: argparse.Namespace, beam_argv: list[str] | None = None) -> int:
    from apache_beam.options.pipeline_options import PipelineOptions

    from wikisum.pipeline import beamio, rank

    logging.getLogger("wikisum").setLevel(progress.log_level())
    options = PipelineOptions(beam_argv or [])
    dry = beamio.is_dry_run(options)
    if not dry:
        checks.output_dir(args.out, "rank")
        check_inputs(args)
    try:
        model = learned_model(args, args.ingest_dir, args.out, dry)
        config = with_model_inputs(args, rank_config.RankConfig(
            args.ingest_dir, args.vocab, args.out, model, args.rank_shards, args.shard_buffer),
            dry)
        with watch(args.ingest_dir, options):
            info = rank.run(config, options)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum rank: {exc}") from exc
    if info is None:
        return 0
    print(f"rank: {info['rows']} articles ranked by {len(info['extractors'])} extractors x "
          f"{len(info['corpora'])} corpora -> {args.out} ({info['errors']} errors)")
    return 0 if info["errors"] == 0 else 1


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
