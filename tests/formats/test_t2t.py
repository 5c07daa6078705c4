"""tensor2tensor's WikiSum support files (wikisum.formats.t2t), written by the generators in
t2t_files.py (each following the tensor2tensor code that reads the file) and read back: the
articles of wiki_content, the refs of wiki_urls, and the plan of WET files from the
commoncrawl_metadata."""

from __future__ import annotations

import io
import json
import os

import pytest
import t2t_files
from t2t_files import Trickle

from wikisum.formats import t2t
from wikisum.formats.t2t import ContentArticle, PlanRow, Problem, WikiRefs
from wikisum.formats.tfexample import encode_example, parse_example
from wikisum.formats.tfrecord import encode_record

ARTICLES = [
    {"url": "https://en.wikipedia.org/wiki/Ada_Lovelace", "title": "Ada Lovelace",
     "sections": [("Ada Lovelace", "Ada was a mathematician."), ("Early life", "Born 1815."),
                  ("Legacy", "Ada (language).")]},
    {"url": "https://en.wikipedia.org/wiki/Caf%C3%A9", "title": "Caf\u00e9",
     "sections": [("", "A caf\u00e9 serves coffee.")]},
    {"url": "https://en.wikipedia.org/wiki/Empty", "title": "Empty", "sections": []},
]


def _expected(article: dict) -> dict:
    sections = article["sections"]
    return {"url": article["url"], "title": article["title"],
            "lead": sections[0][1] if sections else "",
            "sections": [{"title": t, "level": 2, "text": x} for t, x in sections[1:]]}


def _items(path, **kwargs) -> list:
    with open(path, "rb") as f:
        return list(t2t.iter_wiki_content(f, str(path), **kwargs))


# -- shards and splits ----------------------------------------------------------------------


def test_shard_id_of_reads_the_numbered_suffix():
    assert t2t.shard_id_of("gs://b/wiki_content.tfrecords-00042-of-01000") == 42
    assert t2t.shard_id_of(t2t.WIKI_URLS_FILE % 999) == 999
    with pytest.raises(ValueError, match="-NNNNN-of-NNNNN"):
        t2t.shard_id_of("wiki_urls.json")


def test_split_of_shard_is_what_produce_examples_does_with_1000_tasks():
    # WikisumBase.out_filepaths (wikisum.py): 800 train, 100 dev, 100 test names, sorted;
    # produce_examples.py: task k gets utils.shard(out_filepaths, 1000)[k] and
    # utils.shard(range(1000), 1000)[k], i.e. output file k and input shard k.
    names = sorted([f"wikisum_commoncrawl-train-{i:05d}-of-00800" for i in range(800)]
                   + [f"wikisum_commoncrawl-dev-{i:05d}-of-00100" for i in range(100)]
                   + [f"wikisum_commoncrawl-test-{i:05d}-of-00100" for i in range(100)])
    for shard in range(t2t.NUM_SHARDS):
        assert t2t.split_of_shard(shard) == names[shard].split("-")[1]
    splits = [t2t.split_of_shard(s) for s in range(1000)]
    assert (splits.count("train"), splits.count("dev"), splits.count("test")) == (800, 100, 100)
    with pytest.raises(ValueError):
        t2t.split_of_shard(1000)


# -- wiki_content ---------------------------------------------------------------------------


def test_wiki_content_shard_reads_back_every_article_with_its_offset(tmp_path):
    path = t2t_files.write_wiki_content(tmp_path / (t2t.WIKI_CONTENT_FILE % 7), ARTICLES)
    items = _items(path)
    assert [i.article for i in items] == [_expected(a) for a in ARTICLES]
    assert all(isinstance(i, ContentArticle) and i.source == str(path) for i in items)
    data = path.read_bytes()
    for item, article in zip(items, ARTICLES, strict=True):
        record = encode_record(t2t_files.wiki_content_example(
            article["url"], article["title"], article["sections"]))
        assert data[item.offset:item.offset + len(record)] == record


def test_wiki_content_shard_may_be_gzip_compressed(tmp_path):
    path = t2t_files.write_wiki_content(tmp_path / "c.gz", ARTICLES, compress=True)
    assert [i.article for i in _items(path)] == [_expected(a) for a in ARTICLES]


def test_a_damaged_shard_reports_each_bad_record_and_reads_the_rest(tmp_path):
    good = [encode_record(t2t_files.wiki_content_example(a["url"], a["title"], a["sections"]))
            for a in ARTICLES]
    flipped = bytearray(good[1])
    flipped[20] ^= 0x10
    not_an_example = encode_record(b"\x0f\x00")
    no_title = encode_record(encode_example({"url": [b"u"], "section_titles": [],
                                             "section_texts": []}))
    bad_utf8 = encode_record(encode_example({"url": [b"u"], "title": [b"\xff"],
                                             "section_titles": [], "section_texts": []}))
    records = [good[0], bytes(flipped), not_an_example, no_title, bad_utf8, good[2]]
    path = tmp_path / "w"
    path.write_bytes(b"".join(records))
    items = _items(path)
    offsets = [sum(len(r) for r in records[:i]) for i in range(len(records))]
    assert [(i.offset, getattr(i, "reason", "article")) for i in items] == list(zip(
        offsets, ["article", "data_checksum", "bad_example", "bad_article", "bad_encoding",
                  "article"], strict=True))
    assert "'title'" in items[3].detail and "'title'" in items[4].detail
    assert [i.article for i in items if isinstance(i, ContentArticle)] == [
        _expected(ARTICLES[0]), _expected(ARTICLES[2])]


def _features(**overrides):
    features = {"url": [b"u"], "title": [b"T"], "section_titles": [b"", b"H"],
                "section_texts": [b"lead", b"body"]}
    features.update(overrides)
    return {k: v for k, v in features.items() if v is not None}


@pytest.mark.parametrize("overrides, message", [
    ({"title": None}, "missing feature 'title'"),
    ({"section_texts": None}, "missing feature 'section_texts'"),
    ({"title": [3]}, "'title' holds numbers"),
    ({"url": [b"a", b"b"]}, "'url' has 2 values"),
    ({"url": []}, "'url' has 0 values"),
    ({"section_titles": [b""]}, "1 section titles but 2 section texts"),
])
def test_wiki_content_article_errors_name_the_problem(overrides, message):
    with pytest.raises(ValueError, match=message):
        t2t.wiki_content_article(_features(**overrides))


def test_wiki_content_text_is_decoded_strictly_as_tensor2tensor_does():
    with pytest.raises(UnicodeDecodeError, match="'section_texts', value 1"):
        t2t.wiki_content_article(_features(section_texts=[b"ok", b"caf\xe9"]))


def test_wiki_content_article_drops_the_leads_title():
    features = parse_example(t2t_files.wiki_content_example(
        "u", "T", [("Ignored", "lead text"), ("H", "body")]))
    assert t2t.wiki_content_article(features) == {
        "url": "u", "title": "T", "lead": "lead text",
        "sections": [{"title": "H", "level": 2, "text": "body"}]}


# -- wiki_urls ------------------------------------------------------------------------------

REFS = {
    "https://en.wikipedia.org/wiki/A": ["http://a.example/1", "https://b.example/x?y=1"],
    "https://en.wikipedia.org/wiki/Caf\u00e9": ["http://caf\u00e9.example/", 'http://q/"}\\'],
    "https://en.wikipedia.org/wiki/None": [],
}


def _urls(raw: bytes, **kwargs) -> list:
    return list(t2t.iter_wiki_urls(io.BytesIO(raw), "wiki_urls.json-00000-of-01000", **kwargs))


def test_wiki_urls_shard_reads_as_json_loads_reads_it(tmp_path):
    path = t2t_files.write_wiki_urls(tmp_path / (t2t.WIKI_URLS_FILE % 0), REFS)
    items = _urls(path.read_bytes())
    assert items == [WikiRefs(u, r) for u, r in REFS.items()]
    assert {u: {"refs": r} for u, r in items} == json.loads(path.read_text())


def test_entries_are_read_across_any_read_boundary():
    raw = json.dumps({u: {"refs": r, "n": 12345} for u, r in REFS.items()},
                     ensure_ascii=False, indent=1).encode("utf-8")
    for step in (1, 2, 3, 7, 64):
        items = list(t2t.iter_wiki_urls(Trickle(raw, step), "s"))
        assert items == [WikiRefs(u, r) for u, r in REFS.items()], step


def test_problem_offsets_are_byte_offsets_of_the_entry():
    raw = json.dumps({"https://en.wikipedia.org/wiki/\u00c9": {"refs": [1]}, "b": {"x": []}},
                     ensure_ascii=False).encode("utf-8")
    problems = [i for i in _urls(raw) if isinstance(i, Problem)]
    assert [p.reason for p in problems] == ["ref_not_a_string", "no_refs"]
    assert raw[problems[0].offset:].startswith('"https://en.wikipedia.org/wiki/\u00c9"'.encode())
    assert raw[problems[1].offset:].startswith(b'"b"')


def test_bad_entries_are_counted_problems_and_their_neighbours_read():
    raw = (b'{"w1": {"refs": ["u1", 2, null, "u2"]}, "w2": {"title": "x"}, "w3": [],'
           b' "w4": {"refs": "u"}, "w5": {"refs": [tru]}, "w1": {"refs": ["again"]},'
           b' "w6": {"refs": ["u6"], "other": 1}}')
    items = _urls(raw)
    assert [i for i in items if isinstance(i, WikiRefs)] == [
        WikiRefs("w1", ["u1", "u2"]), WikiRefs("w6", ["u6"])]
    problems = [(p.reason, p.key, p.count) for p in items if isinstance(p, Problem)]
    assert problems == [("ref_not_a_string", "w1", 2), ("no_refs", "w2", 1),
                        ("no_refs", "w3", 1), ("refs_not_a_list", "w4", 1),
                        ("bad_json", "w5", 1), ("duplicate_wiki_url", "w1", 1)]


def test_an_entry_over_the_limit_is_skipped_without_being_held():
    big = ["http://x/" + "a" * 100] * 20_000  # about 2.2 MB
    raw = json.dumps({"w1": {"refs": ["u1"]}, "big": {"refs": big},
                      "w2": {"refs": ["u2"]}}).encode()
    stream = Trickle(raw, step=1 << 16)
    items = list(t2t.iter_wiki_urls(stream, "s", max_bytes=100_000))
    assert items[0] == WikiRefs("w1", ["u1"]) and items[2] == WikiRefs("w2", ["u2"])
    assert (items[1].reason, items[1].key) == ("too_large", "big")
    assert stream.largest < 300_000


W1 = WikiRefs("w1", ["u1"])


@pytest.mark.parametrize("raw, before, reason", [
    (b'["not", "an", "object"]', [], "not_an_object"),
    (b'{"w1": {"refs": ["u1"]}, "w2": {"refs": ["u', [W1], "bad_json"),
    (b'{"w1": {"refs": ["u1"]}, "w2": {"refs": []}', [W1, WikiRefs("w2", [])], "bad_json"),
    (b'{"w1": {"refs": ["u1"]}} trailing', [W1], "bad_json"),
    (b'{"w1": {"refs": ["u1"]}, "w2": {"refs": ["\xff"]}}', [W1], "bad_encoding"),
])
def test_a_broken_shard_ends_with_one_problem_after_what_could_be_read(raw, before, reason):
    items = _urls(raw)
    assert items[:-1] == before
    assert isinstance(items[-1], Problem) and items[-1].reason == reason


def test_a_missing_comma_costs_the_entries_it_joins_and_the_rest_is_read():
    items = _urls(b'{"w0": {"refs": []}, "w1": {"refs": ["u1"]} "w2": {}, "w3": {"refs": []}}')
    assert items[0] == WikiRefs("w0", []) and items[2] == WikiRefs("w3", [])
    assert (items[1].reason, items[1].key) == ("bad_json", "w1")


def test_bad_encoding_reports_the_byte_offset():
    raw = b'{"w1": {"refs": ["u1"]}, "w2": {"refs": ["\xff"]}}'
    problem = _urls(raw)[-1]
    assert problem.offset == raw.index(b"\xff")


def test_an_empty_object_has_no_entries():
    assert _urls(b" { } ") == []


# -- commoncrawl_metadata -------------------------------------------------------------------


def test_metadata_name_maps_to_the_wet_file_as_extract_references_from_wets_builds_it():
    wet_path = t2t_files.WET_SEGMENT + t2t_files.wet_name(3)
    # wikisum.py, extract_references_from_wets:
    metadata_fname = os.path.join("gs://m", os.path.basename(wet_path)) + ".metadata.json"
    assert t2t.wet_name_of(metadata_fname) == t2t_files.wet_name(3)
    listing = t2t.wet_paths_by_name(t2t_files.wet_paths_listing([t2t_files.wet_name(3)]))
    assert t2t.wet_path_of(metadata_fname, listing) == wet_path
    with pytest.raises(KeyError, match="not in the WET paths listing"):
        t2t.wet_path_of(t2t_files.metadata_name(t2t_files.wet_name(4)), listing)
    with pytest.raises(ValueError, match="metadata.json"):
        t2t.wet_name_of("CC-MAIN-x.warc.wet.gz")


def test_wet_paths_listing_reads_bytes_lines_and_refuses_clashing_names():
    lines = [(t2t_files.WET_SEGMENT + "a.warc.wet.gz\n").encode(), b"\n"]
    assert t2t.wet_paths_by_name(lines) == {"a.warc.wet.gz": t2t_files.WET_SEGMENT
                                            + "a.warc.wet.gz"}
    with pytest.raises(ValueError, match="two WET paths"):
        t2t.wet_paths_by_name(["s1/wet/a.warc.wet.gz", "s2/wet/a.warc.wet.gz"])


@pytest.fixture
def metadata(tmp_path):
    t2t_files.write_metadata(tmp_path, t2t_files.wet_name(0), {"http://a/": [0, 5],
                                                               "http://b/": [7]})
    t2t_files.write_metadata(tmp_path, t2t_files.wet_name(1), {"http://c/": [5],
                                                               "http://d/": [9],
                                                               "http://e/": []})
    t2t_files.write_metadata(tmp_path, t2t_files.wet_name(2), {})
    t2t_files.write_metadata(tmp_path, t2t_files.wet_name(3), {"http://a/": [1]})
    return sorted(str(p) for p in tmp_path.iterdir())


def test_plan_lists_exactly_the_wet_files_holding_the_wanted_urls(metadata):
    listing = t2t.wet_paths_by_name(t2t_files.wet_paths_listing(
        [t2t_files.wet_name(i) for i in range(4)]))
    result = t2t.plan(metadata, {"http://a/", "http://c/", "http://zzz/"}, wet_paths=listing)
    assert result.rows == (
        PlanRow(t2t_files.wet_name(0), t2t_files.WET_SEGMENT + t2t_files.wet_name(0),
                metadata[0], 1, 2),
        PlanRow(t2t_files.wet_name(1), t2t_files.WET_SEGMENT + t2t_files.wet_name(1),
                metadata[1], 1, 2),
        PlanRow(t2t_files.wet_name(3), t2t_files.WET_SEGMENT + t2t_files.wet_name(3),
                metadata[3], 1, 1),
    )
    assert result.not_found == ("http://zzz/",)
    assert result.problems == ()


def test_plan_by_shard_ids(metadata):
    result = t2t.plan(metadata, None, {5})
    assert [(r.wet_name, r.wanted, r.wet_path) for r in result.rows] == [
        (t2t_files.wet_name(0), 1, ""), (t2t_files.wet_name(1), 1, "")]
    result = t2t.plan(metadata, {"http://a/", "http://d/"}, {1})
    assert [r.wet_name for r in result.rows] == [t2t_files.wet_name(3)]
    assert result.not_found == ("http://d/",)


def test_plan_matches_exactly_unless_given_a_key(metadata):
    assert t2t.plan(metadata, {"HTTP://A/"}).not_found == ("HTTP://A/",)
    keyed = t2t.plan(metadata, {"HTTP://A/"}, key=str.lower)
    assert [r.wet_name for r in keyed.rows] == [t2t_files.wet_name(0), t2t_files.wet_name(3)]
    assert keyed.not_found == ()


def test_plan_reports_unreadable_metadata_and_keeps_going():
    def stream(obj):
        return io.BytesIO(obj if isinstance(obj, bytes) else json.dumps(obj).encode())

    name = t2t_files.metadata_name
    result = t2t.plan([
        (name(t2t_files.wet_name(0)), stream({"http://a/": [1], "http://b/": ["x"],
                                              "http://c/": [1000]})),
        (name(t2t_files.wet_name(1)), stream(b"{not json")),
        (name(t2t_files.wet_name(2)), stream([1, 2])),
        ("no-suffix.json", stream({})),
        (name(t2t_files.wet_name(3)), stream({"http://d/": [2]})),
    ], wet_paths={})
    assert [(r.wet_name, r.wanted, r.total) for r in result.rows] == [
        (t2t_files.wet_name(0), 1, 1), (t2t_files.wet_name(3), 1, 1)]
    assert [(p.reason, p.key) for p in result.problems] == [
        ("bad_shard_ids", "http://b/"), ("bad_shard_ids", "http://c/"),
        ("not_in_listing", ""), ("bad_json", ""), ("not_in_listing", ""),
        ("not_an_object", ""), ("not_in_listing", ""), ("bad_name", ""),
        ("not_in_listing", "")]


def test_an_oversized_metadata_file_is_a_problem_not_a_read():
    result = t2t.plan([(t2t_files.metadata_name("x.warc.wet.gz"), io.BytesIO(b"{}" * 100))],
                      max_bytes=50)
    assert [p.reason for p in result.problems] == ["too_large"]
