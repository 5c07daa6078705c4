"""``wikisum ingest``: the join functions, Beam transforms, and the whole job on the generated
sample corpus checked against its manifest (and on the real files in ../shared/data)."""

from __future__ import annotations

import bz2
import gzip
import io
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.pipeline import PipelineVisitor
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to
from builders import DUMP, reference

from wikisum.core import schemas
from wikisum.core.accounting import IN, KEPT
from wikisum.core.records import Link
from wikisum.core.text import words
from wikisum.pipeline import beamio
from wikisum.pipeline.beamio import DEAD, TALLY
from wikisum.pipeline.ingest import MISSING_CITATION, MISSING_SEARCH, job
from wikisum.pipeline.ingest import search as ingest_search
from wikisum.pipeline.ingest.articles import ReadArticles
from wikisum.pipeline.ingest.assemble import FilterReferences
from wikisum.pipeline.ingest.config import AttachConfig, IngestConfig
from wikisum.pipeline.ingest.references import JoinByUrl, JoinReferences, follow_redirects
from wikisum.pipeline.urls import normalize_url
from wikisum.workflows import cli

# Manifest outcome of a bad record -> the reason ingest gives it.
BAD_RECORD_REASON = {"non_html": "non_html", "truncated": "truncated",
                     "http_status": "http_status", "empty": "empty_text",
                     "too_large": "too_large"}

# --------------------------------------------------------------------------------------------
# Transforms
#
# Each runs on the jobs' own runner (beamio.LocalRunner): Beam's default DirectRunner first tries
# its Prism runner, which leaves folders in the temporary folder wherever it cannot start.


def test_join_keeps_one_capture_per_url():
    old, new = reference("u", "2019-01-01T00:00:00Z"), reference("u", "2020-01-01T00:00:00Z")
    link = Link(1, "citation", 0)
    with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
        out = ({"links": p | "L" >> beam.Create([("u", ("u", link))]),
                "refs": p | "R" >> beam.Create([("u", old), ("u", new)])}
               | beam.CoGroupByKey()
               | beam.ParDo(JoinByUrl()).with_outputs(
                   DEAD, TALLY, MISSING_CITATION, MISSING_SEARCH,
                   main="found"))
        assert_that(out.found, equal_to([(1, (link, new))]), label="kept")
        assert_that(out[DEAD] | beam.Map(lambda d: (d.url, d.reason, d.record)),
                    equal_to([("u", "superseded_capture", old.record_id)]), label="dead")


def test_join_by_url_transform_accounts_for_missing_and_unreferenced():
    ref_a, ref_b = reference("a", "d"), reference("b", "d")
    links = [("a", Link(1, "citation", 0)), ("a", Link(2, "search", 0)),
             ("c", Link(1, "citation", 1)), ("d", Link(2, "search", 1))]
    with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
        out = ({"links": p | "L" >> beam.Create([(url, (url, link)) for url, link in links]),
                "refs": p | "R" >> beam.Create([("a", ref_a), ("b", ref_b)])}
               | beam.CoGroupByKey()
               | beam.ParDo(JoinByUrl()).with_outputs(
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
    with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
        out = p | ReadArticles([f"{tmp_path}/*.xml.bz2"], "en", 1 << 20)
        assert_that(out["main"] | beam.Map(lambda a: (a.id, a.title, a.lead)),
                    equal_to([(1, "Alpha", "Alpha is a letter.")]), label="articles")
        assert_that(out[DEAD] | beam.Map(lambda d: (d.record, d.reason)),
                    equal_to([("2", "redirect"), ("3", "non_article_namespace")]), label="dead")
        assert_that(out[TALLY] | beam.CombinePerKey(sum),
                    equal_to([(("files", IN), 1), (("files", KEPT), 1),
                              (("pages", IN), 3), (("pages", "redirect"), 1),
                              (("pages", "non_article_namespace"), 1)]), label="tally")


def _dump_page(title: str, page_id: int, ns: int | str = 0, text: str = "") -> str:
    text = text or f"'''{title}''' is a river in Ostrania."
    return (f"<page><title>{title}</title><ns>{ns}</ns><id>{page_id}</id><revision><text>"
            f"{text}</text></revision></page>")


def _dump(*pages: str, tail: str = "") -> bytes:
    return bz2.compress(("<mediawiki xmlns='http://www.mediawiki.org/xml/export-0.10/'>"
                         + "".join(pages) + tail + "</mediawiki>").encode())


def test_read_articles_keeps_one_article_per_title_the_highest_page_id(tmp_path):
    # "Gamma" is held by pages 9 (first file), 5 and "gamma" 2 (second file): 9 is kept, in
    # whichever order the pages come; a second copy of page 9 goes on to the join by id.
    (tmp_path / "a.xml.bz2").write_bytes(_dump(_dump_page("Gamma", 9), _dump_page("Delta", 7)))
    (tmp_path / "b.xml.bz2").write_bytes(_dump(_dump_page("Gamma", 5), _dump_page("gamma", 2),
                                               _dump_page("Gamma", 9)))
    with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
        out = p | ReadArticles([f"{tmp_path}/*.xml.bz2"], "en", 1 << 20)
        assert_that(out["main"] | beam.Map(lambda a: (a.id, a.title, a.source_file[-9:])),
                    equal_to([(9, "Gamma", "a.xml.bz2"), (9, "Gamma", "b.xml.bz2"),
                              (7, "Delta", "a.xml.bz2")]), label="articles")
        assert_that(out[DEAD] | beam.Map(lambda d: (d.input_file[-9:], d.record, d.reason,
                                                    d.error)),
                    equal_to([("b.xml.bz2", "2", "duplicate_title", "page 9 has this title"),
                              ("b.xml.bz2", "5", "duplicate_title", "page 9 has this title")]),
                    label="dead")
        assert_that(out[TALLY] | beam.CombinePerKey(sum),
                    equal_to([(("files", IN), 2), (("files", KEPT), 2), (("pages", IN), 5),
                              (("pages", "duplicate_title"), 2)]), label="tally")


def test_read_articles_counts_garbled_pages_and_a_file_stopped_at_a_limit(tmp_path):
    (tmp_path / "a.xml.bz2").write_bytes(_dump(
        _dump_page("Alpha", 99999999999999999999), _dump_page("Beta", 2, ns="one"),
        _dump_page("Delta", 4), tail="<x>" * 2000 + "</x>" * 2000 + _dump_page("Lost", 5)))
    with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
        out = p | ReadArticles([f"{tmp_path}/*.xml.bz2"], "en", 1 << 20)
        assert_that(out["main"] | beam.Map(lambda a: a.id), equal_to([4]), label="articles")
        assert_that(out[DEAD] | beam.Map(lambda d: (d.stage, d.record, d.reason)),
                    equal_to([("pages", "page #0", "bad_id"), ("pages", "2", "bad_ns"),
                              ("files", "page #3", "too_deep")]), label="dead")
        assert_that(out[TALLY] | beam.CombinePerKey(sum),
                    equal_to([(("files", IN), 1), (("files", "too_deep"), 1),
                              (("pages", IN), 3), (("pages", "bad_id"), 1),
                              (("pages", "bad_ns"), 1)]), label="tally")


def test_stage_url_lists_writes_each_list_distinct_and_sorted_and_an_empty_one_empty(tmp_path):
    staging = tmp_path / "staging"
    paths = {name: str(tmp_path / f"{name}.txt") for name in ("b", "a", "none")}
    with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
        lists = {paths["b"]: p | "B" >> beam.Create(["u2", "u1", "u2"]),
                 paths["a"]: p | "A" >> beam.Create(["u3"]),
                 paths["none"]: p | "None" >> beam.Create([])}
        staged = lists | job.StageUrlLists(str(staging))
        assert_that(staged | beam.Map(lambda s: (s.final, s.rows)),
                    equal_to([(paths["b"], 2), (paths["a"], 1), (paths["none"], 0)]))
    texts = {p.name.split(".txt.")[0]: p.read_text() for p in staging.iterdir()}
    assert texts == {"b": "u1\nu2\n", "a": "u3\n", "none": ""}


@pytest.mark.parametrize("sources", [1, 2])
def test_join_references_follows_redirects_and_lists_what_is_missing(sources):
    """Links as one PCollection or one per source (citations, search results), the same join:
    the links of both sources to one URL join its one capture."""
    page = reference("http://b.example/final", "2020-01-01T00:00:00Z")
    cited = [("http://a.example/old", Link(1, "citation", 0))]
    searched = [("http://c.example/", Link(1, "search", 0)),
                ("http://b.example/final", Link(2, "search", 3))]
    with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
        redirects = p | "Redirects" >> beam.Create([("http://a.example/old",
                                                     "http://b.example/final")])
        links = (p | "Links" >> beam.Create(cited + searched) if sources == 1
                 else (p | "Cited" >> beam.Create(cited), p | "Searched" >> beam.Create(searched)))
        out = ((links, p | "Refs" >> beam.Create([(page.url, page)]))
               | JoinReferences(redirects))
        assert_that(out["main"], equal_to([(1, (Link(1, "citation", 0), page)),
                                           (2, (Link(2, "search", 3), page))]), label="found")
        assert_that(out[MISSING_SEARCH], equal_to(["http://c.example/"]), label="missing")
        assert_that(out[MISSING_CITATION], equal_to([]), label="cited")


def test_drop_clones_keeps_the_references_and_drops_the_article_itself():
    from wikisum.core.records import Article

    article = Article(7, "Alpha", "https://en.wikipedia.org/wiki/Alpha", "Alpha is a letter.",
                      (), ("http://ref.example/", "https://en.wikipedia.org/wiki/Alpha"), "d")
    good = reference("http://ref.example/", "d", text="Letters are written symbols of Greek.")
    own = reference("https://en.wikipedia.org/wiki/Alpha", "d", text="Alpha is a letter.")
    found = [(7, (Link(7, "citation", 0), good)), (7, (Link(7, "citation", 1), own))]
    with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
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
    search = (out / "missing_search_urls.txt").read_text().split()
    assert search == sorted(set(search)) and not set(search) & set(missing)


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


def _ingest_with_search(sample, search, out, shards: int) -> dict:
    """The sample's dump and WARCs ingested with ``search`` as the search results: summary.json."""
    assert cli.main(["ingest", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
                     "--warc", str(sample / "warc" / "*.warc.gz"), "--search-results",
                     str(search), "--out", str(out), "--num-shards", str(shards)]) == 0
    return json.loads((out / "summary.json").read_text())


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
    summary = _ingest_with_search(sample, search, out, shards=2)
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


def parse_search(raw: bytes, offset: int = 0) -> tuple[list, Counter, list]:
    """ParseSearch on one line -> (lines out, tallies, dead letters as (stage, reason, record))."""
    lines, tallies, dead = [], Counter(), []
    parse = ingest_search.ParseSearch()
    for out in [*parse.process(("s.jsonl", offset, raw)), *parse.finish_bundle()]:
        if getattr(out, "tag", None) == TALLY:
            (stage, reason), n = out.value.value  # a WindowedValue, as a bundle's end emits
            tallies[stage, reason] += n
        elif getattr(out, "tag", None) == DEAD:
            dead.append((out.value.stage, out.value.reason, out.value.record))
        else:
            lines.append(out)
    return lines, tallies, dead


def test_a_search_line_nested_past_the_parser_is_a_too_deep_dead_letter():
    lines, tallies, dead = parse_search(b"[" * 100_000 + b"]" * 100_000 + b"\n", offset=42)
    assert lines == [] and dead == [("search_results", "too_deep", "offset 42")]
    assert tallies == Counter({("search_results", IN): 1, ("search_results", "too_deep"): 1})


def test_lone_surrogates_in_search_titles_and_urls_are_bad_encoding_at_parse_time():
    title = b'{"title": "Alpha\\ud800", "urls": ["http://a.example/"]}\n'
    lines, tallies, dead = parse_search(title)
    assert lines == [] and dead == [("search_results", "bad_encoding", "offset 0")]
    urls = (b'{"title": "Alpha", "urls": ["http://a.example/\\udfff", "http://b.example/", '
            b'"http://c.example/\\ud83d\\ude00", 7]}\n')  # a pair is text (an emoji)
    lines, tallies, dead = parse_search(urls, offset=9)
    assert lines == [("Alpha", ("s.jsonl", 9, ["http://b.example/",
                                                "http://c.example/\U0001f600"]))]
    assert dead == [("search_urls", "not_a_string", "offset 9"),
                    ("search_urls", "bad_encoding", "offset 9")]
    assert tallies[("search_urls", IN)] == 4 and tallies[("search_urls", KEPT)] == 2


def test_a_bom_opening_the_search_results_file_is_not_part_of_its_first_line():
    first = b'{"title": "Alpha", "urls": []}\n'
    got = list(ingest_search.search_lines(io.BytesIO(b"\xef\xbb\xbf" + first + first), 100))
    assert got == [(0, first), (3 + len(first), first)]
    # Only at the start of the file: elsewhere it is the line's own bytes.
    assert list(ingest_search.search_lines(io.BytesIO(first + b"\xef\xbb\xbf" + first),
                                           100))[1] == (len(first), b"\xef\xbb\xbf" + first)


def test_hostile_search_lines_are_dead_letters_and_the_rest_of_the_job_holds(sample_corpus,
                                                                             tmp_path):
    """A BOM opening the file, a line nested 100,000 deep, lone surrogates in a title and in
    a URL: the job ends well, each counted where it was, every good line's URLs kept."""
    sample, _ = sample_corpus
    good = (sample / "search_results.jsonl").read_bytes()
    first = good.splitlines(keepends=True)[0]
    hostile = [b"[" * 100_000 + b"]" * 100_000 + b"\n",
               b'{"title": "Alpha\\ud800", "urls": ["http://x.example/"]}\n',
               first.replace(b'"urls": [', b'"urls": ["http://y.example/\\udc00", ', 1)]
    search = tmp_path / "search.jsonl"
    search.write_bytes(b"\xef\xbb\xbf" + good + b"".join(hostile))
    out = tmp_path / "out"
    summary = _ingest_with_search(sample, search, out, shards=1)
    assert summary["balanced"]
    stage = summary["stages"]["search_results"]
    assert stage["in"] == good.count(b"\n") + 3
    assert stage["dropped"] == {"too_deep": 1, "bad_encoding": 1}
    assert summary["stages"]["search_urls"]["dropped"] == {"bad_encoding": 1}
    dead = pq.read_table(out / "dead_letters").to_pylist()
    where = {(d["stage"], d["reason"]): d["record"] for d in dead
             if d["stage"] in ("search_results", "search_urls")}
    start = 3 + len(good)
    assert where == {("search_results", "too_deep"): f"offset {start}",
                     ("search_results", "bad_encoding"): f"offset {start + len(hostile[0])}",
                     ("search_urls", "bad_encoding"):
                         f"offset {start + len(hostile[0]) + len(hostile[1])}"}


# MatchSearchTitles on two lines of 20,000 distinct URLs each for one title, in a child with a
# time limit: a list scan per URL took 21.7 s for these 40,000, and minutes for 140,000.
MANY_URLS = """
import resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
from wikisum.pipeline.ingest.search import MatchSearchTitles
lines = [("s", j, [f"http://site{i % 97}.example/page/{i}" for i in range(j, 40_000, 2)])
         for j in (0, 1)]
start = time.monotonic()
links = sum(getattr(o, "tag", None) == "links"
            for o in MatchSearchTitles("s").process(("T", {"articles": [1], "search": lines})))
print(links, round(time.monotonic() - start, 1))
"""


def test_many_urls_for_one_title_are_matched_in_linear_time():
    done = subprocess.run([sys.executable, "-c", MANY_URLS], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    links, seconds = done.stdout.split()
    assert int(links) == 40_000 and float(seconds) < 8, done.stdout


def test_search_urls_keep_their_first_rank_and_accounting():
    lines = [("s", 0, ["http://b.example/", "not a url", "http://A.example"]),
             ("s", 60, ["http://a.example/", "http://c.example/#x", "http://b.example/"])]
    match = ingest_search.MatchSearchTitles("s")
    outs = [*match.process(("T", {"articles": [7, 9], "search": lines})), *match.finish_bundle()]
    tagged = Counter()
    links, listed, dead = [], [], []
    for o in outs:
        if o.tag == TALLY:
            tagged[o.value.value[0]] += o.value.value[1]
        elif o.tag == "links":
            links.append(o.value)
        elif o.tag == "listed":
            listed.append(o.value)
        else:
            dead.append((o.value.reason, o.value.stage, o.value.record, o.value.url))
    assert links == [("http://b.example/", Link(7, "search", 0)),
                     ("http://a.example/", Link(7, "search", 1)),
                     ("http://c.example/", Link(7, "search", 2))]
    assert listed == [(7, 3)] and dead == [("bad_url", "links", "T", "not a url")]
    assert tagged == Counter({("search_results", KEPT): 2, ("links", IN): 6,
                              ("links", "bad_url"): 1, ("links", "duplicate"): 2})


def test_search_ranks_follow_the_file_not_the_order_lines_are_grouped_in():
    """CoGroupByKey gives a title's lines in no fixed order: ranks are by file, then offset."""
    lines = [("a.jsonl", 0, ["http://x.example/", "http://y.example/"]),
             ("a.jsonl", 120, ["http://z.example/", "http://x.example/"]),
             ("b.jsonl", 0, ["http://w.example/", "http://y.example/"])]

    def ranks(search):
        outs = ingest_search.MatchSearchTitles("s").process(
            ("T", {"articles": [7], "search": search}))
        return [(o.tag, o.value) for o in outs if o.tag in ("links", "listed")]

    expected = [("links", ("http://x.example/", Link(7, "search", 0))),
                ("links", ("http://y.example/", Link(7, "search", 1))),
                ("links", ("http://z.example/", Link(7, "search", 2))),
                ("links", ("http://w.example/", Link(7, "search", 3))), ("listed", (7, 4))]
    for order in itertools.permutations(lines):
        assert ranks(iter(order)) == expected, order


def _warc(urls: list[str], body: bytes) -> bytes:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    for i, url in enumerate(urls):
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html"),
                                              ("Content-Length", str(len(body)))],
                                   protocol="HTTP/1.1")
        fixed = {"WARC-Record-ID": f"<urn:uuid:00000000-0000-0000-0000-{i:012d}>",
                 "WARC-Date": "2019-01-01T00:00:00Z"}
        writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body),
                                                      http_headers=headers,
                                                      warc_headers_dict=fixed))
    return buf.getvalue()


def test_garbled_and_duplicate_pages_are_counted_drops_and_the_job_writes_the_rest(tmp_path):
    # Every article cites a page the WARC holds, so each would reach the shard writer: an id
    # over int64 stopped it (OverflowError, rc 1, no output), and so would a lone surrogate.
    def cited(title: str, url: str, more: str = "") -> str:
        return f"'''{title}''' is a river in Ostrania{more}.&lt;ref&gt;{url}&lt;/ref&gt;"

    (tmp_path / "dump.xml.bz2").write_bytes(_dump(
        _dump_page("Alpha", 99999999999999999999, text=cited("Alpha", "http://a.example/")),
        _dump_page("Beta", 2, ns="one", text=cited("Beta", "http://b.example/")),
        _dump_page("Gamma", 3, text=cited("Gamma", "http://c.example/")),
        _dump_page("gamma", 8, text=cited("Gamma", "http://c.example/", " &amp;#xD800;")),
        _dump_page("Delta", 4, text=cited("Delta", "http://d.example/"))))
    body = ("<html><body><article>" + "".join(
        f"<p>Report {i}: the minister said on monday that talks with the rebels would resume in "
        "the capital after the police reported clashes near the border.</p>" for i in range(3))
        + "</article></body></html>").encode()
    (tmp_path / "refs.warc.gz").write_bytes(
        _warc([f"http://{c}.example/" for c in "abcd"], body))
    out = tmp_path / "out"
    assert cli.main(["ingest", "--wiki", str(tmp_path / "dump.xml.bz2"), "--warc",
                     str(tmp_path / "refs.warc.gz"), "--out", str(out), "--num-shards", "1"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["balanced"]
    assert summary["stages"]["pages"] == {
        "in": 5, "kept": 2, "balanced": True,
        "dropped": {"bad_id": 1, "bad_ns": 1, "duplicate_title": 1}}
    rows = pq.read_table(out / "articles").to_pylist()
    assert sorted((r["id"], r["title"], r["lead"]) for r in rows) == [
        (4, "Delta", "Delta is a river in Ostrania."),
        (8, "Gamma", "Gamma is a river in Ostrania \ufffd.")]
    dead = {(d["record"], d["reason"]) for d in pq.read_table(out / "dead_letters").to_pylist()
            if d["stage"] == "pages"}
    assert dead == {("page #0", "bad_id"), ("2", "bad_ns"), ("3", "duplicate_title")}


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


def _raw_response(url: str, block: bytes, length_off_by: int = 0) -> bytes:
    """One plain WARC response record, its Content-Length off by ``length_off_by``."""
    return (b"WARC/1.0\r\nWARC-Type: response\r\nWARC-Target-URI: " + url.encode()
            + b"\r\nContent-Type: application/http; msgtype=response\r\nContent-Length: %d"
            b"\r\n\r\n" % (len(block) + length_off_by) + block + b"\r\n\r\n")


def test_broken_warc_records_and_an_empty_warc_are_counted_and_the_rest_is_read(tmp_path,
                                                                                 capsys):
    """An HTTP/0.9 answer and a Content-Length 500 bytes short in a gzip-per-record WARC, one
    5,000 bytes long in a plain WARC, and a zero-byte .warc.gz: each a counted dead letter, every
    good record read, and the empty file named in a warning."""
    page = ("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><body><article>" + "".join(
        f"<p>Report {i}: the minister said on monday that talks with the rebels would resume in "
        "the capital after the police reported clashes near the border.</p>\r\n"
        for i in range(6)) + "</article></body></html>").encode()
    good = [_raw_response(f"http://{c}.example/", page) for c in "abcde"]
    (tmp_path / "dump.xml").write_text(DUMP)
    (tmp_path / "members.warc.gz").write_bytes(b"".join(gzip.compress(r) for r in [
        _raw_response("http://old.example/", b"<html><p>HTTP/0.9: no status line</p></html>"),
        good[0], _raw_response("http://short.example/", page, -500), good[1]]))
    (tmp_path / "plain.warc").write_bytes(b"".join(
        [good[2], _raw_response("http://long.example/", page, 5000), good[3], good[4]]))
    (tmp_path / "empty.warc.gz").write_bytes(b"")
    out = tmp_path / "out"
    assert cli.main(["ingest", "--wiki", str(tmp_path / "dump.xml"), "--warc",
                     str(tmp_path / "*.warc*"), "--out", str(out), "--num-shards", "1"]) == 0
    assert ("1 WARC/WET file(s) hold no record (a failed download?)"
            in capsys.readouterr().err)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["balanced"]
    assert summary["stages"]["files"] == {"in": 4, "kept": 3, "dropped": {"empty_file": 1},
                                          "balanced": True}
    records = summary["stages"]["records"]
    assert (records["in"], records["kept"]) == (8, 5)
    assert records["dropped"] == {"bad_http_header": 1, "length_mismatch": 2}
    dead = {(d["input_file"].rsplit("/", 1)[-1], d["url"], d["reason"])
            for d in pq.read_table(out / "dead_letters").to_pylist()
            if d["stage"] in ("files", "records")}
    assert dead == {("members.warc.gz", "http://old.example/", "bad_http_header"),
                    ("members.warc.gz", "http://short.example/", "length_mismatch"),
                    ("plain.warc", "http://long.example/", "length_mismatch"),
                    ("empty.warc.gz", "", "empty_file")}


# The whole ingest on WARCs of tiny 404 records, run twice in a child that reports each run's
# peak memory: 100 records, then 3,000. Every record is a dead letter, written but never held
# (a million such records took 2,346 MB, about 2 KB a letter). The record ids are 4 KB long, so
# that a few thousand letters weigh what a million short ones would, in a test of seconds; the
# spills are as much smaller than a job's (512 KB, not 8 MB), so that they spill many times.
# pyarrow's own allocator keeps freed pages for a while: the system's shows what the job holds.
MANY_404S = """
import sys, zlib
from wikisum.pipeline.beamio import writes
from wikisum.workflows import cli
writes.SPILL_BYTES = 512 * 1024
folder = sys.argv[1]
http = b"HTTP/1.1 404 Not Found\\r\\nContent-Type: text/html\\r\\n\\r\\nNot Found"
def warc(path, n):
    with open(path, "wb") as f:
        for i in range(n):
            z = zlib.compressobj(1, zlib.DEFLATED, 31)
            f.write(z.compress(
                b"WARC/1.0\\r\\nWARC-Type: response\\r\\nWARC-Target-URI: http://gone.example/%d"
                b"\\r\\nWARC-Record-ID: <urn:x:%d:%s>\\r\\nContent-Type: application/http; "
                b"msgtype=response\\r\\nContent-Length: %d\\r\\n\\r\\n"
                % (i, i, b"p" * 4000, len(http)) + http + b"\\r\\n\\r\\n") + z.flush())
open(folder + "/dump.xml", "w").write(sys.argv[2])
for n in (100, 3000):
    warc(f"{folder}/{n}.warc.gz", n)
    with open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")  # VmHWM, the peak, counts from here
    code = cli.main(["ingest", "--wiki", folder + "/dump.xml", "--warc", f"{folder}/{n}.warc.gz",
                     "--out", f"{folder}/out{n}", "--num-shards", "1", "--shard-buffer", "1MB"])
    with open("/proc/self/status") as status:
        print(code, next(int(l.split()[1]) for l in status if l.startswith("VmHWM")) // 1024)
"""


def test_dead_letters_are_written_in_memory_independent_of_their_number(tmp_path):
    done = subprocess.run([sys.executable, "-c", MANY_404S, str(tmp_path), DUMP],
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "ARROW_DEFAULT_MEMORY_POOL": "system"})
    assert done.returncode == 0, done.stderr[-3000:]
    (code_few, peak_few), (code_many, peak_many) = (
        map(int, pair) for pair in re.findall(r"^(\d+) (\d+)$", done.stdout, re.M))
    assert code_few == code_many == 0
    summary = json.loads((tmp_path / "out3000" / "summary.json").read_text())
    assert summary["balanced"] and summary["stages"]["records"]["dropped"] == {
        "http_status": 3000}
    dead = pq.read_table(tmp_path / "out3000" / "dead_letters", columns=["reason"])
    assert dead.column("reason").to_pylist().count("http_status") == 3000
    # The same peak within noise (it grew by 97 MB when the letters went through the shuffle).
    assert peak_many - peak_few < 60, (peak_few, peak_many)


class _SpilledWriters(PipelineVisitor):
    def __init__(self):
        self.found = []

    def enter_composite_transform(self, node):
        if isinstance(node.transform, beamio.WriteSpilledShards):
            self.found.append(node.transform)


def test_dead_letters_are_sorted_in_the_shard_buffer(tmp_path):
    # Their sort was held to 8 MB whatever --shard-buffer said.
    config = IngestConfig(wiki=(str(tmp_path / "dump.xml"),), out=str(tmp_path / "out"),
                          warc=(str(tmp_path / "*.warc.gz"),), buffer_bytes=64 << 20)
    p = beam.Pipeline(runner=beamio.LocalRunner())
    job.build(p, config, "token")  # built, not run: nothing is read
    writers = _SpilledWriters()
    p.visit(writers)
    shutil.rmtree(p.local_tempdir)  # Beam's scratch folder, removed by a run only
    assert [(w.buffer_bytes, w.spill_bytes) for w in writers.found] == [
        (64 << 20, beamio.SPILL_BYTES)]


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


def _cleaned_by_the_dofn(path, config=None) -> tuple[list, Counter]:
    """What ReadAndCleanRecords makes of one file, outside a pipeline: (outputs, tallies)."""
    from wikisum.pipeline.ingest.config import CleanConfig
    from wikisum.pipeline.ingest.references import ReadAndCleanRecords

    fn = ReadAndCleanRecords(config or CleanConfig())
    fn.setup()
    out = list(fn.process(str(path)))
    return out, Counter(fn._tallies)


def _batch_sizes(monkeypatch) -> list[int]:
    """The size of each batch ReadAndCleanRecords cleans, as it cleans them."""
    from wikisum.pipeline.ingest import references as ingest_references

    sizes: list[int] = []
    real = ingest_references.clean_captures

    def recorded(caps, config):
        sizes.append(len(caps))
        return real(caps, config)

    monkeypatch.setattr(ingest_references, "clean_captures", recorded)
    return sizes


def _news_page(i: int) -> bytes:
    return ("HTTP/1.1 200 OK\r\nContent-Type: text/html\r\n\r\n<html><body><article>"
            + "".join(f"<p>Report {i}.{k}: the minister said on monday that talks with the rebels "
                      "would resume in the capital after the police reported clashes.</p>"
                      for k in range(4)) + "</article></body></html>").encode()


def test_pages_are_cleaned_in_batches_and_the_pages_before_damage_are_kept(tmp_path,
                                                                          monkeypatch):
    """More pages than one batch, then a damaged gzip member: every page before the damage
    comes out once (the last, partial batch too), the file is a corrupt_file dead letter."""
    from wikisum.pipeline import references as cleaning

    monkeypatch.setattr(cleaning, "CLEAN_BATCH_PAGES", 4)
    batches = _batch_sizes(monkeypatch)
    urls = [f"http://p{i}.example/" for i in range(10)]
    (tmp_path / "a.warc.gz").write_bytes(
        b"".join(gzip.compress(_raw_response(u, _news_page(i))) for i, u in enumerate(urls))
        + gzip.compress(_raw_response("http://z.example/", _news_page(99)))[:40])
    out, tallies = _cleaned_by_the_dofn(tmp_path / "a.warc.gz")
    kept = [element for element in out if isinstance(element, tuple)]
    assert [url for url, _ in kept] == urls
    assert batches == [4, 4, 2]
    assert tallies[("records", "kept")] == 10
    assert tallies[("files", "corrupt_file")] == 1


def test_a_page_that_crashes_the_extractor_is_an_error_dead_letter_and_its_batch_is_kept(
        tmp_path, monkeypatch):
    from wikisum.pipeline import references as cleaning

    real = cleaning.extract_main_texts

    def crashes_on_p2(pages, **kwargs):  # a failure of p2's own, handed back in its place
        return [MemoryError("lxml gave up") if url == "http://p2.example/"
                else real([(html, url)], **kwargs)[0] for html, url in pages]

    monkeypatch.setattr(cleaning, "extract_main_texts", crashes_on_p2)
    urls = [f"http://p{i}.example/" for i in range(5)]
    (tmp_path / "a.warc").write_bytes(
        b"".join(_raw_response(u, _news_page(i)) for i, u in enumerate(urls)))
    out, tallies = _cleaned_by_the_dofn(tmp_path / "a.warc")
    kept = [element[0] for element in out if isinstance(element, tuple)]
    assert kept == [u for u in urls if u != "http://p2.example/"]
    assert tallies[("records", "error")] == 1 and tallies[("records", "kept")] == 4
    letters = [element.value for element in out if getattr(element, "tag", None) == DEAD]
    assert [(d.url, d.reason) for d in letters] == [("http://p2.example/", "error")]
    assert "MemoryError: lxml gave up" in letters[0].error


def test_a_batch_holds_pages_up_to_its_bytes_a_larger_page_alone(tmp_path, monkeypatch):
    from wikisum.pipeline import references as cleaning

    page = _news_page(0)
    monkeypatch.setattr(cleaning, "CLEAN_BATCH_BYTES", 2 * len(page) + 10)
    batches = _batch_sizes(monkeypatch)
    big = page.replace(b"</article>", b"<p>" + b"More words here. " * 400 + b"</p></article>")
    bodies = [page, page, page, big, page]
    (tmp_path / "a.warc").write_bytes(b"".join(
        _raw_response(f"http://p{i}.example/", body) for i, body in enumerate(bodies)))
    out, tallies = _cleaned_by_the_dofn(tmp_path / "a.warc")
    assert batches == [2, 1, 1, 1]  # two pages fit; the third waits; the big one alone
    assert tallies[("records", "kept")] == 5
