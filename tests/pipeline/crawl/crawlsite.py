"""A test web site on 127.0.0.1 for the crawl tests, and the settings they share (imported as
``crawlsite``)."""

from __future__ import annotations

import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from wikisum.pipeline.crawl.records import CrawlConfig

UA = "wikisum-test-crawler/1.0"
TIMEOUT_S = 1.0  # generous for a loaded machine; /slow answers well after it
SLOW_S = 2.5
BIG_BYTES = 300 * 1024
MAX_BYTES = 100 * 1024

PAGES = {
    "a": ["The mill on the Ostra was rebuilt in stone after the great flood of 1802 and has "
          "kept its timber wheel to this day.",
          "Local records show that three families ran the mill in turn over two centuries of "
          "trade with the market towns downstream."],
    "b": ["Corn from the upland farms was carried to the works by cart until the railway "
          "reached the valley in the autumn of 1871.",
          "The railway brought coal as well, and a small steam engine was added beside the "
          "wheel for the dry summers."],
    "c": ["The river rises in the northern hills and runs for forty miles before it joins "
          "the sea at the old harbour town.",
          "Salmon return to its upper reaches every winter, and anglers come from far away "
          "for the spring run."],
}


def page_html(name: str) -> bytes:
    paragraphs = "".join(f"<p>{p}</p>" for p in PAGES[name])
    return (f"<html><head><title>Page {name}</title></head><body><nav><a>Home</a> <a>News</a>"
            f"</nav><main><article><h1>Notes {name}</h1>{paragraphs}</article></main>"
            f"<footer>Copyright 2021</footer></body></html>").encode()


ROBOTS = b"User-agent: *\nDisallow: /private/\n"


class Site:
    """A test web site on 127.0.0.1 that counts the requests each path receives."""

    def __init__(self):
        self.hits: Counter = Counter()
        self.hosts: set[str] = set()
        self.agents: set[str] = set()
        self.starts: list[tuple[str, float]] = []
        self.in_flight = self.max_in_flight = 0  # of /wait/ requests
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler())
        self.server.block_on_close = False
        self.port = self.server.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, path: str) -> str:
        return self.base + path

    def snapshot(self) -> Counter:
        with self.lock:
            return Counter(self.hits)

    def handler(self):
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def send(self, status: int, body: bytes = b"", ctype: str = "text/html",
                     headers: tuple = ()):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for name, value in headers:
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self):
                path = self.path
                with site.lock:
                    site.hits[path] += 1
                    n = site.hits[path]
                    site.hosts.add(self.headers.get("Host", ""))
                    site.agents.add(self.headers.get("User-Agent", ""))
                    site.starts.append((path, time.monotonic()))
                try:
                    self.route(path, n)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the crawler gave up on us, as it should

            def route(self, path: str, n: int):
                if path == "/robots.txt":
                    self.send(200, ROBOTS, "text/plain")
                elif path.startswith("/page/"):
                    self.send(200, page_html(path.rsplit("/", 1)[1]))
                elif path == "/private/secret":
                    self.send(200, b"<p>secret</p>")
                elif path == "/chain/1":
                    self.send(302, b"moved", headers=[("Location", "/chain/2")])
                elif path == "/chain/2":
                    self.send(301, b"moved", headers=[("Location", site.url("/page/c"))])
                elif path in ("/loop/a", "/loop/b"):
                    other = "/loop/b" if path == "/loop/a" else "/loop/a"
                    self.send(302, b"", headers=[("Location", other)])
                elif path == "/to-metadata":
                    self.send(302, b"", headers=[
                        ("Location", "http://169.254.169.254/latest/meta-data/")])
                elif path == "/slow":
                    time.sleep(SLOW_S)
                    self.send(200, b"<p>too late</p>")
                elif path == "/big":
                    self.send(200, b"x" * BIG_BYTES, "text/plain")
                elif path == "/flaky":
                    self.send(500, b"oops") if n == 1 else self.send(200, page_html("a"))
                elif path == "/down":
                    self.send(503, b"down for maintenance")
                elif path.startswith("/wait/"):
                    with site.lock:
                        site.in_flight += 1
                        site.max_in_flight = max(site.max_in_flight, site.in_flight)
                    time.sleep(0.3)
                    with site.lock:
                        site.in_flight -= 1
                    self.send(200, b"<p>waited</p>")
                elif path == "/drip-headers":
                    self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                    for _ in range(100):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        time.sleep(0.05)
                elif path == "/drip":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/plain")
                    self.end_headers()
                    for _ in range(100):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        time.sleep(0.05)
                else:
                    self.send(404, b"not found")

        return Handler

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def config(**kw) -> CrawlConfig:
    base = dict(urls=(), out="", run_id="test", per_host_concurrency=2, delay_s=0.0,
                timeout_s=TIMEOUT_S, max_bytes=MAX_BYTES, retries=1, backoff_s=0.05,
                user_agent=UA, allow_private=True)
    base.update(kw)
    return CrawlConfig(**base)
