"""``wikisum search``: the top k pages for every title, from a local index (a Beam job) or a web
search API, written as the search-results lines ingest reads."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Iterator

from wikisum.core import progress
from wikisum.pipeline.search.titles import DEFAULT_QUERY, QUERY_MODES
from wikisum.workflows import checks, websearch

log = logging.getLogger("wikisum.search")

HELP = "the top k pages for every title: a local index (Beam job) or a web search API"
DESCRIPTION = """\
Search for every title the top --k pages, as the paper's search results were made: from a
local BM25 index (`wikisum search-index`; a Beam job that asks every shard and merges each
title's answers) or from a web search API (--engine; docs/web-search.md). Wikipedia's pages and
its mirrors' are never returned.

Titles from --titles FILE (one a line), --wiki DUMP (its articles) or --ingest DIR (a finished
ingest's articles). --out is the results file ingest reads as --search-results:
  {"title": ..., "urls": [...], "scores": [...], "engine": ..., "query": ...}  a line per title
and the summary beside it (results.jsonl -> results.summary.json): titles in = searched +
dropped by reason, and the dropped titles by name.
"""
EPILOG = checks.BEAM_OPTIONS + "\n"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("search", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--index", metavar="INDEX",
                   help="a search index built by `wikisum search-index`")
    p.add_argument("--titles", metavar="FILE", help="titles to search, one a line")
    p.add_argument("--wiki", action="append", default=[], metavar="DUMP",
                   help="search the titles of a dump's articles (repeatable)")
    p.add_argument("--ingest", metavar="DIR",
                   help="search the titles of a finished ingest output's articles")
    p.add_argument("--out", required=True, metavar="FILE", help="the results file (JSONL)")
    p.add_argument("--k", type=checks.count(1, 1000), default=10, metavar="K",
                   help="pages per title (default: %(default)s, the paper's)")
    p.add_argument("--query", choices=QUERY_MODES, default=DEFAULT_QUERY,
                   help="the query of a title: the title as the paper used it, or without a "
                        "closing disambiguation in parentheses (default: %(default)s; "
                        "docs/search.md compares them)")
    p.add_argument("--exclude-sites", metavar="FILE",
                   help="hosts of Wikipedia's mirrors to leave out of the results, one a line "
                        "(default: the list the index was built with; for --engine, the "
                        "bundled list)")
    websearch.add_arguments(p)
    p.set_defaults(func=run, beam_args=True)


def check_args(args) -> None:
    sources = [bool(args.titles), bool(args.wiki), bool(args.ingest)]
    if not any(sources):
        raise SystemExit("wikisum search: no titles: give --titles FILE, --wiki DUMP or "
                         "--ingest DIR")
    if bool(args.index) == bool(args.engine):
        raise SystemExit("wikisum search: give one of --index INDEX (a local index) and "
                         "--engine NAME (a web search API)")
    if args.index:
        given = [f"--{name.replace('_', '-')}" for name, default in
                 websearch.ENGINE_OPTIONS.items() if getattr(args, name, default) != default]
        if given:
            raise SystemExit(f"wikisum search: {', '.join(given)}: for a web search API "
                             "(--engine); a local index (--index) takes none of them (Beam's "
                             "--dry_run true builds its job without running it)")


def check_inputs(args) -> None:
    """The titles' sources exist (and an ingest output is finished), before any work."""
    from wikisum.core import outputs, shards

    if args.titles:
        checks.input_files([args.titles], "--titles", "search")
    checks.input_files(args.wiki, "--wiki", "search")
    if args.ingest:
        try:
            outputs.read_summary(args.ingest)
        except (shards.IncompleteOutput, ValueError) as exc:
            raise SystemExit(f"wikisum search: --ingest: {exc}") from None


def iter_titles(args) -> Iterator[str]:
    """The titles of every source given, in order: the titles file, the dumps, the ingest."""
    from wikisum.core import files, shards
    from wikisum.core.outputs import article_shards
    from wikisum.pipeline.beamio import match_paths, split_patterns
    from wikisum.pipeline.ingest.articles import open_dump
    from wikisum.pipeline.search import titles as tt

    if args.titles:
        with files.open_read(args.titles) as raw, tt.decompressed(raw, args.titles) as f:
            for number, text, problem in tt.file_lines(f):
                if problem is not None:
                    log.warning("%s, line %d: %s: not searched", args.titles, number, problem)
                else:
                    yield text
    for path in sorted(match_paths(split_patterns(args.wiki))) if args.wiki else []:
        with open_dump(path) as f:
            yield from tt.dump_titles(f)
    if args.ingest:
        for rec in shards.iter_rows(article_shards(args.ingest), columns=["title"]):
            yield rec["title"]


def local_config(args):
    from wikisum.pipeline.search.searchjob import SearchConfig
    from wikisum.pipeline.search.sites import site_list

    mirrors = ()
    if args.exclude_sites:
        try:
            mirrors = site_list(args.exclude_sites)
        except (OSError, ValueError) as exc:
            raise SystemExit(f"wikisum search: --exclude-sites: {exc}") from exc
    return SearchConfig(index=args.index, out=args.out, titles=args.titles,
                        wiki=tuple(args.wiki), ingest=args.ingest, k=args.k, query=args.query,
                        mirrors=mirrors)


def run(args: argparse.Namespace, beam_argv: list[str] | None = None) -> int:
    check_args(args)
    if args.engine:
        check_inputs(args)
        if beam_argv:
            raise SystemExit(f"wikisum search: {' '.join(beam_argv)}: Beam options are for "
                             "the local index; a web search API runs here, at its rate limit")
        return websearch.run(args, iter_titles(args))
    return run_local(args, beam_argv)


def run_local(args, beam_argv: list[str] | None = None, options=None) -> int:
    """The search of a local index, a Beam job run with ``options`` (PipelineOptions; else
    made from ``beam_argv``)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    from wikisum.pipeline import beamio
    from wikisum.pipeline.search import index as idx
    from wikisum.pipeline.search import searchjob
    from wikisum.pipeline.search.results import summary_path

    logging.getLogger("wikisum").setLevel(progress.log_level())
    if options is None:
        options = PipelineOptions(beam_argv or [])
    if not beamio.is_dry_run(options):
        check_inputs(args)
    config = local_config(args)
    try:
        summary = searchjob.run(config, options,
                                lambda: beamio.watch_job("search", options, "titles"))
    except idx.BadIndex as exc:
        raise SystemExit(f"wikisum search: --index: {exc}") from exc
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum search: {exc}") from exc
    if summary is None:
        return 0
    print(format_summary(summary, config.out))
    corrupt = summary["stages"].get("files", {}).get("dropped", {}).get("corrupt_file", 0)
    if corrupt:
        print(f"wikisum search: warning: {corrupt} titles file(s) stopped being readable; the "
              f"titles before the damage were searched ({summary_path(config.out)} says where)",
              file=sys.stderr)
    titles = summary["stages"].get("titles", {})
    if not titles.get("kept"):
        print("wikisum search: warning: no title was searched (reasons above; the summary "
              "names each dropped title)", file=sys.stderr)
    return 0 if summary["balanced"] else 1


def format_summary(summary: dict, out: str) -> str:
    from wikisum.workflows.ingest import stage_lines

    return "\n".join([f"search finished: {out} (engine {summary.get('engine')})",
                      *stage_lines(summary["stages"], width=12)])


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership): the results file
    and its summary (and, for a web search API, its cache)."""
    from wikisum.core.ownership import Output
    from wikisum.pipeline.search.results import summary_path

    if getattr(args, "engine", None):
        return websearch.outputs(args)
    return [Output("--out", args.out, "file"), Output("--out", summary_path(args.out), "file")]
