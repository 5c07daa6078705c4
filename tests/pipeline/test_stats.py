"""Bootstrap intervals and the paired test of wikisum.core.stats on synthetic scores with a
known answer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from wikisum.core import stats


def test_interval_covers_the_known_mean_with_the_expected_width():
    values = np.random.default_rng(3).normal(5.0, 1.0, size=400)
    got = stats.bootstrap_interval(values)
    assert got.estimate == pytest.approx(values.mean())
    assert got.low < 5.0 < got.high
    assert got.low < got.estimate < got.high
    # The normal-theory 95% half-width is 1.96 * sd / sqrt(n) = 0.098.
    assert got.half_width == pytest.approx(1.96 * values.std(ddof=1) / 20, rel=0.15)
    assert (got.n, got.resamples, got.level) == (400, 1000, 0.95)


def test_intervals_cover_the_true_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(11)
    covered = 0
    for trial in range(200):
        values = rng.exponential(2.0, size=100)  # skewed scores, true mean 2
        got = stats.bootstrap_interval(values, resamples=500, seed=trial)
        covered += got.low <= 2.0 <= got.high
    assert 0.88 <= covered / 200 <= 0.99


def test_a_lower_level_gives_a_narrower_interval():
    values = np.random.default_rng(0).uniform(size=300)
    wide = stats.bootstrap_interval(values, level=0.99)
    narrow = stats.bootstrap_interval(values, level=0.8)
    assert wide.low < narrow.low < narrow.high < wide.high


def test_same_seed_same_interval_other_seed_other_interval():
    values = np.random.default_rng(1).uniform(size=50)
    assert stats.bootstrap_interval(values, seed=4) == stats.bootstrap_interval(values, seed=4)
    assert stats.bootstrap_interval(values, seed=4) != stats.bootstrap_interval(values, seed=5)


def test_constant_scores_have_a_zero_width_interval():
    got = stats.bootstrap_interval([0.25] * 30)
    assert (got.low, got.estimate, got.high) == pytest.approx((0.25, 0.25, 0.25))


def test_columns_are_resampled_together():
    values = np.random.default_rng(2).uniform(size=80)
    got = stats.bootstrap_intervals({"x": values, "twice": 2 * values})
    alone = stats.bootstrap_interval(values)
    assert (got["x"].low, got["x"].high) == pytest.approx((alone.low, alone.high))
    assert (got["twice"].low, got["twice"].high) == pytest.approx((2 * got["x"].low,
                                                                   2 * got["x"].high))


def test_counts_draw_every_resample_with_replacement():
    blocks = list(stats.resample_counts(7, 2500, seed=0))
    counts = np.concatenate(blocks)
    assert counts.shape == (2500, 7)
    assert np.all(counts.sum(axis=1) == 7)
    assert counts.max() > 1  # some example drawn twice in some resample
    # Each example is drawn once per resample on average.
    assert counts.mean(axis=0) == pytest.approx(np.ones(7), abs=0.05)


def test_ratio_interval_is_corpus_level_and_maps_through_exp():
    rng = np.random.default_rng(5)
    tokens = rng.integers(1, 20, size=300).astype(float)
    nll = tokens * rng.normal(2.0, 0.3, size=300)  # about 2 nats per token
    got = stats.bootstrap_ratio_interval(nll, tokens)
    assert got.estimate == pytest.approx(nll.sum() / tokens.sum())
    assert got.low < 2.0 < got.high
    ppl = got.mapped(math.exp)
    assert (ppl.low, ppl.estimate, ppl.high) == pytest.approx(
        (math.exp(got.low), math.exp(got.estimate), math.exp(got.high)))
    with pytest.raises(ValueError, match="positive sum"):
        stats.bootstrap_ratio_interval([1.0, 2.0], [0.0, 0.0])


def test_paired_test_finds_a_real_difference():
    rng = np.random.default_rng(7)
    a = rng.uniform(0.2, 0.5, size=200)
    b = a + 0.02 + rng.normal(0.0, 0.05, size=200)  # B better by 0.02 on average
    got = stats.paired_bootstrap(a, b)
    assert got.diff == pytest.approx((b - a).mean())
    assert 0.0 < got.low < 0.02 < got.high
    assert got.p_value < 0.01 and got.significant and got.direction == 1
    assert got.verdict(scale=100).startswith("B above A: +")
    flipped = stats.paired_bootstrap(b, a)
    assert flipped.direction == -1 and flipped.diff == pytest.approx(-got.diff)
    assert flipped.verdict(a="base", b="new").startswith("new below base: -")


def test_pairing_beats_unpaired_noise():
    # Large between-example spread, small consistent gain: only a paired test sees it.
    rng = np.random.default_rng(8)
    a = rng.uniform(0.0, 1.0, size=150)
    b = a + 0.01 + rng.normal(0.0, 0.01, size=150)
    assert stats.paired_bootstrap(a, b).direction == 1
    ia, ib = stats.bootstrap_interval(a), stats.bootstrap_interval(b)
    assert ib.low < ia.high  # the separate intervals overlap


def test_paired_test_holds_its_level_under_the_null():
    rng = np.random.default_rng(9)
    rejected = 0
    for trial in range(100):
        a = rng.uniform(size=60)
        b = a + rng.normal(0.0, 0.1, size=60)  # no systematic difference
        rejected += stats.paired_bootstrap(a, b, resamples=400, seed=trial).significant
    assert rejected <= 12  # about 5 expected


def test_identical_systems_are_not_different():
    a = np.random.default_rng(0).uniform(size=40)
    got = stats.paired_bootstrap(a, a.copy())
    assert (got.diff, got.low, got.high, got.p_value) == (0.0, 0.0, 0.0, 1.0)
    assert got.verdict() == "no clear difference: +0.0 [0.0, 0.0], p = 1.000"


def test_sign_flip_p_value_matches_the_exact_randomization_distribution():
    # Three equal differences: 2 of the 8 sign patterns reach |sum| = 3, so p = 1/4.
    assert stats.sign_flip_p_value([1.0, 1.0, 1.0], resamples=20000) == pytest.approx(0.25,
                                                                                     abs=0.015)
    assert stats.sign_flip_p_value([0.0, 0.0]) == 1.0
    # Never 0: the smallest p-value is 1 / (resamples + 1).
    assert stats.sign_flip_p_value(np.ones(100), resamples=99) == pytest.approx(0.01)


def test_many_scores_at_once_agree_with_one_at_a_time():
    rng = np.random.default_rng(4)
    a = {"x": rng.uniform(size=70), "y": rng.uniform(size=70)}
    b = {"x": a["x"] + 0.05, "y": a["y"] + rng.normal(0, 0.2, size=70)}
    together = stats.paired_bootstraps(a, b, seed=3)
    for name in a:
        alone = stats.paired_bootstrap(a[name], b[name], seed=3)
        assert together[name].p_value == alone.p_value
        assert (together[name].low, together[name].high) == pytest.approx((alone.low,
                                                                           alone.high))


def test_verdict_format_and_dicts():
    result = stats.PairedResult(mean_a=0.30, mean_b=0.312, diff=0.012, low=0.004, high=0.020,
                                p_value=0.003, n=500)
    assert result.verdict(scale=100) == "B above A: +1.2 [0.4, 2.0], p = 0.003"
    assert result.as_dict()["p_value"] == 0.003
    assert stats.format_p(1 / 1001, resamples=1000) == "p < 0.001"
    interval = stats.Interval(0.312, 0.301, 0.324, n=500)
    assert interval.format(scale=100) == "31.20 [30.10, 32.40]"
    assert interval.as_dict()["low"] == 0.301


def test_small_sample_warning():
    assert "only 12 examples" in stats.small_sample_warning(12)
    assert stats.small_sample_warning(100) is None


@pytest.mark.parametrize(("call", "message"), [
    (lambda: stats.bootstrap_interval([]), "no examples"),
    (lambda: stats.bootstrap_interval([1.0, float("nan")]), "example 1 is nan"),
    (lambda: stats.bootstrap_interval([[1.0, 2.0]]), "1-D"),
    (lambda: stats.bootstrap_interval([1.0], resamples=0), "resamples must be a positive"),
    (lambda: stats.bootstrap_interval([1.0], level=95), "level must be between 0 and 1"),
    (lambda: stats.paired_bootstrap([1.0, 2.0], [1.0]), "same examples: 2 scores in a, 1 in b"),
    (lambda: stats.paired_bootstraps({"x": [1.0]}, {"y": [1.0]}), "different scores"),
])
def test_bad_input_is_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()
