"""Training batches: the token budget, one pass over every example per epoch, seeded order,
resumable positions, skip counts and unreadable shards."""

from __future__ import annotations

import json
import random
from collections import Counter

import pytest

from wikisum.core import schemas, shards
from wikisum.core.loader import Dataset, Example
from wikisum.training import batching
from wikisum.training.batching import Pair


def pair(i: int, source: int, target: int, exemplar: int | None = None) -> Pair:
    return Pair(i, [7] * source, [8] * (target - 1) + [3],
                None if exemplar is None else [9] * exemplar)


def random_pairs(n: int, seed: int = 0) -> list[Pair]:
    rng = random.Random(seed)
    return [pair(i, rng.randint(1, 60), rng.randint(1, 30)) for i in range(n)]


def cost(batch: list[Pair]) -> int:
    return batching.padded_size(len(batch), max(len(p.source) for p in batch),
                            max(len(p.target) for p in batch),
                            max(len(p.exemplar or ()) for p in batch))


def test_pack_fills_batches_up_to_the_budget_and_skips_what_cannot_fit():
    pairs = [pair(0, 4, 2), pair(1, 4, 2), pair(2, 5, 3), pair(3, 30, 5), pair(4, 6, 2)]
    counts = Counter()
    batches = batching.pack(pairs, max_tokens=20, counts=counts)
    # 0+1: 2 x (4+2) = 12; adding 2 would make 3 x (5+3) = 24 > 20. 3 alone is 35 > 20: skipped.
    # 2+4: 2 x (6+3) = 18.
    assert [[p.id for p in b] for b in batches] == [[0, 1], [2, 4]]
    assert counts == Counter({batching.TOO_LONG: 1})


def test_padded_size_counts_exemplars():
    assert cost([pair(0, 4, 2, exemplar=5), pair(1, 2, 6)]) == 2 * (4 + 6 + 5)
    counts = Counter()
    assert batching.pack([pair(0, 4, 2, exemplar=5)], 10, counts) == []
    assert counts[batching.TOO_LONG] == 1


@pytest.mark.parametrize("budget", [64, 200, 1000])
def test_an_epoch_covers_every_example_once_within_the_budget(budget):
    pairs = random_pairs(300)
    counts = Counter()
    batches = list(batching.length_batches(pairs, budget, rng=random.Random(1), shuffle_buffer=50,
                                       pool=40, counts=counts))
    assert all(cost(b) <= budget for b in batches)
    seen = Counter(p.id for b in batches for p in b)
    too_long = {p.id for p in pairs if p.length > budget}
    assert set(seen) == {p.id for p in pairs} - too_long
    assert set(seen.values()) == {1}
    assert counts[batching.TOO_LONG] == len(too_long)


def test_batching_is_seeded():
    def order(seed):
        return [[p.id for p in b] for b in batching.length_batches(
            random_pairs(200), 150, rng=random.Random(seed), shuffle_buffer=30, pool=50)]

    assert order(3) == order(3)
    assert order(3) != order(4)


def test_batches_hold_examples_of_similar_length():
    # As in WikiSum: most inputs are cut at L, targets vary.
    rng = random.Random(2)
    pairs = [pair(i, min(40, rng.randint(10, 80)), rng.randint(1, 30)) for i in range(400)]
    sorted_ = list(batching.length_batches(pairs, 300, pool=400))
    # Without shuffling, one pool comes out sorted by (source, target) length.
    lengths = [(len(p.source), len(p.target)) for b in sorted_ for p in b]
    assert lengths == sorted(lengths)
    # Padding wasted: far below what consecutive unsorted examples waste under the same budget.
    def waste(batches):
        return 1 - sum(p.length for b in batches for p in b) / sum(cost(b) for b in batches)

    assert waste(sorted_) < 0.5 * waste(batching.pack(pairs, 300, Counter()))


def test_shuffle_buffer_is_a_seeded_permutation():
    items = list(range(100))
    a = list(batching.shuffled(items, 10, random.Random(0)))
    assert sorted(a) == items and a != items
    assert a == list(batching.shuffled(items, 10, random.Random(0)))


def test_prepare_appends_eos_cuts_targets_and_counts_empty_ones():
    counts = Counter()
    ex = Example(5, "t", [4, 5, 6], [10, 11, 12, 13], exemplar=[20, 21])
    assert batching.prepare(ex, 3, counts) == Pair(5, [4, 5, 6], [10, 11, 12, 13, 3], [20, 21])
    assert batching.prepare(ex, 3, counts, max_target_tokens=2).target == [10, 11, 3]
    assert batching.prepare(Example(6, "t", [4], []), 3, counts) is None
    assert counts == Counter({batching.EMPTY_TARGET: 1, batching.CUT_TARGET: 1})


def test_prepare_skips_a_long_target_only_when_told_and_counts_it():
    """long_targets="skip" (whole articles, as the paper): a target over the limit is dropped
    and counted; one at the limit is kept whole; "cut" keeps it cut and counts the cut."""
    counts = Counter()
    at_limit, over = Example(1, "t", [4], [10, 11]), Example(2, "t", [4], [10, 11, 12])
    assert batching.prepare(at_limit, 3, counts, 2, "skip").target == [10, 11, 3]
    assert batching.prepare(over, 3, counts, 2, "skip") is None
    assert counts == Counter({batching.LONG_TARGET: 1})
    assert batching.prepare(over, 3, counts, 2, "cut").target == [10, 11, 3]
    assert counts == Counter({batching.LONG_TARGET: 1, batching.CUT_TARGET: 1})
    assert batching.prepare(over, 3, counts, None, "skip").target == [10, 11, 12, 3]


def test_an_epoch_counts_every_skipped_long_target():
    examples = [Example(i, "t", [4], [10] * n) for i, n in enumerate([1, 5, 2, 7, 3])]
    counts = Counter()
    batches = list(batching.epoch_batches(lambda: iter(examples), eos_id=3, max_tokens=100,
                                          seed=0, epoch=0, counts=counts,
                                          max_target_tokens=3, long_targets="skip"))
    assert sorted(p.id for b in batches for p in b) == [0, 2, 4]
    assert counts == Counter({batching.LONG_TARGET: 2})


def test_to_batch_pads_and_keeps_ids_and_exemplars():
    batch = batching.to_batch([pair(1, 3, 2, exemplar=1), pair(2, 1, 4, exemplar=3)])
    assert batch.ids == [1, 2]
    assert batch.sources.shape == (2, 3) and batch.targets.shape == (2, 4)
    assert batch.exemplar_lengths.tolist() == [1, 3]
    assert batching.to_batch([pair(1, 3, 2)]).exemplars is None


def examples(n: int, empty: frozenset = frozenset()) -> list[Example]:
    rng = random.Random(7)
    return [Example(i, f"t{i}", [6] * rng.randint(1, 20),
                    [] if i in empty else [7] * rng.randint(1, 10)) for i in range(n)]


def epoch_of(stream_examples, **kw):
    def make(epoch, counts):
        return batching.epoch_batches(lambda: iter(stream_examples), eos_id=3, max_tokens=60,
                                  seed=0, epoch=epoch, counts=counts, shuffle_buffer=8, pool=16,
                                  **kw)
    return make


def test_ranks_read_disjoint_strides_of_the_stream():
    exs = examples(50)
    ids = [{p.id for b in epoch_of(exs, rank=r, world=3)(0, Counter()) for p in b}
           for r in range(3)]
    assert ids[0] | ids[1] | ids[2] == set(range(50))
    assert not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    assert ids[1] == {i for i in range(50) if i % 3 == 1}


def test_epochs_differ_in_order_but_not_in_content():
    make = epoch_of(examples(60))
    one, two = ([[p.id for p in b] for b in make(e, Counter())] for e in (0, 1))
    assert one != two
    assert sorted(i for b in one for i in b) == sorted(i for b in two for i in b)


def take(stream: batching.BatchStream, n: int) -> list[list[int]]:
    out = []
    for _ in range(n):
        batch = stream.next()
        if batch is None:
            stream.next_epoch()
            batch = stream.next()
        out.append([p.id for p in batch])
    return out


def test_stream_started_at_a_saved_position_continues_identically():
    make = epoch_of(examples(40, empty=frozenset({3, 11})))
    whole = batching.BatchStream(make)
    first = take(whole, 7)
    position, before = whole.position, Counter(whole.skipped_before)
    rest = take(whole, 12)  # crosses into later epochs
    resumed = batching.BatchStream(make, position, before)
    assert resumed.position == position and len(first) == 7
    assert take(resumed, 12) == rest
    assert resumed.skipped == whole.skipped
    assert whole.epoch >= 1 and whole.skipped[batching.EMPTY_TARGET] == 2 * (whole.epoch + 1)


def test_stream_refuses_a_position_the_data_does_not_match():
    whole = batching.BatchStream(epoch_of(examples(40)))
    take(whole, 3)
    moved = batching.Position(whole.epoch, whole.batches, whole.examples + 1)
    with pytest.raises(ValueError, match="data changed since the checkpoint"):
        batching.BatchStream(epoch_of(examples(40)), moved)


def write_dataset(folder, rows_per_shard=(3, 3)) -> Dataset:
    folder.mkdir(parents=True, exist_ok=True)
    rows = []
    for shard, n in enumerate(rows_per_shard):
        rows = [{"id": shard * 100 + i, "title": "t", "split": "train", "title_ids": [6],
                 "lead": "x", "lead_ids": [7, 8], "reference_urls": ["u"],
                 "paragraphs": [{"text": "p", "ids": [9, 10], "reference": 0,
                                 "sources": ["citations"]}],
                 "rankings": [{"extractor": "tfidf", "corpus": "combined", "order": [0]}]}
                for i in range(n)]
        shards.write_table(str(folder / f"train-{shard:05d}-of-{len(rows_per_shard):05d}.parquet"),
                           rows, schemas.RANKED)
    info = {"vocab": "vocab.model", "vocab_size": 16, "extractors": ["tfidf"],
            "corpora": ["combined"],
            "special_ids": {"pad": 0, "unk": 1, "bos": 2, "eos": 3, "title_sep": 4, "sep": 5}}
    (folder / "dataset.json").write_text(json.dumps(info))
    return Dataset(str(folder))


def test_read_examples_reads_every_shard(tmp_path):
    ds = write_dataset(tmp_path / "d")
    exs = list(batching.read_examples(ds, "train", "tfidf", "combined", 10))
    assert [e.id for e in exs] == [0, 1, 2, 100, 101, 102]
    assert exs[0].inputs == [6, 4, 9, 10] and exs[0].targets == [7, 8]


def test_a_corrupt_shard_is_named(tmp_path):
    ds = write_dataset(tmp_path / "d")
    bad = tmp_path / "d" / "train-00001-of-00002.parquet"
    bad.write_bytes(b"PAR1 this is not parquet")
    stream = batching.read_examples(ds, "train", "tfidf", "combined", 10)
    with pytest.raises(batching.CorruptShardError, match=str(bad)):
        list(stream)


def test_no_shards_is_a_clear_error(tmp_path):
    ds = write_dataset(tmp_path / "d")
    with pytest.raises(FileNotFoundError, match="the dev split: no shard matches"):
        list(batching.read_examples(ds, "dev", "tfidf", "combined", 10))
