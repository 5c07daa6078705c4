"""``wikisum crawl``: pure checks, one exchange, and the whole job against a local HTTP server
(robots, redirects, loops, timeouts, the byte cap, retries, 4xx), its WARC read back and fed
to ``wikisum ingest``, address refusals without --allow-private, and resuming."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import shutil
import ssl
import subprocess
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from xml.sax.saxutils import escape

import pyarrow.parquet as pq
import pytest
from warcio.archiveiterator import ArchiveIterator

from wikisum.pipeline import crawl, schemas
from wikisum.pipeline.crawl import (
    CrawlConfig,
    Crawler,
    FetchError,
    Stop,
    address_refusal,
    check_url,
    checked_addresses,
    http_get,
    is_done,
    parse_size,
    robots_policy,
    robots_policy_after_stop,
)
from wikisum.workflows import cli
from wikisum.workflows import crawl as crawl_cmd

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


@pytest.fixture(scope="module")
def site():
    s = Site()
    yield s
    s.close()


def config(**kw) -> CrawlConfig:
    base = dict(urls=(), out="", run_id="test", per_host_concurrency=2, delay_s=0.0,
                timeout_s=TIMEOUT_S, max_bytes=MAX_BYTES, retries=1, backoff_s=0.05,
                user_agent=UA, allow_private=True)
    base.update(kw)
    return CrawlConfig(**base)


# --------------------------------------------------------------------------------------------
# Pure checks


@pytest.mark.parametrize("address,why", [
    ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("172.31.255.254", "private"),
    ("192.168.1.1", "private"), ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"),
    ("::1", "loopback"), ("fe80::1", "link_local"), ("fe80::1%eth0", "link_local"),
    ("169.254.10.10", "link_local"), ("169.254.169.254", "cloud_metadata"),
    ("fd00:ec2::254", "cloud_metadata"), ("224.0.0.1", "multicast"), ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"), ("::", "unspecified"), ("fc00::5", "private"),
    ("::ffff:127.0.0.1", "loopback"), ("::ffff:10.0.0.1", "private"),
    ("2002:7f00:1::", "loopback"), ("100.64.0.1", "not_global"), ("240.0.0.1", "reserved"),
    ("8.8.8.8", None), ("93.184.216.34", None), ("172.32.0.1", None),
    ("2606:4700:4700::1111", None), ("not an address", "unparsable"),
])
def test_address_refusal(address, why):
    assert address_refusal(address) == why


@pytest.mark.parametrize("address,why", [
    ("127.0.0.1", None), ("10.0.0.1", None), ("fe80::1", None), ("192.168.0.1", None),
    ("169.254.169.254", "cloud_metadata"), ("fd00:ec2::254", "cloud_metadata"),
    ("224.0.0.1", "multicast"), ("0.0.0.0", "unspecified"), ("8.8.8.8", None),
])
def test_allow_private_still_refuses_metadata_multicast_unspecified(address, why):
    assert address_refusal(address, allow_private=True) == why


def test_a_name_with_any_private_address_is_refused_whole():
    table = {"mixed.test": ["93.184.216.34", "10.0.0.7"], "public.test": ["93.184.216.34"]}

    def resolve(host, port):
        if host not in table:
            raise OSError("Name or service not known")
        return table[host]

    assert checked_addresses("public.test", 80, False, resolve) == ["93.184.216.34"]
    with pytest.raises(Stop) as stop:
        checked_addresses("mixed.test", 80, False, resolve)
    assert (stop.value.outcome, stop.value.reason) == ("refused", "address")
    assert "10.0.0.7 (private)" in stop.value.error
    with pytest.raises(Stop) as stop:
        checked_addresses("nowhere.test", 80, False, resolve)
    assert (stop.value.outcome, stop.value.reason) == ("failed", "dns")


@pytest.mark.parametrize("raw,expected", [
    ("http://Example.com/a#x", ("http://example.com/a", "")),
    ("  https://example.com  ", ("https://example.com/", "")),
    ("ftp://example.com/file", ("ftp://example.com/file", "scheme")),
    ("mailto:someone@example.org", ("mailto:someone@example.org", "scheme")),
    ("javascript:alert(1)", ("javascript:alert(1)", "scheme")),
    ("file:///etc/passwd", ("file:///etc/passwd", "scheme")),
    ("http://", ("http://", "invalid_url")),
    ("not a url", ("not a url", "invalid_url")),
    ("//example.com/x", ("//example.com/x", "invalid_url")),
    ("http://[::1", ("http://[::1", "invalid_url")),
])
def test_check_url_scheme_and_validity(raw, expected):
    assert check_url(raw) == expected


@pytest.mark.parametrize("text,n", [
    ("10MB", 10 * 1024 ** 2), ("512KB", 512 * 1024), ("512kb", 512 * 1024),
    ("4096", 4096), ("1.5M", 1536 * 1024), ("2GiB", 2 * 1024 ** 3), ("7 B", 7), ("1k", 1024),
    (300, 300),
])
def test_parse_size(text, n):
    assert parse_size(text) == n


@pytest.mark.parametrize("text", ["", "MB", "10 XB", "ten", "-5", "0", "1.5.2MB", "10MBB"])
def test_parse_size_rejects_with_the_value_named(text):
    with pytest.raises(ValueError, match="size"):
        parse_size(text)


def test_cli_rejects_a_bad_max_bytes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["crawl", "--urls", "u.txt", "--out", "o", "--max-bytes", "lots"])
    assert "not a size: 'lots'" in capsys.readouterr().err


def test_robots_policy_rules_and_conventions():
    body = (b"User-agent: wikisum-test-crawler\nDisallow: /mine/\nCrawl-delay: 2\n\n"
            b"User-agent: *\nDisallow: /\n")
    policy = robots_policy(200, body, UA)
    assert policy.refusal("http://h.test/page", UA) is None
    stop = policy.refusal("http://h.test/mine/x", UA)
    assert (stop.outcome, stop.reason) == ("refused", "robots")
    assert policy.refusal("http://h.test/page", "OtherBot/1.0").reason == "robots"
    assert policy.crawl_delay_s == 2.0
    assert robots_policy(200, b"User-agent: *\nCrawl-delay: 9999\n", UA).crawl_delay_s == 60.0
    # 4xx: allow all; 5xx: nothing is fetched, and the URLs are tried again on resume.
    for status in (401, 403, 404, 410):
        assert robots_policy(status, b"User-agent: *\nDisallow: /\n", UA).refusal(
            "http://h.test/x", UA) is None
    stop = robots_policy(503, b"", UA).refusal("http://h.test/x", UA)
    assert (stop.outcome, stop.reason) == ("failed", "robots_unavailable")
    assert not is_done(stop.outcome, 0)
    unreachable = robots_policy_after_stop(Stop("failed", "timeout", "no answer"))
    assert unreachable.refusal("http://h.test/x", UA).reason == "robots_unavailable"
    refused = robots_policy_after_stop(Stop("refused", "address", "10.0.0.1 (private)"))
    assert refused.refusal("http://h.test/x", UA).reason == "address"
    assert robots_policy_after_stop(Stop("failed", "tls", "expired")).refusal(
        "http://h.test/x", UA).reason == "tls"
    assert robots_policy_after_stop(Stop("failed", "redirect_loop")).refusal(
        "http://h.test/x", UA) is None


@pytest.mark.parametrize("outcome,status,done", [
    ("fetched", 200, True), ("refused", 0, True), ("failed", 404, True), ("failed", 410, True),
    ("failed", 429, False), ("failed", 408, False), ("failed", 503, False),
    ("failed", 0, False), ("failed", 302, False), ("skipped", 0, False),
])
def test_is_done(outcome, status, done):
    assert is_done(outcome, status) is done


# --------------------------------------------------------------------------------------------
# One exchange, one crawler


@pytest.mark.parametrize("path", ["/drip", "/drip-headers"])
def test_dripping_server_cannot_hold_a_request_past_the_deadline(site, path):
    start = time.monotonic()
    with pytest.raises(FetchError) as err:
        http_get(site.url(path), "127.0.0.1", user_agent=UA, timeout_s=0.4, deadline_s=0.8,
                 max_bytes=MAX_BYTES)
    assert err.value.reason == "timeout" and err.value.retryable
    assert time.monotonic() - start < 2.0


def test_connection_goes_to_the_checked_address_with_the_original_host(site):
    """No second lookup: a name only our resolver knows reaches the server, Host intact."""
    seen = []

    def resolve(host, port):
        seen.append(host)
        return ["127.0.0.1"]

    outcome = Crawler(config(), resolve=resolve).fetch(f"http://site.test:{site.port}/page/b")
    assert (outcome.outcome, outcome.status) == ("fetched", 200)
    assert f"site.test:{site.port}" in site.hosts
    assert seen == ["site.test", "site.test"]  # robots.txt, then the page


@pytest.fixture(scope="module")
def tls_site(tmp_path_factory):
    """The same site over TLS, with a self-signed certificate for the name site.test."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=site.test", "-addext",
                    "subjectAltName=DNS:site.test"], check=True, capture_output=True)
    s = Site()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    s.server.socket = context.wrap_socket(s.server.socket, server_side=True)
    yield s
    s.close()


def test_https_sends_the_name_for_sni_and_verifies_certificates(tls_site):
    url = f"https://site.test:{tls_site.port}/page/a"
    resolve = lambda host, port: ["127.0.0.1"]  # noqa: E731
    untrusted = Crawler(config(), resolve=resolve).fetch(url)
    assert (untrusted.outcome, untrusted.reason) == ("failed", "tls")
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.error
    outcome = Crawler(config(verify_tls=False), resolve=resolve).fetch(url)
    assert (outcome.outcome, outcome.status, outcome.bytes) == ("fetched", 200,
                                                                len(page_html("a")))
    assert f"site.test:{tls_site.port}" in tls_site.hosts


def test_requests_to_a_host_are_spaced_and_bounded(site):
    crawler = Crawler(config(delay_s=0.15, per_host_concurrency=2))
    before = len(site.starts)
    urls = [site.url(f"/wait/{i}") for i in range(4)]
    outcomes = crawler.crawl(urls)
    assert [o.outcome for o in outcomes] == ["fetched"] * 4
    assert [o.url for o in outcomes] == urls
    starts = sorted(t for _, t in site.starts[before:])
    assert len(starts) == 5  # robots.txt and four pages
    assert min(b - a for a, b in zip(starts, starts[1:], strict=False)) >= 0.12
    assert site.max_in_flight == 2  # two at once, never three


def test_retries_back_off_exponentially_on_5xx_and_never_on_4xx(site):
    waits = []
    crawler = Crawler(config(retries=3, backoff_s=0.1), sleep=waits.append)
    before = site.snapshot()
    down = crawler.fetch(site.url("/down"))
    assert (down.outcome, down.reason, down.status, down.attempts) == ("failed", "http_status",
                                                                       503, 4)
    assert waits == [0.1, 0.2, 0.4]
    missing = crawler.fetch(site.url("/nowhere"))
    assert (missing.outcome, missing.status, missing.attempts) == ("failed", 404, 1)
    assert waits == [0.1, 0.2, 0.4]
    assert site.snapshot() - before == Counter({"/down": 4, "/nowhere": 1, "/robots.txt": 1})


def test_redirects_beyond_the_limit_fail(site):
    outcome = Crawler(config(max_redirects=1)).fetch(site.url("/chain/1"))
    assert (outcome.outcome, outcome.reason, outcome.status) == ("failed", "too_many_redirects",
                                                                 301)
    assert outcome.redirects == (site.url("/chain/2"), site.url("/page/c"))
    assert outcome.final_url == site.url("/chain/2")


# --------------------------------------------------------------------------------------------
# The whole job


def expected_outcomes(site: Site) -> dict[str, dict]:
    u = site.url
    fetched = dict(outcome="fetched", reason="ok", status=200, attempts=1, redirects=[],
                   truncated=False)
    return {
        u("/page/a"): dict(fetched, final_url=u("/page/a"), bytes=len(page_html("a"))),
        u("/page/b"): dict(fetched, final_url=u("/page/b"), bytes=len(page_html("b"))),
        u("/chain/1"): dict(fetched, final_url=u("/page/c"), redirects=[u("/chain/2"),
                                                                         u("/page/c")]),
        u("/big"): dict(fetched, final_url=u("/big"), truncated=True, bytes=MAX_BYTES),
        u("/flaky"): dict(fetched, final_url=u("/flaky"), attempts=2),
        u("/loop/a"): dict(outcome="failed", reason="redirect_loop", status=302, attempts=1,
                           final_url=u("/loop/b"), redirects=[u("/loop/b"), u("/loop/a")]),
        u("/private/secret"): dict(outcome="refused", reason="robots", status=0, attempts=0,
                                   final_url="", warc_file=""),
        u("/slow"): dict(outcome="failed", reason="timeout", status=0, attempts=2,
                         final_url="", warc_file=""),
        u("/down"): dict(outcome="failed", reason="http_status", status=503, attempts=2),
        u("/missing"): dict(outcome="failed", reason="http_status", status=404, attempts=1),
        u("/to-metadata"): dict(outcome="refused", reason="address", status=302, attempts=0,
                                final_url=u("/to-metadata"),
                                redirects=["http://169.254.169.254/latest/meta-data/"]),
        "ftp://127.0.0.1/file.txt": dict(outcome="refused", reason="scheme", attempts=0),
        "mailto:crawl@example.org": dict(outcome="refused", reason="scheme", attempts=0),
        "http://": dict(outcome="failed", reason="invalid_url"),
        "not a url": dict(outcome="failed", reason="invalid_url"),
    }


def write_url_files(site: Site, folder: Path) -> list[str]:
    u = site.url
    first = folder / "missing_urls.txt"
    first.write_text("\n".join([
        "# cited pages Common Crawl did not have", u("/page/a"),
        u("/page/a").replace("http://", "HTTP://") + "#again", u("/page/b"), "",
        u("/chain/1"), u("/loop/a"), u("/private/secret"), u("/slow"), u("/big"),
        u("/flaky"), u("/down"), u("/missing"), u("/to-metadata"),
        "ftp://127.0.0.1/file.txt", "http://", "not a url"]) + "\n")
    second = folder / "missing_search_urls.txt.gz"  # lists may come compressed
    second.write_bytes(gzip.compress(f"{u('/page/b')}\nmailto:crawl@example.org\n".encode()))
    return ["--urls", str(first), "--urls", str(second)]


def run_crawl(url_args: list[str], out: Path, *extra: str) -> int:
    return cli.main(["crawl", *url_args, "--out", str(out), "--timeout", str(TIMEOUT_S),
                     "--delay", "0.01", "--retries", "1", "--backoff", "0.05",
                     "--max-bytes", "100KB", "--user-agent", UA, *extra])


def read_log(out: Path, run_id: str | None = None) -> dict[str, dict]:
    pattern = f"crawl_log-{run_id or '*'}-*.parquet"
    rows = {}
    for path in sorted((out / "log").glob(pattern)):
        table = pq.read_table(path)
        assert table.schema.equals(schemas.CRAWL_LOG, check_metadata=False)
        for row in table.to_pylist():
            assert row["url"] not in rows, f"{row['url']} logged twice"
            rows[row["url"]] = row
    return rows


def assert_outcomes(rows: dict[str, dict], expected: dict[str, dict]) -> None:
    assert sorted(rows) == sorted(expected)
    for url, want in expected.items():
        got = {k: rows[url][k] for k in want}
        assert got == want, url


@pytest.fixture(scope="module")
def crawled(site, tmp_path_factory):
    folder = tmp_path_factory.mktemp("crawl")
    url_args = write_url_files(site, folder)
    out = folder / "out"
    before = site.snapshot()
    assert run_crawl(url_args, out, "--allow-private") == 0
    hits = site.snapshot() - before
    summary = (out / "summary.json").read_text()
    return out, url_args, hits, summary


def test_crawl_gives_exactly_the_expected_outcomes(site, crawled):
    out, _, _, _ = crawled
    rows = read_log(out)
    assert_outcomes(rows, expected_outcomes(site))
    jsonl = [line for p in (out / "log").glob("*.jsonl") for line in p.read_text().splitlines()]
    assert len(jsonl) == len(rows)


def test_crawl_requests_each_page_once_and_obeys_robots(site, crawled):
    _, _, hits, _ = crawled
    assert hits == Counter({
        "/robots.txt": 1, "/page/a": 1, "/page/b": 1, "/chain/1": 1, "/chain/2": 1,
        "/page/c": 1, "/loop/a": 1, "/loop/b": 1, "/slow": 2, "/big": 1, "/flaky": 2,
        "/down": 2, "/missing": 1, "/to-metadata": 1})
    assert UA in site.agents


def test_summary_balances_urls_in_and_outcomes_out(crawled):
    out, _, _, text = crawled
    summary = json.loads(text)
    assert (summary["lines"], summary["ignored_lines"], summary["duplicates"],
            summary["urls"]) == (17, 2, 2, 15)
    assert summary["balanced"] is True
    assert summary["outcomes"] == {"fetched": 5, "refused": 4, "failed": 6, "skipped": 0}
    assert summary["reasons"]["failed:http_status"] == 2
    assert summary["reasons"]["refused:scheme"] == 2
    printed = crawl_cmd.format_summary(summary, str(out))
    assert "URLs in 15  outcomes out 15" in printed and "NOT BALANCED" not in printed
    assert "failed          6  (http_status 2, invalid_url 2, redirect_loop 1, timeout 1)" \
        in printed
    assert f"wikisum ingest --wiki DUMP --warc '{out}/warc/*.warc.gz'" in printed


def _records(path: Path) -> list:
    with open(path, "rb") as f:
        return [(r.rec_type, r.rec_headers, r.http_headers, r.content_stream().read())
                for r in ArchiveIterator(f)]


def test_warc_reads_back_with_request_and_response_records(site, crawled):
    out, _, _, _ = crawled
    files = sorted((out / "warc").glob("*.warc.gz"))
    assert len(files) == 1 and files[0].name.startswith("crawl-")
    records = _records(files[0])
    assert records[0][0] == "warcinfo"
    pairs = records[1:]
    assert [r[0] for r in pairs] == ["request", "response"] * (len(pairs) // 2)
    responses = [(h.get_header("WARC-Target-URI"), int(hh.get_statuscode()))
                 for t, h, hh, _ in pairs if t == "response"]
    u = site.url
    assert sorted(responses) == sorted([
        (u("/page/a"), 200), (u("/page/b"), 200), (u("/chain/1"), 302), (u("/chain/2"), 301),
        (u("/page/c"), 200), (u("/loop/a"), 302), (u("/loop/b"), 302), (u("/big"), 200),
        (u("/flaky"), 500), (u("/flaky"), 200), (u("/down"), 503), (u("/down"), 503),
        (u("/missing"), 404), (u("/to-metadata"), 302)])
    for t, h, hh, _ in pairs:
        assert h.get_header("WARC-IP-Address") == "127.0.0.1"
        assert h.get_header("WARC-Date")
        if t == "request":
            assert hh.get_header("Host") == f"127.0.0.1:{site.port}"
            assert hh.get_header("User-Agent") == UA


def test_log_offsets_point_at_the_final_response(site, crawled):
    out, _, _, _ = crawled
    rows = read_log(out)
    for row in rows.values():
        if not row["warc_file"]:
            assert row["outcome"] != "fetched"
            continue
        with open(row["warc_file"], "rb") as f:
            f.seek(row["warc_offset"])
            rec = next(iter(ArchiveIterator(f)))
            body = rec.content_stream().read()
            assert rec.rec_type == "response"
            assert rec.rec_headers.get_header("WARC-Target-URI") == row["final_url"]
            assert int(rec.http_headers.get_statuscode()) == row["status"]
            assert len(body) == row["bytes"]
            truncated = rec.rec_headers.get_header("WARC-Truncated")
            assert truncated == ("length" if row["truncated"] else None)
    assert rows[site.url("/page/a")]["bytes"] == len(page_html("a"))
    big = rows[site.url("/big")]
    with open(big["warc_file"], "rb") as f:
        f.seek(big["warc_offset"])
        assert next(iter(ArchiveIterator(f))).content_stream().read() == b"x" * MAX_BYTES


def dump(site: Site) -> bytes:
    u = site.url
    articles = [
        (1, "Kestrel Works", "'''Kestrel Works''' is a water mill on the [[Ostra]] in the "
         f"valley of Ostrania.<ref>{{{{cite web |url={u('/page/a')} |title=Mill}}}}</ref> It "
         f"still grinds corn for the villages.<ref>{u('/page/b')}</ref>\n\n== History ==\n"
         "It was first built in 1760."),
        (2, "Ostra", "The '''Ostra''' is a river of Ostrania that flows north to the sea."
         f"<ref>{{{{cite web |url={u('/page/c')}}}}}</ref><ref>{u('/missing')}</ref>"),
        # cites a URL that redirects twice: the crawl stores 302s under it, the page under the
        # end of the chain, and ingest follows the redirect records to it
        (3, "Weir Lane", "'''Weir Lane''' is a street of Ostrania by the river."
         f"<ref>{{{{cite web |url={u('/chain/1')}}}}}</ref>"),
    ]
    pages = "".join(
        f"<page><title>{title}</title><ns>0</ns><id>{i}</id><revision><id>{10 + i}</id>"
        f"<text>{escape(text)}</text></revision></page>\n" for i, title, text in articles)
    xml = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11">\n'
           f"{pages}</mediawiki>\n")
    return bz2.compress(xml.encode())


def test_ingest_builds_articles_from_the_crawled_warc(site, crawled, tmp_path):
    out, _, _, _ = crawled
    wiki = tmp_path / "enwiki-test-pages-articles.xml.bz2"
    wiki.write_bytes(dump(site))
    ingest_out = tmp_path / "ingest"
    assert cli.main(["ingest", "--wiki", str(wiki), "--warc", str(out / "warc" / "*.warc.gz"),
                     "--out", str(ingest_out), "--num-shards", "1"]) == 0
    rows = {r["title"]: r for r in pq.read_table(ingest_out / "articles").to_pylist()}
    assert sorted(rows) == ["Kestrel Works", "Ostra", "Weir Lane"]
    mill, river, lane = rows["Kestrel Works"], rows["Ostra"], rows["Weir Lane"]
    assert (lane["citations_listed"], lane["citations_found"]) == (1, 1)
    assert [r["url"] for r in lane["references"]] == [site.url("/page/c")]
    assert [r["paragraphs"] for r in lane["references"]] == [PAGES["c"]]
    assert [r["url"] for r in mill["references"]] == [site.url("/page/a"), site.url("/page/b")]
    assert [r["paragraphs"] for r in mill["references"]] == [PAGES["a"], PAGES["b"]]
    assert (river["citations_listed"], river["citations_found"]) == (2, 1)
    assert [r["paragraphs"] for r in river["references"]] == [PAGES["c"]]
    for ref in mill["references"] + river["references"] + lane["references"]:
        assert Path(ref["source_file"]).parent == out / "warc"


def test_without_allow_private_the_same_urls_are_refused(site, crawled):
    args, _ = cli.build_parser().parse_known_args(["crawl", "--urls", "u.txt", "--out", "o"])
    assert crawl_cmd.config_from_args(args).allow_private is False  # the command's default
    urls = [url for url in expected_outcomes(site) if url.startswith("http://127.0.0.1")]
    sink = crawl.WarcSink(str(crawled[0] / "unused"), "public-only", "127.0.0.1", 1 << 20)
    before = site.snapshot()
    outcomes = Crawler(config(allow_private=False), sink).crawl(urls)
    assert site.snapshot() == before  # not even robots.txt was asked for
    assert [(o.url, o.outcome, o.reason, o.status, o.attempts, o.warc_file) for o in outcomes] \
        == [(url, "refused", "address", 0, 0, "") for url in urls]
    assert all("127.0.0.1 (loopback)" in o.error for o in outcomes)
    assert sink.files == []


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha1(p.read_bytes()).hexdigest() for p in folder.glob("*.warc.gz")}


def test_resumed_crawl_fetches_nothing_twice(site, crawled):
    out, url_args, _, _ = crawled
    first_warcs = _digests(out / "warc")
    first_logs = {p.name for p in (out / "log").glob("*.parquet")}
    before = site.snapshot()
    assert run_crawl(url_args, out, "--allow-private") == 0
    hits = site.snapshot() - before
    # Only what did not settle is asked for again: the timeout, the 503, the loop (and the
    # host's robots.txt, once); nothing fetched, refused or 404 is.
    assert hits == Counter({"/robots.txt": 1, "/slow": 2, "/down": 2, "/loop/a": 1,
                            "/loop/b": 1})
    new_logs = {p.name for p in (out / "log").glob("*.parquet")} - first_logs
    assert len(new_logs) == 1
    run_id = next(iter(new_logs))[len("crawl_log-"):-len("-00000-of-00001.parquet")]
    rows = read_log(out, run_id)
    expected = {}
    for url, want in expected_outcomes(site).items():
        if want["outcome"] in ("fetched", "refused") or want.get("status") == 404:
            want = dict(outcome="skipped", reason="already_done", attempts=0, warc_file="")
        expected[url] = want
    assert_outcomes(rows, expected)
    # Earlier WARC files are untouched; the new one has the new run's name.
    warcs = _digests(out / "warc")
    assert {k: warcs[k] for k in first_warcs} == first_warcs
    assert [name for name in warcs if name not in first_warcs] == [
        name for name in warcs if name.startswith(f"crawl-{run_id}-")]
    assert len(warcs) == len(first_warcs) + 1


def test_warc_parts_continue_and_never_overwrite(site, tmp_path):
    cfg = config()
    sink = crawl.WarcSink(str(tmp_path), "run1", "127.0.0.1", part_bytes=1)
    existing = tmp_path / f"{sink.prefix}-00000.warc.gz"
    existing.write_bytes(b"an earlier file")
    outcomes = Crawler(cfg, sink).crawl([site.url("/page/a"), site.url("/page/b")])
    sink.close()
    assert existing.read_bytes() == b"an earlier file"
    assert [Path(p).name for p in sink.files] == [f"{sink.prefix}-00001.warc.gz",
                                                 f"{sink.prefix}-00002.warc.gz"]
    assert sorted(Path(o.warc_file).name for o in outcomes) == [Path(p).name
                                                               for p in sink.files]
