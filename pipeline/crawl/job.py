"""The crawl as a Beam job: read URL lists, skip what earlier runs settled, group by host, fetch
with :class:`~wikisum.pipeline.crawl.fetch.Crawler`, write the outcome log and summary."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import replace

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.pvalue import TaggedOutput

from wikisum.core import schemas, shards
from wikisum.core.accounting import IN, KEPT, LINES, URLS, by_stage, job_summary, summary_json
from wikisum.core.progress import WorkerProgress
from wikisum.core.records import stable_hash
from wikisum.pipeline import beamio
from wikisum.pipeline.beamio import TALLY, MatchFiles, Staged, Tallying, WriteShards, tally
from wikisum.pipeline.crawl import causes
from wikisum.pipeline.crawl.checks import check_url, host_of, is_done
from wikisum.pipeline.crawl.fetch import Crawler
from wikisum.pipeline.crawl.records import (
    FAILED,
    FETCHED,
    OUTCOMES,
    REFUSED,
    SKIPPED,
    CrawlConfig,
    Outcome,
    new_run_id,
    utc_now,
)
from wikisum.pipeline.crawl.runsummary import RunSummary
from wikisum.pipeline.crawl.writer import WarcSink

log = logging.getLogger("wikisum.crawl")

LOG_GLOB = "crawl_log-*.parquet"
SUMMARY = "summary.json"
WARC_FILES = "warc_files"
FETCH = "fetch"
REASONS = "reasons"  # the tallies of the outcomes by reason: (REASONS, "outcome:reason")


def url_lines(lines: Iterable[str]) -> Iterator[str | None]:
    """The lines of a URL list: each stripped line, or None for a blank line or a comment."""
    for line in lines:
        line = line.strip()
        yield None if not line or line.startswith("#") else line


class ReadUrlLines(Tallying):
    """A URL list file (plain or compressed) -> (key, raw line), key as in ``check_url``."""

    def process(self, path: str):
        with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as f:
            # Line by line (a list may be large); Beam's compressed files have no readable(),
            # so no TextIOWrapper.
            lines = (raw.decode("utf-8", errors="replace") for raw in iter(f.readline, b""))
            for line in url_lines(lines):
                self.count(LINES, IN)
                if line is None:
                    self.count(LINES, "ignored")
                    continue
                yield check_url(line)[0], line


def read_done(path: str):
    """An earlier run's log -> (url, True) for every URL it settled (``is_done``). An unreadable
    log (cut by a crash) is skipped with a warning: its URLs are fetched again."""
    try:
        rows = list(shards.iter_rows([path], columns=["url", "outcome", "status"]))
    except shards.CorruptShard as exc:
        log.warning("crawl: skipping an unreadable earlier log: %s", exc)
        Metrics.counter(beamio.COUNTERS, "crawl:unreadable_log").inc()
        return
    for row in rows:
        if is_done(row["outcome"], row["status"]):
            yield row["url"], True


class Plan(beam.DoFn):
    """CoGroupByKey(url) of the lines read and earlier outcomes -> one outcome now (skipped,
    refused(scheme), failed(invalid_url)), or (host, url) to fetch."""

    def setup(self):
        self.progress = WorkerProgress("crawl", "URLs")

    def finish_bundle(self):
        self.progress.flush()

    def process(self, item):
        key, grouped = item
        lines = list(grouped["lines"])
        if lines:  # a URL only in an earlier log was not asked for this time
            yield from self.plan(key, lines, any(grouped["done"]))

    def plan(self, key: str, lines: list[str], done: bool):
        yield tally(LINES, KEPT)
        if len(lines) > 1:
            yield tally(LINES, "duplicate", len(lines) - 1)
        yield tally(URLS, IN)
        _, refusal = check_url(lines[0])
        if done or refusal:
            self.progress.update()  # settled here; the others as they are fetched
        if done:
            yield Outcome(key, SKIPPED, "already_done", fetched_at=utc_now(),
                          error="settled by an earlier run in --out")
        elif refusal == "scheme":
            yield Outcome(key, REFUSED, "scheme", fetched_at=utc_now(),
                          error="only http and https are fetched")
        elif refusal:
            yield Outcome(key, FAILED, "invalid_url", fetched_at=utc_now(),
                          error="not an http(s) URL with a host")
        else:
            yield TaggedOutput(FETCH, (host_of(key), key))


class FetchHost(beam.DoFn):
    """(host, urls) -> outcomes, and the WARC files written. One host per call: its URLs are
    fetched with bounded concurrency and a delay, hosts in parallel across workers."""

    def __init__(self, config: CrawlConfig):
        self.config = config

    def setup(self):
        self.progress = WorkerProgress("crawl", "URLs")

    def finish_bundle(self):
        self.progress.flush()

    def process(self, item):
        host, urls = item
        urls = sorted(set(urls))
        config = self.config
        info = {"software": "wikisum crawl", "format": "WARC File Format 1.0",
                "http-header-user-agent": config.user_agent, "robots": "obey",
                "run-id": config.run_id}
        sink = WarcSink(FileSystems.join(config.out, "warc"), config.run_id, host,
                        config.warc_part_bytes, info)
        started = time.monotonic()
        try:
            outcomes = Crawler(config, sink).crawl(urls, self.progress.update)
        finally:
            sink.close()
        log.info("crawl: %s: %d URL(s) in %.1f s, %d WARC file(s)", host, len(urls),
                 time.monotonic() - started, len(sink.files))
        # The host's outcomes now, whole or not at all: a run killed later does not fetch
        # them again (the run's final log replaces these files when it finishes).
        shards.write_table(host_log(config.out, config.run_id, host),
                           [o.row() for o in outcomes], schemas.CRAWL_LOG)
        for path in sink.files:
            yield TaggedOutput(WARC_FILES, path)
        yield from outcomes


def failure(o: Outcome) -> Iterator[tuple[str, tuple[str, str, str]]]:
    """A failed outcome -> its cause tally and (time, URL, example); nothing for the others."""
    if o.outcome != FAILED:
        return
    stage = URLS if o.reason == "invalid_url" else FETCH
    yield causes.failure(stage, o.url, o.error, o.reason, o.status, o.fetched_at)


def count_outcome(o: Outcome):
    """An outcome -> its tallies: the URL settled (kept when fetched), its reason, its cause."""
    Metrics.counter(beamio.COUNTERS, f"{o.outcome}:{o.reason}").inc()
    yield (URLS, KEPT if o.outcome == FETCHED else o.outcome), 1
    yield (REASONS, f"{o.outcome}:{o.reason}"), 1
    for key, _ in failure(o):
        yield key, 1


def with_json_lines(staged: Staged, staging: str):
    """A staged log shard, and a JSON Lines copy of its rows staged beside it (streamed from
    the Parquet file, so memory stays bounded)."""
    yield staged
    final = staged.final.removesuffix(".parquet") + ".jsonl"
    jsonl = beamio.staging_path(staging, final)
    with FileSystems.create(jsonl, compression_type=CompressionTypes.UNCOMPRESSED) as f:
        for row in shards.iter_rows([staged.temporary]):
            f.write((json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n").encode())
    yield Staged(final, jsonl, staged.rows)


def host_log(out: str, run_id: str, host: str) -> str:
    """Where FetchHost writes one host's outcomes as they are settled."""
    return FileSystems.join(out, "log", f"crawl_log-{run_id}-host-{stable_hash(host):016x}.parquet")


def log_path(out: str, run_id: str, index: int, total: int) -> str:
    return shards.shard_path(FileSystems.join(out, "log"), f"crawl_log-{run_id}", index, total)


STAGE_WORDS = {FETCH: "fetch"}  # what one request of a stage is called


def crawl_summary(counts: list, warc_files: list, config: CrawlConfig, firsts: Iterable = ()
                  ) -> dict:
    """Tallies -> the run's summary (:func:`~wikisum.core.accounting.job_summary`): the
    stages ``lines`` (lines read -> distinct URLs) and ``urls`` (distinct URLs -> fetched, the
    others dropped by outcome), the outcomes and their reasons, failures by cause, the URLs
    requested and how many failed for a network reason (``network``; when every one did,
    ``network_failure`` is the line saying so).

    Args:
        firsts: (cause tally, (time, URL, example)) of each cause's earliest failure.
    """
    c = by_stage(counts)
    reasons = dict(sorted(c.get(REASONS, Counter()).items()))
    outcomes = Counter()
    for k, v in reasons.items():
        outcomes[k.split(":", 1)[0]] += v
    # Requested: fetched or failed, but for the lines that are no URL (refused ones never were).
    requested = outcomes[FETCHED] + outcomes[FAILED] - reasons.get(f"{FAILED}:invalid_url", 0)
    failures = causes.failures_by_cause(c.get(causes.CAUSE, {}), firsts, {FETCH: requested})
    return job_summary(
        "crawl", config, counts, (LINES, URLS),
        run_id=config.run_id,
        outcomes={k: outcomes.get(k, 0) for k in OUTCOMES},
        reasons=reasons,
        causes=failures["causes"],
        network=failures["network"],
        network_failure=causes.network_failure("crawl", failures["network"], STAGE_WORDS, {}),
        warc_files=sorted(warc_files))


class ReadUrls(beam.PTransform):
    """URL list globs, matched by the job -> (key, line) of every URL line, and tallies."""

    def __init__(self, patterns):
        super().__init__()
        self.patterns = patterns

    def expand(self, pbegin):
        read = (pbegin | "MatchUrlLists" >> MatchFiles(self.patterns)
                | "ReadUrlLines" >> beam.ParDo(ReadUrlLines()).with_outputs(TALLY, main="lines"))
        return {"main": read.lines, TALLY: read[TALLY]}


class EarlierOutcomes(beam.PTransform):
    """The logs earlier runs left in ``out`` (matched by the job) -> (url, True) for every URL
    they settled."""

    def __init__(self, out: str):
        super().__init__()
        self.out = out

    def expand(self, pbegin):
        return (pbegin | "MatchLogs" >> MatchFiles([log_glob(self.out)], required=False)
                | "ReadDone" >> beam.FlatMap(read_done))


class FetchHosts(beam.PTransform):
    """(host, url) to fetch -> outcomes, and the WARC files written (``warc_files``)."""

    def __init__(self, config: CrawlConfig):
        super().__init__()
        self.config = config

    def expand(self, fetches):
        fetched = (fetches | "GroupByHost" >> beam.GroupByKey()
                   | "FetchHost" >> beam.ParDo(FetchHost(self.config)).with_outputs(
                       WARC_FILES, main="outcomes"))
        return {"main": fetched.outcomes, WARC_FILES: fetched[WARC_FILES]}


def log_glob(out: str) -> str:
    return FileSystems.join(out, "log", LOG_GLOB)


def output_globs(config: CrawlConfig) -> list[str]:
    """What a run writes in ``out`` (globs): WARC files, its log, its summaries."""
    return [FileSystems.join(config.out, "warc", f"crawl-{config.run_id}-*.warc.gz"),
            FileSystems.join(config.out, "log", f"crawl_log-{config.run_id}-*"),
            FileSystems.join(config.out, f"summary-{config.run_id}.json"),
            FileSystems.join(config.out, SUMMARY)]


def build(p: beam.Pipeline, config: CrawlConfig, token: str) -> None:
    """Add the crawl job to pipeline ``p`` (no filesystem is touched here: the URL lists and
    the earlier runs' logs are matched by the job)."""
    staging = beamio.temp_dir(config.out, token)
    lines = p | "ReadUrls" >> ReadUrls(config.urls)
    done = p | "EarlierOutcomes" >> EarlierOutcomes(config.out)
    planned = ({"lines": lines["main"], "done": done}
               | "GroupByUrl" >> beam.CoGroupByKey()
               | "Plan" >> beam.ParDo(Plan()).with_outputs(
                   TALLY, FETCH, main="outcomes"))
    fetched = planned[FETCH] | "FetchHosts" >> FetchHosts(config)
    outcomes = (planned.outcomes, fetched["main"]) | "AllOutcomes" >> beam.Flatten()
    total = config.log_shards
    finals = {i: log_path(config.out, config.run_id, i, total) for i in range(total)}
    staged_log = (outcomes
                  | "LogRows" >> beam.Map(lambda o: (stable_hash(o.url) % total, o.row()))
                  | "WriteLog" >> WriteShards(finals, staging, schemas.CRAWL_LOG,
                                              lambda r: r["url"])
                  | "AndJsonLines" >> beam.FlatMap(with_json_lines, staging))
    warcs = fetched[WARC_FILES] | "CollectWarcFiles" >> beam.combiners.ToList()
    summary = (((lines[TALLY], planned[TALLY]), outcomes, warcs)
               | "RunSummary" >> RunSummary(
                   count_outcome, failure,
                   lambda c, w, f: summary_json(crawl_summary(c, w, config, f))))
    # The run's log shards are whole once committed: its per-host files are not needed then.
    host_logs = FileSystems.join(config.out, "log", f"crawl_log-{config.run_id}-host-*.parquet")
    _ = staged_log | "Commit" >> beamio.CommitRun(config.out, config.run_id, staging, summary,
                                                   [host_logs])


def run(config: CrawlConfig, pipeline_options) -> dict | None:
    """Run the crawl and return the summary it wrote (``summary-RUN.json``, also
    ``summary.json``); None for a dry run."""
    if not config.run_id:
        config = replace(config, run_id=new_run_id())
    log.info("crawl %s: URL lists %s -> %s", config.run_id, ", ".join(config.urls), config.out)
    token = beamio.new_token()
    if not beamio.launch("crawl", pipeline_options, lambda p: build(p, config, token),
                         output_globs(config)):
        return None
    return json.loads(shards.read_text(FileSystems.join(config.out,
                                                        f"summary-{config.run_id}.json")))
