"""robots.txt as a policy, parsed as RFC 9309 says (protego): the group of the most specific
user agent that matches ours, else ``*``; ``*`` and ``$`` in paths; the longest matching rule
wins, and ``Allow`` wins a tie. Conventions: a 4xx file allows everything, a 5xx or an
unreachable one disallows everything. ``Crawl-delay`` (not in the RFC) is obeyed up to
``MAX_CRAWL_DELAY_S``."""

from __future__ import annotations

from dataclasses import dataclass

from protego import Protego

from wikisum.pipeline.crawl.checks import origin_of
from wikisum.pipeline.crawl.records import FAILED, REFUSED, Stop

ROBOTS_MAX_BYTES = 512 * 1024  # RFC 9309 asks crawlers to parse at least 500 KiB
MAX_CRAWL_DELAY_S = 60.0  # a robots.txt Crawl-delay above this is capped, not obeyed


@dataclass(frozen=True)
class RobotsPolicy:
    """What one origin's robots.txt allows. ``stop`` (when set) ends every URL of the origin:
    the robots.txt could not be had (5xx, unreachable) or its address was refused."""

    rules: Protego | None = None  # None: everything allowed
    stop: Stop | None = None
    crawl_delay_s: float = 0.0

    def refusal(self, url: str, user_agent: str) -> Stop | None:
        if self.stop is not None:
            return self.stop.again()
        if self.rules is not None and not self.rules.can_fetch(url, user_agent):
            return Stop(REFUSED, "robots", f"disallowed by {origin_of(url)}/robots.txt")
        return None


def robots_policy(status: int, body: bytes, user_agent: str) -> RobotsPolicy:
    """A robots.txt response -> policy (RFC 9309 section 2.3.1): 2xx is parsed; 4xx ("not
    available") allows everything; 5xx ("unreachable") disallows everything; anything else
    (a redirect the fetch could not follow) counts as not available."""
    if 200 <= status < 300:
        rules = Protego.parse(body[:ROBOTS_MAX_BYTES].decode("utf-8", errors="replace"))
        delay = rules.crawl_delay(user_agent)
        try:
            delay_s = min(float(delay or 0.0), MAX_CRAWL_DELAY_S)
        except (TypeError, ValueError):
            delay_s = 0.0
        return RobotsPolicy(rules, None, max(delay_s, 0.0))
    if 500 <= status < 600:
        return RobotsPolicy(None, Stop(FAILED, "robots_unavailable",
                                       f"robots.txt answered HTTP {status}"))
    return RobotsPolicy()


def robots_policy_after_stop(stop: Stop) -> RobotsPolicy:
    """The policy when fetching robots.txt itself ended early. An unreachable robots.txt
    disallows (timeouts, connection errors); a refused or unresolvable address or a TLS
    failure ends the origin's URLs the same way, with that reason (their own requests would
    meet it too); redirect trouble counts as "not available" (allow)."""
    if (stop.outcome, stop.reason) in ((REFUSED, "address"), (FAILED, "dns"), (FAILED, "tls")):
        return RobotsPolicy(None, stop)
    if stop.reason in ("redirect_loop", "too_many_redirects", "bad_redirect", "scheme"):
        return RobotsPolicy()
    return RobotsPolicy(None, Stop(FAILED, "robots_unavailable",
                                   f"robots.txt: {stop.reason}: {stop.error}".rstrip(": ")))
