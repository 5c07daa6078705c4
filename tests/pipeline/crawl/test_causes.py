"""Failure causes: real exceptions (socket, ssl, urllib, http.client, the jobs' own errors) and
the messages the logs keep, each to its word; the summary of causes and the network verdict."""

from __future__ import annotations

import errno
import http.client
import socket
import ssl
import threading
import urllib.error
import urllib.request

import pytest

from wikisum.pipeline.ccfetch.client import Client, RequestError
from wikisum.pipeline.crawl import causes
from wikisum.pipeline.crawl.causes import cause_of
from wikisum.pipeline.crawl.checks import checked_addresses
from wikisum.pipeline.crawl.net import FetchError, http_get
from wikisum.pipeline.crawl.records import Stop


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def raised(call) -> BaseException:
    try:
        call()
    except BaseException as exc:  # the exception is the test's input
        return exc
    raise AssertionError("nothing was raised")


class OneShotServer:
    """A loopback TCP server that answers its first connection with ``action(conn)``."""

    def __init__(self, action):
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, args=(action,), daemon=True)
        self.thread.start()

    def _serve(self, action):
        conn, _ = self.sock.accept()
        with conn:
            action(conn)

    def close(self):
        self.thread.join(5)
        self.sock.close()


def reset(conn: socket.socket) -> None:
    conn.recv(1)  # the client is connected: only now close, with a RST (linger 0)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")


def plain_http(conn: socket.socket) -> None:
    conn.recv(65536)  # the TLS ClientHello, answered in plain HTTP
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi")


def hang_up(conn: socket.socket) -> None:
    conn.recv(65536)  # read the request, answer nothing


def test_refused_connections_socket_urllib_and_the_jobs_clients():
    port = closed_port()
    assert cause_of(raised(lambda: socket.create_connection(("127.0.0.1", port), 2))) == \
        "refused"
    url_error = raised(lambda: urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2))
    assert isinstance(url_error, urllib.error.URLError)
    assert cause_of(url_error) == "refused"
    client = Client(user_agent="t", timeout_s=2, retries=0, backoff_s=0)
    request_error = raised(lambda: client.get(f"http://127.0.0.1:{port}/x"))
    assert isinstance(request_error, RequestError) and request_error.reason == "connection"
    assert cause_of(request_error) == "refused"
    # ... and the message cc-fetch logs for it, as the summary reads it back
    assert cause_of(f"http://127.0.0.1:{port}/C-index?url=x: {request_error}", "lookup") == \
        "refused"
    fetch_error = raised(lambda: http_get(f"http://127.0.0.1:{port}/", "127.0.0.1",
                                          user_agent="t", timeout_s=2, deadline_s=4,
                                          max_bytes=100))
    assert isinstance(fetch_error, FetchError)
    assert cause_of(fetch_error) == "refused"
    assert cause_of(fetch_error.detail, fetch_error.reason) == "refused"


def test_name_resolution_failures_are_dns():
    gai = socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    assert cause_of(gai) == "dns"
    assert cause_of(urllib.error.URLError(gai)) == "dns"
    assert cause_of(f"{type(gai).__name__}: {gai}") == "dns"

    def resolve(host, port):
        raise gai

    stop = raised(lambda: checked_addresses("nothing.test", 80, False, resolve))
    assert isinstance(stop, Stop) and stop.reason == "dns"
    assert cause_of(stop) == "dns"
    assert cause_of(stop.error, stop.reason) == "dns"
    assert cause_of("nothing.test: no address", "dns") == "dns"
    assert cause_of("CC-MAIN-2017-13: connection: gaierror: [Errno -3] Temporary failure in "
                    "name resolution", "lookup") == "dns"


def test_a_timeout_waiting_for_an_answer():
    listener = socket.create_server(("127.0.0.1", 0))  # accepts (the backlog), never answers
    try:
        with socket.create_connection(listener.getsockname(), 2) as s:
            s.settimeout(0.2)
            exc = raised(lambda: s.recv(10))
    finally:
        listener.close()
    assert isinstance(exc, TimeoutError)
    assert cause_of(exc) == "timeout"
    assert cause_of(urllib.error.URLError(exc)) == "timeout"
    assert cause_of("no complete response within 3 s", "timeout") == "timeout"
    assert cause_of("no answer within 40 s over 4 tries and 0 redirects", "url_deadline") == \
        "timeout"


def test_a_tls_handshake_with_a_plain_http_server():
    server = OneShotServer(plain_http)
    try:
        with socket.create_connection(("127.0.0.1", server.port), 2) as raw:
            context = ssl.create_default_context()
            exc = raised(lambda: context.wrap_socket(raw, server_hostname="site.test"))
    finally:
        server.close()
    assert isinstance(exc, ssl.SSLError)
    assert cause_of(exc) == "tls"
    verify = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate "
                                             "verify failed: self-signed certificate")
    assert cause_of(verify) == "tls"
    assert cause_of(str(verify), "tls") == "tls"
    assert cause_of(f"connection: SSLError: {exc}", "connection") == "tls"


def test_a_connection_reset_or_closed_without_an_answer():
    server = OneShotServer(reset)
    try:
        with socket.create_connection(("127.0.0.1", server.port), 2) as s:
            s.sendall(b"x")
            server.thread.join(5)  # closed with a RST
            exc = raised(lambda: s.recv(10))
    finally:
        server.close()
    assert isinstance(exc, ConnectionResetError)
    assert cause_of(exc) == "reset"
    server = OneShotServer(hang_up)
    try:
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=2)
        conn.request("GET", "/")
        exc = raised(conn.getresponse)
    finally:
        server.close()
    # http.client.RemoteDisconnected, a ConnectionResetError
    assert isinstance(exc, ConnectionResetError)
    assert cause_of(exc) == "reset"
    assert cause_of(f"{type(exc).__name__}: {exc}", "connection") == "reset"


@pytest.mark.parametrize("base, cause", [
    (socket.gaierror, "dns"), (ConnectionRefusedError, "refused"),
    (ConnectionResetError, "reset"), (BrokenPipeError, "reset"), (TimeoutError, "timeout"),
    (ssl.SSLError, "tls")])
def test_the_exception_class_decides_whatever_its_name_and_text(base, cause):
    """Libraries subclass these (urllib3, requests): the class is read, not only the text."""
    subclass = type("Trouble", (base,), {})
    assert cause_of(subclass("went wrong")) == cause
    assert cause_of(urllib.error.URLError(subclass("went wrong"))) == cause


def test_unreachable_networks_and_other_socket_errors():
    assert cause_of(OSError(errno.ENETUNREACH, "Network is unreachable")) == "unreachable"
    assert cause_of(OSError(errno.EHOSTUNREACH, "No route to host")) == "unreachable"
    assert cause_of("OSError: [Errno 113] No route to host", "connection") == "unreachable"
    assert cause_of(OSError(errno.EMFILE, "Too many open files")) == "connection"
    assert cause_of("OSError: [Errno 24] Too many open files", "connection") == "connection"


def test_http_statuses(site):
    missing = raised(lambda: urllib.request.urlopen(site.url("/missing"), timeout=5))
    down = raised(lambda: urllib.request.urlopen(site.url("/down"), timeout=5))
    assert isinstance(missing, urllib.error.HTTPError) and missing.code == 404
    assert (cause_of(missing), cause_of(down)) == ("http_4xx", "http_5xx")
    assert cause_of("HTTP 404 Not Found", "http_status", 404) == "http_4xx"
    assert cause_of("HTTP 503", "http_status") == "http_5xx"  # cc-fetch logs no status
    assert cause_of("https://index.example/C-index?url=x: http_status: HTTP 429",
                    "lookup") == "http_4xx"
    assert cause_of("robots.txt answered HTTP 503", "robots_unavailable") == "http_5xx"
    # a timeout after a 503 is a timeout
    assert cause_of("no complete response within 3 s", "timeout", 503) == "timeout"


@pytest.mark.parametrize("reason", ["no_range", "range_mismatch", "short_read", "not_gzip",
                                    "truncated", "extra_data", "not_warc", "wrong_type",
                                    "wrong_url"])
def test_cc_fetch_record_checks_are_bad_records(reason):
    # no_range's message names a status; the reason settles it
    assert cause_of("HTTP 200 instead of 206 Partial Content", reason) == "bad_record"


def test_other_failures_and_urls_in_messages():
    assert cause_of("not an http(s) URL with a host", "invalid_url") == "invalid_url"
    assert cause_of("http://a.test/b seen twice", "redirect_loop") == "other"
    assert cause_of("BadStatusLine: garbage", "bad_response") == "other"
    assert cause_of("TypeError: unsupported operand", "error") == "other"
    assert cause_of(ValueError("bad value")) == "other"
    assert cause_of("") == "other"
    # words of a URL in the message are no cause
    assert cause_of("https://SSL-timeout.example/refused?q=timeout: HTTP 404",
                    "http_status") == "http_4xx"
    assert cause_of(RuntimeError("wrapped")) == "other"
    try:
        try:
            socket.create_connection(("127.0.0.1", closed_port()), 2)
        except OSError as inner:
            raise RuntimeError("lookup failed") from inner
    except RuntimeError as outer:
        assert cause_of(outer) == "refused"  # the exception it was raised from


def test_example_names_the_url_once_and_is_bounded():
    assert causes.example("http://a.test/", "HTTP 404") == "http://a.test/: HTTP 404"
    assert causes.example("http://a.test/", "https://index.test/C-index?url=a: timeout") == \
        "https://index.test/C-index?url=a: timeout"
    long = causes.example("http://a.test/", "x" * 1000, limit=50)
    assert len(long) == 50 and long.endswith("...")


def summary_of(tallies, firsts, attempted):
    return causes.failures_by_cause(tallies, firsts, attempted)


def test_failures_by_cause_counts_causes_and_keeps_the_earliest_example():
    tallies = {"lookup:dns": 2, "fetch:dns": 1, "fetch:http_5xx": 3, "urls:invalid_url": 1}
    firsts = [(("cause", "lookup:dns"), ("2025-01-01T00:00:05Z", "u2", "dns later")),
              (causes.tally_key("fetch", "dns"), ("2025-01-01T00:00:01Z", "u1", "dns first")),
              (("cause", "fetch:http_5xx"), ("2025-01-01T00:00:02Z", "u3", "HTTP 503")),
              (("cause", "urls:invalid_url"), ("2025-01-01T00:00:00Z", "x", "not a URL"))]
    got = summary_of(tallies, firsts, {"lookup": 8, "fetch": 6})
    assert got["causes"] == {"dns": {"count": 3, "example": "dns first"},
                             "http_5xx": {"count": 3, "example": "HTTP 503"},
                             "invalid_url": {"count": 1, "example": "not a URL"}}
    assert got["network"] == {
        "lookup": {"attempted": 8, "failed": 2, "first": "dns later"},
        "fetch": {"attempted": 6, "failed": 1, "first": "dns first"}}
    printed = causes.format_causes(got["causes"])
    assert printed == ["  failures by cause:",
                       "    dns                 3  e.g. dns first",
                       "    http_5xx            3  e.g. HTTP 503",
                       "    invalid_url         1  e.g. not a URL"]
    assert summary_of({}, [], {"fetch": 0}) == {
        "causes": {}, "network": {"fetch": {"attempted": 0, "failed": 0, "first": ""}}}


WORDS = {"lookup": "look-up", "fetch": "fetch"}
HINTS = {"lookup": "--index-url", "fetch": "--data-url"}


def test_a_run_is_a_network_failure_only_when_every_request_of_a_stage_failed_so():
    def network(lookup, fetch):
        return {"lookup": dict(zip(("attempted", "failed", "first"), lookup, strict=True)),
                "fetch": dict(zip(("attempted", "failed", "first"), fetch, strict=True))}

    total = network((3, 3, "http://i.test/C-index?url=a: [Errno -2] Name or service not "
                     "known"), (0, 0, ""))
    assert causes.network_failure("cc-fetch", total, WORDS, HINTS) == (
        "cc-fetch: every look-up failed for a network reason: 3 of 3 (first: "
        "http://i.test/C-index?url=a: [Errno -2] Name or service not known); check the "
        "network or --index-url")
    assert causes.network_warnings("cc-fetch", total, WORDS) == []
    fetches = network((5, 0, ""), (2, 2, "http://d.test/f: timed out"))
    assert causes.network_failure("cc-fetch", fetches, WORDS, HINTS).startswith(
        "cc-fetch: every fetch failed for a network reason: 2 of 2 (first: http://d.test/f: ")
    assert causes.network_failure("crawl", {"fetch": {"attempted": 1, "failed": 1,
                                                      "first": "x"}}, {"fetch": "fetch"},
                                  {}).endswith("(first: x); check the network")
    partial = network((5, 2, "http://i.test/: refused"), (3, 0, ""))
    assert causes.network_failure("cc-fetch", partial, WORDS, HINTS) is None
    assert causes.network_warnings("cc-fetch", partial, WORDS) == [
        "cc-fetch: warning: 2 of 5 look-ups failed for a network reason (first: "
        "http://i.test/: refused); a rerun with the same --out tries them again"]
    nothing = network((0, 0, ""), (0, 0, ""))
    assert causes.network_failure("cc-fetch", nothing, WORDS, HINTS) is None
    assert causes.network_warnings("cc-fetch", nothing, WORDS) == []
