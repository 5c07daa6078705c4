"""The defaults of `wikisum ingest` (and `wikisum build`'s ingest options) that --help shows.

Every other command reads its defaults where they are declared, once, in an import-light module
beside the code that uses them (a config dataclass and its constants: ``pipeline/rank_config.py``,
``pipeline/crawl/records.py``, ``core/vocab_config.py``, the extractor registry, ...). These few
are still copies, because their sources (``pipeline/ingest.py``, ``references.py``,
``dumps.py``, ``dedup.py``, ``clones.py``) import Beam, pyarrow or trafilatura: the ingest group
moves with pipeline/ingest/, and this module goes with it. Until then each value names its
source, and tests/workflows/test_option_names.py keeps every one equal to it.
"""

from __future__ import annotations

# ingest: wikisum.pipeline.ingest, .references, .dumps, .dedup, .clones
INGEST_SHARDS = 8  # ingest.DEFAULT_SHARDS
MAX_PAGE_BYTES = 2 * 1024 * 1024  # references.DEFAULT_MAX_PAGE_BYTES
MAX_ARTICLE_BYTES = 8 * 1024 * 1024  # dumps.DEFAULT_MAX_TEXT_BYTES
CLONE_THRESHOLD = 0.5  # references.AttachConfig.clone_threshold
CLONE_MEASURE = "content"  # references.AttachConfig.clone_measure
CLONE_MEASURES = ("unigram", "content")  # clones.CLONE_MEASURES
PAGE_TIMEOUT_S = 20.0  # references.CleanConfig.timeout_s
MIN_WORDS = 1  # references.CleanConfig.min_words
NEAR_DUPLICATE_THRESHOLD = 0.6  # dedup.DedupConfig.threshold
