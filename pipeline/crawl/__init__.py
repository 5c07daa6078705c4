"""``wikisum crawl``: fetch cited and search-result pages into WARC files, politely and safely.

Common Crawl misses many of the pages Wikipedia cites; ``wikisum ingest`` lists them in
``missing_urls.txt``. This package fetches such lists into WARC files that the same ``ingest``
reads. One module per concern, pure functions and small objects first:

    records.py     CrawlConfig, Outcome (outcome names and reasons), Stop, Exchange
    checks.py      URL and address checks, size parsing
    robots.py      robots.txt policy
    net.py         one HTTP exchange, pinned to a checked address
    writer.py      WARC output
    politeness.py  per-host gates
    fetch.py       Crawler: robots, addresses, retries, redirects for one URL
    causes.py      failure causes (dns, refused, timeout, http_5xx, ...), shared with cc-fetch
    job.py         the Beam job that wires them together:

    --urls files --ReadUrlLines--> (key, raw line) ---------------------+
    earlier logs in --out --ReadDone--> (url, done) --------------------+
         --GroupByUrl (CoGroupByKey: de-duplicates, finds what is done) --> Plan
         --> skipped / refused(scheme) / failed(invalid_url) outcomes ---------------+
         --> (host, url) --GroupByHost--> FetchHost (threads, delay, robots) --> outcomes
         --> log/crawl_log-RUN-SSSSS-of-NNNNN.{parquet,jsonl}, summary-RUN.json

Safety: only http and https; every request, redirects and robots.txt included, resolves its
host once, checks every address it resolved to (``address_refusal``), and connects to that
checked address, sending the original name in the Host header and TLS SNI, so that a second
DNS answer cannot point the connection elsewhere (DNS rebinding).

Politeness: one ``GroupByKey`` group per host; within it at most ``per_host_concurrency``
requests in flight and ``delay_s`` seconds between the starts of two requests to the host (or
robots.txt's Crawl-delay, up to ``MAX_CRAWL_DELAY_S``); robots.txt fetched once per origin and
obeyed for the user agent. Robots convention (RFC 9309): a 4xx robots.txt allows everything; a
5xx or unreachable one disallows everything, and the host's URLs end as
``failed(robots_unavailable)`` so that a later run tries them again.

Every URL read ends as exactly one outcome record (``fetched``, ``refused``, ``failed`` or
``skipped``, with a reason): distinct URLs in = outcomes out, checked in ``summary-RUN.json``.
The summary also counts the failures by cause, and says when every URL requested failed for a
network reason (``network_failure``: the command then exits non-zero).
"""

from wikisum.core.lazy import lazy_names
from wikisum.pipeline.crawl.records import (
    DEADLINE_FACTOR,
    OUTCOMES,
    CrawlConfig,
    Outcome,
    new_run_id,
)

# Imported on first use: the job imports Beam, and the command line reads CrawlConfig's
# defaults (records.py) for `wikisum crawl --help` without it.
_LAZY = {"Crawler": "wikisum.pipeline.crawl.fetch", "run": "wikisum.pipeline.crawl.job"}


__getattr__, __dir__ = lazy_names(__name__, _LAZY)


__all__ = ["DEADLINE_FACTOR", "OUTCOMES", "CrawlConfig", "Crawler", "Outcome", "new_run_id",
           "run"]
