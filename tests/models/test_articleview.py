"""The Markdown page of predicted articles beside their references, against exact text."""

from __future__ import annotations

import json

import pytest

from wikisum.core.articlelayout import ArticleSection as S
from wikisum.generation.articleview import (
    escape_cell,
    markdown_page,
    section_rows,
    write_markdown,
)


def as_json(sections):
    return [{"title": s.title, "text": s.text} for s in sections]


def bodmin():
    predicted = [S("", "A town | in Cornwall."), S("History", "Old.\nVery old."),
                 S("Legacy", "Remembered.")]
    reference = [S("", "A town."), S("Geography", "Hills."), S("history", "Ancient.")]
    return {"id": "b1", "title": "Bodmin", "target": "article", "prediction": "p",
            "reference": "r", "prediction_sections": as_json(predicted),
            "reference_sections": as_json(reference)}


BODMIN_PAGE = """\
## Bodmin

| Predicted | Reference |
| --- | --- |
| A town \\| in Cornwall. | A town. |
|  | **Geography**<br>Hills. |
| **History**<br>Old.<br>Very old. | **history**<br>Ancient. |
| **Legacy**<br>Remembered. |  |

Headings: precision 50.0%, recall 50.0%, F1 50.0%; sections: 3 predicted, 3 in the \
reference; repeated sections: 0.0%.
"""


def test_a_small_article_renders_exactly():
    # History pairs with history (case folded); Geography and Legacy match nothing, so each
    # has a row with the other cell empty, Geography before the pair that follows it.
    assert markdown_page([bodmin()]) == BODMIN_PAGE


def test_cells_escape_pipes_backslashes_and_line_breaks():
    assert escape_cell("a|b") == "a\\|b"
    assert escape_cell("C:\\dir|x") == "C:\\\\dir\\|x"  # "\|" in a text stays a backslash
    assert escape_cell("one\r\ntwo\rthree\nfour") == "one<br>two<br>three<br>four"
    record = {"id": 1, "title": "A | B", "prediction_sections": [
        {"title": "", "text": "x"}, {"title": "Pipe | heading", "text": ""}],
        "reference_sections": [{"title": "", "text": "y"}], "prediction": "", "reference": ""}
    rows = markdown_page([record]).splitlines()
    assert rows[0] == "## A | B"  # a heading is not a cell
    assert rows[5] == "| **Pipe \\| heading** |  |"  # a heading without text: no <br>


def test_unmatched_sections_keep_the_reading_order_of_both_articles():
    predicted = [S("", "p"), S("Career", "c"), S("Early life", "e"), S("Legacy", "l")]
    reference = [S("", "r"), S("early life", "e"), S("Awards", "a"), S("career", "c"),
                 S("Death", "d")]
    # Career pairs with reference 3, Early life with 1; Awards (2) waits until the pair of a
    # later reference section, Death (4) comes last; Legacy matches nothing.
    assert section_rows(predicted, reference) == [
        (0, 0), (None, 2), (1, 3), (2, 1), (3, None), (None, 4)]
    assert section_rows([], reference[:2]) == [(None, 0), (None, 1)]


def test_a_lead_record_is_one_row_without_structure_scores():
    record = {"id": 7, "prediction": "a lead", "reference": "the lead"}
    assert markdown_page([record]) == (
        "## 7\n\n| Predicted | Reference |\n| --- | --- |\n| a lead | the lead |\n")


def test_write_markdown_reads_a_predictions_file(tmp_path):
    second = dict(bodmin(), id="b2", title="Truro")
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps(bodmin()) + "\n\n" + json.dumps(second) + "\n")
    out = tmp_path / "view" / "preds.md"
    assert write_markdown(preds, out) == 2
    assert out.read_text() == BODMIN_PAGE + "\n" + BODMIN_PAGE.replace("Bodmin", "Truro")
    assert write_markdown(preds, out, limit=1) == 1
    assert out.read_text() == BODMIN_PAGE
    preds.write_text(json.dumps(bodmin()) + "\n{not json\n")
    with pytest.raises(ValueError, match=r"preds\.jsonl:2: not JSON"):
        write_markdown(preds, out)
