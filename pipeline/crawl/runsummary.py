"""The summary of a fetching run (``wikisum crawl``, ``wikisum cc-fetch``), as one composite:
the run's tallies and its outcomes counted, the earliest failure of each kind kept, and the
summary's text made from them and the WARC files the run wrote."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

import apache_beam as beam

from wikisum.pipeline import beamio


class RunSummary(beam.PTransform):
    """``(tallies, outcomes, warcs)`` -> the run's summary text, a singleton PCollection.

    ``tallies`` is a tuple of PCollections of ``((stage, outcome), n)``; ``outcomes`` the run's
    outcomes, counted by ``count_outcome(o)`` (tallies) and read by ``failure(o)`` (``(key,
    failure)`` pairs, the earliest failure of each key kept); ``warcs`` a singleton list of the
    WARC files written. ``make(counts, warcs, firsts)`` returns the text.
    """

    def __init__(self, count_outcome: Callable[[object], Iterable],
                 failure: Callable[[object], Iterator], make: Callable[[list, list, list], str]):
        super().__init__()
        self.count_outcome, self.failure, self.make = count_outcome, failure, make

    def expand(self, inputs):
        tallies, outcomes, warcs = inputs
        counts = ((*tallies, outcomes | "CountOutcomes" >> beam.FlatMap(self.count_outcome))
                  | "AllTallies" >> beam.Flatten()
                  | "SumTallies" >> beamio.SumTallies())
        firsts = (outcomes
                  | "Failures" >> beam.FlatMap(self.failure)
                  | "EarliestFailure" >> beam.CombinePerKey(min)
                  | "CollectFailures" >> beam.combiners.ToList())
        return counts | "Summary" >> beam.Map(self.make, beam.pvalue.AsSingleton(warcs),
                                              beam.pvalue.AsSingleton(firsts))
