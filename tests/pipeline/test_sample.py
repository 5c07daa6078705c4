"""The generated sample corpus: determinism, real formats, and a manifest that matches the files.

These checks read the files with standard parsers (xml.etree, warcio, json, pyarrow), never with
the generator's own code, so that a generator bug cannot vouch for itself.
"""

from __future__ import annotations

import bz2
import gzip
import html
import json
import re
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import trafilatura
from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from wikisum.core import schemas
from wikisum.pipeline.sample import write_sample

NS = "{http://www.mediawiki.org/xml/export-0.10/}"
HARD_CASES = ["clone", "near_clone", "self", "non_html", "legacy_encoding", "truncated",
              "not_found", "redirect", "empty", "large", "two_captures", "missing",
              "unreferenced", "url_variant"]


def all_files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file()}


def read_records(path: Path) -> tuple[list[dict], str | None]:
    """Every record warcio can read from ``path``, and the error that stopped it, if any."""
    records, error = [], None
    with open(path, "rb") as f:
        try:
            for rec in ArchiveIterator(f):
                status = (rec.http_headers.get_statuscode() if rec.rec_type == "response"
                          else None)
                records.append({
                    "type": rec.rec_type,
                    "url": rec.rec_headers.get_header("WARC-Target-URI"),
                    "date": rec.rec_headers.get_header("WARC-Date"),
                    "status": int(status) if status else None,
                    "content_type": (rec.http_headers.get_header("Content-Type")
                                     if rec.http_headers else
                                     rec.rec_headers.get_header("Content-Type")),
                    "body": rec.content_stream().read(),
                    "http_length": (int(rec.http_headers.get_header("Content-Length"))
                                    if rec.rec_type == "response" else None),
                })
        except (ArchiveLoadFailed, EOFError, OSError, ValueError) as exc:
            error = f"{type(exc).__name__}: {exc}"
    return records, error


def words(text: str) -> set[str]:
    return set(re.findall(r"[^\W_]+", text.lower()))


def test_same_seed_gives_identical_bytes(tmp_path):
    write_sample(tmp_path / "a", articles=15, seed=7)
    write_sample(tmp_path / "b", articles=15, seed=7)
    a, b = all_files(tmp_path / "a"), all_files(tmp_path / "b")
    assert a.keys() == b.keys()
    assert [k for k in a if a[k] != b[k]] == []


def test_another_seed_gives_another_corpus(tmp_path):
    write_sample(tmp_path / "a", articles=15, seed=7)
    write_sample(tmp_path / "b", articles=15, seed=8)
    name = "enwiki-sample-pages-articles.xml.bz2"
    assert (tmp_path / "a" / name).read_bytes() != (tmp_path / "b" / name).read_bytes()


def test_dump_parses_and_matches_manifest(sample_corpus):
    root, manifest = sample_corpus
    with bz2.open(root / manifest["files"]["dump"]) as f:
        tree = ET.parse(f)
    pages = tree.getroot().findall(f"{NS}page")
    assert len(pages) == manifest["counts"]["pages"]
    by_title = {p["title"]: p for p in manifest["pages"]}
    kinds = Counter()
    for page in pages:
        title = page.findtext(f"{NS}title")
        ns = int(page.findtext(f"{NS}ns"))
        text = page.find(f"{NS}revision/{NS}text").text
        redirect = page.find(f"{NS}redirect")
        expected = by_title[title]
        assert ns == expected["ns"]
        assert int(page.findtext(f"{NS}id")) == expected["page_id"]
        if redirect is not None:
            kind = "redirect"
            assert redirect.get("title") == expected["redirect_to"]
            assert text.startswith("#REDIRECT")
        elif ns != 0:
            kind = "non_article"
        elif "{{disambiguation}}" in text:
            kind = "disambiguation"
        elif text.lstrip().startswith("{{Use dmy dates|date=March 2020}}\n=="):
            kind = "empty_lead"
        elif "<ref" not in text:
            kind = "no_references"
        else:
            kind = "article"
        assert kind == expected["kind"], title
        kinds[kind] += 1
    assert dict(sorted(kinds.items())) == manifest["counts"]["pages_by_kind"]
    assert kinds["article"] == manifest["articles_requested"] == 60


def test_articles_are_real_wikitext(sample_corpus):
    root, manifest = sample_corpus
    with bz2.open(root / manifest["files"]["dump"]) as f:
        texts = {p.findtext(f"{NS}title"): p.find(f"{NS}revision/{NS}text").text
                 for p in ET.parse(f).getroot().findall(f"{NS}page")}
    styles = Counter()
    for art in manifest["articles"]:
        text = texts[art["title"]]
        assert re.search(r"^== \w", text, re.M), "sections"
        assert "{{Infobox" in text and "[[File:" in text and "[[" in text
        first_lead_line = art["lead"].split("\n\n")[0]
        assert first_lead_line.split()[0].strip("'") in text
        for raw in art["citation_urls"]:
            assert raw in text, (art["title"], raw)
        styles["cite web"] += text.count("{{cite web")
        styles["cite news"] += text.count("{{Cite news")
        styles["bare"] += len(re.findall(r"<ref>https?://[^<\s]+</ref>", text))
        styles["named reuse"] += len(re.findall(r'<ref name="[^"]+" />', text))
        styles["archive-url only"] += len(re.findall(r"\{\{cite web \|title=[^}]*archive-url=",
                                                     text))
        # The lead in the manifest is the text before the first heading, without markup.
        lead_wiki = text.split("\n==", 1)[0]
        for sentence in re.split(r"(?<=\.) ", art["lead"].replace("\n\n", " ")):
            assert sentence.split()[-1].rstrip(".") in lead_wiki
    assert all(styles[s] > 0 for s in ["cite web", "cite news", "bare", "named reuse",
                                        "archive-url only"]), styles


def test_warc_and_wet_read_with_warcio_and_match_manifest(sample_corpus):
    root, manifest = sample_corpus
    captured: dict[str, list[dict]] = {}
    for name in manifest["files"]["warc"] + manifest["files"]["wet"]:
        with open(root / name, "rb") as f:
            # gzip per record: every record is its own gzip member.
            assert f.read(2) == b"\x1f\x8b"
        records, error = read_records(root / name)
        expected = Counter(manifest["counts"]["records"][name])
        # warcio reads a truncated record without complaint (its body is just short).
        expected["response"] += expected.pop("response_truncated", 0)
        assert Counter(r["type"] for r in records) == +expected, name
        assert error is None
        for r in records:
            captured.setdefault(r["url"], []).append(r | {"file": name})

    for doc in manifest["documents"]:
        if doc["container"] == "none":
            assert doc["url"] not in captured
            continue
        if doc["outcome"] == "truncated":
            (rec,) = [r for r in captured[doc["url"]] if r["type"] == "response"]
            assert 0 < len(rec["body"]) < rec["http_length"]
            continue
        recs = [r for r in captured[doc["url"]] if r["type"] in ("response", "resource",
                                                                 "conversion")]
        rec = next(r for r in recs if r["date"] == doc["capture_date"])
        assert rec["file"] == doc["file"] and rec["type"] == doc["record_type"]
        assert len(rec["body"]) == doc["body_bytes"]
        if rec["http_length"] is not None:
            assert rec["http_length"] == len(rec["body"])
        if doc["record_type"] == "response":
            assert rec["status"] == doc["status"]
        if doc["outcome"] != "ok":
            continue
        text = rec["body"].decode(doc["charset"])
        if doc["record_type"] != "conversion":
            text = html.unescape(text)
        for p in doc["paragraphs"]:
            assert p["text"] in text, doc["url"]


def test_hard_cases_are_all_present(sample_corpus):
    _, manifest = sample_corpus
    kinds = manifest["counts"]["documents_by_kind"]
    assert [k for k in HARD_CASES if not kinds.get(k)] == []
    docs = manifest["documents"]
    # Two captures of one URL, the later one expected to win.
    twice = Counter(d["url"] for d in docs)
    assert sum(1 for n in twice.values() if n == 2) == 2
    for d in docs:
        if d["kind"] == "large":
            assert d["body_bytes"] > 5 * 1024 * 1024
        if d["kind"] == "non_html":
            assert not d["content_type"].startswith("text/")
        if d["kind"] in ("not_found", "redirect"):
            assert d["status"] in (404, 301) and d["outcome"] == "http_status"
        if d["kind"] == "redirect":
            assert d["location"].startswith("http")


def test_legacy_encoding_is_declared_only_in_the_html(sample_corpus):
    root, manifest = sample_corpus
    legacy = [d for d in manifest["documents"] if d["kind"] == "legacy_encoding"]
    assert {d["charset"] for d in legacy} == {"windows-1252", "iso-8859-1"}
    for d in legacy:
        records, _ = read_records(root / d["file"])
        rec = next(r for r in records if r["url"] == d["url"] and r["type"] == "response")
        assert "charset" not in rec["content_type"]
        with pytest.raises(UnicodeDecodeError):
            rec["body"].decode("utf-8")
        text = rec["body"].decode(d["charset"])
        assert "café" in text and "crème brûlée" in text
        assert re.search(r"<meta[^>]*charset=\"?" + d["charset"], text, re.I)


def test_clone_ground_truth_is_clear_of_the_threshold(sample_corpus):
    """Ordinary references stay well below a 0.5 unigram recall of the lead, clones above."""
    _, manifest = sample_corpus
    docs = {d["url"]: d for d in manifest["documents"] if d["outcome"] == "ok"}
    seen = Counter()
    for art in manifest["articles"]:
        lead = words(art["lead"])
        for ref in art["references"]:
            doc = docs.get(ref["url"])
            if doc is None or doc["kind"] == "self":
                continue
            recall = len(lead & words(" ".join(p["text"] for p in doc["paragraphs"]))) / len(
                lead)
            if ref["expected"] == "clone":
                assert recall > 0.6, ref["url"]
            else:
                assert recall < 0.42, ref["url"]
            seen[ref["expected"]] += 1
    assert seen["clone"] >= 4 and seen["kept"] > 300


def test_every_article_has_relevant_references(sample_corpus):
    _, manifest = sample_corpus
    for art in manifest["articles"]:
        kept = [r for r in art["references"] if r["expected"] == "kept"]
        assert kept, art["title"]
        assert any(r["relevant_paragraphs"] for r in kept), art["title"]
        for r in kept:
            for p in r["relevant_paragraphs"]:
                # Relevant paragraphs restate the article's facts: they name the subject (a
                # species may go by the common name its lead gives).
                names = [art["title"], art["title"].split()[0]]
                names += re.findall(r", the (.+?), is a species", art["lead"])
                assert any(n in p for n in names), (art["title"], p)


def test_search_results_file(sample_corpus):
    root, manifest = sample_corpus
    lines = (root / manifest["files"]["search_results"]).read_text("utf-8").splitlines()
    assert len(lines) == manifest["counts"]["search_result_lines"]
    rows = [json.loads(line) for line in lines]
    assert all(set(r) == {"title", "urls"} for r in rows)
    by_title = {a["title"]: a for a in manifest["articles"]}
    for r in rows:
        assert r["urls"] == by_title[r["title"]]["search_urls"]
    assert any("wikipedia.org/wiki/" in u for r in rows for u in r["urls"])


def test_manifest_parquet_follows_the_schemas(sample_corpus):
    root, manifest = sample_corpus
    for name, key in [("manifest-articles", "articles"), ("manifest-documents", "documents")]:
        table = pq.read_table(root / f"{name}.parquet")
        assert table.schema.equals(schemas.ALL[name], check_metadata=False)
        assert table.num_rows == len(manifest[key])
        assert table.to_pylist() == pa.Table.from_pylist(manifest[key],
                                                         schema=schemas.ALL[name]).to_pylist()


def test_pages_look_like_the_web(sample_corpus):
    """A main-text extractor finds the relevant paragraphs and leaves the boilerplate."""
    root, manifest = sample_corpus
    name = manifest["files"]["warc"][1]
    records, _ = read_records(root / name)
    bodies = {r["url"]: r["body"] for r in records if r["type"] in ("response", "resource")}
    checked = 0
    for d in manifest["documents"]:
        if d["file"] != name or d["outcome"] != "ok" or d["kind"] in ("self", "clone"):
            continue
        text = trafilatura.extract(bodies[d["url"]].decode(d["charset"]), deduplicate=False)
        for p in d["paragraphs"]:
            assert p["text"] in text
        assert "We use cookies" not in text and "All rights reserved" not in text
        checked += 1
    assert checked > 50


def test_wet_text_keeps_boilerplate_lines(sample_corpus):
    root, manifest = sample_corpus
    with gzip.open(root / manifest["files"]["wet"][0], "rb") as f:
        raw = f.read().decode("utf-8")
    assert "WARC-Type: conversion" in raw and "We use cookies" in raw
