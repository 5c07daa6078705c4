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


CRAWLER_UA = "wikisum-crawler/0.1 (+research crawl of pages cited by Wikipedia)"


def allowed(body: bytes, url: str, user_agent: str = CRAWLER_UA) -> bool:
    return robots_policy(200, body, user_agent).refusal(url, user_agent) is None


def test_robots_wildcards_and_end_anchor():
    body = b"User-agent: *\nDisallow: /*.pdf$\nDisallow: /tmp*/cache\n"
    assert not allowed(body, "http://h.test/papers/a.pdf")
    assert allowed(body, "http://h.test/papers/a.pdf?page=2")  # `$`: the path ends there
    assert allowed(body, "http://h.test/papers/a.pdf.html")
    assert allowed(body, "http://h.test/papers/a.html")
    assert not allowed(body, "http://h.test/tmp-2019/cache/x")
    assert allowed(body, "http://h.test/tmp-2019/other")


def test_robots_longest_match_wins_and_allow_wins_a_tie():
    body = (b"User-agent: *\nDisallow: /private\nAllow: /private/public\n"
            b"Allow: /shop/\nDisallow: /shop/\n")
    assert not allowed(body, "http://h.test/private/x")
    assert allowed(body, "http://h.test/private/public/page")  # the longer rule, not the first
    assert allowed(body, "http://h.test/shop/item")  # equal length: Allow
    # Order does not matter: the same rules the other way round.
    body = b"User-agent: *\nAllow: /a/b\nDisallow: /a\n"
    assert allowed(body, "http://h.test/a/b/c") and not allowed(body, "http://h.test/a/c")


def test_robots_user_agent_group_selection():
    body = (b"User-agent: *\nDisallow: /\n\n"
            b"User-agent: wikisum\nDisallow: /generic/\n\n"
            b"User-agent: WIKISUM-CRAWLER\nDisallow: /specific/\nCrawl-delay: 1.5\n\n"
            b"User-agent: otherbot\nUser-agent: thirdbot\nAllow: /\n")
    # The most specific group matching the crawler's product token, case-insensitively; the
    # groups are not merged with `*` or with each other.
    assert allowed(body, "http://h.test/generic/x")
    assert not allowed(body, "http://h.test/specific/x")
    assert allowed(body, "http://h.test/page")
    assert robots_policy(200, body, CRAWLER_UA).crawl_delay_s == 1.5
    # A group with several user-agent lines applies to each of them.
    assert allowed(body, "http://h.test/page", "ThirdBot/2.0")
    assert allowed(body, "http://h.test/page", "otherbot")
    # No matching group: `*`.
    assert not allowed(body, "http://h.test/page", "UnknownBot/1.0")
    assert robots_policy(200, body, "UnknownBot/1.0").crawl_delay_s == 0.0
    # No group at all for us and no `*`: everything allowed.
    assert allowed(b"User-agent: otherbot\nDisallow: /\n", "http://h.test/page")


def test_robots_tolerates_odd_files():
    assert allowed(b"", "http://h.test/x")
    assert allowed(b"\xff\xfe garbage\nnot a rule\n", "http://h.test/x")
    body = b"# comment\nuser-agent: *   # trailing comment\ndisallow: /x # why\ncrawl-delay: n/a\n"
    assert not allowed(body, "http://h.test/x/y")
    assert robots_policy(200, body, CRAWLER_UA).crawl_delay_s == 0.0
    # Percent-encoding is compared decoded on both sides.
    assert not allowed(b"User-agent: *\nDisallow: /caf%C3%A9\n", "http://h.test/caf%c3%a9/menu")
