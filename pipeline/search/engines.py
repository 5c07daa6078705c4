"""The web search APIs ``wikisum search --engine`` asks: how each one's request is made, how its
answer is read, and what each of its errors means.

An engine turns (endpoint, query, credentials) into a :class:`Request` and an HTTP answer into
a :class:`Verdict`: the URLs it ranked (``ok``), a momentary refusal worth waiting for
(``retry``: a rate limit, a server error), a refusal of this one query (``fail``), or an end to
the run (``stop``: the vendor's quota is spent, or it refuses the key or the endpoint, so that
every further query would be refused the same way). Nothing here sends a request.

The numbers below are the vendors' documented ones (docs/web-search.md gives the sources):

- Google's Custom Search JSON API: ``GET https://www.googleapis.com/customsearch/v1?cx=&q=&num=``,
  results in ``items[].link``, at most 10 a request (``num`` 1-10); 100 queries a day free,
  then $5 per 1,000, at most 10,000 a day. Errors are ``{"error": {"code", "message",
  "errors": [{"reason"}], "status", "details"}}``; a spent daily quota comes as 403
  ``dailyLimitExceeded`` or as 429 ``rateLimitExceeded`` whose message names the
  "Queries per day" limit.
- Brave's Search API: ``GET https://api.search.brave.com/res/v1/web/search?q=&count=`` with the
  key in ``X-Subscription-Token``, results in ``web.results[].url``, at most 20 a request, a
  query of at most 400 characters and 50 words; 429 when over the plan's rate or its monthly
  quota, ``X-RateLimit-Limit/Policy/Remaining/Reset`` giving each window (per second first).
- SearXNG, self-hosted: ``GET {instance}/search?q=&format=json``, results in ``results[].url``,
  no key; 403 when the instance has not enabled the JSON format (``search: formats`` in its
  settings.yml), 429 from its limiter.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, ClassVar
from urllib.parse import urlencode, urlsplit

OK, RETRY, FAIL, STOP = "ok", "retry", "fail", "stop"
# Why a run stops (Verdict.reason of a STOP).
VENDOR_QUOTA = "vendor_quota"  # the vendor says the quota is spent
REFUSED = "refused"  # the vendor refuses the key, the account or the endpoint
DETAIL_CHARS = 300  # of a vendor's error message kept in a failure's detail


@dataclass(frozen=True)
class Credentials:
    """What an engine needs from the environment. Never printed: its repr names no value."""

    key: str | None = None
    cx: str | None = None  # Google's search engine ID

    def __repr__(self) -> str:
        return "Credentials(***)"

    __str__ = __repr__

    def secrets(self) -> tuple[str, ...]:
        """The values kept out of every file, message and log line."""
        return tuple(v for v in (self.key, self.cx) if v)


@dataclass(frozen=True)
class Request:
    """One HTTP GET. ``url`` holds no secret (keys travel in ``headers``)."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """What an answer means: ``kind`` OK (``urls`` as ranked), RETRY, FAIL or STOP, with a
    ``reason`` (a counter name) and a ``detail`` for the summary; ``wait`` is how long the
    vendor asked to be left alone (seconds), where it said."""

    kind: str
    urls: tuple[str, ...] = ()
    reason: str = ""
    detail: str = ""
    wait: float | str | None = None  # seconds, or an HTTP date as the vendor sent it


class Engine:
    """A web search API. Subclasses set the class attributes and :meth:`params`,
    :meth:`results` and, where the vendor says more than its status code, :meth:`judge`.

    Attributes:
        name: ``--engine NAME``.
        endpoint: the default URL asked (SearXNG: none; ``--endpoint`` names the instance).
        env: the environment variables it needs, in order.
        qps: the default queries per second.
        daily_quota: the default queries per UTC day (None: no daily limit).
        price_per_1000: the vendor's documented USD price per 1,000 queries (None: none).
        price_note: where the price comes from, as the dry run says it.
        per_request: the most results one request returns (None: whatever the vendor sends).
    """

    name: ClassVar[str]
    endpoint: ClassVar[str | None]
    env: ClassVar[tuple[str, ...]] = ()
    qps: ClassVar[float] = 1.0
    daily_quota: ClassVar[int | None] = None
    price_per_1000: ClassVar[float | None] = None
    price_note: ClassVar[str] = ""
    per_request: ClassVar[int | None] = None

    def url(self, endpoint: str) -> str:
        """The URL queries go to, from ``--endpoint`` (or the default)."""
        return endpoint

    def count(self, k: int) -> int | None:
        """How many results to ask for to return ``k`` (None: the vendor's page as it is).
        Asking for a whole page costs the same as asking for fewer, and leaves room for the
        Wikipedia pages that are dropped after."""
        return self.per_request

    def query_problem(self, query: str) -> str | None:
        """Why the vendor would refuse ``query`` whatever is tried (a failure, never asked)."""
        return None

    def request(self, endpoint: str, query: str, count: int | None,
                credentials: Credentials) -> Request:
        params = self.params(query, count, credentials)
        return Request(f"{self.url(endpoint)}?{urlencode(params)}",
                       self.headers(credentials))

    def params(self, query: str, count: int | None, credentials: Credentials) -> dict:
        raise NotImplementedError

    def headers(self, credentials: Credentials) -> dict[str, str]:
        return {"Accept": "application/json"}

    def identity(self, credentials: Credentials) -> tuple:
        """What besides the endpoint, query and count decides an answer (a cache key part);
        never the key."""
        return ()

    def rate_hint(self, headers: dict[str, str]) -> float | None:
        """Queries per second the vendor's headers allow this account, where they say."""
        return None

    def results(self, data: Any) -> list[str] | str:
        """The URLs of a parsed answer, in rank order, or why its shape is wrong."""
        raise NotImplementedError

    def judge(self, status: int, headers: dict[str, str], body: bytes) -> Verdict:
        """What an answer means (headers with lower-case names)."""
        if status == 200:
            return self.read(body)
        return self.judge_error(status, headers, error_json(body))

    def read(self, body: bytes) -> Verdict:
        try:
            data = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as exc:
            return Verdict(FAIL, reason="bad_json", detail=f"not JSON ({type(exc).__name__})")
        urls = self.results(data)
        if isinstance(urls, str):
            return Verdict(FAIL, reason="bad_shape", detail=urls)
        return Verdict(OK, urls=tuple(urls))

    def judge_error(self, status: int, headers: dict[str, str], error: Any) -> Verdict:
        return by_status(self.name, status, headers, message_of(error))


def by_status(name: str, status: int, headers: dict[str, str], message: str) -> Verdict:
    """The meaning of a status code alone: 429 and 5xx are retried; 401, 402, 403, 404, 405 and
    a redirect stop the run (every query would get the same); any other code fails this
    query."""
    detail = f"HTTP {status}" + (f": {message}" if message else "")
    if status == 429:
        return Verdict(RETRY, reason="rate_limited", detail=detail,
                       wait=retry_after(headers.get("retry-after")))
    if status >= 500:
        return Verdict(RETRY, reason="server_error", detail=detail,
                       wait=retry_after(headers.get("retry-after")))
    if status in (401, 402, 403):
        return Verdict(STOP, reason=REFUSED, detail=f"{name} refused the request ({detail})")
    if status in (404, 405):
        return Verdict(STOP, reason=REFUSED,
                       detail=f"{name} has no such search method there ({detail}); is "
                              "--endpoint right?")
    if 300 <= status < 400:
        return Verdict(STOP, reason=REFUSED,
                       detail=f"{name} answered with a redirect ({detail}); give --endpoint the "
                              "URL it redirects to")
    return Verdict(FAIL, reason=f"http_{status}", detail=detail)


def retry_after(value: str | None) -> float | str | None:
    """A ``Retry-After`` value: seconds (a float), an HTTP date (the string, turned into
    seconds by the caller, who knows the time), or None."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        return value
    return max(0.0, seconds) if seconds == seconds else None


def error_json(body: bytes) -> Any:
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def message_of(error: Any) -> str:
    """A vendor's error message from the usual places, shortened; "" when there is none."""
    if isinstance(error, dict):
        inner = error.get("error", error)
        if isinstance(inner, dict):
            for key in ("message", "detail"):
                if isinstance(inner.get(key), str):
                    return inner[key][:DETAIL_CHARS]
        elif isinstance(inner, str):
            return inner[:DETAIL_CHARS]
    return ""


def url_list(items: Any, key: str, where: str) -> list[str] | str:
    """``[item[key] for item in items]`` where every item is an object whose ``key`` is a
    string; else what is wrong."""
    if not isinstance(items, list):
        return f"{where} is not a list"
    urls = []
    for n, item in enumerate(items):
        if not isinstance(item, dict):
            return f"{where}[{n}] is not an object"
        url = item.get(key)
        if not isinstance(url, str):
            return f"{where}[{n}].{key} is not a string"
        urls.append(url)
    return urls


# ------------------------------------------------------------------------------------------


class Google(Engine):
    name = "google"
    endpoint = "https://www.googleapis.com/customsearch/v1"
    env = ("WIKISUM_GOOGLE_API_KEY", "WIKISUM_GOOGLE_CX")
    # Not published per second; Google's console shows a per-minute quota. One a second stays
    # under it and keeps a day's 10,000 within three hours.
    qps = 1.0
    daily_quota = 100  # the free allowance: nothing is billed unless the user raises it
    price_per_1000 = 5.0
    price_note = ("Google's documented price for queries beyond the 100 free each day, "
                  "at most 10,000 a day")
    per_request = 10

    # errors[].reason / details[].reason values that mean the day's quota is spent
    QUOTA_REASONS = frozenset({"dailyLimitExceeded", "dailyLimitExceededUnreg", "quotaExceeded"})
    # ... that refuse the key, the project or its billing (every query would get the same)
    REFUSING_REASONS = frozenset({
        "keyInvalid", "keyExpired", "API_KEY_INVALID", "API_KEY_EXPIRED", "accessNotConfigured",
        "SERVICE_DISABLED", "billingNotEnabled", "BILLING_DISABLED", "forbidden",
        "accessDenied", "ipRefererBlocked", "API_KEY_SERVICE_BLOCKED", "CONSUMER_INVALID"})
    PER_DAY = re.compile(r"per\s+day", re.IGNORECASE)

    def params(self, query, count, credentials):
        # The key travels in the X-Goog-Api-Key header, which Google's API platform accepts for
        # every API in place of ?key=, so that no URL (and no error that quotes one) holds it.
        return {"cx": credentials.cx or "", "q": query, "num": count}

    def headers(self, credentials):
        return {"Accept": "application/json", "X-Goog-Api-Key": credentials.key or ""}

    def identity(self, credentials):
        return (credentials.cx or "",)

    def results(self, data):
        if not isinstance(data, dict):
            return "the answer is not a JSON object"
        if "items" not in data:  # Google leaves items out when nothing was found
            return []
        return url_list(data["items"], "link", "items")

    def judge_error(self, status, headers, error):
        message = message_of(error)
        reasons = google_reasons(error)
        detail = f"HTTP {status}" + (f" {', '.join(sorted(reasons))}" if reasons else "") + (
            f": {message}" if message else "")
        if reasons & self.QUOTA_REASONS or (
                (status == 429 or "rateLimitExceeded" in reasons or "RATE_LIMIT_EXCEEDED"
                 in reasons) and self.PER_DAY.search(message)):
            return Verdict(STOP, reason=VENDOR_QUOTA,
                           detail=f"google says the daily quota is spent ({detail})")
        if reasons & self.REFUSING_REASONS:
            return Verdict(STOP, reason=REFUSED, detail=f"google refused the request ({detail})")
        if reasons & {"rateLimitExceeded", "userRateLimitExceeded", "RATE_LIMIT_EXCEEDED"}:
            return Verdict(RETRY, reason="rate_limited", detail=detail,
                           wait=retry_after(headers.get("retry-after")))
        verdict = by_status(self.name, status, headers, message)
        return Verdict(verdict.kind, reason=verdict.reason,
                       detail=verdict.detail if verdict.kind == STOP else detail,
                       wait=verdict.wait)


def google_reasons(error: Any) -> set[str]:
    """The ``reason`` of every ``errors[]`` and ``details[]`` entry of a Google error."""
    reasons: set[str] = set()
    inner = error.get("error") if isinstance(error, dict) else None
    if not isinstance(inner, dict):
        return reasons
    for key in ("errors", "details"):
        entries = inner.get(key)
        if isinstance(entries, list):
            reasons |= {e["reason"] for e in entries
                        if isinstance(e, dict) and isinstance(e.get("reason"), str)}
    return reasons


class Brave(Engine):
    name = "brave"
    endpoint = "https://api.search.brave.com/res/v1/web/search"
    env = ("WIKISUM_BRAVE_API_KEY",)
    qps = 1.0  # the free plan's limit; paid plans allow more (the X-RateLimit-Limit header)
    daily_quota = None  # Brave's quota is monthly; its 429 stops the run when it is spent
    price_per_1000 = 5.0
    price_note = "Brave's documented price of its Search plan (a monthly free credit aside)"
    per_request = 20
    MAX_QUERY_CHARS, MAX_QUERY_WORDS = 400, 50

    def query_problem(self, query):
        if len(query) > self.MAX_QUERY_CHARS or len(query.split()) > self.MAX_QUERY_WORDS:
            return "query_too_long"
        return None

    def params(self, query, count, credentials):
        return {"q": query, "count": count}

    def headers(self, credentials):
        return {"Accept": "application/json", "X-Subscription-Token": credentials.key or ""}

    def rate_hint(self, headers):
        limits = numbers(headers.get("x-ratelimit-limit"))
        return limits[0] if limits and limits[0] > 0 else None

    def results(self, data):
        if not isinstance(data, dict):
            return "the answer is not a JSON object"
        web = data.get("web")
        if web is None:  # no web results at all
            return []
        if not isinstance(web, dict):
            return "web is not an object"
        return url_list(web.get("results", []), "url", "web.results")

    def judge_error(self, status, headers, error):
        message = message_of(error)
        code = ""
        if isinstance(error, dict) and isinstance(error.get("error"), dict):
            code = str(error["error"].get("code") or "")
        detail = f"HTTP {status}" + (f" {code}" if code else "") + (
            f": {message}" if message else "")
        if status == 429 and (brave_quota_spent(headers) or "QUOTA" in code.upper()
                              or "quota" in message.lower()):
            return Verdict(STOP, reason=VENDOR_QUOTA,
                           detail=f"brave says the plan's quota is spent ({detail})")
        verdict = by_status(self.name, status, headers, message)
        wait = verdict.wait
        if verdict.kind == RETRY and wait is None:
            resets = numbers(headers.get("x-ratelimit-reset"))
            wait = resets[0] if resets else None
        return Verdict(verdict.kind, reason=verdict.reason,
                       detail=verdict.detail if verdict.kind == STOP else detail, wait=wait)


def numbers(value: str | None) -> list[float]:
    """``"1, 15000"`` -> [1.0, 15000.0]; [] for anything else."""
    if not value:
        return []
    try:
        return [float(part) for part in value.split(",")]
    except ValueError:
        return []


def brave_quota_spent(headers: dict[str, str]) -> bool:
    """Whether a window longer than a second (the month's) has nothing left:
    ``X-RateLimit-Remaining: 1, 0`` with ``X-RateLimit-Policy: 1;w=1, 15000;w=2592000``."""
    remaining = numbers(headers.get("x-ratelimit-remaining"))
    windows = [m.group(1) for m in re.finditer(r"w=(\d+)", headers.get("x-ratelimit-policy", ""))]
    for n, left in enumerate(remaining):
        window = float(windows[n]) if n < len(windows) else (1.0 if n == 0 else 2.0)
        if window > 1 and left <= 0:
            return True
    return False


class SearXNG(Engine):
    name = "searxng"
    endpoint = None
    qps = 1.0  # an instance asks other engines in turn, which block a client that hurries
    price_note = "self-hosted: no price"

    def url(self, endpoint):
        return endpoint.rstrip("/") + "/search"

    def params(self, query, count, credentials):
        return {"q": query, "format": "json"}

    def results(self, data):
        if not isinstance(data, dict):
            return "the answer is not a JSON object"
        if "results" not in data:
            return "no results list"
        return url_list(data["results"], "url", "results")

    def judge_error(self, status, headers, error):
        verdict = by_status(self.name, status, headers, message_of(error))
        if status == 403:
            return Verdict(STOP, reason=REFUSED,
                           detail="searxng refused the request (HTTP 403): has the instance "
                                  "enabled the JSON format (search: formats: [html, json] in "
                                  "its settings.yml)?")
        return verdict


ENGINES: dict[str, Engine] = {e.name: e for e in (Google(), Brave(), SearXNG())}


def endpoint_problem(engine: Engine, endpoint: str) -> str | None:
    """Why ``endpoint`` cannot be asked: not http(s), no host, credentials or a query in it, or
    plain http to anywhere but this machine for an engine that sends a key."""
    try:
        parts = urlsplit(endpoint)
        host = (parts.hostname or "").lower()
    except ValueError:
        return "is not a URL"
    if parts.scheme not in ("http", "https") or not host:
        return "must be an http:// or https:// URL"
    if parts.username or parts.password:
        return "must not hold a user name or password"
    if parts.query or parts.fragment:
        return "must not hold a query (?...) or a fragment (#...)"
    if engine.env and parts.scheme == "http" and host not in ("127.0.0.1", "localhost", "::1"):
        return f"must be https:// (the {engine.name} key would travel unencrypted)"
    return None
