"""Explicit pyarrow schemas of every Parquet file the system writes.

Writers pass these to ``pa.Table.from_pylist(rows, schema=...)`` (or Beam's ``WriteToParquet``),
readers validate against them, and ``docs/data.md`` documents every column. A change here is a
change of file format: bump ``FORMAT_VERSION`` and say so in the docs.
"""

from __future__ import annotations

import pyarrow as pa

FORMAT_VERSION = 2  # 2: references' language; per-article language and duplicate drops

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
    pa.field("language", pa.string(), nullable=False),  # "und" when undetermined
    pa.field("language_confidence", pa.float32(), nullable=False),
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
    pa.field("other_language_removed", pa.int32(), nullable=False),
    pa.field("duplicate_references_removed", pa.int32(), nullable=False),
    pa.field("duplicate_paragraphs_removed", pa.int32(), nullable=False),
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
    # The example's id in the dataset it was imported from (`wikisum import`): null in a build
    # (whose `id` is the page id and whose articles are named by title).
    pa.field("source_id", pa.string()),
    # The whole article as a target (`rank --targets lead,article`; null otherwise): the lead,
    # then each section as <sec> title <eoh> text (wikisum.core.articlelayout), no </s>; and
    # the token count after each section, cumulative (tensor2tensor's section_boundaries).
    pa.field("article_ids", pa.list_(pa.int32())),
    pa.field("section_boundaries", pa.list_(pa.int32())),
], metadata={"wikisum.table": "ranked", "wikisum.format": str(FORMAT_VERSION)})

ALL["ranked"] = RANKED

# ``wikisum rank``: DATA/inputs/{EXTRACTOR}-{CORPUS}-{L}/{split}-NNNNN-of-NNNNN.parquet, one row
# per article: the model input the loader builds for that extractor x corpus x L, ready to read
# without wikisum (``datasets.load_dataset(DATA)``, the dataset card's configs).

MODEL_INPUTS = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("title", pa.string(), nullable=False),
    pa.field("input", pa.string(), nullable=False),  # input_ids decoded
    pa.field("target", pa.string(), nullable=False),  # the lead
    pa.field("input_ids", pa.list_(pa.int32()), nullable=False),  # title, <t>, paragraphs; <= L
    pa.field("target_ids", pa.list_(pa.int32()), nullable=False),  # the lead's ids, no </s>
], metadata={"wikisum.table": "model_inputs", "wikisum.format": str(FORMAT_VERSION)})

ALL["model_inputs"] = MODEL_INPUTS

# ------------------------------------------------------------------------------------------
# ``wikisum convert-pairs``: OUT/{split}-NNNNN-of-NNNNN.parquet, one row per headline pair
# (Rush et al. 2015 Gigaword format: article line -> title line). Shards hold consecutive lines.

PAIRS = pa.schema([
    pa.field("id", pa.int64(), nullable=False),  # 1-based line number in the input files
    pa.field("split", pa.string(), nullable=False),
    pa.field("source", pa.string(), nullable=False),
    pa.field("source_ids", pa.list_(pa.int32()), nullable=False),
    pa.field("target", pa.string(), nullable=False),
    pa.field("target_ids", pa.list_(pa.int32()), nullable=False),  # no </s>
], metadata={"wikisum.table": "pairs", "wikisum.format": str(FORMAT_VERSION)})

# ``wikisum exemplars``: DATA/exemplars-{split}.parquet, one row per example of the split: the
# training example whose source is most similar (bag-of-words cosine) to this example's source.

EXEMPLARS = pa.schema([
    pa.field("id", pa.int64(), nullable=False),  # the example (an id of the split's shards)
    pa.field("exemplar_id", pa.int64(), nullable=False),  # an id of the train split
    pa.field("similarity", pa.float32(), nullable=False),  # cosine of the two sources, [0, 1]
], metadata={"wikisum.table": "exemplars", "wikisum.format": str(FORMAT_VERSION)})

ALL.update({"pairs": PAIRS, "exemplars": EXEMPLARS})

# ------------------------------------------------------------------------------------------
# ``wikisum crawl``: OUT/log/crawl_log-RUN-SSSSS-of-NNNNN.parquet, one row per distinct URL read
# by run RUN (the same rows as JSON Lines beside it).

CRAWL_LOG = pa.schema([
    pa.field("url", pa.string(), nullable=False),  # normalised; the input line if invalid
    pa.field("final_url", pa.string(), nullable=False),  # of the last response; "" if none
    pa.field("outcome", pa.string(), nullable=False),  # fetched | refused | failed | skipped
    pa.field("reason", pa.string(), nullable=False),  # ok, robots, address, timeout, ...
    pa.field("status", pa.int32(), nullable=False),  # last HTTP status; 0 when none came
    pa.field("attempts", pa.int32(), nullable=False),  # tries of the last request
    pa.field("redirects", pa.list_(pa.string()), nullable=False),  # targets followed, in order
    pa.field("bytes", pa.int64(), nullable=False),  # body bytes recorded
    pa.field("truncated", pa.bool_(), nullable=False),  # body cut at --max-bytes
    pa.field("warc_file", pa.string(), nullable=False),  # "" when nothing was recorded
    pa.field("warc_offset", pa.int64(), nullable=False),  # of the response record; -1: none
    pa.field("fetched_at", pa.string(), nullable=False),  # UTC, ISO 8601, when decided
    pa.field("error", pa.string(), nullable=False),  # the detail behind the reason
], metadata={"wikisum.table": "crawl_log", "wikisum.format": str(FORMAT_VERSION)})

ALL["crawl_log"] = CRAWL_LOG

# ------------------------------------------------------------------------------------------
# ``wikisum cc-fetch``: log/cc_fetch_log-RUN-SSSSS-of-NNNNN.parquet, one row per distinct URL.

CC_FETCH_LOG = pa.schema([
    pa.field("url", pa.string(), nullable=False),  # as listed (the cited spelling)
    pa.field("outcome", pa.string(), nullable=False),  # fetched | found | not_in_index | ...
    pa.field("reason", pa.string(), nullable=False),  # ok, no_capture, mime, short_read, ...
    pa.field("urlkey", pa.string(), nullable=False),  # SURT key looked up; "" if invalid
    pa.field("crawl", pa.string(), nullable=False),  # of the chosen capture; "" if none
    pa.field("capture_url", pa.string(), nullable=False),  # URL of the chosen (last) capture
    pa.field("capture_time", pa.string(), nullable=False),  # its YYYYMMDDhhmmss
    pa.field("status", pa.int32(), nullable=False),  # its HTTP status in the index
    pa.field("redirects", pa.list_(pa.string()), nullable=False),  # redirect targets followed
    pa.field("filename", pa.string(), nullable=False),  # its WARC file in the crawl
    pa.field("offset", pa.int64(), nullable=False),  # its record's offset there; -1: none
    pa.field("length", pa.int64(), nullable=False),  # its record's length in bytes
    pa.field("warc_file", pa.string(), nullable=False),  # where it was written here
    pa.field("warc_offset", pa.int64(), nullable=False),  # its offset there; -1: none
    pa.field("bytes", pa.int64(), nullable=False),  # record bytes fetched for the URL
    pa.field("attempts", pa.int32(), nullable=False),  # requests for the last record
    pa.field("searched", pa.string(), nullable=False),  # crawls and --before searched
    pa.field("fetched_at", pa.string(), nullable=False),  # UTC, ISO 8601, when decided
    pa.field("error", pa.string(), nullable=False),  # the detail behind the reason
], metadata={"wikisum.table": "cc_fetch_log", "wikisum.format": str(FORMAT_VERSION)})

ALL["cc_fetch_log"] = CC_FETCH_LOG

# The columnar URL index as ``wikisum sample`` writes it: the columns of Common Crawl's table
# (cc-index/table/cc-main/warc/) that cc-fetch reads, with Common Crawl's names and types.
CC_COLUMNAR_INDEX = pa.schema([
    pa.field("url_surtkey", pa.string()),
    pa.field("url", pa.string()),
    pa.field("url_host_name", pa.string()),
    pa.field("url_protocol", pa.string()),
    pa.field("fetch_time", pa.timestamp("us", tz="UTC")),
    pa.field("fetch_status", pa.int16()),
    pa.field("fetch_redirect", pa.string()),
    pa.field("content_digest", pa.string()),
    pa.field("content_mime_type", pa.string()),
    pa.field("content_mime_detected", pa.string()),
    pa.field("warc_filename", pa.string()),
    pa.field("warc_record_offset", pa.int32()),
    pa.field("warc_record_length", pa.int32()),
    pa.field("crawl", pa.string()),
    pa.field("subset", pa.string()),
])
