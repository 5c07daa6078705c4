"""Checks every command makes before any work: typed option values with their valid ranges
(argparse ``type=`` functions, so a bad value is a usage error naming the option), and the
inputs and outputs a job will need (an output directory that is a file or cannot be written,
an input that is a directory), so that a mistake costs a second, not a job.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Iterable

from wikisum.pipeline import shards
from wikisum.pipeline.beamio import split_patterns

# The epilog of every Beam job's --help.
BEAM_OPTIONS = """\
Beam pipeline options are passed through, e.g.:
  local, all cores:  --direct_num_workers 0 --direct_running_mode multi_processing
  Dataflow:          --runner DataflowRunner --project PROJECT --region REGION \\
                     --temp_location gs://BUCKET/tmp --setup_file ./setup.py
  check it first:    the same with --dry_run true: the Dataflow job is built and validated
                     offline, nothing is read or written (README: Running on Dataflow)
"""


def parsed(parse: Callable[[str], object], name: str) -> Callable[[str], object]:
    """An argparse type from a parser that raises ValueError with a message for the user."""

    def convert(text: str):
        try:
            return parse(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    convert.__name__ = name
    return convert


def count(minimum: int = 1, maximum: int | None = None) -> Callable[[str], int]:
    """An integer in [minimum, maximum]."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            top = f" and {maximum}" if maximum is not None else ""
            word = "between" if maximum is not None else "at least"
            raise argparse.ArgumentTypeError(
                f"must be {word} {minimum}{top}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def number(low: float, high: float, *, low_open: bool = False) -> Callable[[str], float]:
    """A finite number in [low, high] (or (low, high] with ``low_open``): nan and inf never."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        too_low = value <= low if low_open else value < low
        if not math.isfinite(value) or too_low or value > high:
            bracket = "(" if low_open else "["
            raise argparse.ArgumentTypeError(f"must be a finite number in {bracket}{low:g}, "
                                             f"{high:g}], got {text}")
        return value

    parse.__name__ = "number"
    return parse


_DEVICE = re.compile(r"^(auto|cpu|cuda|cuda:\d+|mps)$")


def device(text: str) -> str:
    """auto, cpu, cuda, cuda:N or mps."""
    if not _DEVICE.match(text):
        raise argparse.ArgumentTypeError(f"unknown device {text!r}; use auto, cpu, cuda, "
                                         "cuda:N or mps")
    return text


def _local(path: str) -> bool:
    return "://" not in path


def output_dir(path: str, command: str) -> None:
    """``path`` can be a job's output directory: not a file, and writable where it exists (or
    where it would be created). Remote paths (gs://) are left to the job."""
    if not _local(path):
        return
    if os.path.exists(path) and not os.path.isdir(path):
        raise SystemExit(f"wikisum {command}: --out {path} is a file, not a directory")
    existing = path
    while existing and not os.path.exists(existing):
        existing = os.path.dirname(existing.rstrip("/")) or "."
    if not os.access(existing or ".", os.W_OK | os.X_OK):
        raise SystemExit(f"wikisum {command}: --out {path}: {existing} is not writable")


def input_files(patterns: Iterable[str], option: str, command: str) -> None:
    """Every pattern matches something, and nothing it matches is a directory."""
    for piece in split_patterns(patterns):  # as the job splits them (beamio.MatchFiles)
        if _local(piece) and os.path.isdir(piece):
            raise SystemExit(f"wikisum {command}: {option} {piece} is a directory; give "
                             f"its files, e.g. {option} '{piece.rstrip('/')}/*'")
        matched = shards.match(piece)
        if not matched:
            raise SystemExit(f"wikisum {command}: {option}: no input file matches {piece!r}")
        folders = [m for m in matched if _local(m) and os.path.isdir(m)]
        if folders:
            raise SystemExit(f"wikisum {command}: {option} {piece} matches directories "
                             f"({', '.join(folders[:3])})")
