"""The sample corpus: a deterministic, small WikiSum input in the real formats.

``write_sample(out_dir, articles=60, seed=0)`` writes

- ``enwiki-sample-pages-articles.xml.bz2``: a MediaWiki export (schema 0.10) of the articles,
  plus redirects, a disambiguation page, non-article namespaces and two articles that the
  pipeline must drop (an empty lead, no references) (``dump``);
- ``warc/sample-NNNNN.warc.gz``: WARC/1.0 files, gzip per record, with ``warcinfo``, ``request``
  and ``response`` records (and one ``resource`` record), as Common Crawl and wget write them
  (``warcs``);
- ``wet/sample-00000.warc.wet.gz``: text conversions (``conversion`` records) for pages that are
  in no WARC file (``warcs``);
- ``search_results.jsonl``: one ``{"title": ..., "urls": [...]}`` per article;
- ``cc-index/...`` and ``urls.txt``: the WARC captures as a Common Crawl URL index (CDXJ and
  the columnar Parquet table) and every URL the articles refer to (``ccindex``);
- ``manifest.json`` and ``manifest-articles.parquet`` / ``manifest-documents.parquet``: the
  ground truth (what every reference is, which paragraphs are relevant to which article, and
  what the pipeline is expected to do with it) (``manifest``).

Planning (what exists, which article refers to what: ``planner``, over the records of
``records``) is separated from writing (bytes), and the same seed gives byte-identical files:
every random draw comes from one ``random.Random(seed)``, and every timestamp, record id and
ordering is derived from it.
"""

from __future__ import annotations

import json
from pathlib import Path

from wikisum.pipeline.sample import ccindex
from wikisum.pipeline.sample.config import (
    DEFAULT_ARTICLES,
    DEFAULT_SEED,
    DUMP_NAME,
    SEARCH_NAME,
    WET_NAME,
)
from wikisum.pipeline.sample.dump import write_dump
from wikisum.pipeline.sample.manifest import build_manifest, write_manifest
from wikisum.pipeline.sample.planner import Planner
from wikisum.pipeline.sample.warcs import write_warc, write_wet

# Callers read the file names from here too (bench/ingest.py); config.py declares them.
__all__ = ["DUMP_NAME", "SEARCH_NAME", "WET_NAME", "write_sample"]


def write_sample(out_dir: str | Path, articles: int = DEFAULT_ARTICLES,
                 seed: int = DEFAULT_SEED) -> dict:
    """Write the sample corpus to ``out_dir`` and return its manifest."""
    out = Path(out_dir)
    planner = Planner(seed, articles)
    planner.plan()
    planner.render()
    warc_names = planner.assign_files()
    (out / "warc").mkdir(parents=True, exist_ok=True)
    (out / "wet").mkdir(parents=True, exist_ok=True)

    extra, entries = write_dump(out / DUMP_NAME, planner)

    # WARC and WET files.
    record_counts: dict[str, dict[str, int]] = {}
    captures = planner.all_captures()
    for name in warc_names:
        docs = sorted((d for d in captures if d.file == name), key=lambda d: (d.date, d.url))
        record_counts[name] = dict(sorted(write_warc(out / name, name, docs, seed).items()))
    wet_docs = sorted((d for d in captures if d.file == WET_NAME), key=lambda d: d.url)
    record_counts[WET_NAME] = dict(write_wet(out / WET_NAME, wet_docs, seed))

    # Search results.
    lines = [json.dumps({"title": a.title, "urls": a.search_urls}, ensure_ascii=False)
             for a in planner.articles if a.search_urls]
    (out / SEARCH_NAME).write_text("\n".join(lines) + "\n", encoding="utf-8")

    # The captures as a Common Crawl URL index, and the URLs the articles refer to.
    urls = list(dict.fromkeys(
        [c.raw_url for a in planner.articles for c in a.citations]
        + [u for a in planner.articles for u in a.search_urls]))
    index = ccindex.write_index(out, warc_names, urls)

    manifest = build_manifest(planner, extra, entries, warc_names, record_counts, articles, seed)
    manifest["files"]["cc_index"] = index
    write_manifest(out, manifest)
    return manifest
