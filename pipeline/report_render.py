"""The report's documents: report.md and report.html, compare.md and compare.html.

metrics.json -> report.md and report.html (self-contained, PNG plots embedded); the comparison
of two builds (:func:`wikisum.pipeline.report_compare.compare`) -> compare.md and compare.html.
Pure functions of the metrics dict written by :mod:`wikisum.pipeline.report`; nothing here
reads data. The section texts and the per-article view are here, the tables in
:mod:`.report_tables`, the plots in :mod:`.report_plots`.

Every text that comes from the data (titles, leads, paragraphs, addresses, the dataset's path,
the names of splits, corpora and extractors) is shown as text: escaped in report.html, whose
Content-Security-Policy allows no script at all and no request (its style and its embedded
plots only), and written as Markdown text in report.md (:func:`.report_tables.md_text`). A
path laid out inline is isolated (``<bdi>``; FSI..PDI in Markdown), so that a right-to-left
override in it reorders nothing around it, and a text of the per-article view longer than
:data:`wikisum.core.htmlpage.SHOWN_CHARS` is shown cut, saying how many characters were left
out (metrics.json holds it whole).
"""

from __future__ import annotations

import base64
import re
from collections.abc import Callable
from urllib.parse import urlsplit

from wikisum.core import htmlpage, language
from wikisum.core.text import content_words, words
from wikisum.pipeline.report_plots import figures  # noqa: F401 (workflows/report.py calls it)
from wikisum.pipeline.report_tables import (
    compare_tables,
    html_table,
    md_table,
    md_text,
    pct,
    provenance_table,
    tables,
)

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


def _html(text: object) -> str:
    """Data as HTML text (:func:`wikisum.core.htmlpage.escape`)."""
    return htmlpage.escape(text)


def _view_text(metrics: dict, quote: Callable[[str], str]) -> str:
    """What the per-article view shows; ``quote`` writes the corpus's name as text of the
    document (HTML or Markdown)."""
    corpus = quote(metrics["recommendation"]["best_corpus"])
    return (f"For {len(metrics['article_views'])} articles (a fixed choice: the smallest hashes "
            f"of their ids), the lead beside the top-ranked paragraphs of each extractor on the "
            f"{corpus} corpus (the recommended one), with each extractor's ROUGE-L on that "
            "article. The other corpora's are in metrics.json (`article_views`).")


def _missing(section: str, metrics: dict, quote: Callable[[str], str]) -> str:
    """Why a section has no table; ``quote`` writes the ingest output's path as text of the
    document."""
    if section == "learned":
        return ("This dataset was ranked without the learned extractor (`wikisum build "
                "--no-learned`, or `wikisum rank` without `--learned`).")
    return ("The ingest shards this dataset was ranked from (dataset.json `source`: "
            f"{quote(str(metrics.get('source') or 'unknown'))}) were not found, so there are no "
            "dataset statistics.")


def _subtitle(metrics: dict, markdown: bool = False) -> str:
    """The line under the title: the dataset, the split, the articles scored and the version;
    the dataset's path and the split isolated, as HTML (or Markdown)."""
    if markdown:
        data, split, dot = (md_text(htmlpage.isolate(metrics["data"])),
                            md_text(htmlpage.isolate(metrics["split"])), "\u00b7")
    else:
        data, split, dot = (f"<bdi>{_html(metrics['data'])}</bdi>",
                            f"<bdi>{_html(metrics['split'])}</bdi>", "&middot;")
    sample = f", a sample of {metrics['sample']}" if metrics.get("sample") else ""
    prov = metrics.get("provenance") or {}
    made = (f" {dot} wikisum {prov['wikisum_version']}, {prov['created'][:10]}"
            if prov.get("created") else "")
    return (f"{data} {dot} split {split}{sample} {dot} "
            f"{metrics['articles']} articles scored{made}")


def _cut(text: str) -> str:
    """A text of the per-article view as shown: whole, or its first
    :data:`~wikisum.core.htmlpage.SHOWN_CHARS` characters and how many were left out."""
    head, left_out = htmlpage.shown(text)
    return f"{head} {htmlpage.cut_note(left_out)}" if left_out else text


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
                out.append(f"<mark>{_html(marked)}</mark>")
                marked = ""
            out.append(_html(piece))
        if marked:
            out.append(f"<mark>{_html(marked)}</mark>")
    return "".join(out)


def _md_view(metrics: dict) -> list[str]:
    corpus = metrics["recommendation"]["best_corpus"]
    out = []
    for view in metrics["article_views"]:
        out += [f"### {md_text(_cut(view['title']))}", "",
                "> **Lead.** " + md_text(" ".join(_cut(view["lead"]).split())), "",
                f"| extractor | ROUGE-L | top-ranked paragraphs ({md_text(corpus)}) |",
                "|---|---|---|"]
        for ext in metrics["extractors"]:
            paras = "<br>".join(
                f"{k + 1}. {md_text(htmlpage.isolate(_cut(p['text'])))}"
                + (f" ({md_text(htmlpage.isolate(_domain(p['url'])))})" if p.get("url") else "")
                for k, p in enumerate(view["top"][ext][corpus]))
            out.append(f"| {md_text(ext)} | {pct(view['rougeL'][ext][corpus])} | "
                       f"{paras or '(no paragraphs)'} |")
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
                f"<li>{_mark_shared(_cut(p['text']), lead_words)}"
                + (f" <bdi class='src'>{_html(_domain(p['url']))}</bdi>"
                   if p.get("url") else "") + "</li>"
                for p in view["top"][ext][corpus]) or "<li>(no paragraphs)</li>"
            blocks.append(f"<div class='ext'><h4><bdi>{_html(ext)}</bdi> <span class='score'>"
                          f"ROUGE-L {pct(view['rougeL'][ext][corpus])}</span></h4>"
                          f"<ol{content}>{items}</ol></div>")
        parts.append(f"<section class='article'><h3{content}>{_html(_cut(view['title']))}</h3>"
                     f"<div class='side'><div class='lead'><h4>Lead</h4>"
                     f"<p{content}>{_html(_cut(view['lead']))}</p></div>"
                     f"<div class='exts'>{''.join(blocks)}</div></div></section>")
    return "".join(parts)


def _document(title: str, css: str, body: str, lang: str = "en", sample: str = "") -> str:
    """The whole page: ``<html>`` in the dataset's language and direction, its ``<body>`` the
    English report (:func:`wikisum.core.htmlpage.body_tag`), under a Content-Security-Policy
    that allows its style and ``data:`` images and nothing else (no script runs, nothing is
    fetched)."""
    policy = htmlpage.escape(htmlpage.policy(css=css))
    return (f"<!DOCTYPE html><html {htmlpage.lang_attrs(lang, sample)}><head>"
            f"<meta charset='utf-8'>"
            f"<meta http-equiv='Content-Security-Policy' content=\"{policy}\">"
            f"<meta name='referrer' content='no-referrer'><title>{_html(title)}</title>"
            f"<style>{css}</style></head>{htmlpage.body_tag(lang, sample)}{body}</body></html>\n")


FIGURES = {"rouge": "extractive_rouge.png", "recall": "input_recall.png"}


def to_markdown(metrics: dict, figure_files: dict[str, str]) -> str:
    out = ["# Extractor comparison report", "",
           _subtitle(metrics, markdown=True), "", INTRO, "",
           "## What to pick", ""]
    out += [f"- {md_text(line)}" for line in metrics["recommendation"]["text"]] + [""]
    done = set()
    for section, table in tables(metrics):
        if section in SECTIONS and section not in done:
            title, text = SECTIONS[section]
            out += [f"## {title}", "", text, ""]
            done.add(section)
            figure = FIGURES.get(section)
            if figure in figure_files:
                out += [f"![{title}]({figure_files[figure]})", ""]
        out += [md_table(table) if table else _missing(section, metrics, md_text), ""]
    if metrics.get("article_views"):
        out += [f"## {VIEW_TITLE}", "", _view_text(metrics, md_text), ""] + _md_view(metrics)
    out += [f"## {ABOUT_TITLE}", "", md_table(provenance_table(metrics)),
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
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", _html(text))


def _plain(text: str) -> str:
    """Data inside a text that :func:`_prose` escapes: each backtick as a look-alike quote
    (U+2018), so that no data opens or closes a code span."""
    return text.replace("`", "\u2018")


def to_html(metrics: dict, pngs: dict[str, bytes]) -> str:
    def img(name, alt):
        data = base64.b64encode(pngs[name]).decode("ascii")
        return f'<img alt="{_html(alt)}" src="data:image/png;base64,{data}">'

    parts = [f"<h1>Extractor comparison report</h1><p class='sub'>{_subtitle(metrics)}</p>",
             f"<p>{_html(INTRO)}</p>", "<h2>What to pick</h2><div class='pick'><ul>"]
    parts += [f"<li>{_html(line)}</li>" for line in metrics["recommendation"]["text"]]
    parts.append("</ul></div>")
    done = set()
    for section, table in tables(metrics):
        if section in SECTIONS and section not in done:
            title, text = SECTIONS[section]
            parts += [f"<h2>{_html(title)}</h2>", f"<p>{_prose(text)}</p>"]
            done.add(section)
            figure = FIGURES.get(section)
            if figure in pngs:
                parts.append(img(figure, title))
        parts.append(html_table(table) if table else
                     f"<p class='note'>{_prose(_missing(section, metrics, _plain))}</p>")
    if metrics.get("article_views"):
        parts += [f"<h2>{VIEW_TITLE}</h2>",
                  f"<p>{_prose(_view_text(metrics, _plain))} Words the lead has too are "
                  "<mark>marked</mark>.</p>", _html_view(metrics)]
    parts += [f"<h2>{ABOUT_TITLE}</h2>", html_table(provenance_table(metrics)),
              f"<p class='note'>Every number is in metrics.json; per-article scores in "
              f"{_html(metrics['per_article_file'])}.</p>"]
    sample = " ".join(view["lead"] for view in metrics.get("article_views") or [])
    return _document("wikisum extractor report", CSS, "".join(parts), report_language(metrics),
                     sample)


COMPARE_INTRO = ("What differs between build A and build B: their reports' input recall and "
                 "extractive ROUGE-L per extractor and corpus (B minus A; the interval treats "
                 "the two builds' articles as independent samples), the counts, and what their "
                 "ingest runs dropped.")


def compare_markdown(comp: dict) -> str:
    out = ["# Two builds compared", "", f"A: {md_text(htmlpage.isolate(comp['a']['data']))}  ",
           f"B: {md_text(htmlpage.isolate(comp['b']['data']))}", "", COMPARE_INTRO, ""]
    out += [md_table(t) for t in compare_tables(comp)]
    return "\n".join(out) + "\n"


def compare_html(comp: dict) -> str:
    parts = ["<h1>Two builds compared</h1>",
             f"<p class='sub'>A: <bdi>{_html(comp['a']['data'])}</bdi><br>"
             f"B: <bdi>{_html(comp['b']['data'])}</bdi></p>", f"<p>{_html(COMPARE_INTRO)}</p>"]
    parts += [html_table(t) for t in compare_tables(comp)]
    return _document("wikisum: two builds compared", CSS, "".join(parts))
