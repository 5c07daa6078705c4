"""bench/handoff.py: what handing pages to the extraction's helper thread costs, paired.

The cleaning extracts a page's main text (trafilatura) in a helper thread, so that a runaway
page can be given up after its time limit (``wikisum.pipeline.webtext``). This script runs the
same pages three ways, alternated a batch at a time so that a machine that speeds up or slows
down moves all three alike:

  in-thread   ``extract_main_text(..., timeout_s=None)``: in the calling thread, no time limit
              (what bench/ingest.py's bare loop does)
  per-page    ``extract_main_text(..., timeout_s=20)`` page after page: one hand-off a page
  per-batch   ``extract_main_texts(batch, timeout_s=20)``: one hand-off a batch, what
              ``clean_captures`` does; each page keeps its own time limit

on the sample's HTML pages (bench/ingest.py's corpus, made in --work or reused) and, where the
shared extraction pages are present, on those real pages. It prints the seconds of each way and
their ratios, and writes them to --out. Run by hand on an idle machine:

    .venv/bin/python bench/handoff.py --config configs/bench/handoff.yaml
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODES = ("in-thread", "per-page", "per-batch")
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


def measure(pages: list[tuple[str, str]], batch: int, rounds: int) -> dict:
    """Seconds of each way over ``pages`` ``rounds`` times, the ways alternated per batch (the
    order of the three turned around every other batch)."""
    from wikisum.pipeline.webtext import extract_main_text, extract_main_texts

    ways = {
        "in-thread": lambda ch: [extract_main_text(h, u, timeout_s=None) for h, u in ch],
        "per-page": lambda ch: [extract_main_text(h, u, timeout_s=TIMEOUT_S) for h, u in ch],
        "per-batch": lambda ch: extract_main_texts(ch, timeout_s=TIMEOUT_S),
    }
    seconds = dict.fromkeys(MODES, 0.0)
    per_round = {mode: [] for mode in MODES}
    outputs: dict[str, list] = {}
    for r in range(rounds):
        spent = dict.fromkeys(MODES, 0.0)
        for i in range(0, len(pages), batch):
            chunk = pages[i:i + batch]
            order = MODES if (i // batch + r) % 2 == 0 else MODES[::-1]
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
    same = outputs["in-thread"] == outputs["per-page"] == outputs["per-batch"]
    ratios = {
        "per_batch_vs_per_page": statistics.median(
            b / p for b, p in zip(per_round["per-batch"], per_round["per-page"], strict=True)),
        "per_page_vs_in_thread": statistics.median(
            p / t for p, t in zip(per_round["per-page"], per_round["in-thread"], strict=True)),
        "per_batch_vs_in_thread": statistics.median(
            b / t for b, t in zip(per_round["per-batch"], per_round["in-thread"], strict=True)),
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
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "handoff.json",
                        metavar="RESULTS.json")
    args = options.parse(parser, argv)

    results = {"bench": "handoff", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
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
        print("  medians of the rounds' ratios: per-batch / per-page "
              f"{r['ratios']['per_batch_vs_per_page']:.3f}, per-page / in-thread "
              f"{r['ratios']['per_page_vs_in_thread']:.3f}, per-batch / in-thread "
              f"{r['ratios']['per_batch_vs_in_thread']:.3f}; the same texts all three ways: "
              f"{r['same_texts']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nwrote {args.out}")
    return 0 if all(results[name]["same_texts"] for name in sets) else 1


if __name__ == "__main__":
    sys.exit(main())
