"""The crawl's configuration and records: :class:`CrawlConfig`, one :class:`Outcome` per URL
(with the outcome names and their reasons), the :class:`Stop` that ends a URL early, and the
:class:`Exchange` of one request."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from datetime import datetime, timezone

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 10

# Outcomes, and the reasons each one comes with.
FETCHED = "fetched"  # a 2xx response was recorded (reason "ok")
REFUSED = "refused"  # scheme | address | robots: never requested, by policy
FAILED = "failed"  # invalid_url | dns | timeout | connection | tls | bad_response | http_status
#                    | redirect_loop | too_many_redirects | bad_redirect | robots_unavailable
#                    | error (an unforeseen exception, with its text)
SKIPPED = "skipped"  # already_done: an earlier run in --out settled it
OUTCOMES = (FETCHED, REFUSED, FAILED, SKIPPED)

DEADLINE_FACTOR = 3.0  # a whole request (connect to last byte) gets this many --timeout's
DEFAULT_USER_AGENT = "wikisum-crawler/0.1 (+research crawl of pages cited by Wikipedia)"
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_WARC_PART_BYTES = 1024 * 1024 * 1024


@dataclass(frozen=True)
class CrawlConfig:
    """The crawl's own options (Beam's pipeline options are separate)."""

    urls: tuple[str, ...]
    out: str
    run_id: str = ""
    per_host_concurrency: int = 2
    delay_s: float = 1.0  # between the starts of two requests to one host
    timeout_s: float = 20.0  # connect, and each read; the whole request gets DEADLINE_FACTOR x
    max_bytes: int = DEFAULT_MAX_BYTES  # body bytes kept; the rest is cut, the record marked
    retries: int = 3  # extra tries on timeouts, connection errors and 5xx
    backoff_s: float = 1.0  # wait before retry k (1-based): backoff_s * 2**(k-1)
    user_agent: str = DEFAULT_USER_AGENT
    allow_private: bool = False
    verify_tls: bool = True
    max_redirects: int = MAX_REDIRECTS
    warc_part_bytes: int = DEFAULT_WARC_PART_BYTES  # a new part starts past this size
    log_shards: int = 1
    # One URL's whole time: every try, backoff and redirect hop (None: 2 x deadline_s). Without
    # it, retries multiply the per-request deadline (about 4 minutes with the defaults).
    url_deadline_s: float | None = None

    @property
    def url_budget_s(self) -> float:
        return self.url_deadline_s if self.url_deadline_s is not None else 2 * self.deadline_s

    @property
    def deadline_s(self) -> float:
        return self.timeout_s * DEADLINE_FACTOR


@dataclass(frozen=True)
class Outcome:
    """What became of one URL: one row of the crawl log (schema ``CRAWL_LOG``)."""

    url: str  # normalised, or the input line as read when it is not a valid URL
    outcome: str  # fetched | refused | failed | skipped
    reason: str
    final_url: str = ""  # URL of the last response (after redirects); "" when none came
    status: int = 0  # HTTP status of the last response; 0 when none came
    attempts: int = 0  # times the last request was sent (1 + retries used)
    redirects: tuple[str, ...] = ()  # redirect targets followed, in order
    bytes: int = 0  # body bytes recorded for the last response
    truncated: bool = False  # the body reached --max-bytes and was cut
    warc_file: str = ""  # where the last response was recorded
    warc_offset: int = -1  # byte offset of that response record; -1 when none
    fetched_at: str = ""  # UTC time the outcome was decided
    error: str = ""  # detail: the exception, the refused address, the robots rule

    def row(self) -> dict:
        row = asdict(self)
        row["redirects"] = list(self.redirects)
        return row


class Stop(Exception):
    """A URL's crawl ends here with this outcome (raised from deep inside a fetch)."""

    def __init__(self, outcome: str, reason: str, error: str = "", status: int = 0):
        super().__init__(f"{outcome}({reason}) {error}".rstrip())
        self.outcome, self.reason, self.error, self.status = outcome, reason, error, status

    def again(self) -> Stop:
        """A fresh copy, to raise a stored stop again (in another thread, maybe)."""
        return Stop(self.outcome, self.reason, self.error, self.status)


@dataclass(frozen=True)
class Exchange:
    """One HTTP request and its response, as they go into the WARC file."""

    url: str
    ip: str  # the checked address the connection went to
    date: str  # WARC-Date: when the request was sent
    request_line: str  # "GET /path?q HTTP/1.1"
    request_headers: tuple[tuple[str, str], ...]
    protocol: str  # HTTP/1.0 | HTTP/1.1
    status: int
    reason: str
    headers: tuple[tuple[str, str], ...]
    body: bytes
    truncated: bool  # body cut at the byte cap

    def header(self, name: str) -> str:
        name = name.lower()
        return next((v for k, v in self.headers if k.lower() == name), "")


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id() -> str:
    """A name part unique to one run: UTC start time plus random bits, so that two runs started
    in the same second into one --out never write the same file."""
    return datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ") + "-" + os.urandom(3).hex()
