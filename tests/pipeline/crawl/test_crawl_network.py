"""The crawl when the network fails it: every URL on a port nobody listens on (a non-zero exit
naming the first cause, no ingest glob), and some of them beside a live site (a warning)."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from crawlsite import TIMEOUT_S, UA

from wikisum.workflows import cli
from wikisum.workflows import crawl as crawl_cmd


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then let go)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def crawl(tmp_path: Path, urls: list[str], capsys) -> tuple[int, dict, list[str]]:
    """Run the crawl -> (exit status, summary.json, the printed lines)."""
    listed = tmp_path / "urls.txt"
    listed.write_text("\n".join(urls) + "\n")
    out = tmp_path / "out"
    capsys.readouterr()
    status = cli.main(["crawl", "--urls", str(listed), "--out", str(out), "--timeout",
                       str(TIMEOUT_S), "--delay", "0", "--retries", "0", "--user-agent", UA,
                       "--allow-private"])
    printed = capsys.readouterr().out.rstrip("\n").splitlines()
    return status, json.loads((out / "summary.json").read_text()), printed


def test_an_offline_crawl_exits_non_zero_and_says_why_last(tmp_path, capsys):
    port = closed_port()
    urls = [f"http://127.0.0.1:{port}/a", f"http://127.0.0.1:{port}/b", "not a url"]
    status, summary, printed = crawl(tmp_path, urls, capsys)
    assert status == 1 and summary["balanced"]
    # robots.txt could not be had: the host's URLs end failed(robots_unavailable)
    assert summary["reasons"] == {"failed:robots_unavailable": 2, "failed:invalid_url": 1}
    first = summary["network"]["fetch"]["first"]
    assert first.split(": ", 1)[0] in urls[:2]  # the earlier settled of the two
    assert first.split(": ", 1)[1].startswith("robots.txt: connection: ConnectionRefusedError")
    assert summary["network"] == {"fetch": {"attempted": 2, "failed": 2, "first": first}}
    assert summary["causes"] == {"refused": {"count": 2, "example": first},
                                 "invalid_url": {"count": 1,
                                                 "example": "not a url: not an http(s) URL "
                                                            "with a host"}}
    line = f"crawl: every fetch failed for a network reason: 2 of 2 (first: {first}); " \
        "check the network"
    assert printed[-1] == line
    assert summary["network_failure"] == line == crawl_cmd.network_failure(summary)
    assert "  failures by cause:" in printed
    assert not list((tmp_path / "out").glob("warc/*.warc.gz"))
    assert not any("--warc" in p for p in printed)
    assert f"Nothing was fetched: no WARC file matches '{tmp_path}/out/warc/*.warc.gz'." \
        in printed


def test_a_crawl_some_of_whose_hosts_are_down_warns(site, tmp_path, capsys):
    port = closed_port()
    urls = [site.url("/page/a"), site.url("/missing"), f"http://localhost:{port}/a"]
    status, summary, printed = crawl(tmp_path, urls, capsys)
    assert status == 0
    assert summary["outcomes"]["fetched"] == 1
    assert {c: e["count"] for c, e in summary["causes"].items()} == {"http_4xx": 1,
                                                                     "refused": 1}
    assert summary["network"]["fetch"]["attempted"] == 3
    assert summary["network_failure"] is None and crawl_cmd.network_failure(summary) is None
    first = summary["network"]["fetch"]["first"]
    assert first.startswith(f"http://localhost:{port}/a: ")
    assert printed[-1] == (f"crawl: warning: 1 of 3 fetches failed for a network reason "
                           f"(first: {first}); a rerun with the same --out tries them again")
    warc = tmp_path / "out" / "warc"
    assert f"  wikisum ingest --wiki DUMP --warc '{warc}/*.warc.gz' [--warc OTHER_GLOB ...] " \
        "--out DIR" in printed
