"""Ranged fetches against the loopback Common Crawl server: the record checks (a wrong or cut
range is a counted failure, never a corrupt WARC), retries, and the WARC output read back."""

from __future__ import annotations

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
