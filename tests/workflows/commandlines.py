"""Command lines of every command, derived from its parser: the tests that run each command
(ownership, input errors, Dataflow dry runs) take them from here, so that a new command module
needs no line in any of them.

The least command line of a command gives what its parser requires (required options, the first
option of a required group, positionals; a choice's first value) and ``--out`` where the command
has one. Each test supplies the values: an input of the option's kind, an output it owns.
``NEEDS`` holds what a run needs beyond that, for the few commands whose parser cannot say it.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from wikisum.workflows import cli

# Metavars of options that name a path; --out (what a command writes) is not an input.
PATH_METAVARS = {"DIR", "FILE", "GLOB", "JSONL", "MODEL", "PATH", "PREDS", "RUN", "INDEX",
                 "DUMP", "DUMP[,DUMP...]", "NAME=PREDS", ("BUILD_A", "BUILD_B"), ("A", "B")}

# What a run needs that its parser leaves optional, by command: one of several sources will do
# (a parser cannot require "one of them or several"), or a value it cannot check. The values
# of inputs here only show their kind: each test gives its own input for the option.
NEEDS = {
    "search-index": ["--wet", "GLOB"],  # or --warc, or both
    "search": ["--index", "INDEX", "--titles", "FILE"],  # or --engine; or --wiki, --ingest
    "ingest": ["--wiki", "DUMP"],  # or tensor2tensor's --t2t-wiki-content
    "build": ["--wiki", "DUMP"],  # as ingest
    "cc-fetch": ["--crawl", "CC-MAIN-2017-13"],  # --source api, the default, needs a crawl
    "report": ["--data", "DIR"],  # or --compare BUILD_A BUILD_B
    "train": ["--model", "t-dmca", "--data", "DIR"],  # or either in --config
    "human-eval make": ["--preds", "b=PREDS"],  # two systems at least, to compare
}

# value(action, word) -> the value a test gives ``action`` where the command line shows
# ``word`` (its metavar, a choice, or NEEDS' word).
Value = Callable[[argparse.Action, str], str]


def parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser, and each subcommand's as "COMMAND SUBCOMMAND"."""
    found = {}
    for name, parser in cli.commands(cli.build_parser()).items():
        found[name] = parser
        found.update({f"{name} {sub}": p for sub, p in cli.subcommands(parser).items()})
    return found


def runnable() -> list[str]:
    """What runs: each command, or each of its subcommands where it has them (``human-eval
    make``, ``human-eval score``), in pipeline order."""
    names = []
    for name, parser in cli.commands(cli.build_parser()).items():
        subs = cli.subcommands(parser)
        names += [f"{name} {sub}" for sub in subs] if subs else [name]
    return names


def beam_commands() -> list[str]:
    """The commands that pass Beam's options through (``beam_args=True``): the Beam jobs."""
    return [name for name, parser in cli.commands(cli.build_parser()).items()
            if parser.get_default("beam_args")]


def option(action: argparse.Action) -> str:
    """The long spelling of an option (``--data``)."""
    return next(s for s in action.option_strings if s.startswith("--"))


def is_input(action: argparse.Action) -> bool:
    """Whether ``action`` is an option that names an input path (by its metavar)."""
    return (bool(action.option_strings) and action.dest != "out"
            and action.help is not argparse.SUPPRESS and action.metavar in PATH_METAVARS)


def metavar(action: argparse.Action) -> str:
    """The word --help shows for ``action``'s value (the first of a pair: A of A B)."""
    shown = action.metavar
    if isinstance(shown, tuple):
        return shown[0]
    return shown or action.dest.upper()


def required(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """What the parser requires, in its order: each required option or positional, and the
    first option of each required group."""
    firsts = {id(group._group_actions[0]) for group in parser._mutually_exclusive_groups
              if group.required}
    found = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        if not action.option_strings:
            if action.nargs not in ("*", "?", argparse.REMAINDER):
                found.append(action)
        elif action.required or id(action) in firsts:
            found.append(action)
    return found


def words(action: argparse.Action, word: str, value: Value) -> list[str]:
    """``action`` on a command line: its option (if any) and its values."""
    count = action.nargs if isinstance(action.nargs, int) else 1
    values = [value(action, word)] * count
    return [option(action), *values] if action.option_strings else values


def command_line(name: str, value: Value) -> list[str]:
    """The least command line of ``name`` ("human-eval make" for a subcommand): what the
    parser requires, --out where it has one, and NEEDS[name]; ``value`` gives every value."""
    parser = parsers()[name]
    argv = name.split()
    needed = required(parser)
    for action in needed:
        word = next(iter(action.choices)) if action.choices else metavar(action)
        argv += words(action, word, value)
    given = {action.dest for action in needed}
    out = next((a for a in parser._actions if "--out" in a.option_strings), None)
    if out is not None and out.dest not in given:
        argv += words(out, metavar(out), value)
    by_option = {s: a for a in parser._actions for s in a.option_strings}
    needs = NEEDS.get(name, [])
    for i in range(0, len(needs), 2):
        action = by_option[needs[i]]
        argv += [needs[i], value(action, needs[i + 1])]
    return argv


def path_value(action: argparse.Action, word: str, path: str) -> str:
    """``path`` as the input option ``action`` takes it where the command line shows ``word``:
    a NAME=PREDS option gets the name ``word`` gives ("a" for the metavar itself)."""
    if "=" not in str(action.metavar):
        return path
    name = word.split("=", 1)[0]
    return f"{'a' if name == 'NAME' else name}={path}"
