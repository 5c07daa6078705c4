"""Uncertainty of mean scores: bootstrap intervals and paired tests, in plain numpy.

Everything here works on per-example scores (one number per example, e.g. each summary's
ROUGE-2 F1) and answers two questions:

- how precise is a mean score? :func:`bootstrap_interval` (one score),
  :func:`bootstrap_intervals` (several scores of the same examples, resampled together) and
  :func:`bootstrap_ratio_interval` (a corpus-level ratio such as NLL per token): percentile
  intervals from resampling the examples with replacement;
- is system B better than system A on the same examples? :func:`paired_bootstrap`: the mean of
  the per-example differences ``b - a``, a paired-bootstrap percentile interval of it and a
  two-sided p-value from an approximate randomization (sign-flip) test.

Why a sign-flip test for the p-value: under the null hypothesis that A and B are
interchangeable, each per-example difference is as likely to be ``d`` as ``-d``, so flipping
signs at random draws from the exact null distribution of the mean difference. The bootstrap
p-value instead shifts the bootstrap distribution to a mean of 0 and assumes its shape holds
under the null, which is an approximation that makes it reject too often on small samples
(Riezler and Maxwell, 2005). The interval comes from the paired bootstrap, which needs no null,
so the two may disagree at the margin (p just under 0.05 with an interval just touching 0).

Resampling is vectorised: a block of resamples is a matrix of how many times each example is
drawn, and every mean is a matrix product, so 1,000 resamples of 10,000 examples take a few
tenths of a second on one core, for one score or for many resampled together. Results depend
only on the inputs, ``resamples`` and ``seed``.

No Beam or torch import: the report, ``wikisum evaluate`` and the benchmarks all use it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass

import numpy as np

DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95
DEFAULT_SEED = 0
# Below this many examples a 95% interval is wide and its coverage unreliable.
MIN_RELIABLE_EXAMPLES = 100
# Resamples are drawn in blocks of at most this many cells (resamples x examples), which keeps
# memory near 100 MB whatever the sample size.
_BLOCK_CELLS = 4_000_000


@dataclass(frozen=True)
class Interval:
    """A score's point estimate (on all examples) and its bootstrap percentile interval."""

    estimate: float
    low: float
    high: float
    level: float = DEFAULT_LEVEL
    n: int = 0
    resamples: int = DEFAULT_RESAMPLES

    def scaled(self, factor: float) -> Interval:
        """The same interval with every value multiplied by ``factor`` (e.g. 100 for percent;
        a negative factor swaps the bounds)."""
        low, high = sorted((self.low * factor, self.high * factor))
        return Interval(self.estimate * factor, low, high, self.level, self.n, self.resamples)

    def mapped(self, fn) -> Interval:
        """The interval of ``fn(score)`` for an increasing ``fn`` (e.g. ``math.exp`` to turn mean
        NLL into perplexity): percentile intervals carry over monotone maps exactly."""
        return Interval(fn(self.estimate), fn(self.low), fn(self.high), self.level, self.n,
                        self.resamples)

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2

    def as_dict(self) -> dict:
        return asdict(self)

    def format(self, digits: int = 2, scale: float = 1.0) -> str:
        """``"31.20 [30.10, 32.40]"``, values multiplied by ``scale``."""
        s = self.scaled(scale)
        return f"{s.estimate:.{digits}f} [{s.low:.{digits}f}, {s.high:.{digits}f}]"


@dataclass(frozen=True)
class PairedResult:
    """B against A on the same examples: ``diff = mean(b - a)``, its paired-bootstrap interval
    ``[low, high]`` and the two-sided sign-flip p-value of "no difference"."""

    mean_a: float
    mean_b: float
    diff: float
    low: float
    high: float
    p_value: float
    level: float = DEFAULT_LEVEL
    n: int = 0
    resamples: int = DEFAULT_RESAMPLES
    method: str = "paired bootstrap interval; approximate randomization (sign-flip) p-value"

    @property
    def alpha(self) -> float:
        return 1.0 - self.level

    @property
    def significant(self) -> bool:
        """Whether the p-value is below ``1 - level`` (0.05 for 95%)."""
        return self.p_value < self.alpha

    @property
    def direction(self) -> int:
        """+1 when B is significantly above A, -1 when below, 0 when no clear difference."""
        if not self.significant or self.diff == 0:
            return 0
        return 1 if self.diff > 0 else -1

    def verdict(self, a: str = "A", b: str = "B", scale: float = 1.0, digits: int = 1) -> str:
        """One line: ``"B above A: +1.2 [0.4, 2.0], p = 0.003"`` (``B below A`` or ``no clear
        difference`` otherwise), values multiplied by ``scale``."""
        head = {1: f"{b} above {a}", -1: f"{b} below {a}", 0: "no clear difference"}[
            self.direction]
        return (f"{head}: {self.diff * scale:+.{digits}f} "
                f"[{self.low * scale:.{digits}f}, {self.high * scale:.{digits}f}], "
                f"{format_p(self.p_value, self.resamples)}")

    def as_dict(self) -> dict:
        return asdict(self)


def format_p(p: float, resamples: int | None = None) -> str:
    """``"p = 0.003"``; at the smallest p-value the test can give, ``"p < 0.001"``."""
    if resamples is not None and p <= 1.0 / (resamples + 1) + 1e-12:
        return f"p < {10 ** math.ceil(math.log10(1.0 / (resamples + 1))):g}"
    if p < 0.001:
        return f"p = {p:.1e}"
    return f"p = {p:.3f}"


def small_sample_warning(n: int, minimum: int = MIN_RELIABLE_EXAMPLES) -> str | None:
    """A warning sentence when ``n`` examples are too few for reliable intervals, else None."""
    if n >= minimum:
        return None
    return (f"only {n} example{'s' if n != 1 else ''} scored (fewer than {minimum}): the 95% "
            f"intervals are wide and their coverage is unreliable; score more examples")


def _check_values(values, name: str = "values") -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one number per example (1-D), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name}: no examples to resample")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f"{name}: example {bad} is {arr[bad]}, not a finite number")
    return arr


def _check_options(resamples: int, level: float) -> None:
    if isinstance(resamples, bool) or not isinstance(resamples, (int, np.integer)) \
            or resamples < 1:
        raise ValueError(f"resamples must be a positive integer, got {resamples!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1 (e.g. 0.95), got {level!r}")


def _blocks(n: int, resamples: int) -> Iterator[int]:
    size = max(1, _BLOCK_CELLS // n)
    done = 0
    while done < resamples:
        block = min(size, resamples - done)
        yield block
        done += block


def resample_counts(n: int, resamples: int, seed: int = DEFAULT_SEED) -> Iterator[np.ndarray]:
    """Blocks of bootstrap resamples of ``n`` examples: each block is a ``(rows, n)`` float
    matrix whose row counts how often each example is drawn (rows sum to ``n``); the blocks hold
    ``resamples`` rows in all. ``counts @ values / n`` is the resampled means."""
    rng = np.random.default_rng(seed)
    for block in _blocks(n, resamples):
        idx = rng.integers(0, n, size=(block, n))
        idx += np.arange(block)[:, None] * n
        yield np.bincount(idx.ravel(), minlength=block * n).reshape(block, n).astype(float)


def _resampled_means(matrix: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """``(resamples, k)`` bootstrap means of the columns of an ``(n, k)`` matrix."""
    n = matrix.shape[0]
    return np.concatenate([counts @ matrix for counts in resample_counts(n, resamples, seed)]) / n


def _percentiles(samples: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    tail = (1.0 - level) / 2
    low, high = np.quantile(samples, [tail, 1.0 - tail], axis=0)
    return low, high


def bootstrap_intervals(columns: Mapping[str, Sequence[float]], *,
                        resamples: int = DEFAULT_RESAMPLES, level: float = DEFAULT_LEVEL,
                        seed: int = DEFAULT_SEED) -> dict[str, Interval]:
    """Percentile bootstrap intervals of the mean of each column; all columns hold the same
    examples in the same order and are resampled together (one set of resamples)."""
    _check_options(resamples, level)
    if not columns:
        raise ValueError("no scores to resample")
    arrays = {name: _check_values(values, name) for name, values in columns.items()}
    sizes = {a.size for a in arrays.values()}
    if len(sizes) != 1:
        raise ValueError(f"scores hold different numbers of examples: "
                         f"{ {name: a.size for name, a in arrays.items()} }")
    matrix = np.column_stack(list(arrays.values()))
    n = matrix.shape[0]
    low, high = _percentiles(_resampled_means(matrix, resamples, seed), level)
    estimates = matrix.mean(axis=0)
    return {name: Interval(float(estimates[j]), float(low[j]), float(high[j]), level, n,
                           resamples)
            for j, name in enumerate(arrays)}


def bootstrap_interval(values: Sequence[float], *, resamples: int = DEFAULT_RESAMPLES,
                       level: float = DEFAULT_LEVEL, seed: int = DEFAULT_SEED) -> Interval:
    """The mean of ``values`` (one score per example) and its percentile bootstrap interval:
    examples are drawn with replacement ``resamples`` times and the interval is the central
    ``level`` share of the resampled means."""
    return bootstrap_intervals({"values": values}, resamples=resamples, level=level,
                               seed=seed)["values"]


def bootstrap_ratio_interval(numerators: Sequence[float], denominators: Sequence[float], *,
                             resamples: int = DEFAULT_RESAMPLES, level: float = DEFAULT_LEVEL,
                             seed: int = DEFAULT_SEED) -> Interval:
    """``sum(numerators) / sum(denominators)`` (a corpus-level figure such as NLL per token)
    and its percentile bootstrap interval, examples (numerator and denominator together)
    resampled with replacement. Denominators must be >= 0 with a positive sum."""
    _check_options(resamples, level)
    num = _check_values(numerators, "numerators")
    den = _check_values(denominators, "denominators")
    if num.size != den.size:
        raise ValueError(f"{num.size} numerators but {den.size} denominators")
    if np.any(den < 0) or den.sum() <= 0:
        raise ValueError("denominators must be >= 0 with a positive sum")
    sums = _resampled_means(np.column_stack([num, den]), resamples, seed)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = sums[:, 0] / sums[:, 1]
    ratios = ratios[np.isfinite(ratios)]  # resamples that drew only zero denominators
    estimate = float(num.sum() / den.sum())
    low, high = _percentiles(ratios, level) if ratios.size else (estimate, estimate)
    return Interval(estimate, float(low), float(high), level, int(num.size), resamples)


def _sign_flip_p_values(matrix: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Two-sided sign-flip p-values of the column means of an ``(n, k)`` matrix of differences,
    one set of random flips for all columns."""
    n = matrix.shape[0]
    observed = np.abs(matrix.sum(axis=0))
    # A tolerance so that flips reproducing the observed sum up to rounding count as hits.
    tolerance = 1e-9 * np.maximum(1.0, np.abs(matrix).sum(axis=0))
    rng = np.random.default_rng(seed)
    hits = np.zeros(matrix.shape[1], dtype=np.int64)
    for block in _blocks(n, resamples):
        signs = rng.integers(0, 2, size=(block, n), dtype=np.int8).astype(float) * 2.0 - 1.0
        hits += np.count_nonzero(np.abs(signs @ matrix) >= observed - tolerance, axis=0)
    p = (hits + 1) / (resamples + 1)
    return np.where(observed == 0.0, 1.0, p)


def sign_flip_p_value(differences: Sequence[float], *, resamples: int = DEFAULT_RESAMPLES,
                      seed: int = DEFAULT_SEED) -> float:
    """Two-sided p-value of "the mean difference is 0" by approximate randomization: the share
    of random sign flips of the per-example differences whose mean is at least as far from 0 as
    the observed one, counted as ``(hits + 1) / (resamples + 1)`` so it is never 0. All-zero
    differences give 1."""
    _check_options(resamples, DEFAULT_LEVEL)
    d = _check_values(differences, "differences")
    return float(_sign_flip_p_values(d[:, None], resamples, seed)[0])


def paired_bootstraps(a: Mapping[str, Sequence[float]], b: Mapping[str, Sequence[float]], *,
                      resamples: int = DEFAULT_RESAMPLES, level: float = DEFAULT_LEVEL,
                      seed: int = DEFAULT_SEED) -> dict[str, PairedResult]:
    """:func:`paired_bootstrap` of several scores of the same examples at once (``a[name]``
    against ``b[name]`` for every name in ``a``), with one set of resamples and sign flips for
    all of them; each result agrees with the single-score call with the same seed (up to
    floating-point rounding)."""
    _check_options(resamples, level)
    if not a:
        raise ValueError("no scores to compare")
    if set(a) != set(b):
        raise ValueError(f"a and b hold different scores: {sorted(set(a) ^ set(b))}")
    a_cols = {name: _check_values(values, f"a[{name!r}]") for name, values in a.items()}
    b_cols = {name: _check_values(b[name], f"b[{name!r}]") for name in a}
    sizes = {v.size for v in a_cols.values()} | {v.size for v in b_cols.values()}
    if len(sizes) != 1:
        raise ValueError("a paired test needs the same examples: the scores hold different "
                         f"numbers of examples ({sorted(sizes)})")
    diffs = {name: b_cols[name] - a_cols[name] for name in a}
    intervals = bootstrap_intervals(diffs, resamples=resamples, level=level, seed=seed)
    p_values = _sign_flip_p_values(np.column_stack(list(diffs.values())), resamples, seed + 1)
    return {name: PairedResult(float(a_cols[name].mean()), float(b_cols[name].mean()),
                               intervals[name].estimate, intervals[name].low,
                               intervals[name].high, float(p_values[j]), level,
                               intervals[name].n, resamples)
            for j, name in enumerate(a)}


def paired_bootstrap(a: Sequence[float], b: Sequence[float], *,
                     resamples: int = DEFAULT_RESAMPLES, level: float = DEFAULT_LEVEL,
                     seed: int = DEFAULT_SEED) -> PairedResult:
    """B against A, paired by position (``a[i]`` and ``b[i]`` are the same example): the mean
    difference ``mean(b - a)``, its percentile interval from resampling examples (both systems
    together) and the two-sided approximate randomization p-value (:func:`sign_flip_p_value`).
    """
    a_arr = np.asarray(a, dtype=float)
    b_arr = np.asarray(b, dtype=float)
    if a_arr.ndim == 1 and b_arr.ndim == 1 and a_arr.size != b_arr.size:
        raise ValueError(f"a paired test needs the same examples: {a_arr.size} scores in a, "
                         f"{b_arr.size} in b")
    return paired_bootstraps({"score": a_arr}, {"score": b_arr}, resamples=resamples,
                             level=level, seed=seed)["score"]
