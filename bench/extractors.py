"""Speed of the paragraph extractors, and agreement with sumy's TextRank and SumBasic.

What it measures (the figures the extractors issue asks for):

* **Time per article** of every extractor (``rank`` on one article's paragraphs, tokenisation
  included) at 50, 200 and 800 paragraphs, and of sumy's ``TextRankSummarizer`` and
  ``SumBasicSummarizer`` on the same paragraphs. Target: TextRank and SumBasic at least 10 x
  faster than sumy's at 800 paragraphs (ratio of the medians over the articles).
* **Agreement of the top 10** with sumy: |our first 10 paragraphs & sumy's 10| / 10.

The paragraphs are real text from ``../shared/data``. Each benchmark article is one of the 71
wikitext articles (the ones with the most paragraphs): its lead is the target (for the cheating
oracle), its title the title, and its paragraphs are the section text split at blank lines,
without markup (``wikisum.pipeline.wikitext.parse_article``), keeping those of at least 8 words.
Like the references of a WikiSum article, an article's N paragraphs mix on-topic and unrelated text:
up to N/4 of its own paragraphs, the rest half paragraphs of the other wikitext articles and half
Gigaword articles (``gigaword/train.article.txt``, one per line, lowercased news sentences),
sampled with a seed made of ``--seed``, the title and N, deduplicated and shuffled.

sumy ranks sentences, not paragraphs, so it is given a document whose sentences are our
paragraphs: sumy's ``ObjectDocumentModel``, ``Paragraph`` and ``Sentence`` objects are built
directly, with a tokenizer object whose ``to_words`` is ``wikisum.core.text.words`` (sumy's
default tokenizer would need NLTK's punkt data, and both sides then count the same words). A fresh
document is built for every call, since sumy caches each sentence's words. sumy's TextRank runs
as it comes (no stop words, like ours); its SumBasic runs twice: with our content words (stop
words = the English function words of ``wikisum.core.stopwords`` plus every one-character token
and every token of digits, as ``wikisum.core.text.content_words``) and as it comes (no stop
words).

Two informative agreements explain the differences (see docs/benchmarks.md):

* ``textrank~sumy-similarity``: PageRank (networkx, as ours) on sumy's similarity (overlap
  counted with repeats, self-loops kept) instead of ours, against sumy's TextRank;
* ``sumbasic~paragraphs``: our SumBasic with every paragraph taken as one sentence (sumy's
  units), against sumy's SumBasic with the same content words; it is timed too, since it does
  the same amount of work as sumy's.

Timing: each call is repeated ``--repeat`` times (default 3) and the best time kept, except that
a call that takes longer than a second is not repeated (sumy at 800 paragraphs takes tens of
seconds; one run is then a stable measurement). Per size, the table shows the median over the
articles. The whole run takes about two minutes on a 2-core machine.

Run by hand, never by CI, after ``make setup`` (sumy comes with the ``dev`` extra)::

    .venv/bin/python bench/extractors.py                    # 3 articles x 50, 200, 800
    .venv/bin/python bench/extractors.py --articles 1 --sizes 50 200   # a smoke run

It prints a table with PASS/MISS for the target and writes every figure, the machine and the
command line to ``bench/results/extractors.json`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shlex
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402
from sumy.models.dom import ObjectDocumentModel, Paragraph, Sentence  # noqa: E402
from sumy.summarizers.sum_basic import SumBasicSummarizer  # noqa: E402
from sumy.summarizers.text_rank import TextRankSummarizer  # noqa: E402

from bench import options  # noqa: E402
from bench.machine import cpu_model  # noqa: E402
from wikisum import extractors  # noqa: E402
from wikisum.core import stopwords  # noqa: E402
from wikisum.core.text import content_words, words  # noqa: E402
from wikisum.extractors import sumbasic  # noqa: E402
from wikisum.extractors.base import count_matrix, order_by_score  # noqa: E402
from wikisum.pipeline.wikitext import parse_article  # noqa: E402

DATA = ROOT.parent / "shared" / "data"
WIKITEXT = DATA / "wikipedia" / "wikitext" / "articles"
GIGAWORD = DATA / "gigaword" / "train.article.txt"
DEFAULT_OUT = ROOT / "bench" / "results" / "extractors.json"
SIZES = (50, 200, 800)
MIN_WORDS = 8
TOP = 10
TARGET_SPEEDUP = 10.0
TARGET_SIZE = 800
EXTRACTORS = ("identity", "tfidf", "textrank", "sumbasic", "cheating")
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")


@dataclass(frozen=True)
class Article:
    title: str
    lead: str
    paragraphs: tuple[str, ...]


def load_articles() -> list[Article]:
    """Every wikitext article with a lead, its section paragraphs of >= MIN_WORDS words."""
    articles = []
    for path in sorted(WIKITEXT.glob("*.txt")):
        parsed = parse_article(path.stem, path.read_text(encoding="utf-8"))
        if parsed.is_redirect or not parsed.lead:
            continue
        paragraphs = tuple(p.strip() for section in parsed.sections
                           for p in _BLANK_LINE.split(section.text)
                           if len(words(p)) >= MIN_WORDS)
        articles.append(Article(parsed.title, parsed.lead, paragraphs))
    return articles


def load_gigaword() -> list[str]:
    with open(GIGAWORD, encoding="utf-8") as f:
        return [line.strip() for line in f if len(words(line)) >= MIN_WORDS]


def article_paragraphs(article: Article, others: Sequence[str], gigaword: Sequence[str],
                       n: int, seed: int) -> list[str]:
    """n distinct paragraphs: up to n/4 of the article's own, the rest half wiki, half news."""
    rng = random.Random(f"{seed}:{article.title}:{n}")
    own = list(dict.fromkeys(article.paragraphs))
    chosen = rng.sample(own, min(len(own), n // 4))
    seen = set(chosen)
    pools = [[p for p in dict.fromkeys(others) if p not in seen],
             [p for p in dict.fromkeys(gigaword) if p not in seen]]
    rest = n - len(chosen)
    chosen += rng.sample(pools[0], rest // 2) + rng.sample(pools[1], rest - rest // 2)
    rng.shuffle(chosen)
    assert len(set(chosen)) == n
    return chosen


class _Tokenizer:
    """What sumy's Sentence needs: our words, and no sentence splitting (a paragraph is one)."""

    @staticmethod
    def to_sentences(text: str) -> list[str]:
        return [text]

    @staticmethod
    def to_words(text: str) -> list[str]:
        return words(text)


def sumy_top(summarizer, paragraphs: Sequence[str]) -> list[int]:
    """The indices of the TOP paragraphs sumy selects (its output is in document order)."""
    tokenizer = _Tokenizer()
    document = ObjectDocumentModel([Paragraph([Sentence(p, tokenizer) for p in paragraphs])])
    index = {p: i for i, p in enumerate(paragraphs)}
    return [index[str(s)] for s in summarizer(document, TOP)]


def sumy_summarizers(paragraphs: Sequence[str]) -> dict[str, Callable[[], object]]:
    """Factories of the sumy summarizers, configured for ``paragraphs``."""

    def sumbasic_with_our_stop_words():
        summarizer = SumBasicSummarizer()
        # Our content words exactly (wikisum.core.text.content_words): English function words,
        # every one-character token and every token of digits.
        dropped = {w for p in paragraphs for w in words(p) if len(w) == 1 or w.isdigit()}
        summarizer.stop_words = set(stopwords.ENGLISH) | dropped
        return summarizer

    return {
        "textrank": TextRankSummarizer,
        "sumbasic": sumbasic_with_our_stop_words,
        "sumbasic (no stop words)": SumBasicSummarizer,
    }


def textrank_with_sumy_similarity(paragraphs: Sequence[str]) -> list[int]:
    """PageRank (networkx) on sumy's similarity: overlap with repeats, self-loops kept."""
    counts = count_matrix(paragraphs, words).astype(float)
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    overlap = (counts @ counts.T).tocoo()  # sum over p's tokens of their count in q
    norm = np.log(lengths[overlap.row]) + np.log(lengths[overlap.col])
    weight = np.divide(overlap.data, norm, out=overlap.data.copy(), where=norm > 0)
    graph = nx.from_scipy_sparse_array(sp.csr_matrix((weight, (overlap.row, overlap.col)),
                                                     shape=counts.shape[:1] * 2))
    rank = nx.pagerank(graph, alpha=0.85, weight="weight", tol=1e-10, max_iter=1000)
    return order_by_score(np.array([rank[i] for i in range(len(paragraphs))]))


def sumbasic_on_paragraphs(paragraphs: Sequence[str]) -> list[int]:
    """Our SumBasic with every paragraph taken as a single sentence."""
    counts = count_matrix(paragraphs, content_words).astype(float)
    n = len(paragraphs)
    picked = sumbasic._first_picks(counts, np.arange(n), n)
    seen = set(picked)
    return picked + [i for i in range(n) if i not in seen]


def best_time(call: Callable[[], object], repeat: int) -> tuple[float, object]:
    """The best of ``repeat`` runs, or of one run that takes more than a second."""
    best, result = float("inf"), None
    for _ in range(repeat):
        start = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - start)
        if best > 1.0:
            break
    return best, result


def agreement(ours: Sequence[int], theirs: Sequence[int]) -> float:
    return len(set(ours[:TOP]) & set(theirs)) / TOP


def machine_info() -> dict:
    import sklearn
    import sumy

    cpu = cpu_model()
    return {
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scipy": __import__("scipy").__version__,
        "scikit-learn": sklearn.__version__,
        "networkx": nx.__version__,
        "sumy": sumy.__version__,
        "loadavg_start": list(os.getloadavg()),
    }


def run_size(article: Article, paragraphs: list[str], repeat: int) -> dict:
    """Every timing and agreement for one article at one size."""
    out: dict = {"title": article.title, "paragraphs": len(paragraphs), "ours_s": {},
                 "sumy_s": {}, "agreement": {}}
    orders = {}
    for name in EXTRACTORS:
        extractor = extractors.get(name)
        out["ours_s"][name], orders[name] = best_time(
            lambda e=extractor: e.rank(article.title, paragraphs, target=article.lead), repeat)
    out["variant_s"] = {}
    out["variant_s"]["sumbasic~paragraphs"], paragraph_sumbasic = best_time(
        lambda: sumbasic_on_paragraphs(paragraphs), repeat)
    picks = {}
    for name, factory in sumy_summarizers(paragraphs).items():
        out["sumy_s"][name], picks[name] = best_time(
            lambda f=factory: sumy_top(f(), paragraphs), repeat)
    out["agreement"] = {
        "textrank": agreement(orders["textrank"], picks["textrank"]),
        "sumbasic": agreement(orders["sumbasic"], picks["sumbasic"]),
        "sumbasic vs sumy without stop words": agreement(orders["sumbasic"],
                                                         picks["sumbasic (no stop words)"]),
        "textrank~sumy-similarity": agreement(textrank_with_sumy_similarity(paragraphs),
                                              picks["textrank"]),
        "sumbasic~paragraphs": agreement(paragraph_sumbasic, picks["sumbasic"]),
    }
    return out


def summarise(runs: list[dict], sizes: Sequence[int]) -> dict:
    """Per size: median times over the articles, speedups, mean agreements."""
    figures = {}
    for n in sizes:
        at = [r for r in runs if r["paragraphs"] == n]
        ours = {k: statistics.median(r["ours_s"][k] for r in at) for k in EXTRACTORS}
        sumy = {k: statistics.median(r["sumy_s"][k] for r in at) for k in at[0]["sumy_s"]}
        variant = {k: statistics.median(r["variant_s"][k] for r in at)
                   for k in at[0]["variant_s"]}
        figures[n] = {
            "ours_ms": {k: 1000 * v for k, v in ours.items()},
            "sumy_ms": {k: 1000 * v for k, v in sumy.items()},
            "variant_ms": {k: 1000 * v for k, v in variant.items()},
            "speedup": {
                "textrank": sumy["textrank"] / ours["textrank"],
                "sumbasic": sumy["sumbasic"] / ours["sumbasic"],
                "sumbasic vs sumy without stop words":
                    sumy["sumbasic (no stop words)"] / ours["sumbasic"],
                "sumbasic~paragraphs": sumy["sumbasic"] / variant["sumbasic~paragraphs"],
            },
            "agreement": {k: statistics.mean(r["agreement"][k] for r in at)
                          for k in at[0]["agreement"]},
        }
    return figures


def report(figures: dict, targets: list[dict], machine: dict, articles: list[str]) -> None:
    print(f"\nmachine: {machine['nproc']} CPUs ({machine['cpu']}), Python {machine['python']}, "
          f"sumy {machine['sumy']}, networkx {machine['networkx']}; load "
          f"{machine['loadavg_start'][0]:.2f} -> {machine['loadavg_end'][0]:.2f}")
    print(f"articles: {', '.join(articles)}; medians over them, best of the repeats\n")
    for n, f in figures.items():
        print(f"{n} paragraphs")
        print("  ours, ms per article: " + ", ".join(
            f"{k} {v:.1f}" for k, v in f["ours_ms"].items()))
        print("  sumy, ms per article: " + ", ".join(
            f"{k} {v:.1f}" for k, v in f["sumy_ms"].items()))
        print("  variants, ms:         " + ", ".join(
            f"{k} {v:.1f}" for k, v in f["variant_ms"].items()))
        print("  speedup:              " + ", ".join(
            f"{k} {v:.1f} x" for k, v in f["speedup"].items()))
        print("  top-10 agreement:     " + ", ".join(
            f"{k} {v:.2f}" for k, v in f["agreement"].items()))
    print()
    for t in targets:
        print(f"  {'PASS' if t['pass'] else 'MISS'}  {t['target']}: {t['value']:.1f} x")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--articles", type=int, default=3, metavar="N",
                        help="benchmark articles: the N wikitext articles with the most "
                        "paragraphs (default: 3)")
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), metavar="N",
                        help="paragraphs per article (default: 50 200 800)")
    parser.add_argument("--repeat", type=int, default=3, metavar="N",
                        help="best of N runs per call; calls over a second run once")
    parser.add_argument("--seed", type=int, default=0, help="paragraph sampling seed")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="RESULTS.json",
                        help="results file (default: bench/results/extractors.json)")
    args = options.parse(parser, argv)
    if not WIKITEXT.is_dir() or not GIGAWORD.is_file():
        parser.error(f"real data not found under {DATA}")

    machine = machine_info()
    if machine["loadavg_start"][0] > 0.5:
        print(f"warning: load average {machine['loadavg_start'][0]:.2f} before the runs; "
              "something else is using the CPU", flush=True)
    articles = load_articles()
    gigaword = load_gigaword()
    chosen = sorted(articles, key=lambda a: (-len(a.paragraphs), a.title))[:args.articles]
    runs = []
    for article in chosen:
        others = [p for a in articles if a.title != article.title for p in a.paragraphs]
        for n in args.sizes:
            paragraphs = article_paragraphs(article, others, gigaword, n, args.seed)
            runs.append(run_size(article, paragraphs, args.repeat))
            print(f"  {article.title}, {n} paragraphs: ours " + ", ".join(
                f"{k} {1000 * v:.1f} ms" for k, v in runs[-1]["ours_s"].items())
                + "; sumy " + ", ".join(f"{k} {1000 * v:.0f} ms"
                                        for k, v in runs[-1]["sumy_s"].items()), flush=True)
    machine["loadavg_end"] = list(os.getloadavg())

    figures = summarise(runs, args.sizes)
    targets = []
    if TARGET_SIZE in figures:
        for name in ("textrank", "sumbasic"):
            value = figures[TARGET_SIZE]["speedup"][name]
            targets.append({"target": f"{name} >= {TARGET_SPEEDUP:.0f} x faster than sumy at "
                            f"{TARGET_SIZE} paragraphs", "value": value,
                            "pass": value >= TARGET_SPEEDUP})
    report(figures, targets, machine, [a.title for a in chosen])
    results = {
        "bench": "extractors",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": shlex.join([sys.executable, *sys.argv]),
        "repeat": args.repeat,
        "seed": args.seed,
        "machine": machine,
        "corpus": {
            "wikitext_articles": len(articles),
            "wikitext_paragraphs": sum(len(a.paragraphs) for a in articles),
            "gigaword_articles": len(gigaword),
            "benchmark_articles": {a.title: len(a.paragraphs) for a in chosen},
        },
        "figures": {str(n): f for n, f in figures.items()},
        "targets": targets,
        "runs": runs,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
