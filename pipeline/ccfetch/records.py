"""The job's configuration and its log record: :class:`CcFetchConfig` and one :class:`Outcome`
per URL (outcome names and their reasons)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

# Common Crawl's public endpoints (https://index.commoncrawl.org/, https://data.commoncrawl.org/).
INDEX_URL = "https://index.commoncrawl.org"
DATA_URL = "https://data.commoncrawl.org"
COLUMNAR_INDEX = ("s3://commoncrawl/cc-index/table/cc-main/warc/crawl=*/subset=warc/"
                  "*.parquet")
DEFAULT_USER_AGENT = "wikisum-cc-fetch/0.1 (+research build of WikiSum references)"

# Outcomes, each with its reasons.
FETCHED = "fetched"  # ok: the record (and any redirect records before it) is in a WARC file
NOT_IN_INDEX = "not_in_index"  # no_capture | status | mime | after_before | redirect_loop
#                                | redirect_target (a redirect's target has no usable capture)
#                                | too_many_redirects
FOUND = "found"  # in the index, not fetched: lookup_only | byte_budget
FAILED = "failed"  # invalid_url | lookup (the index did not answer) | bad_index_line
#                    | fetch: timeout | connection | address | http_status | too_large
#                    | no_range | range_mismatch | short_read | not_gzip | extra_data
#                    | not_warc | wrong_url | wrong_type | error
SKIPPED = "skipped"  # already_done: settled by an earlier run in --out
OUTCOMES = (FETCHED, FOUND, NOT_IN_INDEX, FAILED, SKIPPED)
LOOKUP_FAILURES = ("invalid_url", "lookup")  # failed before any capture was chosen


@dataclass(frozen=True)
class CcFetchConfig:
    """The job's own options (Beam's pipeline options are separate)."""

    urls: tuple[str, ...]
    out: str
    crawls: tuple[str, ...] = ()  # searched in this order; () with the columnar index: all
    source: str = "api"  # api | columnar
    index_url: str = INDEX_URL
    data_url: str = DATA_URL
    columnar_index: tuple[str, ...] = (COLUMNAR_INDEX,)
    before: str = ""  # 14 digits, or "" for the latest capture
    run_id: str = ""
    lookup_only: bool = False
    max_redirects: int = 3  # redirect captures followed per URL
    index_rate: float = 1.0  # API requests per second, per worker
    per_host_concurrency: int = 4  # ranged requests in flight per data host and group
    fetch_groups: int = 1  # a host's fetches are split into this many groups (workers)
    max_total_bytes: int = 0  # record bytes fetched in all (split over the groups); 0: no cap
    timeout_s: float = 30.0
    retries: int = 5
    backoff_s: float = 1.0  # before retry k: backoff_s * 2**(k-1), times a jitter in [0.5, 1.5)
    user_agent: str = DEFAULT_USER_AGENT
    warc_part_bytes: int = 1024 * 1024 * 1024
    log_shards: int = 1
    progress_s: float = 30.0  # seconds between progress lines

    def search_key(self) -> str:
        """What a not_in_index outcome depends on: rerun with other crawls or another
        --before, and it is looked up again."""
        return ",".join(self.crawls) + "|" + self.before


@dataclass(frozen=True)
class Outcome:
    """What became of one URL: a row of the cc-fetch log (schema ``CC_FETCH_LOG``)."""

    url: str  # as listed (the cited spelling, stripped)
    outcome: str
    reason: str
    urlkey: str = ""  # the SURT key it was looked up by
    crawl: str = ""  # crawl of the chosen capture
    capture_url: str = ""  # the URL the chosen (last) capture has
    capture_time: str = ""  # its 14-digit timestamp
    status: int = 0  # its HTTP status as the index lists it
    redirects: tuple[str, ...] = ()  # redirect targets followed, in order
    filename: str = ""  # its WARC file in the crawl
    offset: int = -1
    length: int = 0
    warc_file: str = ""  # where the record was written here
    warc_offset: int = -1
    bytes: int = 0  # record bytes fetched for this URL (redirect records included)
    attempts: int = 0  # requests made for the last record
    searched: str = ""  # CcFetchConfig.search_key() of the run
    fetched_at: str = ""
    error: str = ""

    def row(self) -> dict:
        row = asdict(self)
        row["redirects"] = list(self.redirects)
        return row


def is_done(row: dict, search_key: str) -> bool:
    """Does an earlier run's log row settle its URL? Fetched URLs do; not_in_index ones do when
    the earlier run searched the same crawls with the same --before; found and failed ones are
    tried again."""
    if row["outcome"] == FETCHED:
        return True
    return row["outcome"] == NOT_IN_INDEX and row["searched"] == search_key
