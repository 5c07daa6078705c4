"""metrics.json -> report.md, report.html (self-contained, PNG plots embedded) and the plots.

Pure functions of the metrics dict written by :mod:`wikisum.pipeline.report`; nothing here reads
data.
"""

from __future__ import annotations

import base64
import html
import io
import re
from urllib.parse import urlsplit

import matplotlib

matplotlib.use("Agg")  # no display: render to PNG bytes
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

from wikisum.core import htmlpage, language  # noqa: E402
from wikisum.core.text import content_words, words  # noqa: E402

ROUGE_LABELS = {"rouge1": "ROUGE-1", "rouge2": "ROUGE-2", "rougeL": "ROUGE-L"}
STAT_LABELS = {"lead_words": "Lead size", "article_words": "Article size",
               "sections": "# sections", "citations": "# citations",
               "citation_words": "Citation size", "search_results": "# search results",
               "search_words": "Search-result size"}
COLORS = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3"]


def pct(x: float) -> str:
    return f"{100 * x:.1f}"


def signed(x: float) -> str:
    return f"{100 * x:+.1f}"


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


MARKERS = ["o", "s", "^", "D", "v", "P", "X"]


def _length_label(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def recall_figure(metrics: dict) -> bytes:
    """ROUGE-1 recall of the lead by the first L tokens of the input: one panel per corpus, the
    Ls on the axis, one legend above the panels. Each extractor has its own colour, marker and a
    small horizontal offset, so that curves which coincide stay apart; the intervals are in the
    tables (bands of six curves would merge)."""
    corpora, extractors = metrics["corpora"], metrics["extractors"]
    lengths = metrics["lengths"]
    fig, axes = plt.subplots(1, len(corpora), figsize=(4.6 * len(corpora), 4.2), sharey=True,
                             squeeze=False)
    axes = list(axes[0])
    spread = 0.012  # decades between neighbouring extractors' markers
    for ax, corpus in zip(axes, corpora, strict=True):
        for k, ext in enumerate(extractors):
            curve = metrics["input_recall"][ext][corpus]
            shift = 10 ** ((k - (len(extractors) - 1) / 2) * spread)
            ax.plot([p["length"] * shift for p in curve], [100 * p["mean"] for p in curve],
                    marker=MARKERS[k % len(MARKERS)], markersize=5, linewidth=1.6,
                    color=COLORS[k % len(COLORS)], label=ext, alpha=0.9,
                    linestyle="--" if ext == "cheating" else "-")
        ax.set_xscale("log")
        ax.set_xticks(lengths, [_length_label(n) for n in lengths])
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("L (subword tokens of input)")
        ax.set_title(f"{corpus} corpus", fontsize=11)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("ROUGE-1 recall of the lead (x100)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=len(extractors), fontsize=10,
               frameon=False, bbox_to_anchor=(0.5, 1.0))
    fig.tight_layout(rect=(0, 0, 1, 0.9))
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


# ---------------------------------------------------------------------------------- documents

INTRO = ("The extractive analyses of Liu et al. (2018) on this dataset: how well each extractor's "
         "ranking summarises the lead on its own, how much of the lead the model input can "
         "recall as a function of its length L, and what the data looks like.")
SECTIONS = {
    "rouge": ("1. Extractive-only ROUGE",
              "For every extractor and corpus, the ranked paragraphs cut to the number of words "
              "of the lead, scored against the lead (rouge-score, Porter stemming; ROUGE-L is the "
              "summary-level LCS `rougeL`, as tensor2tensor computes it). An extractor is "
              "clearly ahead of another when the paired bootstrap of their per-article "
              "differences gives a 95% interval that excludes 0. The cheating extractor reads "
              "the lead (it ranks by bigram recall of it), so it is never a choice; it is "
              "usually, not always, the best on ROUGE-L."),
    "recall": ("2. Input recall vs L",
               "ROUGE-1 recall of the lead by the first L subword tokens of the model input "
               "(title, then paragraphs in rank order): how much of the lead a model could find "
               "in its input. Identity keeps the references' order; where a curve flattens, a "
               "longer input adds little. Once L holds a corpus whole, every extractor's input "
               "is the same and the curves meet."),
    "stats": ("3. Dataset statistics",
              "Percentiles over the scored articles (paper, Table 2). Citation and search-result "
              "sizes are per document, in words of extracted text."),
    "learned": ("4. The learned extractor",
                "The learned ranker against tf-idf (the paper's choice) and the cheating "
                "extractor."),
}
VIEW_TITLE = "5. Articles side by side"
ABOUT_TITLE = "About this report"


def _view_text(metrics: dict) -> str:
    corpus = metrics["recommendation"]["best_corpus"]
    return (f"For {len(metrics['article_views'])} articles (a fixed choice: the smallest hashes "
            f"of their ids), the lead beside the top-ranked paragraphs of each extractor on the "
            f"{corpus} corpus (the recommended one), with each extractor's ROUGE-L on that "
            "article. The other corpora's are in metrics.json (`article_views`).")


def _md_table(table) -> str:
    caption, header, rows = table
    lines = [f"*{caption}*", "", "| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


NUMERIC = re.compile(r"^([-+]?\d|-$|best$)")  # right-aligned cells


def _html_table(table) -> str:
    caption, header, rows = table
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(
        f"<td>{html.escape(c)}</td>" if NUMERIC.match(c) else
        f"<td class='t'>{html.escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return (f"<p class='caption'>{html.escape(caption)}</p><div class='scroll'><table>"
            f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>")


def _missing(section: str, metrics: dict) -> str:
    if section == "learned":
        return ("This dataset was ranked without the learned extractor (`wikisum build "
                "--no-learned`, or `wikisum rank` without `--learned`).")
    return ("The ingest shards this dataset was ranked from (dataset.json `source`: "
            f"{metrics.get('source') or 'unknown'}) were not found, so there are no dataset "
            "statistics.")


def _subtitle(metrics: dict) -> str:
    sample = f", a sample of {metrics['sample']}" if metrics.get("sample") else ""
    prov = metrics.get("provenance") or {}
    made = (f" &middot; wikisum {prov['wikisum_version']}, {prov['created'][:10]}"
            if prov.get("created") else "")
    return (f"{metrics['data']} &middot; split {metrics['split']}{sample} &middot; "
            f"{metrics['articles']} articles scored{made}")


def _domain(url: str | None) -> str:
    return urlsplit(url).netloc if url else ""


def _pieces(token: str) -> list[str]:
    """A run of text without spaces in the pieces a reader sees as words: itself, or for a
    script written without spaces (Chinese, Japanese, Thai, ...) ICU's words with what lies
    between them, so that ``"".join`` gives the token back."""
    if not language.needs_dictionary(token):
        return [token]
    out, at = [], 0
    for word in language.segment(token):
        start = token.find(word, at)
        if start < 0:  # not where expected: the token whole
            return [token]
        if start > at:
            out.append(token[at:start])
        out.append(word)
        at = start + len(word)
    if at < len(token):
        out.append(token[at:])
    return out


def _mark_shared(text: str, lead_words: set[str]) -> str:
    """Escaped text, words that the lead has too (its content words) in <mark>: a whole
    space-separated token, or in scripts written without spaces each of its words (a run of
    neighbouring marked words in one <mark>)."""
    out = []
    for token in re.split(r"(\s+)", text):
        marked = ""
        for piece in _pieces(token):
            if any(w in lead_words for w in words(piece)):
                marked += piece
                continue
            if marked:
                out.append(f"<mark>{html.escape(marked)}</mark>")
                marked = ""
            out.append(html.escape(piece))
        if marked:
            out.append(f"<mark>{html.escape(marked)}</mark>")
    return "".join(out)


def _md_view(metrics: dict) -> list[str]:
    corpus = metrics["recommendation"]["best_corpus"]
    out = []
    for view in metrics["article_views"]:
        out += [f"### {view['title']}", "", "> **Lead.** " + " ".join(view["lead"].split()), "",
                f"| extractor | ROUGE-L | top-ranked paragraphs ({corpus}) |", "|---|---|---|"]
        for ext in metrics["extractors"]:
            paras = "<br>".join(f"{k + 1}. {p['text']}" + (f" ({_domain(p['url'])})"
                                                            if p.get("url") else "")
                                for k, p in enumerate(view["top"][ext][corpus]))
            out.append(f"| {ext} | {pct(view['rougeL'][ext][corpus])} | "
                       f"{paras.replace('|', '&#124;') or '(no paragraphs)'} |")
        out.append("")
    return out


def report_language(metrics: dict) -> str:
    """The language of the dataset's text (metrics.json's ``language``; English where a build
    does not say)."""
    return metrics.get("language") or "en"


def _content(metrics: dict, sample: str) -> str:
    """The lang and dir attributes of an element holding the dataset's text (nothing for an
    English dataset, whose page is English throughout)."""
    lang = report_language(metrics)
    if htmlpage.is_english_ltr(lang):
        return ""
    return " " + htmlpage.lang_attrs(lang, sample)


def _html_view(metrics: dict) -> str:
    corpus = metrics["recommendation"]["best_corpus"]
    lang = report_language(metrics)
    parts = []
    for view in metrics["article_views"]:
        lead_words = set(content_words(view["lead"], lang))
        content = _content(metrics, view["lead"])
        blocks = []
        for ext in metrics["extractors"]:
            items = "".join(
                f"<li>{_mark_shared(p['text'], lead_words)}"
                + (f" <bdi class='src'>{html.escape(_domain(p['url']))}</bdi>"
                   if p.get("url") else "") + "</li>"
                for p in view["top"][ext][corpus]) or "<li>(no paragraphs)</li>"
            blocks.append(f"<div class='ext'><h4>{html.escape(ext)} <span class='score'>"
                          f"ROUGE-L {pct(view['rougeL'][ext][corpus])}</span></h4>"
                          f"<ol{content}>{items}</ol></div>")
        parts.append(f"<section class='article'><h3{content}>{html.escape(view['title'])}</h3>"
                     f"<div class='side'><div class='lead'><h4>Lead</h4>"
                     f"<p{content}>{html.escape(view['lead'])}</p></div>"
                     f"<div class='exts'>{''.join(blocks)}</div></div></section>")
    return "".join(parts)


def _document(title: str, css: str, body: str, lang: str = "en", sample: str = "") -> str:
    """The whole page: ``<html>`` in the dataset's language and direction, its ``<body>`` the
    English report (:func:`wikisum.core.htmlpage.body_tag`)."""
    return (f"<!DOCTYPE html><html {htmlpage.lang_attrs(lang, sample)}><head>"
            f"<meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{css}</style></head>{htmlpage.body_tag(lang, sample)}{body}</body></html>\n")


FIGURES = {"rouge": "extractive_rouge.png", "recall": "input_recall.png"}


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
            figure = FIGURES.get(section)
            if figure in figure_files:
                out += [f"![{title}]({figure_files[figure]})", ""]
        out += [_md_table(table) if table else _missing(section, metrics), ""]
    if metrics.get("article_views"):
        out += [f"## {VIEW_TITLE}", "", _view_text(metrics), ""] + _md_view(metrics)
    out += [f"## {ABOUT_TITLE}", "", _md_table(provenance_table(metrics)),
            "Every number is in `metrics.json`; per-article scores in "
            f"`{metrics['per_article_file']}`.", ""]
    return "\n".join(out)


CSS = htmlpage.REPORT_CSS + """th:first-child,td:first-child,td.t{text-align:left}
.pick{background:#eef6ee;border-left:4px solid #55a868;padding:0.6em 1.2em;margin:1em 0}
.pick li{margin:0.3em 0}
img{max-width:100%;border:1px solid #eee;margin:0.5em 0}
.article{margin:1.2em 0 2em}
.side{display:grid;grid-template-columns:minmax(240px,1fr) 2.4fr;gap:1em;align-items:start}
.lead{background:#f4f7fb;border-left:4px solid #4c72b0;padding:0.2em 1em;position:sticky;top:0}
.exts{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:0.8em}
.ext{border:1px solid #e3e3e3;border-radius:4px;padding:0 0.8em;font-size:0.88em}
.ext h4,.lead h4{margin:0.6em 0 0.3em}.score{color:#666;font-weight:normal;float:right}
.ext ol{padding-inline-start:1.3em;margin:0.3em 0 0.6em}.ext li{margin-bottom:0.4em}
.src{color:#888;font-size:0.9em}
mark{background:#fff1b8;padding:0}
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
            figure = FIGURES.get(section)
            if figure in pngs:
                parts.append(img(figure, title))
        parts.append(_html_table(table) if table else
                     f"<p class='note'>{_prose(_missing(section, metrics))}</p>")
    if metrics.get("article_views"):
        parts += [f"<h2>{VIEW_TITLE}</h2>", f"<p>{_prose(_view_text(metrics))} Words the lead "
                  "has too are <mark>marked</mark>.</p>", _html_view(metrics)]
    parts += [f"<h2>{ABOUT_TITLE}</h2>", _html_table(provenance_table(metrics)),
              f"<p class='note'>Every number is in metrics.json; per-article scores in "
              f"{html.escape(metrics['per_article_file'])}.</p>"]
    sample = " ".join(view["lead"] for view in metrics.get("article_views") or [])
    return _document("wikisum extractor report", CSS, "".join(parts), report_language(metrics),
                     sample)


# ---------------------------------------------------------------------------------- two builds


def _change(d: dict) -> str:
    """ "51.7 -> 53.0 (+1.3*)": A, B, the difference; * when its interval excludes 0."""
    return f"{pct(d['a'])} -> {pct(d['b'])} ({signed(d['difference'])}{'*' if d['clear'] else ''})"


def _count(x) -> str:
    return "-" if x is None else str(x)


def compare_tables(comp: dict) -> list[tuple[str, list[str], list[list[str]]]]:
    """The comparison of two builds (:func:`wikisum.pipeline.report.compare`) as tables."""
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


COMPARE_INTRO = ("What differs between build A and build B: their reports' input recall and "
                 "extractive ROUGE-L per extractor and corpus (B minus A; the interval treats "
                 "the two builds' articles as independent samples), the counts, and what their "
                 "ingest runs dropped.")


def compare_markdown(comp: dict) -> str:
    out = ["# Two builds compared", "", f"A: {comp['a']['data']}  ", f"B: {comp['b']['data']}",
           "", COMPARE_INTRO, ""]
    out += [_md_table(t) for t in compare_tables(comp)]
    return "\n".join(out) + "\n"


def compare_html(comp: dict) -> str:
    parts = ["<h1>Two builds compared</h1>",
             f"<p class='sub'>A: {html.escape(comp['a']['data'])}<br>"
             f"B: {html.escape(comp['b']['data'])}</p>", f"<p>{html.escape(COMPARE_INTRO)}</p>"]
    parts += [_html_table(t) for t in compare_tables(comp)]
    return _document("wikisum: two builds compared", CSS, "".join(parts))
