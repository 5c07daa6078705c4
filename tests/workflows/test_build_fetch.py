"""`wikisum build --fetch-missing`: from a dump alone to a build, the missing references
fetched from a Common Crawl served on 127.0.0.1, every step resumable."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
from pathlib import Path

import pytest

from wikisum.core import ownership
from wikisum.pipeline import buildsteps, ingest
from wikisum.pipeline.sample import ccindex
from wikisum.pipeline.sample.ccserver import CommonCrawlServer
from wikisum.workflows import cli
from wikisum.workflows import ingest as ingest_cmd

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"


def run_cli(argv: list[str]) -> tuple[int, str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
        try:
            code = cli.main(argv) or 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
            if isinstance(exc.code, str):
                buf.write(exc.code + "\n")
    return code, buf.getvalue()


def fetch_args(server: CommonCrawlServer) -> list[str]:
    return ["--fetch-missing", "cc", "--cc-crawl", ccindex.CRAWL, "--cc-index-url", server.base,
            "--cc-data-url", server.base, "--cc-index-rate", "1000"]


@pytest.fixture(scope="module")
def small_sample(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("fetch") / "sample"
    assert run_cli(["-q", "sample", "--out", str(out), "--articles", "12"])[0] == 0
    return out


def test_a_dump_alone_builds_with_references_from_common_crawl(small_sample, tmp_path):
    build = tmp_path / "build"
    argv = ["build", "--wiki", str(small_sample / "enwiki-sample-pages-articles.xml.bz2"),
            "--search-results", str(small_sample / "search_results.jsonl"),
            "--out", str(build), "--vocab-size", "300", "--no-learned",
            "--model-inputs", "tfidf-combined-100"]
    with CommonCrawlServer(small_sample) as server:
        code, text = run_cli(argv + fetch_args(server))
        assert code == 0, text
        looked_up = server.requests["index"]
    routes = re.search(r"references by route: given (\d+), cc (\d+)", text)
    assert routes and int(routes.group(1)) == 0 and int(routes.group(2)) > 0, text
    assert (build / "data" / "dataset.json").exists()
    assert ownership.read_marker(str(build / "fetch" / "cc"))["command"] == "cc-fetch"
    missing = (build / "fetch" / "ingest" / "missing_urls.txt").read_text().split()
    assert missing and looked_up >= len(set(missing)) // 2
    steps = json.loads((build / buildsteps.STEPS_FILE).read_text())["steps"]
    assert set(steps) == {"ingest-missing", "ingest", "vocab", "rank"}

    # A rerun skips every step that is done; cc-fetch looks up again only what failed (the
    # sample's cut record), never what it fetched.
    with CommonCrawlServer(small_sample) as server:
        code, text = run_cli(argv + fetch_args(server))
        assert code == 0, text
        assert server.requests["index"] < looked_up / 4
    for step in ("ingest (to find missing references): done", "ingest: done", "vocab: done",
                 "rank: done"):
        assert step in text, text


def test_a_build_that_joins_nothing_names_the_lists_and_the_option(small_sample, tmp_path):
    build = tmp_path / "build"
    code, text = run_cli(["build", "--wiki",
                          str(small_sample / "enwiki-sample-pages-articles.xml.bz2"),
                          "--out", str(build), "--vocab-size", "300"])
    assert code == 1
    assert str(build / "ingest" / "missing_urls.txt") in text
    assert "--fetch-missing cc" in text and "wikisum cc-fetch --urls" in text
    assert "Traceback" not in text


def test_the_network_failing_the_fetch_stops_the_build_with_its_cause(small_sample, tmp_path):
    build = tmp_path / "build"
    code, text = run_cli(["build", "--wiki",
                          str(small_sample / "enwiki-sample-pages-articles.xml.bz2"),
                          "--out", str(build), "--fetch-missing", "cc", "--cc-crawl",
                          ccindex.CRAWL, "--cc-index-url", "http://127.0.0.1:9",
                          "--cc-data-url", "http://127.0.0.1:9", "--cc-index-rate", "1000",
                          "--cc-retries", "0"])
    assert code == 1
    assert "network" in text and "127.0.0.1:9" in text, text
    assert not (build / "data").exists() or not (build / "data" / "dataset.json").exists()


@pytest.mark.parametrize("value", ["web", "cc,ftp", ","])
def test_fetch_missing_takes_cc_and_crawl_only(value, tmp_path):
    code, text = run_cli(["build", "--wiki", str(tmp_path / "d.xml"), "--out",
                          str(tmp_path / "b"), "--fetch-missing", value])
    assert code != 0 and "--fetch-missing takes cc, crawl or cc,crawl" in text


def test_cc_needs_a_crawl_with_the_index_server(tmp_path):
    code, text = run_cli(["build", "--wiki", str(tmp_path / "d.xml"), "--out",
                          str(tmp_path / "b"), "--fetch-missing", "cc"])
    assert code != 0 and "--cc-crawl" in text


def test_references_are_counted_by_the_folder_they_came_from():
    routes = {"cc": "/b/fetch/cc", "crawl": "gs://bucket/b/fetch/crawl"}
    assert buildsteps.route_of("/b/fetch/cc/warc/x.warc.gz", routes) == "cc"
    assert buildsteps.route_of("gs://bucket/b/fetch/crawl/warc/y.warc.gz", routes) == "crawl"
    assert buildsteps.route_of("/data/warc/z.warc.gz", routes) == buildsteps.GIVEN
    assert buildsteps.route_of("/b/fetch/ccx/warc/z.warc.gz", routes) == buildsteps.GIVEN


def test_a_step_is_redone_when_an_input_changes(tmp_path):
    source = tmp_path / "in.txt"
    source.write_text("a")
    fp = buildsteps.fingerprint(("settings", 1), [str(source)])
    steps = buildsteps.Steps(str(tmp_path))
    steps.finish("ingest", fp)
    assert buildsteps.Steps(str(tmp_path)).is_done("ingest", fp)
    assert buildsteps.fingerprint(("settings", 2), [str(source)]) != fp
    source.write_text("ab")
    assert buildsteps.fingerprint(("settings", 1), [str(source)]) != fp
    assert not steps.is_done("ingest", fp, str(tmp_path / "summary.json"))


def test_missing_hint_only_when_little_joined():
    def summary(links_in, kept, pages_kept):
        return {"stages": {"links": {"in": links_in, "kept": kept,
                                     "dropped": {"missing": links_in - kept}},
                           "pages": {"kept": pages_kept}}}

    assert ingest_cmd.missing_hint(summary(10, 10, 3), "o", "ingest") is None
    assert ingest_cmd.missing_hint(summary(10, 6, 3), "o", "ingest") is None
    hint = ingest_cmd.missing_hint(summary(10, 2, 3), "o", "ingest")
    assert "8 of 10" in hint and "o/missing_urls.txt" in hint
    assert "--fetch-missing" in ingest_cmd.missing_hint(summary(10, 9, 0), "o", "build")


def english_pages(count: int) -> list[bytes]:
    """``count`` English pages of the extraction set (a cheap tag strip and the language
    identifier), in name order."""
    from wikisum.pipeline import language

    chosen = []
    for path in sorted((SHARED / "extraction" / "pages").glob("*.html.gz")):
        html = gzip.decompress(path.read_bytes())
        text = re.sub(r"<script.*?</script>|<style.*?</style>|<[^>]+>", " ",
                      html.decode("utf-8", "replace"), flags=re.S)
        found = language.identify(text)
        if found.code == "en" and found.confidence >= 0.5 and len(text.split()) > 150:
            chosen.append(html)
            if len(chosen) == count:
                break
    return chosen


@pytest.mark.shared_data
@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data is absent")
def test_the_real_dump_and_warcs_build_with_fetch_missing(tmp_path):
    """The shared real dump with the real wget WARCs joins none of its 73 citations; with
    --fetch-missing cc against a stand-in Common Crawl holding those URLs it builds."""
    dump = SHARED / "wikipedia" / "dumps" / "enwiki-table-markup.xml.bz2"
    warcs = str(SHARED / "warc" / "dolma-wget" / "*.warc.gz")
    first = tmp_path / "first"
    code, text = run_cli(["ingest", "--wiki", str(dump), "--warc", warcs, "--out", str(first)])
    assert "missing_urls.txt" in text and "--fetch-missing cc" in text
    urls = (first / ingest.MISSING_FILES[ingest.MISSING_CITATION]).read_text().split()
    assert len(urls) == 73
    standin = tmp_path / "cc"
    ccindex.write_standin(standin, list(zip(urls, english_pages(len(urls)), strict=True)))
    build = tmp_path / "build"
    with CommonCrawlServer(standin) as server:
        code, text = run_cli(["build", "--wiki", str(dump), "--warc", warcs,
                              "--out", str(build), "--vocab-size", "500", "--no-learned",
                              "--model-inputs", "tfidf-combined-100"] + fetch_args(server))
    assert code == 0, text
    routes = re.search(r"references by route: given (\d+), cc (\d+)", text)
    assert routes and int(routes.group(2)) > 0, text
    info = json.loads((build / "data" / "dataset.json").read_text())
    assert sum(info["rows"].values()) >= 1
