"""The sample's ground truth: ``manifest.json`` and its two Parquet tables.

``manifest-articles.parquet`` and ``manifest-documents.parquet`` hold every reference of every
article with its kind, relevant paragraphs and expected outcome, and every captured document;
``manifest.json`` holds them too, with every page of the dump and the counts.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from wikisum.core import schemas
from wikisum.pipeline.sample import pages
from wikisum.pipeline.sample.config import DUMP_NAME, SEARCH_NAME, WET_NAME
from wikisum.pipeline.sample.planner import Planner
from wikisum.pipeline.sample.records import OK, Document, wikipedia_url
from wikisum.pipeline.sample.warcs import capture_body

GENERATOR_VERSION = 1


def expected_outcome(doc: Document) -> str:
    """What the pipeline should do with a reference to ``doc``."""
    if doc.kind == "missing":
        return "missing"
    if doc.kind == "self":
        return "self"
    if doc.kind in ("clone", "near_clone"):
        return "clone"
    if doc.outcome != OK:
        return doc.outcome
    return "kept"


def build_manifest(planner: Planner, extra: list[dict], entries, warc_names, record_counts,
                   n_articles: int, seed: int) -> dict:
    """The manifest of the planned sample: ``extra`` and ``entries`` are the dump's pages to drop
    and its entries (:func:`wikisum.pipeline.sample.dump.write_dump`), ``record_counts`` the
    records of each WARC and WET file by type."""
    articles = []
    for a in planner.articles:
        refs = []
        for url, ref in a.refs.items():
            doc = planner.docs[url]
            refs.append({
                "url": url,
                "raw_url": ref.raw_url or url,
                "sources": sorted(ref.sources),
                "kind": doc.kind,
                "expected": expected_outcome(doc),
                "relevant_paragraphs": [p.text for p in doc.paragraphs
                                        if a.title in p.relevant_to],
            })
        articles.append({
            "page_id": a.page_id,
            "title": a.title,
            "url": wikipedia_url(a.title),
            "kind": a.entity.kind,
            "lead": a.rendered.lead,
            "section_titles": list(a.rendered.section_titles),
            "citation_urls": [c.raw_url for c in a.citations],
            "search_urls": a.search_urls,
            "references": refs,
        })
    documents = []
    for d in sorted(planner.all_captures() + [x for x in planner.docs.values()
                                              if x.container == "none"],
                    key=lambda d: (d.url, d.date)):
        documents.append({
            "url": d.url,
            "kind": d.kind,
            "outcome": "missing" if d.container == "none" else d.outcome,
            "container": d.container,
            "file": d.file,
            "record_type": d.record_type if d.container != "none" else "",
            "status": d.status if d.container != "none" else 0,
            "content_type": d.content_type if d.container != "none" else "",
            "charset": d.charset,
            "capture_date": d.date,
            "location": d.location,
            "body_bytes": len(capture_body(d)) if d.container != "none" else 0,
            "paragraphs": [{"text": p.text, "relevant_to": p.relevant_to}
                           for p in d.paragraphs] if d.kind != "large" else
                          [{"text": p.text, "relevant_to": p.relevant_to}
                           for p in d.paragraphs if p.relevant_to],
            "boilerplate": pages.boilerplate_texts(d.site) if d.site else [],
        })
    pages_ = ([{"page_id": a.page_id, "title": a.title, "ns": 0, "kind": "article",
                "redirect_to": ""} for a in planner.articles]
              + [{"page_id": pid, "title": t, "ns": ns, "kind": k, "redirect_to": r or ""}
                 for pid, t, ns, _x, k, r in entries if k != "article"])
    pages_.sort(key=lambda p: p["page_id"])
    kinds = Counter(d["kind"] for d in documents)
    outcomes = Counter(d["outcome"] for d in documents)
    return {
        "generator": "wikisum sample",
        "version": GENERATOR_VERSION,
        "seed": seed,
        "articles_requested": n_articles,
        "files": {"dump": DUMP_NAME, "warc": warc_names, "wet": [WET_NAME],
                  "search_results": SEARCH_NAME},
        "counts": {
            "pages": len(pages_),
            "pages_by_kind": dict(sorted(Counter(p["kind"] for p in pages_).items())),
            "articles": len(articles),
            "search_result_lines": sum(1 for a in planner.articles if a.search_urls),
            "records": record_counts,
            "documents": len(documents),
            "documents_by_kind": dict(sorted(kinds.items())),
            "documents_by_outcome": dict(sorted(outcomes.items())),
            "references": sum(len(a["references"]) for a in articles),
        },
        "pages": pages_,
        "articles": articles,
        "documents": documents,
    }


def write_manifest(out: Path, manifest: dict) -> None:
    """Write ``manifest`` into ``out``: manifest.json and its two Parquet tables."""
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n",
                                       encoding="utf-8")
    _write_parquet(out / "manifest-articles.parquet", manifest["articles"],
                   schemas.MANIFEST_ARTICLES)
    _write_parquet(out / "manifest-documents.parquet", manifest["documents"],
                   schemas.MANIFEST_DOCUMENTS)


def _write_parquet(path: Path, rows: list[dict], schema: pa.Schema) -> None:
    table = pa.Table.from_pylist(rows, schema=schema)
    # No timestamps or library versions in the file, so that a seed gives the same bytes.
    pq.write_table(table, path, compression="zstd", store_schema=True,
                   write_statistics=False)
