"""Fetching one URL: robots.txt, address checks, retries with backoff, and redirects, ending
in exactly one :class:`~wikisum.pipeline.crawl.records.Outcome`."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from wikisum.pipeline.crawl.checks import (
    SCHEMES,
    check_url,
    checked_addresses,
    header_url,
    origin_of,
    resolve_host,
)
from wikisum.pipeline.crawl.net import FetchError, http_get
from wikisum.pipeline.crawl.politeness import HostGate, gate_for
from wikisum.pipeline.crawl.records import (
    FAILED,
    FETCHED,
    REDIRECT_STATUSES,
    REFUSED,
    CrawlConfig,
    Exchange,
    Outcome,
    Stop,
    utc_now,
)
from wikisum.pipeline.crawl.robots import (
    ROBOTS_MAX_BYTES,
    RobotsPolicy,
    robots_policy,
    robots_policy_after_stop,
)
from wikisum.pipeline.crawl.writer import WarcSink

log = logging.getLogger("wikisum.crawl")



@dataclass
class _Chain:
    """The state of one URL's redirect chain."""

    url: str
    hops: list[str] = field(default_factory=list)  # URLs requested, in order
    redirects: list[str] = field(default_factory=list)
    attempts: int = 0
    last: Exchange | None = None
    warc: tuple[str, int] = ("", -1)
    started: float = field(default_factory=time.monotonic)  # for the URL's total deadline


class Crawler:
    """Fetches URLs under one ``CrawlConfig``: robots.txt once per origin, every hop's address
    checked, retries with backoff, redirects followed and recorded, every response written to
    ``sink`` (None: not recorded).

    Args:
        resolve: host, port -> addresses (``resolve_host``; tests pass a fixed table).
        sleep: waits between retries (tests pass a recorder).
    """

    def __init__(self, config: CrawlConfig, sink: WarcSink | None = None, *,
                 resolve: Callable[[str, int], list[str]] = resolve_host,
                 sleep: Callable[[float], None] = time.sleep):
        self.config, self.sink, self.resolve, self.sleep = config, sink, resolve, sleep
        self._robots: dict[str, RobotsPolicy] = {}
        self._robots_locks: dict[str, threading.Lock] = {}
        self._gates: dict[str, HostGate] = {}
        self._crawl_delays: dict[str, float] = {}  # host -> robots.txt Crawl-delay
        self._lock = threading.Lock()

    # -- robots.txt

    def robots(self, url: str) -> RobotsPolicy:
        """The policy of ``url``'s origin, fetched on first use (other threads wait for it)."""
        origin = origin_of(url)
        with self._lock:
            if origin in self._robots:
                return self._robots[origin]
            lock = self._robots_locks.setdefault(origin, threading.Lock())
        with lock:
            with self._lock:
                if origin in self._robots:
                    return self._robots[origin]
            chain = _Chain(origin + "/robots.txt")
            try:
                self._follow(chain, ROBOTS_MAX_BYTES, check_robots=False, record=False)
            except Stop as stop:
                policy = robots_policy_after_stop(stop)
            else:
                assert chain.last is not None
                policy = robots_policy(chain.last.status, chain.last.body,
                                       self.config.user_agent)
            host = urlsplit(url).hostname or ""
            with self._lock:
                self._robots[origin] = policy
                self._crawl_delays[host] = max(self._crawl_delays.get(host, 0.0),
                                               policy.crawl_delay_s)
            return policy

    def _wait_turn(self, host: str) -> None:
        with self._lock:
            gate = self._gates.get(host)
            if gate is None:
                gate = self._gates[host] = gate_for(host)
            delay = max(self.config.delay_s, self._crawl_delays.get(host, 0.0))
        gate.wait(delay)

    # -- one URL

    def fetch(self, url: str) -> Outcome:
        """A normalised http(s) URL -> its outcome (never raises: one URL that trips over
        something unforeseen ends as failed(error), and the host's other URLs go on)."""
        chain = _Chain(url)
        try:
            self._follow(chain, self.config.max_bytes, check_robots=True,
                         record=self.sink is not None)
        except Stop as stop:
            return self._outcome(chain, stop.outcome, stop.reason, stop.error, stop.status)
        except Exception as exc:
            log.warning("crawl: %s: %s: %s", url, type(exc).__name__, exc)
            return self._outcome(chain, FAILED, "error", f"{type(exc).__name__}: {exc}", 0)
        ex = chain.last
        assert ex is not None
        if 200 <= ex.status < 300:
            return self._outcome(chain, FETCHED, "ok", "", ex.status)
        return self._outcome(chain, FAILED, "http_status", f"HTTP {ex.status} {ex.reason}",
                             ex.status)

    def _outcome(self, chain: _Chain, outcome: str, reason: str, error: str,
                 status: int) -> Outcome:
        ex = chain.last
        return Outcome(
            url=chain.url, outcome=outcome, reason=reason,
            final_url=ex.url if ex else "",
            status=status or (ex.status if ex else 0), attempts=chain.attempts,
            redirects=tuple(chain.redirects), bytes=len(ex.body) if ex else 0,
            truncated=bool(ex and ex.truncated), warc_file=chain.warc[0],
            warc_offset=chain.warc[1], fetched_at=utc_now(), error=error[:1000])

    def _follow(self, chain: _Chain, max_bytes: int, *, check_robots: bool,
                record: bool) -> None:
        """Request ``chain.url`` and follow its redirects; the last response ends in
        ``chain.last``. Raises ``Stop`` where the chain ends otherwise."""
        current = chain.url
        while True:
            chain.hops.append(current)
            chain.attempts = 0  # counts the tries of the hop being made
            if check_robots:
                refusal = self.robots(current).refusal(current, self.config.user_agent)
                if refusal is not None:
                    raise refusal
            self._request(chain, current, max_bytes, record)
            ex = chain.last
            if ex.status not in REDIRECT_STATUSES:
                return
            location = header_url(ex.header("Location"))
            if not location:
                raise Stop(FAILED, "bad_redirect", f"HTTP {ex.status} without Location",
                           ex.status)
            target, refusal = check_url(urljoin(current, location))
            if refusal:
                raise Stop(REFUSED if refusal == "scheme" else FAILED,
                           "scheme" if refusal == "scheme" else "bad_redirect",
                           f"redirect to {location[:300]!r}", ex.status)
            chain.redirects.append(target)
            if target in chain.hops:
                raise Stop(FAILED, "redirect_loop", f"{target} seen twice", ex.status)
            if len(chain.redirects) > self.config.max_redirects:
                raise Stop(FAILED, "too_many_redirects",
                           f"more than {self.config.max_redirects}", ex.status)
            current = target

    def _request(self, chain: _Chain, url: str, max_bytes: int, record: bool) -> None:
        """One hop, with retries on timeouts, connection errors and 5xx (never on 4xx)."""
        config = self.config
        parts = urlsplit(url)
        host, port = parts.hostname or "", parts.port or SCHEMES[parts.scheme]
        while True:
            # Resolved and checked afresh on every try: the connection goes to this address.
            addresses = checked_addresses(host, port, config.allow_private, self.resolve)
            self._wait_turn(host)
            left = config.url_budget_s - (time.monotonic() - chain.started)
            if left <= 0:
                raise Stop(FAILED, "url_deadline", f"no answer within {config.url_budget_s:g} s "
                           f"over {chain.attempts} tries and {len(chain.redirects)} redirects")
            chain.attempts += 1
            retry_left = chain.attempts <= config.retries
            try:
                ex = self._get(url, addresses, max_bytes, min(config.deadline_s, left))
            except FetchError as exc:
                if exc.retryable and retry_left:
                    self.sleep(config.backoff_s * 2 ** (chain.attempts - 1))
                    continue
                raise Stop(FAILED, exc.reason, exc.detail) from None
            chain.last = ex
            if record and self.sink is not None:
                chain.warc = self.sink.write(ex)
            if 500 <= ex.status < 600 and retry_left:
                self.sleep(config.backoff_s * 2 ** (chain.attempts - 1))
                continue
            return

    def _get(self, url: str, addresses: list[str], max_bytes: int,
             deadline_s: float) -> Exchange:
        """Try the checked addresses in order until one connects."""
        config = self.config
        error: FetchError | None = None
        for ip in addresses:
            try:
                return http_get(url, ip, user_agent=config.user_agent,
                                timeout_s=min(config.timeout_s, deadline_s),
                                deadline_s=deadline_s,
                                max_bytes=max_bytes, verify_tls=config.verify_tls)
            except FetchError as exc:
                if exc.reason != "connection":
                    raise
                error = exc
        assert error is not None
        raise error

    # -- many URLs of one host

    def crawl(self, urls: Iterable[str], progress: Callable[[], None] | None = None
              ) -> list[Outcome]:
        """Outcomes of ``urls`` in their order, at most ``per_host_concurrency`` in flight;
        ``progress()`` is called as each URL is settled (from the fetching threads)."""
        urls = list(urls)

        def one(url: str) -> Outcome:
            outcome = self.fetch(url)
            if progress is not None:
                progress()
            return outcome

        if self.config.per_host_concurrency <= 1 or len(urls) <= 1:
            return [one(url) for url in urls]
        with ThreadPoolExecutor(self.config.per_host_concurrency,
                                thread_name_prefix="crawl") as pool:
            return list(pool.map(one, urls))
