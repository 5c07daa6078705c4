"""The ``wikisum`` command."""

from __future__ import annotations

import argparse
import sys

from wikisum.workflows import (
    build,
    convert_pairs,
    crawl,
    decode,
    demo,
    evaluate,
    exemplars,
    ingest,
    rank,
    report,
    sample,
    train,
    vocab,
)

# One module per subcommand, each with ``add_parser(subparsers)``; listed in pipeline order.
COMMANDS = [sample, ingest, crawl, vocab, rank, build, report, convert_pairs, exemplars, train,
            decode, evaluate, demo]

DESCRIPTION = """\
wikisum builds WikiSum-style multi-document summarization data (Wikipedia articles, their cited
pages and web-search results) and trains the abstractive models that write Wikipedia lead
sections from it. Run `wikisum COMMAND --help` for a command's inputs, outputs and defaults.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="wikisum", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    subparsers.required = True
    for module in COMMANDS:
        module.add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    # Beam jobs pass unknown options on to Beam; every other command rejects them.
    if getattr(args, "beam_args", False):
        return args.func(args, rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
