"""bench/beam_costs.py: costs inside Apache Beam and mwparserfromhell that a wikisum job pays,
measured through their public API, for the proposals in docs/beam-proposals.md.

  sampler   Beam's state sampler (``statesampler.StateSampler``, made as a bundle processor
            makes one), started, given a bundle's work (20 ms and 270 ms of computing), then
            stopped: the seconds ``stop()`` takes, with Beam's default sampling period (200 ms)
            and with a 5 ms period given to the constructor. ``stop()`` waits for the sampling
            thread's sleep to end, so a bundle's end waits up to a period.
  specs     the ingest job on a 1-article corpus, built and run on the local runner: its
            seconds; the calls of ``userstate.get_dofn_specs`` it makes (counted by cProfile);
            the seconds of one call on one of the job's DoFns (timed alone): calls x a call is
            what the job spends asking.
  views     the same for ``PipelineOptions.view_as`` (each call builds an argument parser and
            parses the flags again), a call timed on the job's flags.
  coercion  ``wikisum.pipeline.wikitext.parse_article`` on every page of a generated dump: its
            seconds; the calls of mwparserfromhell's ``utils.parse_anything`` it makes; one call
            on a Wikicode (returned as it is, after four function-level imports), timed alone.

cProfile only counts calls here: it slows what it watches, so every second is timed without it.
Run by hand on an idle machine:

    .venv/bin/python bench/beam_costs.py --config configs/bench/beam-costs.yaml
"""

from __future__ import annotations

import argparse
import bz2
import cProfile
import json
import pstats
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def busy(seconds: float) -> None:
    """Compute (not sleep) for about ``seconds``."""
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        total += sum(range(1000))


def sampler_part(rounds: int) -> dict:
    from apache_beam.runners.worker import statesampler
    from apache_beam.utils.counters import CounterFactory

    got: dict = {}
    for work_s in (0.02, 0.27):
        for period in (statesampler.DEFAULT_SAMPLING_PERIOD_MS, 5):
            stops = []
            for _ in range(rounds):
                sampler = statesampler.StateSampler("bench", CounterFactory(),
                                                    sampling_period_ms=period)
                sampler.start()
                busy(work_s)
                start = time.perf_counter()
                sampler.stop()
                stops.append(time.perf_counter() - start)
            got[f"{work_s * 1000:.0f} ms of work, period {period} ms"] = {
                "stop_median_ms": statistics.median(stops) * 1000,
                "stop_max_ms": max(stops) * 1000}
    return got


def profiled(run) -> pstats.Stats:
    profile = cProfile.Profile()
    profile.enable()
    try:
        run()
    finally:
        profile.disable()
    return pstats.Stats(profile)


def calls_of(stats: pstats.Stats, filename_end: str, function: str) -> int:
    """Calls of one function (by its file's path end and its name)."""
    return sum(ncalls for (filename, _, name), (_, ncalls, _, _, _) in stats.stats.items()
               if name == function and filename.endswith(filename_end))


def per_call(call, n: int = 2000) -> float:
    """Seconds of one ``call()``, the median of 5 timings of ``n`` calls."""
    times = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(n):
            call()
        times.append((time.perf_counter() - start) / n)
    return statistics.median(times)


def cost(calls: int, seconds_a_call: float, of_s: float) -> dict:
    return {"calls": calls, "per_call_us": seconds_a_call * 1e6,
            "estimate_s": calls * seconds_a_call, "of_s": of_s}


def job_part(corpus: dict, work: Path) -> dict:
    from wikisum.workflows import cli

    def run():
        with tempfile.TemporaryDirectory(dir=work) as out:
            assert cli.main(["ingest", "--wiki", corpus["dump"],
                             "--warc", str(Path(corpus["dir"]) / "warc" / "*.warc.gz"),
                             "--search-results", corpus["search"], "--out", out, "--quiet",
                             "--direct_num_workers", "1",
                             "--direct_running_mode", "in_memory"]) == 0

    from apache_beam.options.pipeline_options import PipelineOptions, StandardOptions
    from apache_beam.transforms import userstate

    from wikisum.pipeline.beamio import Tallying

    run()  # Beam's first-job costs, left out
    start = time.perf_counter()
    run()
    job_s = time.perf_counter() - start
    stats = profiled(run)

    class Step(Tallying):  # a DoFn as the job's are made: a Tallying with a process method
        def process(self, element):
            self.count("step", "in")
            yield element

    dofn = Step()
    flags = ["--direct_num_workers", "1", "--direct_running_mode", "in_memory"]
    options = PipelineOptions(flags)
    return {"job_s": job_s,
            "specs": cost(calls_of(stats, "apache_beam/transforms/userstate.py",
                                   "get_dofn_specs"),
                          per_call(lambda: userstate.get_dofn_specs(dofn)), job_s),
            "views": cost(calls_of(stats, "apache_beam/options/pipeline_options.py", "view_as"),
                          per_call(lambda: options.view_as(StandardOptions), 200), job_s)}


def coercion_part(corpus: dict) -> dict:
    from wikisum.pipeline import dumps, wikitext

    with bz2.open(corpus["dump"], "rb") as f:
        pages = [(p.title, p.text) for p in dumps.iter_pages(f)]

    def parse_all():
        for title, text in pages:
            wikitext.parse_article(title, text)

    import mwparserfromhell
    from mwparserfromhell import utils

    parse_all()
    start = time.perf_counter()
    parse_all()
    parse_s = time.perf_counter() - start
    stats = profiled(parse_all)
    code = mwparserfromhell.parse("a {{b}}")
    return {"pages": len(pages),
            "parse_anything": cost(calls_of(stats, "mwparserfromhell/utils.py",
                                            "parse_anything"),
                                   per_call(lambda: utils.parse_anything(code), 20000),
                                   parse_s)}


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from bench import options
    from bench.ingest import make_corpus

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/wikisum-bench-1000"),
                        help="bench/ingest.py's work directory: its corpora are reused or made "
                             "there")
    parser.add_argument("--articles", type=int, default=1000,
                        help="articles of the dump the coercion part parses (default: 1000)")
    parser.add_argument("--rounds", type=int, default=15, help="rounds of the sampler part")
    parser.add_argument("--out", type=Path, metavar="RESULTS.json",
                        default=ROOT / "bench" / "results" / "beam_costs.json")
    args = options.parse(parser, argv)
    work = args.work.resolve()
    tiny = make_corpus(work, "corpus-tiny", 1, 0)
    dump = tiny if args.articles == 1 else make_corpus(work, "corpus", args.articles, 0)

    results = {"bench": "beam_costs", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "command": shlex.join([sys.executable, *sys.argv])}
    print("sampler ...", flush=True)
    results["sampler"] = sampler_part(args.rounds)
    print("the ingest job under cProfile ...", flush=True)
    results["job"] = job_part(tiny, work)
    print(f"parsing {dump['articles']} articles under cProfile ...", flush=True)
    results["coercion"] = coercion_part(dump)

    print()
    for name, figures in results["sampler"].items():
        print(f"sampler, {name}: stop() {figures['stop_median_ms']:.1f} ms "
              f"(max {figures['stop_max_ms']:.1f})")
    for name, c in (("get_dofn_specs", results["job"]["specs"]),
                    ("view_as", results["job"]["views"]),
                    ("parse_anything", results["coercion"]["parse_anything"])):
        print(f"{name}: {c['calls']} calls x {c['per_call_us']:.1f} us = "
              f"{c['estimate_s']:.3f} s of {c['of_s']:.3f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
