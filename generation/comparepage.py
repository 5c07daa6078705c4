"""Two systems' predictions of the same examples side by side, as one self-contained HTML page
for reading (``wikisum evaluate --compare A B --html DIR``). Not blind: it is for the researcher
who wants to see where B gains or loses against A, not for annotators.

The page (:func:`render`, written by :func:`write_page` as ``DIR/index.html``) holds, at the
top, the paired tests of :func:`wikisum.generation.evaluation.compare` (each score's mean in A
and B and its verdict), then every example: its title and id, the reference, A's output on the
left and B's on the right, each with its ROUGE-1/2/L F1 against its own reference (and
summary-level ROUGE-Lsum for whole articles, whose sections are shown under their headings).
Examples come sorted by the ROUGE-L F1 difference B - A, largest first; controls re-sort them
by another score's difference, by id or in file order, and find an id or title.

Each example's texts are shown in its language and direction (the records' ``lang``, or
``evaluate --lang``; :func:`wikisum.core.htmlpage.text_direction`), so that Arabic or Hebrew
reads right to left, inside the page's English interface; ``<html>`` carries the language
most examples are in.

Outputs, references and titles are untrusted text: they travel in the page's JSON block and
reach the DOM through ``textContent`` only, under the Content-Security-Policy of
:func:`wikisum.core.htmlpage.page` (no script but the page's own, no request anywhere); a text
longer than :data:`wikisum.core.htmlpage.SHOWN_CHARS` is shown cut, with a button that says
how much more there is and shows it.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from wikisum.core import htmlpage, stats
from wikisum.generation import evaluation
from wikisum.generation.predictions import is_article, record_sections

PAGE = "index.html"
# Per-example scores shown and sortable, by key: F1 of rouge-score's type of that name.
SCORES = (("rouge1", "ROUGE-1 F1"), ("rouge2", "ROUGE-2 F1"), ("rougeL", "ROUGE-L F1"))
ARTICLE_SCORES = (("rougeLsum", "ROUGE-Lsum F1"),)
DEFAULT_SORT = "rougeL"
# The tests shown before "all tests" is ticked: the F1 of the per-example scores.
PRIMARY_TESTS = ("rouge.rouge1.f", "rouge.rouge2.f", "rouge.rougeL.f", "article.rougeLsum.f")


def score_labels(articles: bool) -> tuple[tuple[str, str], ...]:
    """(key, label) of the per-example scores: ROUGE-1/2/L F1, and ROUGE-Lsum for articles."""
    return SCORES + ARTICLE_SCORES if articles else SCORES


def _sections(record: Mapping, key: str) -> list[dict[str, str]]:
    return [{"title": s.title, "text": s.text} for s in record_sections(record, key)]


def example_scores(records: Sequence[Mapping], lang: str | None = None
                   ) -> list[dict[str, float]]:
    """Per record, F1 in [0, 1] of its prediction against its own reference, in ``lang`` or
    else the record's language (:func:`~wikisum.generation.evaluation.record_lang`): ``rouge1``,
    ``rouge2``, ``rougeL`` (:func:`~wikisum.generation.evaluation.rouge_per_example`) and, for
    whole articles, ``rougeLsum`` (:func:`~wikisum.generation.evaluation.rouge_lsum`)."""
    langs = [evaluation.record_lang(r, lang) for r in records]
    per = evaluation.rouge_per_example([r["prediction"] for r in records],
                                       [r["reference"] for r in records], langs)
    out = [{key: scores[key]["f"] for key, _ in SCORES} for scores in per]
    for scores, record, record_lang in zip(out, records, langs, strict=True):
        if is_article(record):
            predicted = record_sections(record, "prediction_sections")
            reference = record_sections(record, "reference_sections")
            scores["rougeLsum"] = evaluation.rouge_lsum(predicted, reference, record_lang)["f"]
    return out


def _id_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def _side(record: Mapping, scores: dict[str, float]) -> dict:
    side = {"text": record["prediction"], "scores": scores}
    if is_article(record):
        side["sections"] = _sections(record, "prediction_sections")
    return side


def _reference(record: Mapping) -> dict:
    reference = {"text": record["reference"]}
    if is_article(record):
        reference["sections"] = _sections(record, "reference_sections")
    return reference


def sort_items(items: Sequence[dict], key: str = DEFAULT_SORT,
               descending: bool = True) -> list[dict]:
    """``items`` (:func:`paired_items`) ordered by their difference B - A in score ``key``,
    largest first (or smallest, ``descending=False``); equal differences keep their order."""
    sign = -1.0 if descending else 1.0
    return sorted(items, key=lambda item: sign * item["diff"][key])


def paired_items(records_a: Sequence[Mapping], records_b: Sequence[Mapping],
                 lang: str | None = None) -> list[dict]:
    """One item per example (``records_a[i]`` and ``records_b[i]`` the same example, as
    ``wikisum evaluate`` pairs them by id), in file order: ``index``, ``id`` (as text),
    ``title``, ``reference`` (``text``, and ``sections`` for articles; ``reference_b`` too
    where B's reference differs), ``a`` and ``b`` (``text``, ``scores``, ``sections``) and
    ``diff``, B's score minus A's for each of :func:`example_scores` (in ``lang``, else each
    record's language), and the language the texts are shown in: ``lang`` (``lang``, else A's
    record's, else B's; None where neither says) and ``dir`` ("rtl" or "ltr",
    :func:`wikisum.core.htmlpage.text_direction`, the texts deciding where no language is
    known)."""
    if len(records_a) != len(records_b):
        raise ValueError(f"{len(records_a)} records in A but {len(records_b)} in B")
    scores_a, scores_b = example_scores(records_a, lang), example_scores(records_b, lang)
    items = []
    for index, (a, b, sa, sb) in enumerate(zip(records_a, records_b, scores_a, scores_b,
                                                strict=True)):
        item = {"index": index, "id": _id_text(a["id"]),
                "title": str(a.get("title") or b.get("title") or ""),
                "reference": _reference(a), "a": _side(a, sa), "b": _side(b, sb),
                "diff": {key: sb[key] - sa[key] for key in sa if key in sb}}
        if not _same_text(a["reference"], b["reference"]):
            item["reference_b"] = _reference(b)
        item.update(_language(a, b, lang))
        items.append(item)
    return items


def _language(a: Mapping, b: Mapping, lang: str | None) -> dict:
    """The ``lang`` and ``dir`` an example's texts are shown in (see :func:`paired_items`)."""
    shown = evaluation.record_lang(a, lang) or evaluation.record_lang(b)
    sample = " ".join(str(r.get(k) or "") for r in (a, b) for k in ("title", "reference",
                                                                      "prediction"))
    return {"lang": shown, "dir": htmlpage.text_direction(shown, sample)}


def page_language(items: Sequence[Mapping]) -> str:
    """The language of a page of ``items``: the one most of them are in (the first of equals,
    in file order); English where none says."""
    counts = Counter(item["lang"] for item in sorted(items, key=lambda i: i["index"])
                     if item.get("lang"))
    return counts.most_common(1)[0][0] if counts else "en"


def _direction(entry: Mapping) -> int:
    names = {f.name for f in dataclasses.fields(stats.PairedResult)}
    return stats.PairedResult(**{k: v for k, v in entry.items() if k in names}).direction


def verdict_rows(comparison: Mapping) -> list[dict]:
    """The paired tests of :func:`~wikisum.generation.evaluation.compare`'s dict as table rows:
    ``label``, the means of A and B as display text (ROUGE and shares in percent), the
    ``verdict`` line, its ``direction`` (+1 B above A, -1 below, 0 no clear difference) and
    whether it is one of the :data:`PRIMARY_TESTS` shown before the others."""
    rows = []
    for key, entry in comparison["differences"].items():
        scale = entry["scale"]
        rows.append({"key": key, "label": entry["label"],
                     "a": f"{entry['mean_a'] * scale:.2f}", "b": f"{entry['mean_b'] * scale:.2f}",
                     "verdict": entry["verdict"], "direction": _direction(entry),
                     "primary": key in PRIMARY_TESTS})
    return rows


def page_data(records_a: Sequence[Mapping], records_b: Sequence[Mapping],
              comparison: Mapping, names: tuple[str, str] = ("A", "B")) -> dict:
    """What the page shows, as JSON: the systems' ``names`` (their files), the verdict rows,
    the test's description, warnings, the per-example score labels and every paired item
    sorted by the ROUGE-L F1 difference B - A, largest first, and the page's language
    (:func:`page_language`)."""
    articles = bool(records_a) and is_article(records_a[0])
    test = comparison["test"]
    items = sort_items(paired_items(records_a, records_b, comparison.get("lang")))
    return {
        "names": {"a": str(names[0]), "b": str(names[1])},
        "examples": len(records_a),
        "articles": articles,
        "scores": [{"key": k, "label": label} for k, label in score_labels(articles)],
        "sort": DEFAULT_SORT,
        "verdicts": verdict_rows(comparison),
        "test": (f"B - A per example, averaged; {test['interval']} interval over "
                 f"{test['resamples']} resamples (seed {test['seed']}); p: {test['p_value']}. "
                 f"Above or below: p < {1 - test['level']:.2g}."),
        "warnings": [str(w) for w in comparison.get("warnings", [])],
        "items": items,
        "lang": page_language(items),
    }


BODY = """\
<header>
<h1>Two systems side by side</h1>
<dl id="systems"></dl>
</header>
<section id="tests">
<h2>Paired tests, B against A</h2>
<label class="note"><input type="checkbox" id="all-tests">
<span id="all-tests-label"></span></label>
<table id="verdicts" class="brief"><thead><tr><th>score</th><th>A</th><th>B</th>
<th>verdict (B - A [interval], p-value)</th></tr></thead><tbody></tbody></table>
<p id="test-note" class="note"></p>
<ul id="warnings"></ul>
</section>
<section id="examples-section">
<h2 id="examples-head">Examples</h2>
<div id="controls">
<label>Sort by <select id="sort-key"></select></label>
<label><select id="sort-order"><option value="desc">largest first</option>
<option value="asc">smallest first</option></select></label>
<label>Find <input type="search" id="find" placeholder="id or title"></label>
<span id="shown" class="note"></span>
</div>
<ol id="examples"></ol>
</section>"""

CSS = """\
body { font: 15px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1400px;
  padding: 0 16px 40px; color: #1d1d1f; }
h1 { font-size: 1.5em; margin: 16px 0 4px; }
h2 { font-size: 1.2em; margin: 18px 0 6px; }
dl#systems { display: grid; grid-template-columns: max-content 1fr; gap: 2px 10px; margin: 0; }
dl#systems dt { font-weight: 600; }
dl#systems dd { margin: 0; font-family: ui-monospace, monospace; overflow-wrap: anywhere; }
table#verdicts { border-collapse: collapse; font-size: 13px; }
#verdicts th, #verdicts td { border-bottom: 1px solid #ddd; padding: 2px 8px; text-align: left; }
#verdicts td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.brief tr.more { display: none; }
tr.up td.verdict { color: #11703a; font-weight: 600; }
tr.down td.verdict { color: #b3261e; font-weight: 600; }
.note { color: #555; font-size: 13px; }
#warnings li { color: #8a5300; }
#controls { display: flex; flex-wrap: wrap; gap: 14px; align-items: center; padding: 6px 0;
  position: sticky; top: 0; background: #fff; border-bottom: 1px solid #ddd; z-index: 1; }
ol#examples { padding-left: 2.2em; }
li.example { margin: 14px 0 22px; }
.example-head { display: flex; flex-wrap: wrap; gap: 4px 12px; align-items: baseline; }
.example-head h3 { margin: 0; font-size: 1.05em; }
.example-id { font-family: ui-monospace, monospace; color: #666; font-size: 12px; }
.deltas { font-size: 13px; font-variant-numeric: tabular-nums; }
.deltas .key { font-weight: 700; }
.pos { color: #11703a; }
.neg { color: #b3261e; }
.block { border: 1px solid #ddd; border-radius: 6px; padding: 6px 10px; margin-top: 6px;
  min-width: 0; }
.reference { background: #f6f6f3; }
.pair { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 10px; }
.block h4 { margin: 0 0 2px; font-size: 13px; text-transform: uppercase; letter-spacing: .04em;
  color: #444; }
.block h5 { margin: 8px 0 0; font-size: 14px; }
.scores { font-size: 12px; color: #444; font-variant-numeric: tabular-nums; margin-bottom: 4px; }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
.empty { color: #888; font-style: italic; }
.show-all { font: 12px system-ui, sans-serif; margin: 0 4px; cursor: pointer; }
@media (max-width: 700px) { .pair { grid-template-columns: minmax(0, 1fr); } }
"""

_SCRIPT = """\
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("page-data").textContent);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
@FILL_TEXT@
  function pct(x) { return (100 * x).toFixed(1); }
  function signed(x) { return (x >= 0 ? "+" : "") + (100 * x).toFixed(1); }

  // A text of the predictions in its language and direction; the page around it is the
  // English interface.
  function inLanguage(e, item) {
    if (item.lang) e.lang = item.lang;
    e.dir = item.dir || "auto";
    return e;
  }
  // A name, path or id: laid out in its own direction, without moving what is around it.
  function isolated(text) {
    const e = fillText(el("bdi", ""), text);
    e.dir = "auto";
    return e;
  }

  const systems = document.getElementById("systems");
  for (const side of ["a", "b"]) {
    systems.appendChild(el("dt", "", side.toUpperCase()));
    systems.appendChild(el("dd", "")).appendChild(isolated(data.names[side]));
  }
  systems.appendChild(el("dt", "", "examples"));
  systems.appendChild(el("dd", "", String(data.examples) + " paired by id"));

  const tbody = document.querySelector("#verdicts tbody");
  for (const row of data.verdicts) {
    const tr = el("tr", (row.direction > 0 ? "up" : row.direction < 0 ? "down" : "")
                  + (row.primary ? "" : " more"));
    tr.appendChild(el("td", "", row.label));
    tr.appendChild(el("td", "num", row.a));
    tr.appendChild(el("td", "num", row.b));
    tr.appendChild(el("td", "verdict", row.verdict));
    tbody.appendChild(tr);
  }
  const allTests = document.getElementById("all-tests");
  document.getElementById("all-tests-label").textContent =
    "show all " + data.verdicts.length + " tests, not only the F1";
  allTests.addEventListener("change", () => {
    document.getElementById("verdicts").classList.toggle("brief", !allTests.checked);
  });
  document.getElementById("test-note").textContent = data.test;
  const warnings = document.getElementById("warnings");
  for (const w of data.warnings) warnings.appendChild(el("li", "", "warning: " + w));

  const sortKey = document.getElementById("sort-key");
  for (const s of data.scores) {
    const option = el("option", "", s.label + " difference, B - A");
    option.value = "diff:" + s.key;
    sortKey.appendChild(option);
  }
  for (const [value, text] of [["id", "id"], ["file", "file order (A)"]]) {
    const option = el("option", "", text);
    option.value = value;
    sortKey.appendChild(option);
  }
  sortKey.value = "diff:" + data.sort;
  const sortOrder = document.getElementById("sort-order");
  const find = document.getElementById("find");

  function content(box, part, item) {
    if (part.sections) {
      for (const s of part.sections) {
        if (s.title) box.appendChild(inLanguage(fillText(el("h5", ""), s.title), item));
        if (s.text) box.appendChild(inLanguage(fillText(el("p", "text"), s.text), item));
      }
      if (!part.sections.length) box.appendChild(el("p", "text empty", "(no sections)"));
    } else if (part.text) {
      box.appendChild(inLanguage(fillText(el("p", "text"), part.text), item));
    } else {
      box.appendChild(el("p", "text empty", "(empty)"));
    }
  }

  function block(cls, heading, part, item) {
    const box = el("div", "block " + cls);
    box.appendChild(el("h4", "", heading));
    if (part.scores) {
      box.appendChild(el("div", "scores", data.scores.map(
        s => s.label.replace(" F1", "") + " " + pct(part.scores[s.key])).join("  \\u00b7  ")));
    }
    content(box, part, item);
    return box;
  }

  function example(item, key) {
    const li = el("li", "example");
    li.dataset.id = item.id;
    const head = el("div", "example-head");
    head.appendChild(item.title ? inLanguage(fillText(el("h3", "title"), item.title), item)
                     : el("h3", "title", "(no title)"));
    const id = el("span", "example-id", "id ");
    id.appendChild(isolated(item.id));
    head.appendChild(id);
    const deltas = el("span", "deltas");
    deltas.appendChild(document.createTextNode("B - A: "));
    data.scores.forEach((s, i) => {
      const d = item.diff[s.key];
      const span = el("span", (d > 0 ? "pos" : d < 0 ? "neg" : "") + (s.key === key ? " key" : ""),
                      s.label.replace(" F1", "") + " " + signed(d));
      span.dataset.key = s.key;
      if (i) deltas.appendChild(document.createTextNode(", "));
      deltas.appendChild(span);
    });
    head.appendChild(deltas);
    li.appendChild(head);
    li.appendChild(block("reference", "Reference", item.reference, item));
    if (item.reference_b) {
      li.appendChild(block("reference", "Reference in B (differs from A's)", item.reference_b,
                           item));
    }
    const pair = el("div", "pair");
    pair.appendChild(block("side side-a", "A", item.a, item));
    pair.appendChild(block("side side-b", "B", item.b, item));
    li.appendChild(pair);
    return li;
  }

  const collator = new Intl.Collator(undefined, {numeric: true});
  function ordered() {
    const items = data.items.slice();
    const how = sortKey.value;
    const sign = sortOrder.value === "asc" ? 1 : -1;
    if (how.startsWith("diff:")) {
      const key = how.slice(5);
      items.sort((x, y) => sign * (x.diff[key] - y.diff[key]) || x.index - y.index);
    } else if (how === "id") {
      items.sort((x, y) => sign * collator.compare(x.id, y.id) || x.index - y.index);
    } else {
      items.sort((x, y) => sign * (x.index - y.index));
    }
    return items;
  }

  const list = document.getElementById("examples");
  function show() {
    const needle = find.value.trim().toLowerCase();
    const key = sortKey.value.startsWith("diff:") ? sortKey.value.slice(5) : "";
    const items = ordered().filter(item => !needle || item.id.toLowerCase().includes(needle)
                                   || item.title.toLowerCase().includes(needle));
    list.replaceChildren(...items.map(item => example(item, key)));
    document.getElementById("shown").textContent =
      items.length + " of " + data.items.length + " examples";
  }
  sortKey.addEventListener("change", () => {
    // a difference reads best largest first, ids and the file's order smallest first
    sortOrder.value = sortKey.value.startsWith("diff:") ? "desc" : "asc";
    show();
  });
  sortOrder.addEventListener("change", show);
  find.addEventListener("input", show);
  show();
})();
"""


SCRIPT = _SCRIPT.replace("@FILL_TEXT@\n", htmlpage.FILL_TEXT_JS)


def render(data: Mapping) -> str:
    """The whole page of :func:`page_data`'s dict. Its ``<title>`` names the two files, each
    isolated (:func:`wikisum.core.htmlpage.isolate`) so that neither reorders the other."""
    names = data["names"]
    title = (f"{htmlpage.isolate(Path(names['b']).name)} against "
             f"{htmlpage.isolate(Path(names['a']).name)}")
    return htmlpage.page(title, BODY, script=SCRIPT, css=CSS, data=data,
                         lang=data.get("lang") or "en")


def write_page(out_dir: str | os.PathLike, records_a: Sequence[Mapping],
               records_b: Sequence[Mapping], comparison: Mapping,
               names: tuple[str, str] = ("A", "B")) -> Path:
    """Write :func:`render` of :func:`page_data` to ``out_dir/index.html`` (whole or not at all;
    the folder is made if missing) and return its path."""
    html = render(page_data(records_a, records_b, comparison, names))
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / PAGE
    tmp = folder / f".{PAGE}.{os.getpid()}.tmp"
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, target)
    return target
