"""The paths each command reads, so that an output is never put into, onto or around one of them
(core.ownership.check_apart).

Each command's entry lists ``(option, dest)``: the option as the user writes it and the
attribute the parser stores it under. A value may be a path, a glob (its local matches are the
inputs), a comma-separated list of dumps, a list of these (an option given several times), or a
``NAME=PATH`` pair (human-eval's systems).
"""

from __future__ import annotations

import argparse
import glob
import itertools

from wikisum.core.ownership import Input

_DUMPS = ("--wiki", "wiki")
_STAGE_ONE = [_DUMPS, ("--t2t-wiki-content", "t2t_wiki_content"),
              ("--t2t-wiki-urls", "t2t_wiki_urls"), ("--warc", "warc"), ("--wet", "wet"),
              ("--search-results", "search_results")]

INPUTS: dict[str, list[tuple[str, str]]] = {
    "sample": [],
    "demo": [],
    "search-index": [("--warc", "warc"), ("--wet", "wet"), ("--exclude-sites", "exclude_sites")],
    "search": [("--index", "index"), ("--titles", "titles"), _DUMPS, ("--ingest", "ingest"),
               ("--exclude-sites", "exclude_sites")],
    "ingest": _STAGE_ONE,
    "build": _STAGE_ONE + [("--learned", "learned")],
    "cc-plan": [("--t2t-metadata", "t2t_metadata"), ("--urls", "urls"),
                ("--wet-paths", "wet_paths"), ("--wet-root", "wet_root")],
    "cc-fetch": [("--urls", "urls"), ("--columnar-index", "columnar_index")],
    "crawl": [("--urls", "urls")],
    "vocab": [("--data", "ingest_dir")],
    "rank": [("--data", "ingest_dir"), ("--vocab", "vocab"), ("--learned", "learned")],
    "report": [("--data", "data"), ("--compare", "compare")],
    "import": [("PATH", "sources"), ("--vocab", "vocab"), ("--source-vocab", "source_vocab")],
    "write-as": [("--data", "data")],
    "convert-pairs": [("--source", "source"), ("--target", "target"), ("--vocab", "vocab")],
    "exemplars": [("--data", "data")],
    "train": [("--data", "data"), ("--config", "config"), ("--init", "init")],
    "decode": [("--run", "run"), ("--data", "data")],
    "export": [("--run", "run")],
    "evaluate": [("--preds", "preds"), ("--compare", "compare")],
    "human-eval": [("--preds", "preds"), ("--data", "data"), ("--answers", "answers"),
                   ("--key", "key")],
}

# The matches of a glob compared with the outputs, at most (a glob of more is still checked as
# a pattern).
_MATCH_LIMIT = 10_000


def _values(value) -> list[str]:
    """The path strings in an option's value."""
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return [value[1]]  # NAME=PATH
    if isinstance(value, (list, tuple)):
        return [path for item in value for path in _values(item)]
    return []


def _expand(option: str, value: str) -> list[Input]:
    """A glob is its local matches (the first 10,000) and the pattern itself (an output it
    matches would be read by a rerun); a comma list of dumps is its dumps."""
    if "://" in value:
        return []
    parts = value.split(",") if option == "--wiki" else [value]
    found = []
    for part in parts:
        if glob.has_magic(part):
            found.append(Input(option, part, pattern=True))
            matches = itertools.islice(glob.iglob(part, recursive=True), _MATCH_LIMIT)
            found.extend(Input(option, match) for match in matches)
        elif part:
            found.append(Input(option, part))
    return found


def inputs(command: str, args: argparse.Namespace) -> list[Input]:
    """The local paths ``command`` reads, as the user named them."""
    found = []
    for option, dest in INPUTS.get(command, []):
        for value in _values(getattr(args, dest, None)):
            found.extend(_expand(option, value))
    return found
