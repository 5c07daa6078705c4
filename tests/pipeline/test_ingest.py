"""``wikisum ingest``: readers, cleaning and join functions, Beam transforms, and the whole job
on the generated sample corpus checked against its manifest."""

from __future__ import annotations

import bz2
import io
import json
from collections import Counter
from pathlib import Path

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from wikisum.pipeline import ingest, schemas
from wikisum.pipeline.articles import page_to_article
from wikisum.pipeline.dumps import DumpError, RawPage, iter_pages
from wikisum.pipeline.records import Article, Link, Reference, split_of
from wikisum.pipeline.references import CleanConfig, attach, clean_capture, pick_capture
from wikisum.pipeline.urls import normalize_url
from wikisum.pipeline.warcs import Capture, WarcError, iter_records
from wikisum.workflows import cli

# Manifest outcome of a bad record -> the reason ingest gives it.
BAD_RECORD_REASON = {"non_html": "non_html", "truncated": "truncated",
                     "http_status": "http_status", "empty": "empty_text",
                     "too_large": "too_large"}

# --------------------------------------------------------------------------------------------
# Readers


DUMP = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.11/" version="0.11">
  <page><title>Alpha</title><ns>0</ns><id>1</id>
    <revision><id>10</id><text>'''Alpha''' is a letter.</text></revision></page>
  <page><title>Beta</title><ns>0</ns><id>2</id><redirect title="Alpha" />
    <revision><id>11</id><text>#REDIRECT [[Alpha]]</text></revision></page>
  <page><title>Talk:Alpha</title><ns>1</ns><id>3</id>
    <revision><id>12</id><text>chat</text></revision></page>
</mediawiki>
"""


def test_dump_pages_stream_in_order_with_namespace_and_redirect():
    pages = list(iter_pages(io.BytesIO(DUMP.encode("utf-8"))))
    assert [(p.page_id, p.title, p.ns, p.redirect, p.position) for p in pages] == [
        (1, "Alpha", 0, None, 0), (2, "Beta", 0, "Alpha", 1), (3, "Talk:Alpha", 1, None, 2)]
    assert pages[0].text == "'''Alpha''' is a letter."


def test_dump_in_utf16_with_bom_reads_like_utf8():
    text = DUMP.replace("Alpha", "Ålpha")
    pages = list(iter_pages(io.BytesIO(text.encode("utf-16"))))
    assert [p.title for p in pages] == ["Ålpha", "Beta", "Talk:Ålpha"]


def test_truncated_dump_yields_pages_before_the_error():
    cut = DUMP.encode()[: DUMP.index("<page><title>Talk")]
    reader = iter_pages(io.BytesIO(cut + b"<page><title>Broken</ti"))
    assert [p.title for p in [next(reader), next(reader)]] == ["Alpha", "Beta"]
    with pytest.raises(DumpError) as err:
        next(reader)
    assert err.value.pages_read == 2


def _warc(records: list[tuple[str, int, str, bytes]]) -> bytes:
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    for url, status, ctype, body in records:
        headers = StatusAndHeaders(f"{status} X", [("Content-Type", ctype),
                                                   ("Content-Length", str(len(body)))],
                                   protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body),
                                                      http_headers=headers))
    return buf.getvalue()


def test_warc_records_with_offsets_and_truncation():
    data = _warc([("http://a.example/", 200, "text/html", b"<p>one</p>"),
                  ("http://b.example/", 404, "text/html", b"gone")])
    whole = list(iter_records(io.BytesIO(data), "f.warc.gz", max_bytes=1000))
    assert [(c.url, c.status, c.body, c.truncated) for c in whole] == [
        ("http://a.example/", 200, b"<p>one</p>", False), ("http://b.example/", 404, b"gone",
                                                           False)]
    assert whole[0].offset == 0 and whole[1].offset > 0
    second = data[whole[1].offset:]
    last = list(iter_records(io.BytesIO(data[: whole[1].offset] + second[: len(second) * 2 // 3]),
                             "f", max_bytes=1000))[-1]
    assert last.truncated or last.body != b"gone"


def test_warc_payload_over_the_limit_is_marked_too_large():
    data = _warc([("http://a.example/", 200, "text/html", b"x" * 500)])
    (cap,) = iter_records(io.BytesIO(data), "f", max_bytes=100)
    assert cap.too_large and cap.body == b""


def test_garbage_after_records_raises_with_offset():
    data = _warc([("http://a.example/", 200, "text/html", b"<p>one</p>")])
    reader = iter_records(io.BytesIO(data + b"\x1f\x8bnot gzip at all"), "f", max_bytes=100)
    assert isinstance(next(reader), Capture)
    with pytest.raises(WarcError):
        list(reader)


# --------------------------------------------------------------------------------------------
# Pure functions

PAGE = ("'''Kestrel Works''' is a [[mill]] in [[Ostrania]].<ref>{{cite web "
        "|url=HTTP://Example.COM:80/a#x |title=A}}</ref> It grinds corn.<ref>http://b.example/p"
        "</ref>\n\n== History ==\nBuilt in 1801.<ref>{{cite web |url=http://example.com/a}}</ref>")


def test_page_to_article_keeps_lead_and_normalised_citations():
    article = page_to_article(RawPage(7, "Kestrel Works", 0, None, PAGE, 0), "dump.xml")
    assert isinstance(article, Article)
    assert article.lead == "Kestrel Works is a mill in Ostrania. It grinds corn."
    assert article.citation_urls == ("http://example.com/a", "http://b.example/p")
    assert [s.title for s in article.sections] == ["History"]
    assert article.url == "https://en.wikipedia.org/wiki/Kestrel_Works"


@pytest.mark.parametrize("page,reason", [
    (RawPage(1, "Talk:X", 1, None, "text", 0), "non_article_namespace"),
    (RawPage(1, "X", 0, "Y", "#REDIRECT [[Y]]", 0), "redirect"),
    (RawPage(1, "X", 0, None, "#redirect [[Y]]", 0), "redirect"),
    (RawPage(1, "X", 0, None, "'''X''' may be:\n* [[X (a)]]\n{{disambiguation}}", 0),
     "disambiguation"),
    (RawPage(1, "X", 0, None, "{{Infobox x}}\n== History ==\nText.", 0), "empty_lead"),
])
def test_pages_that_are_not_articles_have_a_reason(page, reason):
    assert page_to_article(page, "dump.xml") == reason


def _cap(body: bytes, *, status=200, ctype="text/html; charset=utf-8", url="http://a.example/x",
         rtype="response", truncated=False, too_large=False) -> Capture:
    return Capture(url, "f.warc.gz", 0, "<id>", rtype, "2020-01-01T00:00:00Z", status, ctype,
                   body, truncated, too_large)


PROSE = ("<html><body><nav><a>Home</a> <a>News</a></nav><main><article><h1>On mills</h1>"
         "<p>The Kestrel Works mill has ground corn on the river since 1801, and it still runs "
         "on water power today.</p><p>Visitors can watch the millers at work every Saturday "
         "morning in summer.</p></article></main><footer>Copyright 2021</footer></body></html>")


def test_clean_capture_keeps_prose_paragraphs_only():
    cleaned = clean_capture(_cap(PROSE.encode()))
    assert cleaned.reference.paragraphs == (
        "The Kestrel Works mill has ground corn on the river since 1801, and it still runs on "
        "water power today.",
        "Visitors can watch the millers at work every Saturday morning in summer.")
    assert cleaned.reference.url == "http://a.example/x"
    assert cleaned.paragraphs["kept"] == 2 and sum(cleaned.paragraphs.values()) >= 3


@pytest.mark.parametrize("cap,reason", [
    (_cap(PROSE.encode(), status=404), "http_status"),
    (_cap(PROSE.encode(), status=301), "http_status"),
    (_cap(b"%PDF-1.4 ...", ctype="application/pdf"), "non_html"),
    (_cap(b"\x89PNG\r\n", ctype="image/png"), "non_html"),
    (_cap(PROSE.encode(), truncated=True), "truncated"),
    (_cap(b"", too_large=True), "too_large"),
    (_cap(b"<html><body></body></html>"), "empty_text"),
    (_cap(b"<html><body><p>Home | News</p></body></html>"), "empty_text"),
    (_cap(PROSE.encode(), url="mailto:someone@example.com"), "bad_url"),
    (_cap(b"\x00\x01\x02\x03" * 100, ctype="text/html"), "decode_error"),
])
def test_clean_capture_drop_reasons(cap, reason):
    cleaned = clean_capture(cap)
    assert cleaned.reference is None and cleaned.reason == reason


def test_clean_capture_uses_wet_text_as_is():
    text = ("Menu | Home\nThe Kestrel Works mill has ground corn on the river since 1801, and "
            "it still runs.\n")
    cleaned = clean_capture(_cap(text.encode(), rtype="conversion", ctype="text/plain"))
    assert cleaned.reference.paragraphs == (text.splitlines()[1],)
    assert cleaned.reference.container == "wet"


def test_clean_capture_respects_page_size_limit():
    cleaned = clean_capture(_cap(PROSE.encode()), CleanConfig(max_page_bytes=100))
    assert cleaned.reason == "too_large"


def _ref(url, date, container="warc", source_file="f", offset=0, text="p") -> Reference:
    return Reference(url, source_file, offset, f"<{date}{offset}>", date, container, (text,))


def test_pick_capture_prefers_latest_then_warc_then_position():
    old = _ref("u", "2019-01-01T00:00:00Z")
    new_wet = _ref("u", "2020-01-01T00:00:00Z", container="wet")
    new_warc = _ref("u", "2020-01-01T00:00:00Z", source_file="z")
    for order in ([old, new_wet, new_warc], [new_warc, old, new_wet]):
        keep, rest = pick_capture(order)
        assert keep == new_warc and sorted(rest, key=str) == sorted([old, new_wet], key=str)


def test_attach_drops_self_and_clones_and_orders_citations_first():
    lead = "The Kestrel Works is a water mill on the Oder river built in 1801."
    art = Article(1, "Kestrel Works", "https://en.wikipedia.org/wiki/Kestrel_Works", lead, (),
                  ("http://c.example/", "http://d.example/"), "dump")
    found = [
        (Link(1, "search", 0), _ref("https://en.m.wikipedia.org/wiki/Kestrel_Works", "d",
                                    text="anything")),
        (Link(1, "search", 1), _ref("http://mirror.example/k", "d", text=lead)),
        (Link(1, "search", 2), _ref("http://s.example/", "d", text="Unrelated words here.")),
        (Link(1, "citation", 1), _ref("http://d.example/", "d", text="A mill of note.")),
        (Link(1, "citation", 0), _ref("http://c.example/", "d", text="Corn is ground.")),
        (Link(1, "search", 3), _ref("http://c.example/", "d", text="Corn is ground.")),
    ]
    kept, dropped = attach(art, found, clone_threshold=0.5)
    assert [(a.url, a.source, a.sources) for a in kept] == [
        ("http://c.example/", "citation", ("citation", "search")),
        ("http://d.example/", "citation", ("citation",)),
        ("http://s.example/", "search", ("search",))]
    assert [(u, r) for u, r, _ in dropped] == [
        ("http://mirror.example/k", "clone"),
        ("https://en.m.wikipedia.org/wiki/Kestrel_Works", "self")]


def test_split_is_stable_and_roughly_80_10_10():
    splits = Counter(split_of(f"Article {i}") for i in range(5000))
    assert split_of("Article 1") == split_of("Article 1")
    assert 3800 < splits["train"] < 4200 and 350 < splits["dev"] < 650


# --------------------------------------------------------------------------------------------
# Transforms


def test_join_keeps_one_capture_per_url():
    old, new = _ref("u", "2019-01-01T00:00:00Z"), _ref("u", "2020-01-01T00:00:00Z")
    link = Link(1, "citation", 0)
    with BeamTestPipeline() as p:
        out = ({"links": p | "L" >> beam.Create([("u", ("u", link))]),
                "refs": p | "R" >> beam.Create([("u", old), ("u", new)])}
               | beam.CoGroupByKey()
               | beam.FlatMap(ingest.join_by_url).with_outputs(
                   ingest.DEAD, ingest.TALLY, ingest.MISSING_CITATION, ingest.MISSING_SEARCH,
                   main="found"))
        assert_that(out.found, equal_to([(1, (link, new))]), label="kept")
        assert_that(out[ingest.DEAD] | beam.Map(lambda d: (d.url, d.reason, d.record)),
                    equal_to([("u", "superseded_capture", old.record_id)]), label="dead")


def test_join_by_url_transform_accounts_for_missing_and_unreferenced():
    ref_a, ref_b = _ref("a", "d"), _ref("b", "d")
    links = [("a", Link(1, "citation", 0)), ("a", Link(2, "search", 0)),
             ("c", Link(1, "citation", 1)), ("d", Link(2, "search", 1))]
    with BeamTestPipeline() as p:
        out = ({"links": p | "L" >> beam.Create([(url, (url, link)) for url, link in links]),
                "refs": p | "R" >> beam.Create([("a", ref_a), ("b", ref_b)])}
               | beam.CoGroupByKey()
               | beam.FlatMap(ingest.join_by_url).with_outputs(
                   ingest.DEAD, ingest.TALLY, ingest.MISSING_CITATION, ingest.MISSING_SEARCH,
                   main="found"))
        assert_that(out.found, equal_to([(1, (Link(1, "citation", 0), ref_a)),
                                         (2, (Link(2, "search", 0), ref_a))]), label="found")
        assert_that(out[ingest.MISSING_CITATION], equal_to(["c"]), label="missing_citation")
        assert_that(out[ingest.MISSING_SEARCH], equal_to(["d"]), label="missing_search")
        assert_that(out[ingest.DEAD] | beam.Map(lambda d: (d.url, d.stage, d.reason)),
                    equal_to([("c", "links", "missing"), ("d", "links", "missing"),
                              ("b", "captures", "unreferenced")]), label="dead")


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
    _, manifest, rows, _ = ingested
    for art in manifest["articles"]:
        row = rows[art["title"]]
        got = {r["url"]: r for r in row["references"]}
        expected = {normalize_url(r["url"]): r for r in art["references"]
                    if r["expected"] == "kept"}
        assert got.keys() == expected.keys(), art["title"]
        for url, ref in expected.items():
            assert sorted(got[url]["sources"]) == ref["sources"]
            assert got[url]["source"] == ("citation" if "citation" in ref["sources"]
                                          else "search")
            for paragraph in ref["relevant_paragraphs"]:
                assert paragraph in got[url]["paragraphs"], (art["title"], url)
        # Citations first, in the order the article cites them.
        sources = [r["source"] for r in row["references"]]
        assert sources == sorted(sources, key=lambda s: s != "citation")


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
                     "--search-results", str(bad / "search.jsonl"), "--out", str(out)]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["balanced"]
    assert summary["stages"]["files"]["dropped"] == {"corrupt_file": 2}
    assert summary["stages"]["search_results"]["dropped"] == {"bad_line": 1}
    assert summary["stages"]["records"]["kept"] > 300


def test_missing_input_is_a_clear_error(tmp_path):
    with pytest.raises(SystemExit, match="no input file matches"):
        cli.main(["ingest", "--wiki", str(tmp_path / "nope.xml.bz2"), "--out", str(tmp_path)])


def test_follow_redirects_to_the_end_of_the_chain_stopping_at_loops_and_the_limit():
    from wikisum.pipeline.ingest import follow_redirects

    aliases = {"http://a/1": "http://a/2", "http://a/2": "http://a/3",
               "http://l/x": "http://l/y", "http://l/y": "http://l/x"}
    assert follow_redirects("http://a/1", aliases) == "http://a/3"
    assert follow_redirects("http://a/3", aliases) == "http://a/3"
    assert follow_redirects("http://z/", aliases) == "http://z/"
    assert follow_redirects("http://l/x", aliases) == "http://l/y"  # the loop closes there
    assert follow_redirects("http://a/1", aliases, limit=1) == "http://a/2"
