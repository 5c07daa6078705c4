"""The two index sources: the URL index server's answers read line by line (hostile lines
counted, never fatal), and the columnar index: row-group ranges from the footer, the lookup
structure over them, and reading only the row groups and rows wanted."""

from __future__ import annotations

import json
import random

from wikisum.pipeline.ccfetch.client import Response
from wikisum.pipeline.ccfetch.index import (
    CdxApi,
    RowGroup,
    RowGroupIndex,
    read_row_group,
    row_groups,
)
from wikisum.pipeline.ccfetch.surt import surt_key
from wikisum.pipeline.sample import ccindex

CRAWL = "CC-MAIN-2017-13"


class AnsweringClient:
    """Answers every index query with the same body."""

    def __init__(self, body: bytes):
        self.body = body

    def get(self, url, headers=None, *, max_bytes, ok):
        return Response(200, {}, self.body, 1)


def test_hostile_index_lines_are_counted_and_the_good_ones_kept():
    url = "http://example.org/page"
    good = {"urlkey": surt_key(url), "timestamp": "20170301000000", "url": url,
            "mime": "text/html", "status": "200", "offset": "0", "length": "100",
            "filename": "crawl-data/x.warc.gz"}
    lines = [
        "[" * 100_000 + "]" * 100_000,  # nested past any parser's stack
        '{"a": ' * 50_000 + "1" + "}" * 50_000,
        json.dumps(good),
        json.dumps(good).replace(url, "http://example.org/\\ud800", 1),  # lone surrogates
        json.dumps({**good, "redirect": "REDIRECT"}).replace("REDIRECT", "\\udfff"),
        json.dumps({**good, "mime": "MIME"}).replace("MIME", "text/\\ud800"),
    ]
    api = CdxApi("http://index.test", [CRAWL], "", AnsweringClient("\n".join(lines).encode()))
    found, bad = api.captures(CRAWL, url, surt_key(url))
    assert [c.url for c in found] == [url] and bad == 5
    result = api.lookup(surt_key(url), url)
    assert (len(result.captures), result.bad_lines, result.error) == (1, 5, "")


def brute(groups, key):
    return sorted((g.path, g.index) for g in groups if g.low <= key <= g.high)


def test_row_group_index_finds_exactly_the_groups_holding_a_key():
    rng = random.Random(3)
    keys = sorted(f"{rng.randrange(10**6):06d}" for _ in range(400))
    groups = []
    for crawl in ("C1", "C2"):  # disjoint sorted groups per crawl, a key split over two
        for i in range(0, 400, 25):
            part = keys[i:i + 26]
            groups.append(RowGroup(f"{crawl}.parquet", i // 25, part[0], part[-1], crawl, 26))
    groups.append(RowGroup("odd.parquet", 0, "000500", "999999", "C3", 1))  # overlaps all
    index = RowGroupIndex(groups)
    for key in keys + ["", "0", "9999999", "5"]:
        assert sorted((g.path, g.index) for g in index.find(key)) == brute(groups, key), key


def test_only_the_row_groups_of_wanted_keys_are_read(sample_corpus):
    root, _ = sample_corpus
    table = root / ccindex.TABLE.format(crawl=ccindex.CRAWL)
    groups = row_groups(str(table))
    assert len(groups) > 10 and all(g.crawl == ccindex.CRAWL for g in groups)
    assert row_groups(str(table), ["CC-MAIN-2017-13"]) == []  # another crawl: not opened
    rows = ccindex.read_cdxj(root / ccindex.CDXJ.format(crawl=ccindex.CRAWL))
    wanted = {rows[5][0], rows[-3][0]}
    hits = [g for key in wanted for g in RowGroupIndex(groups).find(key)]
    assert 1 <= len(hits) <= 4
    found = [c for g in hits for c in read_row_group(g, wanted)]
    assert {c.urlkey for c in found} == wanted
    assert sorted((c.filename, c.offset) for c in found) == sorted(
        (f["filename"], int(f["offset"])) for k, _, f in rows if k in wanted)
