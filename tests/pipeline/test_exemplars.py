"""Exemplar retrieval: top-1 bag-of-words cosine, own row excluded, ties, blocks, the loader."""

from __future__ import annotations

import json
import re
import shutil

import builders
import numpy as np
import pyarrow.parquet as pq
import pytest
from builders import convert, write_pairs

from wikisum.core import loader, schemas
from wikisum.pipeline import exemplars
from wikisum.workflows import cli

EXEMPLAR_WORDS = ("the minister said on monday that talks with rebels would resume in the "
                  "capital after police reported clashes near border towns while shares fell "
                  "sharply").split()


def sentences(n: int, seed: int, low: int, high: int) -> list[str]:
    return builders.sentences(n, seed, low, high, EXEMPLAR_WORDS)


def brute_force(train: list[list[int]], train_ids: list[int], queries: list[list[int]],
                query_ids: list[int] | None, vocab_size: int, max_similarity: float = 1.0,
                targets: list[str] | None = None) -> tuple[list[int], list[float], int]:
    """Dense float64 reference: (exemplar ids, similarities, queries that had a tie).

    Train queries (``query_ids``) skip their own row and, with ``max_similarity`` < 1, the
    candidates above it and those whose target (``targets``, one per train row) equals theirs
    once whitespace and case are ignored; with none left, only their own row."""

    def counts(rows):
        out = np.zeros((len(rows), vocab_size))
        for i, row in enumerate(rows):
            np.add.at(out[i], row, 1.0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.where(norms == 0, 1.0, norms)

    cosines = counts(queries) @ counts(train).T  # (Q, N)
    chosen, similarity, tied = [], [], 0
    for q in range(len(queries)):
        candidates = [(train_ids[n], cosines[q, n]) for n in range(len(train))
                      if query_ids is None or train_ids[n] != query_ids[q]]
        if query_ids is not None and max_similarity < 1:
            own = train_ids.index(query_ids[q])
            norm = (lambda n: " ".join(targets[n].split()).lower()) if targets else None
            kept = [(i, c) for i, c in candidates if c <= max_similarity
                    and (norm is None or norm(train_ids.index(i)) != norm(own))]
            candidates = kept or candidates
        best = max(c for _, c in candidates)
        at_best = sorted(i for i, c in candidates if c >= best - 1e-9)
        tied += len(at_best) > 1
        chosen.append(at_best[0])
        similarity.append(best)
    return chosen, similarity, tied


def random_rows(rng, n: int, vocab_size: int) -> list[list[int]]:
    # A tiny vocabulary and short rows: many equal bags, so many ties.
    return [list(rng.integers(0, vocab_size, size=rng.integers(1, 4))) for _ in range(n)]


# --------------------------------------------------------------------------------------------
# Pure functions


def test_bag_of_words_is_l2_normalised_counts_without_ignored_ids():
    matrix = exemplars.bag_of_words([[5, 5, 6, 0], [7], [0], []], vocab_size=8, ignore={0})
    assert matrix.shape == (4, 8) and matrix.dtype == np.float32
    expected = np.zeros((4, 8))
    expected[0, 5], expected[0, 6] = 2 / np.sqrt(5), 1 / np.sqrt(5)
    expected[1, 7] = 1.0
    np.testing.assert_allclose(matrix.toarray(), expected, rtol=1e-6)


def test_bag_of_words_rejects_ids_outside_the_vocabulary():
    with pytest.raises(ValueError, match="token id 9 is outside the vocabulary"):
        exemplars.bag_of_words([[1, 9]], vocab_size=8)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_retrieval_matches_dense_brute_force_with_ties(seed):
    rng = np.random.default_rng(seed)
    vocab_size = 6
    train = random_rows(rng, 60, vocab_size)
    train_ids = sorted(rng.choice(1000, size=60, replace=False).tolist())  # not 0..N-1
    dev = random_rows(rng, 30, vocab_size)
    dev_ids = list(range(100, 130))
    keys = exemplars.bag_of_words(train, vocab_size)
    config = exemplars.ExemplarConfig("unused", block_size=7, max_similarity=1.0)
    ids = np.asarray(train_ids)

    got = exemplars.retrieve_split(ids, keys, ids, keys, True, config)
    want, want_sims, tied = brute_force(train, train_ids, train, train_ids, vocab_size)
    assert tied > 5  # the case under test: equal cosines go to the smallest id
    assert got.exemplar_ids.tolist() == want
    np.testing.assert_allclose(got.similarity, want_sims, atol=1e-6)
    assert got.ids.tolist() == train_ids

    got = exemplars.retrieve_split(ids, keys, np.asarray(dev_ids),
                                   exemplars.bag_of_words(dev, vocab_size), False, config)
    want, want_sims, tied = brute_force(train, train_ids, dev, None, vocab_size)
    assert tied > 5
    assert got.exemplar_ids.tolist() == want
    np.testing.assert_allclose(got.similarity, want_sims, atol=1e-6)


def test_a_training_example_never_gets_its_own_target():
    # Every source is the same bag: without the exclusion, each row's best match is itself
    # (or, by the tie rule, row 0); with it, row 0 gets row 1 and every other row gets row 0.
    train = [[3, 4, 4]] * 5
    keys = exemplars.bag_of_words(train, 8)
    ids = np.asarray([10, 11, 12, 13, 14])
    got = exemplars.retrieve_split(ids, keys, ids, keys, True,
                                   exemplars.ExemplarConfig("x", max_similarity=1.0))
    assert got.exemplar_ids.tolist() == [11, 10, 10, 10, 10]
    np.testing.assert_allclose(got.similarity, 1.0, rtol=1e-6)
    # A dev query with the same bag gets the smallest id.
    dev = exemplars.retrieve_split(ids, keys, np.asarray([1]), keys[:1], False,
                                   exemplars.ExemplarConfig("x"))
    assert dev.exemplar_ids.tolist() == [10]


def test_a_query_sharing_no_word_gets_the_smallest_id_with_similarity_zero():
    keys = exemplars.bag_of_words([[1, 2], [3]], 8)
    rows, sims = exemplars.top1(keys, exemplars.bag_of_words([[5], []], 8))
    assert rows.tolist() == [0, 0] and sims.tolist() == [0.0, 0.0]


def test_a_single_training_example_cannot_be_its_own_exemplar():
    keys = exemplars.bag_of_words([[1, 2]], 8)
    with pytest.raises(ValueError, match="1 training example"):
        exemplars.top1(keys, keys, exclude=np.asarray([0]))


@pytest.mark.parametrize("block_size,workers", [(1, 1), (3, 2), (16, 3), (None, 2)])
def test_blocked_equals_one_block(block_size, workers):
    rng = np.random.default_rng(7)
    train = exemplars.bag_of_words(random_rows(rng, 50, 9), 9)
    queries = exemplars.bag_of_words(random_rows(rng, 41, 9), 9)
    exclude = np.where(rng.random(41) < 0.5, rng.integers(0, 50, size=41), -1)
    one_rows, one_sims = exemplars.top1(train, queries, exclude, block_size=41)
    done = []
    rows, sims = exemplars.top1(train, queries, exclude, block_size=block_size, workers=workers,
                                progress=lambda d, t: done.append((d, t)))
    assert rows.tolist() == one_rows.tolist() and sims.tolist() == one_sims.tolist()
    assert all(rows[i] != exclude[i] for i in range(41))
    assert done[-1] == (41, 41) and [d for d, _ in done] == sorted(d for d, _ in done)


def test_auto_block_size_bounds_one_block():
    assert exemplars.auto_block_size(10_000, max_cells=1 << 20) == 104
    assert exemplars.auto_block_size(50_000_000) == 1
    assert exemplars.auto_block_size(10) == exemplars.MAX_BLOCK


# --------------------------------------------------------------------------------------------
# No leakage: a training query skips near copies of its source and its own target

# Rows 0 and 1 are near copies (cosine 3 / sqrt(12) = 0.866); row 2 shares two words with row 0
# (2/3) and with row 1 (0.577); row 3 shares one word with rows 0 and 1 (0.258, 0.224).
LEAK_TRAIN = [[1, 2, 3], [1, 2, 3, 4], [1, 2, 5], [3, 6, 6]]
LEAK_IDS = np.asarray([10, 11, 12, 13])


def leak_retrieve(max_similarity: float, targets=("a", "b", "c", "d"), queries=None):
    """Train retrieval on LEAK_TRAIN (dev retrieval of ``queries`` when given)."""
    keys = exemplars.bag_of_words(LEAK_TRAIN, 8)
    config = exemplars.ExemplarConfig("x", max_similarity=max_similarity)
    groups = None if targets is None else exemplars.target_groups(targets)
    if queries is not None:
        dev_ids = np.arange(100, 100 + len(queries))
        return exemplars.retrieve_split(LEAK_IDS, keys, dev_ids,
                                        exemplars.bag_of_words(queries, 8), False, config,
                                        groups=groups)
    return exemplars.retrieve_split(LEAK_IDS, keys, LEAK_IDS, keys, True, config,
                                    groups=groups)


def test_a_near_copy_of_the_source_is_skipped():
    got = leak_retrieve(0.8)
    assert got.exemplar_ids.tolist() == [12, 12, 10, 10]  # rows 0 and 1 no longer get each other
    np.testing.assert_allclose(got.similarity, [2 / 3, 2 / np.sqrt(12), 2 / 3, 1 / np.sqrt(15)],
                               rtol=1e-5)
    f = got.filtered
    assert (f.skipped_similar, f.skipped_target, f.changed, f.no_candidate) == (2, 0, 2, 0)
    np.testing.assert_allclose(f.unfiltered_similarity[:2], 3 / np.sqrt(12), rtol=1e-5)
    # At 0.9 the near copies (0.866) are no longer above the bound.
    assert leak_retrieve(0.9).exemplar_ids.tolist() == [11, 10, 10, 10]


def test_a_candidate_with_the_same_target_is_skipped():
    targets = ("Police arrest man", " police  ARREST\tman", "Rain", "Shares fall")
    got = leak_retrieve(0.9, targets)
    assert got.exemplar_ids.tolist() == [12, 12, 10, 10]
    f = got.filtered
    assert (f.skipped_similar, f.skipped_target, f.changed, f.no_candidate) == (0, 2, 2, 0)
    # without the target rule (no groups) only the cosine counts
    assert leak_retrieve(0.9, targets=None).exemplar_ids.tolist() == [11, 10, 10, 10]
    # a candidate skipped by both rules counts once, for its cosine
    f = leak_retrieve(0.8, targets).filtered
    assert (f.skipped_similar, f.skipped_target) == (2, 0)


def test_dev_retrieval_does_not_depend_on_max_similarity():
    queries = [[1, 2, 3], [1, 2, 3, 4], [6]]
    runs = [leak_retrieve(s, queries=queries) for s in (0.0, 0.5, 0.9, 1.0)]
    for got in runs:
        assert got.exemplar_ids.tolist() == [10, 11, 13] and got.filtered is None
        np.testing.assert_allclose(got.similarity, [1.0, 1.0, 2 / np.sqrt(5)], rtol=1e-5)


def test_max_similarity_1_turns_both_rules_off():
    targets = ("Police arrest man", "police arrest man", "Rain", "Shares fall")
    got = leak_retrieve(1.0, targets)
    assert got.exemplar_ids.tolist() == [11, 10, 10, 10] and got.filtered is None
    keys = exemplars.bag_of_words(LEAK_TRAIN, 8)
    rows, sims = exemplars.top1(keys, keys, exclude=np.arange(4))
    assert LEAK_IDS[rows].tolist() == got.exemplar_ids.tolist()
    assert sims.tolist() == got.similarity.tolist()


def test_a_query_with_every_candidate_skipped_keeps_its_unfiltered_exemplar():
    keys = exemplars.bag_of_words([[3, 4, 4]] * 4, 8)
    ids = np.asarray([10, 11, 12, 13])
    got = exemplars.retrieve_split(ids, keys, ids, keys, True, exemplars.ExemplarConfig("x"),
                                   groups=exemplars.target_groups(["t"] * 4))
    assert got.exemplar_ids.tolist() == [11, 10, 10, 10]
    f = got.filtered
    assert (f.skipped_similar, f.skipped_target, f.no_candidate) == (12, 0, 4)


def test_target_groups_ignore_whitespace_and_case():
    groups = exemplars.target_groups(["A  b", "a b", "c", "C\n", "d"])
    assert groups[0] == groups[1] >= 0 and groups[2] == groups[3] >= 0
    assert groups[0] != groups[2] and groups[4] == -1
    assert exemplars.target_groups([]).tolist() == []


@pytest.mark.parametrize("seed", [0, 1])
def test_filtered_retrieval_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    vocab_size, s = 6, 0.85
    train = random_rows(rng, 60, vocab_size)
    train_ids = sorted(rng.choice(1000, size=60, replace=False).tolist())
    # few distinct targets, spelt with other case and spacing: many equal ones
    targets = [["Rain", " rain ", "Shares  fall", "shares fall", "Talks"][k]
               for k in rng.integers(0, 5, size=60)]
    keys = exemplars.bag_of_words(train, vocab_size)
    cosines = (keys @ keys.T).toarray()
    assert not np.any(np.abs(cosines - s) < 1e-3)  # no cosine at the bound: float32 is exact
    ids = np.asarray(train_ids)
    got = exemplars.retrieve_split(ids, keys, ids, keys, True,
                                   exemplars.ExemplarConfig("x", block_size=7, max_similarity=s),
                                   groups=exemplars.target_groups(targets))
    want, want_sims, _ = brute_force(train, train_ids, train, train_ids, vocab_size, s, targets)
    assert got.exemplar_ids.tolist() == want
    np.testing.assert_allclose(got.similarity, want_sims, atol=1e-6)
    assert got.filtered.skipped_similar > 0 and got.filtered.skipped_target > 0


def test_bad_max_similarity_is_a_clear_error(pairs_data):
    keys = exemplars.bag_of_words(LEAK_TRAIN, 8)
    for bad in (-0.1, 1.5, float("nan")):
        with pytest.raises(ValueError, match="max_similarity must be in"):
            exemplars.retrieve_split(LEAK_IDS, keys, LEAK_IDS, keys, True,
                                     exemplars.ExemplarConfig("x", max_similarity=bad))
    with pytest.raises(ValueError, match="applies to training queries"):
        exemplars.search(keys, keys, leak=exemplars.LeakFilter(0.5))
    with pytest.raises(SystemExit) as usage:
        cli.main(["exemplars", "--data", str(pairs_data), "--max-similarity", "1.5"])
    assert usage.value.code == 2


# --------------------------------------------------------------------------------------------
# On datasets, through the command


@pytest.fixture()
def pairs_data(tmp_path):
    """A pairs dataset with train (30 pairs, 2 shards) and dev (6): OUT."""
    out = tmp_path / "out"
    train = write_pairs(tmp_path, "train", sentences(30, 10, 6, 12), sentences(30, 11, 2, 5))
    assert convert(*train, "train", out, "--vocab-size", "200", "--shards", "2") == 0
    dev = write_pairs(tmp_path, "dev", sentences(6, 12, 6, 12), sentences(6, 13, 2, 5))
    assert convert(*dev, "dev", out) == 0
    return out


@pytest.mark.parametrize("max_similarity", [None, "1"])
def test_exemplars_command_and_the_loader_attach_the_exemplar_target(pairs_data, capsys,
                                                                      max_similarity):
    out = pairs_data
    data = loader.Dataset(str(out))
    with pytest.raises(FileNotFoundError, match=f"wikisum exemplars --data {out}"):
        next(data.examples("dev", exemplars=True))

    option = ["--max-similarity", max_similarity] if max_similarity else []
    assert cli.main(["exemplars", "--data", str(out), "--block-size", "4", *option]) == 0
    s = float(max_similarity or exemplars.DEFAULT_MAX_SIMILARITY)
    printed = capsys.readouterr()
    assert re.search(r"^  train +30 ", printed.out, re.M)
    assert re.search(r"^  dev +6 ", printed.out, re.M)
    # progress on stderr, one per split with its rows as the total
    assert "exemplars train: 30 rows in all" in printed.err
    assert "exemplars dev: 6 rows in all" in printed.err

    stored = {split: {r["id"]: r for path in sorted(out.glob(f"{split}-*.parquet"))
                      for r in pq.read_table(path).to_pylist()} for split in ("train", "dev")}
    info = json.loads((out / "dataset.json").read_text())
    special = set(info["special_ids"].values())
    for split in ("train", "dev"):
        table = pq.read_table(out / f"exemplars-{split}.parquet")
        assert table.schema.equals(schemas.EXEMPLARS, check_metadata=False)
        assert table.schema.metadata[b"wikisum.exemplars.kind"] == b"pairs"
        assert float(table.schema.metadata[b"wikisum.exemplars.max_similarity"]) == s
        found = {r["id"]: r["exemplar_id"] for r in table.to_pylist()}
        assert sorted(found) == sorted(stored[split])
        train_ids = sorted(stored["train"])
        want, _, _ = brute_force(
            [[t for t in stored["train"][i]["source_ids"] if t not in special]
             for i in train_ids], train_ids,
            [[t for t in stored[split][i]["source_ids"] if t not in special]
             for i in sorted(found)],
            sorted(found) if split == "train" else None, info["vocab_size"], s,
            [stored["train"][i]["target"] for i in train_ids])
        assert [found[i] for i in sorted(found)] == want

        examples = list(loader.Dataset(str(out)).examples(split, max_input_tokens=4,
                                                           exemplars=True))
        assert len(examples) == len(found)
        for ex in examples:
            assert ex.exemplar == stored["train"][found[ex.id]]["target_ids"]
            assert ex.inputs == stored[split][ex.id]["source_ids"][:4]
            if split == "train":
                assert found[ex.id] != ex.id


def summary_row(printed: str, name: str) -> list[str]:
    """The cells of one split's row of the command's table."""
    match = re.search(rf"^  {name} +(\d[\d,]*) +(.*)$", printed, re.M)
    assert match, f"no row {name!r} in:\n{printed}"
    return [match.group(1), *match.group(2).split()]


def test_the_summary_compares_train_and_dev_and_counts_what_was_skipped(tmp_path, capsys):
    # Random pairs, and two stories filed twice: once with the same headline spelt otherwise,
    # once with another headline (a near copy of the source).
    sources = sentences(30, 30, 6, 12) + [
        "police said the minister reported clashes near border towns",
        "police said the minister reported clashes near border towns again",
        "shares fell sharply after talks with rebels would resume",
        "shares fell sharply after talks with rebels would resume monday"]
    targets = sentences(30, 31, 2, 5) + ["clashes near border", "Clashes  near BORDER",
                                         "shares fell", "talks resume"]
    out = tmp_path / "out"
    assert convert(*write_pairs(tmp_path, "train", sources, targets), "train", out,
                   "--vocab-size", "200") == 0
    assert convert(*write_pairs(tmp_path, "dev", sentences(6, 32, 6, 12) + sources[-1:],
                                sentences(6, 33, 2, 5) + ["x"]), "dev", out) == 0
    capsys.readouterr()

    assert cli.main(["exemplars", "--data", str(out), "-q"]) == 0
    printed = capsys.readouterr().out
    assert "cosine above 0.9 or their own target" in printed
    train, unfiltered, dev = (summary_row(printed, n) for n in ("train", "train unfiltered",
                                                                "dev"))
    # rows, mean top-1, share >= 0.9, skipped for the cosine, for the target, changed, seconds
    assert train[0] == unfiltered[0] == "34" and dev[0] == "7"
    assert train[2] == "0.0%" and float(unfiltered[2].rstrip("%")) >= 100 * 4 / 34 - 0.1
    assert float(unfiltered[1]) > float(train[1])
    # the four near copies skip each other (for their cosine: the equal headlines too)
    assert train[3:6] == ["4", "0", "4"]
    assert float(dev[2].rstrip("%")) == pytest.approx(100 / 7, abs=0.1)  # the repeated source
    assert dev[3:6] == ["-", "-", "-"] and len(unfiltered) == 3
    dev_filtered = pq.read_table(out / "exemplars-dev.parquet").to_pylist()

    # above 0.99 no source is skipped; the pair with the same headline still is, by the target
    assert cli.main(["exemplars", "--data", str(out), "--max-similarity", "0.99", "-q"]) == 0
    assert summary_row(capsys.readouterr().out, "train")[3:6] == ["0", "2", "2"]

    assert cli.main(["exemplars", "--data", str(out), "--max-similarity", "1", "-q"]) == 0
    printed = capsys.readouterr().out
    assert "train unfiltered" not in printed
    assert summary_row(printed, "train")[2] == unfiltered[2]
    assert pq.read_table(out / "exemplars-dev.parquet").to_pylist() == dev_filtered


def test_converting_train_again_removes_stale_exemplars(pairs_data, tmp_path, capsys):
    out = pairs_data
    assert cli.main(["exemplars", "--data", str(out)]) == 0
    assert (out / "exemplars-dev.parquet").is_file()
    train = write_pairs(tmp_path / "again", "train", sentences(12, 20, 6, 12),
                        sentences(12, 21, 2, 5))
    capsys.readouterr()
    assert convert(*train, "train", out) == 0
    assert "rerun `wikisum exemplars" in capsys.readouterr().out
    assert not list(out.glob("exemplars-*.parquet"))


def test_missing_row_in_exemplars_file_is_a_clear_error(pairs_data):
    out = pairs_data
    assert cli.main(["exemplars", "--data", str(out)]) == 0
    table = pq.read_table(out / "exemplars-dev.parquet")
    pq.write_table(table.slice(0, 3), out / "exemplars-dev.parquet")
    with pytest.raises(ValueError, match="has no row for dev id 4.*rerun `wikisum exemplars"):
        list(loader.Dataset(str(out)).examples("dev", exemplars=True))


def test_bad_options_and_missing_train_are_clear_errors(tmp_path, pairs_data):
    with pytest.raises(SystemExit) as usage:
        cli.main(["exemplars", "--data", str(pairs_data), "--block-size", "0"])
    assert usage.value.code == 2
    with pytest.raises(SystemExit, match="dataset.json not found"):
        cli.main(["exemplars", "--data", str(tmp_path / "nothing")])
    for shard in pairs_data.glob("train-*.parquet"):
        shard.unlink()
    with pytest.raises(SystemExit, match="the train split: no shard matches"):
        cli.main(["exemplars", "--data", str(pairs_data)])


def test_wikisum_shards_without_writing_into_the_shared_build(built_sample, tmp_path):
    build, _ = built_sample
    before = sorted((p.name, p.stat().st_mtime_ns) for p in (build / "data").iterdir())
    data_dir = tmp_path / "data"
    shutil.copytree(build / "data", data_dir)
    assert cli.main(["exemplars", "--data", str(data_dir), "--extractor", "tfidf",
                     "--corpus", "combined", "--max-input-tokens", "60"]) == 0
    assert sorted((p.name, p.stat().st_mtime_ns) for p in (build / "data").iterdir()) == before

    data = loader.Dataset(str(data_dir))
    special = set(data.special_ids.values())
    inputs = {split: {ex.id: ex for ex in data.examples(split, "tfidf", "combined", 60)}
              for split in ("train", "dev", "test")}
    train_ids = sorted(inputs["train"])
    leads = {row["id"]: row["lead"] for row in data.rows("train", ["id", "lead"])}
    for split in ("train", "dev", "test"):
        table = pq.read_table(data_dir / f"exemplars-{split}.parquet")
        assert table.schema.metadata[b"wikisum.exemplars.extractor"] == b"tfidf"
        found = dict(zip(table["id"].to_pylist(), table["exemplar_id"].to_pylist(), strict=True))
        ids = sorted(inputs[split])
        assert sorted(found) == ids and len(ids) > 0
        want, _, _ = brute_force(
            [[t for t in inputs["train"][i].inputs if t not in special] for i in train_ids],
            train_ids, [[t for t in inputs[split][i].inputs if t not in special] for i in ids],
            ids if split == "train" else None, data.info["vocab_size"],
            exemplars.DEFAULT_MAX_SIMILARITY, [leads[i] for i in train_ids])
        assert [found[i] for i in ids] == want
        for ex in data.examples(split, "tfidf", "combined", 60, exemplars=True):
            assert ex.exemplar == inputs["train"][found[ex.id]].targets  # the lead's ids
            assert ex.inputs == inputs[split][ex.id].inputs


@pytest.mark.shared_data
def test_on_gigaword_the_default_leaves_train_no_more_near_copies_than_dev(shared_data,
                                                                          tmp_path):
    # 10,000 training pairs in which stories were filed several times: unfiltered, a quarter of
    # training examples retrieve a near copy (cosine >= 0.9); 0.5 % of dev examples do.
    folder, out = shared_data / "gigaword", tmp_path / "gw"
    for split, (source, target) in {"train": ("train.article.txt", "train.title.txt"),
                                    "dev": ("valid.article.filter.txt",
                                            "valid.title.filter.txt")}.items():
        assert convert(str(folder / source), str(folder / target), split, out,
                       "--vocab-size", "8000", "-q") == 0
    summary = exemplars.run(exemplars.ExemplarConfig(str(out)))
    train, dev = summary["splits"]["train"], summary["splits"]["dev"]
    assert (train["rows"], dev["rows"]) == (10_000, 1_000)
    assert train["unfiltered"]["near_duplicate_share"] > 0.2
    assert dev["near_duplicate_share"] < 0.01
    assert train["near_duplicate_share"] <= dev["near_duplicate_share"]
    assert train["mean_similarity"] < train["unfiltered"]["mean_similarity"] - 0.05
    assert train["skipped"]["near_duplicate"] > 0 and train["skipped"]["same_target"] > 0
    assert train["no_candidate"] == 0
