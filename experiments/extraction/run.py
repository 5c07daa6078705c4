"""How well the cleaning path keeps a page's article text and drops the rest, on real pages.

The path measured is the one ``wikisum ingest`` runs on every captured page
(``wikisum.pipeline.references.clean_capture``): decode the bytes
(``webtext.decode_body``), keep the main text (``webtext.extract_main_text``), cut it into
paragraphs (``core.paragraphs.split_paragraphs``) and filter them
(``core.paragraphs.filter_paragraphs``). It is
scored against trafilatura's own evaluation set (``../shared/data/extraction``: 884 real pages,
mostly German and English news, blogs, shops and institutional pages, each with snippets that
belong to the main text, ``with``, and snippets that must not appear, ``without``).

Variants, each scored on the same pages:

* ``trafilatura_default``: ``trafilatura.extract(page_bytes)`` with the library's defaults
  (its own decoding; comments and tables included).
* ``ours_unfiltered``: our decoding and settings, the paragraphs as split, no filter.
* ``ours_filtered``: the same, after the paragraph filter, i.e. what ingest keeps.
* ``ours_previous_filter``: the same paragraphs through the rules ingest used before the filter
  was reworked (too few words / no sentence punctuation / no letters), kept here as the
  baseline the rework is measured against.

Metrics, over all pages (trafilatura's evaluation): a ``with`` snippet found in the output is a
true positive, one missing a false negative; a ``without`` snippet found is a false positive.
Precision = TP / (TP + FP), recall = TP / (TP + FN). "Found" is judged two ways:

* ``shingle``: word-shingle matching, as extraction benchmarks do: the snippet and the output
  are lowercased word tokens (``wikisum.core.text.words``), and a snippet counts by the
  share of its word 3-shingles (the whole snippet when shorter) that occur in the output, so a
  snippet half kept counts half. Punctuation, case and whitespace do not matter.
* ``exact``: the snippet, whitespace collapsed, is a substring of the output, whitespace
  collapsed (trafilatura's own test; sensitive to how list markers and quotes are rendered).

Also: pages/s per core (CPU seconds of the worker processes, each stage timed on its own) and,
for the filter, what each drop reason removed: paragraphs, and how many ``with`` and
``without`` snippets they held (a reason that removes ``with`` snippets costs recall).

Run by hand, never by CI (about a minute on 2 cores)::

    .venv/bin/python experiments/extraction/run.py
    .venv/bin/python experiments/extraction/run.py --limit 100 --examples 5   # a smoke run

It prints the figures and writes them, the machine and the command line to
``experiments/results/extraction.json`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from machine import command_line, describe, write_results  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "extraction"
DEFAULT_OUT = ROOT / "experiments" / "results" / "extraction.json"
VARIANTS = ("trafilatura_default", "ours_unfiltered", "ours_filtered", "ours_previous_filter")
SHINGLE = 3


# --- Scoring ------------------------------------------------------------------------------------

def _tokens(text: str) -> list[str]:
    from wikisum.core.text import words

    return words(text)


def _shingles(tokens: list[str], n: int = SHINGLE) -> set[tuple[str, ...]]:
    if len(tokens) < n:
        return {tuple(tokens)} if tokens else set()
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


class Output:
    """One variant's text of one page, prepared for snippet lookups."""

    def __init__(self, text: str) -> None:
        self.flat = " ".join(text.split())
        tokens = _tokens(text)
        self.joined = " " + " ".join(tokens) + " "
        self.shingles = _shingles(tokens)

    def exact(self, snippet: str) -> float:
        return float(" ".join(snippet.split()) in self.flat)

    def shingle(self, snippet: str) -> float:
        tokens = _tokens(snippet)
        if not tokens:
            return 0.0
        if len(tokens) < SHINGLE:  # a short snippet: its words in sequence
            return float(" " + " ".join(tokens) + " " in self.joined)
        wanted = _shingles(tokens)
        return len(wanted & self.shingles) / len(wanted)


def score(text: str, entry: dict) -> dict[str, list[float]]:
    """{metric: [tp, fn, fp, tn]} of one page's output."""
    out = Output(text)
    result = {}
    for metric in ("shingle", "exact"):
        found = getattr(out, metric)
        tp = sum(found(s) for s in entry["with"])
        fp = sum(found(s) for s in entry["without"])
        result[metric] = [tp, len(entry["with"]) - tp, fp, len(entry["without"]) - fp]
    return result


def prf(counts: list[float]) -> dict[str, float]:
    tp, fn, fp, _tn = counts
    precision = tp / (tp + fp) if tp + fp else 0.0
    recall = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": round(precision, 4), "recall": round(recall, 4), "f1": round(f1, 4)}


# --- The previous filter (the baseline) ---------------------------------------------------------

def previous_drop_reason(paragraph: str) -> str | None:
    """The paragraph rules ingest used before the rework: no letters, under 5 words, and
    webtext's no-sentence rule (which it still applies to plain text) for every paragraph."""
    from wikisum.core import paragraphs as para

    if not any(ch.isalpha() for ch in paragraph):
        return "no_letters"
    n_words = len(_tokens(paragraph))
    if n_words < 5:
        return "too_few_words"
    if para._SENTENCE_END.search(paragraph) is None \
            and para._looks_like_non_prose(paragraph, n_words):
        return "no_sentence"
    return None


# --- One page -----------------------------------------------------------------------------------

def run_page(task: tuple[str, bytes, dict]) -> dict:
    """Every variant on one page: scores, CPU seconds per stage, and the filter's drops."""
    import trafilatura

    from wikisum.core import paragraphs as para
    from wikisum.pipeline import webtext

    url, body, entry = task
    cpu = {}
    texts = {}

    start = time.process_time()
    try:
        texts["trafilatura_default"] = trafilatura.extract(body, url=url) or ""
    except Exception:  # the library's own failure on a page scores as an empty output
        texts["trafilatura_default"] = ""
    cpu["trafilatura_default"] = time.process_time() - start

    start = time.process_time()
    try:
        html, _encoding = webtext.decode_body(body, None)
        main = webtext.extract_main_text(html, url, timeout_s=None)
    except (webtext.DecodeError, webtext.ExtractionError):
        main = ""
    paragraphs = para.split_paragraphs(main)
    cpu["ours_unfiltered"] = time.process_time() - start

    start = time.process_time()
    kept, dropped = para.filter_paragraphs(paragraphs)
    cpu["filter"] = time.process_time() - start
    previous = [(p, previous_drop_reason(p)) for p in paragraphs]

    texts["ours_unfiltered"] = "\n".join(paragraphs)
    texts["ours_filtered"] = "\n".join(kept)
    texts["ours_previous_filter"] = "\n".join(p for p, reason in previous if reason is None)

    drops: dict[str, dict[str, Counter]] = {"ours_filtered": {}, "ours_previous_filter": {}}
    for variant, pairs in (("ours_filtered", dropped),
                           ("ours_previous_filter", [(p, r) for p, r in previous if r])):
        for paragraph, reason in pairs:
            tally = drops[variant].setdefault(reason, Counter())
            tally["paragraphs"] += 1
            words = len(_tokens(paragraph))
            tally["words"] += words
            held = Output(paragraph)
            for kind in ("with", "without"):
                if any(held.shingle(s) >= 0.5 for s in entry[kind]):
                    tally[kind] += 1
    # The snippets the filter lost (found unfiltered, missing filtered), for --examples.
    unfiltered = Output(texts["ours_unfiltered"])
    filtered = Output(texts["ours_filtered"])
    lost = []
    for snippet in entry["with"]:
        if unfiltered.shingle(snippet) - filtered.shingle(snippet) > 0.5:
            holders = [(p, r) for p, r in dropped if Output(p).shingle(snippet) >= 0.5]
            lost.append({"snippet": snippet, "dropped_as": holders[:2]})
    return {
        "url": url,
        "file": entry["file"],
        "scores": {variant: score(texts[variant], entry) for variant in VARIANTS},
        "cpu": cpu,
        "paragraphs": len(paragraphs),
        "kept": len(kept),
        "drops": {v: {r: dict(c) for r, c in d.items()} for v, d in drops.items()},
        "lost": lost,
    }


# --- Driver -------------------------------------------------------------------------------------

def load(data: Path, limit: int | None) -> list[tuple[str, bytes, dict]]:
    entries = json.loads((data / "evaldata.json").read_text(encoding="utf-8"))
    tasks = []
    for url, entry in sorted(entries.items(), key=lambda item: item[1]["file"]):
        path = data / "pages" / (entry["file"] + ".gz")
        if not path.exists():
            continue
        tasks.append((url, gzip.decompress(path.read_bytes()), entry))
        if limit and len(tasks) >= limit:
            break
    return tasks


def summarise(pages: list[dict]) -> dict:
    totals = {v: {m: [0.0] * 4 for m in ("shingle", "exact")} for v in VARIANTS}
    for page in pages:
        for variant, metrics in page["scores"].items():
            for metric, counts in metrics.items():
                totals[variant][metric] = [a + b for a, b in zip(totals[variant][metric],
                                                                 counts, strict=True)]
    cpu = Counter()
    for page in pages:
        cpu.update(page["cpu"])
    n = len(pages)
    rates = {
        "trafilatura_default": n / cpu["trafilatura_default"],
        "ours_unfiltered": n / cpu["ours_unfiltered"],
        "ours_filtered": n / (cpu["ours_unfiltered"] + cpu["filter"]),
        "filter_only": n / cpu["filter"] if cpu["filter"] else None,
    }
    drops: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    for page in pages:
        for variant, reasons in page["drops"].items():
            for reason, tally in reasons.items():
                drops[variant][reason].update(tally)
    return {
        "pages": n,
        "paragraphs": sum(p["paragraphs"] for p in pages),
        "kept": sum(p["kept"] for p in pages),
        "metrics": {v: {m: prf(c) for m, c in totals[v].items()} for v in VARIANTS},
        "counts": {v: {m: [round(x, 2) for x in c] for m, c in totals[v].items()}
                   for v in VARIANTS},
        "pages_per_cpu_second": {k: round(v, 1) if v else v for k, v in rates.items()},
        "filter_drops": {v: {r: dict(c) for r, c in sorted(d.items())}
                         for v, d in drops.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="the evaluation set: evaldata.json and pages/ (default: %(default)s)")
    parser.add_argument("--limit", type=int, default=None, help="score the first N pages only")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="worker processes (default: the CPU count)")
    parser.add_argument("--examples", type=int, default=0,
                        help="print N snippets the filter lost, with the paragraph and reason")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if not (args.data / "evaldata.json").exists():
        parser.error(f"no evaluation set at {args.data} (evaldata.json and pages/)")

    tasks = load(args.data, args.limit)
    print(f"extraction: {len(tasks)} pages from {args.data}, {args.jobs} workers", flush=True)
    start = time.perf_counter()
    with ProcessPoolExecutor(args.jobs) as pool:
        pages = list(pool.map(run_page, tasks, chunksize=8))
    wall = time.perf_counter() - start
    summary = summarise(pages)

    print(f"\n{summary['pages']} pages, {summary['paragraphs']} paragraphs, "
          f"{summary['kept']} kept by the filter ({wall:.0f} s wall)")
    print(f"{'variant':24} {'shingle P':>9} {'R':>7} {'F1':>7}   {'exact P':>7} {'R':>7} "
          f"{'F1':>7}")
    for variant in VARIANTS:
        s, e = summary["metrics"][variant]["shingle"], summary["metrics"][variant]["exact"]
        print(f"{variant:24} {s['precision']:9.4f} {s['recall']:7.4f} {s['f1']:7.4f}   "
              f"{e['precision']:7.4f} {e['recall']:7.4f} {e['f1']:7.4f}")
    print("\npages per CPU second:", json.dumps(summary["pages_per_cpu_second"]))
    for variant, reasons in summary["filter_drops"].items():
        print(f"\n{variant} drops (paragraphs / holding a 'with' snippet / a 'without' one):")
        for reason, tally in reasons.items():
            print(f"  {reason:24} {tally.get('paragraphs', 0):6} "
                  f"{tally.get('with', 0):6} {tally.get('without', 0):6}")
    if args.examples:
        print("\nsnippets the filter lost:")
        shown = 0
        for page in pages:
            for item in page["lost"]:
                if shown >= args.examples:
                    break
                shown += 1
                print(f"- {page['file']}: {item['snippet']!r}")
                for paragraph, reason in item["dropped_as"]:
                    print(f"    {reason}: {paragraph[:160]!r}")

    result = {
        "command": command_line(argv),
        "machine": describe(args.jobs),
        "wall_s": round(wall, 1),
        **summary,
        "lost": [{"file": p["file"], **item} for p in pages for item in p["lost"]],
    }
    write_results(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
