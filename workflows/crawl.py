"""``wikisum crawl``: the Beam job that fetches what Common Crawl missed into WARC files."""

from __future__ import annotations

import argparse
import logging

from wikisum.core import progress
from wikisum.pipeline.crawl.records import DEADLINE_FACTOR, CrawlConfig
from wikisum.workflows import checks

HELP = "Beam job: fetch cited and search-result pages (e.g. missing_urls.txt) into WARC files"
DESCRIPTION = """\
Fetch the URLs listed in --urls files (one a line; blank lines and # comments ignored; e.g. the
missing_urls.txt of `wikisum ingest`) into WARC files that `wikisum ingest --warc` reads.

Polite: URLs are grouped by host; each host gets at most --per-host-concurrency requests in
flight and --delay seconds between requests (or its robots.txt Crawl-delay, up to 60 s); hosts
are fetched in parallel. robots.txt is fetched once per host and obeyed for --user-agent; a 4xx
robots.txt allows everything, a 5xx or unreachable one disallows everything (RFC 9309; those
URLs end failed(robots_unavailable) and are tried again on the next run).

Safe: http and https only; every request (redirects and robots.txt included) resolves its host
once, every resolved address must be public (loopback, private, link-local and reserved
addresses are refused unless --allow-private; cloud metadata, multicast and unspecified ones
always), and the connection goes to that checked address. An IPv6 address carrying an IPv4
one (mapped, compatible, NAT64, 6to4, Teredo) is judged as both: [::169.254.169.254] and
[64:ff9b::169.254.169.254] are refused as cloud metadata; a pure wrapper (mapped, translated,
compatible, 64:ff9b::/96) is public or private as its IPv4 address is ([::ffff:8.8.8.8] is
public).

Resumable: run again with the same --out and only what is not settled is fetched; URLs that
ended fetched, refused or failed with a 4xx are logged as skipped. Files are never overwritten.

Outputs in --out (RUN: the run's id, its UTC start time plus random bits):
  warc/crawl-RUN-HOSTHASH-PPPPP.warc.gz          request + response records, gzip per record
  log/crawl_log-RUN-SSSSS-of-NNNNN.parquet       one row per distinct URL: its outcome
  log/crawl_log-RUN-SSSSS-of-NNNNN.jsonl         the same rows as JSON Lines
  summary-RUN.json, summary.json                 counts per outcome and reason; URLs in = out;
                                                 failures by cause (dns, refused, timeout, ...)

Exit status 1 when every URL requested failed for a network reason (name resolution, refused
or reset connection, timeout, TLS): its last line names the first failure. Some of them failing
is a warning line (a rerun with the same --out tries them again). The ingest glob is printed
only when WARC files exist in --out.
"""
EPILOG = checks.BEAM_OPTIONS + checks.SIZES + "\n"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("crawl", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    d = CrawlConfig(urls=(), out="")  # the job's defaults
    p.add_argument("--urls", required=True, action="append", metavar="FILE",
                   help="file(s) of URLs, one a line; globs and gs:// work (repeatable)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--per-host-concurrency", type=checks.count(1, 64),
                   default=d.per_host_concurrency,
                   metavar="N", help="requests in flight per host (default: %(default)s)")
    p.add_argument("--delay", type=checks.number(0, 3600), default=d.delay_s, metavar="S",
                   help="seconds between requests to one host (default: %(default)s)")
    p.add_argument("--timeout", type=checks.number(0, 3600, low_open=True), default=d.timeout_s,
                   metavar="S",
                   help="seconds to connect and for each read; a whole request gets "
                        f"{DEADLINE_FACTOR:g}x (default: %(default)s)")
    p.add_argument("--max-bytes", type=checks.byte_size(1), default=d.max_bytes, metavar="SIZE",
                   help="body bytes kept per response, e.g. 10MB, 512KB, 4096; a longer body "
                        "is cut and its record marked truncated (default: "
                        f"{checks.format_size(d.max_bytes)})")
    p.add_argument("--url-deadline", type=checks.number(0, 86400, low_open=True),
                   metavar="S",
                   help="seconds one URL may take in all: tries, backoffs and redirects "
                        "(default: twice a request's deadline)")
    p.add_argument("--retries", type=checks.count(0, 20), default=d.retries, metavar="N",
                   help="extra tries on timeouts, connection errors and 5xx, never on 4xx "
                        "(default: %(default)s)")
    p.add_argument("--backoff", type=checks.number(0, 3600), default=d.backoff_s, metavar="S",
                   help="wait before the first retry, doubled for each next one "
                        "(default: %(default)s)")
    p.add_argument("--user-agent", default=d.user_agent, metavar="UA",
                   help="User-Agent sent and matched against robots.txt; include a contact "
                        "address (default: %(default)r)")
    p.add_argument("--allow-private", action="store_true",
                   help="allow loopback, private and link-local addresses (for a test server "
                        "or an intranet; cloud metadata addresses stay refused, in every IPv6 "
                        "spelling that embeds them)")
    p.add_argument("--no-verify-tls", dest="verify_tls", action="store_false",
                   help="accept any TLS certificate (old cited sites often have expired ones)")
    p.add_argument("--warc-part-bytes", type=checks.byte_size(1), default=d.warc_part_bytes,
                   metavar="SIZE", help="start a new WARC part past this size (default: "
                                        f"{checks.format_size(d.warc_part_bytes)})")
    p.add_argument("--log-shards", type=checks.count(1, 10_000), default=d.log_shards, metavar="N",
                   help="log files per run (default: %(default)s)")
    p.set_defaults(func=run, beam_args=True)


def config_from_args(args):
    """The job's :class:`wikisum.pipeline.crawl.CrawlConfig`."""
    from wikisum.pipeline import crawl

    checks = [(args.per_host_concurrency >= 1, "--per-host-concurrency must be at least 1"),
              (args.delay >= 0, "--delay must not be negative"),
              (args.timeout > 0, "--timeout must be positive"),
              (args.retries >= 0, "--retries must not be negative"),
              (args.backoff >= 0, "--backoff must not be negative"),
              (args.log_shards >= 1, "--log-shards must be at least 1"),
              (bool(args.user_agent.strip()), "--user-agent must not be empty")]
    for ok, message in checks:
        if not ok:
            raise SystemExit(f"wikisum crawl: {message}")
    return crawl.CrawlConfig(
        urls=tuple(args.urls), out=args.out, run_id=crawl.new_run_id(),
        per_host_concurrency=args.per_host_concurrency, delay_s=args.delay,
        timeout_s=args.timeout, max_bytes=args.max_bytes, retries=args.retries,
        url_deadline_s=args.url_deadline,
        backoff_s=args.backoff, user_agent=args.user_agent.strip(),
        allow_private=args.allow_private, verify_tls=args.verify_tls,
        warc_part_bytes=args.warc_part_bytes, log_shards=args.log_shards)


def watch(urls, options):
    """Progress of a local run: URLs settled (fetched, refused, failed or skipped) of the
    distinct URLs in the --urls lists."""

    def total() -> int:
        from wikisum.pipeline import beamio
        from wikisum.pipeline.crawl.checks import check_url

        return beamio.count_distinct_lines(urls, lambda line: check_url(line)[0])

    from wikisum.pipeline import beamio

    return beamio.watch_job("crawl", options, "URLs", total=total)


def run(args: argparse.Namespace, beam_argv: list[str] | None = None) -> int:
    from apache_beam.options.pipeline_options import PipelineOptions

    from wikisum.pipeline import beamio, crawl

    logging.getLogger("wikisum").setLevel(progress.log_level())
    options = PipelineOptions(beam_argv or [])
    if not beamio.is_dry_run(options):  # a dry run touches no filesystem
        checks.output_dir(args.out, "crawl")
        checks.input_files(args.urls, "--urls", "crawl")
    config = config_from_args(args)
    try:
        with watch(config.urls, options):
            summary = crawl.run(config, options)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum crawl: {exc}") from exc
    if summary is None:
        return 0
    print(format_summary(summary, config.out))
    return 0 if summary["balanced"] and network_failure(summary) is None else 1


def network_failure(summary: dict) -> str | None:
    """The line saying that the network failed a crawl whole (every URL it requested failed
    for a network reason: name resolution, refused or reset connection, timeout, TLS), naming
    the first failure; None when it did not (some requests got an answer, or none was made).
    ``summary``: what ``pipeline.crawl.run`` returns."""
    return summary.get("network_failure") or None


def format_summary(summary: dict, out: str) -> str:
    """The closing lines: counts, failures by cause, the WARC files and how to read them (only
    when some exist), and last, what the network did to the run."""
    from wikisum.pipeline.crawl import causes
    from wikisum.pipeline.crawl.job import STAGE_WORDS

    lines = [f"crawl {summary['run_id']} finished: {out}", url_line(summary)]
    for outcome, n in summary["outcomes"].items():
        reasons = ", ".join(f"{k.split(':', 1)[1]} {v}" for k, v in summary["reasons"].items()
                            if k.split(":", 1)[0] == outcome)
        lines.append(f"  {outcome:8s} {n:>8d}" + (f"  ({reasons})" if reasons else ""))
    lines.extend(causes.format_causes(summary.get("causes", {})))
    warcs = summary["warc_files"]
    lines.append(f"  WARC files written: {len(warcs)}")
    lines.extend(f"    {path}" for path in warcs)
    lines += closing_lines("crawl", summary, out, STAGE_WORDS, next_step(summary))
    return "\n".join(lines)


def url_line(summary: dict) -> str:
    """The summary line of a job that reads URL lists (crawl, cc-fetch): the lines read (less
    blank and comment lines), ignored and duplicate, the distinct URLs in and outcomes out."""
    from wikisum.core.accounting import LINES, URLS

    read, urls = summary["stages"][LINES], summary["stages"][URLS]
    ignored = read["dropped"].get("ignored", 0)
    mark = "" if summary["balanced"] else "  NOT BALANCED"
    return (f"  lines {read['in'] - ignored}  (ignored {ignored}, duplicates "
            f"{read['dropped'].get('duplicate', 0)})  URLs in {urls['in']}  outcomes out "
            f"{sum(summary['outcomes'].values())}{mark}")


def distinct_urls(summary: dict) -> int:
    """The distinct URLs a crawl or cc-fetch run read."""
    from wikisum.core.accounting import URLS

    return summary["stages"][URLS]["in"]


def closing_lines(command: str, summary: dict, out: str, stage_words: dict, next_step: str,
                  more: str | None = None) -> list[str]:
    """The last lines of a fetch job (crawl, cc-fetch): how to read the WARC files in ``out``,
    only when there are some (then ``more``, if given), else ``next_step``; the network
    warnings; the network-failure line last."""
    from apache_beam.io.filesystems import FileSystems

    from wikisum.pipeline.crawl import causes, writer

    lines = []
    pattern = writer.warc_glob(out)
    found = writer.count_files(pattern)
    if found:
        lines.append(f"Read the {found} WARC file(s) in {FileSystems.join(out, 'warc')} with:")
        lines.append(f"  wikisum ingest --wiki DUMP --warc '{pattern}' [--warc OTHER_GLOB ...] "
                     "--out DIR")
        if more:
            lines.append(more)
    else:
        lines.append(f"Nothing was fetched: no WARC file matches '{pattern}'.")
        lines.append(next_step)
    lines.extend(causes.network_warnings(command, summary.get("network", {}), stage_words))
    if summary.get("network_failure"):
        lines.append(summary["network_failure"])
    return lines


def next_step(summary: dict) -> str:
    """What to do after a crawl that left no WARC file in --out."""
    outcomes, reasons = summary["outcomes"], summary["reasons"]
    if network_failure(summary):
        return ("Run the same command again when the servers answer: what this run settled "
                "is skipped.")
    if not distinct_urls(summary):
        return "The --urls lists hold no URL."
    if outcomes["skipped"] == distinct_urls(summary):
        return "Every URL was settled by an earlier run in --out: there is nothing to fetch."
    if reasons.get("refused:address"):
        return ("No URL got an answer; some were refused for their address (a test server or "
                "an intranet needs --allow-private): see the outcomes and causes above.")
    return "No URL got an answer: see the outcomes and causes above, and the log in --out."


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
