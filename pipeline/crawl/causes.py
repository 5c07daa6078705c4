"""Why a request failed, in one word of a small vocabulary: what the summaries of ``wikisum
crawl`` and ``wikisum cc-fetch`` count failures by, and how they tell a run that the network
failed whole (every request it made failed for a network reason) from one with some dead links.

    dns          the host name did not resolve
    refused      nothing listens there (connection refused)
    reset        the connection was dropped (reset, aborted, closed before the answer ended)
    timeout      no connection or no complete answer in time
    tls          TLS handshake or certificate failure
    unreachable  no route to the host or network
    connection   another socket error
    http_4xx     the server answered 4xx
    http_5xx     the server answered 5xx (after the retries)
    bad_record   cc-fetch: the bytes fetched are not the capture's record
    invalid_url  not an http(s) URL with a host (nothing was requested)
    other        anything else (malformed HTTP, redirect trouble, an unforeseen exception)

The first seven are network causes (``NETWORK``). :func:`cause_of` takes the exception itself
where there is one, else the message the logs keep (``"gaierror: [Errno -2] Name or service
not known"``, ``"HTTP 503"``), with the job's own reason word and HTTP status when known.
"""

from __future__ import annotations

import errno
import http.client
import re
import socket
import ssl
import urllib.error
from collections.abc import Iterable, Mapping

DNS, REFUSED, RESET, TIMEOUT, TLS = "dns", "refused", "reset", "timeout", "tls"
UNREACHABLE, CONNECTION = "unreachable", "connection"
HTTP_4XX, HTTP_5XX, BAD_RECORD, INVALID_URL, OTHER = (
    "http_4xx", "http_5xx", "bad_record", "invalid_url", "other")
CAUSES = (DNS, REFUSED, RESET, TIMEOUT, TLS, UNREACHABLE, CONNECTION, HTTP_4XX, HTTP_5XX,
          BAD_RECORD, INVALID_URL, OTHER)
NETWORK = frozenset({DNS, REFUSED, RESET, TIMEOUT, TLS, UNREACHABLE, CONNECTION})

# The jobs' own reason words whose cause needs no message.
_REASONS = {
    "dns": DNS, "tls": TLS, "timeout": TIMEOUT, "url_deadline": TIMEOUT,
    "invalid_url": INVALID_URL,
    # cc-fetch's record checks (pipeline/ccfetch/fetch.py)
    **dict.fromkeys(("too_large", "no_range", "range_mismatch", "short_read", "not_gzip",
                     "truncated", "extra_data", "not_warc", "wrong_type", "wrong_url"),
                    BAD_RECORD),
}
_UNREACHABLE_ERRNOS = frozenset({errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN,
                                 errno.EHOSTDOWN})
# Messages as the jobs log them: "TypeName: text" of the exception, or its text alone. The
# first pattern that matches wins: "SSLError: The handshake operation timed out" is "tls".
_TEXT = [
    (DNS, re.compile(r"gaierror|Name or service not known|nodename nor servname|name resolution"
                     r"|No address associated with hostname|getaddrinfo failed|\[Errno -\d+\]")),
    (TLS, re.compile(r"SSL|CERTIFICATE_VERIFY_FAILED|certificate verify")),
    (REFUSED, re.compile(r"ConnectionRefused|Connection refused|\[Errno 111\]|\[Errno 61\]"
                         r"|\[WinError 10061\]")),
    (RESET, re.compile(r"ConnectionReset|Connection reset|ConnectionAborted|BrokenPipe"
                       r"|Broken pipe|RemoteDisconnected|Remote end closed|IncompleteRead")),
    (UNREACHABLE, re.compile(r"Network is unreachable|No route to host|Host is unreachable"
                             r"|Network is down|Host is down|\[Errno (?:100|101|112|113)\]")),
    (TIMEOUT, re.compile(r"[Tt]imeout|timed out|no answer within|no complete response within")),
]
_HTTP_STATUS = re.compile(r"\bHTTP(?: Error)? ([1-5]\d\d)\b")
_URL = re.compile(r"https?://\S*")  # a URL in a message says nothing of the cause
_CONNECTION = re.compile(r"(?:^|: )connection: ")


def cause_of(error: BaseException | str, reason: str = "", status: int = 0) -> str:
    """The cause (one of ``CAUSES``) of a failed request.

    Args:
        error: the exception raised, or the message logged for it.
        reason: the job's reason word for the failure ("dns", "http_status", "not_gzip", ...),
            when known; it settles the cause where it names one.
        status: the HTTP status answered, when known (0: none came).
    """
    if isinstance(error, BaseException):
        cause = _of_exception(error)
        if cause != OTHER:
            return cause
    if reason in _REASONS:
        return _REASONS[reason]
    if 400 <= status < 600:
        return HTTP_4XX if status < 500 else HTTP_5XX
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    text = _URL.sub("URL", text)
    for cause, pattern in _TEXT:
        if pattern.search(text):
            return cause
    m = _HTTP_STATUS.search(text)
    if m and int(m.group(1)) >= 400:
        return HTTP_4XX if int(m.group(1)) < 500 else HTTP_5XX
    # Another socket error: the reason says so, or cc-fetch's lookup message does
    # ("URL: connection: OSError: ...").
    return CONNECTION if reason == "connection" or _CONNECTION.search(text) else OTHER


def _of_exception(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):  # before URLError: it is one
        return cause_of("", status=exc.code)
    if isinstance(exc, urllib.error.URLError):
        return cause_of(exc.reason) if isinstance(exc.reason, (BaseException, str)) else OTHER
    if isinstance(exc, socket.gaierror):
        return DNS
    if isinstance(exc, ssl.SSLError):
        return TLS
    if isinstance(exc, ConnectionRefusedError):
        return REFUSED
    if isinstance(exc, (ConnectionResetError, ConnectionAbortedError, BrokenPipeError,
                        http.client.IncompleteRead)):
        return RESET
    if isinstance(exc, TimeoutError):
        return TIMEOUT
    if isinstance(exc, OSError):
        return UNREACHABLE if exc.errno in _UNREACHABLE_ERRNOS else CONNECTION
    # The jobs' own errors (crawl's FetchError and Stop, cc-fetch's RequestError): their
    # reason word and message (read by name: this module imports neither job).
    reason = getattr(exc, "reason", None)
    detail = getattr(exc, "detail", getattr(exc, "error", None))
    if isinstance(reason, str) and isinstance(detail, str):
        return cause_of(detail, reason, getattr(exc, "status", 0) or 0)
    inner = exc.__cause__ or exc.__context__
    return _of_exception(inner) if inner is not None else OTHER


def example(url: str, error: str, limit: int = 400) -> str:
    """One failure as the summaries quote it: the message, led by the URL requested unless
    the message names it already (cc-fetch's messages name the index or data URL asked)."""
    if error.startswith(("http://", "https://")):
        text = error
    else:
        text = f"{url}: {error}" if error else url
    return text if len(text) <= limit else text[:limit - 3] + "..."


# ------------------------------------------------------------------------------------------
# Summaries


CAUSE = "cause"  # the tallies of failures, ``(CAUSE, "STAGE:CAUSE")``


def tally_key(stage: str, cause: str) -> tuple[str, str]:
    """The tally of one failure: ``(CAUSE, "STAGE:CAUSE")`` (:mod:`wikisum.core.accounting`;
    not an accounted stage)."""
    return CAUSE, f"{stage}:{cause}"


def failure(stage: str, url: str, error: str, reason: str, status: int, at: str
            ) -> tuple[tuple[str, str], tuple[str, str, str]]:
    """One failed outcome -> its tally (:func:`tally_key`) and (time, URL, example): what
    :func:`failures_by_cause` reads (the jobs keep the earliest per tally)."""
    return tally_key(stage, cause_of(error, reason, status)), (at, url, example(url, error))


def failures_by_cause(counts: Mapping[str, int], firsts: Iterable[tuple[tuple[str, str], tuple]],
                      attempted: Mapping[str, int]) -> dict:
    """A run's failures by cause, and per stage how many of the requests it made failed for a
    network reason.

    Args:
        counts: the run's failure tallies summed, ``{"STAGE:CAUSE": n}`` (those under
            :data:`CAUSE`).
        firsts: (tally key, (time, URL, example)) of the earliest failure of each key.
        attempted: per stage ("lookup", "fetch"), the URLs it made requests for.

    Returns:
        ``causes``: {cause: {count, example}} (the earliest failure of the cause), and
        ``network``: {stage: {attempted, failed (for a network reason), first (the earliest
        such failure, "" when none)}}.
    """
    earliest = {key[1]: first for key, first in firsts if key[0] == CAUSE}
    totals: dict[str, int] = {}
    firsts_of: dict[str, tuple] = {}  # cause -> its earliest failure
    network = {stage: {"attempted": n, "failed": 0, "first": None}
               for stage, n in attempted.items()}

    def earlier(a: tuple | None, b: tuple | None) -> tuple | None:
        return b if a is None or (b is not None and b < a) else a

    for key, n in sorted(counts.items()):
        stage, cause = key.split(":", 1)
        first = earliest.get(key)
        totals[cause] = totals.get(cause, 0) + n
        firsts_of[cause] = earlier(firsts_of.get(cause), first)
        if cause in NETWORK and stage in network:
            network[stage]["failed"] += n
            network[stage]["first"] = earlier(network[stage]["first"], first)
    return {
        "causes": {c: {"count": n, "example": (firsts_of[c] or ("", "", ""))[2]}
                   for c, n in totals.items()},
        "network": {stage: {**net, "first": (net["first"] or ("", "", ""))[2]}
                    for stage, net in network.items()},
    }


def network_failure(job: str, network: Mapping[str, dict], words: Mapping[str, str],
                    hint: Mapping[str, str]) -> str | None:
    """The line saying that the network failed a run whole, or None: a stage (in the order of
    ``words``) that made requests and whose every request failed for a network reason.

    Args:
        job: the command's name ("cc-fetch").
        network: the summary's ``network``.
        words: stage -> what one request of it is called ("look-up").
        hint: stage -> what to check besides the network ("--index-url").
    """
    for stage, word in words.items():
        s = network.get(stage)
        if s and s["attempted"] and s["failed"] >= s["attempted"]:
            return (f"{job}: every {word} failed for a network reason: {s['failed']} of "
                    f"{s['attempted']} (first: {s['first']}); check the network"
                    + (f" or {hint[stage]}" if hint.get(stage) else ""))
    return None


def network_warnings(job: str, network: Mapping[str, dict], words: Mapping[str, str]
                     ) -> list[str]:
    """One warning line per stage where some requests, not all, failed for a network
    reason (the run's other requests went through)."""
    lines = []
    for stage, word in words.items():
        s = network.get(stage)
        if s and 0 < s["failed"] < s["attempted"]:
            plural = word + ("es" if word.endswith(("ch", "sh", "s", "x")) else "s")
            lines.append(f"{job}: warning: {s['failed']} of {s['attempted']} {plural} failed "
                         f"for a network reason (first: {s['first']}); a rerun with the same "
                         "--out tries them again")
    return lines


def format_causes(causes: Mapping[str, dict], indent: str = "  ") -> list[str]:
    """The summary's ``causes`` as the closing lines print them, most frequent first."""
    if not causes:
        return []
    rank = {c: i for i, c in enumerate(CAUSES)}
    lines = [f"{indent}failures by cause:"]
    for cause in sorted(causes, key=lambda c: (-causes[c]["count"], rank.get(c, len(CAUSES)),
                                               c)):
        entry = causes[cause]
        lines.append(f"{indent}  {cause:12s} {entry['count']:>8d}  e.g. {entry['example']}")
    return lines
