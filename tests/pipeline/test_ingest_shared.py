"""``wikisum ingest`` on the real files in ../shared/data (skipped when that folder is absent)."""

from __future__ import annotations

import bz2
import json

import pyarrow.parquet as pq
import pytest

from wikisum.pipeline.articles import page_to_article
from wikisum.pipeline.dumps import iter_pages
from wikisum.workflows import cli

pytestmark = pytest.mark.shared_data


def test_real_dumps_parse_utf16_included(shared_data):
    dumps = shared_data / "wikipedia" / "dumps"
    en = list(iter_pages(bz2.open(dumps / "enwiki-table-markup.xml.bz2")))
    bg = list(iter_pages(bz2.open(next(dumps.glob("bgwiki-*.xml.bz2")))))
    assert len(en) == 5 and all(p.ns == 0 and p.text for p in en)
    assert [p.title for p in bg][0] == "Григориански календар"
    assert [p.ns for p in bg] == [0, 4, 4]
    articles = [page_to_article(p, "en") for p in en]
    assert all(not isinstance(a, str) and a.lead for a in articles)
    assert page_to_article(bg[1], "bg", lang="bg") == "non_article_namespace"


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
