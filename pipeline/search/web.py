"""A search of every title through a web search API (:mod:`.engines`), one request at a time:
at the engine's rate, within a daily quota kept across runs, retried with backoff, every answer
cached on disk so that a rerun, or a run resumed after a kill, asks nothing twice.

:func:`search_titles` writes the results file (a line per answered title, in the order of the
titles, written under a temporary name and renamed when whole) and its summary beside it, and
returns the summary. Its stages, each in = kept + dropped:

- ``titles``: every title read -> searched; dropped as ``empty_title``, ``title_too_long``,
  ``control_characters``, ``not_text`` (:func:`titles.title_problem`) or ``duplicate_title``
  (the same title, as MediaWiki compares titles, listed again: its first place is kept);
- ``queries``: every title searched -> answered (by the API or from the cache); dropped by the
  reason it failed (``bad_json``, ``bad_shape``, ``http_400``, ``rate_limited`` and
  ``server_error`` once the retries are spent, ``timeout``, ``connection``, ``too_large``,
  ``query_too_long``) or ``left_for_rerun`` (not asked: the run stopped at the quota);
- ``result_urls``: every URL of an answer -> written; dropped as ``wikipedia``, ``mirror``,
  ``not_http`` or ``beyond_k``.

Asking (pace, quota, retries) is :mod:`.webclient`'s, the cache and the quota's ledger
:mod:`.webcache`'s. No secret reaches a file, a message or a log line: keys travel in headers,
errors are made from status codes and vendors' messages with every secret blanked
(:func:`webclient.redact`), and the cache is keyed and filled without them.
"""

from __future__ import annotations

import contextlib
import logging
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from wikisum.core import files, shards
from wikisum.core.accounting import IN, KEPT, job_summary, summary_json
from wikisum.core.progress import Progress
from wikisum.pipeline.search import titles as tt
from wikisum.pipeline.search.engines import (
    ENGINES,
    FAIL,
    REFUSED,
    STOP,
    VENDOR_QUOTA,
    Credentials,
    Engine,
)
from wikisum.pipeline.search.results import (
    RESULT_URLS,
    kept_results,
    partial_path,
    result_line,
    summary_path,
)
from wikisum.pipeline.search.sites import MIRROR_SITES
from wikisum.pipeline.search.webcache import COMMAND, AnswerCache, QuotaLedger, open_cache_folder
from wikisum.pipeline.search.webclient import (
    DAILY_QUOTA,
    WAIT_TOO_LONG,
    Client,
    Fetch,
    Outcome,
    Timing,
    default_timing,
    redact,
    urllib_fetch,
)
from wikisum.pipeline.urls import normalize_title

log = logging.getLogger("wikisum.search")

TITLES, QUERIES = "titles", "queries"
LEFT = "left_for_rerun"
# Why a run stops early (the summary's stopped.reason).
STOP_REASONS = (DAILY_QUOTA, VENDOR_QUOTA, REFUSED, WAIT_TOO_LONG)
MAX_DROPPED_LISTED = 1000  # dropped titles the summary names; the counts hold them all
TITLE_SHOWN = 200  # characters of a title in the summary


@dataclass(frozen=True)
class WebSearchConfig:
    """A search of titles through a web search API. Holds no secret (it is the summary's
    ``options``).

    Attributes:
        engine: an :data:`engines.ENGINES` name.
        out: the results file (JSONL); the summary goes beside it.
        cache: the folder of cached answers and of the quota ledger (local).
        endpoint: the URL asked (for SearXNG, the instance's root).
        k: URLs kept per title.
        query: how a title becomes a query (:data:`titles.QUERY_MODES`).
        mirrors: hosts dropped from the results besides Wikipedia's.
        qps: queries per second at most.
        daily_quota: requests per UTC day at most, counted across runs (None: no limit).
        retries: further tries of a request refused for a moment (429, 5xx, no connection).
        timeout: seconds per request.
    """

    engine: str
    out: str
    cache: str
    endpoint: str
    k: int = 10
    query: str = tt.DEFAULT_QUERY
    mirrors: tuple[str, ...] = MIRROR_SITES
    qps: float = 1.0
    daily_quota: int | None = None
    retries: int = 5
    timeout: float = 30.0


class Tally:
    """Counts by (stage, outcome), and the dropped titles the summary names."""

    def __init__(self):
        self.counts: Counter = Counter()
        self.dropped: list[list] = []
        self.dropped_count = 0

    def count(self, stage: str, outcome: str, n: int = 1) -> None:
        self.counts[(stage, outcome)] += n

    def drop(self, place: int, stage: str, reason: str, title: str, detail: str = "") -> None:
        self.count(stage, reason)
        self.dropped_count += 1
        if len(self.dropped) < MAX_DROPPED_LISTED:
            shown = title[:TITLE_SHOWN].encode("utf-8", "backslashreplace").decode("utf-8")
            self.dropped.append([place, reason, shown, detail])

    def tallies(self) -> list:
        return list(self.counts.items())

    def stage(self, stage: str) -> dict[str, int]:
        return {outcome: n for (s, outcome), n in self.counts.items() if s == stage}


def checked_titles(titles: Iterable[str], tally: Tally):
    """(place, title) of every title to search, in order: problems and repeats dropped."""
    seen: set[str] = set()
    for place, title in enumerate(titles, 1):
        tally.count(TITLES, IN)
        problem = tt.title_problem(title)
        if problem is not None:
            tally.drop(place, TITLES, problem, title)
            continue
        name = normalize_title(title)
        if name in seen:
            tally.drop(place, TITLES, "duplicate_title", title)
            continue
        seen.add(name)
        tally.count(TITLES, KEPT)
        yield place, title


def kept_urls(urls: list[str], config: WebSearchConfig, tally: Tally) -> list[str]:
    """The first ``k`` URLs that may be search results (:func:`results.kept_results`)."""
    kept = kept_results(((u, None) for u in urls), config.k, config.mirrors,
                        lambda outcome: tally.count(RESULT_URLS, outcome))
    return [url for url, _ in kept]


def search_titles(config: WebSearchConfig, titles: Iterable[str], credentials: Credentials,
                  *, fetch: Fetch | None = None, timing: Timing | None = None) -> dict:
    """Search every title, write the results and the summary, and return the summary.

    A title whose answer is cached is not asked again. When the daily quota is reached, or the
    vendor says its quota is spent or refuses the key, nothing more is asked: the answers had
    (and every later title's cached one) are written, and the summary's ``stopped`` says why
    and how many titles are left for a rerun.

    Args:
        fetch: sends a request (default :func:`urllib_fetch`).
        timing: clocks, sleep and jitter (default: the real ones).

    Raises:
        ValueError: an unknown engine, or a --k beyond what one request returns.
        ownership.NotOurs: the cache folder holds files wikisum did not write.
    """
    engine = engine_for(config)
    timing = timing or default_timing()
    open_cache_folder(config.cache)
    cache = AnswerCache(config.cache, engine, config.endpoint, credentials, timing.wall)
    ledger = QuotaLedger(config.cache, engine.name, config.daily_quota, timing.wall)
    client = Client(engine, config.endpoint, credentials, ledger, qps=config.qps,
                    retries=config.retries, timeout=config.timeout, fetch=fetch or urllib_fetch,
                    timing=timing)
    count = engine.count(config.k)
    tally = Tally()
    answers: Counter = Counter()
    stopped: dict | None = None
    temporary = shards.temporary_name(config.out)
    written = False
    try:
        with files.open_write(temporary) as out, Progress(
                f"search ({engine.name})", unit="titles") as bar:
            for place, title in checked_titles(titles, tally):
                tally.count(QUERIES, IN)
                query = tt.query_for(title, config.query)
                urls = cache.get(query, count)
                if urls is not None:
                    answers["from_cache"] += 1
                elif stopped is not None:
                    tally.count(QUERIES, LEFT)
                    stopped["titles_left"] += 1
                    bar.update(1)
                    continue
                else:
                    problem = engine.query_problem(query)
                    outcome = (Outcome(FAIL, reason=problem, detail="the vendor takes no such "
                                       "query") if problem else client.ask(query, count))
                    if outcome.kind == STOP:
                        stopped = {"reason": outcome.reason, "detail": outcome.detail,
                                   "titles_left": 1}
                        tally.count(QUERIES, LEFT)
                        bar.note(f"search: stopped: {outcome.detail}; the titles left are "
                                 "asked by a rerun")
                        bar.update(1)
                        continue
                    if outcome.kind == FAIL:
                        tally.drop(place, QUERIES, outcome.reason, title, outcome.detail)
                        log.debug("search: %r failed: %s", title[:TITLE_SHOWN], outcome.detail)
                        bar.update(1, postfix=_postfix(answers, tally))
                        continue
                    urls = outcome.urls
                    cache.put(query, count, urls)
                    answers["asked"] += 1
                tally.count(QUERIES, KEPT)
                kept = kept_urls(urls, config, tally)
                out.write(result_line(title, kept, None, engine.name, query).encode("utf-8"))
                bar.update(1, postfix=_postfix(answers, tally))
        # The record goes first: results without it are whole (renamed whole), while an
        # earlier run's record beside new results would misstate them.
        for earlier in (summary_path(config.out), partial_path(config.out)):
            if files.exists(earlier):
                files.delete(earlier)
        if stopped is None:
            files.rename(temporary, config.out)
        else:  # not whole: never under the name ingest reads
            if files.exists(config.out):
                files.delete(config.out)
            files.rename(temporary, partial_path(config.out))
        written = True
    finally:
        if not written:
            with contextlib.suppress(OSError):
                files.delete(temporary)
    summary = job_summary(
        COMMAND, config, tally.tallies(), [TITLES, QUERIES, RESULT_URLS], engine=engine.name,
        answers={"asked": answers["asked"], "from_cache": answers["from_cache"]},
        requests={"sent": client.sent, "retried": client.retried,
                  "by_status": dict(sorted(client.statuses.items()))},
        cache={"bad_entries": cache.bad_entries},
        daily_quota={"day": ledger.day, "used": ledger.used, "limit": ledger.limit},
        stopped=stopped, dropped_titles=tally.dropped, dropped_titles_count=tally.dropped_count)
    shards.write_text(summary_path(config.out),
                      redact(summary_json(summary), credentials.secrets()))
    return summary


def _postfix(answers: Counter, tally: Tally) -> str:
    failed = sum(n for reason, n in tally.stage(QUERIES).items()
                 if reason not in (IN, KEPT, LEFT))
    return f"{answers['asked']} asked, {answers['from_cache']} cached, {failed} failed"


def plan(config: WebSearchConfig, titles: Iterable[str], credentials: Credentials,
         timing: Timing | None = None) -> dict:
    """What :func:`search_titles` would ask, asking and writing nothing: ``titles`` read,
    ``dropped`` (by reason), ``searched``, ``cached`` (answered from the cache), ``queries``
    (to ask), and ``quota``: today's ``used`` and ``remaining`` requests (None: no limit)."""
    engine = engine_for(config)
    timing = timing or default_timing()
    tally = Tally()
    cache = AnswerCache(config.cache, engine, config.endpoint, credentials)
    count = engine.count(config.k)
    cached = queries = searched = 0
    for _, title in checked_titles(titles, tally):
        searched += 1
        query = tt.query_for(title, config.query)
        if cache.get(query, count, count_bad=False) is not None:
            cached += 1
        elif engine.query_problem(query) is None:
            queries += 1
    ledger = QuotaLedger(config.cache, engine.name, config.daily_quota, timing.wall)
    dropped = {k: v for k, v in tally.stage(TITLES).items() if k not in (IN, KEPT)}
    return {"titles": tally.counts[(TITLES, IN)], "dropped": dropped, "searched": searched,
            "cached": cached, "queries": queries,
            "quota": {"day": ledger.day, "used": ledger.used, "limit": ledger.limit,
                      "remaining": ledger.remaining()}}


def engine_for(config: WebSearchConfig) -> Engine:
    """The engine ``config`` names, checked against its k.

    Raises:
        ValueError: an unknown engine, or a k beyond what one of its requests returns.
    """
    engine = ENGINES.get(config.engine)
    if engine is None:
        raise ValueError(f"unknown engine {config.engine!r}; use one of {', '.join(ENGINES)}")
    if engine.per_request is not None and config.k > engine.per_request:
        raise ValueError(f"{engine.name} returns at most {engine.per_request} results a "
                         f"request; give --k {engine.per_request} or less")
    return engine

