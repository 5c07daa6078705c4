"""The report's tables, each ``(caption, header, rows)``, and their Markdown and HTML renderings.

A table is strings only, so that Markdown and HTML render the same content; a cell can hold
any text (an extractor's or a corpus's name, a path), shown as text in both (:func:`md_cell`,
:func:`html_table`).

Pure functions of the metrics dict written by :mod:`wikisum.pipeline.report` (and of the
comparison of two builds, :func:`wikisum.pipeline.report_compare.compare`).
"""

from __future__ import annotations

import re

from wikisum.core import htmlpage

ROUGE_LABELS = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L"}
STAT_LABELS = {"lead_words": "Lead size", "article_words": "Article size",
               "sections": "# sections", "citations": "# citations",
               "citation_words": "Citation size", "search_results": "# search results",
               "search_words": "Search-result size"}


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def signed(x: float) -> str:
    return f"{100 * x:+.1f}"


def with_ci(m: dict) -> str:
    return f"{pct(m['mean'])} [{pct(m['low'])}, {pct(m['high'])}]"


def rouge_table(metrics: dict, rtype: str) -> tuple[str, list[str], list[list[str]]]:
    """One ROUGE type: extractor rows x corpus columns, mean [95% CI]."""
    header = ["extractor"] + metrics["corpora"]
    rows = [[ext] + [with_ci(metrics["extractive_rouge"][ext][c][rtype])
                     for c in metrics["corpora"]] for ext in metrics["extractors"]]
    note = " (what the recommendation ranks by)" if rtype == "rougeL" else ""
    return (f"{ROUGE_LABELS[rtype]} F1 (x100, mean [95% CI]){note}", header, rows)


def difference_table(metrics: dict) -> tuple[str, list[str], list[list[str]]] | None:
    """ROUGE-L of every usable extractor minus the best one's, per corpus, paired bootstrap."""
    per_corpus = metrics["recommendation"]["per_corpus"]
    if not any(entry.get("ahead_of") for entry in per_corpus.values()):
        return None
    header = ["extractor"] + metrics["corpora"]
    rows = []
    for ext in metrics["extractors"]:
        if ext == "cheating":
            continue
        row = [ext]
        for corpus in metrics["corpora"]:
            entry = per_corpus[corpus]
            d = entry.get("ahead_of", {}).get(ext)
            if ext == entry["best"]:
                row.append("best")
            elif d is None or d["low"] is None:
                row.append("-")
            else:
                flipped = {"mean": -d["mean"], "low": -d["high"], "high": -d["low"]}
                row.append(f"{signed(flipped['mean'])} [{signed(flipped['low'])}, "
                           f"{signed(flipped['high'])}]" + (" *" if d["clear"] else ""))
        rows.append(row)
    return ("ROUGE-L minus the best usable extractor's (x100, 95% interval of the paired "
            "bootstrap of the per-article differences; *: clearly behind)", header, rows)


def recall_table(metrics: dict, corpus: str) -> tuple[str, list[str], list[list[str]]]:
    header = ["extractor"] + [f"L={n}" for n in metrics["lengths"]]
    rows = [[ext] + [pct(p["mean"]) for p in metrics["input_recall"][ext][corpus]]
            for ext in metrics["extractors"]]
    return (f"ROUGE-1 recall (x100) of the lead by the first L tokens, {corpus} corpus",
            header, rows)


def stats_table(metrics: dict) -> tuple[str, list[str], list[list[str]]] | None:
    stats = metrics.get("dataset_statistics")
    if not stats:
        return None
    header = ["percentile"] + [str(p) for p in stats["percentiles"]]
    rows = []
    for name, label in STAT_LABELS.items():
        values = stats["words"].get(name)
        rows.append([label] + ([f"{v:g}" for v in values] if values else ["-"] * len(header[1:])))
    return ("Dataset statistics (words; counts per article)", header, rows)


def totals_table(metrics: dict) -> tuple[str, list[str], list[list[str]]] | None:
    stats = metrics.get("dataset_statistics")
    if not stats:
        return None
    t = stats["totals"]

    def cover(x):
        return "-" if x is None else f"{100 * x:.1f}%"

    rows = [["articles", str(t.get("articles", 0))],
            ["citations found / listed", f"{t.get('citations_found', 0)} / "
             f"{t.get('citations_listed', 0)} ({cover(stats['citation_coverage'])})"],
            ["search results found / listed", f"{t.get('search_found', 0)} / "
             f"{t.get('search_listed', 0)} ({cover(stats['search_coverage'])})"],
            ["clones removed", str(t.get("clones_removed", 0))],
            ["self pages removed", str(t.get("self_removed", 0))],
            ["references in another language removed", str(t.get("other_language_removed", 0))],
            ["references repeating earlier ones removed",
             str(t.get("duplicate_references_removed", 0))],
            ["repeated paragraphs removed", str(t.get("duplicate_paragraphs_removed", 0))]]
    return "Coverage and filtering", ["", "total"], rows


def drops_table(metrics: dict) -> tuple[str, list[str], list[list[str]]] | None:
    """Every drop reason of the ingest run, per stage (its summary.json)."""
    stats = metrics.get("dataset_statistics") or {}
    drops = stats.get("ingest_drops")
    if not drops:
        return None
    rows = []
    for stage, counts in drops.items():
        total = counts.get("in", 0)
        for reason, n in counts.items():
            if reason != "in":
                share = f" ({100 * n / total:.1f}%)" if total else ""
                rows.append([stage, reason, f"{n}{share}"])
    return ("What the ingest run dropped, by stage and reason (all articles, all splits)",
            ["stage", "reason", "dropped (share of the stage's input)"], rows)


def learned_table(metrics: dict) -> tuple[str, list[str], list[list[str]]] | None:
    """The learned extractor beside tf-idf and cheating: extractor rows, per corpus its ROUGE-L
    and its input recall at the smallest L (where the ranking matters most)."""
    comp = metrics.get("learned_comparison")
    if not comp:
        return None
    lengths = metrics["lengths"]
    header = ["extractor"]
    for corpus in metrics["corpora"]:
        header += [f"{corpus} ROUGE-L", f"{corpus} recall L={lengths[0]}"]
    rows = []
    for ext, by_corpus in comp.items():
        row = [ext]
        for corpus in metrics["corpora"]:
            entry = by_corpus[corpus]
            row += [pct(entry["rouge"]["rougeL"]["mean"]), pct(entry["recall"][0]["mean"])]
        rows.append(row)
    return ("The learned extractor beside tf-idf and the cheating extractor (x100, means)",
            header, rows)


def provenance_table(metrics: dict) -> tuple[str, list[str], list[list[str]]]:
    prov = metrics.get("provenance") or {}
    options = prov.get("options") or {}
    rows = [["wikisum version", str(prov.get("wikisum_version", "unknown"))],
            ["created (UTC)", str(prov.get("created", "unknown"))],
            ["data", str(prov.get("data") or metrics["data"])],
            ["ingest output it was ranked from", str(metrics.get("source") or "unknown")]]
    rows += [[f"option {name}", ",".join(map(str, v)) if isinstance(v, list) else str(v)]
             for name, v in options.items()]
    if metrics.get("dataset_rows"):
        rows.append(["articles per split", ", ".join(f"{s} {n}" for s, n in
                                                     metrics["dataset_rows"].items())])
    imported = metrics.get("imported")
    if imported:
        rows.append(["imported from", f"{imported.get('format')}: "
                                      f"{', '.join(imported.get('sources') or [])}"])
    for name, why in (metrics.get("extractors_unavailable") or {}).items():
        rows.append([f"extractor {name}", f"not computed: {why}"])
    if metrics.get("corpora_note"):
        rows.append(["corpora", metrics["corpora_note"]])
    b = metrics["bootstrap"]
    rows.append(["bootstrap", f"{b['samples']} Poisson resamples, seed {b['seed']}, "
                              "the same per-article weights for every metric (paired)"])
    return "What made this report", ["", ""], rows


def tables(metrics: dict) -> list[tuple[str, tuple | None]]:
    """(section, table) in report order; a None table is explained in the section text."""
    out = [("rouge", rouge_table(metrics, "rougeL"))]
    diffs = difference_table(metrics)
    if diffs:
        out.append(("rouge", diffs))
    out += [("rouge", rouge_table(metrics, t)) for t in metrics["rouge_types"] if t != "rougeL"]
    out += [("recall", recall_table(metrics, c)) for c in metrics["corpora"]]
    out += [("stats", stats_table(metrics)), ("totals", totals_table(metrics)),
            ("drops", drops_table(metrics)), ("learned", learned_table(metrics))]
    return out


NUMERIC = re.compile(r"^([-+]?\d|-$|best$)")  # right-aligned cells
_LINE_BREAKS = re.compile(r"[\r\n\v\f\x1c-\x1e\x85\u2028\u2029]+")
_MD_PUNCTUATION = re.compile(r"([\\`*_\[\]|~])")


def md_text(text: str) -> str:
    """``text`` as Markdown inline text that a renderer shows as written: line breaks as
    spaces (nothing ends a heading, a quote or a table row), HTML's ``&``, ``<`` and ``>`` as
    entities (no tag, comment or autolink), Markdown's punctuation (``\\ ` * _ [ ] | ~``)
    backslash-escaped (no emphasis, code, link or cell), and a lone surrogate as U+FFFD."""
    text = _LINE_BREAKS.sub(" ", htmlpage.text_of(text))
    text = _MD_PUNCTUATION.sub(r"\\\1", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def md_cell(text: str) -> str:
    """A table cell's text in Markdown: a figure (:data:`NUMERIC`) with only ``|`` and line
    breaks escaped, so that it reads as written; any other text as :func:`md_text`."""
    if NUMERIC.match(text):
        return _LINE_BREAKS.sub(" ", text).replace("|", "\\|")
    return md_text(text)


def md_table(table) -> str:
    caption, header, rows = table
    lines = [f"*{caption}*", "", "| " + " | ".join(map(md_cell, header)) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(map(md_cell, r)) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def html_table(table) -> str:
    caption, header, rows = table
    head = "".join(f"<th>{htmlpage.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(
        f"<td>{htmlpage.escape(c)}</td>" if NUMERIC.match(c) else
        f"<td class='t'>{htmlpage.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return (f"<p class='caption'>{htmlpage.escape(caption)}</p><div class='scroll'><table>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def _change(d: dict) -> str:
    """ "51.7 -> 53.0 (+1.3*)": A, B, the difference; * when its interval excludes 0."""
    return f"{pct(d['a'])} -> {pct(d['b'])} ({signed(d['difference'])}{'*' if d['clear'] else ''})"


def _count(x) -> str:
    return "-" if x is None else str(x)


def compare_tables(comp: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """The comparison of two builds (:func:`wikisum.pipeline.report_compare.compare`) as tables."""
    out = []
    rows = []
    for side in ("a", "b"):
        s, prov = comp[side], comp[side].get("provenance") or {}
        rec = s["recommendation"]
        rows.append([side.upper(), s["data"], s["split"], rec["extractor"], rec["corpus"],
                     _count(rec["length"]), str(prov.get("wikisum_version", "-")),
                     str(prov.get("created", "-"))])
    out.append(("The two builds and what each report recommends",
                ["", "data", "split", "extractor", "corpus", "L", "wikisum", "created (UTC)"],
                rows))
    for corpus in comp["corpora"]:
        out.append((f"Input recall (x100, A -> B, difference; *: its 95% interval excludes 0), "
                    f"{corpus} corpus", ["extractor"] + [f"L={n}" for n in comp["lengths"]],
                    [[e] + [_change(d) for d in comp["input_recall"][e][corpus]]
                     for e in comp["extractors"]]))
    out.append(("Extractive ROUGE-L (x100, A -> B, difference)", ["extractor"] + comp["corpora"],
                [[e] + [_change(comp["rougeL"][e][c]) for c in comp["corpora"]]
                 for e in comp["extractors"]]))
    rows = [[name, _count(a), _count(b), "-" if a is None or b is None else f"{b - a:+d}"]
            for name, (a, b) in comp["counts"].items()]
    rows += [[f"{name} coverage", "-" if a is None else f"{100 * a:.1f}%",
              "-" if b is None else f"{100 * b:.1f}%",
              "-" if a is None or b is None else signed(b - a)]
             for name, (a, b) in comp["coverage"].items()]
    out.append(("Counts (the scored articles; coverage in points)", ["", "A", "B", "B - A"], rows))
    rows = [[stage, reason, str(a), str(b), f"{b - a:+d}"]
            for stage, reasons in comp["ingest_drops"].items()
            for reason, (a, b) in reasons.items() if a != b]
    if rows:
        out.append(("What the ingest runs dropped, where the counts differ (\"in\": the stage's "
                    "input)", ["stage", "reason", "A", "B", "B - A"], rows))
    missing = [f"only in {side.upper()}: {key} {', '.join(map(str, values))}"
               for side in ("a", "b") for key, values in comp[f"only_in_{side}"].items()
               if values]
    if missing:
        out.append(("Not compared", ["what"], [[m] for m in missing]))
    return out

