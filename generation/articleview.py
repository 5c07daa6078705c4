"""Predicted whole articles beside their references, as a Markdown page for reading.

Each record becomes ``## Title``, a two-column table (Predicted | Reference) with one row per
section, and a line of the article's structure scores. Sections are paired as the
per-section scores pair them (:func:`wikisum.generation.structure.matched_indices`: the leads,
then the sections whose headings match); a section whose heading matches nothing has a row of
its own with the other cell empty, placed in the reading order of both articles. A heading is
bold at the top of its cell. A record of a lead (no ``prediction_sections``) is one row of
the two leads, without structure scores.

Cells are the texts as written, with ``\\``, ``|`` and line breaks escaped so that nothing in a
text ends a cell or a row, and ``&``, ``<`` and ``>`` written as HTML entities (in cells and in
titles), so that no tag, comment or script in a text reaches the renderer; a lone surrogate is
written as U+FFFD. Other Markdown in a text (``*``) is left to the renderer.

A record in a language other than English (its ``lang``,
:func:`~wikisum.generation.evaluation.record_lang`; else its texts written mostly right to
left) has its title and every cell wrapped in an element carrying that language and its
direction (``<div lang="ar" dir="rtl">``), so that a renderer lays Arabic or Hebrew out right
to left and picks the language's fonts; English records are written as they always were.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from wikisum.core import htmlpage
from wikisum.core.articlelayout import ArticleSection
from wikisum.generation import predictions, structure
from wikisum.generation.evaluation import record_lang

Row = tuple[int | None, int | None]  # (predicted index, reference index); None: no section


def section_rows(predicted: Sequence[ArticleSection],
                 reference: Sequence[ArticleSection]) -> list[Row]:
    """The table's rows: every predicted section in order, each beside the reference section
    its heading matched; a reference section that nothing matched comes just before the
    first pair of a later reference section (or at the end), beside nothing."""
    match = dict(structure.matched_indices(predicted, reference))
    used = set(match.values())
    waiting = [j for j in range(len(reference)) if j not in used]
    rows: list[Row] = []
    for i in range(len(predicted)):
        j = match.get(i)
        if j is not None:
            while waiting and waiting[0] < j:
                rows.append((None, waiting.pop(0)))
        rows.append((i, j))
    rows += [(None, j) for j in waiting]
    return rows


def escape_markup(text: str) -> str:
    """``text`` with ``&``, ``<`` and ``>`` as HTML entities and each lone surrogate as U+FFFD:
    text, never markup, in any Markdown renderer."""
    text = htmlpage.text_of(text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def escape_cell(text: str) -> str:
    """``text`` safe inside a Markdown table cell: backslashes and ``|`` escaped, markup as
    entities (:func:`escape_markup`), each line break (``\\n``, ``\\r\\n``, ``\\r``) a
    ``<br>``."""
    text = escape_markup(text).replace("\\", "\\\\").replace("|", "\\|")
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\n", "<br>")


def _cell(section: ArticleSection | None, attrs: str = "") -> str:
    if section is None:
        return ""
    title, text = escape_cell(section.title.strip()), escape_cell(section.text.strip())
    if not title:
        cell = text
    else:
        cell = f"**{title}**<br>{text}" if text else f"**{title}**"
    return f"<div {attrs}>{cell}</div>" if attrs and cell else cell


def content_attrs(record: Mapping) -> str:
    """The ``lang`` and ``dir`` attributes (:func:`wikisum.core.htmlpage.lang_attrs`) that a
    record's texts are shown with, or "" for a record in English (or of no stated language,
    written left to right)."""
    lang = record_lang(record)
    sample = " ".join(str(record.get(k) or "") for k in ("title", "reference", "prediction"))
    if lang is None:
        if htmlpage.sample_direction(sample) == "ltr":
            return ""
    elif htmlpage.is_english_ltr(lang, sample):
        return ""
    return htmlpage.lang_attrs(lang, sample)


def _percent(x: float) -> str:
    return f"{100 * x:.1f}%"


def structure_line(predicted: Sequence[ArticleSection],
                   reference: Sequence[ArticleSection]) -> str:
    """One article's structure scores (:func:`wikisum.generation.structure.structure_scores`)
    in one line."""
    s = structure.structure_scores(predicted, reference)
    return (f"Headings: precision {_percent(s['heading_precision'])}, recall "
            f"{_percent(s['heading_recall'])}, F1 {_percent(s['heading_f1'])}; sections: "
            f"{int(s['sections'])} predicted, {int(s['reference_sections'])} in the reference; "
            f"repeated sections: {_percent(s['repeated_sections'])}.")


def _sections(record: Mapping, key: str, text_key: str) -> list[ArticleSection]:
    if key not in record:
        return [ArticleSection("", str(record.get(text_key, "")))]
    return predictions.record_sections(record, key)


def record_markdown(record: Mapping) -> str:
    """One record's part of the page: its heading, the table and (for an article) the
    structure line."""
    predicted = _sections(record, "prediction_sections", "prediction")
    reference = _sections(record, "reference_sections", "reference")
    title = escape_markup(" ".join(str(record.get("title") or record.get("id", "")).split()))
    attrs = content_attrs(record)
    if attrs and title:
        title = f"<span {attrs}>{title}</span>"
    lines = [f"## {title}", "", "| Predicted | Reference |", "| --- | --- |"]
    for i, j in section_rows(predicted, reference):
        left = _cell(None if i is None else predicted[i], attrs)
        right = _cell(None if j is None else reference[j], attrs)
        lines.append(f"| {left} | {right} |")
    if "prediction_sections" in record:
        lines += ["", structure_line(predicted, reference)]
    return "\n".join(lines) + "\n"


def markdown_page(records: Iterable[Mapping], limit: int | None = None) -> str:
    """The Markdown of the first ``limit`` records (all when None), one part each
    (:func:`record_markdown`), separated by a blank line."""
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    parts = []
    for k, record in enumerate(records):
        if limit is not None and k >= limit:
            break
        parts.append(record_markdown(record))
    return "\n".join(parts)


def write_markdown(preds_path: str | Path, out_path: str | Path,
                   limit: int | None = None) -> int:
    """Writes :func:`markdown_page` of the predictions file ``preds_path`` (its first
    ``limit`` records) to ``out_path``; returns the number of records on the page."""
    records = predictions.read_predictions(preds_path, empty_ok=True)
    page = markdown_page(records, limit)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return len(records) if limit is None else min(limit, len(records))
