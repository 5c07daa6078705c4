"""The whole cc-fetch job on the sample against the loopback Common Crawl server: ingest
without WARCs, cc-fetch what it misses, ingest again -> the same articles as an ingest of the
sample's own WARC files; each index source; resuming; the alias join."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from wikisum.core import outputs, shards
from wikisum.pipeline.sample import ccindex
from wikisum.pipeline.sample.ccserver import CommonCrawlServer
from wikisum.workflows import cli

CRAWL = ccindex.CRAWL


@pytest.fixture(scope="module")
def server(sample_corpus):
    with CommonCrawlServer(sample_corpus[0]) as s:
        yield s


def ingest(sample: Path, out: Path, *warc: str) -> Path:
    args = ["ingest", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
            "--search-results", str(sample / "search_results.jsonl"), "--out", str(out)]
    for pattern in warc:
        args += ["--warc", pattern]
    assert cli.main(args) == 0
    return out


def cc_fetch(server, out: Path, urls: list[Path], *extra: str) -> dict:
    status = cli.main(["cc-fetch", *[a for u in urls for a in ("--urls", str(u))],
                       "--crawl", CRAWL, "--index-url", server.base, "--data-url", server.base,
                       "--index-rate", "1000", "--backoff", "0.01", "--out", str(out), *extra])
    summary = json.loads((out / "summary.json").read_text())
    assert status == 0 and summary["balanced"], summary
    return summary


def article_rows(out: Path) -> dict[str, dict]:
    """Article rows by title, without where each reference was read (the file differs)."""
    rows = {}
    for r in shards.iter_rows(outputs.article_shards(str(out))):
        for ref in r["references"]:
            ref.pop("source_file")
        rows[r["title"]] = r
    return rows


def log_rows(out: Path, run_id: str) -> dict[str, dict]:
    rows = pq.read_table(next((out / "log").glob(f"cc_fetch_log-{run_id}-*.parquet")))
    return {r["url"]: r for r in rows.to_pylist()}


@pytest.fixture(scope="module")
def fetched(sample_corpus, server, tmp_path_factory):
    """ingest without WARCs -> cc-fetch (API) of its missing lists: (lists, out, summary)."""
    sample, _ = sample_corpus
    work = tmp_path_factory.mktemp("ccfetch")
    first = ingest(sample, work / "ingest0")
    lists = [first / "missing_urls.txt", first / "missing_search_urls.txt"]
    out = work / "cc"
    return lists, out, cc_fetch(server, out, lists)


def test_ingest_of_the_fetched_records_equals_ingest_of_the_sample_warcs(
        sample_corpus, fetched, tmp_path):
    sample, _ = sample_corpus
    _, out, summary = fetched
    direct = article_rows(ingest(sample, tmp_path / "direct", str(sample / "warc/*.warc.gz")))
    via_cc = article_rows(ingest(sample, tmp_path / "via_cc", str(out / "warc/*.warc.gz")))
    assert via_cc.keys() == direct.keys() and len(direct) == 60
    differing = [t for t in direct if direct[t] != via_cc[t]]
    assert differing == []
    assert summary["outcomes"]["fetched"] > 300


def test_every_url_has_the_outcome_its_capture_calls_for(sample_corpus, fetched):
    _, manifest = sample_corpus
    _, out, summary = fetched
    log = log_rows(out, summary["run_id"])
    docs = {d["url"]: d for d in manifest["documents"]}
    want = {"missing": ("not_in_index", "no_capture"), "not_found": ("not_in_index", "status"),
            "redirect": ("not_in_index", "redirect_target"),
            "non_html": ("not_in_index", "mime"), "truncated": ("failed", "truncated")}
    seen = set()
    for a in manifest["articles"]:
        for ref in a["references"]:
            row = log[ref["raw_url"]] if ref["raw_url"] in log else log.get(ref["url"])
            kind = ref["kind"]
            if row is None or kind not in want and kind != "two_captures":
                continue
            seen.add(kind)
            if kind == "two_captures":  # the later capture
                assert row["outcome"] == "fetched"
                newest = max(d["capture_date"] for d in manifest["documents"]
                             if d["url"] == ref["url"])
                assert row["capture_time"] == newest.replace("-", "").replace(":", "")[:-1] \
                    .replace("T", "")
            else:
                assert (row["outcome"], row["reason"]) == want[kind], (ref, row)
    assert seen >= set(want) | {"two_captures"}
    assert docs  # the manifest lists every capture
    stages = summary["stages"]
    assert stages["lookup"]["in"] == stages["lookup"]["kept"] + sum(
        stages["lookup"]["dropped"].values())
    assert stages["fetch"]["in"] == stages["fetch"]["kept"] + sum(
        stages["fetch"]["dropped"].values())
    assert summary["coverage"]["found"] == stages["lookup"]["kept"]


def test_a_rerun_fetches_only_what_is_not_settled(fetched, server):
    lists, out, first = fetched
    data_before = server.requests["data"]
    again = cc_fetch(server, out, lists)
    settled = first["outcomes"]["fetched"] + first["outcomes"]["not_in_index"]
    assert again["outcomes"]["skipped"] == settled
    assert again["outcomes"]["fetched"] == 0
    # Only the failed URL (the sample's cut record) is fetched again, and fails again.
    assert again["reasons"] == {"failed:truncated": 1, "skipped:already_done": settled}
    assert server.requests["data"] - data_before == 1


def test_the_columnar_index_finds_the_same_captures(sample_corpus, fetched, server, tmp_path):
    sample, _ = sample_corpus
    lists, api_out, api = fetched
    table = sample / ccindex.TABLE.format(crawl=CRAWL)
    col = cc_fetch(server, tmp_path / "col", lists, "--source", "columnar",
                   "--columnar-index", str(table.parent.parent.parent / "*" / "*" / "*.parquet"),
                   "--lookup-only")
    assert col["outcomes"]["found"] == api["stages"]["lookup"]["kept"]
    api_log, col_log = log_rows(api_out, api["run_id"]), log_rows(tmp_path / "col", col["run_id"])
    assert api_log.keys() == col_log.keys()
    for url, a in api_log.items():
        c = col_log[url]
        assert (c["capture_url"], c["filename"], c["offset"], c["length"]) == \
            (a["capture_url"], a["filename"], a["offset"], a["length"]), url
        if a["outcome"] == "not_in_index":
            assert (c["outcome"], c["reason"]) == (a["outcome"], a["reason"])


def test_a_citation_matched_by_its_surt_key_only_joins_through_an_alias(
        sample_corpus, server, tmp_path):
    """http vs https, www. and a trailing slash: Common Crawl's key matches them, and ingest
    joins the cited spelling through the alias record cc-fetch writes."""
    sample, manifest = sample_corpus
    article = next(a for a in manifest["articles"]
                   if any(r["kind"] == "page" and r["url"].startswith("http://www.")
                          and "citation" in r["sources"] for r in a["references"]))
    ref = next(r for r in article["references"] if r["kind"] == "page"
               and r["url"].startswith("http://www.") and "citation" in r["sources"])
    respelled = "https://" + ref["url"].removeprefix("http://www.") + "/"
    urls = tmp_path / "urls.txt"
    urls.write_text(respelled + "\n")
    summary = cc_fetch(server, tmp_path / "cc", [urls])
    assert summary["reasons"] == {"fetched:ok": 1}
    # The dump, with the citation spelled the new way.
    import bz2
    dump = bz2.decompress((sample / "enwiki-sample-pages-articles.xml.bz2").read_bytes())
    raw = ref["raw_url"].replace("&", "&amp;").encode()
    assert raw in dump
    wiki = tmp_path / "wiki"
    wiki.mkdir()
    (wiki / "enwiki-sample-pages-articles.xml.bz2").write_bytes(
        bz2.compress(dump.replace(raw, respelled.encode())))
    (wiki / "search_results.jsonl").write_text("")
    rows = article_rows(ingest(wiki, tmp_path / "ingest", str(tmp_path / "cc/warc/*.warc.gz")))
    found = rows[article["title"]]["references"]
    assert [r["url"] for r in found if r["source"] == "citation"] == [ref["url"]]
    assert rows[article["title"]]["citations_found"] == 1
