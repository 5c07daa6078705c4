"""bench/job_overheads.py: what a local Beam job pays besides its pages, paired.

Each part is measured two ways in one process, the ways alternated (the order turned every
round) so that a machine that speeds up or slows down moves both alike; the figure is the
median of each way's rounds:

  steps        a local job (LocalRunner, in this process) of 3 values through 10 Map steps, 60
               Map steps, and 10 Map steps and 5 Reshuffles: what a step and a reshuffle cost
  model        the language model loaded from py3langid's compressed file and from the
               unpacked copy in the cache folder (``langwalk.load``; a folder under --work)
  language     ``language.identify`` page by page and ``language.identify_many`` a batch of
               32 at a time, on the first 1,000 characters of the shared extraction pages'
               main texts (where present) or of the sample's pages

It prints the seconds of each and writes them to --out. Costs inside Beam itself (its state
sampler, its inspection of DoFns, its options' views) are measured by bench/beam_costs.py.
Run by hand on an idle machine:

    .venv/bin/python bench/job_overheads.py --config configs/bench/job-overheads.yaml
"""

from __future__ import annotations

import argparse
import gzip
import json
import shlex
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def alternate(ways: dict, rounds: int) -> dict:
    """{way: median seconds} over ``rounds`` rounds, the ways' order reversed every round."""
    names = list(ways)
    times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            start = time.perf_counter()
            ways[name]()
            times[name].append(time.perf_counter() - start)
    return {"median_s": {n: statistics.median(t) for n, t in times.items()}, "rounds_s": times}


def steps_part(rounds: int) -> dict:
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from wikisum.pipeline import beamio

    def job(maps: int, reshuffles: int):
        def run():
            with beam.Pipeline(runner=beamio.LocalRunner(), options=PipelineOptions([])) as p:
                x = p | beamio.Values([1, 2, 3])
                for i in range(maps):
                    x = x | f"Map{i}" >> beam.Map(lambda v: v)
                for i in range(reshuffles):
                    x = x | f"Reshuffle{i}" >> beam.Reshuffle()
        return run

    job(5, 0)()  # Beam's first-job costs, in neither way
    got = alternate({"10 maps": job(10, 0), "60 maps": job(60, 0),
                     "10 maps, 5 reshuffles": job(10, 5)}, rounds)
    m = got["median_s"]
    got["per_map_ms"] = (m["60 maps"] - m["10 maps"]) / 50 * 1000
    got["per_reshuffle_ms"] = (m["10 maps, 5 reshuffles"] - m["10 maps"]) / 5 * 1000
    return got


def model_part(work: Path, rounds: int) -> dict:
    from py3langid.langid import MODEL_FILE, LanguageIdentifier

    from wikisum.pipeline import language, langwalk

    cache = work / "overheads-cache"
    shutil.rmtree(cache, ignore_errors=True)
    model, depth = language._model_path(MODEL_FILE), langwalk.shipped_model_depth()
    kind = langwalk.vectorised(LanguageIdentifier)
    langwalk.load(kind, model, depth, cache)  # writes the entry
    return alternate({"unpacked from py3langid's file": lambda: langwalk.load(kind, model, depth),
                      "mapped from the cache": lambda: langwalk.load(kind, model, depth, cache)},
                     rounds)


def language_part(texts: list[str], rounds: int) -> dict:
    from wikisum.pipeline import language

    language.load()

    def each():
        for text in texts:
            language.identify(text)

    def batches():
        for start in range(0, len(texts), 32):
            language.identify_many(texts[start:start + 32])

    assert [language.identify(t) for t in texts] == language.identify_many(texts)
    got = alternate({"identify, page by page": each, "identify_many, 32 a batch": batches},
                    rounds)
    got["texts"] = len(texts)
    got["us_per_text"] = {k: v / len(texts) * 1e6 for k, v in got["median_s"].items()}
    return got


def main_texts(pages_dir: Path, work: Path, limit: int) -> tuple[str, list[str]]:
    from wikisum.pipeline.webtext import decode_body, extract_main_text

    if pages_dir.is_dir():
        where = f"the shared extraction pages ({pages_dir})"
        htmls = [decode_body(gzip.decompress(p.read_bytes()), None)[0]
                 for p in sorted(pages_dir.glob("*.html.gz"))[:limit]]
    else:
        from bench.extraction_call import sample_pages

        where = "the sample's HTML pages"
        htmls = [html for html, _ in sample_pages(work, 1000, 0, limit)]
    texts = [extract_main_text(h, "http://example.com/", timeout_s=None) for h in htmls]
    return where, [t[:1000] for t in texts if t]


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from bench import options
    from bench.ingest import SHARED_PAGES

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/wikisum-bench-1000"),
                        help="a work directory (the language model's cache folder is made "
                             "there)")
    parser.add_argument("--real-pages", type=Path, default=SHARED_PAGES, metavar="DIR",
                        help="the shared extraction pages (the sample's pages where absent)")
    parser.add_argument("--texts", type=int, default=400, help="pages for the language part")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of each part")
    parser.add_argument("--out", type=Path, metavar="RESULTS.json",
                        default=ROOT / "bench" / "results" / "job_overheads.json")
    args = options.parse(parser, argv)
    work = args.work.resolve()

    results = {"bench": "job_overheads", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "command": shlex.join([sys.executable, *sys.argv]), "rounds": args.rounds}
    print("steps ...", flush=True)
    results["steps"] = steps_part(args.rounds)
    print("model ...", flush=True)
    results["model"] = model_part(work, args.rounds)
    where, texts = main_texts(args.real_pages, work, args.texts)
    print(f"language ({len(texts)} texts of {where}) ...", flush=True)
    results["language"] = language_part(texts, args.rounds)
    results["language"]["pages"] = where

    print()
    for part in ("steps", "model", "language"):
        print(f"{part}: " + ", ".join(f"{k} {v:.3f} s"
                                      for k, v in results[part]["median_s"].items()))
    s, lang = results["steps"], results["language"]["us_per_text"]
    print(f"  a Map step {s['per_map_ms']:.1f} ms, a Reshuffle {s['per_reshuffle_ms']:.1f} ms; "
          + ", ".join(f"{k} {v:.0f} us a text" for k, v in lang.items()))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
