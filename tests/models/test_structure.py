"""Structure scores of whole articles, against hand-worked examples."""

import pytest

from wikisum.core.articlelayout import ArticleSection as S
from wikisum.generation.structure import (
    bigram_f1,
    heading_key,
    heading_scores,
    matched_indices,
    matched_sections,
    repeated_share,
    sections_from_json,
    structure_scores,
)

REFERENCE = [S("", "the lead"), S("Early life", "born in a town"), S("Career", "worked a lot"),
             S("Awards", "won prizes"), S("Career", "a second career")]


def test_headings_match_after_folding_case_and_punctuation():
    assert heading_key("  Early   LIFE. ") == heading_key("early life") == "early life"
    assert heading_key("Works (1990–2000)") == "works 1990 2000"
    assert heading_key("Ранние_годы") == "ранние годы"


def test_heading_precision_and_recall_by_hand():
    predicted = [S("", "x"), S("early life", "y"), S("Career", "z"), S("Career", "w"),
                 S("Career", "v"), S("Legacy", "u")]
    # predicted: early life, career x3, legacy (5); reference: early life, career x2, awards (4)
    # matched once each: early life 1 + career 2 = 3
    scores = heading_scores(predicted, REFERENCE)
    assert scores["precision"] == pytest.approx(3 / 5)
    assert scores["recall"] == pytest.approx(3 / 4)
    assert scores["f1"] == pytest.approx(2 * 0.6 * 0.75 / 1.35)


def test_headings_of_a_lead_only_article():
    lead_only = [S("", "just a lead")]
    assert heading_scores(lead_only, lead_only) == {"precision": 1.0, "recall": 1.0, "f1": 1.0}
    assert heading_scores(lead_only, REFERENCE) == {"precision": 0.0, "recall": 0.0, "f1": 0.0}
    assert heading_scores(REFERENCE, lead_only)["recall"] == 0.0


def test_bigram_f1_by_hand():
    # a: (the cat) (cat sat) (sat down); b: (the cat) (cat sat) (sat up) (up now)
    assert bigram_f1("The cat sat down", "the cat sat up now") == pytest.approx(
        2 * (2 / 3) * (2 / 4) / (2 / 3 + 2 / 4))
    assert bigram_f1("one", "one") == 0.0  # no bigram
    assert bigram_f1("a b", "c d") == 0.0


def test_repeated_sections_by_hand():
    sections = [S("", "the city lies on the river"), S("A", "the city lies on the river bank"),
                S("B", "completely other words here"), S("C", ""),
                S("D", "completely other words here today")]
    # texts: 4 with text; the 2nd repeats the 1st (F1 5/5,5/6 -> 0.909), the 3rd repeats none,
    # the 4th repeats the 3rd (3/3, 3/4 -> 0.857): 2 of 3
    assert repeated_share(sections) == pytest.approx(2 / 3)
    assert repeated_share(sections, threshold=0.9) == pytest.approx(1 / 3)
    assert repeated_share([S("", "only the lead")]) == 0.0


def test_sections_are_paired_by_heading_each_reference_once():
    predicted = [S("", "p lead"), S("career", "p1"), S("Legacy", "p2"), S("Career", "p3"),
                 S("Career", "p4")]
    assert matched_sections(predicted, REFERENCE) == [
        ("p lead", "the lead"), ("p1", "worked a lot"), ("p3", "a second career")]


def test_structure_scores_of_one_article():
    scores = structure_scores(REFERENCE, REFERENCE)
    assert scores == {"heading_precision": 1.0, "heading_recall": 1.0, "heading_f1": 1.0,
                      "sections": 5.0, "reference_sections": 5.0, "repeated_sections": 0.0}


def test_matched_indices_give_the_positions_of_the_pairs():
    predicted = [S("", "p lead"), S("career", "p1"), S("Legacy", "p2"), S("Career", "p3")]
    assert matched_indices(predicted, REFERENCE) == [(0, 0), (1, 2), (3, 4)]
    assert matched_indices([], REFERENCE) == []


def test_sections_from_json():
    assert sections_from_json([{"title": "", "text": "lead"}, {"title": "A", "text": ""}]) == [
        S("", "lead"), S("A", "")]
    with pytest.raises(ValueError, match="must be a list, not str"):
        sections_from_json("lead")
    with pytest.raises(ValueError, match="section 1 is not an object with a text title"):
        sections_from_json([{"title": "", "text": "lead"}, {"title": 3, "text": "x"}])
