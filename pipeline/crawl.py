"""``wikisum crawl``: fetch cited and search-result pages into WARC files, politely and safely.

Common Crawl misses many of the pages Wikipedia cites; ``wikisum ingest`` lists them in
``missing_urls.txt``. This module fetches such lists into WARC files that the same ``ingest``
reads. Pure functions and small objects first (URL and address checks, size parsing, robots
policy, one HTTP exchange, redirects and retries, WARC writing, outcome records), then the Beam
job that wires them together:

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
"""

from __future__ import annotations

import http.client
import io
import ipaddress
import json
import logging
import os
import re
import socket
import ssl
import threading
import time
import urllib.robotparser
import weakref
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from urllib.parse import urljoin, urlsplit

import apache_beam as beam
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics
from apache_beam.pvalue import TaggedOutput
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from wikisum.pipeline import schemas, shards
from wikisum.pipeline.ingest import expand_patterns
from wikisum.pipeline.records import stable_hash
from wikisum.pipeline.urls import normalize_url

log = logging.getLogger("wikisum.crawl")

# Outcomes, and the reasons each one comes with.
FETCHED = "fetched"  # a 2xx response was recorded (reason "ok")
REFUSED = "refused"  # scheme | address | robots: never requested, by policy
FAILED = "failed"  # invalid_url | dns | timeout | connection | tls | bad_response | http_status
#                    | redirect_loop | too_many_redirects | bad_redirect | robots_unavailable
#                    | error (an unforeseen exception, with its text)
SKIPPED = "skipped"  # already_done: an earlier run in --out settled it
OUTCOMES = (FETCHED, REFUSED, FAILED, SKIPPED)

SCHEMES = {"http": 80, "https": 443}
REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
MAX_REDIRECTS = 10
ROBOTS_MAX_BYTES = 512 * 1024  # RFC 9309 asks crawlers to parse at least 500 KiB
MAX_CRAWL_DELAY_S = 60.0  # a robots.txt Crawl-delay above this is capped, not obeyed
DEADLINE_FACTOR = 3.0  # a whole request (connect to last byte) gets this many --timeout's
READ_CHUNK = 64 * 1024
DEFAULT_USER_AGENT = "wikisum-crawler/0.1 (+research crawl of pages cited by Wikipedia)"
DEFAULT_MAX_BYTES = 10 * 1024 * 1024
DEFAULT_WARC_PART_BYTES = 1024 * 1024 * 1024
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.8"

# Addresses never fetched, whatever --allow-private says: cloud instance metadata services
# (AWS, GCP, Azure, OpenStack share 169.254.169.254; AWS's IPv6 one), and addresses no server
# listens on.
METADATA_ADDRESSES = frozenset({ipaddress.ip_address("169.254.169.254"),
                                ipaddress.ip_address("fd00:ec2::254")})

LOG_GLOB = "crawl_log-*.parquet"


# ------------------------------------------------------------------------------------------
# Configuration and records


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


# ------------------------------------------------------------------------------------------
# Pure checks


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1}
for _power, _letter in enumerate("kmgt", start=1):
    for _suffix in (_letter, f"{_letter}b", f"{_letter}ib"):
        _UNITS[_suffix] = 1024 ** _power


def parse_size(text: str | int) -> int:
    """``"10MB"``, ``"512KB"``, ``"1.5M"``, ``"2GiB"`` or ``"4096"`` -> bytes.

    Units are binary (KB = KiB = 1024 bytes), as wget counts them.

    Raises:
        ValueError: naming the value, for anything else or for a size below one byte.
    """
    if isinstance(text, int):
        value = text
    else:
        m = _SIZE.match(str(text))
        if not m or m.group(2).lower() not in _UNITS:
            raise ValueError(f"not a size: {text!r} (use e.g. 10MB, 512KB or 4096)")
        value = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if value < 1:
        raise ValueError(f"size must be at least 1 byte: {text!r}")
    return value


def check_url(raw: str) -> tuple[str, str]:
    """An input URL -> (key, refusal): the normalised URL and "", or the stripped input and why
    it cannot be crawled: ``scheme`` (a scheme other than http/https) or ``invalid_url``."""
    text = raw.strip()
    try:
        scheme = urlsplit(text).scheme.lower()
    except ValueError:
        return text, "invalid_url"
    if scheme and scheme not in SCHEMES:
        return text, "scheme"
    url = normalize_url(text) if scheme else None
    if url is None:
        return text, "invalid_url"
    return url, ""


def host_of(url: str) -> str:
    """The politeness key of a normalised URL: its host name, without port."""
    return urlsplit(url).hostname or ""


def origin_of(url: str) -> str:
    """scheme://host[:port], the scope of one robots.txt (RFC 9309)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def address_refusal(address: str, allow_private: bool = False) -> str | None:
    """Why a resolved address may not be fetched, or None when it may.

    Cloud metadata, unspecified and multicast addresses are always refused; loopback, private,
    link-local, reserved and other non-global ranges (shared 100.64/10, documentation, ...)
    are refused unless ``allow_private``. IPv4 addresses embedded in IPv6 ones (mapped
    ``::ffff:a.b.c.d``, 6to4 ``2002::/16``) are judged as the IPv4 address.
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone ("fe80::1%eth0")
    except ValueError:
        return "unparsable"
    if ip.version == 6:
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is not None:
            ip = embedded
    if ip in METADATA_ADDRESSES:
        return "cloud_metadata"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_multicast:
        return "multicast"
    if allow_private:
        return None
    for name in ("loopback", "link_local", "reserved", "private"):
        if getattr(ip, f"is_{name}"):
            return name
    if not ip.is_global:
        return "not_global"
    return None


def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, in the resolver's order (no duplicates)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def checked_addresses(host: str, port: int, allow_private: bool,
                      resolve: Callable[[str, int], list[str]] = resolve_host) -> list[str]:
    """The addresses to connect to. Every address the name resolves to must pass
    ``address_refusal``: a name that resolves to one private address among public ones is
    refused whole (fail closed).

    Raises:
        Stop: refused(address), or failed(dns) when the name does not resolve.
    """
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError) as exc:
        raise Stop(FAILED, "dns", f"{host}: {exc}") from None
    if not addresses:
        raise Stop(FAILED, "dns", f"{host}: no address")
    for address in addresses:
        why = address_refusal(address, allow_private)
        if why:
            raise Stop(REFUSED, "address", f"{host} resolves to {address} ({why})")
    return addresses


def is_done(outcome: str, status: int) -> bool:
    """Does a logged outcome settle its URL, so that a resumed run skips it?

    Fetched and refused URLs are done (a refusal is final: to try refused URLs again, say with
    --allow-private, crawl into a new --out), and so are 4xx failures, which a retry would not
    change, except 408 and 429 ("try later"). Timeouts, connection errors, 5xx, redirect
    trouble and robots.txt outages are tried again.
    """
    if outcome in (FETCHED, REFUSED):
        return True
    if outcome == FAILED:
        return 400 <= status < 500 and status not in (408, 429)
    return False


# ------------------------------------------------------------------------------------------
# robots.txt


@dataclass(frozen=True)
class RobotsPolicy:
    """What one origin's robots.txt allows. ``stop`` (when set) ends every URL of the origin:
    the robots.txt could not be had (5xx, unreachable) or its address was refused."""

    rules: urllib.robotparser.RobotFileParser | None = None  # None: everything allowed
    stop: Stop | None = None
    crawl_delay_s: float = 0.0

    def refusal(self, url: str, user_agent: str) -> Stop | None:
        if self.stop is not None:
            return self.stop.again()
        if self.rules is not None and not self.rules.can_fetch(user_agent, url):
            return Stop(REFUSED, "robots", f"disallowed by {origin_of(url)}/robots.txt")
        return None


def robots_policy(status: int, body: bytes, user_agent: str) -> RobotsPolicy:
    """A robots.txt response -> policy (RFC 9309 section 2.3.1): 2xx is parsed; 4xx ("not
    available") allows everything; 5xx ("unreachable") disallows everything; anything else
    (a redirect the fetch could not follow) counts as not available."""
    if 200 <= status < 300:
        rules = urllib.robotparser.RobotFileParser()
        rules.parse(body.decode("utf-8", errors="replace").splitlines())
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


# ------------------------------------------------------------------------------------------
# One HTTP exchange


class FetchError(Exception):
    """A request that got no complete response. ``retryable``: worth another try."""

    def __init__(self, reason: str, detail: str, retryable: bool):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail, self.retryable = reason, detail, retryable


class _Pinned:
    """Connects to an address checked beforehand instead of resolving the host again; the
    host name still goes into the Host header (set by the caller) and TLS SNI."""

    def _open(self):
        sock = socket.create_connection((self.pinned_ip, self.port), self.timeout)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock

    def abort(self) -> None:
        """Called by the deadline timer: unblocks any read in progress."""
        self.aborted = True
        sock = self.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class _PinnedHTTP(_Pinned, http.client.HTTPConnection):
    def __init__(self, host: str, port: int, ip: str, timeout: float):
        super().__init__(host, port, timeout=timeout)
        self.pinned_ip, self.aborted = ip, False

    def connect(self):
        self.sock = self._open()


class _PinnedHTTPS(_Pinned, http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, ip: str, timeout: float, context: ssl.SSLContext):
        super().__init__(host, port, timeout=timeout, context=context)
        self.pinned_ip, self.aborted = ip, False

    def connect(self):
        self.sock = self._context.wrap_socket(self._open(), server_hostname=self.host)


def _tls_context(verify: bool) -> ssl.SSLContext:
    context = ssl.create_default_context()
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def http_get(url: str, ip: str, *, user_agent: str, timeout_s: float, deadline_s: float,
             max_bytes: int, verify_tls: bool = True) -> Exchange:
    """GET one normalised http(s) URL from the checked address ``ip``, without following
    redirects. Connect and every read wait at most ``timeout_s``; the whole exchange must end
    within ``deadline_s`` (a timer shuts the socket down), so that a server dripping bytes
    cannot hold a thread. The body is read up to ``max_bytes``; a longer one is cut there and
    marked truncated. Transfer encodings are undone; content encodings are not (we ask for
    ``identity``, and whatever comes is recorded as it came).

    Raises:
        FetchError: timeout, connection or tls (retryable but tls), bad_response, invalid_url.
    """
    parts = urlsplit(url)
    scheme, host = parts.scheme, parts.hostname or ""
    port = parts.port or SCHEMES[scheme]
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host_header = f"[{host}]" if ":" in host else host
    if port != SCHEMES[scheme]:
        host_header += f":{port}"
    request_headers = (("Host", host_header), ("User-Agent", user_agent), ("Accept", ACCEPT),
                       ("Accept-Encoding", "identity"), ("Connection", "close"))
    if scheme == "https":
        conn = _PinnedHTTPS(host, port, ip, timeout_s, _tls_context(verify_tls))
    else:
        conn = _PinnedHTTP(host, port, ip, timeout_s)
    date = utc_now()
    deadline = time.monotonic() + deadline_s
    timer = threading.Timer(deadline_s, conn.abort)
    timer.daemon = True
    timer.start()
    try:
        conn.putrequest("GET", target, skip_host=True, skip_accept_encoding=True)
        for name, value in request_headers:
            conn.putheader(name, value)
        conn.endheaders()
        resp = conn.getresponse()
        chunks, n = [], 0
        while n <= max_bytes:
            chunk = resp.read1(min(READ_CHUNK, max_bytes + 1 - n))
            if conn.aborted or time.monotonic() > deadline:
                raise FetchError("timeout", f"no complete response within {deadline_s:g} s",
                                 True)
            if not chunk:
                break
            chunks.append(chunk)
            n += len(chunk)
    except FetchError:
        raise
    except http.client.InvalidURL as exc:
        raise FetchError("invalid_url", str(exc), False) from None
    except TimeoutError as exc:
        raise FetchError("timeout", str(exc) or f"no answer within {timeout_s:g} s",
                         True) from None
    except ssl.SSLCertVerificationError as exc:
        raise FetchError("tls", str(exc), False) from None
    except (OSError, http.client.IncompleteRead, http.client.RemoteDisconnected) as exc:
        if conn.aborted:
            raise FetchError("timeout", f"no complete response within {deadline_s:g} s",
                             True) from None
        raise FetchError("connection", f"{type(exc).__name__}: {exc}", True) from None
    except http.client.HTTPException as exc:
        if conn.aborted:
            raise FetchError("timeout", f"no complete response within {deadline_s:g} s",
                             True) from None
        raise FetchError("bad_response", f"{type(exc).__name__}: {exc}", False) from None
    finally:
        timer.cancel()
        conn.close()
    body = b"".join(chunks)
    truncated = len(body) > max_bytes
    # The body is stored de-chunked, so a Transfer-Encoding header would mislead a reader.
    headers = tuple((k, v) for k, v in resp.getheaders() if k.lower() != "transfer-encoding")
    return Exchange(url=url, ip=ip, date=date,
                    request_line=f"GET {target} HTTP/1.1", request_headers=request_headers,
                    protocol="HTTP/1.0" if resp.version == 10 else "HTTP/1.1",
                    status=resp.status, reason=resp.reason or "", headers=headers,
                    body=body[:max_bytes], truncated=truncated)


# ------------------------------------------------------------------------------------------
# WARC output


def warc_record_bytes(ex: Exchange, warcinfo_id: str = "") -> tuple[bytes, int]:
    """An exchange -> (request record + response record, gzip per record; the response
    record's offset within those bytes). The response carries WARC-IP-Address and, when cut
    at the byte cap, ``WARC-Truncated: length``."""
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    common = {"WARC-Date": ex.date, "WARC-IP-Address": ex.ip}
    if warcinfo_id:
        common["WARC-Warcinfo-ID"] = warcinfo_id
    response_headers = dict(common)
    if ex.truncated:
        response_headers["WARC-Truncated"] = "length"
    response = writer.create_warc_record(
        ex.url, "response", payload=io.BytesIO(ex.body), warc_headers_dict=response_headers,
        http_headers=StatusAndHeaders(f"{ex.status} {ex.reason}".rstrip(), list(ex.headers),
                                      protocol=ex.protocol))
    request = writer.create_warc_record(
        ex.url, "request", payload=io.BytesIO(b""),
        warc_headers_dict={**common, "WARC-Concurrent-To":
                           response.rec_headers.get_header("WARC-Record-ID")},
        http_headers=StatusAndHeaders(ex.request_line, list(ex.request_headers),
                                      is_http_request=True))
    writer.write_record(request)
    offset = buf.tell()
    writer.write_record(response)
    return buf.getvalue(), offset


class WarcSink:
    """The WARC files of one host group: ``crawl-RUN-HOSTHASH-PPPPP.warc.gz`` in ``out_dir``.

    Files open lazily (a host whose every URL is refused writes none), start with a warcinfo
    record, and roll over to the next part past ``part_bytes``. A name that exists already is
    never reopened: the part number moves on. Thread-safe.
    """

    def __init__(self, out_dir: str, run_id: str, host: str, part_bytes: int,
                 info: dict | None = None):
        self.out_dir, self.part_bytes = out_dir, part_bytes
        self.prefix = f"crawl-{run_id}-{stable_hash(host):016x}"
        self.info = dict(info or {})
        self.files: list[str] = []
        self._lock = threading.Lock()
        self._file = None
        self._path, self._size, self._part, self._info_id = "", 0, 0, ""

    def write(self, ex: Exchange) -> tuple[str, int]:
        """Record an exchange; returns (file, offset of its response record)."""
        with self._lock:
            if self._file is None or self._size >= self.part_bytes:
                self._next_part()
            data, response_offset = warc_record_bytes(ex, self._info_id)
            offset = self._size + response_offset
            self._file.write(data)
            self._size += len(data)
            return self._path, offset

    def _next_part(self) -> None:
        self.close()
        while True:
            path = FileSystems.join(self.out_dir, f"{self.prefix}-{self._part:05d}.warc.gz")
            self._part += 1
            if not FileSystems.exists(path):
                break
        buf = io.BytesIO()
        writer = WARCWriter(buf, gzip=True)
        info = writer.create_warcinfo_record(path.rsplit("/", 1)[-1], self.info)
        writer.write_record(info)
        self._info_id = info.rec_headers.get_header("WARC-Record-ID")
        self._file = FileSystems.create(path, compression_type=CompressionTypes.UNCOMPRESSED)
        self._file.write(buf.getvalue())
        self._path, self._size = path, len(buf.getvalue())
        self.files.append(path)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


# ------------------------------------------------------------------------------------------
# Politeness


class HostGate:
    """Spaces the starts of requests to one host, whichever thread sends them."""

    def __init__(self):
        self._lock = threading.Lock()
        self._last = -float("inf")

    def wait(self, delay_s: float) -> None:
        """Return no sooner than ``delay_s`` seconds after the previous request started."""
        with self._lock:  # held while sleeping: the waiters queue up behind it
            now = time.monotonic()
            ready = self._last + delay_s
            if now < ready:
                time.sleep(ready - now)
                now = time.monotonic()
            self._last = now


# One gate per host and process while some crawler uses it, so that a host reached by
# redirects from another group's URLs is spaced too; crawlers hold their gates, and a gate
# nobody holds any more goes away.
_GATES: weakref.WeakValueDictionary[str, HostGate] = weakref.WeakValueDictionary()
_GATES_LOCK = threading.Lock()


def gate_for(host: str) -> HostGate:
    with _GATES_LOCK:
        gate = _GATES.get(host)
        if gate is None:
            gate = _GATES[host] = HostGate()
        return gate


# ------------------------------------------------------------------------------------------
# Fetching a URL: robots, addresses, retries, redirects


@dataclass
class _Chain:
    """The state of one URL's redirect chain."""

    url: str
    hops: list[str] = field(default_factory=list)  # URLs requested, in order
    redirects: list[str] = field(default_factory=list)
    attempts: int = 0
    last: Exchange | None = None
    warc: tuple[str, int] = ("", -1)


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
            location = ex.header("Location").strip()
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
            chain.attempts += 1
            retry_left = chain.attempts <= config.retries
            try:
                ex = self._get(url, addresses, max_bytes)
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

    def _get(self, url: str, addresses: list[str], max_bytes: int) -> Exchange:
        """Try the checked addresses in order until one connects."""
        config = self.config
        error: FetchError | None = None
        for ip in addresses:
            try:
                return http_get(url, ip, user_agent=config.user_agent,
                                timeout_s=config.timeout_s, deadline_s=config.deadline_s,
                                max_bytes=max_bytes, verify_tls=config.verify_tls)
            except FetchError as exc:
                if exc.reason != "connection":
                    raise
                error = exc
        assert error is not None
        raise error

    # -- many URLs of one host

    def crawl(self, urls: Iterable[str]) -> list[Outcome]:
        """Outcomes of ``urls`` in their order, at most ``per_host_concurrency`` in flight."""
        urls = list(urls)
        if self.config.per_host_concurrency <= 1 or len(urls) <= 1:
            return [self.fetch(url) for url in urls]
        with ThreadPoolExecutor(self.config.per_host_concurrency,
                                thread_name_prefix="crawl") as pool:
            return list(pool.map(self.fetch, urls))


# ------------------------------------------------------------------------------------------
# The Beam job

IN = "input"  # tallies of what was read: line, ignored, duplicate, url
TALLY = "tally"
WARC_FILES = "warc_files"
FETCH = "fetch"


def tally(key: str, n: int = 1) -> TaggedOutput:
    Metrics.counter("wikisum.crawl", key).inc(n)
    return TaggedOutput(TALLY, (key, n))


def url_lines(lines: Iterable[str]) -> Iterator[str | None]:
    """The lines of a URL list: each stripped line, or None for a blank line or a comment."""
    for line in lines:
        line = line.strip()
        yield None if not line or line.startswith("#") else line


class ReadUrlLines(beam.DoFn):
    """A URL list file (plain or compressed) -> (key, raw line), key as in ``check_url``."""

    def process(self, path: str):
        with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as f:
            # Line by line (a list may be large); Beam's compressed files have no readable(),
            # so no TextIOWrapper.
            lines = (raw.decode("utf-8", errors="replace") for raw in iter(f.readline, b""))
            for line in url_lines(lines):
                if line is None:
                    yield tally(f"{IN}:ignored")
                    continue
                yield tally(f"{IN}:line")
                yield check_url(line)[0], line


def read_done(path: str):
    """An earlier run's log -> (url, True) for every URL it settled (``is_done``)."""
    for row in shards.iter_rows([path], columns=["url", "outcome", "status"]):
        if is_done(row["outcome"], row["status"]):
            yield row["url"], True


class Plan(beam.DoFn):
    """CoGroupByKey(url) of the lines read and earlier outcomes -> one outcome now (skipped,
    refused(scheme), failed(invalid_url)), or (host, url) to fetch."""

    def process(self, item):
        key, grouped = item
        lines = list(grouped["lines"])
        if lines:  # a URL only in an earlier log was not asked for this time
            yield from self.plan(key, lines, any(grouped["done"]))

    def plan(self, key: str, lines: list[str], done: bool):
        yield tally(f"{IN}:url")
        if len(lines) > 1:
            yield tally(f"{IN}:duplicate", len(lines) - 1)
        _, refusal = check_url(lines[0])
        if done:
            yield Outcome(key, SKIPPED, "already_done", fetched_at=utc_now(),
                          error="settled by an earlier run in --out")
        elif refusal == "scheme":
            yield Outcome(key, REFUSED, "scheme", fetched_at=utc_now(),
                          error="only http and https are fetched")
        elif refusal:
            yield Outcome(key, FAILED, "invalid_url", fetched_at=utc_now(),
                          error="not an http(s) URL with a host")
        else:
            yield TaggedOutput(FETCH, (host_of(key), key))


class FetchHost(beam.DoFn):
    """(host, urls) -> outcomes, and the WARC files written. One host per call: its URLs are
    fetched with bounded concurrency and a delay, hosts in parallel across workers."""

    def __init__(self, config: CrawlConfig):
        self.config = config

    def process(self, item):
        host, urls = item
        urls = sorted(set(urls))
        config = self.config
        info = {"software": "wikisum crawl", "format": "WARC File Format 1.0",
                "http-header-user-agent": config.user_agent, "robots": "obey",
                "run-id": config.run_id}
        sink = WarcSink(FileSystems.join(config.out, "warc"), config.run_id, host,
                        config.warc_part_bytes, info)
        started = time.monotonic()
        try:
            outcomes = Crawler(config, sink).crawl(urls)
        finally:
            sink.close()
        log.info("crawl: %s: %d URL(s) in %.1f s, %d WARC file(s)", host, len(urls),
                 time.monotonic() - started, len(sink.files))
        for path in sink.files:
            yield TaggedOutput(WARC_FILES, path)
        yield from outcomes


def count_outcome(o: Outcome) -> tuple[str, int]:
    Metrics.counter("wikisum.crawl", f"{o.outcome}:{o.reason}").inc()
    return f"{o.outcome}:{o.reason}", 1


class WriteLogShard(beam.DoFn):
    """(shard, outcomes) -> crawl_log-RUN-SSSSS-of-NNNNN.parquet and .jsonl, rows by URL."""

    def __init__(self, log_dir: str, run_id: str, total: int):
        self.log_dir, self.run_id, self.total = log_dir, run_id, total

    def process(self, item):
        index, outcomes = item
        rows = sorted((o.row() for o in outcomes if o is not None), key=lambda r: r["url"])
        stem = FileSystems.join(self.log_dir, log_name(self.run_id, index, self.total))
        shards.write_table(stem + ".parquet", rows, schemas.CRAWL_LOG)
        shards.write_text(stem + ".jsonl", "".join(
            json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows))
        yield stem + ".parquet"


def log_name(run_id: str, index: int, total: int) -> str:
    return f"crawl_log-{run_id}-{index:05d}-of-{total:05d}"


def summarize(counts: list, warc_files: list, config: CrawlConfig) -> dict:
    """Tallies -> the run's summary: input lines, distinct URLs, outcomes by reason, and
    ``balanced`` (distinct URLs in = outcomes out)."""
    c = Counter()
    for key, n in counts:
        c[key] += n
    reasons = {k: v for k, v in sorted(c.items()) if k.split(":", 1)[0] in OUTCOMES}
    outcomes = Counter()
    for k, v in reasons.items():
        outcomes[k.split(":", 1)[0]] += v
    urls = c.get(f"{IN}:url", 0)
    return {
        "job": "wikisum crawl",
        "run_id": config.run_id,
        "format": schemas.FORMAT_VERSION,
        "lines": c.get(f"{IN}:line", 0),
        "ignored_lines": c.get(f"{IN}:ignored", 0),
        "duplicates": c.get(f"{IN}:duplicate", 0),
        "urls": urls,
        "outcomes": {k: outcomes.get(k, 0) for k in OUTCOMES},
        "reasons": reasons,
        "balanced": urls == sum(outcomes.values()),
        "warc_files": sorted(warc_files),
        "options": {k: (list(v) if isinstance(v, tuple) else v)
                    for k, v in asdict(config).items()},
    }


def build(p: beam.Pipeline, config: CrawlConfig, url_paths: list[str],
          log_paths: list[str]) -> None:
    """Add the crawl job to pipeline ``p``; ``log_paths`` are the earlier runs' logs."""
    lines = (p | "UrlFiles" >> beam.Create(url_paths)
             | "ReadUrlLines" >> beam.ParDo(ReadUrlLines()).with_outputs(TALLY, main="lines"))
    done = (p | "EarlierLogs" >> beam.Create(log_paths)
            | "ReadDone" >> beam.FlatMap(read_done))
    planned = ({"lines": lines.lines, "done": done}
               | "GroupByUrl" >> beam.CoGroupByKey()
               | "Plan" >> beam.ParDo(Plan()).with_outputs(
                   TALLY, FETCH, main="outcomes"))
    fetched = (planned[FETCH] | "GroupByHost" >> beam.GroupByKey()
               | "FetchHost" >> beam.ParDo(FetchHost(config)).with_outputs(
                   WARC_FILES, main="outcomes"))
    outcomes = (planned.outcomes, fetched.outcomes) | "AllOutcomes" >> beam.Flatten()
    total = config.log_shards
    empty = p | "AllLogShards" >> beam.Create([(i, None) for i in range(total)])
    log_dir = FileSystems.join(config.out, "log")
    _ = ((outcomes | "LogShard" >> beam.Map(lambda o: (stable_hash(o.url) % total, o)), empty)
         | "OutcomesAndShards" >> beam.Flatten()
         | "GroupLogShards" >> beam.GroupByKey()
         | "WriteLog" >> beam.ParDo(WriteLogShard(log_dir, config.run_id, total)))
    counts = ((lines[TALLY], planned[TALLY],
               outcomes | "CountOutcomes" >> beam.Map(count_outcome))
              | "AllTallies" >> beam.Flatten()
              | "SumTallies" >> beam.CombinePerKey(sum)
              | "CollectTallies" >> beam.combiners.ToList())
    warcs = fetched[WARC_FILES] | "CollectWarcFiles" >> beam.combiners.ToList()
    summary_path = FileSystems.join(config.out, f"summary-{config.run_id}.json")
    _ = (counts | "WriteSummary" >> beam.Map(
        lambda c, w: shards.write_text(summary_path, json.dumps(
            summarize(c, w, config), indent=1, sort_keys=True) + "\n"),
        beam.pvalue.AsSingleton(warcs)))


def earlier_logs(out: str) -> list[str]:
    return shards.match(FileSystems.join(out, "log", LOG_GLOB))


def run(config: CrawlConfig, pipeline_options) -> dict:
    """Run the crawl and return the summary it wrote (``summary-RUN.json``, also copied to
    ``summary.json``)."""
    if not config.run_id:
        config = replace(config, run_id=new_run_id())
    url_paths = expand_patterns(config.urls)
    log_paths = earlier_logs(config.out)
    log.info("crawl %s: %d URL file(s), %d earlier log file(s) -> %s", config.run_id,
             len(url_paths), len(log_paths), config.out)
    with beam.Pipeline(options=pipeline_options) as p:
        build(p, config, url_paths, log_paths)
    text = shards.read_text(FileSystems.join(config.out, f"summary-{config.run_id}.json"))
    shards.write_text(FileSystems.join(config.out, "summary.json"), text)
    return json.loads(text)
