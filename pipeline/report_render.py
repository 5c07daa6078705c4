"""metrics.json -> report.md, report.html (self-contained, PNG plots embedded) and the plots.

Pure functions of the metrics dict written by :mod:`wikisum.pipeline.report`; nothing here reads
data.
"""

from __future__ import annotations

import base64
import html
import io
import re

import matplotlib

matplotlib.use("Agg")  # no display: render to PNG bytes
import matplotlib.pyplot as plt  # noqa: E402

ROUGE_LABELS = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L"}
STAT_LABELS = {"lead_words": "Lead size", "citations": "# citations",
               "citation_words": "Citation size", "search_results": "# search results",
               "search_words": "Search-result size"}
COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3"]


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def with_ci(m: dict) -> str:
    return f"{pct(m['mean'])} [{pct(m['low'])}, {pct(m['high'])}]"


# ---------------------------------------------------------------------------------- plots


def rouge_figure(metrics: dict) -> bytes:
    """Extractive ROUGE F1 by extractor x corpus, with 95% CI error bars (paper, Figure 2)."""
    extractors, corpora = metrics["extractors"], metrics["corpora"]
    fig, axes = plt.subplots(1, len(metrics["rouge_types"]), figsize=(4.2 * 3, 3.6), sharey=False)
    width = 0.8 / len(extractors)
    for ax, rtype in zip(axes, metrics["rouge_types"], strict=True):
        for k, ext in enumerate(extractors):
            values = [metrics["extractive_rouge"][ext][c][rtype] for c in corpora]
            means = [100 * v["mean"] for v in values]
            err = [[100 * (v["mean"] - v["low"]) for v in values],
                   [100 * (v["high"] - v["mean"]) for v in values]]
            xs = [i + (k - (len(extractors) - 1) / 2) * width for i in range(len(corpora))]
            ax.bar(xs, means, width, yerr=err, capsize=2, label=ext,
                   color=COLORS[k % len(COLORS)], hatch="//" if ext == "cheating" else None,
                   edgecolor="white" if ext != "cheating" else "#333333", linewidth=0.5)
        ax.set_xticks(range(len(corpora)), corpora)
        ax.set_title(f"{ROUGE_LABELS[rtype]} F1")
        ax.grid(axis="y", alpha=0.3)
        ax.set_axisbelow(True)
    axes[0].set_ylabel("score (x100)")
    axes[-1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(f"Extractive ROUGE on {metrics['articles']} {metrics['split']} articles "
                 "(95% bootstrap CI)", fontsize=11)
    fig.tight_layout()
    return _png(fig)


def recall_figure(metrics: dict) -> bytes:
    """ROUGE-1 recall of the lead by the first L tokens of the input, per corpus."""
    corpora, extractors = metrics["corpora"], metrics["extractors"]
    fig, axes = plt.subplots(1, len(corpora), figsize=(4.2 * len(corpora), 3.6), sharey=True)
    if len(corpora) == 1:
        axes = [axes]
    for ax, corpus in zip(axes, corpora, strict=True):
        for k, ext in enumerate(extractors):
            curve = metrics["input_recall"][ext][corpus]
            xs = [p["length"] for p in curve]
            ax.plot(xs, [100 * p["mean"] for p in curve], marker="o", markersize=3,
                    color=COLORS[k % len(COLORS)], label=ext,
                    linestyle="--" if ext == "cheating" else "-")
            ax.fill_between(xs, [100 * p["low"] for p in curve],
                            [100 * p["high"] for p in curve], color=COLORS[k % len(COLORS)],
                            alpha=0.12, linewidth=0)
        ax.set_xscale("log")
        ax.set_xlabel("L (subword tokens of input)")
        ax.set_title(corpus)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("ROUGE-1 recall of the lead (x100)")
    axes[-1].legend(fontsize=8, loc="lower right")
    fig.suptitle("Input recall vs L", fontsize=11)
    fig.tight_layout()
    return _png(fig)


def figures(metrics: dict) -> dict[str, bytes]:
    return {"extractive_rouge.png": rouge_figure(metrics),
            "input_recall.png": recall_figure(metrics)}


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110)
    plt.close(fig)
    return buf.getvalue()


# ---------------------------------------------------------------------------------- tables
# Each table is (caption, header, rows) so that Markdown and HTML render the same content.


def rouge_table(metrics: dict) -> tuple[str, list[str], list[list[str]]]:
    header = ["extractor", "corpus"] + [ROUGE_LABELS[t] for t in metrics["rouge_types"]]
    rows = []
    for ext in metrics["extractors"]:
        for corpus in metrics["corpora"]:
            scores = metrics["extractive_rouge"][ext][corpus]
            rows.append([ext, corpus] + [with_ci(scores[t]) for t in metrics["rouge_types"]])
    return ("Extractive ROUGE F1 (x100, mean [95% CI]): ranked paragraphs cut to the lead's "
            "length", header, rows)


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
    comp = metrics.get("learned_comparison")
    if not comp:
        return None
    lengths = metrics["lengths"]
    header = ["extractor", "corpus", "ROUGE-L", f"recall L={lengths[0]}",
              f"recall L={lengths[len(lengths) // 2]}", f"recall L={lengths[-1]}"]
    rows = []
    for corpus in metrics["corpora"]:
        for ext, by_corpus in comp.items():
            entry = by_corpus[corpus]
            curve = entry["recall"]
            rows.append([ext, corpus, with_ci(entry["rouge"]["rougeL"]), pct(curve[0]["mean"]),
                         pct(curve[len(curve) // 2]["mean"]), pct(curve[-1]["mean"])])
    return "The learned extractor beside tf-idf and the cheating ceiling", header, rows


def tables(metrics: dict) -> list[tuple[str, tuple | None]]:
    """(section, table) in report order; a None table is explained in the section text."""
    out = [("rouge", rouge_table(metrics))]
    out += [("recall", recall_table(metrics, c)) for c in metrics["corpora"]]
    out += [("stats", stats_table(metrics)), ("totals", totals_table(metrics)),
            ("drops", drops_table(metrics)), ("learned", learned_table(metrics))]
    return out


# ---------------------------------------------------------------------------------- documents

INTRO = ("The extractive analyses of Liu et al. (2018) on this dataset: how well each extractor's "
         "ranking summarises the lead on its own, how much of the lead the model input can "
         "recall as a function of its length L, and what the data looks like.")
SECTIONS = {
    "rouge": ("1. Extractive-only ROUGE",
              "For every extractor and corpus, the ranked paragraphs cut to the number of words "
              "of the lead, scored against the lead (rouge-score, Porter stemming; ROUGE-L is the "
              "summary-level LCS `rougeL`, as tensor2tensor computes it). The cheating extractor "
              "ranks by bigram recall of the lead itself and is a ceiling, not a choice."),
    "recall": ("2. Input recall vs L",
               "ROUGE-1 recall of the lead by the first L subword tokens of the model input "
               "(title, then paragraphs in rank order). Identity is the floor, cheating the "
               "ceiling; where a curve flattens, a longer input adds little."),
    "stats": ("3. Dataset statistics",
              "Percentiles over the scored articles (paper, Table 2). Citation and search-result "
              "sizes are per document, in words of extracted text."),
    "learned": ("4. The learned extractor",
                "The learned ranker against tf-idf (the paper's choice) and the cheating "
                "ceiling."),
}


def _md_table(table) -> str:
    caption, header, rows = table
    lines = [f"*{caption}*", "", "| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _html_table(table) -> str:
    caption, header, rows = table
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
                   for r in rows)
    return (f"<table><caption>{html.escape(caption)}</caption><thead><tr>{head}</tr></thead>"
            f"<tbody>{body}</tbody></table>")


def _missing(section: str, metrics: dict) -> str:
    if section == "learned":
        return ("This dataset was ranked without the learned extractor (`wikisum build "
                "--no-learned`, or `wikisum rank` without `--learned`).")
    return ("The ingest shards this dataset was ranked from (dataset.json `source`: "
            f"{metrics.get('source') or 'unknown'}) were not found, so there are no dataset "
            "statistics.")


def _subtitle(metrics: dict) -> str:
    sample = f", a sample of {metrics['sample']}" if metrics.get("sample") else ""
    return (f"{metrics['data']} &middot; split {metrics['split']}{sample} &middot; "
            f"{metrics['articles']} articles scored")


def to_markdown(metrics: dict, figure_files: dict[str, str]) -> str:
    out = ["# Extractor comparison report", "",
           _subtitle(metrics).replace("&middot;", "·"), "", INTRO, "",
           "## What to pick", ""]
    out += [f"- {line}" for line in metrics["recommendation"]["text"]] + [""]
    done = set()
    for section, table in tables(metrics):
        if section in SECTIONS and section not in done:
            title, text = SECTIONS[section]
            out += [f"## {title}", "", text, ""]
            done.add(section)
            figure = {"rouge": "extractive_rouge.png", "recall": "input_recall.png"}.get(section)
            if figure in figure_files:
                out += [f"![{title}]({figure_files[figure]})", ""]
        out += [_md_table(table) if table else _missing(section, metrics), ""]
    out += ["Every number is in `metrics.json`; per-article scores in "
            f"`{metrics['per_article_file']}`.", ""]
    return "\n".join(out)


CSS = """
body{font-family:-apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{margin-bottom:0.1em}.sub{color:#666;margin-top:0}
h2{border-bottom:1px solid #ddd;padding-bottom:0.2em;margin-top:1.8em}
table{border-collapse:collapse;margin:0.8em 0 1.4em;font-size:0.9em}
caption{text-align:left;font-style:italic;color:#555;padding-bottom:0.3em}
th,td{border:1px solid #ddd;padding:0.3em 0.6em;text-align:right}
th:first-child,td:first-child,td:nth-child(2){text-align:left}
tbody tr:nth-child(even){background:#f7f7f7}
.pick{background:#eef6ee;border-left:4px solid #55a868;padding:0.6em 1.2em;margin:1em 0}
img{max-width:100%;border:1px solid #eee;margin:0.5em 0}
.note{color:#777;font-size:0.9em}
"""


def _prose(text: str) -> str:
    """Escaped text with `code` spans as <code>."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def to_html(metrics: dict, pngs: dict[str, bytes]) -> str:
    def img(name, alt):
        data = base64.b64encode(pngs[name]).decode("ascii")
        return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}">'

    parts = [f"<h1>Extractor comparison report</h1><p class='sub'>{_subtitle(metrics)}</p>",
             f"<p>{html.escape(INTRO)}</p>", "<h2>What to pick</h2><div class='pick'><ul>"]
    parts += [f"<li>{html.escape(line)}</li>" for line in metrics["recommendation"]["text"]]
    parts.append("</ul></div>")
    done = set()
    for section, table in tables(metrics):
        if section in SECTIONS and section not in done:
            title, text = SECTIONS[section]
            parts += [f"<h2>{html.escape(title)}</h2>", f"<p>{_prose(text)}</p>"]
            done.add(section)
            figure = {"rouge": "extractive_rouge.png", "recall": "input_recall.png"}.get(section)
            if figure in pngs:
                parts.append(img(figure, title))
        parts.append(_html_table(table) if table else
                     f"<p class='note'>{_prose(_missing(section, metrics))}</p>")
    parts.append(f"<p class='note'>Every number is in metrics.json; per-article scores in "
                 f"{html.escape(metrics['per_article_file'])}. Bootstrap: "
                 f"{metrics['bootstrap']['samples']} Poisson resamples, seed "
                 f"{metrics['bootstrap']['seed']}.</p>")
    return ("<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
            "<title>wikisum extractor report</title>"
            f"<style>{CSS}</style></head><body>{''.join(parts)}</body></html>\n")
