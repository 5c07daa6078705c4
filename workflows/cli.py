"""The ``wikisum`` command.

Building the parser imports no heavy module (Beam, torch, pyarrow, scikit-learn, sentencepiece,
trafilatura): each command module imports them in the function that runs it, so that --help,
--version and usage errors answer at once.
"""

from __future__ import annotations

import argparse
import difflib
import sys

from wikisum.workflows import (
    build,
    ccfetch,
    convert_pairs,
    crawl,
    decode,
    demo,
    evaluate,
    exemplars,
    export,
    ingest,
    progress,
    rank,
    report,
    sample,
    train,
    vocab,
)

# One module per subcommand, each with ``add_parser(subparsers)``; listed in pipeline order.
COMMANDS = [sample, ingest, ccfetch, crawl, vocab, rank, build, report, convert_pairs, exemplars,
            train, decode, export, evaluate, demo]

DESCRIPTION = """\
wikisum builds WikiSum-style multi-document summarization data (Wikipedia articles, their cited
pages and web-search results) and trains the abstractive models that write Wikipedia lead
sections from it. Run `wikisum COMMAND --help` for a command's inputs, outputs and defaults.
"""


def version() -> str:
    """The installed distribution's version; "unknown" when run from a source tree that is
    not installed."""
    from importlib import metadata

    try:
        return metadata.version("wikisum")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"


def add_verbosity(parser: argparse.ArgumentParser, default=progress.NORMAL) -> None:
    """-q/--quiet and -v/--verbose. A command's own copies default to SUPPRESS, so that the
    flags work before the command's name (``wikisum -q rank ...``) and after it alike."""
    group = parser.add_argument_group("output")
    group.add_argument("-q", "--quiet", dest="verbosity", action="store_const",
                       const=progress.QUIET, default=default,
                       help="print results and warnings only")
    group.add_argument("-v", "--verbose", dest="verbosity", action="store_const",
                       const=progress.VERBOSE, default=default,
                       help="print details as well")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="wikisum", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    add_verbosity(parser)
    subparsers = parser.add_subparsers(title="commands", metavar="COMMAND", dest="command")
    subparsers.required = True
    for module in COMMANDS:
        module.add_parser(subparsers)
    for command in subparsers.choices.values():
        add_verbosity(command, default=argparse.SUPPRESS)
    return parser


def beam_option_parser() -> argparse.ArgumentParser:
    """A parser of every option Beam knows (every PipelineOptions subclass), as Beam builds it
    when it reads its options."""
    from apache_beam.options.pipeline_options import PipelineOptions, _BeamArgumentParser

    parser = _BeamArgumentParser(allow_abbrev=False, add_help=False)
    classes = {}
    for cls in PipelineOptions.__subclasses__():
        classes.setdefault(str(cls), cls)
    for cls in classes.values():
        cls._add_argparse_args(parser)
    return parser


def option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """The long options --help shows (retired spellings left out)."""
    return [s for action in parser._actions for s in action.option_strings
            if s.startswith("--") and action.help is not argparse.SUPPRESS]


def unknown_beam_args(rest: list[str]) -> list[str]:
    """What of ``rest`` neither our command nor Beam knows (Beam would discard it with a
    warning and run with its defaults)."""
    if not rest:
        return []
    _, unknown = beam_option_parser().parse_known_args(rest)
    return unknown


def explain_unknown(unknown: list[str], known: list[str]) -> str:
    """One line per unknown word: a misspelt option with the closest known ones, or a stray
    word (most often a glob the shell expanded into several file names)."""
    lines = []
    for i, word in enumerate(unknown):
        if not word.startswith("-") and i and unknown[i - 1].startswith("-") \
                and "=" not in unknown[i - 1]:
            continue  # the value of the unknown option before it
        if word.startswith("-"):
            name = word.split("=", 1)[0]
            close = difflib.get_close_matches(name, known, n=3, cutoff=0.75)
            hint = f" (did you mean {' or '.join(close)}?)" if close else ""
            lines.append(f"unrecognized option {name}{hint}")
        else:
            lines.append(f"unexpected argument {word!r} (a glob the shell expanded? quote it: "
                         "--warc 'dir/*.warc.gz')")
    return "; ".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    progress.set_verbosity(args.verbosity)
    command = parser._subparsers._group_actions[0].choices[args.command]
    for old, new in getattr(args, "retired_options", None) or []:
        progress.detail(f"wikisum {args.command}: {old} is now spelt {new}")
    # Beam jobs pass Beam's options on to Beam; anything neither they nor Beam know is an error,
    # as it is for every other command (Beam would drop it with a warning and use defaults).
    if getattr(args, "beam_args", False):
        unknown = unknown_beam_args(rest)
        if unknown:
            known = option_strings(command) + option_strings(beam_option_parser())
            command.error(explain_unknown(unknown, known))
        return args.func(args, rest)
    if rest:
        command.error(explain_unknown(rest, option_strings(command)))
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
