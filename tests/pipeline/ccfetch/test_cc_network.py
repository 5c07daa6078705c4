"""cc-fetch when the network fails it: every look-up refused (an index URL nobody listens
on), every fetch refused, some look-ups dropped; the exit status, the closing lines, the
causes in the summary, and no ingest glob when no WARC file was written."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest

from wikisum.pipeline.ccfetch.surt import surt_key
from wikisum.workflows import ccfetch as ccfetch_cmd
from wikisum.workflows import cli

CRAWL = "CC-MAIN-2017-13"
URLS = ["http://a.test/page", "http://b.test/page", "http://c.test/drop"]


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class IndexServer:
    """A loopback URL index server: a URL with ``drop`` in it gets its connection closed
    without an answer; with ``page``, one capture (a 200 HTML record at offset 0 of
    ``crawl-data/x.warc.gz``); any other, 404 "No Captures found"."""

    def __init__(self):
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                url = parse_qs(urlsplit(self.path).query)["url"][0]
                if "drop" in url:
                    self.close_connection = True
                    return  # nothing written: the client sees the connection closed
                if "page" in url:
                    body = json.dumps({
                        "urlkey": surt_key(url), "timestamp": "20170301000000", "url": url,
                        "mime": "text/html", "status": "200", "offset": "0",
                        "length": "100", "filename": "crawl-data/x.warc.gz"}).encode()
                    status = 200
                else:
                    body, status = b'{"message": "No Captures found"}', 404
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def index():
    s = IndexServer()
    yield s
    s.close()


def cc_fetch(tmp_path: Path, urls: list[str], index_url: str, data_url: str,
             capsys) -> tuple[int, dict, list[str]]:
    """Run cc-fetch -> (exit status, summary.json, the printed lines)."""
    listed = tmp_path / "urls.txt"
    listed.write_text("\n".join(urls) + "\n")
    out = tmp_path / "cc"
    capsys.readouterr()
    status = cli.main(["cc-fetch", "--urls", str(listed), "--crawl", CRAWL, "--index-url",
                       index_url, "--data-url", data_url, "--index-rate", "1000",
                       "--retries", "0", "--backoff", "0", "--timeout", "5", "--out",
                       str(out)])
    printed = capsys.readouterr().out.rstrip("\n").splitlines()
    return status, json.loads((out / "summary.json").read_text()), printed


def test_an_offline_run_exits_non_zero_and_says_why_last(tmp_path, capsys):
    port = closed_port()
    status, summary, printed = cc_fetch(tmp_path, URLS, f"http://127.0.0.1:{port}",
                                        f"http://127.0.0.1:{port}", capsys)
    assert status == 1 and summary["balanced"]
    assert summary["reasons"] == {"failed:lookup": 3}
    assert summary["causes"] == {"refused": {"count": 3, "example": summary["causes"]
                                             ["refused"]["example"]}}
    first = summary["network"]["lookup"]["first"]
    assert first.startswith(f"http://127.0.0.1:{port}/{CRAWL}-index?url=http")
    assert first.endswith("Connection refused")
    assert summary["causes"]["refused"]["example"] == first
    assert summary["network"] == {"lookup": {"attempted": 3, "failed": 3, "first": first},
                                  "fetch": {"attempted": 0, "failed": 0, "first": ""}}
    line = (f"cc-fetch: every look-up failed for a network reason: 3 of 3 (first: {first}); "
            "check the network or --index-url")
    assert printed[-1] == line
    assert summary["network_failure"] == line == ccfetch_cmd.network_failure(summary)
    assert f"    refused             3  e.g. {first}" in printed
    # No WARC was written, and no glob is offered to ingest.
    assert not list((tmp_path / "cc").glob("warc/*.warc.gz"))
    assert not any("--warc" in p or "Read " in p for p in printed)
    assert f"Nothing was fetched: no WARC file matches '{tmp_path}/cc/warc/*.warc.gz'." \
        in printed


def test_fetches_that_all_fail_for_a_network_reason_fail_the_run(index, tmp_path, capsys):
    port = closed_port()
    status, summary, printed = cc_fetch(tmp_path, URLS[:2], index.base,
                                        f"http://127.0.0.1:{port}", capsys)
    assert status == 1
    assert summary["reasons"] == {"failed:connection": 2}
    assert summary["network"]["lookup"] == {"attempted": 2, "failed": 0, "first": ""}
    first = summary["network"]["fetch"]["first"]
    assert first.startswith(f"http://127.0.0.1:{port}/crawl-data/x.warc.gz: "
                            "ConnectionRefusedError")
    assert printed[-1] == (f"cc-fetch: every fetch failed for a network reason: 2 of 2 "
                           f"(first: {first}); check the network or --data-url")
    assert printed[-1] == ccfetch_cmd.network_failure(summary)


def test_some_lookups_failing_for_a_network_reason_is_a_warning(index, tmp_path, capsys):
    urls = ["http://a.test/none", "http://b.test/none", "http://c.test/drop"]
    status, summary, printed = cc_fetch(tmp_path, urls, index.base, index.base, capsys)
    assert status == 0
    assert summary["outcomes"]["not_in_index"] == 2 and summary["outcomes"]["failed"] == 1
    assert list(summary["causes"]) == ["reset"] and summary["causes"]["reset"]["count"] == 1
    first = summary["network"]["lookup"]["first"]
    assert "RemoteDisconnected" in first
    assert summary["network_failure"] is None and ccfetch_cmd.network_failure(summary) is None
    assert printed[-1] == (f"cc-fetch: warning: 1 of 3 look-ups failed for a network reason "
                           f"(first: {first}); a rerun with the same --out tries them again")
    assert not any("--warc" in p for p in printed)
    assert "No URL could be fetched from the crawls searched" in printed[-2]
    # Once a WARC file is there (an earlier run's, say), ingest's glob is offered.
    warc = tmp_path / "cc" / "warc"
    warc.mkdir(parents=True, exist_ok=True)
    (warc / "ccfetch-earlier-0-00000.warc.gz").write_bytes(b"")
    again = ccfetch_cmd.format_summary(summary, str(tmp_path / "cc")).splitlines()
    assert f"  wikisum ingest --wiki DUMP --warc '{warc}/*.warc.gz' [--warc OTHER_GLOB ...] " \
        "--out DIR" in again
    assert not any(p.startswith("Nothing was fetched") for p in again)
