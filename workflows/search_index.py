"""``wikisum search-index``: the Beam job that builds a local BM25 search index of web pages."""

from __future__ import annotations

import argparse
import logging
import sys

from wikisum.core import progress
from wikisum.pipeline.ingest.config import CleanConfig
from wikisum.workflows import checks
from wikisum.workflows.ingest import add_cleaning_arguments

log = logging.getLogger("wikisum.search")

HELP = "Beam job: WARC/WET pages -> a sharded BM25 index for `wikisum search`"
DESCRIPTION = """\
Clean the pages of WARC and WET files as ingest does (the same text extraction, boilerplate
rules and language identification), leave out Wikipedia and its mirrors, and write a BM25
index (tantivy) in shards that `wikisum search --index` queries.

Outputs in --out:
  shards/RUN/shard-SSSSS-of-NNNNN/   one tantivy index per shard (pages spread by URL hash)
  dead_letters/                      every page left out, with its reason
  index.json                         written last: version, analysis, shards and their files,
                                     and the job's counts (pages in = indexed + dropped)
"""
EPILOG = checks.BEAM_OPTIONS + "\n"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("search-index", help=HELP, description=DESCRIPTION,
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--warc", action="append", default=[], metavar="GLOB",
                   help="WARC/ARC files with the pages to index (repeatable)")
    p.add_argument("--wet", action="append", default=[], metavar="GLOB",
                   help="WET files with text conversions to index (repeatable)")
    p.add_argument("--out", required=True, metavar="INDEX", help="the index's directory")
    p.add_argument("--shards", dest="num_shards", type=checks.count(1, 100_000), default=1,
                   metavar="N",
                   help="index shards to write, built and searched in parallel; each shard "
                        "scores by its own statistics, so keep shards large (on Dataflow, "
                        "about a million pages each) (default: %(default)s)")
    p.add_argument("--lang", default="en", metavar="CODE",
                   help="the language pages and queries are analysed in: its Snowball stemmer "
                        "applied to both, its function words dropped from queries "
                        "(default: %(default)s)")
    p.add_argument("--reference-lang", metavar="CODE",
                   help="drop pages identified, with confidence, as another language than "
                        "CODE, as wrong_language; 'any' keeps every language (default: --lang)")
    p.add_argument("--exclude-sites", metavar="FILE",
                   help="hosts of Wikipedia's mirrors to leave out, one a line, instead of the "
                        "bundled list (Wikipedia itself is always left out)")
    add_cleaning_arguments(p)
    checks.add_shard_buffer(p, retired=False)
    p.set_defaults(func=run, beam_args=True)


def config_from_args(args):
    from wikisum.pipeline import language
    from wikisum.pipeline.search.indexjob import IndexConfig
    from wikisum.pipeline.search.sites import site_list

    if not args.warc and not args.wet:
        raise SystemExit("wikisum search-index: nothing to index: give --warc GLOB or --wet GLOB")
    if args.reference_lang not in (None, "", "any") and not language.is_known(
            args.reference_lang):
        raise SystemExit(f"wikisum search-index: --reference-lang {args.reference_lang!r} is "
                         "not a language the identifier knows ('any' keeps every language)")
    try:
        mirrors = site_list(args.exclude_sites)
    except (OSError, ValueError) as exc:
        raise SystemExit(f"wikisum search-index: --exclude-sites: {exc}") from exc
    wanted = args.reference_lang if args.reference_lang is not None else args.lang
    return IndexConfig(
        out=args.out, warc=tuple(args.warc), wet=tuple(args.wet), num_shards=args.num_shards,
        lang=args.lang, reference_lang=args.reference_lang, mirrors=mirrors,
        clean=CleanConfig(max_page_bytes=args.max_page_bytes, timeout_s=args.page_timeout,
                          min_words=args.min_words,
                          identify_language=wanted not in ("", "any")),
        buffer_bytes=args.shard_buffer)


def run(args: argparse.Namespace, beam_argv: list[str] | None = None) -> int:
    from apache_beam.options.pipeline_options import PipelineOptions

    from wikisum.pipeline import beamio
    from wikisum.pipeline.search import indexjob

    logging.getLogger("wikisum").setLevel(progress.log_level())
    options = PipelineOptions(beam_argv or [])
    if not beamio.is_dry_run(options):
        checks.output_dir(args.out, "search-index")
        checks.input_files(args.warc, "--warc", "search-index")
        checks.input_files(args.wet, "--wet", "search-index")
    config = config_from_args(args)
    try:
        with beamio.watch_job("search-index", options, "files",
                              total=lambda: beamio.count_files(config.warc + config.wet),
                              others=("records", "shards")):
            record = indexjob.run(config, options)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum search-index: {exc}") from exc
    if record is None:
        return 0
    print(format_record(record, args.out))
    if not record["index"]["documents"]:
        print("wikisum search-index: warning: no page was indexed: every page was dropped "
              f"(reasons above; {args.out}/dead_letters lists each)", file=sys.stderr)
    return 0 if record["balanced"] else 1


def format_record(record: dict, out: str) -> str:
    from wikisum.workflows.ingest import stage_lines

    info = record["index"]
    return "\n".join([f"search-index finished: {out}: {info['documents']} pages in "
                      f"{len(info['shards'])} shard(s), analysed as {info['lang']}",
                      *stage_lines(record["stages"])])


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
