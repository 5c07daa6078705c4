"""bench/extraction_call.py: how the cleaning calls trafilatura, paired.

The cleaning extracts a page's main text (trafilatura) in a helper thread, so that a runaway
page can be given up after its time limit (``wikisum.pipeline.webtext``). This script runs the
same pages four ways, alternated a batch at a time (the order turned one step every batch) so
that a machine that speeds up or slows down moves them all alike:

  before      how the cleaning called it before ``extract_main_texts`` (reproduced here): one
              hand-off a page, trafilatura reading its settings on every call
  in-thread   ``extract_main_text(..., timeout_s=None)``: in the calling thread, no time limit
              (what bench/ingest.py's bare loop does)
  per-page    ``extract_main_text(..., timeout_s=20)`` page after page: one hand-off a page
  per-batch   ``extract_main_texts(batch, timeout_s=20)``: one hand-off a batch, what
              ``clean_captures`` does; each page keeps its own time limit

(the last three with the settings read once, ``webtext._SETTINGS``) on the sample's HTML pages
(bench/ingest.py's corpus, made in --work or reused) and, where the shared extraction pages are
present, on those real pages. It prints the seconds of each way and their ratios, checks that
all four give the same texts, and writes the figures to --out. Run by hand on an idle machine:

    .venv/bin/python bench/extraction_call.py --config configs/bench/extraction-call.yaml
"""

from __future__ import annotations

import argparse
import functools
import json
import queue
import shlex
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODES = ("before", "in-thread", "per-page", "per-batch")
TIMEOUT_S = 20.0


def sample_pages(work: Path, articles: int, seed: int, limit: int) -> list[tuple[str, str]]:
    """(decoded HTML, URL) of the sample corpus's 2xx HTML captures, at most ``limit``."""
    from bench.ingest import make_corpus
    from wikisum.pipeline.ingest.config import CleanConfig
    from wikisum.pipeline.warcs import Capture, iter_records
    from wikisum.pipeline.webtext import decode_body

    corpus = make_corpus(work, "corpus", articles, seed)
    max_bytes = CleanConfig().max_page_bytes
    pages = []
    for path in corpus["warc"]:
        with open(path, "rb") as f:
            for rec in iter_records(f, path, max_bytes=max_bytes):
                if (isinstance(rec, Capture) and 200 <= rec.status < 300 and not rec.too_large
                        and "html" in (rec.content_type or "")):
                    pages.append((decode_body(rec.body, rec.content_type)[0], rec.url))
    return pages[:limit]


def shared_pages(pages_dir: Path, limit: int) -> list[tuple[str, str]]:
    from bench.ingest import real_pages
    from wikisum.pipeline.webtext import decode_body

    return [(decode_body(body, "text/html")[0], f"http://real{i}.example/")
            for i, body in enumerate(real_pages(pages_dir)[:limit])]


class PerPageBefore:
    """The cleaning's hand-off before ``extract_main_texts`` (commit 135b03c^,
    ``webtext._call_with_timeout``), reproduced: one request and one event a page, the caller
    waiting on each in turn."""

    def __init__(self) -> None:
        self.requests: queue.SimpleQueue = queue.SimpleQueue()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            function, outcome, done = self.requests.get()
            try:
                outcome["value"] = function()
            except BaseException as error:  # noqa: BLE001 - raised again by the caller
                outcome["error"] = error
            done.set()

    def call(self, function, timeout_s: float):
        outcome: dict = {}
        done = threading.Event()
        self.requests.put((function, outcome, done))
        if not done.wait(timeout_s):
            raise TimeoutError(f"longer than {timeout_s} s")
        if "error" in outcome:
            raise outcome["error"]
        return outcome["value"]


def measure(pages: list[tuple[str, str]], batch: int, rounds: int) -> dict:
    """Seconds of each way over ``pages`` ``rounds`` times, the ways alternated per batch (the
    order of the four turned one step every batch, so each way runs as often in each place)."""
    from trafilatura.settings import DEFAULT_CONFIG

    from wikisum.pipeline import webtext
    from wikisum.pipeline.webtext import ExtractionError, extract_main_texts

    old = PerPageBefore()

    def each(extract, chunk):  # a page's error in its place, as extract_main_texts gives it
        texts = []
        for html, url in chunk:
            try:
                texts.append(extract(html, url))
            except ExtractionError as error:
                texts.append(error)
        return texts

    def before(chunk):
        read_once, webtext._SETTINGS = webtext._SETTINGS, DEFAULT_CONFIG
        try:
            return each(lambda h, u: old.call(functools.partial(
                webtext._extract_page, h, u, webtext.DEFAULT_MAX_CHARS), TIMEOUT_S), chunk)
        finally:
            webtext._SETTINGS = read_once

    ways = {
        "before": before,
        "in-thread": lambda ch: each(
            lambda h, u: webtext.extract_main_text(h, u, timeout_s=None), ch),
        "per-page": lambda ch: each(
            lambda h, u: webtext.extract_main_text(h, u, timeout_s=TIMEOUT_S), ch),
        "per-batch": lambda ch: extract_main_texts(ch, timeout_s=TIMEOUT_S),
    }
    seconds = dict.fromkeys(MODES, 0.0)
    per_round = {mode: [] for mode in MODES}
    outputs: dict[str, list] = {}
    for r in range(rounds):
        spent = dict.fromkeys(MODES, 0.0)
        for i in range(0, len(pages), batch):
            chunk = pages[i:i + batch]
            k = (i // batch + r) % len(MODES)
            order = MODES[k:] + MODES[:k]
            for mode in order:
                start = time.perf_counter()
                texts = ways[mode](chunk)
                spent[mode] += time.perf_counter() - start
                if r == 0:
                    outputs.setdefault(mode, []).extend(
                        t if isinstance(t, str) else type(t).__name__ for t in texts)
        for mode in MODES:
            seconds[mode] += spent[mode]
            per_round[mode].append(spent[mode])
        print(f"  round {r + 1}/{rounds}: " + ", ".join(f"{m} {spent[m]:.2f} s" for m in MODES),
              flush=True)
    same = all(outputs[mode] == outputs["before"] for mode in MODES)

    def median_ratio(a: str, b: str) -> float:
        return statistics.median(x / y for x, y in zip(per_round[a], per_round[b], strict=True))

    ratios = {
        "per_batch_vs_before": median_ratio("per-batch", "before"),
        "per_page_vs_before": median_ratio("per-page", "before"),
        "per_batch_vs_per_page": median_ratio("per-batch", "per-page"),
        "per_page_vs_in_thread": median_ratio("per-page", "in-thread"),
        "per_batch_vs_in_thread": median_ratio("per-batch", "in-thread"),
    }
    return {"pages": len(pages), "batch": batch, "rounds": rounds, "seconds": seconds,
            "rounds_s": per_round, "ratios": ratios, "same_texts": same}


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from bench import options
    from bench.ingest import SHARED_PAGES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/wikisum-bench-1000"),
                        help="bench/ingest.py's work directory: its sample corpus is reused "
                             "or made there")
    parser.add_argument("--articles", type=int, default=1000, help="sample articles")
    parser.add_argument("--seed", type=int, default=0, help="sample seed")
    parser.add_argument("--pages", type=int, default=2000, help="sample pages used (at most)")
    parser.add_argument("--real-pages", type=Path, default=SHARED_PAGES, metavar="DIR",
                        help="the shared extraction pages (skipped where absent)")
    parser.add_argument("--batch", type=int, default=32,
                        help="pages a batch (clean_captures' CLEAN_BATCH_PAGES: 32)")
    parser.add_argument("--rounds", type=int, default=3, help="passes over the pages")
    parser.add_argument("--real-rounds", type=int, default=2,
                        help="passes over the real pages")
    parser.add_argument("--out", type=Path, metavar="RESULTS.json",
                        default=ROOT / "bench" / "results" / "extraction_call.json")
    args = options.parse(parser, argv)

    results = {"bench": "extraction_call", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "command": shlex.join([sys.executable, *sys.argv]), "timeout_s": TIMEOUT_S}
    sets = {"sample": (sample_pages(args.work.resolve(), args.articles, args.seed, args.pages),
                       args.rounds)}
    if args.real_pages.is_dir():
        sets["real"] = (shared_pages(args.real_pages, 10**9), args.real_rounds)
    else:
        print(f"note: {args.real_pages} is absent: no real-pages run", flush=True)
    for name, (pages, rounds) in sets.items():
        print(f"{name}: {len(pages)} pages, batches of {args.batch}, {rounds} rounds", flush=True)
        results[name] = measure(pages, args.batch, rounds)
    print()
    for name in sets:
        r = results[name]
        print(f"{name} ({r['pages']} pages x {r['rounds']}): "
              + ", ".join(f"{m} {r['seconds'][m]:.2f} s" for m in MODES))
        print("  medians of the rounds' ratios: "
              + ", ".join(f"{k.replace('_vs_', ' / ').replace('_', '-')} {v:.3f}"
                          for k, v in r["ratios"].items())
              + f"; the same texts all four ways: {r['same_texts']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nwrote {args.out}")
    return 0 if all(results[name]["same_texts"] for name in sets) else 1


if __name__ == "__main__":
    sys.exit(main())
