"""Stage one from tensor2tensor's released files: the sample's articles written as the authors'
wiki_content TFRecords and wiki_urls JSON (tests/formats/t2t_files.py, which cites the reading
code), built through ingest -> vocab -> rank -> report -> train, with the same joins as the
dump route on the same articles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from t2t_files import CONTENT_FILE, URLS_FILE, write_wiki_content, write_wiki_urls

from wikisum.core import outputs, shards
from wikisum.core.records import split_of
from wikisum.workflows import cli

# A shard of each split, as tensor2tensor assigns them (formats.t2t.split_of_shard).
SHARD_OF_SPLIT = {"dev": 7, "test": 123, "train": 456}


def articles_of(ingest_dir: Path) -> dict[str, dict]:
    return {r["title"]: r for r in shards.iter_rows(outputs.article_shards(str(ingest_dir)))}


def url_list(row: dict, listed: dict) -> list[str]:
    """An article's URL list as the authors' lists hold them: its citations, then its search
    results. The citations come in the order the dump route attached them (paragraphs repeated
    across references are kept in the first by that order, so the order is part of the join),
    then those it did not attach."""
    attached = [ref["url"] for ref in row["references"]]
    rest = [u for u in listed["citation_urls"] + listed["search_urls"] if u not in attached]
    return attached + rest


@pytest.fixture(scope="module")
def t2t_release(built_sample, tmp_path_factory) -> tuple[Path, dict]:
    """The dump route's kept articles (lead and sections as it parsed them) as the authors'
    files: one wiki_content shard and one wiki_urls shard per split, the URL lists holding each
    article's citations then its search results (as the manifest lists them), and one URL list
    for an article that is not there."""
    build, manifest = built_sample
    kept = articles_of(build / "ingest")
    listed = {a["title"]: a for a in manifest["articles"]}
    out = tmp_path_factory.mktemp("t2t")
    (out / "wiki_content").mkdir()
    (out / "wiki_urls").mkdir()
    for split, shard in SHARD_OF_SPLIT.items():
        rows = [r for r in kept.values() if r["split"] == split]
        write_wiki_content(out / "wiki_content" / (CONTENT_FILE % shard), [
            {"url": r["url"], "title": r["title"],
             "sections": [("", r["lead"])] + [(s["title"], s["text"]) for s in r["sections"]]}
            for r in rows])
        refs = {r["url"]: url_list(r, listed[r["title"]]) for r in rows}
        if split == "train":
            refs["https://en.wikipedia.org/wiki/No_such_article"] = ["http://x.example/"]
        write_wiki_urls(out / "wiki_urls" / (URLS_FILE % shard), refs)
    return out, kept


def ingest(sample: Path, release: Path, out: Path, *extra: str) -> int:
    return cli.main(["-q", "ingest",
                     "--t2t-wiki-content", str(release / "wiki_content" / "*"),
                     "--t2t-wiki-urls", str(release / "wiki_urls" / "*"),
                     "--warc", str(sample / "warc" / "*.warc.gz"),
                     "--wet", str(sample / "wet" / "*.warc.wet.gz"), "--out", str(out), *extra])


def references(row: dict) -> set[tuple[str, tuple[str, ...]]]:
    return {(ref["url"], tuple(ref["paragraphs"])) for ref in row["references"]}


def test_with_a_dump_the_joins_are_the_dump_routes(sample_corpus, built_sample, t2t_release,
                                                   tmp_path):
    sample, _ = sample_corpus
    release, kept = t2t_release
    out = tmp_path / "ingest"
    assert ingest(sample, release, out, "--wiki",
                  str(sample / "enwiki-sample-pages-articles.xml.bz2")) == 0
    ours = articles_of(out)
    assert set(ours) == set(kept)
    for title, row in ours.items():
        dump_row = kept[title]
        assert references(row) == references(dump_row), title
        assert {(r["url"], r["source"]) for r in row["references"]} == \
            {(r["url"], r["source"]) for r in dump_row["references"]}, title
        assert row["split"] == dump_row["split"] == split_of(title)
        assert (row["lead"], row["sections"]) == (dump_row["lead"], dump_row["sections"])
        assert row["citations_listed"] == dump_row["citations_listed"]
    summary = outputs.read_summary(str(out))
    assert summary["corpora"] == ["citations", "search", "combined"]
    assert summary["stages"]["t2t_urls"]["dropped"] == {"no_article": 1}
    assert summary["balanced"]


def test_without_a_dump_the_lists_are_one_corpus_and_build_to_a_trained_model(
        sample_corpus, t2t_release, tmp_path):
    sample, _ = sample_corpus
    release, kept = t2t_release
    ingest_dir = tmp_path / "ingest"
    assert ingest(sample, release, ingest_dir) == 0
    ours = articles_of(ingest_dir)
    assert set(ours) == set(kept)
    for title, row in ours.items():
        assert references(row) == references(kept[title]), title
        assert {r["source"] for r in row["references"]} == {"listed"}
        assert row["citations_listed"] == 0 and row["search_listed"] > 0
    assert outputs.read_summary(str(ingest_dir))["corpora"] == ["combined"]

    vocab = tmp_path / "vocab.model"
    assert cli.main(["-q", "vocab", "--data", str(ingest_dir), "--out", str(vocab),
                     "--size", "2000"]) == 0
    data = tmp_path / "data"
    assert cli.main(["-q", "rank", "--data", str(ingest_dir), "--vocab", str(vocab),
                     "--out", str(data), "--shards", "1"]) == 0
    info = json.loads((data / "dataset.json").read_text())
    assert info["corpora"] == ["combined"]
    assert sum(info["rows"].values()) == len(kept)
    assert cli.main(["-q", "report", "--data", str(data), "--out", str(tmp_path / "report"),
                     "--lengths", "100"]) == 0
    metrics = json.loads((tmp_path / "report" / "metrics.json").read_text())
    assert metrics["corpora"] == ["combined"]
    assert cli.main(["-q", "train", "--model", "seq2seq", "--data", str(data),
                     "--out", str(tmp_path / "run"), "--preset", "tiny", "--steps", "2",
                     "--max-input-tokens", "48", "--device", "cpu", "warmup_steps=1",
                     "eval_every=2", "checkpoint_every=2", "dev_examples=2"]) == 0


def test_a_flipped_bit_is_a_dead_letter_with_its_offset(sample_corpus, t2t_release, tmp_path):
    sample, _ = sample_corpus
    release, kept = t2t_release
    damaged = tmp_path / "release"
    for folder in ("wiki_content", "wiki_urls"):
        (damaged / folder).mkdir(parents=True)
        for f in (release / folder).iterdir():
            (damaged / folder / f.name).write_bytes(f.read_bytes())
    train = damaged / "wiki_content" / (CONTENT_FILE % SHARD_OF_SPLIT["train"])
    data = bytearray(train.read_bytes())
    first_length = int.from_bytes(data[:8], "little")
    second = 12 + first_length + 4  # the second record's offset
    data[second + 12 + 5] ^= 0x10  # a bit of its data: its data checksum fails
    train.write_bytes(bytes(data))
    out = tmp_path / "ingest"
    assert ingest(sample, damaged, out) == 0
    letters = list(shards.iter_rows(shards.match(str(out / "dead_letters" / "*.parquet"))))
    bad = [d for d in letters if d["stage"] == "t2t_content"]
    assert len(bad) == 1
    assert bad[0]["reason"] == "data_checksum"
    assert bad[0]["record"] == f"offset {second}"
    assert bad[0]["input_file"].endswith(train.name)
    summary = outputs.read_summary(str(out))
    assert summary["stages"]["t2t_content"]["dropped"] == {"data_checksum": 1}
    assert len(articles_of(out)) == len(kept) - 1
