"""Vocabulary, the rank job, the loader, and `wikisum build` on the sample corpus."""

from __future__ import annotations

import json
import shutil

import apache_beam as beam
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline as BeamTestPipeline
from apache_beam.testing.util import assert_that, equal_to

from wikisum import extractors
from wikisum.core import loader, schemas, vocab
from wikisum.extractors import learned
from wikisum.pipeline import beamio, rank
from wikisum.pipeline.rank import CORPORA, corpus_indices
from wikisum.workflows import cli

# --------------------------------------------------------------------------------------------
# The loader on a hand-made row

ROW = {
    "id": 7, "title": "T",
    "title_ids": [10, 11],
    "paragraphs": [{"text": "a", "ids": [20, 21, 22], "reference": 0, "sources": ["citation"]},
                   {"text": "b", "ids": [30], "reference": 0, "sources": ["citation"]},
                   {"text": "c", "ids": [40, 41], "reference": 1, "sources": ["search"]}],
    "rankings": [{"extractor": "x", "corpus": "combined", "order": [2, 0, 1]},
                 {"extractor": "x", "corpus": "citations", "order": [1, 0]}],
}


def test_build_input_is_title_separator_then_ranked_paragraphs():
    assert loader.build_input(ROW, "x", "combined", 100, title_sep_id=4) == [
        10, 11, 4, 40, 41, 20, 21, 22, 30]
    assert loader.build_input(ROW, "x", "citations", 100, title_sep_id=4) == [
        10, 11, 4, 30, 20, 21, 22]


@pytest.mark.parametrize("length,expected", [(1, [10]), (3, [10, 11, 4]),
                                             (6, [10, 11, 4, 40, 41, 20])])
def test_build_input_keeps_the_first_l_tokens(length, expected):
    assert loader.build_input(ROW, "x", "combined", length, title_sep_id=4) == expected


def test_missing_ranking_is_a_clear_error():
    with pytest.raises(KeyError, match="no ranking for extractor 'y'"):
        loader.build_input(ROW, "y", "combined", 10, title_sep_id=4)


def test_corpus_indices():
    paragraphs = [{"sources": ["citation"]}, {"sources": ["search"]},
                  {"sources": ["citation", "search"]}]
    assert corpus_indices(paragraphs, "citations") == [0, 2]
    assert corpus_indices(paragraphs, "search") == [1, 2]
    assert corpus_indices(paragraphs, "combined") == [0, 1, 2]


# --------------------------------------------------------------------------------------------
# `wikisum build` on the sample corpus


@pytest.fixture(scope="module")
def built(built_sample):
    return built_sample


def test_vocab_has_the_special_pieces(built):
    out, _ = built
    sp = vocab.load(str(out / "vocab.model"))
    ids = vocab.special_ids(sp)
    assert (ids.pad, ids.unk, ids.bos, ids.eos) == (0, 1, 2, 3)
    assert sp.id_to_piece(ids.title_sep) == "<t>" and sp.id_to_piece(ids.sep) == "<sep>"
    assert 500 < sp.get_piece_size() <= 3000
    assert sp.decode(sp.encode("The river rises on Mount Kessel.")) == (
        "The river rises on Mount Kessel.")


def test_vocab_sample_is_deterministic_bounded_and_train_only(built):
    out, _ = built
    first = vocab.training_texts(str(out / "ingest"), max_texts=40)
    assert len(first) == 40 and first == vocab.training_texts(str(out / "ingest"), 40)
    train_texts = set()
    for path in sorted((out / "ingest" / "articles").glob("*.parquet")):
        for row in pq.read_table(path).to_pylist():
            if row["split"] == "train":
                train_texts.add(row["lead"])
                train_texts.update(p for r in row["references"] for p in r["paragraphs"])
    assert set(first) <= train_texts


def test_shards_are_split_and_describe_themselves(built):
    out, manifest = built
    info = json.loads((out / "data" / "dataset.json").read_text())
    assert info["extractors"] == list(extractors.NAMES)
    assert info["corpora"] == list(CORPORA)
    assert sum(info["rows"].values()) == len(manifest["articles"])
    assert info["rows"]["train"] > info["rows"]["dev"] > 0
    for split in ("train", "dev", "test"):
        files = sorted((out / "data").glob(f"{split}-*.parquet"))
        assert [f.name for f in files] == [f"{split}-0000{i}-of-00002.parquet" for i in range(2)]
        for f in files:
            table = pq.read_table(f)
            assert table.schema.equals(schemas.RANKED, check_metadata=False)
            assert set(table.column("split").to_pylist()) <= {split}


def test_every_ranking_is_a_permutation_of_its_corpus(built):
    out, _ = built
    data = loader.Dataset(str(out / "data"))
    for row in data.rows("train"):
        assert len(row["rankings"]) == len(extractors.NAMES) * len(CORPORA)
        for entry in row["rankings"]:
            expected = corpus_indices(row["paragraphs"], entry["corpus"])
            assert sorted(entry["order"]) == expected


def test_loader_rebuilds_the_input_computed_directly(built):
    """A stored row gives, for every extractor x corpus x L, the input computed from scratch."""
    out, _ = built
    data = loader.Dataset(str(out / "data"))
    sp = vocab.load(str(out / "vocab.model"))
    sep = vocab.special_ids(sp).title_sep
    rankers = {name: extractors.get(name) for name in extractors.NAMES if name != "learned"}
    rankers["learned"] = learned.load(str(out / "data" / "learned.json"))
    rows = list(data.rows("dev"))
    assert rows
    for row in rows[:3]:
        texts = [p["text"] for p in row["paragraphs"]]
        sources = ["citation" if "citation" in p["sources"] else "search"
                   for p in row["paragraphs"]]
        for corpus in CORPORA:
            index = corpus_indices(row["paragraphs"], corpus)
            for name, ranker in rankers.items():
                order = ranker.rank(row["title"], [texts[i] for i in index], target=row["lead"],
                                    sources=[sources[i] for i in index])
                direct = sp.encode(row["title"]) + [sep]
                for i in order:
                    direct += sp.encode(texts[index[i]])
                for length in (5, 100, 400, 5000):
                    assert loader.build_input(row, name, corpus, length, sep) == direct[:length]
        examples = {e.id: e for e in data.examples("dev", "tfidf", "combined", 64)}
        assert examples[row["id"]].targets == sp.encode(row["lead"])
        assert len(examples[row["id"]].inputs) <= 64


def test_cheating_puts_relevant_paragraphs_first(built):
    out, manifest = built
    relevant = {a["title"]: {p for r in a["references"] for p in r["relevant_paragraphs"]}
                for a in manifest["articles"]}
    data = loader.Dataset(str(out / "data"))
    hits = total = 0
    for split in ("train", "dev", "test"):
        for row in data.rows(split):
            top = loader.ranked_texts(row, "cheating", "combined")[0]
            hits += top in relevant[row["title"]]
            total += 1
    assert hits / total > 0.9


def test_learned_extractor_beats_the_original_order_and_not_the_oracle(built):
    """Mean bigram recall of the lead by the top-3 paragraphs, on dev + test. (On the sample,
    whose relevant paragraphs all name their subject, tf-idf is within 0.01 of the cheating
    ceiling, so where the learned extractor lands against tf-idf is left to the report.)"""
    out, _ = built
    data = loader.Dataset(str(out / "data"))
    cheat = extractors.get("cheating")
    means = {}
    for name in ("identity", "learned", "cheating"):
        values = []
        for split in ("dev", "test"):
            for row in data.rows(split):
                top = " ".join(loader.ranked_texts(row, name, "combined")[:3])
                values.append(cheat.scores(row["title"], [top], row["lead"])[0])
        means[name] = sum(values) / len(values)
    assert means["identity"] < means["learned"] <= means["cheating"], means


def test_dataset_errors_are_clear(tmp_path, built):
    with pytest.raises(FileNotFoundError, match="dataset.json"):
        loader.Dataset(str(tmp_path))
    data = loader.Dataset(str(built[0] / "data"))
    with pytest.raises(ValueError, match="extractor 'nope'"):
        next(data.examples("train", "nope", "combined", 10))
    with pytest.raises(SystemExit, match="no finished ingest output .* rerun `wikisum ingest"):
        (tmp_path / "ingest").mkdir()
        cli.main(["rank", "--in", str(tmp_path / "ingest"), "--vocab",
                  str(built[0] / "vocab.model"), "--out", str(tmp_path / "o")])


def test_rank_is_deterministic(built, tmp_path):
    out, _ = built
    assert cli.main(["rank", "--in", str(out / "ingest"), "--vocab", str(out / "vocab.model"),
                     "--learned", str(out / "data" / "learned.json"), "--out", str(tmp_path),
                     "--rank-shards", "2", "--targets", "lead,article"]) == 0
    for f in sorted((out / "data").glob("*-of-*.parquet")):
        assert pq.read_table(f).to_pylist() == pq.read_table(tmp_path / f.name).to_pylist()


def test_learned_model_round_trip(built, tmp_path):
    out, _ = built
    model = learned.load(str(out / "data" / "learned.json"))
    model.save(str(tmp_path / "m.json"))
    again = learned.load(str(tmp_path / "m.json"))
    paragraphs = ["The river rises on Mount Kessel.", "Parking charges will rise again.",
                  "The Ostra River flows into the Grey Sea after 80 km."]
    assert again.rank("Ostra River", paragraphs) == model.rank("Ostra River", paragraphs)
    with pytest.raises(FileNotFoundError, match="--train-learned"):
        learned.load(str(tmp_path / "absent.json"))


def test_build_help_lists_its_outputs(capsys):
    with pytest.raises(SystemExit):
        cli.main(["build", "--help"])
    text = capsys.readouterr().out
    assert "OUT/ingest" in text and "OUT/vocab.model" in text and "OUT/data" in text


# On the jobs' own runner (beamio.LocalRunner): Beam's default DirectRunner first tries its
# Prism runner, which leaves folders in the temporary folder wherever it cannot start.
def test_read_ingest_shards_checks_the_ingest_output_when_the_job_runs(built, tmp_path):
    out, manifest = built
    with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
        ids = p | rank.ReadIngestShards(str(out / "ingest")) | beam.Map(lambda r: r["id"])
        assert_that(ids, equal_to([a["page_id"] for a in manifest["articles"]]))
    unfinished = tmp_path / "ingest"
    shutil.copytree(out / "ingest", unfinished)
    (unfinished / "summary.json").unlink()
    with pytest.raises(Exception, match=f"rerun `wikisum ingest --out {unfinished}`"):
        with BeamTestPipeline(runner=beamio.LocalRunner()) as p:
            _ = p | rank.ReadIngestShards(str(unfinished))


def test_article_targets_decode_back_into_every_sample_articles_sections(built, tmp_path):
    from wikisum.core import articlelayout, outputs, shards

    out, _ = built
    data = tmp_path / "data"
    assert cli.main(["rank", "--in", str(out / "ingest"), "--vocab", str(out / "vocab.model"),
                     "--out", str(data), "--shards", "1", "--targets", "lead,article"]) == 0
    info = json.loads((data / "dataset.json").read_text())
    assert info["targets"] == ["lead", "article"]
    assert "`article_ids`" in (data / "README.md").read_text()
    sp = vocab.load(str(out / "vocab.model"))
    ingest = {r["id"]: r for r in shards.iter_rows(outputs.article_shards(str(out / "ingest")),
                                                   ["id", "lead", "sections"])}
    rows = [r for f in sorted(data.glob("*-of-*.parquet")) for r in pq.read_table(f).to_pylist()]
    assert rows and len(rows) == sum(info["rows"].values())
    with_sections = 0
    for row in rows:
        article = articlelayout.article_sections(ingest[row["id"]]["lead"],
                                                 ingest[row["id"]]["sections"])
        back = articlelayout.decode_article(row["article_ids"], sp)
        assert back == [articlelayout.ArticleSection(sp.decode(sp.encode(s.title)),
                                                     sp.decode(sp.encode(s.text)))
                        for s in article]
        bounds = row["section_boundaries"]
        assert len(bounds) == len(article) and bounds[-1] == len(row["article_ids"])
        assert bounds[0] == len(row["lead_ids"]) and bounds == sorted(bounds)
        with_sections += len(article) > 1
    assert with_sections >= len(rows) // 2  # the sample's articles have sections


def test_article_targets_are_refused_with_a_vocabulary_without_the_markers(built, tmp_path):
    out, _ = built
    import sentencepiece as spm

    sp = vocab.load(str(out / "vocab.model"))
    assert sp.is_control(sp.piece_to_id("<sec>")) and sp.is_control(sp.piece_to_id("<eoh>"))
    # a vocabulary of an older wikisum: trained as before, without the two appended pieces
    old = tmp_path / "old.model"
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(["some words here", "and more words"] * 50),
        model_prefix=str(old.with_suffix("")), vocab_size=40, hard_vocab_limit=False,
        pad_id=0, unk_id=1, bos_id=2, eos_id=3, user_defined_symbols=["<t>", "<sep>"],
        minloglevel=2)
    with pytest.raises(SystemExit, match="--targets article: .*no control piece <sec>"):
        cli.main(["rank", "--in", str(out / "ingest"), "--vocab", str(old),
                  "--out", str(tmp_path / "o"), "--targets", "lead,article"])
    with pytest.raises(SystemExit, match="--targets heading"):
        cli.main(["rank", "--in", str(out / "ingest"), "--vocab", str(out / "vocab.model"),
                  "--out", str(tmp_path / "o2"), "--targets", "lead,heading"])
