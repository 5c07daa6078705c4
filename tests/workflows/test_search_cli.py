"""`wikisum search-index` and `wikisum search --index` on the sample, and `build --search
local:INDEX`, which joins the search results into the built articles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wikisum.core import shards
from wikisum.pipeline.search import index as idx
from wikisum.pipeline.search.sites import excluded
from wikisum.pipeline.urls import normalize_title, normalize_url
from wikisum.workflows import cli


def inputs(sample: Path) -> list[str]:
    return ["--warc", str(sample / "warc" / "*.warc.gz"),
            "--wet", str(sample / "wet" / "*.warc.wet.gz")]


def search_titles(index: Path, titles: Path, tmp_path: Path) -> tuple[list[str], dict]:
    """``wikisum search --index INDEX --titles TITLES`` into ``tmp_path``: the titles of the
    results file in order, and the run's summary."""
    out = tmp_path / "r.jsonl"
    assert cli.main(["search", "--index", str(index), "--titles", str(titles),
                     "--out", str(out)]) == 0
    return ([json.loads(line)["title"] for line in out.read_text().splitlines()],
            json.loads((tmp_path / "r.summary.json").read_text()))


@pytest.fixture(scope="module")
def sample_index(sample_corpus, tmp_path_factory) -> Path:
    sample, _ = sample_corpus
    out = tmp_path_factory.mktemp("index") / "index"
    assert cli.main(["search-index", *inputs(sample), "--out", str(out), "--shards", "3"]) == 0
    return out


def test_the_index_holds_the_sample_pages_but_wikipedia(sample_index, sample_corpus):
    record = json.loads((sample_index / idx.RECORD).read_text())
    info, stages = record["index"], record["stages"]
    assert record["balanced"] and len(info["shards"]) == 3
    pages = stages["index_pages"]
    assert info["documents"] == pages["kept"] == sum(s["documents"] for s in info["shards"])
    # every Wikipedia page the sample captured is left out, by host
    assert pages["dropped"]["wikipedia"] > 0
    assert info["engine"] == "tantivy" and info["lang"] == "en" and info["stemmer"] == "english"


@pytest.fixture(scope="module")
def sample_results(sample_index, sample_corpus, tmp_path_factory) -> Path:
    sample, _ = sample_corpus
    out = tmp_path_factory.mktemp("search") / "results.jsonl"
    assert cli.main(["search", "--index", str(sample_index), "--wiki",
                     str(sample / "enwiki-sample-pages-articles.xml.bz2"),
                     "--out", str(out)]) == 0
    return out


def test_every_article_gets_its_top_ten_without_wikipedia(sample_results, sample_corpus):
    sample, manifest = sample_corpus
    lines = [json.loads(line) for line in sample_results.read_text().splitlines()]
    articles = {r["title"] for r in shards.iter_rows([str(sample / "manifest-articles.parquet")],
                                                     columns=["title", "kind"])
                if r["kind"] == "article"}
    assert articles <= {line["title"] for line in lines}
    for line in lines:
        assert len(line["urls"]) <= 10 and len(line["scores"]) == len(line["urls"])
        assert line["scores"] == sorted(line["scores"], reverse=True)
        assert line["engine"] == "local" and line["query"] == line["title"]
        assert not any(excluded(url) for url in line["urls"])
    summary = json.loads(sample_results.with_name("results.summary.json").read_text())
    assert summary["balanced"] and summary["engine"] == "local"


def test_the_search_finds_the_pages_the_sample_lists_as_search_results(sample_results,
                                                                       sample_corpus):
    sample, _ = sample_corpus
    ours = {normalize_title(line["title"]): {normalize_url(u) for u in line["urls"]}
            for line in map(json.loads, sample_results.read_text().splitlines())}
    found = wanted = 0
    for line in map(json.loads, (sample / "search_results.jsonl").read_text().splitlines()):
        listed = {normalize_url(u) for u in line["urls"] if not excluded(u)} - {None}
        wanted += bool(listed)
        found += bool(listed & ours.get(normalize_title(line["title"]), set()))
    assert wanted and found / wanted >= 0.9


def test_bad_titles_are_counted_drops_and_the_rest_are_searched(sample_index, tmp_path):
    titles = tmp_path / "titles.txt"
    titles.write_bytes(b"Loumbury\n \t \n" + b"x" * 10_000 + b"\n" + b"a\x07b\n"
                       + b"\xff\xfe\n" + b"y" * 70_000 + b"\nloumbury\nSailhaven\n")
    found, summary = search_titles(sample_index, titles, tmp_path)
    assert found == ["Loumbury", "Sailhaven"]
    assert summary["stages"]["titles"]["dropped"] == {
        "title_too_long": 1, "control_characters": 1, "bad_encoding": 1, "line_too_long": 1,
        "duplicate_title": 1}
    assert {d[2] for d in summary["dropped_titles"]} == set(
        summary["stages"]["titles"]["dropped"])


def test_a_titles_file_of_nothing_writes_an_empty_results_file(sample_index, tmp_path, capsys):
    titles = tmp_path / "titles.txt"
    titles.write_text("\n\n")
    out = tmp_path / "r.jsonl"
    assert cli.main(["search", "--index", str(sample_index), "--titles", str(titles),
                     "--out", str(out)]) == 0
    assert out.read_text() == ""
    assert "no title was searched" in capsys.readouterr().err


@pytest.mark.parametrize("make", ["unfinished", "damaged", "other_version", "not_an_index"])
def test_an_index_that_cannot_be_used_is_one_line_naming_it(make, sample_index, tmp_path,
                                                            capsys):
    import shutil

    broken = tmp_path / "index"
    shutil.copytree(sample_index, broken)
    record = json.loads((broken / idx.RECORD).read_text())
    if make == "unfinished":
        (broken / idx.RECORD).unlink()
    elif make == "damaged":
        shard = broken / idx.SHARDS / record["index"]["run"] / "shard-00001-of-00003"
        victim = next(shard.glob("*.idx"))
        victim.write_bytes(victim.read_bytes()[:-7])
    elif make == "other_version":
        record["index"]["version"] = 99
        (broken / idx.RECORD).write_text(json.dumps(record))
    else:
        broken = tmp_path / "plain"
        broken.mkdir()
    titles = tmp_path / "t.txt"
    titles.write_text("Loumbury\n")
    out = tmp_path / "r.jsonl"
    with pytest.raises(SystemExit) as exit_:
        cli.main(["search", "--index", str(broken), "--titles", str(titles), "--out", str(out)])
    message = str(exit_.value.code)
    assert message.startswith("wikisum search: --index: ") and str(broken) in message
    assert "\n" not in message
    if make == "damaged":
        assert "shard-00001-of-00003 is damaged" in message and victim.name in message
    assert not out.exists()


def test_a_search_needs_titles_and_one_source_of_results(sample_index, tmp_path):
    out = str(tmp_path / "r.jsonl")
    with pytest.raises(SystemExit, match="no titles"):
        cli.main(["search", "--index", str(sample_index), "--out", out])
    titles = tmp_path / "t.txt"
    titles.write_text("x\n")
    with pytest.raises(SystemExit, match="one of --index INDEX"):
        cli.main(["search", "--titles", str(titles), "--out", out])


def test_a_rerun_replaces_the_index_and_leaves_no_earlier_shards(sample_corpus, tmp_path):
    sample, _ = sample_corpus
    out = tmp_path / "index"
    wet = ["--wet", str(sample / "wet" / "*.warc.wet.gz")]
    assert cli.main(["search-index", *wet, "--out", str(out), "--shards", "2"]) == 0
    mine = out / idx.SHARDS / "my-notes"
    mine.mkdir()
    (mine / "keep.txt").write_text("mine")
    assert cli.main(["search-index", *wet, "--out", str(out), "--shards", "1"]) == 0
    record = json.loads((out / idx.RECORD).read_text())
    assert sorted(p.name for p in (out / idx.SHARDS).iterdir()) == sorted(
        [record["index"]["run"], "my-notes"])
    assert (mine / "keep.txt").read_text() == "mine"
    assert [s["name"] for s in record["index"]["shards"]] == ["shard-00000-of-00001"]
    assert not list(out.glob(".temp-*"))


def test_build_with_a_local_index_joins_search_results(sample_index, sample_corpus, tmp_path,
                                                       capsys):
    sample, _ = sample_corpus
    out = tmp_path / "build"
    argv = ["build", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
            *inputs(sample), "--search", f"local:{sample_index}", "--out", str(out),
            "--vocab-size", "1000", "--no-learned"]
    assert cli.main(argv) == 0
    assert (out / "search" / "results.jsonl").is_file()
    sources = [ref["source"] for row in shards.iter_rows(
        sorted(map(str, (out / "ingest" / "articles").glob("*.parquet"))),
        columns=["references"]) for ref in row["references"]]
    assert sources.count("search") > 0 and sources.count("citation") > 0
    summary = json.loads((out / "ingest" / "summary.json").read_text())
    assert summary["stages"]["search_results"]["kept"] > 0
    capsys.readouterr()
    assert cli.main(argv) == 0  # a rerun finds every step done
    assert "search: done" in capsys.readouterr().out + capsys.readouterr().err


def test_build_search_options_are_checked_before_any_work(sample_corpus, tmp_path):
    sample, _ = sample_corpus
    dump = str(sample / "enwiki-sample-pages-articles.xml.bz2")
    out = tmp_path / "b"
    with pytest.raises(SystemExit, match="--search takes local:INDEX"):
        cli.main(["build", "--wiki", dump, "--search", "bing", "--out", str(out)])
    with pytest.raises(SystemExit, match="not both"):
        cli.main(["build", "--wiki", dump, "--search", "brave", "--search-results",
                  str(sample / "search_results.jsonl"), "--out", str(out)])
    assert not out.exists()


def test_build_with_a_web_search_api_joins_its_results(sample_corpus, tmp_path, capsys):
    """`build --search searxng` against a stand-in instance on loopback that answers, in
    SearXNG's JSON, each title with the pages the sample lists for it."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import parse_qs, urlsplit

    sample, _ = sample_corpus
    listed = {normalize_title(line["title"]): line["urls"] for line in map(
        json.loads, (sample / "search_results.jsonl").read_text().splitlines())}
    asked = []

    class SearXNG(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            query = parse_qs(urlsplit(self.path).query)
            asked.append(query["q"][0])
            urls = listed.get(normalize_title(query["q"][0]), [])
            body = json.dumps({"query": query["q"][0],
                               "results": [{"url": u, "title": "", "content": ""}
                                           for u in urls]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), SearXNG)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        out = tmp_path / "build"
        argv = ["build", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
                *inputs(sample), "--search", "searxng",
                f"--search-arg=--endpoint=http://127.0.0.1:{server.server_port}",
                "--search-arg=--qps=1000", "--out", str(out), "--vocab-size", "1000",
                "--no-learned"]
        assert cli.main(argv) == 0
    finally:
        server.shutdown()
    lines = [json.loads(x) for x in (out / "search" / "results.jsonl").read_text().splitlines()]
    assert lines and all(line["engine"] == "searxng" for line in lines)
    assert not any(excluded(u) for line in lines for u in line["urls"])
    sources = [ref["source"] for row in shards.iter_rows(
        sorted(map(str, (out / "ingest" / "articles").glob("*.parquet"))),
        columns=["references"]) for ref in row["references"]]
    assert sources.count("search") > 0
    assert len(asked) == len(lines)


def test_a_compressed_titles_file_reads_and_an_empty_query_is_no_title(sample_index, tmp_path):
    import gzip

    titles = tmp_path / "titles.txt.gz"
    titles.write_bytes(gzip.compress(b"Loumbury\n___\n" + b"Sailhaven\n" * 2))
    found, summary = search_titles(sample_index, titles, tmp_path)
    assert found == ["Loumbury", "Sailhaven"]
    assert summary["stages"]["titles"]["dropped"] == {"empty_title": 1, "duplicate_title": 1}
    assert [d[1] for d in summary["dropped_titles"]] == ["2", "4"]


def test_a_damaged_compressed_titles_file_keeps_the_titles_before(sample_index, tmp_path,
                                                                   capsys):
    import gzip

    titles = tmp_path / "titles.txt.gz"
    titles.write_bytes(gzip.compress(b"Loumbury\n" * 1 + b"Sailhaven\n" * 20000)[:-40])
    found, summary = search_titles(sample_index, titles, tmp_path)  # a counted, recorded drop
    assert "1 titles file(s) stopped being readable" in capsys.readouterr().err
    assert summary["stages"]["files"]["dropped"] == {"corrupt_file": 1}
    assert found == ["Loumbury", "Sailhaven"]
