"""Asking a web search API: one request at a time, at most ``qps`` a second, within the daily
quota, retried with exponential backoff and jitter on 429, 5xx and lost connections, honouring
``Retry-After`` (seconds or an HTTP date); a vendor's answer judged by its engine
(:mod:`.engines`).

The clocks, the sleep and the jitter come in a :class:`Timing`, and the request is sent by a
``fetch`` function (:func:`urllib_fetch`), so that tests neither wait nor need a network. No
message made here holds a secret: keys travel in headers, a transport error names the
exception, never the URL, and every detail passes :func:`redact`.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import http.client
import logging
import random
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from wikisum.pipeline.search.engines import (
    FAIL,
    OK,
    RETRY,
    STOP,
    Credentials,
    Engine,
    Request,
    Verdict,
)
from wikisum.pipeline.search.webcache import QuotaLedger

log = logging.getLogger("wikisum.search")

DAILY_QUOTA = "daily_quota"  # a stop at --daily-quota (the vendor's stops: engines.py)
WAIT_TOO_LONG = "wait_too_long"  # a stop: the vendor asks to wait longer than MAX_WAIT_S
MAX_BODY_BYTES = 8 * 1024 * 1024  # an answer is a few KB; more is no search answer
BACKOFF_BASE_S, BACKOFF_CAP_S = 1.0, 60.0
MAX_WAIT_S = 900.0  # a longer Retry-After means a spent quota, not a moment's congestion


@dataclass
class Timing:
    """The clocks and the sleep a search uses, so that a test can run without waiting:
    ``monotonic`` paces requests, ``wall`` (epoch seconds) dates the quota's UTC day and reads
    HTTP dates, ``rng`` draws the backoff's jitter."""

    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    sleep: Callable[[float], None] = time.sleep
    rng: random.Random = field(default_factory=random.Random)


def default_timing() -> Timing:
    """The real clocks and sleep (a test replaces this function to run without waiting)."""
    return Timing()


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (and its URL-encoded spelling) replaced by ``***``."""
    from urllib.parse import quote, quote_plus

    for secret in secrets:
        if secret:
            for spelling in {secret, quote(secret, safe=""), quote_plus(secret)}:
                text = text.replace(spelling, "***")
    return text


# ------------------------------------------------------------------------------------------
# HTTP


class TransportError(Exception):
    """A request that got no HTTP answer: ``reason`` is ``timeout`` or ``connection``."""

    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are answers, not followed: urllib would send the key's header on to wherever
    the redirect points."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)

Fetch = Callable[[Request, float], tuple[int, dict[str, str], bytes]]


def urllib_fetch(request: Request, timeout: float) -> tuple[int, dict[str, str], bytes]:
    """GET ``request``: (status, headers with lower-case names, body of at most
    ``MAX_BODY_BYTES`` + 1 bytes). An answer of any status is returned, not raised.

    Raises:
        TransportError: no answer (a timeout, a refused or broken connection); its message
            names the exception's type and reason, never the URL.
    """
    req = urllib.request.Request(request.url, headers=request.headers, method="GET")
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return resp.status, _headers(resp.headers), resp.read(MAX_BODY_BYTES + 1)
    except urllib.error.HTTPError as exc:
        try:
            body = exc.read(MAX_BODY_BYTES + 1) if exc.fp is not None else b""
        except (OSError, http.client.HTTPException):
            body = b""
        finally:
            exc.close()
        return exc.code, _headers(exc.headers), body
    except TimeoutError:  # raised from None here and below: a traceback could quote the URL
        raise TransportError("timeout", f"no answer within {timeout:g} s") from None
    except urllib.error.URLError as exc:
        reason = exc.reason
        if isinstance(reason, TimeoutError):
            raise TransportError("timeout", f"no answer within {timeout:g} s") from None
        raise TransportError("connection", f"{type(reason).__name__}: {reason}") from None
    except (OSError, http.client.HTTPException) as exc:
        raise TransportError("connection", f"{type(exc).__name__}: {exc}") from None


def _headers(headers) -> dict[str, str]:
    return {k.lower(): v for k, v in (headers.items() if headers is not None else [])}


# ------------------------------------------------------------------------------------------
# Pace and retries


class RateLimiter:
    """At most ``qps`` requests a second: :meth:`wait` before each one."""

    def __init__(self, qps: float, timing: Timing):
        self.interval = 1.0 / qps
        self.timing = timing
        self.last: float | None = None  # when the last request went

    def slow_to(self, qps: float) -> None:
        """Never faster than ``qps`` from now on (a vendor's header said so)."""
        self.interval = max(self.interval, 1.0 / qps)

    def wait(self) -> None:
        now = self.timing.monotonic()
        if self.last is not None and self.last + self.interval > now:
            self.timing.sleep(self.last + self.interval - now)
            now = self.timing.monotonic()
        self.last = now


@dataclass
class Outcome:
    """How a query ended: ``kind`` OK (``urls``), FAIL or STOP, with a reason and detail."""

    kind: str
    urls: list[str] = field(default_factory=list)
    reason: str = ""
    detail: str = ""


class Client:
    """Asks one engine, paced, within the quota, retried with backoff and jitter on 429, 5xx
    and lost connections, honouring ``Retry-After`` (seconds or an HTTP date)."""

    def __init__(self, engine: Engine, endpoint: str, credentials: Credentials,
                 ledger: QuotaLedger, *, qps: float, retries: int, timeout: float,
                 fetch: Fetch = urllib_fetch, timing: Timing | None = None):
        self.engine, self.endpoint, self.credentials = engine, endpoint, credentials
        self.retries, self.timeout = retries, timeout
        self.ledger, self.fetch = ledger, fetch
        self.timing = timing or Timing()
        self.limiter = RateLimiter(qps, self.timing)
        self.secrets = credentials.secrets()
        self.sent = self.retried = 0
        self.statuses: Counter = Counter()

    def ask(self, query: str, count: int | None) -> Outcome:
        """Ask ``query`` for ``count`` results until an answer, a failure or a stop."""
        request = self.engine.request(self.endpoint, query, count, self.credentials)
        for attempt in range(self.retries + 1):
            if self.ledger.spent():
                return Outcome(STOP, reason=DAILY_QUOTA, detail=(
                    f"the daily quota of {self.ledger.limit:,} {self.engine.name} requests is "
                    f"reached ({self.ledger.day}, UTC)"))
            self.limiter.wait()
            self.ledger.spend()
            self.sent += 1
            verdict = self._send(request)
            if verdict.kind == OK:
                return Outcome(OK, urls=list(verdict.urls))
            if verdict.kind in (FAIL, STOP):
                return Outcome(verdict.kind, reason=verdict.reason, detail=self.clean(
                    verdict.detail))
            if attempt == self.retries:
                return Outcome(FAIL, reason=verdict.reason, detail=self.clean(
                    f"{verdict.detail} (after {self.retries + 1} tries)"))
            delay = self.delay(attempt, verdict.wait)
            if delay > MAX_WAIT_S:
                return Outcome(STOP, reason=WAIT_TOO_LONG, detail=self.clean(
                    f"{self.engine.name} asks to wait {delay:,.0f} s ({verdict.detail})"))
            self.retried += 1
            log.debug("search: %s, retry %d in %.1f s", self.clean(verdict.detail), attempt + 1,
                      delay)
            self.timing.sleep(delay)
        raise AssertionError("unreachable")  # the loop returns on its last attempt

    def _send(self, request: Request) -> Verdict:
        try:
            status, headers, body = self.fetch(request, self.timeout)
        except TransportError as exc:
            self.statuses[exc.reason] += 1
            return Verdict(RETRY, reason=exc.reason, detail=exc.detail)
        self.statuses[str(status)] += 1
        hint = self.engine.rate_hint(headers)
        if hint:  # never slower than one request per MAX_WAIT_S, whatever a header says
            self.limiter.slow_to(max(hint, 1.0 / MAX_WAIT_S))
        if len(body) > MAX_BODY_BYTES:
            return Verdict(FAIL, reason="too_large",
                           detail=f"an answer over {MAX_BODY_BYTES:,} bytes")
        return self.engine.judge(status, headers, body)

    def delay(self, attempt: int, wait: float | str | None) -> float:
        """Seconds before retry ``attempt + 1``: what the vendor asked for, else exponential
        backoff with jitter (half to all of ``BACKOFF_BASE_S * 2**attempt``, capped)."""
        if isinstance(wait, str):
            try:
                when = email.utils.parsedate_to_datetime(wait)
                if when.tzinfo is None:  # "-0000": UTC, as HTTP dates are
                    when = when.replace(tzinfo=dt.timezone.utc)
                wait = max(0.0, when.timestamp() - self.timing.wall())
            except (TypeError, ValueError, IndexError, OverflowError):
                wait = None
        if isinstance(wait, float):
            return wait
        backoff = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** attempt)
        return backoff * (0.5 + 0.5 * self.timing.rng.random())

    def clean(self, text: str) -> str:
        return redact(text, self.secrets)
