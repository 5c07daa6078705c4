"""The defaults and names that the commands' --help shows.

They are kept here, in a module that imports nothing, so that building the ``wikisum`` parser
(``--help``, a usage error) does not import the modules that use them: those import Beam,
pyarrow, scikit-learn, sentencepiece or trafilatura, seconds at every start. Each value names
its source; tests/workflows/test_option_names.py keeps every one equal to it.
"""

from __future__ import annotations

# wikisum.pipeline.sample.corpus
SAMPLE_DUMP_NAME = "enwiki-sample-pages-articles.xml.bz2"
SAMPLE_WET_NAME = "wet/sample-00000.warc.wet.gz"
SAMPLE_SEARCH_NAME = "search_results.jsonl"

# shards: wikisum.core.shards (ingest's own defaults: wikisum.pipeline.ingest.config)
SHARD_BUFFER_BYTES = 256 * 1024 * 1024  # shards.DEFAULT_BUFFER_BYTES

# vocab: wikisum.core.vocab
VOCAB_SIZE = 32000  # vocab.DEFAULT_SIZE
VOCAB_MAX_TEXTS = 300_000  # vocab.DEFAULT_MAX_TEXTS

# rank: wikisum.pipeline.rank, wikisum.extractors
RANK_SHARDS = 4  # rank.DEFAULT_SHARDS
LEARNED_ARTICLES = 5000  # extractors.learned.DEFAULT_MAX_ARTICLES
EXTRACTORS = ("identity", "tfidf", "textrank", "sumbasic", "cheating", "learned")  # .NAMES
MODEL_INPUTS = "tfidf-combined-500"  # rank.DEFAULT_INPUT.name

# report: wikisum.pipeline.report
REPORT_LENGTHS = (100, 500, 1000, 2000, 4000, 11000)  # report.DEFAULT_LENGTHS
REPORT_BOOTSTRAP = 1000  # report.BOOTSTRAP_SAMPLES

# convert-pairs: wikisum.pipeline.pairs
PAIRS_VOCAB_SIZE = 25000  # pairs.DEFAULT_VOCAB_SIZE
PAIRS_MAX_TEXTS = 300_000  # pairs.DEFAULT_MAX_TEXTS
PAIRS_SHARDS = 1  # pairs.DEFAULT_SHARDS

# exemplars: wikisum.pipeline.exemplars
EXEMPLAR_EXTRACTOR = "tfidf"  # exemplars.DEFAULT_EXTRACTOR
EXEMPLAR_CORPUS = "combined"  # exemplars.DEFAULT_CORPUS
EXEMPLAR_MAX_INPUT_TOKENS = 500  # exemplars.DEFAULT_MAX_INPUT_TOKENS
EXEMPLAR_MAX_CELLS = 16 * 1024 * 1024  # exemplars.DEFAULT_MAX_CELLS
EXEMPLAR_MAX_BLOCK = 1024  # exemplars.MAX_BLOCK
EXEMPLAR_MAX_SIMILARITY = 0.9  # exemplars.DEFAULT_MAX_SIMILARITY

# crawl: the fields of wikisum.pipeline.crawl.CrawlConfig the options default to
CRAWL = {"per_host_concurrency": 2, "delay_s": 1.0, "timeout_s": 20.0,
         "max_bytes": 10 * 1024 * 1024, "retries": 3, "backoff_s": 1.0,
         "user_agent": "wikisum-crawler/0.1 (+research crawl of pages cited by Wikipedia)",
         "warc_part_bytes": 1024 ** 3, "log_shards": 1}
CRAWL_DEADLINE_FACTOR = 3.0  # crawl.DEADLINE_FACTOR

# cc-fetch: the fields of wikisum.pipeline.ccfetch.CcFetchConfig the options default to
CC_FETCH = {"source": "api", "index_url": "https://index.commoncrawl.org",
            "data_url": "https://data.commoncrawl.org",
            "columnar_index": ("s3://commoncrawl/cc-index/table/cc-main/warc/crawl=*/"
                               "subset=warc/*.parquet",),
            "max_redirects": 3, "index_rate": 1.0, "per_host_concurrency": 4,
            "fetch_groups": 1, "timeout_s": 30.0, "retries": 5, "backoff_s": 1.0,
            "user_agent": "wikisum-cc-fetch/0.1 (+research build of WikiSum references)",
            "warc_part_bytes": 1024 ** 3, "log_shards": 1}


def exemplar_workers() -> int:
    """exemplars.default_workers(): the usable CPUs, at most 8."""
    import os

    try:
        return max(1, min(8, len(os.sched_getaffinity(0))))
    except AttributeError:  # not on every platform
        return max(1, min(8, os.cpu_count() or 1))
