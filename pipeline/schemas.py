"""Explicit pyarrow schemas of every Parquet file the system writes.

Writers pass these to ``pa.Table.from_pylist(rows, schema=...)`` (or Beam's ``WriteToParquet``),
readers validate against them, and ``docs/data.md`` documents every column. A change here is a
change of file format: bump ``FORMAT_VERSION`` and say so in the docs.
"""

from __future__ import annotations

import pyarrow as pa

FORMAT_VERSION = 1

# ------------------------------------------------------------------------------------------
# Sample corpus ground truth (``wikisum sample``): manifest-articles.parquet,
# manifest-documents.parquet. The same rows are in manifest.json.

MANIFEST_REFERENCE = pa.struct([
    pa.field("url", pa.string(), nullable=False),
    pa.field("raw_url", pa.string(), nullable=False),
    pa.field("sources", pa.list_(pa.string()), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("expected", pa.string(), nullable=False),
    pa.field("relevant_paragraphs", pa.list_(pa.string()), nullable=False),
])

MANIFEST_ARTICLES = pa.schema([
    pa.field("page_id", pa.int64(), nullable=False),
    pa.field("title", pa.string(), nullable=False),
    pa.field("url", pa.string(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("lead", pa.string(), nullable=False),
    pa.field("section_titles", pa.list_(pa.string()), nullable=False),
    pa.field("citation_urls", pa.list_(pa.string()), nullable=False),
    pa.field("search_urls", pa.list_(pa.string()), nullable=False),
    pa.field("references", pa.list_(MANIFEST_REFERENCE), nullable=False),
], metadata={"wikisum.table": "manifest-articles", "wikisum.format": str(FORMAT_VERSION)})

MANIFEST_PARAGRAPH = pa.struct([
    pa.field("text", pa.string(), nullable=False),
    pa.field("relevant_to", pa.list_(pa.string()), nullable=False),
])

MANIFEST_DOCUMENTS = pa.schema([
    pa.field("url", pa.string(), nullable=False),
    pa.field("kind", pa.string(), nullable=False),
    pa.field("outcome", pa.string(), nullable=False),
    pa.field("container", pa.string(), nullable=False),
    pa.field("file", pa.string(), nullable=False),
    pa.field("record_type", pa.string(), nullable=False),
    pa.field("status", pa.int32(), nullable=False),
    pa.field("content_type", pa.string(), nullable=False),
    pa.field("charset", pa.string(), nullable=False),
    pa.field("capture_date", pa.string(), nullable=False),
    pa.field("location", pa.string(), nullable=False),
    pa.field("body_bytes", pa.int64(), nullable=False),
    pa.field("paragraphs", pa.list_(MANIFEST_PARAGRAPH), nullable=False),
    pa.field("boilerplate", pa.list_(pa.string()), nullable=False),
], metadata={"wikisum.table": "manifest-documents", "wikisum.format": str(FORMAT_VERSION)})

ALL = {
    "manifest-articles": MANIFEST_ARTICLES,
    "manifest-documents": MANIFEST_DOCUMENTS,
}

# ------------------------------------------------------------------------------------------
# ``wikisum ingest``: OUT/articles/articles-NNNNN-of-NNNNN.parquet, one row per article.

SECTION = pa.struct([
    pa.field("title", pa.string(), nullable=False),
    pa.field("level", pa.int32(), nullable=False),
    pa.field("text", pa.string(), nullable=False),
])

REFERENCE = pa.struct([
    pa.field("url", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("sources", pa.list_(pa.string()), nullable=False),
    pa.field("capture_date", pa.string(), nullable=False),
    pa.field("source_file", pa.string(), nullable=False),
    pa.field("paragraphs", pa.list_(pa.string()), nullable=False),
])

ARTICLES = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("title", pa.string(), nullable=False),
    pa.field("url", pa.string(), nullable=False),
    pa.field("split", pa.string(), nullable=False),
    pa.field("lead", pa.string(), nullable=False),
    pa.field("sections", pa.list_(SECTION), nullable=False),
    pa.field("citations_listed", pa.int32(), nullable=False),
    pa.field("citations_found", pa.int32(), nullable=False),
    pa.field("search_listed", pa.int32(), nullable=False),
    pa.field("search_found", pa.int32(), nullable=False),
    pa.field("clones_removed", pa.int32(), nullable=False),
    pa.field("self_removed", pa.int32(), nullable=False),
    pa.field("references", pa.list_(REFERENCE), nullable=False),
], metadata={"wikisum.table": "articles", "wikisum.format": str(FORMAT_VERSION)})

# OUT/dead_letters/dead_letters-NNNNN-of-NNNNN.parquet: one row per dropped or failed record.
DEAD_LETTERS = pa.schema([
    pa.field("input_file", pa.string(), nullable=False),
    pa.field("record", pa.string(), nullable=False),
    pa.field("url", pa.string(), nullable=False),
    pa.field("stage", pa.string(), nullable=False),
    pa.field("reason", pa.string(), nullable=False),
    pa.field("error", pa.string(), nullable=False),
], metadata={"wikisum.table": "dead_letters", "wikisum.format": str(FORMAT_VERSION)})

ALL.update({"articles": ARTICLES, "dead_letters": DEAD_LETTERS})

# ------------------------------------------------------------------------------------------
# ``wikisum rank``: OUT/{train,dev,test}-NNNNN-of-NNNNN.parquet, one row per article, with the
# token ids of everything (tokenised once) and every extractor x corpus ranking.

PARAGRAPH = pa.struct([
    pa.field("text", pa.string(), nullable=False),
    pa.field("ids", pa.list_(pa.int32()), nullable=False),
    pa.field("reference", pa.int32(), nullable=False),  # index into the article's references
    pa.field("sources", pa.list_(pa.string()), nullable=False),
])

RANKING = pa.struct([
    pa.field("extractor", pa.string(), nullable=False),
    pa.field("corpus", pa.string(), nullable=False),
    pa.field("order", pa.list_(pa.int32()), nullable=False),  # indices into `paragraphs`
])

RANKED = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("title", pa.string(), nullable=False),
    pa.field("split", pa.string(), nullable=False),
    pa.field("title_ids", pa.list_(pa.int32()), nullable=False),
    pa.field("lead", pa.string(), nullable=False),
    pa.field("lead_ids", pa.list_(pa.int32()), nullable=False),
    pa.field("reference_urls", pa.list_(pa.string()), nullable=False),
    pa.field("paragraphs", pa.list_(PARAGRAPH), nullable=False),
    pa.field("rankings", pa.list_(RANKING), nullable=False),
], metadata={"wikisum.table": "ranked", "wikisum.format": str(FORMAT_VERSION)})

ALL["ranked"] = RANKED
