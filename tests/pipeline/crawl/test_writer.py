"""WARC output: parts continue and never overwrite."""

from __future__ import annotations

from pathlib import Path

from crawlsite import (
    config,
)

from wikisum.pipeline.crawl.fetch import Crawler
from wikisum.pipeline.crawl.writer import WarcSink


def test_warc_parts_continue_and_never_overwrite(site, tmp_path):
    cfg = config()
    sink = WarcSink(str(tmp_path), "run1", "127.0.0.1", part_bytes=1)
    existing = tmp_path / f"{sink.prefix}-00000.warc.gz"
    existing.write_bytes(b"an earlier file")
    outcomes = Crawler(cfg, sink).crawl([site.url("/page/a"), site.url("/page/b")])
    sink.close()
    assert existing.read_bytes() == b"an earlier file"
    assert [Path(p).name for p in sink.files] == [f"{sink.prefix}-00001.warc.gz",
                                                 f"{sink.prefix}-00002.warc.gz"]
    assert sorted(Path(o.warc_file).name for o in outcomes) == [Path(p).name
                                                               for p in sink.files]
