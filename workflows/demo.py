"""``wikisum demo``: run the system end to end on the generated sample corpus.

Each stage that exists is run in order, through the same command a user would type; the demo
grows as the system does (sample -> ingest -> rank -> report -> train -> decode -> evaluate).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

HELP = "run the whole system on the generated sample corpus"
DESCRIPTION = """\
Run every stage of wikisum on a generated sample corpus and print where the outputs are:

  1. sample  generate the input corpus                          -> OUT/sample
  2. build   ingest + vocab + rank (Beam jobs on the DirectRunner) -> OUT/build
  3. report  compare the extractors (dev split, or the first split with articles)
                                                                -> OUT/report/report.html
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("demo", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="wikisum-demo", metavar="DIR",
                   help="directory for every output of the demo (default: %(default)s)")
    p.add_argument("--articles", type=int, default=60, metavar="N",
                   help="articles in the sample corpus (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="seed of the sample corpus (default: %(default)s)")
    p.add_argument("--vocab-size", type=int, default=4000, metavar="N",
                   help="subword vocabulary size for the small sample (default: %(default)s)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from workflows import cli  # the demo runs the same commands a user would

    out = Path(args.out)
    sample, built, report = out / "sample", out / "build", out / "report"
    start = time.perf_counter()
    steps = [
        ("sample", ["sample", "--out", str(sample), "--articles", str(args.articles),
                    "--seed", str(args.seed)]),
        ("build", ["build", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
                   "--warc", str(sample / "warc" / "*.warc.gz"),
                   "--wet", str(sample / "wet" / "*.warc.wet.gz"),
                   "--search-results", str(sample / "search_results.jsonl"),
                   "--out", str(built), "--vocab-size", str(args.vocab_size)]),
        ("report", lambda: ["report", "--data", str(built / "data"), "--out", str(report),
                            "--split", report_split(built / "data")]),
    ]
    for i, (name, argv) in enumerate(steps, 1):
        argv = argv() if callable(argv) else argv  # a later step's options read earlier outputs
        print(f"\n[{i}/{len(steps)}] wikisum {' '.join(argv)}", flush=True)
        status = cli.main(argv)
        if status:
            print(f"demo: step {name} failed with status {status}")
            return status
    print(f"\ndemo finished in {time.perf_counter() - start:.1f}s\n"
          f"  sample corpus:  {sample} (ground truth: {sample / 'manifest.json'})\n"
          f"  ingest:         {built / 'ingest'} (summary.json, dead_letters/)\n"
          f"  vocabulary:     {built / 'vocab.model'}\n"
          f"  training data:  {built / 'data'} (dataset.json, train/dev/test shards)\n"
          f"  extractor report: {report / 'report.html'} (open in a browser; "
          f"report.md, metrics.json)")
    return 0


def report_split(data: Path) -> str:
    """dev, unless a tiny sample left it empty: then the first split with articles."""
    rows = json.loads((data / "dataset.json").read_text())["rows"]
    return next((s for s in ("dev", "test", "train") if rows.get(s)), "dev")
