"""``wikisum ingest``: the join functions, Beam transforms, and the whole job on the generated
sample corpus checked against its manifest (and on the real files in ../shared/data)."""

from __future__ import annotations

import bz2
import io
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to
from builders import DUMP, reference

from wikisum.core import schemas
from wikisum.core.accounting import IN, KEPT
from wikisum.core.records import Link
from wikisum.core.text import words
from wikisum.pipeline.beamio import DEAD, TALLY
from wikisum.pipeline.ingest import MISSING_CITATION, MISSING_SEARCH
from wikisum.pipeline.ingest import search as ingest_search
from wikisum.pipeline.ingest.articles import ReadArticles
from wikisum.pipeline.ingest.assemble import FilterReferences
from wikisum.pipeline.ingest.config import AttachConfig
from wikisum.pipeline.ingest.references import JoinReferences, follow_redirects, join_by_url
from wikisum.pipeline.urls import normalize_url
from wikisum.workflows import cli

# Manifest outcome of a bad record -> the reason ingest gives it.
BAD_RECORD_REASON = {"non_html": "non_html", "truncated": "truncated",
                     "http_status": "http_status", "empty": "empty_text",
                     "too_large": "too_large"}

# --------------------------------------------------------------------------------------------
# Transforms


def test_join_keeps_one_capture_per_url():
    old, new = reference("u", "2019-01-01T00:00:00Z"), reference("u", "2020-01-01T00:00:00Z")
    link = Link(1, "citation", 0)
    with BeamTestPipeline() as p:
        out = ({"links": p | "L" >> beam.Create([("u", ("u", link))]),
                "refs": p | "R" >> beam.Create([("u", old), ("u", new)])}
               | beam.CoGroupByKey()
               | beam.FlatMap(join_by_url).with_outputs(
                   DEAD, TALLY, MISSING_CITATION, MISSING_SEARCH,
                   main="found"))
        assert_that(out.found, equal_to([(1, (link, new))]), label="kept")
        assert_that(out[DEAD] | beam.Map(lambda d: (d.url, d.reason, d.record)),
                    equal_to([("u", "superseded_capture", old.record_id)]), label="dead")


def test_join_by_url_transform_accounts_for_missing_and_unreferenced():
    ref_a, ref_b = reference("a", "d"), reference("b", "d")
    links = [("a", Link(1, "citation", 0)), ("a", Link(2, "search", 0)),
             ("c", Link(1, "citation", 1)), ("d", Link(2, "search", 1))]
    with BeamTestPipeline() as p:
        out = ({"links": p | "L" >> beam.Create([(url, (url, link)) for url, link in links]),
                "refs": p | "R" >> beam.Create([("a", ref_a), ("b", ref_b)])}
               | beam.CoGroupByKey()
               | beam.FlatMap(join_by_url).with_outputs(
                   DEAD, TALLY, MISSING_CITATION, MISSING_SEARCH,
                   main="found"))
        assert_that(out.found, equal_to([(1, (Link(1, "citation", 0), ref_a)),
                                         (2, (Link(2, "search", 0), ref_a))]), label="found")
        assert_that(out[MISSING_CITATION], equal_to(["c"]), label="missing_citation")
        assert_that(out[MISSING_SEARCH], equal_to(["d"]), label="missing_search")
        assert_that(out[DEAD] | beam.Map(lambda d: (d.url, d.stage, d.reason)),
                    equal_to([("c", "links", "missing"), ("d", "links", "missing"),
                              ("b", "captures", "unreferenced")]), label="dead")


# --------------------------------------------------------------------------------------------
# The job's stages, each a composite transform applied alone


def test_read_articles_matches_its_dumps_when_it_runs_and_accounts_for_every_page(tmp_path):
    (tmp_path / "a.xml.bz2").write_bytes(bz2.compress(DUMP.encode()))
    with BeamTestPipeline() as p:
        out = p | ReadArticles([f"{tmp_path}/*.xml.bz2"], "en", 1 << 20)
        assert_that(out["main"] | beam.Map(lambda a: (a.id, a.title, a.lead)),
                    equal_to([(1, "Alpha", "Alpha is a letter.")]), label="articles")
        assert_that(out[DEAD] | beam.Map(lambda d: (d.record, d.reason)),
                    equal_to([("2", "redirect"), ("3", "non_article_namespace")]), label="dead")
        assert_that(out[TALLY] | beam.CombinePerKey(sum),
                    equal_to([(("files", IN), 1), (("files", KEPT), 1),
                              (("pages", IN), 3), (("pages", "redirect"), 1),
                              (("pages", "non_article_namespace"), 1)]), label="tally")


def test_join_references_follows_redirects_and_lists_what_is_missing():
    page = reference("http://b.example/final", "2020-01-01T00:00:00Z")
    links = [("http://a.example/old", Link(1, "citation", 0)),
             ("http://c.example/", Link(1, "search", 0))]
    with BeamTestPipeline() as p:
        redirects = p | "Redirects" >> beam.Create([("http://a.example/old",
                                                     "http://b.example/final")])
        out = ((p | "Links" >> beam.Create(links),
                p | "Refs" >> beam.Create([(page.url, page)]))
               | JoinReferences(redirects))
        assert_that(out["main"], equal_to([(1, (Link(1, "citation", 0), page))]), label="found")
        assert_that(out[MISSING_SEARCH], equal_to(["http://c.example/"]), label="missing")
        assert_that(out[MISSING_CITATION], equal_to([]), label="cited")


def test_drop_clones_keeps_the_references_and_drops_the_article_itself():
    from wikisum.core.records import Article

    article = Article(7, "Alpha", "https://en.wikipedia.org/wiki/Alpha", "Alpha is a letter.",
                      (), ("http://ref.example/", "https://en.wikipedia.org/wiki/Alpha"), "d")
    good = reference("http://ref.example/", "d", text="Letters are written symbols of Greek.")
    own = reference("https://en.wikipedia.org/wiki/Alpha", "d", text="Alpha is a letter.")
    found = [(7, (Link(7, "citation", 0), good)), (7, (Link(7, "citation", 1), own))]
    with BeamTestPipeline() as p:
        out = ((p | "Articles" >> beam.Create([article]), p | "Found" >> beam.Create(found),
                p | "Listed" >> beam.Create([]))
               | FilterReferences(AttachConfig(), num_shards=4))
        assert_that(out["main"] | beam.Map(lambda kv: (kv[1]["id"], [r["url"] for r in kv[1][
            "references"]], kv[1]["self_removed"])),
                    equal_to([(7, ["http://ref.example/"], 1)]), label="rows")
        assert_that(out[DEAD] | beam.Map(lambda d: (d.url, d.reason)),
                    equal_to([("https://en.wikipedia.org/wiki/Alpha", "self")]), label="dead")


# --------------------------------------------------------------------------------------------
# The whole job on the sample corpus


def run_ingest(sample: Path, out: Path, *extra: str) -> int:
    return cli.main(["ingest", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
                     "--warc", str(sample / "warc" / "*.warc.gz"),
                     "--wet", str(sample / "wet" / "*.wet.gz"),
                     "--search-results", str(sample / "search_results.jsonl"),
                     "--out", str(out), "--num-shards", "3", *extra])


@pytest.fixture(scope="module")
def ingested(sample_corpus, tmp_path_factory):
    sample, manifest = sample_corpus
    out = tmp_path_factory.mktemp("ingest")
    assert run_ingest(sample, out) == 0
    rows = {}
    for path in sorted((out / "articles").glob("*.parquet")):
        table = pq.read_table(path)
        assert table.schema.equals(schemas.ARTICLES, check_metadata=False)
        rows.update({r["title"]: r for r in table.to_pylist()})
    dead = pq.read_table(out / "dead_letters").to_pylist()
    return out, manifest, rows, dead


def test_job_writes_every_article_with_its_lead_and_sections(ingested):
    _, manifest, rows, _ = ingested
    assert sorted(rows) == sorted(a["title"] for a in manifest["articles"])
    for art in manifest["articles"]:
        row = rows[art["title"]]
        assert row["lead"] == art["lead"]
        assert [s["title"] for s in row["sections"]] == art["section_titles"]
        assert row["url"] == art["url"] and row["id"] == art["page_id"]
        assert row["split"] in ("train", "dev", "test")


def test_job_attaches_exactly_the_good_references(ingested):
    _, manifest, rows, dead = ingested
    repeated = {(d["record"], d["url"]) for d in dead if d["reason"] == "duplicate_reference"}
    for art in manifest["articles"]:
        row = rows[art["title"]]
        got = {r["url"]: r for r in row["references"]}
        expected = {normalize_url(r["url"]): r for r in art["references"]
                    if r["expected"] == "kept"}
        # The sample's documents restate their article's facts, and a few restate nothing
        # that an earlier reference did not: dropped whole as duplicate_reference.
        dropped = {url for url in expected if (str(art["page_id"]), url) in repeated}
        assert got.keys() == expected.keys() - dropped, art["title"]
        assert row["duplicate_references_removed"] == len(dropped)
        for url in got:
            ref = expected[url]
            assert sorted(got[url]["sources"]) == ref["sources"]
            assert got[url]["source"] == ("citation" if "citation" in ref["sources"]
                                          else "search")
            assert got[url]["language"] == "en" and got[url]["language_confidence"] > 0.9
        earlier: list[str] = []  # paragraphs of the references kept before this one
        for got_ref in row["references"]:
            for paragraph in expected[got_ref["url"]]["relevant_paragraphs"]:
                # Kept, unless it repeats a paragraph of an earlier reference (dedup).
                assert paragraph in got_ref["paragraphs"] or any(
                    _trigram_jaccard(paragraph, q) >= 0.6 for q in earlier), art["title"]
            earlier += got_ref["paragraphs"]
        for url in dropped:
            assert all(any(_trigram_jaccard(p, q) >= 0.6 for q in earlier)
                       for p in expected[url]["relevant_paragraphs"]), url
        # Citations first, in the order the article cites them.
        sources = [r["source"] for r in row["references"]]
        assert sources == sorted(sources, key=lambda s: s != "citation")


def _trigram_jaccard(a: str, b: str) -> float:
    def grams(text):
        w = words(text)
        return {tuple(w[i:i + 3]) for i in range(max(len(w) - 2, 1))}
    x, y = grams(a), grams(b)
    return len(x & y) / len(x | y)


def test_job_removes_boilerplate_and_decodes_legacy_pages(ingested):
    _, manifest, rows, _ = ingested
    docs = {normalize_url(d["url"]): d for d in manifest["documents"] if d["outcome"] == "ok"}
    seen_legacy = 0
    for row in rows.values():
        for ref in row["references"]:
            doc = docs[ref["url"]]
            text = "\n".join(ref["paragraphs"])
            if doc["container"] == "warc":
                assert all(b not in text for b in doc["boilerplate"]), ref["url"]
            if doc["kind"] == "legacy_encoding":
                assert "crème brûlée" in text and "\ufffd" not in text
                seen_legacy += 1
    assert seen_legacy == 2


def test_job_drops_self_clones_and_bad_records_with_reasons(ingested):
    out, manifest, rows, dead = ingested
    by_key = Counter((d["stage"], d["reason"], d["url"]) for d in dead)
    for art in manifest["articles"]:
        for ref in art["references"]:
            url = normalize_url(ref["url"])
            if ref["expected"] in ("self", "clone"):
                assert by_key[("links", ref["expected"], url)] >= 1, url
            elif ref["expected"] in BAD_RECORD_REASON:
                reason = BAD_RECORD_REASON[ref["expected"]]
                assert any(k[:2] == ("records", reason) and normalize_url(k[2]) == url
                           for k in by_key), (reason, url)
            elif ref["expected"] == "missing":
                assert by_key[("links", "missing", url)] >= 1
    for doc in manifest["documents"]:
        if doc["outcome"] == "superseded_capture":
            assert by_key[("captures", "superseded_capture", doc["url"])] == 1
        if doc["outcome"] == "unreferenced":
            assert by_key[("captures", "unreferenced", doc["url"])] == 1
    counts = {r["title"]: r for r in rows.values()}
    clones = sum(r["clones_removed"] for r in counts.values())
    selfs = sum(r["self_removed"] for r in counts.values())
    assert clones == sum(1 for a in manifest["articles"] for r in a["references"]
                         if r["expected"] == "clone")
    assert selfs == manifest["counts"]["documents_by_kind"]["self"]


def test_job_drops_pages_that_are_not_articles(ingested):
    _, manifest, _, dead = ingested
    page_reasons = Counter(d["reason"] for d in dead if d["stage"] == "pages")
    kinds = manifest["counts"]["pages_by_kind"]
    assert page_reasons == Counter({
        "redirect": kinds["redirect"], "non_article_namespace": kinds["non_article"],
        "disambiguation": kinds["disambiguation"], "empty_lead": kinds["empty_lead"],
        "no_references": kinds["no_references"]})


def test_job_counts_and_summary_balance(ingested):
    out, manifest, rows, dead = ingested
    summary = json.loads((out / "summary.json").read_text())
    assert summary["balanced"] is True
    stages = summary["stages"]
    for name, stage in stages.items():
        assert stage["in"] == stage["kept"] + sum(stage["dropped"].values()), name
    records = sum(sum(v.values()) for v in manifest["counts"]["records"].values())
    assert stages["records"]["in"] == records
    assert stages["pages"]["in"] == manifest["counts"]["pages"]
    assert stages["pages"]["kept"] == len(rows) == 60
    assert stages["captures"]["in"] == stages["records"]["kept"]
    # Every paragraph of an attached reference is written or counted as a repeat.
    written = sum(len(r["paragraphs"]) for row in rows.values() for r in row["references"])
    assert stages["article_paragraphs"]["kept"] == written
    assert sum(r["duplicate_paragraphs_removed"] for r in rows.values()) == sum(
        stages["article_paragraphs"]["dropped"].values())
    # Every dropped record except the never-a-page types has a dead letter.
    not_pages = sum(v for k, v in stages["records"]["dropped"].items()
                    if k.startswith("not_a_page:"))
    dead_records = sum(1 for d in dead if d["stage"] == "records")
    assert dead_records == sum(stages["records"]["dropped"].values()) - not_pages
    for art in manifest["articles"]:
        row = rows[art["title"]]
        assert row["citations_listed"] == len({normalize_url(u) for u in art["citation_urls"]})
        assert row["search_listed"] == len(art["search_urls"])


def test_job_lists_missing_cited_urls(ingested):
    out, manifest, _, _ = ingested
    missing = (out / "missing_urls.txt").read_text().split()
    expected = sorted({normalize_url(raw) for a in manifest["articles"]
                       for r in a["references"] for raw in [r["raw_url"]]
                       if "citation" in r["sources"] and r["expected"] not in
                       ("kept", "self", "clone")})
    assert missing == expected


def test_job_output_is_identical_on_rerun(ingested, sample_corpus, tmp_path):
    out, *_ = ingested
    sample, _ = sample_corpus
    assert run_ingest(sample, tmp_path / "again") == 0
    for sub in ("articles", "dead_letters"):
        first = sorted(p.name for p in (out / sub).iterdir())
        assert first == sorted(p.name for p in (tmp_path / "again" / sub).iterdir())
        for name in first:
            assert (pq.read_table(out / sub / name).to_pylist()
                    == pq.read_table(tmp_path / "again" / sub / name).to_pylist()), name
    assert (out / "missing_urls.txt").read_text() == (
        tmp_path / "again" / "missing_urls.txt").read_text()
    # summary.json differs only in the options it records (the --out path).
    first, again = (json.loads((d / "summary.json").read_text()) for d in (out, tmp_path / "again"))
    assert first["stages"] == again["stages"]


def test_job_survives_corrupt_inputs(sample_corpus, tmp_path):
    sample, _ = sample_corpus
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "garbage.warc.gz").write_bytes(b"\x1f\x8b\x08\x00garbage" * 10)
    (bad / "dump.xml.bz2").write_bytes(bz2.compress(DUMP.encode()[:300]))
    (bad / "search.jsonl").write_text('{"title": "Alpha", "urls": ["http://x.example/"]}\n'
                                      "not json\n")
    out = tmp_path / "out"
    assert cli.main(["ingest", "--wiki", str(bad / "dump.xml.bz2"),
                     "--warc", str(bad / "*.warc.gz"), "--warc", str(sample / "warc" / "*.gz"),
                     "--search-results", str(bad / "search.jsonl"), "--out", str(out),
                     "--allow-empty"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["balanced"]
    assert summary["stages"]["files"]["dropped"] == {"corrupt_file": 2}
    assert summary["stages"]["search_results"]["dropped"] == {"bad_line": 1}
    assert summary["stages"]["records"]["kept"] > 300


def test_search_lines_give_offsets_and_skip_an_over_long_line_in_bounded_reads():
    lines = [b'{"a": 1}\n', b"x" * 5_000_000 + b"\n", b"\n", b"last"]
    got = list(ingest_search.search_lines(io.BytesIO(b"".join(lines)), max_bytes=1000))
    starts = [0, 9, 5_000_010, 5_000_011]
    assert got == [(0, lines[0]), (9, None), (starts[2], b"\n"), (starts[3], b"last")]
    # A line of exactly the limit (its newline aside) is kept.
    assert list(ingest_search.search_lines(io.BytesIO(b"y" * 10 + b"\n"), max_bytes=10)) == [
        (0, b"y" * 10 + b"\n")]


def test_bad_search_lines_are_counted_dead_letters_with_file_and_offset(sample_corpus, tmp_path,
                                                                        monkeypatch):
    sample, manifest = sample_corpus
    monkeypatch.setattr(ingest_search, "MAX_SEARCH_LINE_BYTES", 10_000)
    good = (sample / "search_results.jsonl").read_bytes()
    bad = [b'{"title": "Alpha", "urls": ["http://x.example/\xff\xfe"]}\n',  # not UTF-8
           b'{"title": "Beta", "urls": ["http://y.example/", 7, null]}\n',  # two non-strings
           b'{"title": "Gamma", "urls": ["' + b"z" * 20_000 + b'"]}\n']  # over the limit
    search = tmp_path / "search.jsonl"
    search.write_bytes(bad[0] + good + bad[1] + bad[2])
    out = tmp_path / "out"
    assert cli.main(["ingest", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
                     "--warc", str(sample / "warc" / "*.warc.gz"), "--search-results",
                     str(search), "--out", str(out), "--num-shards", "2"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["balanced"]
    stage = summary["stages"]["search_results"]
    assert stage["dropped"] == {"bad_encoding": 1, "line_too_long": 1, "unknown_title": 1}
    assert stage["in"] == good.count(b"\n") + 3
    assert summary["stages"]["search_urls"]["dropped"] == {"not_a_string": 2}
    dead = pq.read_table(out / "dead_letters").to_pylist()
    where = {d["reason"]: (d["input_file"], d["record"]) for d in dead
             if d["stage"] in ("search_results", "search_urls")}
    assert where["bad_encoding"] == (str(search), "offset 0")
    assert where["not_a_string"] == (str(search), f"offset {len(bad[0]) + len(good)}")
    assert where["line_too_long"] == (str(search), f"offset {len(bad[0] + good + bad[1])}")


NO_ARTICLE = re.sub(r"<page><title>Alpha.*?</page>", "", DUMP, flags=re.S).encode()


@pytest.mark.parametrize("dump", [b"", b"garbage, not XML at all", NO_ARTICLE],
                         ids=["empty", "garbage", "redirect_and_talk_only"])
def test_a_dump_without_articles_is_an_error_unless_allowed(tmp_path, capsys, dump):
    path = tmp_path / "dump.xml"
    path.write_bytes(dump)
    argv = ["ingest", "--wiki", str(path), "--out", str(tmp_path / "out"), "--num-shards", "1"]
    assert cli.main(argv) == 1
    assert "the dump yielded no article" in capsys.readouterr().err
    assert cli.main([*argv, "--allow-empty"]) == 0


def test_missing_input_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="no input file matches"):
        cli.main(["ingest", "--wiki", str(tmp_path / "nope.xml.bz2"), "--out", str(tmp_path)])


def test_follow_redirects_to_the_end_of_the_chain_stopping_at_loops_and_the_limit():
    aliases = {"http://a/1": "http://a/2", "http://a/2": "http://a/3",
               "http://l/x": "http://l/y", "http://l/y": "http://l/x"}
    assert follow_redirects("http://a/1", aliases) == "http://a/3"
    assert follow_redirects("http://a/3", aliases) == "http://a/3"
    assert follow_redirects("http://z/", aliases) == "http://z/"
    assert follow_redirects("http://l/x", aliases) == "http://l/y"  # the loop closes there
    assert follow_redirects("http://a/1", aliases, limit=1) == "http://a/2"


# The whole ingest on hostile inputs, in a child process that reports its own peak memory: a WARC
# whose HTTP header is a 1 GB line (about 1 MB of gzip) and a dump page of 100 MB.
BOMBS = """
import io, sys, zlib, bz2
from wikisum.workflows import cli
folder = sys.argv[1]
z = zlib.compressobj(1, zlib.DEFLATED, 31)
head = (b"WARC/1.0\\r\\nWARC-Type: response\\r\\nWARC-Target-URI: http://bomb.example/\\r\\n"
        b"Content-Type: application/http; msgtype=response\\r\\n"
        b"Content-Length: 999999999\\r\\n\\r\\nHTTP/1.1 200 OK\\r\\nX-Bomb: ")
parts = [z.compress(head)] + [z.compress(b"a" * (1 << 20)) for _ in range(1000)] + [z.flush()]
open(folder + "/bomb.warc.gz", "wb").write(b"".join(parts))
dump = bz2.BZ2Compressor(1)
out = [dump.compress(b"<mediawiki><page><title>Huge</title><ns>0</ns><id>1</id><revision><text>")]
out += [dump.compress(b"b" * (1 << 20)) for _ in range(100)]
out += [dump.compress(b"</text></revision></page><page><title>Small</title><ns>0</ns><id>2</id>"
                      b"<revision><text>'''Small''' is a town.</text></revision></page>"
                      b"</mediawiki>"), dump.flush()]
open(folder + "/dump.xml.bz2", "wb").write(b"".join(out))
code = cli.main(["ingest", "--wiki", folder + "/dump.xml.bz2", "--warc",
                 folder + "/bomb.warc.gz", "--out", folder + "/out", "--num-shards", "1"])
with open("/proc/self/status") as status:
    print(next(int(l.split()[1]) for l in status if l.startswith("VmHWM")) // 1024, code)
"""


def test_ingest_memory_stays_bounded_on_bombs(tmp_path):
    done = subprocess.run([sys.executable, "-c", BOMBS, str(tmp_path)], capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    peak_mb, code = map(int, done.stdout.split()[-2:])
    assert code == 0 and peak_mb < 1000, done.stdout
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["balanced"]
    assert summary["stages"]["files"]["dropped"] == {"corrupt_file": 1}  # the bomb, named
    assert summary["stages"]["pages"]["dropped"]["too_large"] == 1


# The job on the real files in ../shared/data (skipped when that folder is absent).


@pytest.mark.shared_data
def test_every_real_warc_goes_through_the_job(shared_data, tmp_path):
    files = sorted(p for p in (shared_data / "warc").rglob("*") if p.is_file()
                   and p.name != "MANIFEST.md" and ".wat" not in p.name)
    wet = [p for p in files if ".wet" in p.name]
    warc = [p for p in files if p not in wet]
    dumps = shared_data / "wikipedia" / "dumps"
    argv = ["ingest", "--wiki", f"{dumps / 'enwiki-table-markup.xml.bz2'}", "--out",
            str(tmp_path / "out")]
    for p in warc:
        argv += ["--warc", str(p)]
    for p in wet:
        argv += ["--wet", str(p)]
    assert cli.main(argv) == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["balanced"]
    stages = summary["stages"]
    assert stages["files"]["in"] == len(files) + 1  # and the dump
    # The whole-file gzip and broken-chunk files stop early, and say so.
    assert stages["files"]["dropped"].get("corrupt_file", 0) >= 2
    dead = pq.read_table(tmp_path / "out" / "dead_letters").to_pylist()
    corrupt = {d["input_file"].rsplit("/", 1)[-1] for d in dead if d["reason"] == "corrupt_file"}
    assert {"example-bad-non-chunked.warc.gz", "example-bad.warc.gz.bad"} <= corrupt
    assert stages["records"]["kept"] >= 30  # the real pages of dolma-wget and whirlwind
    assert stages["pages"]["in"] == 5
