"""``wikisum ingest``: the stage-one Beam job (dump + WARC/WET -> article shards)."""

from __future__ import annotations

import argparse
import logging

from apache_beam.options.pipeline_options import PipelineOptions

from wikisum.pipeline import ingest
from wikisum.pipeline.references import DEFAULT_MAX_PAGE_BYTES, CleanConfig

HELP = "Beam job: Wikipedia dump + WARC/WET captures -> clone-filtered article shards"
DESCRIPTION = """\
Read Wikipedia articles from pages-articles dumps and their references from WARC and WET files,
join them by normalised URL, drop each article's own Wikipedia page and its clones, and write
Parquet shards with one row per article and its references.

Inputs may be local paths or Beam filesystem URLs (gs://...); globs are expanded.

Outputs in --out:
  articles/articles-NNNNN-of-NNNNN.parquet      one row per article (schema: docs/data.md)
  dead_letters/dead_letters-NNNNN-of-NNNNN.parquet
                                                every dropped or failed record, with its reason
  summary.json                                  per stage: in = kept + dropped
  missing_urls.txt                              cited URLs no WARC/WET provided (crawl input)
  missing_search_urls.txt                       the same for search-result URLs
"""
EPILOG = """\
Beam pipeline options are passed through, e.g.:
  local, all cores:  --direct_num_workers 0 --direct_running_mode multi_processing
  Dataflow:          --runner DataflowRunner --project PROJECT --region REGION \\
                     --temp_location gs://BUCKET/tmp --setup_file ./setup.py
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("ingest", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.set_defaults(func=run, beam_args=True)


def add_arguments(p) -> None:
    """The job's options, shared with `wikisum build`."""
    p.add_argument("--wiki", required=True, action="append", metavar="DUMP[,DUMP...]",
                   help="pages-articles XML dump(s), plain, .bz2 or .gz (repeatable)")
    p.add_argument("--warc", action="append", default=[], metavar="GLOB",
                   help="WARC/ARC files with the captured pages (repeatable)")
    p.add_argument("--wet", action="append", default=[], metavar="GLOB",
                   help="WET files with text conversions (repeatable)")
    p.add_argument("--search-results", metavar="JSONL",
                   help='search results, one {"title": ..., "urls": [...]} per line')
    p.add_argument("--clone-threshold", type=float, default=0.5, metavar="R",
                   help="drop a reference whose unigram recall of the lead exceeds R "
                        "(default: %(default)s)")
    p.add_argument("--num-shards", type=int, default=ingest.DEFAULT_SHARDS, metavar="N",
                   help="article shards to write (default: %(default)s)")
    p.add_argument("--lang", default="en", help="Wikipedia language code (default: %(default)s)")
    p.add_argument("--max-page-bytes", type=int, default=DEFAULT_MAX_PAGE_BYTES, metavar="B",
                   help="captures larger than this are dropped as too_large "
                        "(default: %(default)s)")
    p.add_argument("--page-timeout", type=float, default=CleanConfig.timeout_s, metavar="S",
                   help="seconds allowed for extracting one page's text "
                        "(default: %(default)s)")
    p.add_argument("--min-words", type=int, default=CleanConfig.min_words, metavar="N",
                   help="paragraphs with fewer words are dropped (default: %(default)s)")


def config_from_args(args, out: str | None = None) -> ingest.IngestConfig:
    if not 0.0 <= args.clone_threshold <= 1.0:
        raise SystemExit("wikisum ingest: --clone-threshold must be between 0 and 1")
    if args.num_shards < 1:
        raise SystemExit("wikisum ingest: --num-shards must be at least 1")
    return ingest.IngestConfig(
        wiki=tuple(args.wiki), out=out or args.out, warc=tuple(args.warc), wet=tuple(args.wet),
        search_results=args.search_results, clone_threshold=args.clone_threshold,
        num_shards=args.num_shards, lang=args.lang,
        clean=CleanConfig(max_page_bytes=args.max_page_bytes, timeout_s=args.page_timeout,
                          min_words=args.min_words))


def run(args: argparse.Namespace, beam_argv: list[str] | None = None) -> int:
    logging.getLogger("wikisum").setLevel(logging.INFO)
    config = config_from_args(args)
    options = PipelineOptions(beam_argv or [])
    try:
        summary = ingest.run(config, options)
    except FileNotFoundError as exc:
        raise SystemExit(f"wikisum ingest: {exc}") from exc
    print(format_summary(summary, config.out))
    return 0 if summary["balanced"] else 1


def format_summary(summary: dict, out: str) -> str:
    lines = [f"ingest finished: {out}"]
    for stage, s in summary["stages"].items():
        dropped = ", ".join(f"{k} {v}" for k, v in s["dropped"].items()) or "none"
        mark = "" if s["balanced"] else "  NOT BALANCED"
        lines.append(f"  {stage:15s} in {s['in']:>8d}  kept {s['kept']:>8d}  dropped: {dropped}"
                     f"{mark}")
    return "\n".join(lines)
