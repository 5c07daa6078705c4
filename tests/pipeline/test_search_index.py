"""The local search index's parts: the analysis, the sites left out, titles and queries, the
shards on disk and the checks that refuse an unfinished, damaged or foreign index."""

from __future__ import annotations

import io
import json
import re

import pytest

from wikisum.pipeline.search import index as idx
from wikisum.pipeline.search import sites, titles
from wikisum.pipeline.search.analysis import MAX_TERM_CHARS, Analyzer
from wikisum.pipeline.search.results import result_line, summary_path

# -- analysis ---------------------------------------------------------------------------------


def test_pages_keep_their_function_words_and_queries_drop_them():
    analyzer = Analyzer("en")
    text = "The Running of the Bulls in 2008"
    assert analyzer.terms(text) == ["the", "run", "of", "the", "bull", "in", "2008"]
    assert analyzer.query_terms(text) == ["run", "bull", "2008"]


def test_a_query_of_function_words_alone_keeps_them():
    assert Analyzer("en").query_terms("The Who") == ["the", "who"]


def test_a_single_letter_is_no_term_but_a_digit_or_a_chinese_word_is():
    assert Analyzer("en").terms("Heart's e.V. Apollo 1") == ["heart", "apollo", "1"]
    assert Analyzer("zh").terms("水") == ["水"]


def test_a_script_without_spaces_is_split_into_words():
    assert Analyzer("ja").terms("東京都の人口") == ["東京", "都", "の", "人口"]


def test_a_language_without_a_stemmer_keeps_its_words():
    assert Analyzer("xx").query_terms("Foo bars") == ["foo", "bars"]


def test_a_run_of_letters_longer_than_a_word_is_no_term():
    assert Analyzer("en").terms("b" * (MAX_TERM_CHARS + 1) + " harbour") == ["harbour"]


def test_pages_and_queries_get_the_same_terms():
    analyzer = Analyzer("de")
    assert analyzer.terms("Häuser am Fluss") == analyzer.terms("HÄUSER   am fluss")


# -- sites ------------------------------------------------------------------------------------


@pytest.mark.parametrize("url,reason", [
    ("https://en.wikipedia.org/wiki/Paris", "wikipedia"),
    ("http://ja.m.wikipedia.org/wiki/x", "wikipedia"),
    ("https://upload.wikimedia.org/a.png", "wikipedia"),
    ("https://www.wikiwand.com/en/Paris", "mirror"),
    ("https://dbpedia.org/page/Paris", "mirror"),
    ("https://example.org/wikipedia.org/", None),
    ("https://notwikipedia.org/", None),
    ("not a url", None),
])
def test_wikipedia_and_its_mirrors_are_recognised_by_host(url, reason):
    assert sites.excluded(url) == reason


def test_a_site_list_file_replaces_the_mirrors(tmp_path):
    listed = tmp_path / "sites.txt"
    listed.write_text("# mirrors\nhttps://www.copies.example/\nother.example  # inline\n\n")
    mirrors = sites.site_list(str(listed))
    assert mirrors == ("copies.example", "other.example")
    assert sites.excluded("http://a.copies.example/x", mirrors) == "mirror"
    assert sites.excluded("https://www.wikiwand.com/en/x", mirrors) is None
    assert sites.excluded("https://de.wikipedia.org/wiki/x", mirrors) == "wikipedia"


def test_a_site_list_line_that_is_no_host_names_the_line(tmp_path):
    listed = tmp_path / "sites.txt"
    listed.write_text("copies.example\nnot a host\n")
    with pytest.raises(ValueError, match=r"sites.txt, line 2: 'not a host'"):
        sites.site_list(str(listed))


# -- titles and queries -----------------------------------------------------------------------


@pytest.mark.parametrize("title,problem", [
    ("Paris", None),
    ("   ", "empty_title"),
    ("x" * (titles.MAX_TITLE_CHARS + 1), "title_too_long"),
    ("a\x00b", "control_characters"),
    ("a\x85b", "control_characters"),
    ("a\ud800b", "not_text"),
    ("Zoë (band)", None),
])
def test_titles_that_cannot_be_searched_are_named(title, problem):
    assert titles.title_problem(title) == problem


def test_queries_are_the_title_or_the_title_without_its_disambiguation():
    assert titles.query_for("Mercury_(planet)") == "Mercury (planet)"
    assert titles.query_for("Mercury (planet)", "no-disambiguation") == "Mercury"
    assert titles.query_for("(planet)", "no-disambiguation") == "(planet)"
    with pytest.raises(ValueError):
        titles.query_for("x", "nosuch")


def test_a_titles_file_reads_in_bounded_memory_and_names_its_bad_lines():
    data = (b"\xef\xbb\xbfParis\n\n" + b"x" * 100 + b"\n" + b"\xff\xfe\n" + b"Lyon\r\n")
    lines = list(titles.file_lines(io.BytesIO(data), max_bytes=50))
    assert lines == [(1, "Paris", None), (3, None, "line_too_long"), (4, None, "bad_encoding"),
                     (5, "Lyon", None)]


def test_result_lines_are_one_line_whatever_the_title(tmp_path):
    line = result_line("a\u2028b\nc", ["http://x.example/"], None, "local", "a b c")
    assert line.count("\n") == 1 and line.isascii()
    assert json.loads(line) == {"title": "a\u2028b\nc", "urls": ["http://x.example/"],
                                "scores": [None], "engine": "local", "query": "a b c"}
    assert summary_path("out/results.jsonl") == "out/results.summary.json"
    assert summary_path("out/results") == "out/results.summary.json"


# -- shards -----------------------------------------------------------------------------------


def test_merged_hits_rank_by_score_then_url_and_keep_a_url_once():
    a = [idx.Hit(2.0, "http://b/"), idx.Hit(1.0, "http://c/")]
    b = [idx.Hit(2.0, "http://a/"), idx.Hit(1.5, "http://c/")]
    assert idx.merge_hits([a, b], 3) == [idx.Hit(2.0, "http://a/"), idx.Hit(2.0, "http://b/"),
                                         idx.Hit(1.5, "http://c/")]


def record_for(folder, name="shard-00000-of-00001"):
    entry = {"name": name, "documents": 0, "files": {}}
    for file_name in idx.shard_files(folder):
        size, digest = idx.file_digest(str(folder / file_name))
        entry["files"][file_name] = {"bytes": size, "sha256": digest}
    return entry


@pytest.fixture
def one_shard(tmp_path):
    """An index of one shard written as the job writes it, with its index.json."""
    root = tmp_path / "index"
    shard = root / idx.SHARDS / "RUN" / "shard-00000-of-00001"
    shard.mkdir(parents=True)
    analyzer = Analyzer("en")
    pages = [("http://a.example/", analyzer.terms("the harbour of Sailhaven")),
             ("http://b.example/", analyzer.terms("a market in Loumbury and its harbour")),
             ("http://c.example/", analyzer.terms("gardens of Dyndham"))]
    assert idx.build_shard(str(shard), pages, 15_000_000) == 3
    entry = record_for(shard)
    record = {"index": {"format": idx.FORMAT, "version": idx.VERSION, "lang": "en",
                        "stemmer": "english", "run": "RUN", "documents": 3, "shards": [entry]}}
    (root / idx.RECORD).write_text(json.dumps(record))
    return root, shard


def test_a_shard_answers_by_bm25(one_shard):
    root, _ = one_shard
    index = idx.SearchIndex(str(root))
    try:
        hits = index.search(Analyzer("en").terms("Sailhaven harbour"), 10)
        assert [h.url for h in hits] == ["http://a.example/", "http://b.example/"]
        assert hits[0].score > hits[1].score > 0
        assert index.search([], 10) == [] and index.search(["nosuchterm"], 10) == []
    finally:
        index.close()


def test_an_index_without_its_record_is_refused_as_unfinished(one_shard):
    root, _ = one_shard
    (root / idx.RECORD).unlink()
    with pytest.raises(idx.BadIndex, match="not a finished search index"):
        idx.SearchIndex(str(root))


def test_an_index_of_another_version_is_refused(one_shard):
    root, _ = one_shard
    record = json.loads((root / idx.RECORD).read_text())
    record["index"]["version"] = idx.VERSION + 1
    (root / idx.RECORD).write_text(json.dumps(record))
    with pytest.raises(idx.BadIndex, match=f"format version {idx.VERSION + 1}"):
        idx.SearchIndex(str(root))


@pytest.mark.parametrize("damage", ["truncate", "flip", "remove"])
def test_a_damaged_shard_is_refused_by_name(one_shard, damage):
    root, shard = one_shard
    victim = max(idx.shard_files(shard), key=lambda n: (shard / n).stat().st_size)
    data = (shard / victim).read_bytes()
    if damage == "truncate":
        (shard / victim).write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        (shard / victim).write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))
    else:
        (shard / victim).unlink()
    with pytest.raises(idx.BadIndex) as err:
        idx.SearchIndex(str(root))
    assert "shard-00000-of-00001 is damaged" in str(err.value) and victim in str(err.value)


def test_a_record_that_does_not_parse_is_refused(one_shard):
    root, _ = one_shard
    (root / idx.RECORD).write_text("{half")
    with pytest.raises(idx.BadIndex, match="does not parse"):
        idx.read_record(str(root))


@pytest.mark.parametrize("change,says", [
    (lambda i: i.update(version=True), "format version True"),
    (lambda i: i.pop("run"), "no run folder named"),
    (lambda i: i.update(run="../elsewhere"), "no run folder named"),
    (lambda i: i.pop("lang"), "no language"),
    (lambda i: i["shards"][0].update(name="shard-00003-of-00009"), "is not named"),
    (lambda i: i["shards"][0].update(files={}), "lists no index files"),
    (lambda i: i["shards"][0]["files"].update({"../x": {"bytes": 1, "sha256": "0"}}),
     "is not a name"),
    (lambda i: i.update(stemmer="porter"), "analysed with the stemmer 'porter'"),
])
def test_a_record_of_the_wrong_shape_is_refused_by_name(one_shard, change, says):
    root, _ = one_shard
    record = json.loads((root / idx.RECORD).read_text())
    change(record["index"])
    (root / idx.RECORD).write_text(json.dumps(record))
    with pytest.raises(idx.BadIndex, match=re.escape(says)):
        idx.read_record(str(root))
