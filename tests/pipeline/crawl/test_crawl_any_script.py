"""`wikisum crawl` on URLs of any script: an IDN host is resolved, asked for (Host header,
robots.txt origin) and politely spaced as its punycode name, a non-ASCII path is requested
percent-encoded, robots.txt rules written in UTF-8 apply to it, and a redirect whose Location
holds raw UTF-8 is followed to the right page."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from crawlsite import config

from wikisum.pipeline.crawl.checks import check_url, header_url, host_of, origin_of
from wikisum.pipeline.crawl.fetch import Crawler

HOST = "xn--e1afmkfd.xn--j1amh"  # пример.укр
PAGE = "<html><body><p>Сторінка про млин на річці.</p></body></html>".encode()


class _Handler(BaseHTTPRequestHandler):
    seen: list[tuple[str, str]]

    def log_message(self, *args):
        pass

    def _answer(self, status: str, headers: list[bytes], body: bytes = b"") -> None:
        lines = [f"HTTP/1.1 {status}".encode(), *headers,
                 f"Content-Length: {len(body)}".encode(), b"Connection: close", b"", b""]
        self.wfile.write(b"\r\n".join(lines) + body)

    def do_GET(self):
        self.seen.append((self.headers.get("Host", ""), self.path))
        if self.path == "/robots.txt":
            self._answer("200 OK", [b"Content-Type: text/plain"],
                         "User-agent: *\nDisallow: /приватно/\n".encode())
        elif self.path == "/%D0%BF%D1%83%D1%82%D1%8C":  # /путь
            # raw UTF-8 in the header, as some servers send it
            self._answer("302 Found", [b"Location: " + "/日本語?ключ=значення".encode()])
        elif self.path == "/%E6%97%A5%E6%9C%AC%E8%AA%9E?%D0%BA%D0%BB%D1%8E%D1%87=%D0%B7%D0%BD" \
                          "%D0%B0%D1%87%D0%B5%D0%BD%D0%BD%D1%8F":
            self._answer("200 OK", [b"Content-Type: text/html; charset=utf-8"], PAGE)
        else:
            self._answer("404 Not Found", [], b"not found")


@pytest.fixture
def idn_site():
    handler = type("Handler", (_Handler,), {"seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], handler.seen
    server.shutdown()
    server.server_close()


def test_an_idn_host_is_fetched_as_punycode(idn_site):
    port, seen = idn_site
    resolved = []

    def resolve(host, port_):
        resolved.append(host)
        return ["127.0.0.1"] if host == HOST else []

    url, refusal = check_url(f"http://ПРИМЕР.укр:{port}/путь")
    assert (url, refusal) == (f"http://{HOST}:{port}/%D0%BF%D1%83%D1%82%D1%8C", "")
    assert host_of(url) == HOST and origin_of(url) == f"http://{HOST}:{port}"
    crawler = Crawler(config(), resolve=resolve)
    fetched = crawler.fetch(url)
    refused = crawler.fetch(check_url(f"http://пример.укр:{port}/приватно/x")[0])
    assert (fetched.outcome, fetched.status) == ("fetched", 200)
    assert fetched.final_url == (f"http://{HOST}:{port}/%E6%97%A5%E6%9C%AC%E8%AA%9E"
                                 "?%D0%BA%D0%BB%D1%8E%D1%87=%D0%B7%D0%BD%D0%B0%D1%87%D0%B5"
                                 "%D0%BD%D0%BD%D1%8F")
    assert (refused.outcome, refused.reason) == ("refused", "robots")
    assert set(resolved) == {HOST}
    assert {host for host, _ in seen} == {f"{HOST}:{port}"}
    assert [path for _, path in seen][:2] == ["/robots.txt", "/%D0%BF%D1%83%D1%82%D1%8C"]
    assert all(path.isascii() for _, path in seen)


def test_a_location_header_is_read_as_utf8_where_it_is():
    raw = "/日本語?q=é".encode().decode("latin-1")  # what http.client hands over
    assert header_url(f" {raw} ") == "/日本語?q=é"
    assert header_url("/caf\xe9") == "/caf\xe9"  # Latin-1 that is not UTF-8: kept
    assert header_url("/plain?a=1") == "/plain?a=1"
