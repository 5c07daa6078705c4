"""``wikisum report``: the extractor comparison report (paper, Figure 2 and Tables 1-2)."""

from __future__ import annotations

import argparse
import json
import logging

from wikisum.core import progress
from wikisum.pipeline.report_config import ReportConfig
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
  5. what to pick: the corpus whose input holds the most of the lead, the best usable
     extractor on it (paired bootstrap of the per-article differences) and the L where its
     recall stops growing
  6. a few articles side by side: the lead beside each extractor's top-ranked paragraphs
  7. provenance: wikisum version, date, data path and options

`--compare BUILD_A BUILD_B` compares two builds instead (input recall per extractor and corpus,
counts, drops): each is reported into --out/a and --out/b unless it is a report directory.

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
    d = ReportConfig(data="", out="")  # the job's defaults
    p.add_argument("--data", metavar="DIR",
                   help="dataset directory (OUT/data of `wikisum build`); required unless "
                        "--compare is given")
    p.add_argument("--out", required=True, metavar="DIR", help="where the report is written")
    p.add_argument("--split", default=d.split, choices=("train", "dev", "test"),
                   help="split to score (default: %(default)s)")
    p.add_argument("--lengths", type=parse_lengths, default=d.lengths, metavar="L,L,...",
                   help="input lengths for the recall curves, in subword tokens (default: "
                        f"{','.join(map(str, d.lengths))})")
    checks.add_option(p, "--limit", retired=["--sample"], dest="sample", type=checks.count(1),
                      default=None, metavar="N",
                      help="score only N articles of the split, a fixed sample (default: all)")
    p.add_argument("--bootstrap", type=checks.count(1), default=d.bootstrap,
                   metavar="B",
                   help="bootstrap resamples for the confidence intervals (default: "
                        "%(default)s)")
    p.add_argument("--seed", type=int, default=d.seed,
                   help="bootstrap seed (default: %(default)s)")
    p.add_argument("--compare", nargs=2, metavar=("BUILD_A", "BUILD_B"),
                   help="compare two builds instead: each a build (OUT of `wikisum build`), its "
                        "data directory, or a report directory (with metrics.json); builds are "
                        "reported into --out/a and --out/b, then compare.html, compare.md and "
                        "compare.json written into --out")
    p.set_defaults(func=run, beam_args=True)


def watch(config, options):
    """Progress of a local report run: articles scored of the split's rows (dataset.json), or
    of --limit."""

    def total() -> int:
        from wikisum.core import loader

        rows = loader.Dataset(config.data).info["rows"].get(config.split, 0)
        return min(rows, config.sample) if config.sample else rows

    from wikisum.pipeline import beamio

    return beamio.watch_job("report", options, "articles", total=total)


def run(args: argparse.Namespace, beam_argv: list[str] | None = None) -> int:
    from apache_beam.options.pipeline_options import PipelineOptions

    from wikisum.pipeline import beamio, report

    logging.getLogger("wikisum").setLevel(progress.log_level())
    if getattr(args, "compare", None):
        if args.data:
            raise SystemExit("wikisum report: give --data (one build) or --compare BUILD_A "
                             "BUILD_B (two), not both")
        return run_compare(args, beam_argv)
    if not args.data:
        raise SystemExit("wikisum report: --data DIR is required (or --compare BUILD_A BUILD_B)")
    options = PipelineOptions(beam_argv or [])
    data = args.data
    if not beamio.is_dry_run(options):
        checks.output_dir(args.out, "report")
        data = checks.dataset(args.data, "--data", "report")
        check_split(data, args.split)
    config = ReportConfig(data, args.out, args.split, tuple(args.lengths), args.sample,
                          args.bootstrap, args.seed)
    if not beamio.is_dry_run(options):
        forget_report(args.out)
    progress.say(f"report: scoring the {args.split} split of {data} ...")
    try:
        with watch(config, options):
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


def check_split(data: str, split: str) -> None:
    """The dataset has shards of --split, or a one-line error listing the splits it has."""
    from wikisum.core import loader

    try:
        loader.Dataset(data).split_files(split)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum report: --split {split}: {exc}") from None


# A report's completion record: written last, removed before a new report is made in its place,
# so that a report killed part-way over an earlier one is never read as finished.
METRICS = "metrics.json"


def forget_report(out: str) -> None:
    """Remove the completion record of an earlier report in ``out`` (if any)."""
    from apache_beam.io.filesystems import FileSystems

    from wikisum.core import shards

    shards.delete(FileSystems.join(out, METRICS))


def write(metrics: dict, out: str) -> dict[str, str]:
    """Write report.html, report.md, figures/*.png and metrics.json (last, the completion
    record), each whole under a temporary name, then renamed; return their paths."""
    from apache_beam.io.filesystems import FileSystems

    from wikisum.core import shards
    from wikisum.pipeline import report_render

    pngs = report_render.figures(metrics)
    figure_files = {}
    for name, data in pngs.items():
        shards.write_bytes(FileSystems.join(out, "figures", name), data)
        figure_files[name] = f"figures/{name}"
    paths = {"html": FileSystems.join(out, "report.html"),
             "md": FileSystems.join(out, "report.md"),
             "json": FileSystems.join(out, METRICS)}
    shards.write_text(paths["html"], report_render.to_html(metrics, pngs))
    shards.write_text(paths["md"], report_render.to_markdown(metrics, figure_files))
    shards.write_text(paths["json"], json.dumps(metrics, indent=1) + "\n")
    return paths


def resolve_build(path: str) -> tuple[str, str]:
    """("metrics", metrics.json) for a report directory, ("data", DIR) for a build or its data
    directory (:func:`wikisum.core.outputs.dataset_dir`); a clear error otherwise."""
    from apache_beam.io.filesystems import FileSystems

    from wikisum.core import outputs, ownership

    metrics = FileSystems.join(path, METRICS)
    if FileSystems.exists(metrics):
        return "metrics", metrics
    if (ownership.read_marker(path) or {}).get("command") == "report":
        raise SystemExit(
            f"wikisum report: --compare {path} holds no finished report ({METRICS} is written "
            f"last and is missing: the report did not finish); rerun `wikisum report --out "
            f"{path}`")
    try:
        return "data", outputs.dataset_dir(path)
    except FileNotFoundError:
        raise SystemExit(
            f"wikisum report: --compare {path} is not a build "
            f"({FileSystems.join(path, outputs.BUILD_DATA, outputs.DATASET_RECORD)}), a dataset "
            f"({FileSystems.join(path, outputs.DATASET_RECORD)}) or a report ({metrics})"
            ) from None


def run_compare(args: argparse.Namespace, beam_argv: list[str] | None) -> int:
    """--compare BUILD_A BUILD_B: report each build that has no report yet (into OUT/a, OUT/b),
    then write compare.html, compare.md and compare.json into OUT."""
    from apache_beam.io.filesystems import FileSystems

    from wikisum.core import shards
    from wikisum.pipeline import report, report_render

    resolved = [resolve_build(path) for path in args.compare]
    checks.output_dir(args.out, "report")
    metrics = []
    for side, (kind, path) in zip("ab", resolved, strict=True):
        if kind == "data":
            out = FileSystems.join(args.out, side)
            sub = argparse.Namespace(**{**vars(args), "data": path, "out": out, "compare": None})
            status = run(sub, beam_argv)
            if status:
                return status
            path = FileSystems.join(out, "metrics.json")
        metrics.append(json.loads(shards.read_text(path)))
    comp = report.compare(*metrics)
    paths = {name: FileSystems.join(args.out, f"compare.{name}") for name in ("html", "md", "json")}
    shards.write_text(paths["html"], report_render.compare_html(comp))
    shards.write_text(paths["md"], report_render.compare_markdown(comp))
    shards.write_text(paths["json"], json.dumps(comp, indent=1) + "\n")
    for side in ("a", "b"):
        rec = comp[side]["recommendation"]
        print(f"  {side.upper()}: {comp[side]['data']}: {rec['extractor']} on {rec['corpus']}, "
              f"L = {rec['length']}")
    print(f"  comparison: {paths['html']}\n  tables: {paths['md']}\n  numbers: {paths['json']}")
    return 0


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
