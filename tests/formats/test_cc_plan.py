"""`wikisum cc-plan` on generated commoncrawl_metadata (t2t_files.py cites tensor2tensor's
reading code), and `wikisum cc-fetch` reading tensor2tensor's wiki_urls shards as its URL list."""

from __future__ import annotations

import gzip
import json

from t2t_files import (
    URLS_FILE,
    WET_SEGMENT,
    wet_name,
    wet_paths_listing,
    write_metadata,
    write_wiki_urls,
)

from wikisum.workflows import cli


def metadata(tmp_path):
    folder = tmp_path / "commoncrawl_metadata"
    folder.mkdir()
    write_metadata(folder, wet_name(0), {"http://a.example/1": [3], "http://b.example/": [250]})
    write_metadata(folder, wet_name(1), {"http://c.example/": [3, 7], "http://d.example/": []})
    write_metadata(folder, wet_name(2), {"http://e.example/": [900]})
    listing = tmp_path / "wet.paths.gz"
    listing.write_bytes(gzip.compress("".join(wet_paths_listing(
        [wet_name(i) for i in range(4)])).encode()))
    return folder, listing


def test_cc_plan_lists_exactly_the_wet_files_holding_the_wanted_urls(tmp_path, capsys):
    folder, listing = metadata(tmp_path)
    urls = tmp_path / "wiki_urls"
    urls.mkdir()
    write_wiki_urls(urls / (URLS_FILE % 3), {
        "https://en.wikipedia.org/wiki/A": ["http://a.example/1", "http://nowhere.example/"],
        "https://en.wikipedia.org/wiki/C": ["http://c.example/"]})
    out = tmp_path / "plan"
    assert cli.main(["cc-plan", "--t2t-metadata", str(folder / "*.metadata.json"),
                     "--urls", str(urls / "*"), "--wet-paths", str(listing),
                     "--out", str(out)]) == 0
    assert (out / "wet_paths.txt").read_text().splitlines() == [
        WET_SEGMENT + wet_name(0), WET_SEGMENT + wet_name(1)]
    assert (out / "not_found.txt").read_text() == "http://nowhere.example/\n"
    rows = [line.split("\t") for line in (out / "plan.tsv").read_text().splitlines()[1:]]
    assert [(r[1], r[2]) for r in rows] == [("1", "2"), ("1", "1")]
    summary = json.loads((out / "plan.json").read_text())
    assert (summary["wet_files"], summary["found_urls"], summary["not_found_urls"]) == (2, 2, 1)
    assert summary["bytes_measured"] == 0 and summary["bytes"] == 2 * 150_000_000
    assert "2 WET files of 3" in capsys.readouterr().out


def test_cc_plan_by_shard_ids_measures_sizes_under_a_mirror(tmp_path):
    folder, listing = metadata(tmp_path)
    mirror = tmp_path / "mirror"
    (mirror / WET_SEGMENT).mkdir(parents=True)
    (mirror / WET_SEGMENT / wet_name(2)).write_bytes(b"x" * 1234)
    out = tmp_path / "plan"
    assert cli.main(["-q", "cc-plan", "--t2t-metadata", str(folder / "*"), "--shards",
                     "200-999", "--wet-paths", str(listing), "--wet-root", str(mirror),
                     "--out", str(out)]) == 0
    rows = [line.split("\t") for line in (out / "plan.tsv").read_text().splitlines()[1:]]
    assert [(r[0].rsplit("/", 1)[1], r[3]) for r in rows] == [
        (wet_name(0), "150000000"), (wet_name(2), "1234")]


def test_cc_fetch_reads_a_wiki_urls_shard_as_its_url_list(tmp_path):
    from wikisum.pipeline import beamio

    shard = tmp_path / (URLS_FILE % 5)
    write_wiki_urls(shard, {"https://en.wikipedia.org/wiki/A": ["http://a.example/1",
                                                                 "http://a.example/2"],
                            "https://en.wikipedia.org/wiki/B": ["http://a.example/1", 7]})
    assert beamio.is_t2t_url_list(str(shard))
    assert list(beamio.list_urls(str(shard))) == [
        "http://a.example/1", "http://a.example/2", "http://a.example/1"]
    assert beamio.count_distinct_lines([str(shard)], key=lambda u: u) == 2


def test_cc_fetch_job_reads_every_listed_url_of_a_wiki_urls_shard(tmp_path):
    from wikisum.pipeline.ccfetch.job import ReadUrlLines

    shard = tmp_path / (URLS_FILE % 5)
    shard.write_text(json.dumps({"https://en.wikipedia.org/wiki/A": {"refs": [
        "http://a.example/1", "HTTP://A.example/2"]}, "https://en.wikipedia.org/wiki/B": 3}))
    reader = ReadUrlLines()
    reader.start_bundle()
    got = list(reader.process(str(shard)))
    assert got == [("http://a.example/1", "http://a.example/1"),
                   ("http://a.example/2", "HTTP://A.example/2")]
    assert reader._tallies[("lines", "_in")] == 3
    assert reader._tallies[("lines", "bad_entry")] == 1
