"""Decode writes the reference as the dataset holds it (not its ids decoded back, in which a
letter the vocabulary lacks reads as <unk>), and each predictions record carries the dataset's
language."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from wikisum.core import vocab
from wikisum.core.articlelayout import PIECES, article_sections, encode_article
from wikisum.core.loader import Example
from wikisum.generation.decode import ReferenceTexts, dataset_language, record_writer
from wikisum.workflows import cli

TEXTS = ["Москва столица России", "река течёт на север", "город стоит на реке"] * 40


@pytest.fixture(scope="module")
def sp(tmp_path_factory):
    """A vocabulary without byte fallback that has never seen Я or 董."""
    path = tmp_path_factory.mktemp("vocab") / "v.model"
    vocab.train_vocab(TEXTS, str(path), 120, byte_fallback=False)
    return vocab.load(str(path))


class Rows:
    """A dataset's rows(split, columns), as the loader streams them."""

    def __init__(self, rows, kind="ranked", info=None):
        self.data, self.kind, self.info = rows, kind, info or {}
        self.asked = []

    def rows(self, split, columns):
        self.asked.append((split, tuple(columns)))
        for row in self.data:
            yield {c: row[c] for c in columns}


def bundle(sp, target="lead"):
    return SimpleNamespace(tokenizer=sp, max_target_tokens=None, target=target)


def test_a_lead_record_holds_the_datasets_text_and_its_language(sp):
    lead = "Ядро города — Кремль, 董 его символ"
    ids = sp.encode(lead)
    assert sp.unk_id() in ids and "⁇" in sp.decode(ids)  # what the record held before
    write = record_writer(bundle(sp), sp.eos_id(), lang="ru")
    record = write(Example(7, "Москва", [], ids), [*sp.encode("река"), sp.eos_id()], 1.5, 9,
                   lead)
    assert record["reference"] == lead
    assert record["prediction"] == "река"
    assert record["lang"] == "ru"
    assert (record["reference_nll"], record["reference_tokens"]) == (1.5, 9)


def test_without_the_text_or_the_language_the_record_is_as_before(sp):
    ids = sp.encode("река течёт")
    record = record_writer(bundle(sp), sp.eos_id())(Example(1, "t", [], ids), ids, 0.0, 2)
    assert record == {"id": 1, "title": "t", "prediction": "река течёт",
                      "reference": "река течёт", "reference_nll": 0.0, "reference_tokens": 2}


def test_an_article_records_lead_is_the_datasets_text(sp):
    assert all(sp.piece_to_id(p) != sp.unk_id() for p in PIECES)
    lead = "Ядро города董"
    sections = article_sections(lead, [{"title": "река", "text": "город стоит"}])
    ids, _ = encode_article(sections, sp)
    write = record_writer(SimpleNamespace(tokenizer=sp, max_target_tokens=None,
                                          target="article"), sp.eos_id(), lang="ru")
    record = write(Example(3, "t", [], ids), [sp.eos_id()], 0.0, len(ids), lead)
    assert record["reference_sections"][0] == {"title": "", "text": lead}
    assert record["reference_sections"][1] == {"title": "река", "text": "город стоит"}
    assert record["reference"] == f"{lead} == река == город стоит"
    assert record["lang"] == "ru" and record["target"] == "article"


def test_reference_texts_follow_the_examples_in_order_skipping_some():
    dataset = Rows([{"id": i, "lead": f"lead  of\n{i}"} for i in (3, 5, 8, 9)])
    texts = ReferenceTexts(dataset, "test")
    assert texts.get(5) == "lead of 5"  # whitespace collapsed, 3 skipped
    assert texts.get(9) == "lead of 9"
    assert dataset.asked == [("test", ("id", "lead"))]
    assert texts.get(10) is None  # past the end: the ids are decoded from here on


def test_an_id_out_of_order_falls_back_to_the_ids_from_there_on():
    texts = ReferenceTexts(Rows([{"id": i, "lead": str(i)} for i in (1, 2, 3)]), "test")
    assert texts.get(2) == "2"
    assert texts.get(1) is None
    assert texts.get(3) is None


def test_a_pairs_datasets_reference_is_its_target():
    dataset = Rows([{"id": 1, "target": "headline one"}], kind="pairs")
    assert ReferenceTexts(dataset, "test").get(1) == "headline one"
    assert dataset.asked == [("test", ("id", "target"))]


def test_a_dataset_without_the_text_column_gives_none():
    class Broken(Rows):
        def rows(self, split, columns):
            raise KeyError("lead")
            yield

    assert ReferenceTexts(Broken([]), "test").get(1) is None
    assert ReferenceTexts(object(), "test").get(1) is None


@pytest.mark.parametrize(("info", "expected"), [
    ({"language": "uk"}, "uk"), ({"language": "und"}, None), ({"language": ""}, None),
    ({}, None), ({"language": 3}, None)])
def test_the_datasets_language(info, expected):
    assert dataset_language(SimpleNamespace(info=info)) == expected


def test_a_decoded_split_holds_the_datasets_leads(tiny_run, tmp_path):
    """The toy dataset's leads are the text "lead", its lead ids random pieces: each record's
    reference is the text."""
    out = tmp_path / "preds.jsonl"
    assert cli.main(["decode", "--run", str(tiny_run), "--split", "test", "--out", str(out),
                     "--beam", "1", "--batch-size", "2", "--device", "cpu"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records and all(r["reference"] == "lead" for r in records)
    assert all("lang" not in r for r in records)  # its dataset.json names no language
