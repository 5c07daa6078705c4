"""Which capture of a URL to fetch (``choose``), and index lines read into captures."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from wikisum.pipeline.ccfetch.captures import (
    BadIndexLine,
    IndexCapture,
    choose,
    from_cdx,
    from_columnar,
    parse_before,
)
from wikisum.pipeline.ccfetch.surt import surt_key

KEY = "org,example)/page"


def cap(timestamp="20170301000000", status=200, mime="text/html", crawl="CC-MAIN-2017-13",
        redirect="", offset=0, url="https://example.org/page", detected=""):
    return IndexCapture(KEY, url, timestamp, status, mime, detected, redirect,
                        f"crawl-data/{crawl}/a.warc.gz", offset, 100, crawl)


def test_latest_capture_without_before():
    old, new = cap("20170301000000"), cap("20170320000000", offset=5)
    assert choose([new, old], ["CC-MAIN-2017-13"]).capture == new


def test_before_takes_the_closest_capture_not_after_it():
    caps = [cap("20170301000000"), cap("20170315000000", offset=1),
            cap("20170320000000", offset=2)]
    assert choose(caps, [], parse_before("2017-03-16")).capture == caps[1]
    assert choose(caps, [], parse_before("2017-03-15")).capture == caps[1]  # end of that day
    assert choose(caps, [], parse_before("2017-03-14T23:59:59Z")).capture == caps[0]
    none = choose(caps, [], parse_before("2017-02-01"))
    assert (none.capture, none.reason) == (None, "after_before")


def test_crawls_are_searched_in_the_order_given():
    early, late = cap(crawl="CC-MAIN-2017-13"), cap("20180101000000", crawl="CC-MAIN-2018-05")
    assert choose([early, late], ["CC-MAIN-2017-13", "CC-MAIN-2018-05"]).capture == early
    assert choose([early, late], ["CC-MAIN-2018-05", "CC-MAIN-2017-13"]).capture == late
    # A crawl not asked for is never chosen; with no crawl given every crawl counts, as one.
    assert choose([late], ["CC-MAIN-2017-13"]).reason == "no_capture"
    assert choose([early, late], []).capture == late
    # The first crawl has nothing usable: the next one is searched.
    bad = cap(status=404, crawl="CC-MAIN-2017-13")
    assert choose([bad, late], ["CC-MAIN-2017-13", "CC-MAIN-2018-05"]).capture == late


def test_a_page_is_preferred_to_a_redirect_and_non_pages_are_not_taken():
    page = cap("20170301000000")
    moved = cap("20170302000000", status=301, redirect="https://example.org/new", offset=1)
    assert choose([page, moved], []).capture == page
    chosen = choose([moved], [])
    assert chosen.capture == moved and chosen.is_redirect
    assert choose([cap(mime="application/pdf")], []).reason == "mime"
    # The detected type wins over what the server said.
    assert choose([cap(mime="application/octet-stream", detected="text/html")], []).capture
    assert choose([cap(status=404), cap(status=500, offset=1)], []).reason == "status"
    assert choose([cap(status=301)], []).reason == "status"  # a redirect without a target
    # http -> https of the same key is a loop, not a usable redirect.
    loop = cap(status=301, url="http://example.org/page", redirect="https://example.org/page")
    assert choose([loop], [], surt=surt_key).reason == "redirect_loop"
    assert choose([], []).reason == "no_capture"


def test_cdx_lines_and_columnar_rows_become_the_same_capture():
    line = {"urlkey": KEY, "timestamp": "20170322120000", "url": "https://example.org/page",
            "mime": "text/html; charset=utf-8", "mime-detected": "text/html", "status": "200",
            "digest": "X", "length": "1234", "offset": "5678",
            "filename": "crawl-data/CC-MAIN-2017-13/segments/1/warc/a.warc.gz"}
    row = {"url_surtkey": KEY, "url": "https://example.org/page",
           "fetch_time": datetime(2017, 3, 22, 12, tzinfo=timezone.utc), "fetch_status": 200,
           "fetch_redirect": None, "content_mime_type": "text/html",
           "content_mime_detected": "text/html", "warc_filename": line["filename"],
           "warc_record_offset": 5678, "warc_record_length": 1234, "crawl": "CC-MAIN-2017-13"}
    assert from_cdx(line, "CC-MAIN-2017-13") == from_columnar(row, "")


@pytest.mark.parametrize("field, value", [
    ("filename", "../../etc/passwd"), ("filename", "/abs/a.warc.gz"),
    ("filename", "https://evil.example/a.warc.gz"), ("offset", "-1"), ("length", "0"),
    ("length", "many"), ("timestamp", "2017"),
])
def test_unsafe_or_broken_index_lines_are_refused(field, value):
    line = {"urlkey": KEY, "timestamp": "20170322120000", "url": "https://example.org/",
            "status": "200", "length": "10", "offset": "0", "filename": "a/b.warc.gz",
            field: value}
    with pytest.raises(BadIndexLine):
        from_cdx(line, "CC-MAIN-2017-13")
    with pytest.raises(BadIndexLine):
        from_cdx({k: v for k, v in line.items() if k != "filename"}, "C")


@pytest.mark.parametrize("text", ["2017-13-01", "yesterday", "2017-03", ""])
def test_bad_dates_are_refused(text):
    with pytest.raises(ValueError, match="not a date"):
        parse_before(text)
