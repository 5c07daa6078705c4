"""The clone filter's two measures on real pages: how many copies of a lead each catches, and how
many pages that are not copies each drops (``wikisum.pipeline.clones``).

A page is a clone when the lead's recall in it is above a threshold. Measures scored:

* ``unigram``: ``lead_recall``, the share of the lead's distinct words found in the page;
* ``content``: ``content_recall`` with the language of the lead, the same over its content
  words (function words of the language, digits and single characters left out);
* ``content_fallback``: ``content_recall`` with no language, to show what an unlisted language
  gets (English function words and tokens under three characters left out).

Data (``../shared/data``). Page text is what the pipeline extracts: ``webtext.decode_body``,
then ``webtext.extract_main_text``. A page's language is its ``<html lang>``, else its
``content-language`` or ``og:locale`` meta tag; pages with none are left out. Wikipedia leads and
texts come from ``wikitext.parse_article``; the languages of the 71 articles are in ``WIKI_LANG``
(read from the articles: nine are German and two Afrikaans; the folder's MANIFEST names three).

Negatives (not copies), each pair scored in one language:

* ``description_vs_other_page``: the publisher's description of an extraction page (15-60 words,
  often a 30-word summary; HTML entities decoded) against the main text of every other page of
  another host in the same language. Left out and counted: descriptions in another listed
  language than their page's tag says (the language whose function words are most frequent in
  them), and pairs where the other page shares a word 8-gram with the description (a
  syndicated copy).
* ``wikipedia_lead_vs_page``: each Wikipedia lead of 10 words or more against every extraction
  page in the article's language.
* ``wikipedia_lead_vs_other_mirror``: the same leads against the verbatim mirror (below) of
  every other article in the language: long encyclopaedic text on another subject.
* ``same_topic_page``: a description against its own page with every sentence removed that
  shares a word 5-gram with it (or, shorter than 5 words, occurs in it), when 50 words or more
  are left. The page is about the same thing and its publisher wrote the description from it,
  so this is a harder case than a cited source is to a Wikipedia lead, which summarises several;
  reported on its own and left out of the pooled false-positive rate.

Positives (copies of the lead):

* ``mirror_full`` / ``mirror_lead_only``: the article's plain text (lead and sections) or its
  lead alone in a mirror site's HTML (navigation, "From Wikipedia", a related-links box, a
  licence footer), extracted as any page; ``_drop5`` drops every 5th word of the copied text,
  ``_replace5`` replaces it with a word of an unrelated page in the language.
* ``commoncrawl_wikipedia``: the Common Crawl capture of an.wikipedia.org/wiki/Escopete
  (``warc/cc-whirlwind``), its lead taken from the captured HTML (the paragraphs before the
  first heading; its wikitext is not in the data), against the WET record's text and against
  the main text extracted from the WARC response; language ``an`` (Aragonese, not listed, so
  ``content`` uses the fallback too).
* ``page_with_description``: an extraction page whose main text holds its own description
  word for word, against that description.

Borderline, reported as the share dropped: ``half_lead_in_page``, the first sentences of a
Wikipedia lead, half its words or more, pasted into an unrelated page in the language (a page
that quotes part of the article).

Reported per measure: the false-positive rate of each negative set and the true-positive rate
of each positive set at each threshold (clone when recall > threshold), the pooled
false-positive rate of the three unrelated sets, the mean and least true-positive rate of the
positive sets; recall quantiles per set; the unrelated negatives each measure drops at 0.5, and
how those drops spread over the descriptions. Recommended: the measure with the widest band of
usable thresholds (pooled unrelated FPR <= 0.5 %, every positive set at TPR >= 0.99), at the
band's middle rounded down to the grid.

Run by hand, never by CI (about 20 s on 2 cores)::

    .venv/bin/python experiments/clones/run.py
    .venv/bin/python experiments/clones/run.py --jobs 4 --examples 40

It prints the figures and writes them, the machine and the command line to
``experiments/results/clones.json`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import gzip
import html as htmllib
import json
import os
import random
import re
import sys
import time
import zlib
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from machine import command_line, describe, write_results  # noqa: E402

from wikisum.core.stopwords import FUNCTION_WORDS, language_key  # noqa: E402
from wikisum.core.text import content_words, sentences, words  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data"
DEFAULT_OUT = ROOT / "experiments" / "results" / "clones.json"
THRESHOLDS = (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
QUANTILES = (0.0, 0.01, 0.1, 0.5, 0.9, 0.99, 1.0)
MEASURES = ("unigram", "content", "content_fallback")
UNRELATED = ("description_vs_other_page", "wikipedia_lead_vs_page",
             "wikipedia_lead_vs_other_mirror")
HARD = ("same_topic_page",)
BORDERLINE = ("half_lead_in_page",)
MAX_FPR = 0.005
MIN_TPR = 0.99
DESCRIPTION_WORDS = (15, 60)
MIN_WIKI_LEAD_WORDS = 10
SYNDICATED_NGRAM = 8
SAME_TOPIC_NGRAM = 5
MIN_SAME_TOPIC_WORDS = 50

# Languages of the articles under wikipedia/wikitext/articles that are not English, by file stem.
WIKI_LANG = {
    "BBDO": "de", "Bazooka": "de", "HMS-Irresistible": "de", "Keilwelle": "de",
    "Liste-der-argentinischen-Botschafter-in-Chile": "de", "Maurische-Netzwuhle": "de",
    "Mozilla-Firefox": "de", "Sara-C.-Bisel": "de", "Wendy-Mogel": "de",
    "Mark-Behr": "af", "africaans": "af",
}

_HTML_LANG = re.compile(rb"<html\b[^>]*?\slang\s*=\s*[\"']?([A-Za-z]{2,3})(?![A-Za-z])", re.I)
_META_LANG = re.compile(
    rb"<meta\b[^>]*(?:http-equiv\s*=\s*[\"']?content-language[\"']?[^>]*content\s*=\s*"
    rb"[\"']?([A-Za-z]{2})(?![A-Za-z])|property\s*=\s*[\"']og:locale[\"'][^>]*content\s*=\s*"
    rb"[\"']?([A-Za-z]{2})(?![A-Za-z]))", re.I)
_PARAGRAPH = re.compile(r"<p\b[^>]*>(.*?)</p>", re.S)
_TAG = re.compile(r"<[^>]+>")


# --- Workers ------------------------------------------------------------------------------------

def page_language(body: bytes) -> str | None:
    head = body[:65536]
    match = _HTML_LANG.search(head)
    if match:
        return match.group(1).decode().lower()
    match = _META_LANG.search(head)
    if match:
        return (match.group(1) or match.group(2)).decode().lower()
    return None


def main_text(body: bytes, url: str, content_type: str | None = None) -> str:
    from wikisum.pipeline import webtext

    try:
        page, _ = webtext.decode_body(body, content_type)
        return webtext.extract_main_text(page, url, timeout_s=None)
    except (webtext.DecodeError, webtext.ExtractionError):
        return ""


def read_page(task: tuple[str, Path, str]) -> dict:
    url, path, description = task
    body = gzip.decompress(path.read_bytes())
    return {"url": url, "host": urlsplit(url).hostname or "", "lang": page_language(body),
            "description": description, "text": main_text(body, url)}


def mirror_html(title: str, lang: str, body: str) -> str:
    """A mirror site's page around `body` (paragraphs split by blank lines, "## " headings)."""
    parts = []
    for block in body.split("\n\n"):
        block = block.strip()
        if block.startswith("## "):
            parts.append(f"<h2>{htmllib.escape(block[3:])}</h2>")
        elif block:
            parts.append(f"<p>{htmllib.escape(block)}</p>")
    title_e = htmllib.escape(title)
    related = "".join(f'<li><a href="/wiki/Topic_{i}">Related topic {i}</a></li>'
                      for i in range(1, 9))
    return (
        f'<!DOCTYPE html><html lang="{lang}"><head><meta charset="utf-8">'
        f"<title>{title_e} - WikiMirror Encyclopedia</title></head><body>"
        '<header><nav><a href="/">Home</a> | <a href="/random">Random article</a> | '
        '<a href="/categories">Categories</a> | <a href="/about">About us</a> | '
        '<a href="/contact">Contact</a></nav><form action="/search"><input name="q">'
        "<button>Search</button></form></header>"
        f'<main><article><h1>{title_e}</h1><p class="source">From Wikipedia, the free '
        f'encyclopedia</p>{"".join(parts)}</article></main>'
        f"<aside><h3>Related articles</h3><ul>{related}</ul></aside>"
        f'<footer><p>This article uses material from the Wikipedia article "{title_e}", '
        "which is released under the Creative Commons Attribution-ShareAlike 4.0 License.</p>"
        '<p><a href="/privacy">Privacy policy</a> | <a href="/terms">Terms of use</a> | '
        "Copyright 2024 WikiMirror</p></footer></body></html>")


def perturb(text: str, mode: str, fillers: list[str], seed: int) -> str:
    """Every 5th whitespace token of each paragraph dropped, or replaced by a filler word."""
    if mode == "verbatim":
        return text
    rng = random.Random(seed)
    blocks = []
    for block in text.split("\n\n"):
        if block.startswith("## "):
            blocks.append(block)
            continue
        tokens = block.split()
        out = []
        for i, token in enumerate(tokens, 1):
            if i % 5:
                out.append(token)
            elif mode == "replace5":
                out.append(rng.choice(fillers))
        blocks.append(" ".join(out))
    return "\n\n".join(blocks)


def read_article(task: tuple[str, str, str, list[str]]) -> dict:
    """An article's lead and full text, and the extracted text of each of its mirrors."""
    from wikisum.pipeline.wikitext import parse_article

    stem, wikitext, lang, fillers = task
    title = stem.replace("-", " ").replace("_", " ")
    article = parse_article(title, wikitext, lang)
    full = "\n\n".join([article.lead] + [f"## {s.title}\n\n{s.text}" if s.text
                                         else f"## {s.title}" for s in article.sections])
    url = f"https://www.wikimirror.example/wiki/{stem}"
    mirrors = {}
    for scope, body in (("full", full), ("lead_only", article.lead)):
        for mode in ("verbatim", "drop5", "replace5"):
            copied = perturb(body, mode, fillers, seed=len(stem))
            page = mirror_html(title, lang, copied).encode("utf-8")
            mirrors[f"{scope}_{mode}"] = main_text(page, url, "text/html; charset=utf-8")
    return {"stem": stem, "lang": lang, "lead": article.lead, "redirect": article.is_redirect,
            "mirrors": mirrors}


# --- Scoring ------------------------------------------------------------------------------------

class Lead:
    """A lead's distinct words under each measure."""

    def __init__(self, text: str, lang: str | None, label: str):
        self.text, self.lang, self.label = text, lang, label
        self.sets = {"unigram": set(words(text)),
                     "content": set(content_words(text, lang)),
                     "content_fallback": set(content_words(text, None))}

    def recalls(self, doc_words: set[str]) -> dict[str, float]:
        return {m: (len(s & doc_words) / len(s) if s else 0.0) for m, s in self.sets.items()}


def written_in(text: str) -> str | None:
    """The listed language whose function words are most frequent in `text`, or None."""
    tokens = words(text)
    counts = {key: sum(t in listed for t in tokens) for key, listed in FUNCTION_WORDS.items()}
    best = max(counts, key=counts.__getitem__)
    return best if counts[best] else None


def ngrams(tokens: list[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def contains_sequence(haystack: list[str], needle: list[str]) -> bool:
    return bool(needle) and f" {' '.join(needle)} " in f" {' '.join(haystack)} "


def without_shared_sentences(text: str, description: str) -> str:
    """`text` less every sentence that shares a word n-gram with `description`."""
    desc = words(description)
    grams = ngrams(desc, SAME_TOPIC_NGRAM)
    kept = []
    for line in text.splitlines():
        for sentence in sentences(line):
            tokens = words(sentence)
            if len(tokens) < SAME_TOPIC_NGRAM:
                if contains_sequence(desc, tokens):
                    continue
            elif ngrams(tokens, SAME_TOPIC_NGRAM) & grams:
                continue
            kept.append(sentence)
    return "\n".join(kept)


def half_lead_in(text: str, lead: str) -> str | None:
    """`text` with the lead's first sentences, half its words or more, after its first line;
    None for a lead that cannot be cut so (one sentence, or its last sentence is most of it)."""
    total, taken, copied = len(words(lead)), 0, []
    for sentence in sentences(lead):
        if 2 * taken >= total:
            first, _, rest = text.partition("\n")
            return "\n".join([first, " ".join(copied), rest])
        copied.append(sentence)
        taken += len(words(sentence))
    return None


def whirlwind_pairs(data: Path) -> list[tuple[Lead, str, str]]:
    """(lead from the captured HTML, document label, document text): WET text and main text."""
    from wikisum.pipeline import webtext
    from wikisum.pipeline.warcs import Capture, iter_records

    folder = data / "warc" / "cc-whirlwind"
    captures = {}
    for name in ("whirlwind.warc.gz", "whirlwind.warc.wet.gz"):
        with open(folder / name, "rb") as stream:
            for record in iter_records(stream, name, max_bytes=1 << 26):
                if isinstance(record, Capture):
                    captures[record.record_type] = record
    response, wet = captures["response"], captures["conversion"]
    page, _ = webtext.decode_body(response.body, response.content_type)
    content = page[page.index("mw-parser-output"):]
    heading = re.search(r"<h2\b|class=\"mw-heading", content)
    before = content[:heading.start()] if heading else content
    lead = "\n\n".join(htmllib.unescape(_TAG.sub("", p)).strip()
                       for p in _PARAGRAPH.findall(before))
    lang = page_language(response.body) or "an"
    label = f"lead of {response.url}"
    return [(Lead(lead, lang, label), f"WET {wet.url}", wet.body.decode("utf-8", "replace")),
            (Lead(lead, lang, label), f"main text {response.url}",
             main_text(response.body, response.url, response.content_type))]


def quantiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    if not ordered:
        return {}
    return {f"q{q:g}": round(ordered[round(q * (len(ordered) - 1))], 4) for q in QUANTILES}


class Tally:
    """Recalls of every pair of one set, per measure, and the pairs for the examples."""

    def __init__(self) -> None:
        self.recalls: dict[str, list[float]] = defaultdict(list)
        self.pairs: list[dict] = []

    def add(self, lead: Lead, doc_label: str, doc_words: set[str]) -> None:
        scores = lead.recalls(doc_words)
        for measure, value in scores.items():
            self.recalls[measure].append(value)
        self.pairs.append({"lead": lead.label, "lang": lead.lang, "document": doc_label,
                           **{m: round(v, 4) for m, v in scores.items()}})

    def rate(self, measure: str, threshold: float) -> float:
        values = self.recalls[measure]
        return sum(v > threshold for v in values) / len(values) if values else float("nan")


def score(pages: list[dict], articles: list[dict], whirlwind: list
          ) -> tuple[dict[str, Tally], dict[str, int]]:
    """The pairs of every set, and what was left out of ``description_vs_other_page``."""
    sets: dict[str, Tally] = defaultdict(Tally)
    by_lang: dict[str, list[dict]] = defaultdict(list)
    for page in pages:
        page["words"] = set(words(page["text"]))
        page["tokens"] = words(page["text"])
        page["grams"] = ngrams(page["tokens"], SYNDICATED_NGRAM)
        if page["lang"] and page["text"]:
            by_lang[page["lang"]].append(page)
    syndicated = mislabelled = 0
    for page in pages:
        n = len(page["description"].split())
        if not (page["lang"] and page["text"]
                and DESCRIPTION_WORDS[0] <= n <= DESCRIPTION_WORDS[1]):
            continue
        if language_key(page["lang"]) and written_in(page["description"]) not in (
                None, language_key(page["lang"])):
            mislabelled += 1
            continue
        lead = Lead(page["description"], page["lang"], f"description of {page['url']}")
        desc_tokens = words(page["description"])
        grams = ngrams(desc_tokens, SYNDICATED_NGRAM)
        for other in by_lang[page["lang"]]:
            if other["host"] == page["host"]:
                continue
            if not grams.isdisjoint(other["grams"]):
                syndicated += 1
                continue
            sets["description_vs_other_page"].add(lead, other["url"], other["words"])
        if contains_sequence(page["tokens"], desc_tokens):
            sets["page_with_description"].add(lead, page["url"], page["words"])
        rest = without_shared_sentences(page["text"], page["description"])
        if len(words(rest)) >= MIN_SAME_TOPIC_WORDS:
            sets["same_topic_page"].add(lead, f"{page['url']} (shared sentences removed)",
                                        set(words(rest)))
    left_out = {"syndicated_pairs": syndicated, "mislabelled_descriptions": mislabelled}

    mirrors_by_lang: dict[str, list[dict]] = defaultdict(list)
    for article in articles:
        mirrors_by_lang[article["lang"]].append(article)
    for article in articles:
        if len(words(article["lead"])) < MIN_WIKI_LEAD_WORDS:
            continue
        lead = Lead(article["lead"], article["lang"], f"lead of {article['stem']}")
        for other in by_lang.get(article["lang"], []):
            sets["wikipedia_lead_vs_page"].add(lead, other["url"], other["words"])
        for other in mirrors_by_lang[article["lang"]]:
            if other is not article:
                sets["wikipedia_lead_vs_other_mirror"].add(
                    lead, f"mirror of {other['stem']}",
                    set(words(other["mirrors"]["full_verbatim"])))
        pages_in_lang = by_lang.get(article["lang"], [])
        if pages_in_lang:
            host = pages_in_lang[zlib.crc32(article["stem"].encode()) % len(pages_in_lang)]
            partial = half_lead_in(host["text"], article["lead"])
            if partial is not None:
                sets["half_lead_in_page"].add(lead, f"half the lead in {host['url']}",
                                              set(words(partial)))
        for variant, text in article["mirrors"].items():
            name = "mirror_" + variant.replace("_verbatim", "")
            sets[name].add(lead, f"{variant} mirror of {article['stem']}", set(words(text)))
    for lead, label, text in whirlwind:
        sets["commoncrawl_wikipedia"].add(lead, label, set(words(text)))
    return sets, left_out


def summarise(sets: dict[str, Tally]) -> dict:
    negatives = [s for s in (*UNRELATED, *HARD) if s in sets]
    borderline = [s for s in BORDERLINE if s in sets]
    positives = sorted(s for s in sets if s not in negatives and s not in borderline)
    result: dict = {"pairs": {s: len(sets[s].pairs) for s in sets},
                    "negatives": negatives, "positives": positives, "borderline": borderline,
                    "by_measure": {}}
    for measure in MEASURES:
        rows = {}
        unrelated = [v for s in UNRELATED for v in sets[s].recalls[measure]]
        for t in THRESHOLDS:
            row = {"fpr": {s: round(sets[s].rate(measure, t), 4) for s in negatives},
                   "tpr": {s: round(sets[s].rate(measure, t), 4) for s in positives},
                   "dropped": {s: round(sets[s].rate(measure, t), 4) for s in borderline}}
            row["fpr_unrelated_pooled"] = round(sum(v > t for v in unrelated) / len(unrelated), 5)
            row["tpr_mean"] = round(sum(row["tpr"].values()) / len(positives), 4)
            row["tpr_min"] = min(row["tpr"].values())
            rows[f"{t:g}"] = row
        low = [t for t in THRESHOLDS if rows[f"{t:g}"]["fpr_unrelated_pooled"] <= MAX_FPR]
        high = [t for t in THRESHOLDS if rows[f"{t:g}"]["tpr_min"] >= MIN_TPR]
        band = [min(low), max(high)] if low and high and min(low) <= max(high) else None
        result["by_measure"][measure] = {
            "thresholds": rows,
            "quantiles": {s: quantiles(sets[s].recalls[measure])
                          for s in (*negatives, *borderline, *positives)},
            "usable_thresholds": band,
        }
    return result


def recommend(summary: dict) -> dict:
    """The measure whose usable band of thresholds (pooled unrelated FPR <= MAX_FPR, every
    positive set at TPR >= MIN_TPR) is widest, and the band's middle, rounded down to the grid;
    without a band, the measure with the lower pooled FPR at 0.5."""
    bands = {m: summary["by_measure"][m]["usable_thresholds"] for m in ("unigram", "content")}
    with_band = {m: b for m, b in bands.items() if b}
    if with_band:
        measure = max(with_band, key=lambda m: (with_band[m][1] - with_band[m][0],
                                                m == "content"))
        middle = sum(with_band[measure]) / 2
        threshold = max(t for t in THRESHOLDS if t <= middle + 1e-9)
    else:
        measure = min(bands, key=lambda m: summary["by_measure"][m]["thresholds"]["0.5"][
            "fpr_unrelated_pooled"])
        threshold = 0.5
    return {"measure": measure, "threshold": threshold, "usable_thresholds": bands,
            "rule": f"usable: pooled unrelated FPR <= {MAX_FPR}, every positive set TPR >= "
                    f"{MIN_TPR}; the measure with the widest usable band, at its middle"}


def dropped(sets: dict[str, Tally], measure: str, threshold: float, limit: int) -> dict:
    pairs = [p for s in UNRELATED for p in sets[s].pairs if p[measure] > threshold]
    pairs.sort(key=lambda p: -p[measure])
    return {"count": len(pairs), "by_language": dict(Counter(p["lang"] for p in pairs)),
            "top": pairs[:limit]}


def per_lead_drops(tally: Tally, measure: str, threshold: float) -> dict:
    """How the drops of one set spread over its leads (the reported symptom is per lead)."""
    per: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for p in tally.pairs:
        per[p["lead"]][0] += p[measure] > threshold
        per[p["lead"]][1] += 1
    shares = sorted(d / n for d, n in per.values())
    return {"leads": len(shares), "leads_with_a_drop": sum(s > 0 for s in shares),
            "mean_share_dropped": round(sum(shares) / len(shares), 4),
            "max_share_dropped": round(shares[-1], 4)}


# --- Main ---------------------------------------------------------------------------------------

def load_pages(data: Path) -> list[tuple[str, Path, str]]:
    folder = data / "extraction"
    entries = json.loads((folder / "evaldata.json").read_text(encoding="utf-8"))
    tasks = []
    for url, entry in sorted(entries.items(), key=lambda item: item[1]["file"]):
        path = folder / "pages" / (entry["file"] + ".gz")
        if path.exists():
            description = htmllib.unescape(entry.get("description") or "").strip()
            tasks.append((url, path, description))
    return tasks


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="the shared data folder (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                        help="worker processes for extraction (default: %(default)s)")
    parser.add_argument("--examples", type=int, default=25,
                        help="negatives listed per measure (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if not (args.data / "extraction" / "evaldata.json").exists():
        parser.error(f"no shared data at {args.data}")

    start = time.perf_counter()
    tasks = load_pages(args.data)
    print(f"clones: {len(tasks)} extraction pages, {args.jobs} workers", flush=True)
    with ProcessPoolExecutor(args.jobs) as pool:
        pages = list(pool.map(read_page, tasks, chunksize=8))
        fillers: dict[str, list[str]] = defaultdict(list)
        for page in pages:
            if page["lang"]:
                fillers[page["lang"]].extend(page["text"].split()[:200])
        article_tasks = []
        folder = args.data / "wikipedia" / "wikitext" / "articles"
        for path in sorted(folder.glob("*.txt")):
            lang = WIKI_LANG.get(path.stem, "en")
            pool_words = fillers.get(lang) or fillers["en"]
            article_tasks.append((path.stem, path.read_text(encoding="utf-8"), lang,
                                  pool_words))
        articles = [a for a in pool.map(read_article, article_tasks) if not a["redirect"]]
    extracted = time.perf_counter() - start
    whirlwind = whirlwind_pairs(args.data)
    sets, left_out = score(pages, articles, whirlwind)
    summary = {**summarise(sets), "description_left_out": left_out}
    wall = time.perf_counter() - start

    langs = Counter(p["lang"] or "none" for p in pages)
    print(f"pages by language: {dict(langs.most_common())}")
    print("pairs: " + ", ".join(f"{s} {n}" for s, n in summary["pairs"].items())
          + f"; left out {summary['description_left_out']}")
    for measure in MEASURES:
        info = summary["by_measure"][measure]
        print(f"\n{measure}: clone when recall > threshold")
        print(f"{'':35}" + "".join(f"{t:>7g}" for t in THRESHOLDS))
        for kind, names in (("fpr", summary["negatives"]), ("dropped", summary["borderline"]),
                            ("tpr", summary["positives"])):
            for name in names:
                cells = "".join(f"{info['thresholds'][f'{t:g}'][kind][name]:7.3f}"
                                for t in THRESHOLDS)
                print(f"{kind.upper()[:4]:4} {name:30}{cells}")
        for key in ("fpr_unrelated_pooled", "tpr_mean", "tpr_min"):
            cells = "".join(f"{info['thresholds'][f'{t:g}'][key]:7.3f}" for t in THRESHOLDS)
            print(f"{key:35}{cells}")
        print("recall quantiles " + ", ".join(f"{q:g}" for q in QUANTILES) + ":")
        for name, qs in info["quantiles"].items():
            print(f"  {name:32} " + " ".join(f"{v:.2f}" for v in qs.values()))
        print(f"usable thresholds (pooled FPR <= {MAX_FPR}, every TPR >= {MIN_TPR}): "
              f"{info['usable_thresholds']}")

    drops = {m: dropped(sets, m, 0.5, args.examples) for m in MEASURES}
    per_lead = {m: per_lead_drops(sets["description_vs_other_page"], m, 0.5) for m in MEASURES}
    for measure in ("unigram", "content"):
        d = drops[measure]
        print(f"\nunrelated negatives {measure} drops at 0.5: {d['count']} "
              f"{d['by_language']}; per description: {per_lead[measure]}")
        for p in d["top"][:10]:
            print(f"  unigram {p['unigram']:.2f} content {p['content']:.2f}  "
                  f"{p['lead'][:70]} -> {p['document'][:70]}")

    recommendation = recommend(summary)
    print(f"\nrecommended: {recommendation}")

    result = {
        "command": command_line(argv),
        "machine": describe(args.jobs),
        "wall_s": round(wall, 1), "extraction_s": round(extracted, 1),
        "pages_by_language": dict(langs.most_common()),
        **summary,
        "dropped_at_0.5": drops,
        "per_description_drops_at_0.5": per_lead,
        "same_topic_dropped_at_0.5": {m: sorted((p for p in sets["same_topic_page"].pairs
                                                 if p[m] > 0.5), key=lambda p: -p[m])[
                                                     :args.examples] for m in MEASURES},
        "positives_missed_at_0.5": {m: [p for s in summary["positives"]
                                        for p in sets[s].pairs if p[m] <= 0.5]
                                    for m in MEASURES},
        "recommendation": recommendation,
    }
    write_results(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
