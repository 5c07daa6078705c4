"""Accounting in a Beam job: tallies of what each stage kept and dropped (in the vocabulary of
:mod:`wikisum.core.accounting`, mirrored in Beam counters) and dead letters, and the combines
that sum them for the job's summary."""

from __future__ import annotations

from collections import Counter

import apache_beam as beam
from apache_beam.metrics import Metrics
from apache_beam.pvalue import TaggedOutput
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.timestamp import MIN_TIMESTAMP
from apache_beam.utils.windowed_value import WindowedValue

from wikisum.core.records import DeadLetter

# Output tags of every DoFn that accounts for what it drops.
DEAD = "dead"
TALLY = "tally"
FILES = "files"  # input files -> read to the end, or stopped by corrupt data
COUNTERS = "wikisum"  # the namespace of every Beam counter (Dataflow's job page shows them)


def tally(stage: str, outcome: str, n: int = 1) -> TaggedOutput:
    """A count for the job's summary (``((stage, outcome), n)``: :mod:`.accounting`), mirrored
    in a Beam counter for live monitoring."""
    Metrics.counter(COUNTERS, f"{stage}:{outcome}").inc(n)
    return TaggedOutput(TALLY, ((stage, outcome), n))


def dead(letter: DeadLetter) -> TaggedOutput:
    return TaggedOutput(DEAD, letter)


class Tallying(beam.DoFn):
    """A DoFn for hot paths: tallies are summed per bundle and emitted once when it finishes,
    instead of one element (and one counter update) per record."""

    def start_bundle(self):
        self._tallies: Counter = Counter()

    def count(self, stage: str, outcome: str, n: int = 1) -> None:
        try:
            self._tallies[(stage, outcome)] += n
        except AttributeError:  # process called outside a bundle (a test, a plain loop)
            self._tallies = Counter({(stage, outcome): n})

    def finish_bundle(self):
        for (stage, outcome), n in sorted(getattr(self, "_tallies", Counter()).items()):
            Metrics.counter(COUNTERS, f"{stage}:{outcome}").inc(n)
            yield TaggedOutput(TALLY, WindowedValue(((stage, outcome), n), MIN_TIMESTAMP,
                                                    [GlobalWindow()]))
        self._tallies = Counter()

    def file_failed(self, path: str, where: str, exc: Exception):
        """A file that stopped being readable at ``where``: what came before it is kept."""
        self.count(FILES, "corrupt_file")
        yield dead(DeadLetter(path, where, "", FILES, "corrupt_file", str(exc)))


class SumTallies(beam.PTransform):
    """A job's (key, n) tallies -> one list of (key, total): a singleton for the summary."""

    def expand(self, tallies):
        # One combine (one group-by), not a sum per key and then a list: the tallies are few
        # keys, added up where they are made before anything is shuffled.
        return tallies | "Sum" >> beam.CombineGlobally(SumByKey())


class SumByKey(beam.CombineFn):
    """(key, n) pairs -> [(key, total)] in key order (keys that sort: the tallies' are pairs
    of strings)."""

    def create_accumulator(self) -> Counter:
        return Counter()

    def add_input(self, totals: Counter, pair) -> Counter:
        key, n = pair
        totals[key] += n
        return totals

    def merge_accumulators(self, accumulators) -> Counter:
        merged = Counter()
        for totals in accumulators:
            for key, n in totals.items():
                merged[key] += n
        return merged

    def extract_output(self, totals: Counter) -> list:
        return sorted(totals.items())


class DistinctSorted(beam.CombineFn):
    """Strings -> the distinct ones, sorted; None is left out (a marker that makes a key's
    list exist when it has no string at all)."""

    def create_accumulator(self) -> set:
        return set()

    def add_input(self, seen: set, item: str | None) -> set:
        if item is not None:
            seen.add(item)
        return seen

    def merge_accumulators(self, accumulators) -> set:
        merged: set = set()
        for seen in accumulators:
            merged |= seen
        return merged

    def extract_output(self, seen: set) -> list[str]:
        return sorted(seen)
