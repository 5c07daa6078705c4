"""``wikisum demo``: run the system end to end on the generated sample corpus.

Each stage that exists is run in order, through the same command a user would type; the demo
grows as the system does (sample -> ingest -> rank -> report -> train -> decode -> evaluate).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from wikisum.core import progress
from wikisum.workflows import checks

HELP = "run the whole system on the generated sample corpus"
DESCRIPTION = """\
Run every stage of wikisum on a generated sample corpus and print where the outputs are:

  1. sample  generate the input corpus                          -> OUT/sample
     cc-fetch  its URLs looked up in its Common Crawl-style index (served on 127.0.0.1) and
             their records fetched by byte range                 -> OUT/cc
  2. build   ingest + vocab + rank (Beam jobs on the DirectRunner), lead and whole-article
             targets                                             -> OUT/build
  3. report  compare the extractors (dev split, or the first split with articles)
                                                                -> OUT/report/report.html
  4. train   a short run of the tiny T-DMCA (tf-idf, combined, L=500) -> OUT/run
  5. decode  beam search (beam 4, alpha 0.6) on the test split    -> OUT/run/preds.jsonl
  6. evaluate  ROUGE, perplexity, redundancy                     -> OUT/run/preds.metrics.json
  7. train   whole articles from the title alone (the paper's section 6), a tiny T-DMCA for
             half as many steps                                  -> OUT/article-run
  8. decode  three test articles, beam 4, split back into sections
                                     -> OUT/article-run/preds.jsonl, preds.articles.md
  9. evaluate  ROUGE, ROUGE-Lsum, per-section ROUGE, heading precision/recall
                                                  -> OUT/article-run/preds.metrics.json

On 2 CPU cores the whole demo takes a few minutes. The models are tiny and trained for a few
hundred steps on a few dozen articles: their leads and articles are not good, the point is
that every stage runs. Train for real with `wikisum train --preset base` on a built dataset
(README).
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("demo", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default="wikisum-demo", metavar="DIR",
                   help="directory for every output of the demo (default: %(default)s)")
    p.add_argument("--articles", type=checks.count(1), default=60, metavar="N",
                   help="articles in the sample corpus (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="seed of the sample corpus (default: %(default)s)")
    p.add_argument("--vocab-size", type=checks.count(16), default=4000, metavar="N",
                   help="subword vocabulary size for the small sample (default: %(default)s)")
    p.add_argument("--train-steps", type=checks.count(1), default=300, metavar="N",
                   help="optimizer steps of the short T-DMCA run (default: %(default)s)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from wikisum.workflows import cli  # the demo runs the same commands a user would

    out = Path(args.out)
    sample, built, report = out / "sample", out / "build", out / "report"
    run_dir, article_run = out / "run", out / "article-run"
    preds, article_preds = run_dir / "preds.jsonl", article_run / "preds.jsonl"
    article_steps = max(1, args.train_steps // 2)
    start = time.perf_counter()
    steps = [
        ("sample", ["sample", "--out", str(sample), "--articles", str(args.articles),
                    "--seed", str(args.seed)]),
        ("build", ["build", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
                   "--warc", str(sample / "warc" / "*.warc.gz"),
                   "--wet", str(sample / "wet" / "*.warc.wet.gz"),
                   "--search-results", str(sample / "search_results.jsonl"),
                   "--out", str(built), "--vocab-size", str(args.vocab_size),
                   "--targets", "lead,article"]),
        ("report", lambda: ["report", "--data", str(built / "data"), "--out", str(report),
                            "--split", report_split(built / "data")]),
        ("train", lambda: ["train", "--model", "t-dmca", "--preset", "tiny",
                           "--data", str(built / "data"), "--out", str(fresh(run_dir, "train")),
                           "--steps", str(args.train_steps),
                           f"warmup_steps={max(1, args.train_steps // 4)}", "lr=3e-3",
                           f"eval_every={max(1, args.train_steps // 3)}",
                           f"checkpoint_every={max(1, args.train_steps // 3)}",
                           f"log_every={max(1, args.train_steps // 6)}"]),
        ("decode", lambda: ["decode", "--run", str(run_dir), "--out", str(preds),
                            "--split", decode_split(built / "data"), "--beam", "4",
                            "--alpha", "0.6", "--max-len", "200"]),
        ("evaluate", ["evaluate", "--preds", str(preds)]),
        ("train", lambda: ["train", "--model", "t-dmca", "--preset", "tiny",
                           "--data", str(built / "data"),
                           "--out", str(fresh(article_run, "train")), "--target", "article",
                           "--inputs", "title", "--steps", str(article_steps),
                           "--batch-tokens", "2400", f"warmup_steps={max(1, article_steps // 10)}",
                           "lr=5e-3", f"eval_every={article_steps}",
                           f"checkpoint_every={article_steps}",
                           f"log_every={max(1, article_steps // 3)}"]),
        ("decode", lambda: ["decode", "--run", str(article_run), "--out", str(article_preds),
                            "--split", decode_split(built / "data"), "--beam", "4",
                            "--limit", "3", "--max-len", "400"]),
        ("evaluate", ["evaluate", "--preds", str(article_preds)]),
    ]
    # References from a Common Crawl-style index: the sample's captures, served on 127.0.0.1
    # as Common Crawl serves its URL index and WARC files.
    from wikisum.pipeline.sample.ccindex import CRAWL
    from wikisum.pipeline.sample.ccserver import CommonCrawlServer
    server: list = []
    steps.insert(1, ("cc-fetch", lambda: [
        "cc-fetch", "--urls", str(sample / "urls.txt"), "--crawl", CRAWL,
        "--index-url", server[0].base, "--data-url", server[0].base, "--index-rate", "1000",
        "--out", str(fresh(out / "cc", "cc-fetch"))]))
    # every step says as much as the demo was asked to (cli.main sets the verbosity anew)
    verbosity = {progress.QUIET: ["--quiet"], progress.VERBOSE: ["--verbose"]}.get(
        progress.verbosity(), [])
    for i, (name, argv) in enumerate(steps, 1):
        if name == "cc-fetch":
            server.append(CommonCrawlServer(sample))
        try:
            argv = argv() if callable(argv) else argv  # later steps read earlier outputs
            progress.say(f"\n[{i}/{len(steps)}] wikisum {' '.join(argv)}")
            status = cli.main(verbosity + argv)
        finally:
            if name == "cc-fetch":
                server.pop().close()
        if status:
            print(f"demo: step {name} failed with status {status}")
            return status
    print(f"\ndemo finished in {time.perf_counter() - start:.1f}s\n"
          f"  sample corpus:  {sample} (ground truth: {sample / 'manifest.json'})\n"
          f"  cc-fetch:       {out / 'cc'} (summary.json: coverage; warc/, log/)\n"
          f"  ingest:         {built / 'ingest'} (summary.json, dead_letters/)\n"
          f"  vocabulary:     {built / 'vocab.model'}\n"
          f"  training data:  {built / 'data'} (dataset.json, train/dev/test shards)\n"
          f"  extractor report: {report / 'report.html'} (open in a browser; "
          f"report.md, metrics.json)\n"
          f"  T-DMCA run:     {run_dir} (config.json, checkpoints/, log.jsonl)\n"
          f"  predictions:    {preds}\n"
          f"  scores:         {preds.with_suffix('.metrics.json')}\n"
          f"  whole articles: {article_run} (title-only T-DMCA); {article_preds}, beside "
          f"their references: {article_preds.with_suffix('.articles.md')}; scores: "
          f"{article_preds.with_suffix('.metrics.json')}")
    return 0


def fresh(path: Path, command: str) -> Path:
    """An earlier demo's output of ``command`` removed, so that a rerun trains (fetches) anew
    instead of resuming one made on another sample; anything that is not that command's output
    is refused, never deleted (pipeline.ownership)."""
    from wikisum.core import ownership

    try:
        ownership.remove_dir(str(path), command)
    except ownership.NotOurs as exc:
        raise SystemExit(f"wikisum demo: {exc}") from None
    return path


def report_split(data: Path) -> str:
    """dev, unless a tiny sample left it empty: then the first split with articles."""
    rows = json.loads((data / "dataset.json").read_text())["rows"]
    return next((s for s in ("dev", "test", "train") if rows.get(s)), "dev")


def decode_split(data: Path) -> str:
    """test, unless a tiny sample left it empty: then the first split with articles."""
    rows = json.loads((data / "dataset.json").read_text())["rows"]
    return next((s for s in ("test", "dev", "train") if rows.get(s)), "test")


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
