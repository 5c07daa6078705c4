"""The steps of ``wikisum build``, recorded so that a rerun skips what is done, and where each
reference of a build came from.

A step is done when its output's completion record is there and the build's record
(``OUT/build-steps.json``) holds the step's fingerprint: a hash of its settings and of its
inputs' names, sizes and modification times. Changing an option or an input file redoes that
step and the ones after it; a killed build redoes only the step it was in.
"""

from __future__ import annotations

import hashlib
import json
import os

from apache_beam.io.filesystems import FileSystems

from wikisum.core import shards

STEPS_FILE = "build-steps.json"

# Where a reference came from, by the folder of the WARC/WET file ingest read it from.
GIVEN = "given"
ROUTES = ("cc", "crawl")


def input_state(patterns) -> list[list]:
    """[path, size, modification time] of every file the globs match, sorted."""
    state = []
    for pattern in patterns:
        for meta in FileSystems.match([pattern])[0].metadata_list:
            state.append([meta.path, meta.size_in_bytes, round(meta.last_updated_in_seconds, 3)])
    return sorted(state)


def fingerprint(settings: object, patterns=()) -> str:
    """One step's fingerprint: its settings (a repr, e.g. of its config dataclass) and the
    state of the input files its globs match."""
    body = json.dumps({"settings": repr(settings), "inputs": input_state(patterns)},
                      sort_keys=True)
    return hashlib.sha256(body.encode("utf-8")).hexdigest()


class Steps:
    """``OUT/build-steps.json``: each finished step's fingerprint."""

    def __init__(self, out: str):
        self.path = FileSystems.join(out, STEPS_FILE)
        self.done: dict[str, str] = {}
        if FileSystems.exists(self.path):
            try:
                self.done = json.loads(shards.read_text(self.path)).get("steps", {})
            except ValueError:
                self.done = {}

    def is_done(self, step: str, fp: str, record: str | None = None) -> bool:
        """Whether ``step`` finished with fingerprint ``fp`` (and its completion ``record``
        file, when named, is still there)."""
        return self.done.get(step) == fp and (record is None or FileSystems.exists(record))

    def finish(self, step: str, fp: str) -> None:
        self.done[step] = fp
        self._write()

    def forget(self, step: str) -> None:
        if self.done.pop(step, None) is not None:
            self._write()

    def _write(self) -> None:
        shards.write_text(self.path, json.dumps({"steps": self.done}, indent=1,
                                                sort_keys=True) + "\n")


def route_of(source_file: str, route_dirs: dict[str, str]) -> str:
    """The route (``cc``, ``crawl``) whose folder holds ``source_file``; ``given`` else."""
    for route, folder in route_dirs.items():
        if "://" in folder or "://" in source_file:
            inside = source_file.startswith(folder.rstrip("/") + "/")
        else:
            inside = os.path.abspath(source_file).startswith(os.path.abspath(folder) + os.sep)
        if inside:
            return route
    return GIVEN


def references_by_route(article_paths: list[str], route_dirs: dict[str, str]) -> dict[str, int]:
    """Kept references of the article shards counted by the route their page came from."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    counts = {GIVEN: 0, **{route: 0 for route in route_dirs}}
    for path in article_paths:
        with FileSystems.open(path) as f:
            table = pq.read_table(f, columns=["references"])
        files = pc.struct_field(pc.list_flatten(table.column("references")), "source_file")
        for name, n in zip(*pc.value_counts(files).flatten(), strict=True):
            route = route_of(name.as_py(), route_dirs)
            counts[route] = counts.get(route, 0) + n.as_py()
    return counts
