"""``wikisum sample``: write the generated sample corpus."""

from __future__ import annotations

import argparse
import time

from wikisum.pipeline.sample import config as sample
from wikisum.workflows import checks

HELP = "write a small, deterministic WikiSum input corpus (dump, WARC, WET, search results)"
DESCRIPTION = f"""\
Write a sample corpus in the real input formats, so that the commands a user points at a
Wikipedia dump and Common Crawl run on it unchanged. Into --out it writes:

  {sample.DUMP_NAME}   MediaWiki pages-articles XML (bz2)
  warc/sample-NNNNN.warc.gz   HTTP request/response records, gzip per record
  {sample.WET_NAME}   text conversions of pages in no WARC file
  {sample.SEARCH_NAME}   one {{"title": ..., "urls": [...]}} per article
  manifest.json (+ manifest-*.parquet)   ground truth: every reference, its kind
      (clone, self, bad record, ...), its relevant paragraphs, the expected outcome

The same --seed gives byte-identical files.
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("sample", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, metavar="DIR",
                   help="output directory (created if absent; files in it are overwritten)")
    p.add_argument("--articles", type=checks.count(1), default=sample.DEFAULT_ARTICLES,
                   metavar="N",
                   help="number of articles to generate (default: %(default)s)")
    p.add_argument("--seed", type=int, default=sample.DEFAULT_SEED, metavar="S",
                   help="random seed; one seed, one corpus (default: %(default)s)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.articles < 1:
        raise SystemExit("wikisum sample: --articles must be at least 1")
    from wikisum.pipeline.sample import corpus

    start = time.perf_counter()
    manifest = corpus.write_sample(args.out, articles=args.articles, seed=args.seed)
    print(summary(manifest, args.out, time.perf_counter() - start))
    return 0


def summary(manifest: dict, out: str, seconds: float) -> str:
    c = manifest["counts"]
    bad = {k: v for k, v in c["documents_by_outcome"].items() if k not in ("ok",)}
    records = sum(sum(v.values()) for v in manifest["counts"]["records"].values())
    return (
        f"wrote the sample corpus to {out} in {seconds:.1f}s\n"
        f"  dump: {c['pages']} pages ({c['articles']} articles; "
        + ", ".join(f"{v} {k}" for k, v in c["pages_by_kind"].items() if k != "article")
        + ")\n"
        f"  web:  {c['documents']} documents in {len(manifest['files']['warc'])} WARC and "
        f"{len(manifest['files']['wet'])} WET files ({records} records); "
        + ", ".join(f"{v} {k}" for k, v in bad.items()) + "\n"
        f"  references: {c['references']} (citations and search results)\n"
        f"  ground truth: {out}/manifest.json"
    )


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
