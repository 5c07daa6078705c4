"""The report of a human evaluation's scores (:func:`wikisum.generation.humanscore.score_answers`'s
result): ``report.html`` and ``report.md`` with the same tables, ``scores.json``, and the short
summary ``wikisum human-eval score`` prints."""

from __future__ import annotations

import json
import re
from pathlib import Path

from wikisum.core import htmlpage
from wikisum.core.htmlpage import escape, page
from wikisum.generation.humanstats import LOOSE_P, STRICT_P

DIMENSION_LABELS = {
    "grammaticality": "Grammaticality",
    "non_redundancy": "Non-redundancy",
    "referential_clarity": "Referential clarity",
    "focus": "Focus",
    "structure_coherence": "Structure and coherence",
}


def _label(dimension: str) -> str:
    return DIMENSION_LABELS.get(dimension, dimension.replace("_", " ").capitalize())


def _num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def format_p(p: float | None) -> str:
    if p is None:
        return "-"
    if p < 1e-16:
        return "< 1e-16"
    return f"{p:.1e}" if p < 0.001 else f"{p:.3f}"


def _n_range(values: list[int]) -> str:
    low, high = min(values), max(values)
    return str(low) if low == high else f"{low}-{high}"


# A table is (caption, header, rows, text columns): the Markdown and HTML show the same cells.


def table5(result: dict) -> tuple | None:
    quality = result["quality"]
    if not quality:
        return None
    header = ["system"] + [_label(d) for d in result["dimensions"]] + ["ratings (n)", "outputs"]
    rows = []
    for system in result["systems"]:
        cells = quality["systems"][system]
        row = [system]
        for d in result["dimensions"]:
            c = cells[d]
            mark = quality["welch"].get(system, {}).get(d, {}).get("stars", "")
            interval = (f" [{_num(c['low'])}, {_num(c['high'])}]" if c["low"] is not None
                        else "")
            row.append(f"{_num(c['mean'])}{interval}{mark}" if c["mean"] is not None else "-")
        row += [_n_range([cells[d]["n"] for d in result["dimensions"]]),
                _n_range([cells[d]["items"] for d in result["dimensions"]])]
        rows.append(row)
    return (f"Mean rating (1-5) [95% t interval]; ** p < {STRICT_P:g}, * p < {LOOSE_P:g} in "
            f"Welch's t-test against {result['against']}", header, rows, {0})


def _welch_cell(w: dict) -> str:
    if w["t"] is None:
        return w["reason"]
    # two lines in HTML (a cell with a line break wraps there), one in Markdown
    return (f"{w['difference']:+.2f}, p {format_p(w['p'])}{w['stars']}\n"
            f"(t {w['t']:.2f}, df {w['df']:.1f})")


def welch_table(result: dict) -> tuple | None:
    quality = result["quality"]
    if not quality or not quality["welch"]:
        return None
    header = ["system"] + [_label(d) for d in result["dimensions"]]
    rows = [[system] + [_welch_cell(by_dimension[d]) for d in result["dimensions"]]
            for system, by_dimension in quality["welch"].items()]
    return (f"Welch's two-sample t-test of each system against {result['against']}: "
            "difference of the means, t, Welch-Satterthwaite df, two-sided p", header, rows,
            {0})


def table6(result: dict) -> tuple | None:
    preference = result["preference"]
    if not preference:
        return None
    header = ["pair (X vs Y)", "prefer X", "prefer Y", "no preference", "sign test p", "note"]
    rows = [[r["pair"], str(r["prefer_x"]), str(r["prefer_y"]), str(r["no_preference"]),
             format_p(r["p"]) + r["stars"], r["reason"] or ""] for r in preference["pairs"]]
    return ("Side-by-side preference: judgments per pair; two-sided exact sign test on the "
            "judgments with a preference (ties apart)", header, rows, {0, 5})


def agreement_table(result: dict) -> tuple | None:
    agree = result["agreement"]
    rows = []
    for d, entry in (agree["quality"] or {}).items():
        rows.append([_label(d), entry])
    if agree["preference"]:
        rows.append(["Preference (A / B / none)", agree["preference"]])
    if not rows:
        return None
    header = ["question", "metric", "alpha", "items (2+ annotators)", "answers", "annotators",
              "note"]
    return ("Krippendorff's alpha over the items that two or more annotators answered",
            header, [[name, e["metric"], _num(e["alpha"], 3), str(e["items"]), str(e["values"]),
                     str(e["annotators"]), e["reason"] or ""] for name, e in rows], {0, 1, 6})


def correlation_table(result: dict) -> tuple | None:
    c = result["rouge_correlation"]
    if c is None:
        return None
    share = "-" if c["share"] is None else f"{100 * c['share']:.1f}%"
    rows = [["judgments with a preference (ties excluded)", str(c["n"])],
            ["ties (no preference), excluded", str(c["ties_excluded"])],
            ["point-biserial r (ROUGE-L(a) - ROUGE-L(b) vs prefer a / b)",
             _num(c["r"], 3) + (f" ({c['reason']})" if c["reason"] else "")],
            ["p of r (two-sided)", format_p(c["p"])],
            ["preferred output has the higher ROUGE-L",
             f"{c['higher_rouge_preferred']} of "
             f"{c['higher_rouge_preferred'] + c['lower_rouge_preferred']} ({share})"],
            ["sign test p of that share against 1/2", format_p(c["share_p"])],
            ["judgments of outputs with equal ROUGE-L", str(c["equal_rouge"])]]
    return ("Do the judgments follow ROUGE-L?", ["", "value"], rows, {0})


def annotators_table(result: dict) -> tuple:
    rows = [[a["name"], a["file"], a["exported"] or "-", str(a["quality_ratings"]),
             str(a["preference_judgments"])] for a in result["annotators"]]
    return ("Annotators (one answers file each)",
            ["annotator", "file", "exported", "quality ratings", "preference judgments"], rows,
            {0, 1, 2})


def skipped_table(result: dict) -> tuple | None:
    if not result["skipped"]:
        return None
    rows = []
    for reason, entry in result["skipped"].items():
        extra = f"; {entry['missing']} ratings missing" if entry.get("missing") else ""
        files = ", ".join(f"{f} ({n})" for f, n in entry["files"].items())
        examples = ", ".join(map(str, entry["examples"]))
        rows.append([reason, str(entry["count"]), entry["text"] + extra, files, examples])
    return ("What was skipped or incomplete, and why", ["reason", "count", "what", "files",
                                                        "examples"], rows, {0, 2, 3, 4})


def _method_lines(result: dict) -> list[str]:
    return [
        "Quality: every rating is one observation (ratings of all annotators pooled per "
        "system and question, as DUC pools its assessors' ratings); n counts ratings, "
        "outputs the distinct outputs rated. Interval: mean +- t(0.975, n-1) s / sqrt(n).",
        f"Welch's two-sample t-test against {result['against']} per question (unequal "
        "variances, Welch-Satterthwaite df, two-sided); the paper reports significance at "
        f"p = {STRICT_P:g}.",
        "Preference: A / B mapped to systems through the key; the exact sign test is "
        "binomial with p = 1/2 on the judgments with a preference; ties are reported apart.",
        "Agreement: Krippendorff's alpha from the coincidence matrix (Krippendorff 2011), "
        "ordinal for the 1-5 ratings, nominal for the preference choice.",
        "ROUGE-L: per judgment with a preference, x = ROUGE-L(a) - ROUGE-L(b) (from the key), "
        "y = +1 prefer a, -1 prefer b; point-biserial r, and the share of judgments whose "
        "preferred output has the higher ROUGE-L.",
    ]


SECTIONS = (
    ("Linguistic quality (Table 5)", (table5, welch_table),
     "This page asked no quality questions."),
    ("Preference (Table 6)", (table6,), "This page asked no preference questions."),
    ("Agreement between annotators", (agreement_table,), "No questions to agree on."),
    ("Preference and ROUGE-L", (correlation_table,), "This page asked no preference questions."),
    ("Skipped answers", (skipped_table,), "Nothing was skipped: every answer was used."),
    ("Annotators", (annotators_table,), ""),
)
TITLE = "Human evaluation scores"


def _subtitle(result: dict) -> str:
    names = ", ".join(result["systems"])
    return (f"page {result['page_id']} · {result['kind']} · systems {names} · "
            f"{len(result['annotators'])} annotator(s) · key {result['key']}")


def _md_cell(text: str) -> str:
    """Text as one Markdown table cell: pipes, asterisks (the significance marks) and anything
    that could open an HTML tag escaped, line breaks as spaces."""
    text = text.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*")
    return re.sub(r"<(?=[A-Za-z/!?])", "&lt;", text).replace("\n", " ")


def _md_table(table: tuple) -> str:
    caption, header, rows, _ = table
    lines = [f"*{_md_cell(caption)}*", "", "| " + " | ".join(map(_md_cell, header)) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(_md_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def to_markdown(result: dict) -> str:
    out = [f"# {TITLE}", "", _md_cell(_subtitle(result)), ""]
    for title, makers, missing in SECTIONS:
        out += [f"## {title}", ""]
        tables = [t for t in (make(result) for make in makers) if t]
        out += [_md_table(t) for t in tables] if tables else [missing, ""]
    out += ["## Method", ""] + [f"- {_md_cell(line)}" for line in _method_lines(result)] + [""]
    return "\n".join(out)


NUMERIC = re.compile(r"^([-+]?\d|-$|<)")

CSS = htmlpage.REPORT_CSS + """th.t,td.t{text-align:left}
td.w{white-space:normal;min-width:16em}
td.lines{white-space:pre-line}
"""


WRAPPED = {"note", "what", "files", "examples"}  # long text: wraps, the others do not


def _html_table(table: tuple) -> str:
    caption, header, rows, text_columns = table

    def kind(i: int, cell: str) -> str:
        if header[i] in WRAPPED:
            return " class='t w'"
        if "\n" in cell:
            return " class='lines'"
        return " class='t'" if i in text_columns or not NUMERIC.match(cell) else ""

    left = " class='t'"
    head = "".join(f"<th{left if i in text_columns else ''}>{escape(h)}</th>"
                   for i, h in enumerate(header))
    body = "".join("<tr>" + "".join(f"<td{kind(i, c)}>{escape(c)}</td>"
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return (f"<p class='caption'>{escape(caption)}</p><div class='scroll'><table>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def to_html(result: dict) -> str:
    parts = [f"<h1>{escape(TITLE)}</h1>", f"<p class='sub'>{escape(_subtitle(result))}</p>"]
    for title, makers, missing in SECTIONS:
        parts.append(f"<h2>{escape(title)}</h2>")
        tables = [t for t in (make(result) for make in makers) if t]
        parts += [_html_table(t) for t in tables] if tables else [
            f"<p class='note'>{escape(missing)}</p>"]
    parts += ["<h2>Method</h2><ul>"] + [f"<li>{escape(line)}</li>"
                                        for line in _method_lines(result)] + ["</ul>"]
    return page(TITLE, "<main>" + "".join(parts) + "</main>", css=CSS)


def write_report(result: dict, out: str) -> dict[str, str]:
    """``out``/report.html, report.md and scores.json (the result); their paths by kind.

    Each file is written whole under a temporary name and renamed into place. scores.json is
    the completion record: an earlier one goes first and the new one comes last, so that a run
    killed part-way over an earlier report never leaves that record beside the new pages."""
    from wikisum.core import shards

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"html": folder / "report.html", "markdown": folder / "report.md",
             "json": folder / "scores.json"}
    paths["json"].unlink(missing_ok=True)
    shards.write_text(str(paths["html"]), to_html(result))
    shards.write_text(str(paths["markdown"]), to_markdown(result))
    shards.write_text(str(paths["json"]), json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    return {kind: str(path) for kind, path in paths.items()}


# ---------------------------------------------------------------------------------- console


def format_summary(result: dict) -> str:
    """A short plain-text summary: Table 5's means (with the Welch marks), Table 6's counts,
    alpha, the ROUGE-L link and the skip counts."""
    lines = [f"{len(result['annotators'])} annotator(s): "
             + ", ".join(a["name"] for a in result["annotators"])]
    quality = result["quality"]
    if quality:
        dims = result["dimensions"]
        width = max(len(s) for s in result["systems"]) + 2
        lines.append("")
        lines.append(f"Quality: mean rating (1-5); ** p < {STRICT_P:g}, * p < {LOOSE_P:g} "
                     f"(Welch) vs {result['against']}")
        lines.append("system".ljust(width) + "".join(_short(d).rjust(9) for d in dims)
                     + "n".rjust(8))
        for system in result["systems"]:
            cells = quality["systems"][system]
            row = system.ljust(width)
            for d in dims:
                mark = quality["welch"].get(system, {}).get(d, {}).get("stars", "")
                row += (_num(cells[d]["mean"]) + mark).rjust(9)
            lines.append(row + _n_range([cells[d]["n"] for d in dims]).rjust(8))
    if result["preference"]:
        lines += ["", "Preference: prefer X / prefer Y / no preference, sign test p"]
        for r in result["preference"]["pairs"]:
            lines.append(f"  {r['pair']}: {r['prefer_x']} / {r['prefer_y']} / "
                         f"{r['no_preference']}, p = {format_p(r['p'])}{r['stars']}")
    alphas = [(_label(d), e) for d, e in (result["agreement"]["quality"] or {}).items()]
    if result["agreement"]["preference"]:
        alphas.append(("Preference", result["agreement"]["preference"]))
    if alphas:
        lines += ["", "Krippendorff's alpha: " + ", ".join(
            f"{name} {_num(e['alpha'], 3)}" for name, e in alphas)]
    c = result["rouge_correlation"]
    if c:
        share = "-" if c["share"] is None else f"{100 * c['share']:.1f}%"
        lines.append(f"Preference vs ROUGE-L difference: r = {_num(c['r'], 3)} (n = {c['n']}), "
                     f"higher ROUGE-L preferred in {share}")
    if result["skipped"]:
        lines += ["", "Skipped: " + ", ".join(f"{reason} {entry['count']}"
                                              for reason, entry in result["skipped"].items())]
    return "\n".join(lines)


SHORT = {"grammaticality": "Gram.", "non_redundancy": "Non-red.",
         "referential_clarity": "Ref.", "focus": "Focus", "structure_coherence": "Struct."}


def _short(dimension: str) -> str:
    return SHORT.get(dimension, dimension[:8])
