"""``wikisum cc-fetch``: the Beam job that looks URLs up in Common Crawl's URL index and fetches
their records by byte range into WARC files."""

from __future__ import annotations

import argparse
import logging

from wikisum.core import progress
from wikisum.pipeline.ccfetch.records import CcFetchConfig
from wikisum.workflows import checks

HELP = "Beam job: look URLs up in Common Crawl's index, fetch their records into WARC files"
DESCRIPTION = """\
Look the URLs of --urls files (one a line; blank lines and # comments ignored; e.g. the
missing_urls.txt and missing_search_urls.txt of `wikisum ingest`) up in Common Crawl's URL index
and fetch the chosen captures' WARC records by HTTP Range into WARC files that
`wikisum ingest --warc` reads:

  wikisum ingest --wiki DUMP --out ingest0          # no WARCs: every reference is missing
  wikisum cc-fetch --urls ingest0/missing_urls.txt --urls ingest0/missing_search_urls.txt \\
      --crawl CC-MAIN-2017-13 --out cc
  wikisum ingest --wiki DUMP --warc 'cc/warc/*.warc.gz' --out ingest

Index: --source api queries the URL index server (one request per URL and crawl, rate-limited:
for lists up to some tens of thousands); --source columnar joins the URLs against the crawls'
Parquet URL table (--columnar-index), reading only the row groups and columns needed: for
millions. URLs match by the index's SURT key, so http/https, www., a trailing slash and the
query's order match as Common Crawl matches them; the cited spelling is kept (a WARC metadata
record ties it to the capture, and ingest joins through it).

Choice: a 200 with an HTML or text MIME type (a recorded redirect is followed to its target, up
to --max-redirects); the capture closest to and not after --before, else the latest; crawls are
searched in the order given.

Fetch: exactly the record's bytes; the response must be one gzip member holding one WARC record
of the URL, else the URL is failed with the reason (nothing is written). A record the index
says is over 64 MiB is failed(too_large) unasked, and no answer is read past the length asked
for. Retries with backoff and jitter on timeouts, connection errors and 5xx (503 "slow down"),
never on 4xx. The index and data servers may be private (a local mirror), never a cloud
metadata, multicast or unspecified address, in any IPv6 spelling (as wikisum crawl checks).

Resumable: rerun with the same --out and only what is not settled is looked up and fetched
(fetched URLs, and not_in_index ones for the same crawls and --before, are skipped).

Outputs in --out (RUN: the run's id, its UTC start time plus random bits):
  warc/ccfetch-RUN-GROUPHASH-PPPPP.warc.gz       the original records, gzip per record
  log/cc_fetch_log-RUN-SSSSS-of-NNNNN.parquet    one row per distinct URL: its outcome
  summary-RUN.json, summary.json                 outcomes by reason, per stage, coverage,
                                                 failures by cause (dns, refused, timeout, ...)

Exit status 1 when every look-up, or every fetch, that the run made failed for a network
reason (name resolution, refused or reset connection, timeout, TLS): its last line names the
first failure. Some of them failing is a warning line (a rerun with the same --out tries them
again). The ingest glob is printed only when WARC files exist in --out.
"""
EPILOG = checks.BEAM_OPTIONS + checks.SIZES + "\n"


def parse_before(text: str) -> str:
    from wikisum.pipeline.ccfetch import parse_before

    return parse_before(text)


date = checks.parsed(parse_before, "date")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("cc-fetch", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    d = CcFetchConfig(urls=(), out="")  # the job's defaults
    p.add_argument("--urls", required=True, action="append", metavar="FILE",
                   help="file(s) of URLs, one a line, or tensor2tensor's wiki_urls.json-* "
                        "shards (every listed reference URL); globs and gs:// work "
                        "(repeatable)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--crawl", dest="crawls", action="append", default=[], metavar="CRAWL",
                   help="crawl to search, e.g. CC-MAIN-2017-13 (repeatable, searched in this "
                        "order; required with --source api; with --source columnar the "
                        "default is every crawl of the table)")
    p.add_argument("--source", choices=("api", "columnar"), default=d.source,
                   help="index: the URL index server, or the columnar Parquet table "
                        "(default: %(default)s)")
    p.add_argument("--index-url", default=d.index_url, metavar="BASE",
                   help="URL index server: crawl C's API at BASE/C-index (default: "
                        "%(default)s)")
    p.add_argument("--data-url", default=d.data_url, metavar="BASE",
                   help="where a capture's WARC file is, as BASE/filename (default: "
                        "%(default)s)")
    p.add_argument("--columnar-index", action="append", metavar="GLOB",
                   help="Parquet files of the URL table (repeatable; default: Common "
                        "Crawl's, " + d.columnar_index[0] + ")")
    p.add_argument("--before", type=date, default=None, metavar="DATE",
                   help="take the capture closest to and not after this date (YYYY-MM-DD), "
                        "e.g. the dump's date (default: the latest capture)")
    p.add_argument("--lookup-only", action="store_true",
                   help="look up only: log where each URL is (outcome found) and fetch nothing "
                        "(coverage and cost, before a real run)")
    p.add_argument("--max-redirects", type=checks.count(0, 10), default=d.max_redirects,
                   metavar="N", help="redirect captures followed per URL (default: %(default)s)")
    p.add_argument("--index-rate", type=checks.number(0, 1000, low_open=True),
                   default=d.index_rate, metavar="R",
                   help="index server requests started per second, per worker (default: "
                        "%(default)s)")
    p.add_argument("--per-host-concurrency", type=checks.count(1, 64),
                   default=d.per_host_concurrency, metavar="N",
                   help="ranged requests in flight per fetch group (default: %(default)s)")
    p.add_argument("--fetch-groups", type=checks.count(1, 100_000), default=d.fetch_groups,
                   metavar="N",
                   help="split the fetches into N groups, fetched in parallel by the workers: "
                        "at most N x --per-host-concurrency requests in flight in all "
                        "(default: %(default)s)")
    p.add_argument("--max-total-bytes", type=checks.byte_size(1), default=None, metavar="SIZE",
                   help="stop fetching past this many record bytes (split evenly over the "
                        "groups; the rest is logged found(byte_budget) and fetched by a "
                        "rerun), e.g. 50GB (default: no cap)")
    p.add_argument("--timeout", type=checks.number(0, 3600, low_open=True), default=d.timeout_s,
                   metavar="S", help="seconds to connect and for each read (default: "
                                     "%(default)s)")
    p.add_argument("--retries", type=checks.count(0, 20), default=d.retries, metavar="N",
                   help="extra tries on timeouts, connection errors and 5xx, never on 4xx "
                        "(default: %(default)s)")
    p.add_argument("--backoff", type=checks.number(0, 3600), default=d.backoff_s, metavar="S",
                   help="wait before the first retry, doubled for each next one, times a "
                        "random 0.5-1.5 (default: %(default)s)")
    p.add_argument("--user-agent", default=d.user_agent, metavar="UA",
                   help="User-Agent sent (default: %(default)r)")
    p.add_argument("--warc-part-bytes", type=checks.byte_size(1), default=d.warc_part_bytes,
                   metavar="SIZE", help="start a new WARC part past this size (default: "
                                        f"{checks.format_size(d.warc_part_bytes)})")
    p.add_argument("--log-shards", type=checks.count(1, 10_000), default=d.log_shards,
                   metavar="N", help="log files per run (default: %(default)s)")
    p.set_defaults(func=run, beam_args=True)


def config_from_args(args):
    """The job's :class:`wikisum.pipeline.ccfetch.CcFetchConfig`."""
    from wikisum.pipeline import ccfetch

    if args.source == "api" and not args.crawls:
        raise SystemExit("wikisum cc-fetch: --source api needs at least one --crawl "
                         "(e.g. --crawl CC-MAIN-2017-13; the crawls are listed at "
                         f"{args.index_url.rstrip('/')}/collinfo.json)")
    if not args.user_agent.strip():
        raise SystemExit("wikisum cc-fetch: --user-agent must not be empty")
    d = ccfetch.CcFetchConfig(urls=(), out="")
    return ccfetch.CcFetchConfig(
        urls=tuple(args.urls), out=args.out, crawls=tuple(dict.fromkeys(args.crawls)),
        source=args.source, index_url=args.index_url, data_url=args.data_url,
        columnar_index=tuple(args.columnar_index or d.columnar_index), before=args.before or "",
        run_id=ccfetch.new_run_id(), lookup_only=args.lookup_only,
        max_redirects=args.max_redirects, index_rate=args.index_rate,
        per_host_concurrency=args.per_host_concurrency, fetch_groups=args.fetch_groups,
        max_total_bytes=args.max_total_bytes or 0, timeout_s=args.timeout,
        retries=args.retries, backoff_s=args.backoff, user_agent=args.user_agent.strip(),
        warc_part_bytes=args.warc_part_bytes, log_shards=args.log_shards)


def watch(urls, options):
    """Progress of a local run: URLs settled (fetched, not in the index, failed or skipped) of the
    distinct URLs in the --urls lists, with the index lookups made."""

    def total() -> int:
        from wikisum.pipeline import beamio
        from wikisum.pipeline.urls import normalize_url

        return beamio.count_distinct_lines(urls, lambda line: normalize_url(line) or line)

    from wikisum.pipeline import beamio

    return beamio.watch_job("cc-fetch", options, "URLs", total=total, others=("lookups",))


def run(args: argparse.Namespace, beam_argv: list[str] | None = None) -> int:
    from apache_beam.options.pipeline_options import PipelineOptions

    from wikisum.pipeline import beamio, ccfetch

    logging.getLogger("wikisum").setLevel(progress.log_level())
    options = PipelineOptions(beam_argv or [])
    config = config_from_args(args)
    if not beamio.is_dry_run(options):  # a dry run touches no filesystem
        checks.output_dir(args.out, "cc-fetch")
        checks.input_files(args.urls, "--urls", "cc-fetch")
        local = [path for path in args.columnar_index or [] if "://" not in path]
        checks.input_files(local, "--columnar-index", "cc-fetch")
    try:
        with watch(config.urls, options):
            summary = ccfetch.run(config, options)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum cc-fetch: {exc}") from exc
    if summary is None:
        return 0
    print(format_summary(summary, config.out))
    return 0 if summary["balanced"] and network_failure(summary) is None else 1


def network_failure(summary: dict) -> str | None:
    """The line saying that the network failed a run whole (every look-up, or every fetch, that
    it made failed for a network reason: name resolution, refused or reset connection,
    timeout, TLS), naming the first failure; None when it did not (some requests went
    through, or none was made). ``summary``: what ``pipeline.ccfetch.run`` returns."""
    return summary.get("network_failure") or None


def format_summary(summary: dict, out: str) -> str:
    """The closing lines: counts, failures by cause, the WARC files and how to read them (only
    when some exist), and last, what the network did to the run."""
    from wikisum.pipeline.ccfetch.job import STAGE_WORDS
    from wikisum.pipeline.crawl import causes
    from wikisum.workflows import crawl as crawl_cmd

    cov = summary["coverage"]
    lines = [f"cc-fetch {summary['run_id']} finished: {out}", crawl_cmd.url_line(summary),
             f"  coverage: {cov['found']} of {cov['listed']} looked-up URLs found in the index "
             f"({100 * cov['share']:.1f}%); {summary['bytes_fetched'] / 1e6:.1f} MB fetched"]
    for outcome, n in summary["outcomes"].items():
        reasons = ", ".join(f"{k.split(':', 1)[1]} {v}" for k, v in summary["reasons"].items()
                            if k.split(":", 1)[0] == outcome)
        lines.append(f"  {outcome:12s} {n:>8d}" + (f"  ({reasons})" if reasons else ""))
    lines.extend(causes.format_causes(summary.get("causes", {})))
    lines.append(f"  WARC files written: {len(summary['warc_files'])}")
    lines.extend(f"    {path}" for path in summary["warc_files"])
    lacks = summary["outcomes"]["not_in_index"] or summary["outcomes"]["failed"]
    lines += crawl_cmd.closing_lines(
        "cc-fetch", summary, out, STAGE_WORDS, next_step(summary),
        "What the index lacks can be fetched from the live web with `wikisum crawl` (the next "
        "ingest's missing_urls.txt lists it)." if lacks else None)
    return "\n".join(lines)


def next_step(summary: dict) -> str:
    """What to do after a run that left no WARC file in --out."""
    from wikisum.workflows import crawl as crawl_cmd

    outcomes = summary["outcomes"]
    options = summary.get("options", {})
    if network_failure(summary):
        return ("Run the same command again when the servers answer: what this run settled "
                "is skipped.")
    if not crawl_cmd.distinct_urls(summary):
        return "The --urls lists hold no URL."
    if options.get("lookup_only") and outcomes["found"]:
        return (f"--lookup-only fetches nothing: run again without it to fetch the "
                f"{outcomes['found']} URL(s) found.")
    if outcomes["found"]:
        return "--max-total-bytes stopped every fetch: raise it and run again."
    if outcomes["skipped"] == crawl_cmd.distinct_urls(summary):
        return ("Every URL was settled by an earlier run in --out, none of them fetched: "
                "fetch them from the live web with `wikisum crawl --urls FILE --out DIR`.")
    return ("No URL could be fetched from the crawls searched (see the outcomes and causes "
            "above): search other --crawl, or fetch them from the live web with `wikisum crawl "
            "--urls FILE --out DIR`.")


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
