"""The whole crawl job against a local site: outcomes, robots, summary, WARC read back and
fed to ``wikisum ingest``, refusals without --allow-private, and resuming."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from xml.sax.saxutils import escape

import pyarrow.parquet as pq
import pytest
from crawlsite import (
    MAX_BYTES,
    PAGES,
    TIMEOUT_S,
    UA,
    Site,
    config,
    page_html,
)
from warcio.archiveiterator import ArchiveIterator

from wikisum.core import schemas
from wikisum.pipeline.crawl.fetch import Crawler
from wikisum.pipeline.crawl.writer import WarcSink
from wikisum.workflows import cli
from wikisum.workflows import crawl as crawl_cmd


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
    assert summary["stages"]["lines"] == {"in": 19, "kept": 15, "balanced": True,
                                          "dropped": {"ignored": 2, "duplicate": 2}}
    assert summary["stages"]["urls"] == {"in": 15, "kept": 5, "balanced": True,
                                         "dropped": {"refused": 4, "failed": 6}}
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
    # The article's heading is kept with its paragraphs; the menu is not.
    assert [r["paragraphs"] for r in lane["references"]] == [["Notes c", *PAGES["c"]]]
    assert [r["url"] for r in mill["references"]] == [site.url("/page/a"), site.url("/page/b")]
    assert [r["paragraphs"] for r in mill["references"]] == [["Notes a", *PAGES["a"]],
                                                             ["Notes b", *PAGES["b"]]]
    assert (river["citations_listed"], river["citations_found"]) == (2, 1)
    assert [r["paragraphs"] for r in river["references"]] == [["Notes c", *PAGES["c"]]]
    for ref in mill["references"] + river["references"] + lane["references"]:
        assert Path(ref["source_file"]).parent == out / "warc"


def test_without_allow_private_the_same_urls_are_refused(site, tmp_path):
    args, _ = cli.build_parser().parse_known_args(["crawl", "--urls", "u.txt", "--out", "o"])
    assert crawl_cmd.config_from_args(args).allow_private is False  # the command's default
    urls = [url for url in expected_outcomes(site) if url.startswith("http://127.0.0.1")]
    sink = WarcSink(str(tmp_path / "unused"), "public-only", "127.0.0.1", 1 << 20)
    before = site.snapshot()
    outcomes = Crawler(config(allow_private=False), sink).crawl(urls)
    assert site.snapshot() == before  # not even robots.txt was asked for
    assert [(o.url, o.outcome, o.reason, o.status, o.attempts, o.warc_file) for o in outcomes] \
        == [(url, "refused", "address", 0, 0, "") for url in urls]
    assert all("127.0.0.1 (loopback)" in o.error for o in outcomes)
    assert sink.files == []


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha1(p.read_bytes()).hexdigest() for p in folder.glob("*.warc.gz")}


def test_resumed_crawl_fetches_nothing_twice(site, crawled, tmp_path):
    # A copy of the first run's output: the module's other tests read the original, in any
    # order.
    out = tmp_path / "out"
    shutil.copytree(crawled[0], out)
    url_args = crawled[1]
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


# A crawl in a child process, killed (SIGKILL) when it starts its second host: the first host's
# outcomes were written as soon as they were settled.
KILLED_CRAWL = """
import os, signal, sys
from wikisum.pipeline.crawl import job
from wikisum.workflows import cli

original, hosts = job.FetchHost.process, []

def process(self, item):
    hosts.append(item[0])
    if len(hosts) == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    yield from original(self, item)

job.FetchHost.process = process
sys.exit(cli.main({argv!r}))
"""


def test_a_killed_crawl_resumes_without_fetching_settled_urls_again(site, tmp_path):
    pages = [site.url("/page/a"), site.url("/page/b"),
             site.url("/page/c").replace("127.0.0.1", "localhost")]  # two hosts
    urls = tmp_path / "urls.txt"
    urls.write_text("\n".join(pages) + "\n")
    out = tmp_path / "out"
    argv = ["crawl", "--urls", str(urls), "--out", str(out), "--timeout", str(TIMEOUT_S),
            "--delay", "0", "--allow-private", "--user-agent", UA]
    before = site.snapshot()
    # A killed process removes nothing: what it had in the temporary folder stays in tmp_path.
    (tmp_path / "tmp").mkdir()
    done = subprocess.run([sys.executable, "-c", KILLED_CRAWL.format(argv=argv)],
                          capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    assert done.returncode == -9, done.stderr[-2000:]
    first = site.snapshot() - before
    host_logs = list((out / "log").glob("crawl_log-*-host-*.parquet"))
    assert len(host_logs) == 1  # the first host's, whole
    settled = {r["url"] for r in pq.read_table(host_logs[0]).to_pylist()}
    assert settled and settled < set(pages)
    before = site.snapshot()
    assert run_crawl(["--urls", str(urls)], out, "--allow-private") == 0
    again = site.snapshot() - before
    for url in settled:  # not asked for twice
        path = url.split(str(site.port), 1)[1]
        assert first[path] == 1 and again[path] == 0, path
    run_id = json.loads((out / "summary.json").read_text())["run_id"]
    rows = read_log(out, run_id)
    assert {u: r["outcome"] for u, r in rows.items() if u in settled} == {
        u: "skipped" for u in settled}
    assert {u: r["outcome"] for u, r in rows.items() if u not in settled} == {
        u: "fetched" for u in set(pages) - settled}
    # This run's per-host files gave way to its log; the killed run's stays: its only record.
    assert list((out / "log").glob("crawl_log-*-host-*.parquet")) == host_logs


def test_an_unreadable_earlier_log_is_skipped_with_a_warning(site, tmp_path, caplog):
    out = tmp_path / "out"
    (out / "log").mkdir(parents=True)
    (out / "log" / "crawl_log-crashed-00000-of-00001.parquet").write_bytes(b"PAR1 cut off")
    (out / ".wikisum").write_text('{"command": "crawl"}')  # the crashed crawl's marker
    urls = tmp_path / "urls.txt"
    urls.write_text(site.url("/page/a") + "\n")
    assert run_crawl(["--urls", str(urls)], out, "--allow-private") == 0
    assert "skipping an unreadable earlier log" in caplog.text
    summary = json.loads((out / "summary.json").read_text())
    assert summary["outcomes"]["fetched"] == 1 and summary["balanced"]
