"""Checks every command makes before any work: typed option values with their valid ranges
(argparse ``type=`` functions, so a bad value is a usage error naming the option), and the
inputs and outputs a job will need (an output directory that is a file or cannot be written,
an input that is a directory), so that a mistake costs a second, not a job.

It also holds the option conventions every command follows (README, "Option names"): one
parser for byte sizes (:func:`byte_size`), and retired spellings kept as hidden aliases
(:func:`add_option`). Building the parsers imports nothing heavy: Beam, pyarrow and the like
are imported by the checks that run a command.
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable, Iterable

from wikisum.core.shards_config import DEFAULT_BUFFER_BYTES

# The epilog of every Beam job's --help.
BEAM_OPTIONS = """\
Beam pipeline options are passed through, e.g.:
  local, all cores:  --direct_num_workers 0 --direct_running_mode multi_processing
  Dataflow:          --runner DataflowRunner --project PROJECT --region REGION \\
                     --temp_location gs://BUCKET/tmp --setup_file ./setup.py
  check it first:    the same with --dry_run true: the Dataflow job is built and validated
                     offline, nothing is read or written (README: Running on Dataflow)
Progress goes to stderr: locally the count of all workers against the total (a bar on a
terminal, else a line every 10 s with rate and ETA; none with --quiet); on Dataflow the job's
page shows its counters (namespace wikisum) and the command waits only for the job to end.
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


# Byte sizes, one convention for every option that takes one: a plain integer is bytes; units
# are binary, as wget and `ls -h` count them (1KB = 1KiB = 1024 bytes, 1MB = 1MiB = 2**20).
SIZES = "SIZE: bytes (4096) or with a unit: 64KB, 10MB, 1.5GB; units are binary (1MB = 1MiB = " \
        "2^20 bytes)"
_SIZE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([a-z]*)\s*$", re.IGNORECASE)
_UNITS = {"": 1, "b": 1}
for _power, _letter in enumerate("kmgt", start=1):
    for _suffix in (_letter, f"{_letter}b", f"{_letter}ib"):
        _UNITS[_suffix] = 1024 ** _power


def parse_size(text: str | int, minimum: int = 1, maximum: int | None = None) -> int:
    """``"10MB"``, ``"512KB"``, ``"1.5M"``, ``"2GiB"`` or ``"4096"`` -> bytes, in
    [minimum, maximum].

    Raises:
        ValueError: naming the value, for anything else or for a size out of range.
    """
    if isinstance(text, int):
        value = text
    else:
        m = _SIZE.match(str(text))
        if not m or m.group(2).lower() not in _UNITS:
            raise ValueError(f"not a size: {text!r} (use e.g. 10MB, 512KB or 4096)")
        value = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if value < minimum:
        raise ValueError(f"must be at least {format_size(minimum)}, got {text}")
    if maximum is not None and value > maximum:
        raise ValueError(f"must be at most {format_size(maximum)}, got {text}")
    return value


def format_size(n: int) -> str:
    """Bytes as :func:`parse_size` reads them, with the largest unit that is exact:
    268435456 -> '256MB', 1024 -> '1KB', 1000 -> '1000'."""
    for power, unit in ((4, "TB"), (3, "GB"), (2, "MB"), (1, "KB")):
        if n and n % 1024 ** power == 0:
            return f"{n // 1024 ** power}{unit}"
    return str(n)


def byte_size(minimum: int = 1, maximum: int | None = None) -> Callable[[str], int]:
    """A byte size (:func:`parse_size`) in [minimum, maximum]."""
    return parsed(lambda text: parse_size(text, minimum, maximum), "size")


def mebibytes(text: str) -> int:
    """A whole number of MiB -> bytes: what retired ``--...-mb`` spellings took."""
    value = count(1, 1_000_000)(text)
    return value * 1024 * 1024


class RetiredOption(argparse.Action):
    """A retired spelling of an option: parses to the same destination, hidden from --help,
    and noted in ``namespace.retired_options`` (``--verbose`` says what it is now)."""

    def __init__(self, option_strings, dest, canonical: str = "", **kwargs):
        super().__init__(option_strings, dest, **kwargs)
        self.canonical = canonical

    def __call__(self, parser, namespace, values, option_string=None):
        setattr(namespace, self.dest, values)
        used = list(getattr(namespace, "retired_options", None) or [])
        namespace.retired_options = used + [(option_string, self.canonical)]


def add_option(parser, name: str, *, retired: Iterable[str] = (),
               retired_type: Callable[[str], object] | None = None, required: bool = False,
               **kwargs) -> argparse.Action:
    """``parser.add_argument(name, **kwargs)``, and each ``retired`` spelling as a hidden alias
    to the same destination (read with ``retired_type`` where the old spelling took another
    unit). A required option with aliases is required as a group: either spelling will do."""
    retired = list(retired)
    target = parser.add_mutually_exclusive_group(required=True) if required and retired \
        else parser
    if required and not retired:
        kwargs["required"] = True
    action = target.add_argument(name, **kwargs)
    for old in retired:
        target.add_argument(old, dest=action.dest, action=RetiredOption, canonical=name,
                            type=retired_type or action.type, choices=action.choices,
                            metavar=action.metavar, default=argparse.SUPPRESS,
                            help=argparse.SUPPRESS)
    return action


def add_shard_buffer(parser, retired: bool = True) -> None:
    """--shard-buffer SIZE, of every job that writes shards (the jobs older than the spelling
    also take the one it replaced, --shard-buffer-mb MB; a new job, ``retired=False``, not)."""
    add_option(parser, "--shard-buffer", retired=["--shard-buffer-mb"] if retired else [],
               retired_type=mebibytes,
               type=byte_size(1024 * 1024, 1024 ** 4), default=DEFAULT_BUFFER_BYTES,
               metavar="SIZE",
               help="rows a shard writer holds in memory before it sorts them on local disk; "
                    "bounds a worker's memory per shard "
                    f"(default: {format_size(DEFAULT_BUFFER_BYTES)})")


def retired_options(parser: argparse.ArgumentParser) -> dict[str, str]:
    """{retired spelling: the option it became} of one command's parser."""
    return {s: a.canonical for a in parser._actions if isinstance(a, RetiredOption)
            for s in a.option_strings}


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
    from wikisum.core import shards
    from wikisum.pipeline.beamio import split_patterns

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


def input_path(path: str, option: str, command: str, kind: str = "file") -> None:
    """A local input exists, and is a file (``kind`` "file"), a directory ("dir") or either
    ("any"); remote paths (gs://) are left to the job."""
    if not _local(path):
        return
    where = f"wikisum {command}: {option} {path}"
    if not os.path.exists(path):
        raise SystemExit(f"{where} does not exist")
    if kind == "file" and os.path.isdir(path):
        raise SystemExit(f"{where} is a directory; this option takes a file")
    if kind == "dir" and not os.path.isdir(path):
        raise SystemExit(f"{where} is a file; this option takes a directory")


def dataset(path: str, option: str, command: str) -> str:
    """The dataset directory ``path`` names (the root of a `wikisum build` names its data/:
    :func:`wikisum.core.outputs.dataset_dir`), or a one-line error naming the option."""
    from wikisum.core import outputs

    try:
        return outputs.dataset_dir(path)
    except FileNotFoundError as exc:
        raise SystemExit(f"wikisum {command}: {option} {exc}") from None


def ingest_output(path: str, option: str, command: str) -> None:
    """``path`` is a finished `wikisum ingest` output (its summary.json is there), or a
    one-line error naming the option."""
    from wikisum.core import outputs

    input_path(path, option, command, "dir")
    try:
        outputs.read_summary(path)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum {command}: {option} {exc}") from None
