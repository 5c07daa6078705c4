"""``wikisum search --engine NAME``: the titles searched through a web search API (Google's
Programmable Search, Brave's Search API or a self-hosted SearXNG), paced, within a daily quota,
every answer cached so that a rerun resumes (docs/web-search.md). The options here, the search
itself in :mod:`wikisum.pipeline.search.web`."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Iterable

from wikisum.core.ownership import Output
from wikisum.workflows import checks

ENGINE_NAMES = ("google", "brave", "searxng")  # engines.ENGINES, without importing it here
DEFAULT_RETRIES = 5
DEFAULT_TIMEOUT_S = 30.0
# The options that only a web search API reads, with their defaults.
ENGINE_OPTIONS = {"endpoint": None, "cache": None, "qps": None, "daily_quota": None,
                  "dry_run": False, "price_per_1000": None, "retries": DEFAULT_RETRIES,
                  "timeout": DEFAULT_TIMEOUT_S}


def add_arguments(p) -> None:
    """The web search API's options of `wikisum search`."""
    g = p.add_argument_group(
        "web search API (--engine)",
        "Ask a web search API instead of a local index, one request at a time. The key comes\n"
        "from the environment, never from an option: WIKISUM_GOOGLE_API_KEY and\n"
        "WIKISUM_GOOGLE_CX for google, WIKISUM_BRAVE_API_KEY for brave; searxng needs none.\n"
        "Every answer is cached, so a rerun asks only what is missing (docs/web-search.md).")
    g.add_argument("--engine", choices=ENGINE_NAMES, default=None,
                   help="the web search API to ask (default: none; --index searches a local "
                        "index)")
    g.add_argument("--endpoint", metavar="URL",
                   help="the URL asked instead of the vendor's; for searxng (required) the root "
                        "of the instance, e.g. http://localhost:8888")
    g.add_argument("--cache", metavar="CACHE",
                   help="the folder of cached answers and of the daily quota's count (default: "
                        "beside --out, results.jsonl -> results.cache); reuse it to resume")
    g.add_argument("--qps", type=checks.number(0, 1000, low_open=True), metavar="Q",
                   help="queries per second at most (default: the engine's, 1; brave also "
                        "follows its X-RateLimit-Limit header)")
    g.add_argument("--daily-quota", type=checks.count(0), metavar="N",
                   help="requests per UTC day at most, counted across runs in the cache folder; "
                        "0: no limit (default: google 100, its free allowance; none for brave, "
                        "whose quota is monthly, and searxng)")
    g.add_argument("--dry-run", action="store_true",
                   help="say how many queries a run would make (titles not already cached) and "
                        "what they cost; asks and writes nothing")
    g.add_argument("--price-per-1000", type=checks.number(0, 1_000_000), metavar="USD",
                   help="the price of 1,000 queries for --dry-run (default: the vendor's "
                        "documented one: google $5, brave $5; searxng none)")
    g.add_argument("--retries", type=checks.count(0, 100), default=DEFAULT_RETRIES, metavar="N",
                   help="further tries of a query refused for a moment (429, 5xx, a lost "
                        "connection), with exponential backoff (default: %(default)s)")
    g.add_argument("--timeout", type=checks.number(0, 3600, low_open=True),
                   default=DEFAULT_TIMEOUT_S, metavar="S",
                   help="seconds to wait for each answer (default: %(default)g)")


def cache_dir(args: argparse.Namespace) -> str:
    """--cache, or the folder beside --out (``results.jsonl`` -> ``results.cache``); a local
    folder, or a one-line error."""
    cache = getattr(args, "cache", None)
    if cache is None:
        if "://" in args.out:
            raise SystemExit("wikisum search: --engine keeps its cache on this machine; with a "
                             f"remote --out ({args.out}) give --cache DIR")
        stem = args.out[: -len(".jsonl")] if args.out.endswith(".jsonl") else args.out
        cache = stem + ".cache"
    elif "://" in cache:
        raise SystemExit(f"wikisum search: --cache {cache}: give a local folder (an answer is "
                         "written there per query)")
    return cache


def outputs(args: argparse.Namespace) -> list[Output]:
    """The results file and its summary, and the cache folder (a directory output: it holds
    wikisum's marker, so that an earlier run's cache is taken up again); nothing for a dry run,
    which writes nothing."""
    from wikisum.pipeline.search.results import partial_path, summary_path

    if getattr(args, "dry_run", False):
        return []
    return [Output("--out", args.out, "file"), Output("--out", summary_path(args.out), "file"),
            Output("--out", partial_path(args.out), "file"),
            Output("--cache", cache_dir(args), "dir")]


def credentials(engine) -> object:
    """The engine's credentials from the environment, or a one-line error naming the variables
    that are not set (never a value)."""
    from wikisum.pipeline.search.engines import Credentials

    values = {name: os.environ.get(name, "").strip() for name in engine.env}
    missing = [name for name, value in values.items() if not value]
    if missing:
        raise SystemExit(f"wikisum search: --engine {engine.name} needs "
                         f"{' and '.join(missing)} set in the environment (docs/web-search.md)")
    bad = [name for name, value in values.items()
           if not value.isascii() or not value.isprintable()]
    if bad:
        raise SystemExit(f"wikisum search: {' and '.join(bad)} holds a character no key has (a "
                         "line break, a control or non-ASCII character): set it to the key alone")
    names = list(engine.env)
    return Credentials(key=values[names[0]] if names else None,
                       cx=values[names[1]] if len(names) > 1 else None)


def config_from(args: argparse.Namespace):
    """The search's config from the options, or a one-line error."""
    from wikisum.pipeline.search.engines import ENGINES, endpoint_problem
    from wikisum.pipeline.search.sites import MIRROR_SITES, site_list
    from wikisum.pipeline.search.web import WebSearchConfig

    engine = ENGINES[args.engine]
    endpoint = getattr(args, "endpoint", None) or engine.endpoint
    if endpoint is None:
        raise SystemExit(f"wikisum search: --engine {engine.name} needs --endpoint URL, the root "
                         "of your instance (e.g. http://localhost:8888)")
    problem = endpoint_problem(engine, endpoint)
    if problem:
        raise SystemExit(f"wikisum search: --endpoint {problem}")
    if engine.per_request is not None and args.k > engine.per_request:
        raise SystemExit(f"wikisum search: {engine.name} returns at most {engine.per_request} "
                         f"results a request; give --k {engine.per_request} or less")
    mirrors = MIRROR_SITES
    if getattr(args, "exclude_sites", None):
        try:
            mirrors = site_list(args.exclude_sites)
        except (OSError, ValueError) as exc:
            raise SystemExit(f"wikisum search: --exclude-sites: {exc}") from None
    quota = getattr(args, "daily_quota", None)
    return WebSearchConfig(
        engine=engine.name, out=args.out, cache=cache_dir(args), endpoint=endpoint, k=args.k,
        query=args.query, mirrors=tuple(mirrors),
        qps=getattr(args, "qps", None) or engine.qps,
        daily_quota=engine.daily_quota if quota is None else (quota or None),
        retries=getattr(args, "retries", DEFAULT_RETRIES),
        timeout=getattr(args, "timeout", DEFAULT_TIMEOUT_S))


def run(args: argparse.Namespace, titles: Iterable[str]) -> int:
    """Search ``titles`` through --engine (or, with --dry-run, count what that would ask).
    Returns 0, or 1 when a title failed or the run stopped before the end (at the quota, or
    refused by the vendor): the message says which, and a rerun resumes from the cache."""
    from wikisum.core import ownership
    from wikisum.pipeline.dumps import DumpError
    from wikisum.pipeline.search import web
    from wikisum.pipeline.search.engines import ENGINES

    if args.engine not in ENGINES:
        raise SystemExit(f"wikisum search: unknown --engine {args.engine!r}; use one of "
                         f"{', '.join(ENGINES)}")
    engine = ENGINES[args.engine]
    config = config_from(args)
    creds = credentials(engine)
    if getattr(args, "dry_run", False):
        try:
            counts = web.plan(config, titles, creds)
        except (FileNotFoundError, DumpError, ValueError) as exc:
            raise SystemExit(f"wikisum search: {exc}") from None
        print(format_plan(counts, config, engine, getattr(args, "price_per_1000", None)))
        return 0
    try:
        summary = web.search_titles(config, titles, creds)
    except ownership.NotOurs as exc:
        raise SystemExit(str(exc)) from None
    except (FileNotFoundError, DumpError, ValueError) as exc:
        raise SystemExit(f"wikisum search: reading the titles: {exc} (the answers had are "
                         "cached: a rerun asks none of them again)") from None
    print(format_summary(summary, config))
    return report_end(summary, config)


def format_plan(counts: dict, config, engine, price: float | None) -> str:
    """What a dry run says: titles, queries to ask, their cost, and the days the quota needs."""
    dropped = ", ".join(f"{k} {v:,}" for k, v in sorted(counts["dropped"].items()))
    lines = [f"search (dry run, {engine.name}): {counts['titles']:,} titles read, "
             f"{counts['searched']:,} to search" + (f" (dropped: {dropped})" if dropped else ""),
             f"  {counts['cached']:,} answered from the cache ({config.cache}), "
             f"{counts['queries']:,} queries to ask"]
    n = counts["queries"]
    if price is None and engine.price_per_1000 is None:
        lines.append(f"  cost: none known ({engine.price_note}); give --price-per-1000 USD")
    else:
        per = engine.price_per_1000 if price is None else price
        source = engine.price_note if price is None else "--price-per-1000"
        lines.append(f"  cost: ${n * per / 1000:,.2f} at ${per:,.2f} per 1,000 queries "
                     f"({source})")
    quota = counts["quota"]
    if quota["limit"] is not None:
        today = min(n, quota["remaining"])
        later = n - today
        line = (f"  daily quota: {quota['limit']:,} requests a UTC day, {quota['used']:,} used "
                f"today: {today:,} asked today")
        if later:
            line += (f", the other {later:,} over {math.ceil(later / quota['limit']):,} more "
                     "days (each rerun resumes from the cache)")
        lines.append(line)
    lines.append("  nothing was asked or written")
    return "\n".join(lines)


def format_summary(summary: dict, config) -> str:
    from wikisum.workflows.ingest import stage_lines

    lines = [f"search finished: {config.out} (engine {summary['engine']}, {config.endpoint})",
             *stage_lines(summary["stages"], width=12)]
    answers, requests = summary["answers"], summary["requests"]
    line = (f"  answers: {answers['asked']:,} asked, {answers['from_cache']:,} from the cache "
            f"({config.cache}); requests: {requests['sent']:,} sent, {requests['retried']:,} "
            "retried")
    if summary["cache"]["bad_entries"]:
        line += f"; {summary['cache']['bad_entries']:,} unreadable cache entries asked again"
    lines.append(line)
    return "\n".join(lines)


def report_end(summary: dict, config) -> int:
    """0 when every title searched was answered; else 1, with what happened on stderr."""
    from wikisum.pipeline.search.results import partial_path, summary_path
    from wikisum.pipeline.search.web import DAILY_QUOTA, LEFT, QUERIES

    status = 0
    failed = {k: v for k, v in summary["stages"][QUERIES]["dropped"].items() if k != LEFT}
    if failed:
        status = 1
        reasons = ", ".join(f"{k} {v:,}" for k, v in failed.items())
        print(f"wikisum search: {sum(failed.values()):,} titles failed ({reasons}); "
              f"{summary_path(config.out)} names them, and a rerun asks them again",
              file=sys.stderr)
    stopped = summary.get("stopped")
    if stopped:
        status = 1
        advice = ("after midnight UTC, or with a higher --daily-quota"
                  if stopped["reason"] == DAILY_QUOTA else "once that is resolved")
        print(f"wikisum search: stopped early: {stopped['detail']}. {stopped['titles_left']:,} "
              f"titles are left; {partial_path(config.out)} holds the titles answered so far "
              f"(not {config.out}, which only a whole run writes). Rerun "
              f"the same command {advice}: it resumes from the cache ({config.cache}) and asks "
              "nothing twice", file=sys.stderr)
    if not summary["stages"][QUERIES]["kept"] and not stopped and not failed:
        print("wikisum search: warning: no title was searched (the summary names each dropped "
              "title)", file=sys.stderr)
    return status
