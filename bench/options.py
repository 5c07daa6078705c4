"""``--config FILE.yaml`` for the scripts in bench/: a run's options kept in ``configs/``.

A config file maps option names (``budget-mb`` or ``budget_mb``) to values; the command line
overrides it. Its header comment holds the command that runs it, so a figure quoted in
docs/benchmarks.md points at one file that says how to reproduce it.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml


def parse(parser: argparse.ArgumentParser, argv: list[str] | None) -> argparse.Namespace:
    """``parser.parse_args(argv)`` with ``--config`` defaults; ``--show-config`` prints the
    resolved options as JSON and exits (what a config file and a command line amount to)."""
    parser.add_argument("--config", type=Path, metavar="FILE.yaml",
                        help="options from a YAML file (configs/bench/); the command line "
                             "overrides them")
    parser.add_argument("--show-config", action="store_true",
                        help="print the resolved options as JSON and exit")
    known, _ = parser.parse_known_args(argv)
    if known.config is not None:
        parser.set_defaults(**config_defaults(parser, known.config))
    args = parser.parse_args(argv)
    if args.show_config:
        print(json.dumps({k: v for k, v in vars(args).items() if k != "show_config"},
                         default=str, sort_keys=True))
        sys.exit(0)
    return args


def config_defaults(parser: argparse.ArgumentParser, path: Path) -> dict:
    try:
        values = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        parser.error(f"cannot read --config {path}: {exc}")
    if not isinstance(values, dict):
        parser.error(f"--config {path}: expected a mapping of option names to values")
    actions = {a.dest: a for a in parser._actions if a.help != argparse.SUPPRESS}
    defaults = {}
    for key, value in values.items():
        dest = str(key).replace("-", "_")
        action = actions.get(dest)
        if action is None or dest in ("config", "show_config", "help"):
            known = ", ".join(sorted(d.replace("_", "-") for d in actions
                                     if d not in ("config", "show_config", "help")))
            parser.error(f"--config {path}: unknown option {key!r} (options: {known})")
        if isinstance(value, str) and callable(action.type):
            value = action.type(value)
        elif isinstance(value, list) and callable(action.type):
            value = [action.type(v) if isinstance(v, str) else v for v in value]
        if action.choices is not None:
            bad = [v for v in (value if isinstance(value, list) else [value])
                   if v not in action.choices]
            if bad:
                parser.error(f"--config {path}: {key}: {bad[0]!r} is not one of "
                             f"{', '.join(map(str, action.choices))}")
        defaults[dest] = value
    return defaults
