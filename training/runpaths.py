"""Paths a run records, relative to the run directory, so a run (and the dataset beside it) can be
moved, copied or synced and still be used from any working directory.

A run's ``config.json`` and checkpoints store the dataset as a path relative to the run
directory (``"../build/data"``), or as written where that cannot work: a URL (``gs://...``), or a
local dataset on another filesystem than the run (moving one never moves the other, so the
absolute path is the one that keeps working). ``"paths_relative_to": "run"`` marks files written
so; older runs stored paths relative to the directory ``wikisum train`` ran in, and those are
still read (first as written, then against the run directory).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

RELATIVE_TO = "paths_relative_to"  # key of config.json and checkpoints: "run" for this layout
RUN = "run"


def is_url(path: str) -> bool:
    return "://" in path


def _device(path: str) -> int | None:
    probe = Path(path).absolute()
    for candidate in (probe, *probe.parents):
        try:
            return candidate.stat().st_dev
        except OSError:
            continue
    return None


def store_path(path: str, run: str | Path) -> str:
    """``path`` (as given: absolute, or relative to the working directory) as the run records
    it: relative to ``run``, or unchanged for a URL, and absolute when it is on another
    filesystem than the run (or no relative path exists, as across Windows drives)."""
    if is_url(path):
        return path
    target, base = os.path.abspath(path), os.path.abspath(run)
    if _device(target) != _device(base):
        return target
    try:
        return os.path.relpath(target, base)
    except ValueError:
        return target


def candidates(stored: str, run: str | Path, relative_to_run: bool) -> list[str]:
    """Where a recorded path may be, most likely first: against the run directory for a run
    written with run-relative paths, as written (the working directory) for an older one."""
    if is_url(stored) or os.path.isabs(stored):
        return [stored]
    in_run = os.path.normpath(os.path.join(str(run), stored))
    found = [in_run, stored] if relative_to_run else [stored, in_run]
    return list(dict.fromkeys(found))


def resolve_dataset(stored: str, run: str | Path, relative_to_run: bool
                    ) -> tuple[str | None, list[str]]:
    """The recorded dataset directory as a path usable from here: (the first candidate that
    holds a dataset.json, or None; the candidates tried). A URL is taken as it is."""
    tried = candidates(stored, run, relative_to_run)
    for path in tried:
        if is_url(path) or (Path(path) / "dataset.json").is_file():
            return path, tried
    return None, tried


def read_run_info(run: str | Path) -> dict[str, Any] | None:
    """RUN/config.json, or None when the run has none yet."""
    path = Path(run) / "config.json"
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{path} does not parse: {exc}") from exc


def stored_train_config(values: dict[str, Any], run: str | Path) -> dict[str, Any]:
    """A train config (``asdict`` form) as a run records it: data relative to the run, out as
    the run itself ("."), so nothing depends on the directory the command ran in."""
    return {**values, "data": store_path(str(values["data"]), run), "out": "."}


def resolved_train_config(values: dict[str, Any], run: str | Path, relative_to_run: bool
                          ) -> dict[str, Any]:
    """The inverse of :func:`stored_train_config`: data as a path usable from here (the first
    candidate when none is found, so the error names it), out as ``run``."""
    stored = str(values.get("data", ""))
    data, tried = resolve_dataset(stored, run, relative_to_run)
    return {**values, "data": data or tried[0], "out": str(run)}
