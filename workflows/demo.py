"""``wikisum demo``: run the system end to end on the generated sample corpus.

Each stage that exists is run in order; the demo grows as the system does
(sample -> ingest -> rank -> report -> train -> decode -> evaluate).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from workflows import sample

HELP = "run the whole system on the generated sample corpus"
DESCRIPTION = """\
Run every stage of wikisum on a generated sample corpus and print where the outputs are.
Stages run now: sample (generate the input corpus into OUT/sample).
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
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    start = time.perf_counter()
    print(f"[1/1] sample: generating {args.articles} articles into {out / 'sample'}")
    sample.run(argparse.Namespace(out=str(out / "sample"), articles=args.articles,
                                  seed=args.seed))
    print(f"demo finished in {time.perf_counter() - start:.1f}s; the sample corpus is in "
          f"{out / 'sample'}")
    return 0
