"""Training batches from the loader's examples: batches of similar length under a token budget,
an epoch at a time, with a position a checkpoint can store and a resumed run can return to.

    read = lambda: read_examples(Dataset("build/data"), "train", "tfidf", "combined", 500)
    stream = BatchStream(lambda epoch, counts: epoch_batches(
        read, eos_id=3, max_tokens=4096, seed=0, epoch=epoch, counts=counts))
    pairs = stream.next()                 # list[Pair], or None at the end of an epoch
    batch = to_batch(pairs)               # models.base.Batch

Batching by length (tensor2tensor's ``bucket_by_sequence_length``, fairseq's token budgets):
examples pass through a shuffle buffer, are taken a pool at a time, sorted inside the pool by
source length, then target length (fairseq's order for pairs; inputs cut at L tie on the first
key, so the targets decide), and packed greedily into batches whose padded size ``B * (S + T +
E)`` (rows times the longest source, target and exemplar) stays within the budget; the pool's
batches then come out in a shuffled order. Every example is in exactly one batch of an epoch,
or counted as skipped. All randomness comes from ``random.Random`` seeded by (seed, epoch,
rank), so an epoch's batches are a function of those three numbers and the data: a resumed run
regenerates the epoch and skips the batches it had already trained on.
"""

from __future__ import annotations

import copy
import random
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice

import pyarrow as pa

from wikisum.core import shards
from wikisum.core.loader import Dataset, Example, TextExample
from wikisum.models.base import Batch, make_batch

# Reasons an example is skipped; each is counted.
EMPTY_TARGET = "empty_target"
TOO_LONG = "too_long"  # alone, its padded size exceeds the token budget
LONG_TARGET = "long_target"  # its target is over max_target_tokens, and long_targets="skip"
SKIPS = (EMPTY_TARGET, TOO_LONG, LONG_TARGET)
CUT_TARGET = "cut_target"  # counted, not skipped: its target was cut to max_target_tokens


# A shard that pyarrow cannot read; the message names the file (one class for every reader).
CorruptShardError = shards.CorruptShard


@dataclass(frozen=True)
class Pair:
    """One training example as token ids, ready for :func:`wikisum.models.base.make_batch`."""

    id: int
    source: list[int]
    target: list[int]  # ends with </s>
    exemplar: list[int] | None = None

    @property
    def length(self) -> int:
        return len(self.source) + len(self.target) + len(self.exemplar or ())


def prepare(example: Example, eos_id: int, counts: Counter,
            max_target_tokens: int | None = None, long_targets: str = "cut") -> Pair | None:
    """The example as a :class:`Pair` (target, then </s>), or None when it has no target to
    learn from (counted in ``counts`` under :data:`EMPTY_TARGET`) or its target is longer than
    ``max_target_tokens`` and ``long_targets`` is "skip" (:data:`LONG_TARGET`). With "cut" such
    a target is cut to ``max_target_tokens`` (counted under :data:`CUT_TARGET`)."""
    if not example.targets:
        counts[EMPTY_TARGET] += 1
        return None
    target = list(example.targets)
    if max_target_tokens and len(target) > max_target_tokens:
        if long_targets == "skip":
            counts[LONG_TARGET] += 1
            return None
        counts[CUT_TARGET] += 1
        target = target[:max_target_tokens]
    exemplar = list(example.exemplar) if example.exemplar is not None else None
    return Pair(example.id, list(example.inputs), target + [eos_id], exemplar)


def padded_size(rows: int, source: int, target: int, exemplar: int = 0) -> int:
    """Tokens of a padded batch: rows x (longest source + longest target + longest exemplar)."""
    return rows * (source + target + exemplar)


def pack(pairs: list[Pair], max_tokens: int, counts: Counter) -> list[list[Pair]]:
    """Cut ``pairs`` (in order) into consecutive batches whose padded size is at most
    ``max_tokens``; a pair over the budget on its own is skipped and counted (:data:`TOO_LONG`)."""
    batches: list[list[Pair]] = []
    batch: list[Pair] = []
    s = t = e = 0  # longest source, target, exemplar of `batch`
    for p in pairs:
        ps, pt, pe = len(p.source), len(p.target), len(p.exemplar or ())
        if padded_size(1, ps, pt, pe) > max_tokens:
            counts[TOO_LONG] += 1
            continue
        ns, nt, ne = max(s, ps), max(t, pt), max(e, pe)
        if batch and padded_size(len(batch) + 1, ns, nt, ne) > max_tokens:
            batches.append(batch)
            batch, (ns, nt, ne) = [], (ps, pt, pe)
        batch.append(p)
        s, t, e = ns, nt, ne
    if batch:
        batches.append(batch)
    return batches


def shuffled(items: Iterable, size: int, rng: random.Random) -> Iterator:
    """A streaming shuffle through a buffer of ``size`` items (memory: ``size`` items)."""
    buffer: list = []
    for item in items:
        if len(buffer) < size:
            buffer.append(item)
            continue
        i = rng.randrange(size)
        yield buffer[i]
        buffer[i] = item
    rng.shuffle(buffer)
    yield from buffer


def length_batches(pairs: Iterable[Pair], max_tokens: int, *, rng: random.Random | None = None,
                   shuffle_buffer: int = 0, pool: int = 1000,
                   counts: Counter | None = None) -> Iterator[list[Pair]]:
    """Batches of similar length under a token budget (see the module docstring).

    Without ``rng`` nothing is shuffled: pools come in stream order, each sorted by length
    (what dev perplexity uses). Ties keep their stream (or shuffled) order, so the result is
    deterministic.
    """
    if max_tokens < 1:
        raise ValueError(f"token budget must be at least 1, got {max_tokens}")
    if pool < 1:
        raise ValueError(f"pool must hold at least 1 example, got {pool}")
    counts = Counter() if counts is None else counts
    stream = iter(shuffled(pairs, shuffle_buffer, rng) if rng and shuffle_buffer > 1 else pairs)
    while chunk := list(islice(stream, pool)):
        chunk.sort(key=lambda p: (len(p.source), len(p.target), len(p.exemplar or ())))
        batches = pack(chunk, max_tokens, counts)
        if rng is not None:
            rng.shuffle(batches)
        yield from batches


def read_examples(dataset: Dataset, split: str, extractor: str, corpus: str,
                  max_input_tokens: int, exemplars: bool = False, *, target: str = "lead",
                  inputs: str = "ranked",
                  encode: Callable[[TextExample, int], Example] | None = None
                  ) -> Iterator[Example]:
    """The loader's examples of ``split`` (``target`` and ``inputs``:
    :meth:`wikisum.core.loader.Dataset.examples`), read one shard at a time so that a shard
    pyarrow cannot read raises :class:`CorruptShardError` naming that file. With ``encode``
    (a model that tokenises text itself: ``encode_example``) the examples are read as text
    (:meth:`~wikisum.core.loader.Dataset.text_examples`) and ``encode(example, L)`` makes
    their ids."""
    files = dataset.files(split)
    if not files:
        raise FileNotFoundError(f"no {split} shards in {dataset.dir}")
    kwargs: dict = {"exemplars": True} if exemplars else {}
    if (target, inputs) != ("lead", "ranked"):
        kwargs.update(target=target, inputs=inputs)
    if exemplars and hasattr(dataset, "exemplar_targets"):
        dataset.exemplar_targets(target)  # read once here, shared by the per-shard copies
    for path in files:
        # The same Dataset, seeing one shard: what goes wrong can be pinned on this file.
        one = copy.copy(dataset)
        one.files = lambda _split, path=path: [path]
        try:
            if encode is not None:
                for text in one.text_examples(split, extractor, corpus, target=target,
                                              inputs=inputs):
                    yield encode(text, max_input_tokens)
            else:
                yield from one.examples(split, extractor, corpus, max_input_tokens, **kwargs)
        except (pa.ArrowException, OSError) as exc:
            raise CorruptShardError(f"cannot read shard {path}: {exc}") from exc


def epoch_batches(read: Callable[[], Iterable[Example]], *, eos_id: int, max_tokens: int,
                  seed: int, epoch: int, counts: Counter, rank: int = 0, world: int = 1,
                  shuffle_buffer: int = 2000, pool: int = 1000,
                  max_target_tokens: int | None = None,
                  long_targets: str = "cut") -> Iterator[list[Pair]]:
    """One epoch of shuffled length batches of this rank's examples: every ``world``-th example
    of the stream from the ``rank``-th on, so ranks read disjoint strides. A function of
    (data, seed, epoch, rank)."""
    rng = random.Random(f"wikisum:{seed}:{epoch}:{rank}")
    examples = islice(read(), rank, None, world)
    pairs = (p for ex in examples
             if (p := prepare(ex, eos_id, counts, max_target_tokens, long_targets)) is not None)
    yield from length_batches(pairs, max_tokens, rng=rng, shuffle_buffer=shuffle_buffer,
                              pool=pool, counts=counts)


def to_batch(pairs: list[Pair]) -> Batch:
    exemplars = [p.exemplar or [] for p in pairs] if pairs[0].exemplar is not None else None
    return make_batch([p.source for p in pairs], [p.target for p in pairs], exemplars,
                      [p.id for p in pairs])


@dataclass(frozen=True)
class Position:
    """Where a run is in its data: ``batches`` and ``examples`` taken so far in ``epoch``."""

    epoch: int = 0
    batches: int = 0
    examples: int = 0


@dataclass
class BatchStream:
    """Batches epoch after epoch, tracking the :class:`Position` and the skip counts.

    ``make_epoch(epoch, counts)`` returns the batches of one epoch (counting skips into
    ``counts``) and must be deterministic. Started at a saved position, the stream regenerates
    that epoch and skips the batches already taken, checking that they hold as many examples as
    were recorded (so a changed dataset is an error, not a silent shift).
    """

    make_epoch: Callable[[int, Counter], Iterable[list[Pair]]]
    start: Position = Position()
    skipped_before: Counter = field(default_factory=Counter)  # of the completed epochs

    def __post_init__(self):
        self.skipped_before = Counter(self.skipped_before)
        self._open(self.start.epoch)
        for _ in range(self.start.batches):
            if self.next() is None:
                break
        if (self.batches, self.examples) != (self.start.batches, self.start.examples):
            raise ValueError(
                f"the data changed since the checkpoint: epoch {self.start.epoch} had "
                f"{self.start.batches} batches of {self.start.examples} examples before it, "
                f"now {self.batches} batches of {self.examples}")

    def _open(self, epoch: int) -> None:
        self.epoch = epoch
        self.counts: Counter = Counter()
        self._batches = iter(self.make_epoch(epoch, self.counts))
        self.batches = self.examples = 0

    def next(self) -> list[Pair] | None:
        """The next batch of this epoch, or None once the epoch is over."""
        batch = next(self._batches, None)
        if batch is not None:
            self.batches += 1
            self.examples += len(batch)
        return batch

    def next_epoch(self) -> None:
        self.skipped_before.update(self.counts)
        self._open(self.epoch + 1)

    @property
    def position(self) -> Position:
        return Position(self.epoch, self.batches, self.examples)

    @property
    def skipped(self) -> Counter:
        """Skips so far: completed epochs plus what this epoch has read."""
        return self.skipped_before + self.counts
