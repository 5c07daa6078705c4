"""``wikisum cc-fetch``: look cited and search-result URLs up in Common Crawl's URL index and
fetch the chosen captures' WARC records by byte range. One module per concern:

    surt.py      the index's key of a URL (SURT, as Common Crawl computes it)
    captures.py  IndexCapture (from the CDX API or the columnar table), choose(): which one
    records.py   CcFetchConfig, Outcome (outcome names and reasons), is_done (resume)
    client.py    HTTP: keep-alive, retries with backoff and jitter, a request-rate limit
    index.py     the two index sources: CdxApi, and the columnar table's row groups
    fetch.py     ranged fetch, the record checks, WARC output (the original bytes)
    job.py       the Beam job that wires them together:

    --urls files --ReadUrlLines--> (URL, line) ----------------------------------+
    earlier logs in --out --ReadDone--> (URL, settled) -------------------------+
        --GroupByUrl--> Plan --> skipped / failed(invalid_url) outcomes
                             --> (key, Pending) --Resolve: per round, Lookup (CdxApi, or the
                                 row-group join of the columnar index) + Choose-->
                                 not_in_index / failed(lookup) outcomes, redirects to the next
                                 round, Resolved pages
        Resolved --ByFetchGroup--> FetchGroup (ranged GETs, checks, WARC parts) --> outcomes
        outcomes --> log/cc_fetch_log-RUN-SSSSS-of-NNNNN.parquet, summary-RUN.json, summary.json

Every distinct URL read ends as exactly one outcome (``fetched``, ``found``, ``not_in_index``,
``failed`` or ``skipped``, with a reason), checked in the summary (``balanced``). The summary
counts the failures by cause (``wikisum.pipeline.crawl.causes``) and says when every look-up,
or every fetch, made failed for a network reason (``network_failure``).
"""

from wikisum.core.lazy import lazy_names
from wikisum.pipeline.ccfetch.records import OUTCOMES, CcFetchConfig, Outcome
from wikisum.pipeline.crawl.records import new_run_id

# Imported on first use: the job imports Beam, captures.py the ingest's references module, and
# the command line reads CcFetchConfig's defaults (records.py) for `--help` without them.
_LAZY = {"IndexCapture": "wikisum.pipeline.ccfetch.captures",
         "choose": "wikisum.pipeline.ccfetch.captures",
         "parse_before": "wikisum.pipeline.ccfetch.captures",
         "run": "wikisum.pipeline.ccfetch.job"}


__getattr__, __dir__ = lazy_names(__name__, _LAZY)


__all__ = ["OUTCOMES", "CcFetchConfig", "IndexCapture", "Outcome", "choose", "new_run_id",
           "parse_before", "run"]
