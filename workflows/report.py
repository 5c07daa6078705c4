"""``wikisum report``: the extractor comparison report (paper, Figure 2 and Tables 1-2)."""

from __future__ import annotations

import argparse
import json
import logging

from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from wikisum.pipeline import beamio, report, report_render, shards
from wikisum.workflows import checks

HELP = "compare the extractors on a built dataset: report.html, report.md, metrics.json"
DESCRIPTION = """\
Reproduce the paper's extractive analyses on a dataset built by `wikisum build` (OUT/data) or
`wikisum rank`, to choose an extractor, a corpus and an input length L before training:

  1. extractive-only ROUGE-1/2/L F1 of every extractor x corpus, 95% bootstrap intervals
  2. ROUGE-1 recall of the lead by the first L tokens of each extractor's input, over --lengths
  3. dataset statistics: percentiles of lead, citation and search-result sizes, coverage,
     clones and self pages removed (read from the ingest shards the dataset came from)
  4. the learned extractor beside tf-idf and the cheating ceiling
  5. what to pick: the best usable extractor per corpus and the L where recall stops growing

Outputs in --out:
  report.html        self-contained (plots embedded); open it in a browser
  report.md          the same tables, plots in figures/
  metrics.json       every number of the report
  per_article.jsonl  every article's scores

A Beam job: per-article metrics in a DoFn, then combined; the same code runs locally and on
Dataflow (pass Beam options, as for `wikisum ingest`).
"""


def parse_lengths(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"--lengths must be integers separated by commas, "
                                         f"got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"--lengths must be positive, got {text!r}")
    return tuple(sorted(set(values)))


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("report", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, metavar="DIR",
                   help="dataset directory (OUT/data of `wikisum build`)")
    p.add_argument("--out", required=True, metavar="DIR", help="where the report is written")
    p.add_argument("--split", default="dev", choices=("train", "dev", "test"),
                   help="split to score (default: %(default)s)")
    p.add_argument("--lengths", type=parse_lengths, default=report.DEFAULT_LENGTHS,
                   metavar="L,L,...",
                   help="input lengths for the recall curves, in subword tokens (default: "
                        f"{','.join(map(str, report.DEFAULT_LENGTHS))})")
    p.add_argument("--sample", type=checks.count(1), default=None, metavar="N",
                   help="score only N articles of the split, a fixed sample (default: all)")
    p.add_argument("--bootstrap", type=checks.count(1), default=report.BOOTSTRAP_SAMPLES,
                   metavar="B",
                   help="bootstrap resamples for the confidence intervals (default: "
                        "%(default)s)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default: 0)")
    p.set_defaults(func=run, beam_args=True)


def run(args: argparse.Namespace, beam_argv: list[str] | None = None) -> int:
    logging.getLogger("wikisum").setLevel(logging.INFO)
    options = PipelineOptions(beam_argv or [])
    if not beamio.is_dry_run(options):
        checks.output_dir(args.out, "report")
    config = report.ReportConfig(args.data, args.out, args.split, tuple(args.lengths),
                                 args.sample, args.bootstrap, args.seed)
    print(f"report: scoring the {args.split} split of {args.data} ...", flush=True)
    try:
        metrics = report.run(config, options)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum report: {exc}") from exc
    if metrics is None:
        return 0
    paths = write(metrics, args.out)
    print(f"report: {metrics['articles']} articles in {metrics['seconds']} s")
    for line in metrics["recommendation"]["text"]:
        print(f"  {line}")
    print(f"  report: {paths['html']}\n  tables: {paths['md']}\n  numbers: {paths['json']}")
    return 0


def write(metrics: dict, out: str) -> dict[str, str]:
    """Write report.html, report.md, figures/*.png and metrics.json; return their paths."""
    pngs = report_render.figures(metrics)
    figure_files = {}
    for name, data in pngs.items():
        path = FileSystems.join(out, "figures", name)
        with FileSystems.create(path) as f:
            f.write(data)
        figure_files[name] = f"figures/{name}"
    paths = {"html": FileSystems.join(out, "report.html"),
             "md": FileSystems.join(out, "report.md"),
             "json": FileSystems.join(out, "metrics.json")}
    shards.write_text(paths["html"], report_render.to_html(metrics, pngs))
    shards.write_text(paths["md"], report_render.to_markdown(metrics, figure_files))
    shards.write_text(paths["json"], json.dumps(metrics, indent=1) + "\n")
    return paths
