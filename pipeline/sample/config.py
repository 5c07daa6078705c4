"""The sample corpus's file names and default size, declared here once: ``corpus.write_sample``
writes them, and ``wikisum sample --help`` shows them without importing the generator (pyarrow,
warcio)."""

from __future__ import annotations

DUMP_NAME = "enwiki-sample-pages-articles.xml.bz2"
SEARCH_NAME = "search_results.jsonl"
WET_NAME = "wet/sample-00000.warc.wet.gz"
DEFAULT_ARTICLES = 60
DEFAULT_SEED = 0
