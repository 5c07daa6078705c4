"""HTTP for the index and the data server: keep-alive connections per thread, a byte cap and a
deadline per request, retries with exponential backoff and jitter on timeouts, connection
errors and 5xx (503 "slow down" included), never on 4xx; and a request-rate limit. Every
connection goes to an address checked as the crawl checks its own (``address_refusal``), as
with ``--allow-private``: the endpoints are the operator's, a local mirror may be private, but
cloud metadata, multicast and unspecified addresses, in any spelling, are never contacted."""

from __future__ import annotations

import http.client
import random
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from wikisum.pipeline.crawl.checks import address_refusal

READ_CHUNK = 256 * 1024


class RequestError(Exception):
    """A request that got no usable response. ``retryable``: worth another try."""

    def __init__(self, reason: str, detail: str, retryable: bool, status: int = 0):
        super().__init__(f"{reason}: {detail}")
        self.reason, self.detail, self.retryable, self.status = reason, detail, retryable, status


class AddressRefused(OSError):
    """The host resolves to an address no request may go to (see :func:`checked_connect`)."""


def checked_connect(address: tuple[str, int], timeout=socket._GLOBAL_DEFAULT_TIMEOUT,
                    source_address=None) -> socket.socket:
    """``socket.create_connection`` to an address checked first: every address the host
    resolves to must pass ``address_refusal`` (private ones allowed), and the connection goes
    to one of those (no second lookup).

    Raises:
        AddressRefused: the host resolves to a refused address.
        OSError: name resolution or every connection failed.
    """
    host, port = address
    addresses = list(dict.fromkeys(info[4][0] for info in
                                   socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)))
    for ip in addresses:
        why = address_refusal(ip, allow_private=True)
        if why:
            raise AddressRefused(f"{host} resolves to {ip} ({why})")
    error: OSError = OSError(f"{host}: no address")
    for ip in addresses:
        try:
            return socket.create_connection((ip, port), timeout, source_address)
        except OSError as exc:
            error = exc
    raise error


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]  # lowercased names
    body: bytes
    attempts: int


class RateLimit:
    """At most ``per_s`` request starts a second from all threads of a process (0: no limit)."""

    def __init__(self, per_s: float):
        self.interval = 1.0 / per_s if per_s > 0 else 0.0
        self._lock = threading.Lock()
        self._next = 0.0

    def wait(self) -> None:
        if not self.interval:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next)
            self._next = start + self.interval
        if start > now:
            time.sleep(start - now)


class Client:
    """GET requests with retries. One connection per (thread, origin), reused while the server
    keeps it open.

    Args:
        sleep, jitter: injected by tests (``jitter()`` returns a factor in [0.5, 1.5)).
    """

    def __init__(self, *, user_agent: str, timeout_s: float, retries: int, backoff_s: float,
                 rate: RateLimit | None = None, sleep: Callable[[float], None] = time.sleep,
                 jitter: Callable[[], float] | None = None):
        self.user_agent, self.timeout_s = user_agent, timeout_s
        self.retries, self.backoff_s = retries, backoff_s
        self.rate, self.sleep = rate, sleep
        self.jitter = jitter or (lambda: random.uniform(0.5, 1.5))
        self._local = threading.local()

    def get(self, url: str, headers: dict[str, str] | None = None, *,
            max_bytes: int = 64 * 1024 * 1024, ok: tuple[int, ...] = (200,)) -> Response:
        """GET ``url``; retried as the class says. A status in ``ok`` is returned; any other is
        raised (``http_status``; a 5xx after the last retry, a 4xx at once).

        Raises:
            RequestError: timeout, connection, address (refused: see
                :func:`checked_connect`), too_large, bad_response, http_status.
        """
        attempt = 0
        while True:
            attempt += 1
            try:
                status, got, body = self._once(url, headers or {}, max_bytes, ok)
                if status in ok:
                    return Response(status, got, body, attempt)
                raise RequestError("http_status", f"HTTP {status}", 500 <= status < 600,
                                   status)
            except RequestError as exc:
                if not exc.retryable or attempt > self.retries:
                    exc.attempts = attempt
                    raise
                self.sleep(self.backoff_s * 2 ** (attempt - 1) * self.jitter())

    def _connection(self, parts) -> http.client.HTTPConnection:
        pool = getattr(self._local, "pool", None)
        if pool is None:
            pool = self._local.pool = {}
        key = (parts.scheme, parts.hostname, parts.port)
        conn = pool.get(key)
        if conn is None:
            # An IPv6 literal keeps its brackets, or http.client reads its colons as a port.
            host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
            if parts.scheme == "https":
                conn = http.client.HTTPSConnection(host, parts.port, timeout=self.timeout_s,
                                                   context=ssl.create_default_context())
            else:
                conn = http.client.HTTPConnection(host, parts.port, timeout=self.timeout_s)
            conn._create_connection = checked_connect  # TLS wraps the socket it returns
            pool[key] = conn
        return conn

    def _drop(self, parts) -> None:
        conn = getattr(self._local, "pool", {}).pop((parts.scheme, parts.hostname, parts.port),
                                                    None)
        if conn is not None:
            conn.close()

    def _once(self, url: str, headers: dict[str, str], max_bytes: int,
              ok: tuple[int, ...] = (200,)):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RequestError("invalid_url", url[:200], False)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        if self.rate is not None:
            self.rate.wait()
        deadline = time.monotonic() + 3 * self.timeout_s
        conn = self._connection(parts)
        try:
            conn.request("GET", target, headers={"User-Agent": self.user_agent,
                                                 "Accept-Encoding": "identity", **headers})
            resp = conn.getresponse()
            if resp.status not in ok:  # its body is not read (a whole WARC file, say)
                self._drop(parts)
                return resp.status, {k.lower(): v for k, v in resp.getheaders()}, b""
            chunks, n = [], 0
            while True:
                chunk = resp.read(min(READ_CHUNK, max_bytes + 1 - n))
                if not chunk:
                    break
                chunks.append(chunk)
                n += len(chunk)
                if n > max_bytes:
                    self._drop(parts)
                    raise RequestError("too_large", f"over {max_bytes} bytes", False)
                if time.monotonic() > deadline:
                    self._drop(parts)
                    raise RequestError("timeout", f"no complete response within "
                                       f"{3 * self.timeout_s:g} s", True)
            if resp.will_close:
                self._drop(parts)
            return (resp.status, {k.lower(): v for k, v in resp.getheaders()},
                    b"".join(chunks))
        except RequestError:
            raise
        except TimeoutError as exc:
            self._drop(parts)
            raise RequestError("timeout", str(exc) or f"no answer within {self.timeout_s:g} s",
                               True) from None
        except ssl.SSLCertVerificationError as exc:
            self._drop(parts)
            raise RequestError("tls", str(exc), False) from None
        except AddressRefused as exc:
            self._drop(parts)
            raise RequestError("address", str(exc), False) from None
        except (OSError, http.client.HTTPException) as exc:
            self._drop(parts)
            raise RequestError("connection", f"{type(exc).__name__}: {exc}", True) from None
