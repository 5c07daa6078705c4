"""One HTTP exchange over a connection pinned to a checked address: the original name goes in
the Host header and TLS SNI, so a second DNS answer cannot redirect the connection; a size cap
and a deadline for the whole exchange."""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from urllib.parse import urlsplit

from wikisum.pipeline.crawl.checks import SCHEMES
from wikisum.pipeline.crawl.records import Exchange, utc_now

READ_CHUNK = 64 * 1024
ACCEPT = "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.8"


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
