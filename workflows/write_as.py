"""``wikisum write-as``: a wikisum dataset written in another system's format (the inverse of
``wikisum import``; ``wikisum export`` is about models)."""

from __future__ import annotations

import argparse

from wikisum.core.inputs import DEFAULT_INPUT
from wikisum.formats import config as formats_config
from wikisum.workflows import checks

HELP = "a wikisum dataset -> another system's format (hiersumm, PRIMERA, Multi-News, JSON Lines)"
DESCRIPTION = """\
Write a wikisum dataset (a build, or an imported dataset) in the format another system trains
on, so that it trains on data built here; `wikisum import` reads each back:
  hiersumm    WIKI.{train,valid,test}.N.pt: the top --max-paragraphs paragraphs' token ids in
              --extractor's order on --corpus, the lead's ids between <S> and </S>, and
              spm.model: the dataset's vocabulary with hiersumm's pieces appended (ids kept)
  primera     {train,valid,test}.pt: {text: [documents], tgt: lead} (a split is one list)
  multinews   {train,validation,test}.jsonl: document (documents joined by |||||), summary
  jsonl       {train,dev,test}.jsonl: {id, title, documents: [...], summary}

An example's documents are its references, each its paragraphs in their own order; an
imported example keeps its source's id. Outputs are written whole and renamed into place;
OUT/.wikisum-write-as.json records what was written and any example that could not be.
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("write-as", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("format", choices=formats_config.WRITE_FORMATS, metavar="FORMAT",
                   help=f"one of {', '.join(formats_config.WRITE_FORMATS)}")
    p.add_argument("--data", required=True, metavar="DIR",
                   help="a wikisum dataset (the --out of rank or import, or a build's root)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--extractor", default=None,
                   help="the ranking of the paragraphs written as hiersumm's src (default: "
                        f"the dataset's default model input's, e.g. {DEFAULT_INPUT.extractor})")
    p.add_argument("--corpus", default=None, help="its corpus (default: the same way)")
    p.add_argument("--max-paragraphs", type=checks.count(1), default=40, metavar="N",
                   help="ranked paragraphs kept per example (default: %(default)s, hiersumm's)")
    p.add_argument("--max-paragraph-tokens", type=checks.count(1), metavar="N",
                   help="cut each paragraph's ids to N (default: whole)")
    p.add_argument("--shard-size", type=checks.count(1), default=2000, metavar="N",
                   help="examples per hiersumm .pt shard (default: %(default)s)")
    p.add_argument("--split", metavar="NAME",
                   help="write this split only (default: train, dev and test)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from wikisum.core.loader import dataset_default_input
    from wikisum.formats import writing

    checks.output_dir(args.out, "write-as")
    data = checks.dataset(args.data, "--data", "write-as")
    default = dataset_default_input(data)
    if args.split:
        from wikisum.core.loader import Dataset

        there = Dataset(data).splits()
        if args.split not in there:
            raise SystemExit(f"wikisum write-as: --split {args.split}: {data} has no "
                             f"{args.split!r} split; its splits: {', '.join(there)}")
    config = formats_config.WriteAsConfig(
        args.format, data, args.out,
        extractor=args.extractor or default.get("extractor", DEFAULT_INPUT.extractor),
        corpus=args.corpus or default.get("corpus", DEFAULT_INPUT.corpus),
        max_paragraphs=args.max_paragraphs, max_paragraph_tokens=args.max_paragraph_tokens,
        shard_size=args.shard_size,
        splits=(args.split,) if args.split else ("train", "dev", "test"))
    try:
        record = writing.run(config)
    except (FileNotFoundError, FileExistsError, ValueError) as exc:
        raise SystemExit(f"wikisum write-as: {exc}") from exc
    written = ", ".join(f"{s} {n:,}" for s, n in record["written"].items()) or "nothing"
    dropped = ", ".join(f"{k} {v:,}" for k, v in record["dropped"].items()) or "none"
    print(f"write-as {args.format}: {written} -> {args.out} ({len(record['files'])} files); "
          f"not written: {dropped}")
    return 0


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (core.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
