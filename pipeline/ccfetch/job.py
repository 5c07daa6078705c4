"""cc-fetch as a Beam job: read URL lists, skip what earlier runs settled, look the URLs up in
the index (redirect captures followed for a bounded number of rounds), fetch the chosen records
by byte range, write the outcome log and summary."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace

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
from wikisum.pipeline.beamio import TALLY, MatchFiles, Tallying, WriteShards, tally
from wikisum.pipeline.ccfetch import index
from wikisum.pipeline.ccfetch.captures import BadIndexLine, IndexCapture, choose
from wikisum.pipeline.ccfetch.client import Client, RateLimit
from wikisum.pipeline.ccfetch.fetch import Fetcher, Progress, Resolved
from wikisum.pipeline.ccfetch.records import (
    FAILED,
    FETCHED,
    FOUND,
    LOOKUP_FAILURES,
    NOT_IN_INDEX,
    OUTCOMES,
    SKIPPED,
    CcFetchConfig,
    Outcome,
    is_done,
)
from wikisum.pipeline.crawl import causes
from wikisum.pipeline.crawl.records import new_run_id, utc_now
from wikisum.pipeline.crawl.runsummary import RunSummary
from wikisum.pipeline.crawl.writer import WarcSink
from wikisum.pipeline.urls import normalize_url

log = logging.getLogger("wikisum.ccfetch")

SUMMARY = "summary.json"
LOG_GLOB = "cc_fetch_log-*.parquet"
RESOLVED = "resolved"
NEXT = "next"
WARC_FILES = "warc_files"
# Stages and tallies (wikisum.core.accounting) besides LINES and URLS.
LOOKUP = "lookup"  # URLs looked up -> a capture found (dropped: not_in_index, failed)
FETCH = "fetch"  # URLs with a capture -> fetched (dropped: failed, not_fetched)
REASONS = "reasons"  # the outcomes by reason: (REASONS, "outcome:reason")
INDEX = "index"  # (INDEX, "bad_line"): index lines that do not parse
BYTES = "bytes"  # (BYTES, "fetched"): record bytes fetched


@dataclass(frozen=True)
class Pending:
    """A URL on its way through the lookup rounds."""

    url: str  # as listed
    urlkey: str  # the key of the listed URL
    query: str  # the URL looked up this round (the listed one, then redirect targets)
    chain: tuple[IndexCapture, ...] = ()


# ------------------------------------------------------------------------------------------
# Input


class ReadUrlLines(Tallying):
    """A URL list file (plain or compressed) -> (normalised URL or the line, line)."""

    def process(self, path: str):
        if beamio.is_t2t_url_list(path):
            yield from self.t2t_urls(path)
            return
        with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as f:
            for raw in iter(f.readline, b""):
                line = raw.decode("utf-8", errors="replace").strip()
                self.count(LINES, IN)
                if not line or line.startswith("#"):
                    self.count(LINES, "ignored")
                    continue
                yield normalize_url(line) or line, line


    def t2t_urls(self, path: str):
        """tensor2tensor's wiki_urls shard: every listed reference URL of every article, each
        a "line"; an entry that cannot be read counts its URLs (or one) as bad_entry."""
        from wikisum.formats import t2t

        with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as f:
            for item in t2t.iter_wiki_urls(f, path):
                if isinstance(item, t2t.Problem):
                    self.count(LINES, IN, item.count)
                    self.count(LINES, "bad_entry", item.count)
                    continue
                for url in item.refs:
                    self.count(LINES, IN)
                    yield normalize_url(url) or url, url


def read_done(path: str, search_key: str):
    """An earlier run's log -> (normalised URL, True) for every URL it settled; an unreadable
    log (cut by a crash) is skipped with a warning, and its URLs are looked up again."""
    try:
        rows = list(shards.iter_rows([path], columns=["url", "outcome", "searched"]))
    except shards.CorruptShard as exc:
        log.warning("cc-fetch: skipping an unreadable earlier log: %s", exc)
        return
    for row in rows:
        if is_done(row, search_key):
            yield normalize_url(row["url"]) or row["url"], True


class Plan(beam.DoFn):
    """CoGroupByKey(URL) of the lines read and earlier outcomes -> skipped or failed(invalid_url)
    outcomes, or (key, Pending) to look up."""

    def __init__(self, config: CcFetchConfig):
        self.config = config

    def setup(self):
        self.progress = WorkerProgress("cc-fetch", "URLs")

    def finish_bundle(self):
        self.progress.flush()

    def process(self, item):
        for out in self.plan(item):
            if isinstance(out, Outcome):
                self.progress.update()  # settled here; the others when looked up or fetched
            yield out

    def plan(self, item):
        _, grouped = item
        lines = sorted(grouped["lines"])
        if not lines:
            return  # only in an earlier log: not asked for this time
        yield tally(LINES, KEPT)
        if len(lines) > 1:
            yield tally(LINES, "duplicate", len(lines) - 1)
        yield tally(URLS, IN)
        url = lines[0]
        key = index.lookup_key(url) if normalize_url(url) else None
        searched = self.config.search_key()
        if any(grouped["done"]):
            yield Outcome(url, SKIPPED, "already_done", searched=searched, fetched_at=utc_now(),
                          error="settled by an earlier run in --out")
        elif key is None:
            yield Outcome(url, FAILED, "invalid_url", searched=searched, fetched_at=utc_now(),
                          error="not an http(s) URL with a host")
        else:
            yield key, Pending(url, key, normalize_url(url))


# ------------------------------------------------------------------------------------------
# Lookup


class ApiLookupFn(beam.DoFn):
    """Batches of (key, URL) -> (key, LookupResult) from the URL index server, a few queries in
    flight, at most ``index_rate`` started a second per worker."""

    def __init__(self, config: CcFetchConfig):
        self.config = config

    def setup(self):
        c = self.config
        self.api = index.CdxApi(c.index_url, c.crawls, c.before, Client(
            user_agent=c.user_agent, timeout_s=c.timeout_s, retries=c.retries,
            backoff_s=c.backoff_s, rate=RateLimit(c.index_rate)))
        self.progress = Progress("index lookups", 0, c.progress_s)
        self.lookups = WorkerProgress("cc-fetch", "lookups")
        # One pool for the worker's life: its threads keep their connections alive.
        self.pool = ThreadPoolExecutor(8, thread_name_prefix="cc-index")

    def teardown(self):
        self.pool.shutdown()

    def finish_bundle(self):
        self.lookups.flush()

    def process(self, batch):
        def one(kv):
            result = self.api.lookup(*kv)
            self.progress()
            self.lookups.update()
            return kv[0], result

        yield from self.pool.map(one, batch)


class ApiLookup(beam.PTransform):
    def __init__(self, config: CcFetchConfig):
        super().__init__()
        self.config = config

    def expand(self, queries):
        return (queries | "Batch" >> beam.BatchElements(min_batch_size=1, max_batch_size=32)
                | "Query" >> beam.ParDo(ApiLookupFn(self.config)))


def group_name(g: index.RowGroup) -> str:
    return json.dumps([g.path, g.index, g.crawl, g.low, g.high, g.rows])


class AssignRowGroups(beam.DoFn):
    """(key, URL) -> (row group, key) for every row group whose key range holds the key."""

    def process(self, kv, groups):
        if getattr(self, "_index", None) is None or self._size != len(groups):
            self._index, self._size = index.RowGroupIndex(groups), len(groups)
        for g in self._index.find(kv[0]):
            yield group_name(g), kv[0]


def read_group(item):
    name, keys = item
    g = index.RowGroup(*json.loads(name))
    Metrics.counter(beamio.COUNTERS, "columnar:row_groups_read").inc()
    for found in index.read_row_group(g, keys):
        if isinstance(found, BadIndexLine):
            yield tally(INDEX, "bad_line")
        else:
            yield found.urlkey, found


def lookup_result(item):
    key, grouped = item
    if grouped["queries"]:
        captures = sorted(grouped["captures"], key=lambda c: (c.crawl, c.timestamp,
                                                               c.filename, c.offset))
        yield key, index.LookupResult(tuple(captures))


class ColumnarLookup(beam.PTransform):
    """(key, URL) -> (key, LookupResult): a join against the columnar index that reads only
    the row groups holding a wanted key, and only the columns a capture needs."""

    def __init__(self, config: CcFetchConfig, groups):
        super().__init__()
        self.config, self.groups = config, groups

    def expand(self, queries):
        found = (queries
                 | "AssignRowGroups" >> beam.ParDo(AssignRowGroups(),
                                                   beam.pvalue.AsList(self.groups))
                 | "ByRowGroup" >> beam.GroupByKey()
                 | "ReadRowGroup" >> beam.FlatMap(read_group).with_outputs(TALLY,
                                                                          main="captures"))
        results = ({"queries": queries, "captures": found.captures}
                   | "JoinKeys" >> beam.CoGroupByKey()
                   | "Result" >> beam.FlatMap(lookup_result))
        return {"main": results, TALLY: found[TALLY]}


class Step(beam.DoFn):
    """CoGroupByKey(key) of the URLs waiting for it and its lookup result -> per URL: an
    outcome (not_in_index, failed(lookup)), a Resolved page to fetch, or (target key, Pending)
    for the next round when the chosen capture is a redirect."""

    def __init__(self, config: CcFetchConfig, last: bool):
        self.config, self.last = config, last

    def setup(self):
        self.progress = WorkerProgress("cc-fetch", "URLs")

    def finish_bundle(self):
        self.progress.flush()

    def process(self, item):
        for out in self.step(item):
            # settled: an outcome now, or a capture found that --lookup-only does not fetch
            if isinstance(out, Outcome) or (self.config.lookup_only
                                            and isinstance(out, TaggedOutput)
                                            and out.tag == RESOLVED):
                self.progress.update()
            yield out

    def step(self, item):
        key, grouped = item
        results = list(grouped["result"])
        result = results[0] if results else index.LookupResult(error="no lookup result")
        if result.bad_lines:
            yield tally(INDEX, "bad_line", result.bad_lines)
        searched = self.config.search_key()
        choice = choose(list(result.captures), list(self.config.crawls), self.config.before,
                        index.lookup_key)
        for p in grouped["pending"]:
            base = dict(urlkey=p.urlkey, searched=searched, fetched_at=utc_now(),
                        redirects=tuple(c.redirect for c in p.chain))
            if result.error:
                yield Outcome(p.url, FAILED, "lookup", error=result.error[:1000], **base)
            elif choice.capture is None:
                reason = choice.reason if not p.chain else "redirect_target"
                yield Outcome(p.url, NOT_IN_INDEX, reason, error=f"{key}: {choice.reason}",
                              **base)
            elif not choice.is_redirect:
                yield TaggedOutput(RESOLVED, Resolved(p.url, p.urlkey, p.chain + (choice.capture,)))
            else:
                target = choice.capture.redirect
                target_key = index.lookup_key(target)
                seen = {p.urlkey} | {index.lookup_key(c.url) for c in p.chain}
                if target_key is None or target_key in seen:
                    yield Outcome(p.url, NOT_IN_INDEX, "redirect_loop",
                                  error=f"redirect to {target[:300]}", **base)
                elif self.last:
                    yield Outcome(p.url, NOT_IN_INDEX, "too_many_redirects",
                                  error=f"more than {self.config.max_redirects}", **base)
                else:
                    yield TaggedOutput(NEXT, (target_key, replace(
                        p, query=normalize_url(target) or target,
                        chain=p.chain + (choice.capture,))))


class Resolve(beam.PTransform):
    """(key, Pending) -> outcomes of URLs settled by the lookup, and the Resolved pages
    (``resolved``): one lookup round, plus one per redirect followed (``max_redirects``)."""

    def __init__(self, config: CcFetchConfig):
        super().__init__()
        self.config = config

    def expand(self, pending):
        config = self.config
        groups = None
        if config.source == "columnar":
            groups = (pending.pipeline
                      | "MatchTable" >> MatchFiles(list(config.columnar_index))
                      | "RowGroups" >> beam.FlatMap(index.row_groups, list(config.crawls)))
        outcomes, resolved, tallies = [], [], []
        for r in range(config.max_redirects + 1):
            queries = (pending | f"Query{r}" >> beam.Map(lambda kv: (kv[0], kv[1].query))
                       | f"OneQuery{r}" >> beam.CombinePerKey(min))
            if groups is None:
                results = queries | f"Lookup{r}" >> ApiLookup(config)
            else:
                looked = queries | f"Lookup{r}" >> ColumnarLookup(config, groups)
                results = looked["main"]
                tallies.append(looked[TALLY])
            step = ({"pending": pending, "result": results}
                    | f"Join{r}" >> beam.CoGroupByKey()
                    | f"Choose{r}" >> beam.ParDo(Step(config, r == config.max_redirects))
                    .with_outputs(TALLY, RESOLVED, NEXT, main="outcomes"))
            outcomes.append(step.outcomes)
            resolved.append(step[RESOLVED])
            tallies.append(step[TALLY])
            pending = step[NEXT]
        return {"main": outcomes | "LookupOutcomes" >> beam.Flatten(),
                RESOLVED: resolved | "AllResolved" >> beam.Flatten(),
                TALLY: tallies | "LookupTallies" >> beam.Flatten()}


# ------------------------------------------------------------------------------------------
# Fetch


def fetch_group(r: Resolved, config: CcFetchConfig) -> int:
    """A URL's fetch group: by its page's location, so that a capture two URLs share is
    fetched once."""
    return stable_hash(f"{r.page.filename}@{r.page.offset}") % config.fetch_groups


def group_log(out: str, run_id: str, group: int) -> str:
    return FileSystems.join(out, "log", f"cc_fetch_log-{run_id}-group-{group:05d}.parquet")


class FetchGroup(beam.DoFn):
    """(group, resolved URLs) -> outcomes, and the WARC files written (``warc_files``)."""

    def __init__(self, config: CcFetchConfig):
        self.config = config

    def setup(self):
        self.urls = WorkerProgress("cc-fetch", "URLs")

    def finish_bundle(self):
        self.urls.flush()

    def process(self, item):
        group, resolved = item
        config = self.config
        resolved = sorted(resolved, key=lambda r: (r.page.filename, r.page.offset, r.url))
        info = {"software": "wikisum cc-fetch", "format": "WARC File Format 1.0",
                "run-id": config.run_id, "source": config.data_url,
                "description": "records fetched by byte range from the crawls' WARC files"}
        sink = WarcSink(FileSystems.join(config.out, "warc"), config.run_id, f"group-{group}",
                        config.warc_part_bytes, info, job="ccfetch")
        client = Client(user_agent=config.user_agent, timeout_s=config.timeout_s,
                        retries=config.retries, backoff_s=config.backoff_s)
        budget = config.max_total_bytes // config.fetch_groups if config.max_total_bytes else 0
        started = time.monotonic()
        fetcher = Fetcher(config, client, sink, budget)
        try:
            group_progress = Progress(f"group {group}", len(resolved), config.progress_s)

            def settled(nbytes: int) -> None:
                group_progress(nbytes)
                self.urls.update()

            outcomes = fetcher.fetch_all(resolved, settled)
        finally:
            sink.close()
        log.info("cc-fetch: group %d: %d URL(s), %.1f MB in %.1f s, %d WARC file(s)", group,
                 len(resolved), fetcher.spent / 1e6, time.monotonic() - started,
                 len(sink.files))
        # The group's outcomes now: a run killed later does not fetch them again.
        shards.write_table(group_log(config.out, config.run_id, group),
                           [o.row() for o in outcomes], schemas.CC_FETCH_LOG)
        for path in sink.files:
            yield TaggedOutput(WARC_FILES, path)
        yield from outcomes


# ------------------------------------------------------------------------------------------
# Summary


# Per stage: what one request is called, and what to check besides the network.
STAGE_WORDS = {LOOKUP: "look-up", FETCH: "fetch"}
STAGE_HINTS = {LOOKUP: "--index-url", FETCH: "--data-url"}


def cc_fetch_summary(counts: Iterable, warc_files: list, config: CcFetchConfig,
                     firsts: Iterable = ()) -> dict:
    """Tallies -> the run's summary (:func:`~wikisum.core.accounting.job_summary`): the
    stages ``lines`` (lines read -> distinct URLs), ``urls`` (distinct URLs -> fetched, the
    others dropped by outcome), ``lookup`` and ``fetch``; the outcomes and their reasons,
    coverage (found / listed), failures by cause, the requests each stage made and how many
    failed for a network reason (``network``; a stage whose every request did makes
    ``network_failure`` the line saying so).

    Args:
        firsts: (cause tally, (time, URL, example)) of each cause's earliest failure.
    """
    c = by_stage(counts)
    reasons = dict(sorted(c.get(REASONS, Counter()).items()))
    outcomes = Counter()
    for k, v in reasons.items():
        outcomes[k.split(":", 1)[0]] += v
    lookup, fetch = c.get(LOOKUP, Counter()), c.get(FETCH, Counter())
    failures = causes.failures_by_cause(c.get(causes.CAUSE, {}), firsts, {
        LOOKUP: lookup[IN], FETCH: fetch[KEPT] + fetch["failed"]})
    return job_summary(
        "cc-fetch", config, counts, (LINES, URLS, LOOKUP, FETCH),
        run_id=config.run_id,
        outcomes={k: outcomes.get(k, 0) for k in OUTCOMES},
        reasons=reasons,
        coverage={"listed": lookup[IN], "found": lookup[KEPT],
                  "share": round(lookup[KEPT] / lookup[IN], 4) if lookup[IN] else 0.0},
        bytes_fetched=c.get(BYTES, Counter())["fetched"],
        index_bad_lines=c.get(INDEX, Counter())["bad_line"],
        causes=failures["causes"],
        network=failures["network"],
        network_failure=causes.network_failure("cc-fetch", failures["network"], STAGE_WORDS,
                                               STAGE_HINTS),
        warc_files=sorted(warc_files))


def failure(o: Outcome) -> Iterator[tuple[tuple[str, str], tuple[str, str, str]]]:
    """A failed outcome -> its cause tally and (time, URL, example); nothing for the others."""
    if o.outcome != FAILED:
        return
    stage = (URLS if o.reason == "invalid_url" else
             LOOKUP if o.reason in LOOKUP_FAILURES else FETCH)
    # not o.status: that is the capture's status in the index, not an answer to a request
    yield causes.failure(stage, o.url, o.error, o.reason, 0, o.fetched_at)


def count_outcome(o: Outcome):
    """An outcome -> its tallies: the URL settled (kept when fetched), its reason, the stages
    it went through (``lookup``: all but the skipped and the invalid; ``fetch``: those with a
    capture), the bytes fetched, the cause of a failure."""
    Metrics.counter(beamio.COUNTERS, f"{o.outcome}:{o.reason}").inc()
    yield (URLS, KEPT if o.outcome == FETCHED else o.outcome), 1
    yield (REASONS, f"{o.outcome}:{o.reason}"), 1
    if o.outcome != SKIPPED and not (o.outcome == FAILED and o.reason == "invalid_url"):
        yield (LOOKUP, IN), 1
        if o.outcome == NOT_IN_INDEX:
            yield (LOOKUP, NOT_IN_INDEX), 1
        elif o.outcome == FAILED and o.reason in LOOKUP_FAILURES:
            yield (LOOKUP, "failed"), 1
        else:
            yield (LOOKUP, KEPT), 1
            yield (FETCH, IN), 1
            yield (FETCH, {FETCHED: KEPT, FOUND: "not_fetched"}.get(o.outcome, "failed")), 1
    if o.outcome == FETCHED:
        yield (BYTES, "fetched"), o.bytes
    for key, _ in failure(o):
        yield key, 1


def log_glob(out: str) -> str:
    return FileSystems.join(out, "log", LOG_GLOB)


def output_globs(config: CcFetchConfig) -> list[str]:
    return [FileSystems.join(config.out, "warc", f"ccfetch-{config.run_id}-*.warc.gz"),
            FileSystems.join(config.out, "log", f"cc_fetch_log-{config.run_id}-*"),
            FileSystems.join(config.out, f"summary-{config.run_id}.json"),
            FileSystems.join(config.out, SUMMARY)]


def build(p: beam.Pipeline, config: CcFetchConfig, token: str) -> None:
    """Add the job to pipeline ``p`` (nothing is read here: the URL lists, the earlier runs'
    logs and the columnar index are matched by the job)."""
    staging = beamio.temp_dir(config.out, token)
    read = (p | "MatchUrlLists" >> MatchFiles(list(config.urls))
            | "ReadUrlLines" >> beam.ParDo(ReadUrlLines()).with_outputs(TALLY, main="lines"))
    done = (p | "MatchLogs" >> MatchFiles([log_glob(config.out)], required=False)
            | "ReadDone" >> beam.FlatMap(read_done, config.search_key()))
    planned = ({"lines": read.lines, "done": done}
               | "GroupByUrl" >> beam.CoGroupByKey()
               | "Plan" >> beam.ParDo(Plan(config)).with_outputs(TALLY, main="pending"))
    split = planned.pending | "SplitPlan" >> beam.Partition(
        lambda x, _: 0 if isinstance(x, Outcome) else 1, 2)
    looked = split[1] | "Resolve" >> Resolve(config)
    warcs = []
    if config.lookup_only:
        fetched = looked[RESOLVED] | "NotFetched" >> beam.Map(
            lambda r: r.outcome(FOUND, "lookup_only", config.search_key()))
    else:
        fetching = (looked[RESOLVED]
                    | "ByFetchGroup" >> beam.Map(lambda r: (fetch_group(r, config), r))
                    | "GroupFetches" >> beam.GroupByKey()
                    | "FetchGroup" >> beam.ParDo(FetchGroup(config)).with_outputs(
                        WARC_FILES, main="outcomes"))
        fetched = fetching.outcomes
        warcs = [fetching[WARC_FILES]]
    outcomes = (split[0], looked["main"], fetched) | "AllOutcomes" >> beam.Flatten()
    total = config.log_shards
    finals = {i: shards.shard_path(FileSystems.join(config.out, "log"),
                                   f"cc_fetch_log-{config.run_id}", i, total)
              for i in range(total)}
    staged_log = (outcomes
                  | "LogRows" >> beam.Map(lambda o: (stable_hash(o.url) % total, o.row()))
                  | "WriteLog" >> WriteShards(finals, staging, schemas.CC_FETCH_LOG,
                                              lambda r: r["url"]))
    warc_list = ((warcs or [p | "NoWarcs" >> beam.Create([])])
                 | "WarcFiles" >> beam.Flatten()
                 | "CollectWarcFiles" >> beam.combiners.ToList())
    summary = (((read[TALLY], planned[TALLY], looked[TALLY]), outcomes, warc_list)
               | "RunSummary" >> RunSummary(
                   count_outcome, failure,
                   lambda c, w, f: summary_json(cc_fetch_summary(c, w, config, f))))
    # The run's log shards are whole once committed: its per-group files are not needed then.
    group_logs = FileSystems.join(config.out, "log", f"cc_fetch_log-{config.run_id}-group-*")
    _ = staged_log | "Commit" >> beamio.CommitRun(config.out, config.run_id, staging, summary,
                                                   [group_logs])


def run(config: CcFetchConfig, pipeline_options) -> dict | None:
    """Run the job and return the summary it wrote (``summary-RUN.json``, also
    ``summary.json``); None for a dry run."""
    if not config.run_id:
        config = replace(config, run_id=new_run_id())
    log.info("cc-fetch %s: URL lists %s -> %s (%s index, crawls %s)", config.run_id,
             ", ".join(config.urls), config.out, config.source,
             ", ".join(config.crawls) or "all")
    token = beamio.new_token()
    if not beamio.launch("cc-fetch", pipeline_options, lambda p: build(p, config, token),
                         output_globs(config)):
        return None
    return json.loads(shards.read_text(FileSystems.join(config.out,
                                                        f"summary-{config.run_id}.json")))
