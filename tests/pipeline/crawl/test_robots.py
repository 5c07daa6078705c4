"""robots.txt policy and its RFC 9309 conventions."""

from __future__ import annotations

from crawlsite import (
    UA,
)

from wikisum.pipeline.crawl.checks import (
    is_done,
)
from wikisum.pipeline.crawl.records import Stop
from wikisum.pipeline.crawl.robots import robots_policy, robots_policy_after_stop


def test_robots_policy_rules_and_conventions():
    body = (b"User-agent: wikisum-test-crawler\nDisallow: /mine/\nCrawl-delay: 2\n\n"
            b"User-agent: *\nDisallow: /\n")
    policy = robots_policy(200, body, UA)
    assert policy.refusal("http://h.test/page", UA) is None
    stop = policy.refusal("http://h.test/mine/x", UA)
    assert (stop.outcome, stop.reason) == ("refused", "robots")
    assert policy.refusal("http://h.test/page", "OtherBot/1.0").reason == "robots"
    assert policy.crawl_delay_s == 2.0
    assert robots_policy(200, b"User-agent: *\nCrawl-delay: 9999\n", UA).crawl_delay_s == 60.0
    # 4xx: allow all; 5xx: nothing is fetched, and the URLs are tried again on resume.
    for status in (401, 403, 404, 410):
        assert robots_policy(status, b"User-agent: *\nDisallow: /\n", UA).refusal(
            "http://h.test/x", UA) is None
    stop = robots_policy(503, b"", UA).refusal("http://h.test/x", UA)
    assert (stop.outcome, stop.reason) == ("failed", "robots_unavailable")
    assert not is_done(stop.outcome, 0)
    unreachable = robots_policy_after_stop(Stop("failed", "timeout", "no answer"))
    assert unreachable.refusal("http://h.test/x", UA).reason == "robots_unavailable"
    refused = robots_policy_after_stop(Stop("refused", "address", "10.0.0.1 (private)"))
    assert refused.refusal("http://h.test/x", UA).reason == "address"
    assert robots_policy_after_stop(Stop("failed", "tls", "expired")).refusal(
        "http://h.test/x", UA).reason == "tls"
    assert robots_policy_after_stop(Stop("failed", "redirect_loop")).refusal(
        "http://h.test/x", UA) is None
