"""A job's inputs: file globs matched by the job when it runs, URL lists, and the few values a
job is built with."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import apache_beam as beam
from apache_beam.io.filesystem import BeamIOError, CompressionTypes
from apache_beam.io.filesystems import FileSystems

from wikisum.core import shards
from wikisum.core.records import stable_hash


def split_patterns(patterns: Iterable[str]) -> list[str]:
    """The comma-separated pieces of every pattern, in order, without empties or repeats."""
    pieces: list[str] = []
    for pattern in patterns:
        for piece in pattern.split(","):
            piece = piece.strip()
            if piece and piece not in pieces:
                pieces.append(piece)
    return pieces


def count_files(patterns: Iterable[str]) -> int:
    """How many files the globs match, each once (as :class:`MatchFiles` finds them): a total a
    local launcher shows progress against. It lists what it matches, so call it for local
    runs only (a Dataflow launch lists no bucket)."""
    return len({path for piece in split_patterns(patterns) for path in shards.match(piece)})


def url_lines(lines: Iterable[str]) -> Iterator[str]:
    """The URLs of a URL list: its stripped lines, less blank ones and # comments."""
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            yield line


T2T_URL_LIST = "wiki_urls.json"  # tensor2tensor's names: wiki_urls.json-NNNNN-of-01000


def is_t2t_url_list(path: str) -> bool:
    """Whether a URL list is one of tensor2tensor's wiki_urls JSON shards (by its name), read
    as the reference URLs it lists rather than as lines."""
    return path.rsplit("/", 1)[-1].startswith(T2T_URL_LIST)


def list_urls(path: str) -> Iterator[str]:
    """The URLs of a URL list file: its lines (:func:`url_lines`), or the reference URLs of a
    tensor2tensor wiki_urls shard."""
    with FileSystems.open(path, compression_type=CompressionTypes.AUTO) as f:
        if is_t2t_url_list(path):
            from wikisum.formats import t2t

            for item in t2t.iter_wiki_urls(f, path):
                if not isinstance(item, t2t.Problem):
                    yield from item.refs
            return
        yield from url_lines(raw.decode("utf-8", errors="replace")
                             for raw in iter(f.readline, b""))


def count_distinct_lines(patterns: Iterable[str], key: Callable[[str], str]) -> int:
    """Distinct ``key(url)`` over the URL lists the globs match (:func:`url_lines`): the URLs a
    crawl will settle, one outcome each. Memory: one 64-bit hash per distinct URL."""
    seen: set[int] = set()
    for piece in split_patterns(patterns):
        for path in shards.match(piece):
            seen.update(stable_hash(key(url)) for url in list_urls(path))
    return len(seen)


class Values(beam.PTransform):
    """PBegin -> the few values given, known when the job is built (file globs, shard keys), in
    two steps: an impulse and one that yields them. Beam's ``Create`` takes three (it encodes
    the values into the job and decodes them in a step of their own) and, for more than one
    value, a reshuffle: each step of a job costs its launch and every local run about 20 ms,
    and where a group-by or a reshuffle follows there is nothing to spread."""

    def __init__(self, values: Iterable):
        super().__init__()
        self.values = tuple(values)

    def expand(self, pbegin):
        values = self.values
        return (pbegin | "Impulse" >> beam.Impulse()
                | "Values" >> beam.FlatMap(lambda _: values))


class MatchFiles(beam.PTransform):
    """Globs -> the paths they match, matched by the job when it runs (so a launch neither
    lists a bucket nor ships 100,000 paths inside the job graph), each path once, spread over
    workers. For a required input a glob that matches nothing fails the job with its name.
    """

    def __init__(self, patterns: Iterable[str], required: bool = True):
        super().__init__()
        self.patterns = split_patterns(patterns)
        self.required = required

    def expand(self, pbegin):
        # All the globs in one element, matched by one call: the paths come out once each
        # without a shuffle of their own (a job has a few globs; a Distinct cost a group-by
        # and four steps per input, and a Create of several globs a reshuffle).
        patterns, required = tuple(self.patterns), self.required
        return (pbegin
                | "Start" >> beam.Impulse()
                | "Match" >> beam.FlatMap(lambda _: match_paths(patterns, required))
                | "Spread" >> beam.Reshuffle())


def match_paths(patterns: Iterable[str], required: bool = True) -> list[str]:
    """The paths the globs match, in the order found, each once.

    Raises:
        BeamIOError: a glob matches nothing and ``required`` (the error names the glob).
    """
    paths: dict[str, None] = {}
    for pattern in patterns:
        found = FileSystems.match([pattern])[0].metadata_list
        if not found and required:
            raise BeamIOError(f"no file matches {pattern} (an input glob must match a file)")
        paths.update((metadata.path, None) for metadata in found)
    return list(paths)
