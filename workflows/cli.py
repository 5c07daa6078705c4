"""The ``wikisum`` command.

Building the parser imports no heavy module (Beam, torch, pyarrow, scikit-learn, sentencepiece,
trafilatura): each command module imports them in the function that runs it, so that --help,
--version and usage errors answer at once.
"""

from __future__ import annotations

import argparse
import difflib
import errno
import os
import re
import sys

from wikisum.core import progress
from wikisum.workflows import (
    build,
    ccfetch,
    ccplan,
    convert_pairs,
    crawl,
    decode,
    demo,
    evaluate,
    exemplars,
    export,
    humaneval,
    importer,
    ingest,
    rank,
    report,
    sample,
    search,
    search_index,
    train,
    vocab,
    write_as,
)

# One module per subcommand, each with ``add_parser(subparsers)``; listed in pipeline order.
COMMANDS = [sample, search_index, search, ingest, ccplan, ccfetch, crawl, vocab, rank, build,
            report, importer, write_as, convert_pairs, exemplars, train, decode, export, evaluate,
            humaneval, demo]

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
        for each in (command, *subcommands(command).values()):
            add_verbosity(each, default=argparse.SUPPRESS)
            add_split_aliases(each)
    return parser


def subcommands(command: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A command's own subcommands (``human-eval make``, ``human-eval score``); {} for a
    command that has none."""
    for action in command._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def chosen_parser(command: argparse.ArgumentParser,
                  args: argparse.Namespace) -> argparse.ArgumentParser:
    """The parser of what ``args`` runs: ``command``'s, or that of its subcommand (whose
    options and name its errors give)."""
    for action in command._actions:
        if isinstance(action, argparse._SubParsersAction):
            name = getattr(args, action.dest, None)
            if name in action.choices:
                return chosen_parser(action.choices[name], args)
    return command


# The Hugging Face hub's split names that are ours under another name (the dataset card maps
# our `dev` to the hub's `validation`, so a hub user's habit should work here too).
SPLIT_ALIASES = {"validation": "dev"}


class SplitName:
    """The type of a command's ``--split``: the hub's name of a split gives ours, noted in
    ``notes`` (``--verbose`` prints them)."""

    __name__ = "split"  # argparse names the type in its errors

    def __init__(self, inner=None):
        self.inner = inner
        self.notes: list[str] = []

    def __call__(self, text: str):
        name = SPLIT_ALIASES.get(text, text)
        if name != text:
            self.notes.append(f"--split {text} is the split {name}")
        return self.inner(name) if self.inner is not None else name


def add_split_aliases(command: argparse.ArgumentParser) -> None:
    """Every ``--split`` of a command takes the hub's names too (``validation`` for ``dev``)."""
    for action in command._actions:
        if "--split" in action.option_strings:
            action.type = SplitName(action.type)
            if action.help and action.help is not argparse.SUPPRESS:
                action.help += "; validation is read as dev"


def split_notes(command: argparse.ArgumentParser) -> list[str]:
    """What the command's ``--split`` read under another name, in this parse."""
    return [note for action in command._actions if isinstance(action.type, SplitName)
            for note in action.type.notes]


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


def commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Command name -> its parser."""
    return parser._subparsers._group_actions[0].choices


def command_word(argv: list[str]) -> str | None:
    """The word of ``argv`` that names the command: the first that is not an option (the
    options before a command take no value); None when there is none, or when --help or
    --version comes first (argparse answers those)."""
    for word in argv:
        if word in ("-h", "--help", "--version"):
            return None
        if not word.startswith("-"):
            return word
    return None


def check_command(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """A misspelt command is argparse's invalid-choice error with the closest commands
    (``wikisum buld``: did you mean build?); a word like none of them gets argparse's own
    error, which lists them all."""
    word = command_word(argv)
    names = list(commands(parser))
    if word is None or word in names:
        return
    close = difflib.get_close_matches(word, names, n=3, cutoff=0.6)
    if close:
        parser.error(f"argument COMMAND: invalid choice: {word!r} "
                     f"(did you mean {' or '.join(close)}?)")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser()
    if all(word in ("-q", "--quiet", "-v", "--verbose") for word in argv):
        # bare `wikisum`: what it does and its commands, as a successful answer
        parser.print_help()
        return 0
    check_command(parser, argv)
    args, rest = parser.parse_known_args(argv)
    progress.set_verbosity(args.verbosity)
    command = chosen_parser(commands(parser)[args.command], args)
    for old, new in getattr(args, "retired_options", None) or []:
        progress.detail(f"wikisum {args.command}: {old} is now spelt {new}")
    for note in split_notes(command):
        progress.detail(f"wikisum {args.command}: {note}")
    try:
        return dispatch(args, rest, command)
    except ModuleNotFoundError as exc:
        raise SystemExit(missing_package(args.command, exc)) from None


# The packages an install without the `pipeline` extra lacks (setup.py's PIPELINE), by the name
# they are imported under.
PIPELINE_PACKAGES = frozenset({"apache_beam", "warcio", "trafilatura", "charset_normalizer",
                               "mwparserfromhell", "py3langid", "protego", "matplotlib"})


def missing_package(command: str, exc: ModuleNotFoundError) -> str:
    """The one-line error for a command whose packages are not installed.

    Raises:
        ModuleNotFoundError: ``exc`` again when the missing module is none of stage one's.
    """
    top = (exc.name or "").split(".")[0]
    if top not in PIPELINE_PACKAGES:
        raise exc
    return (f"wikisum {command}: {top} is not installed; this command belongs to stage one "
            "(the Beam jobs), which needs the pipeline extra: pip install 'wikisum[pipeline]'")


def dispatch(args: argparse.Namespace, rest: list[str], command) -> int:
    # Beam jobs pass Beam's options on to Beam; anything neither they nor Beam know is an error,
    # as it is for every other command (Beam would drop it with a warning and use defaults).
    if getattr(args, "beam_args", False):
        unknown = unknown_beam_args(rest)
        if unknown:
            known = option_strings(command) + option_strings(beam_option_parser())
            command.error(explain_unknown(unknown, known))
        return guarded_run(args, lambda: args.func(args, rest), dry_run=is_dry_run(rest))
    if rest:
        command.error(explain_unknown(rest, option_strings(command)))
    return guarded_run(args, lambda: args.func(args))


def command_module(name: str):
    """The module of the command called ``name`` (``cc-fetch`` -> workflows.ccfetch)."""
    return {command_name(module): module for module in COMMANDS}[name]


def command_name(module) -> str:
    """A command module's command: its ``COMMAND``, or its name with ``-`` for ``_``
    (``convert_pairs`` -> ``convert-pairs``; ``ccfetch`` is ``cc-fetch``)."""
    name = module.__name__.rsplit(".", 1)[1]
    return getattr(module, "COMMAND", {"ccfetch": "cc-fetch"}.get(name, name.replace("_", "-")))


def is_dry_run(beam_argv: list[str]) -> bool:
    """Whether Beam's options ask for a dry run (``--dry_run true``): nothing is written."""
    for i, word in enumerate(beam_argv):
        if word.startswith("--dry_run="):
            return word.split("=", 1)[1].lower() in ("true", "1", "yes")
        if word == "--dry_run":
            following = beam_argv[i + 1] if i + 1 < len(beam_argv) else "true"
            return following.lower() in ("true", "1", "yes")
    return False


def guarded_run(args: argparse.Namespace, call, *, dry_run: bool = False) -> int:
    """Run a command after checking every output it names (pipeline.ownership): nothing a user
    owns is deleted or overwritten. A refused output is a one-line error before any work; a
    command that fails leaves no claimed-but-empty directory behind."""
    from wikisum.core import outputlocks, ownership
    from wikisum.workflows import inputs

    outputs = command_module(args.command).outputs(args)
    if dry_run:  # a dry run writes nothing; its outputs are checked where they are local
        outputs = [o for o in outputs if "://" not in o.path]
    guard = ownership.Guard(args.command, outputs)
    try:
        read = inputs.inputs(args.command, args)
        ownership.check_names(args.command, outputs, read)
        ownership.check_apart(args.command, outputs, read)
        guard.check()
    except ownership.NotOurs as exc:
        raise SystemExit(str(exc)) from None
    if dry_run:
        return call()
    try:
        guard.lock()
    except (ownership.NotOurs, outputlocks.Busy) as exc:
        raise SystemExit(str(exc)) from None
    except OSError as exc:
        if (full := disk_full(exc)) is None:
            raise
        raise SystemExit(disk_full_message(args.command, full, outputs)) from None
    for out, holder in guard.stale:
        progress.say(f"wikisum {args.command}: {out.option} {out.path} was being written by "
                     f"{outputlocks.describe(holder)}, which stopped before it finished (its "
                     "lock is stale); this run takes the output over", file=sys.stderr)
    status = 1
    try:
        guard.claim()
        status = call()
        return status
    except SystemExit as exc:
        status = 0 if exc.code in (None, 0) else 1
        raise
    except Exception as exc:
        if (full := disk_full(exc)) is None:
            raise
        raise SystemExit(disk_full_message(args.command, full, outputs)) from None
    finally:
        finish(guard, status == 0, args.command, outputs)


def finish(guard, ok: bool, command: str, outputs: list) -> None:
    """``guard.finish``; on a full disk after a failed command the records stay as they were
    (a file output still recorded as being written), and the command's own message stands."""
    try:
        guard.finish(ok)
    except OSError as exc:
        if (full := disk_full(exc)) is None:
            raise
        guard.unlock()
        if ok:
            raise SystemExit(disk_full_message(command, full, outputs)) from None


# Why a write failed, for the one-line message, by errno.
DISK_FULL = {
    errno.ENOSPC: "no space left on device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EFBIG: "the file-size limit was hit (ulimit -f)",
}


def disk_full(exc: BaseException) -> OSError | None:
    """The full-disk OSError behind ``exc`` (itself, or what it was raised from or during);
    None when the failure is not a full disk (it then surfaces unchanged). Libraries that
    write in C (pyarrow) raise an OSError that keeps the errno only in its text."""
    seen, found = set(), []
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError):
            if exc.errno in DISK_FULL:
                found.append(exc)
            else:
                match = re.search(r"\[errno (\d+)\]", str(exc), re.IGNORECASE)
                if match and int(match.group(1)) in DISK_FULL:
                    number = int(match.group(1))
                    found.append(OSError(number, DISK_FULL[number], exc.filename))
        exc = exc.__cause__ or exc.__context__
    named = [error for error in found if error.filename]
    return (named or found or [None])[0]


def disk_full_message(command: str, exc: OSError, outputs: list) -> str:
    """One line: what could not be written, why, and that rerunning is safe."""
    if exc.filename:
        where = os.fsdecode(exc.filename)
    else:
        where = "under " + " and ".join(f"{o.option} {o.path}" for o in outputs) \
            if outputs else "its output"
    cause = DISK_FULL[exc.errno]
    return (f"wikisum {command}: cannot write {where}: {cause} "
            f"({errno.errorcode[exc.errno]}); free space and run the same command again "
            "(an earlier finished output is kept, and nothing partial is ever read as finished)")


if __name__ == "__main__":
    sys.exit(main())
