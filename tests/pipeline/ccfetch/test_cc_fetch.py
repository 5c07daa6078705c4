"""Ranged fetches against the loopback Common Crawl server: the record checks (a wrong or cut
range is a counted failure, never a corrupt WARC), retries, and the WARC output read back."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from wikisum.pipeline.ccfetch.captures import from_cdx
from wikisum.pipeline.ccfetch.client import Client, RequestError
from wikisum.pipeline.ccfetch.fetch import (
    BadRecord,
    Fetcher,
    Resolved,
    check_record,
)
from wikisum.pipeline.ccfetch.records import CcFetchConfig
from wikisum.pipeline.crawl.writer import WarcSink
from wikisum.pipeline.sample import ccindex
from wikisum.pipeline.sample.ccserver import CommonCrawlServer, Fault
from wikisum.pipeline.warcs import Alias, Capture, iter_records


@pytest.fixture(scope="module")
def server(sample_corpus):
    with CommonCrawlServer(sample_corpus[0]) as s:
        yield s


@pytest.fixture(scope="module")
def pages(sample_corpus):
    """Two 200 HTML captures of the sample's index."""
    root, _ = sample_corpus
    lines = ccindex.read_cdxj(root / ccindex.CDXJ.format(crawl=ccindex.CRAWL))
    caps = [from_cdx({"urlkey": k, "timestamp": t, **f}, ccindex.CRAWL) for k, t, f in lines]
    return [c for c in caps if c.status == 200 and c.mime == "text/html"][:2]


def fetcher(server, tmp_path, sleeps=None, **overrides):
    config = CcFetchConfig(urls=(), out=str(tmp_path), data_url=server.base, **overrides)
    client = Client(user_agent="t", timeout_s=2.0, retries=config.retries, backoff_s=0.5,
                    sleep=(sleeps.append if sleeps is not None else lambda s: None),
                    jitter=lambda: 1.0)
    sink = WarcSink(str(tmp_path / "warc"), "run", "g", 1 << 30, job="ccfetch")
    return Fetcher(config, client, sink), sink


def read_back(sink) -> list:
    sink.close()
    out = []
    for path in sink.files:
        with open(path, "rb") as f:
            out += [r for r in iter_records(f, path, max_bytes=1 << 24)
                    if isinstance(r, (Capture, Alias))]
    return out


def test_a_record_is_fetched_checked_and_written_as_it_came(server, pages, tmp_path,
                                                            sample_corpus):
    page = pages[0]
    f, sink = fetcher(server, tmp_path)
    cited = page.url.replace("http://", "HTTP://") + "#top"  # same URL, spelled otherwise
    o = f.fetch(Resolved(cited, page.urlkey, (page,)))
    assert (o.outcome, o.reason, o.bytes, o.attempts) == ("fetched", "ok", page.length, 1)
    original = (sample_corpus[0] / page.filename).read_bytes()
    (rec,) = read_back(sink)  # no alias: the spellings normalise alike
    written = open(o.warc_file, "rb").read()
    assert written[o.warc_offset:o.warc_offset + page.length] == \
        original[page.offset:page.offset + page.length]
    assert rec.url == page.url and rec.status == 200


def test_a_capture_spelled_otherwise_gets_an_alias_record(server, pages, tmp_path):
    page = pages[0]
    f, sink = fetcher(server, tmp_path)
    scheme, rest = page.url.split("://", 1)
    cited = ("https" if scheme == "http" else "http") + "://" + rest.removeprefix("www.") + "/"
    assert f.fetch(Resolved(cited, page.urlkey, (page,))).outcome == "fetched"
    rec, alias = read_back(sink)
    assert isinstance(alias, Alias) and (alias.url, alias.target) == (cited, page.url)


def test_a_shared_capture_is_fetched_once(server, pages, tmp_path):
    f, sink = fetcher(server, tmp_path)
    before = server.requests["data"]
    a = f.fetch(Resolved(pages[0].url, pages[0].urlkey, (pages[0],)))
    b = f.fetch(Resolved(pages[0].url + "?", pages[0].urlkey, (pages[0],)))
    assert (a.warc_file, a.warc_offset) == (b.warc_file, b.warc_offset)
    assert server.requests["data"] - before == 1


@pytest.mark.parametrize("mode, reason", [
    ("wrong_range", "not_gzip"), ("short_range", "short_read"), ("ignore_range", "no_range"),
])
def test_a_wrong_or_cut_range_is_a_counted_failure_and_nothing_is_written(
        server, pages, tmp_path, mode, reason):
    page = pages[1]
    server.faults[:] = [Fault(page.filename, mode, shift=7)]
    try:
        f, sink = fetcher(server, tmp_path)
        o = f.fetch(Resolved(page.url, page.urlkey, (page,)))
    finally:
        server.faults.clear()
    assert (o.outcome, o.reason, o.warc_file) == ("failed", reason, "")
    assert read_back(sink) == [] and sink.files == []


def test_5xx_is_retried_with_backoff_and_4xx_is_not(server, pages, tmp_path):
    page = pages[1]
    sleeps: list[float] = []
    server.faults[:] = [Fault(page.filename, "status", status=503, times=2)]
    try:
        f, _ = fetcher(server, tmp_path, sleeps)
        o = f.fetch(Resolved(page.url, page.urlkey, (page,)))
    finally:
        server.faults.clear()
    assert (o.outcome, o.attempts) == ("fetched", 3)
    assert sleeps == [0.5, 1.0]  # backoff doubled (jitter fixed at 1 here)
    sleeps.clear()
    server.faults[:] = [Fault(page.filename, "status", status=403)]
    try:
        f, _ = fetcher(server, tmp_path, sleeps)
        o = f.fetch(Resolved(page.url + "x", page.urlkey, (page,)))
    finally:
        server.faults.clear()
    assert (o.outcome, o.reason, o.attempts, sleeps) == ("failed", "http_status", 1, [])


def test_the_byte_budget_leaves_the_rest_found(server, pages, tmp_path):
    f, _ = fetcher(server, tmp_path)
    f.budget = pages[0].length
    first = f.fetch(Resolved(pages[0].url, pages[0].urlkey, (pages[0],)))
    second = f.fetch(Resolved(pages[1].url, pages[1].urlkey, (pages[1],)))
    assert (first.outcome, second.outcome, second.reason) == ("fetched", "found", "byte_budget")


def test_check_record_refuses_what_is_not_one_record_of_the_url(pages, sample_corpus):
    page = pages[0]
    data = (sample_corpus[0] / page.filename).read_bytes()[page.offset:page.offset + page.length]
    assert check_record(data, page).url == page.url
    cases = {
        "short_read": data[:-1],
        "not_gzip": b"x" * page.length,
    }
    two = data + data
    for reason, bad in cases.items():
        with pytest.raises(BadRecord) as e:
            check_record(bad, page)
        assert e.value.reason == reason, reason
    half = data[:len(data) // 2]  # a gzip member cut in the middle
    with pytest.raises(BadRecord) as e:
        check_record(half, replace(page, length=len(half)))
    assert e.value.reason == "truncated"
    with pytest.raises(BadRecord) as e:
        check_record(two, replace(page, length=len(two)))
    assert e.value.reason == "extra_data"
    with pytest.raises(BadRecord) as e:
        check_record(data, replace(page, url="https://other.example/", urlkey="example,other)/"))
    assert e.value.reason == "wrong_url"


def test_the_client_gives_up_after_its_retries(server):
    sleeps: list[float] = []
    client = Client(user_agent="t", timeout_s=2.0, retries=2, backoff_s=1.0,
                    sleep=sleeps.append, jitter=lambda: 1.5)
    server.faults[:] = [Fault("/always-busy", "status", status=503)]
    try:
        with pytest.raises(RequestError) as e:
            client.get(server.base + "/always-busy")
    finally:
        server.faults.clear()
    assert (e.value.reason, e.value.status, sleeps) == ("http_status", 503, [1.5, 3.0])


@pytest.mark.parametrize("host", ["169.254.169.254", "[::ffff:169.254.169.254]",
                                  "[::169.254.169.254]", "[64:ff9b::169.254.169.254]",
                                  "[2002:a9fe:a9fe::1]", "[fd00:ec2::254]"])
def test_the_client_never_connects_to_a_metadata_address(host, monkeypatch):
    """The index and data servers' addresses pass the crawl's check (private ones allowed):
    a metadata address, in any IPv6 spelling, is refused before any connection is tried."""
    import socket

    tried = []

    def connect(address, *args, **kwargs):
        tried.append(address)
        raise ConnectionRefusedError(111, "Connection refused")

    monkeypatch.setattr(socket, "create_connection", connect)
    sleeps: list[float] = []
    client = Client(user_agent="t", timeout_s=1.0, retries=2, backoff_s=1.0,
                    sleep=sleeps.append)
    with pytest.raises(RequestError) as e:
        client.get(f"http://{host}/latest/meta-data/")
    assert (e.value.reason, e.value.retryable, tried, sleeps) == ("address", False, [], [])
    assert "cloud_metadata" in e.value.detail
    # A loopback server (a local mirror) is still reached.
    with pytest.raises(RequestError) as e:
        client.get("http://127.0.0.1:9/x")
    assert e.value.reason == "connection" and tried == [("127.0.0.1", 9)] * 3


# A child process under a 1 GB address-space limit fetches from a loopback data server that
# answers every range with 1.5 GB: a capture the index says is 2^40 bytes long is refused
# before any request, and a small one is read no further than its length whether the server's
# Content-Length lies or the answer runs until the connection closes.
HUGE_RANGE = """
import json, resource, sys, threading
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from wikisum.pipeline.ccfetch.captures import IndexCapture
from wikisum.pipeline.ccfetch.client import Client
from wikisum.pipeline.ccfetch.fetch import Fetcher, Resolved
from wikisum.pipeline.ccfetch.records import CcFetchConfig
from wikisum.pipeline.crawl.writer import WarcSink

SEND = 3 << 29
asked = []

class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        asked.append(self.path)
        first, last = self.headers["Range"].removeprefix("bytes=").split("-")
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {first}-{last}/*")
        if "lying" in self.path:
            self.send_header("Content-Length", str(SEND))
        self.send_header("Connection", "close")
        self.end_headers()
        block = bytes(1 << 20)
        try:
            for _ in range(SEND >> 20):
                self.wfile.write(block)
        except OSError:
            pass

class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass

server = Server(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
config = CcFetchConfig(urls=(), out=sys.argv[1], retries=0,
                       data_url=f"http://127.0.0.1:{server.server_address[1]}")
client = Client(user_agent="t", timeout_s=5.0, retries=0, backoff_s=0)
sink = WarcSink(sys.argv[1] + "/warc", "run", "g", 1 << 30, job="ccfetch")
fetcher = Fetcher(config, client, sink)
got = []
for name, length in [("claims-2e40", 1 << 40), ("lying", 1000), ("close-delimited", 1000)]:
    c = IndexCapture("com,example)/", "http://example.com/", "20170301000000", 200, "text/html",
                     "", "", f"crawl-data/{name}.warc.gz", 0, length, "CC-MAIN-2017-13")
    o = fetcher.fetch(Resolved(c.url, c.urlkey, (c,)))
    got.append([name, o.outcome, o.reason])
sink.close()
with open("/proc/self/status") as status:
    peak = next(int(l.split()[1]) for l in status if l.startswith("VmHWM")) // 1024
print(json.dumps({"got": got, "asked": asked, "written": sink.files, "peak_mb": peak}))
"""


def test_a_huge_claimed_length_is_refused_before_fetching_and_reads_are_bounded(tmp_path):
    done = subprocess.run([sys.executable, "-c", HUGE_RANGE, str(tmp_path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["got"] == [["claims-2e40", "failed", "too_large"],
                             ["lying", "failed", "range_mismatch"],
                             ["close-delimited", "failed", "range_mismatch"]]
    assert result["asked"] == ["/crawl-data/lying.warc.gz", "/crawl-data/close-delimited.warc.gz"]
    assert result["written"] == [] and result["peak_mb"] < 600, result
