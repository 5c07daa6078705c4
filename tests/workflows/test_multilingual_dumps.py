"""The truncated real Japanese, Ukrainian and Vietnamese dumps built end to end, each in its own
language: the dump's language taken from its <siteinfo>, a page written in that language at a
cited URL joined and kept, a clone of the lead at another cited URL dropped, the report's and
evaluate's figures above 0. The reference pages are written here from the dump's own text (no
WARC comes with the dumps): paragraphs of an article's later sections at its first cited URL (as
many as stay clearly below the clone threshold), its lead at its second."""

from __future__ import annotations

import io
import json
import lzma

import pyarrow.parquet as pq
import pytest

from wikisum.core.text import words
from wikisum.pipeline import dumps, wikitext
from wikisum.pipeline.clones import clone_recall
from wikisum.workflows import cli

pytestmark = pytest.mark.shared_data

DUMPS = [("jawiki", "ja"), ("ukwiki", "uk"), ("viwiki", "vi")]
ARTICLES = 4  # built per dump: the first articles with enough text and two cited URLs


def _chosen(path, lang: str) -> list[wikitext.ParsedArticle]:
    """The first articles of the dump with a lead of 40+ words, 150+ words of sections and two
    distinct http(s) citation URLs."""
    found = []
    try:
        for page in dumps.iter_pages(lzma.open(path)):
            if page.ns != 0:
                continue
            article = wikitext.parse_article(page.title, page.text, lang)
            urls = list(dict.fromkeys(u for u in article.citation_urls
                                      if u.startswith(("http://", "https://"))))
            if (not article.is_redirect and len(words(article.lead)) >= 40 and len(urls) >= 2
                    and sum(len(words(s.text)) for s in article.sections) >= 150):
                found.append(article)
                if len(found) == ARTICLES:
                    return found
    except dumps.DumpError:  # the dump is cut mid-page, as a stopped download would be
        pass
    return found


def _not_a_clone(article, lang: str) -> list[str]:
    """Paragraphs of the article's later sections, taken while they recall under 0.3 of the
    lead's content words: a whole article body recalls most of its own lead, and the clone
    filter rightly drops it."""
    taken: list[str] = []
    for section in article.sections:
        for paragraph in section.text.split("\n"):
            if paragraph.strip() and clone_recall(article.lead, " ".join([*taken, paragraph]),
                                                  "content", lang) < 0.3:
                taken.append(paragraph)
    return taken


def _page(title: str, paragraphs: list[str]) -> bytes:
    body = "".join(f"<p>{p}</p>" for p in paragraphs if p.strip())
    return (f"<html><head><meta charset='utf-8'><title>{title}</title></head><body>"
            f"<article><h1>{title}</h1>{body}</article></body></html>").encode()


def _warc(pages: list[tuple[str, bytes]]) -> bytes:
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    for i, (url, body) in enumerate(pages):
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                              ("Content-Length", str(len(body)))],
                                   protocol="HTTP/1.1")
        fixed = {"WARC-Record-ID": f"<urn:uuid:00000000-0000-0000-0000-{i:012d}>",
                 "WARC-Date": "2023-01-01T00:00:00Z"}
        writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body),
                                                      http_headers=headers,
                                                      warc_headers_dict=fixed))
    return buf.getvalue()


def _cited(article) -> tuple[str, str]:
    urls = list(dict.fromkeys(u for u in article.citation_urls
                              if u.startswith(("http://", "https://"))))
    return urls[0], urls[1]


@pytest.mark.parametrize(("wiki", "lang"), DUMPS, ids=[d[1] for d in DUMPS])
def test_a_real_dump_builds_end_to_end_in_its_own_language(shared_data, tmp_path, wiki, lang):
    dump = shared_data / "wikipedia" / "multilingual" / f"{wiki}-truncated-100k.xml.xz"
    articles = _chosen(dump, lang)
    assert len(articles) == ARTICLES
    pages = []
    for article in articles:
        kept, clone = _cited(article)
        pages.append((kept, _page(article.title, _not_a_clone(article, lang))))
        pages.append((clone, _page(article.title, article.lead.split("\n"))))
    (tmp_path / "refs.warc.gz").write_bytes(_warc(pages))
    out = tmp_path / "build"
    # No --lang: the dump's <siteinfo> names its language.
    assert cli.main(["build", "--wiki", str(dump), "--warc", str(tmp_path / "refs.warc.gz"),
                     "--out", str(out), "--vocab-size", "2000", "--no-learned"]) == 0

    info = json.loads((out / "data" / "dataset.json").read_text())
    assert info["language"] == lang
    rows = {r["title"]: r for r in pq.read_table(out / "ingest" / "articles").to_pylist()}
    for article in articles:
        kept, clone = _cited(article)
        row = rows[article.title]
        urls = [ref["url"] for ref in row["references"]]
        assert len(urls) == 1, (article.title, urls)  # the page in the language, kept
        assert row["clones_removed"] == 1  # the lead's copy, dropped
        assert row["references"][0]["paragraphs"]
    summary = json.loads((out / "ingest" / "summary.json").read_text())
    assert summary["balanced"]

    report = tmp_path / "report"
    assert cli.main(["report", "--data", str(out), "--out", str(report), "--split", "train",
                     "--bootstrap", "20"]) == 0
    metrics = json.loads((report / "metrics.json").read_text())
    assert metrics["language"] == lang
    scores = [metrics["extractive_rouge"][e]["citations"]["rouge1"]["mean"]
              for e in metrics["extractors"]]
    assert all(0.0 < s < 1.0 for s in scores), scores
    assert metrics["recommendation"]["recommended"]

    # evaluate in the dataset's language: the first half of each lead against the whole lead
    preds = tmp_path / "preds.jsonl"
    with preds.open("w", encoding="utf-8") as f:
        for i, article in enumerate(articles):
            lead = " ".join(article.lead.split())
            f.write(json.dumps({"id": i, "prediction": lead[: len(lead) // 2],
                                "reference": lead, "lang": lang}, ensure_ascii=False) + "\n")
    assert cli.main(["evaluate", "--preds", str(preds), "--bootstrap", "0"]) == 0
    result = json.loads(preds.with_suffix(".metrics.json").read_text())
    assert result["languages"] == {lang: ARTICLES}
    assert 0.9 < result["rouge"]["rouge1"]["p"] <= 1.0
    assert 0.3 < result["rouge"]["rouge1"]["r"] < 0.7
