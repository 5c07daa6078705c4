"""The outputs one job leaves for the next: where they are, and the checks a reader makes that
the job that wrote them finished (its completion record is there and its shard set is whole).
Readers import this, never the job that wrote the files.
"""

from __future__ import annotations

import json
import os
import posixpath

from wikisum.core import files, shards

# ``wikisum ingest``: OUT/articles/articles-SSSSS-of-NNNNN.parquet, and OUT/summary.json written
# last (with the number of shards of each set).
INGEST_SUMMARY = "summary.json"


def article_shards_pattern(out: str) -> str:
    """The glob of the article shards an ingest run wrote into ``out``."""
    return files.join(out, "articles", "articles-*.parquet")


def read_summary(out: str) -> dict:
    """``summary.json`` of a finished ingest run in ``out``.

    Raises:
        IncompleteOutput: there is none: the job never ran there, or did not finish.
    """
    path = files.join(out, INGEST_SUMMARY)
    if not files.exists(path):
        raise shards.IncompleteOutput(
            f"{out} holds no finished ingest output ({INGEST_SUMMARY} is written last and is "
            "missing: the job did not run there, or did not finish); rerun `wikisum ingest "
            f"--out {out}`")
    try:
        return json.loads(shards.read_text(path))
    except ValueError as exc:
        raise ValueError(f"{path} does not parse ({exc}): rerun `wikisum ingest --out {out}`"
                         ) from exc


def article_shards(out: str) -> list[str]:
    """The article shards of a finished ingest output, checked to be the whole set its
    ``summary.json`` records; a clear error naming the job to rerun otherwise."""
    summary = read_summary(out)
    expected = summary.get("shards", {}).get("articles")
    return shards.complete_set(article_shards_pattern(out), expected, f"{out}: the article set",
                               f"rerun `wikisum ingest --out {out}`")


# A dataset: shards per split and their completion record, ``dataset.json``, written by
# ``wikisum rank`` and ``wikisum convert-pairs`` into their --out; ``wikisum build`` writes its
# dataset into OUT/data.
DATASET_RECORD = "dataset.json"
BUILD_DATA = "data"


def dataset_dir(path: str) -> str:
    """The dataset directory that ``path`` names: ``path`` itself when it holds dataset.json,
    else ``path/data`` when that does (``path`` is the root of a ``wikisum build``). Every reader
    of a dataset given on a command line goes through here, so that a build's root is a dataset
    wherever a dataset directory is.

    Raises:
        FileNotFoundError: neither holds dataset.json; the message names both paths and the
            commands that write them.
    """
    inside = files.join(path, BUILD_DATA)
    for candidate in (path, inside):
        if files.exists(files.join(candidate, DATASET_RECORD)):
            return candidate
    missing = "://" not in path and not os.path.exists(path)
    raise FileNotFoundError(
        f"{path} {'does not exist' if missing else 'is not a dataset'}: "
        f"{files.join(path, DATASET_RECORD)} not found (`wikisum rank` and `wikisum "
        f"convert-pairs` write it into their --out), nor {files.join(inside, DATASET_RECORD)}"
        " (`wikisum build` writes it into OUT/data)")


# Paths inside a completion record (``dataset.json``) are stored relative to the directory that
# holds the record, so that an output can be moved, copied or synced to a bucket and read from
# any working directory. A path on another filesystem (a gs:// path in a local record, another
# bucket) is kept absolute.


def _split_url(path: str) -> tuple[str, str]:
    """(``scheme://bucket``, the path within it); ("", path) for a local path."""
    if "://" not in path:
        return "", path
    scheme, rest = path.split("://", 1)
    bucket, _, inner = rest.partition("/")
    return f"{scheme}://{bucket}", "/" + inner


def relative_path(path: str | None, base_dir: str) -> str | None:
    """``path`` as written relative to ``base_dir`` (``../vocab.model``); unchanged when the two
    are on different filesystems, or when ``path`` is empty."""
    if not path:
        return path
    root, inner = _split_url(path)
    base_root, base_inner = _split_url(base_dir)
    if root != base_root:
        return path if root else os.path.abspath(path)
    if not root:
        return os.path.relpath(os.path.abspath(path), os.path.abspath(base_dir))
    return posixpath.relpath(inner, base_inner.rstrip("/") or "/")


def resolve_path(path: str | None, base_dir: str) -> str | None:
    """A path a record in ``base_dir`` stores -> the path to open: relative ones are taken
    against ``base_dir``, absolute ones and URLs as they are."""
    if not path or "://" in path or os.path.isabs(path):
        return path
    root, inner = _split_url(base_dir)
    if not root:
        return os.path.normpath(os.path.join(base_dir, path))
    return root + posixpath.normpath(posixpath.join(inner, path))
