"""The crawler on one host: spacing and concurrency, retries, redirect limits."""

from __future__ import annotations

import time
from collections import Counter

from crawlsite import (
    config,
)

from wikisum.pipeline.crawl.fetch import Crawler


def test_requests_to_a_host_are_spaced_and_bounded(site):
    crawler = Crawler(config(delay_s=0.15, per_host_concurrency=2))
    before = len(site.starts)
    urls = [site.url(f"/wait/{i}") for i in range(4)]
    outcomes = crawler.crawl(urls)
    assert [o.outcome for o in outcomes] == ["fetched"] * 4
    assert [o.url for o in outcomes] == urls
    starts = sorted(t for _, t in site.starts[before:])
    assert len(starts) == 5  # robots.txt and four pages
    assert min(b - a for a, b in zip(starts, starts[1:], strict=False)) >= 0.12
    assert site.max_in_flight == 2  # two at once, never three


def test_retries_back_off_exponentially_on_5xx_and_never_on_4xx(site):
    waits = []
    crawler = Crawler(config(retries=3, backoff_s=0.1), sleep=waits.append)
    before = site.snapshot()
    down = crawler.fetch(site.url("/down"))
    assert (down.outcome, down.reason, down.status, down.attempts) == ("failed", "http_status",
                                                                       503, 4)
    assert waits == [0.1, 0.2, 0.4]
    missing = crawler.fetch(site.url("/nowhere"))
    assert (missing.outcome, missing.status, missing.attempts) == ("failed", 404, 1)
    assert waits == [0.1, 0.2, 0.4]
    assert site.snapshot() - before == Counter({"/down": 4, "/nowhere": 1, "/robots.txt": 1})


def test_redirects_beyond_the_limit_fail(site):
    outcome = Crawler(config(max_redirects=1)).fetch(site.url("/chain/1"))
    assert (outcome.outcome, outcome.reason, outcome.status) == ("failed", "too_many_redirects",
                                                                 301)
    assert outcome.redirects == (site.url("/chain/2"), site.url("/page/c"))
    assert outcome.final_url == site.url("/chain/2")


def test_a_url_has_one_total_deadline_across_retries(site):
    """/slow answers after SLOW_S; with 3 retries each try would get 3 x timeout: the URL's
    total deadline ends it after the first try's share."""
    crawler = Crawler(config(retries=3, backoff_s=0.01, timeout_s=1.0, url_deadline_s=0.6))
    started = time.monotonic()
    outcome = crawler.fetch(site.url("/slow"))
    assert (outcome.outcome, outcome.reason) == ("failed", "url_deadline")
    assert outcome.attempts == 1 and time.monotonic() - started < 1.5
