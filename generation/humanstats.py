"""The statistics of a human evaluation (:mod:`wikisum.generation.humanscore`): means with t
intervals, Welch's two-sample t-test, the exact sign test, Krippendorff's alpha and the
point-biserial correlation. Pure functions over lists of numbers or labels; each returns None
(with a reason where one helps) where its number is undefined, never NaN.

Written out rather than called from scipy.stats so that each formula is in view and the
undefined cases are said in words; scipy's t distribution gives the quantiles and tails. The
tests hold each one to scipy (``ttest_ind(equal_var=False)``, ``binomtest``,
``pointbiserialr``) and to hand-worked and published values.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence

import numpy as np

LEVEL = 0.95
STRICT_P = 0.001  # the paper's significance level (Liu et al. 2018, Table 5)
LOOSE_P = 0.05


def _t():
    from scipy import stats  # scipy comes with scikit-learn; imported where it is needed

    return stats.t


def mean_interval(values: Sequence[float], level: float = LEVEL) -> dict:
    """Mean, sample standard deviation, n and the t interval ``mean +- t(1 - (1 - level) / 2,
    n - 1) * s / sqrt(n)``; the interval is None below two values."""
    n = len(values)
    if n == 0:
        return {"mean": None, "sd": None, "n": 0, "low": None, "high": None}
    x = np.asarray(values, dtype=float)
    mean = float(x.mean())
    if n < 2:
        return {"mean": mean, "sd": None, "n": 1, "low": None, "high": None}
    sd = float(x.std(ddof=1))
    half = float(_t().ppf(1 - (1 - level) / 2, n - 1)) * sd / math.sqrt(n)
    return {"mean": mean, "sd": sd, "n": n, "low": mean - half, "high": mean + half}


def stars(p: float | None) -> str:
    """``**`` below the paper's 0.001, ``*`` below 0.05."""
    if p is None:
        return ""
    return "**" if p < STRICT_P else "*" if p < LOOSE_P else ""


def welch(x: Sequence[float], y: Sequence[float]) -> dict:
    """Welch's two-sample t-test of mean(x) - mean(y): t, the Welch-Satterthwaite degrees of
    freedom ``(a + b)^2 / (a^2 / (n1 - 1) + b^2 / (n2 - 1))`` with ``a = s1^2 / n1``,
    ``b = s2^2 / n2``, and the two-sided p. None values and a reason where it is undefined."""
    n1, n2 = len(x), len(y)
    out = {"difference": None, "t": None, "df": None, "p": None, "stars": "", "reason": None}
    if n1 and n2:
        out["difference"] = float(np.mean(x) - np.mean(y))
    if n1 < 2 or n2 < 2:
        out["reason"] = f"needs two or more ratings on each side (has {n1} and {n2})"
        return out
    a = float(np.var(x, ddof=1)) / n1
    b = float(np.var(y, ddof=1)) / n2
    if a + b == 0:
        out["reason"] = "every rating on both sides is the same: the t statistic is undefined"
        return out
    t = out["difference"] / math.sqrt(a + b)
    df = (a + b) ** 2 / (a ** 2 / (n1 - 1) + b ** 2 / (n2 - 1))
    p = float(2 * _t().sf(abs(t), df))
    out.update(t=t, df=df, p=p, stars=stars(p))
    return out


def sign_test(k: int, n: int) -> float | None:
    """Two-sided exact sign test: the probability under Binomial(n, 1/2) of a split at least as
    uneven as ``k`` of ``n``, ``min(1, 2 * P(X <= min(k, n - k)))``; None when n is 0."""
    if n == 0:
        return None
    low = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(low + 1))
    return min(1.0, 2 * tail / 2 ** n)


def coincidences(units: Iterable[Sequence[Hashable]], values: Sequence[Hashable]) -> np.ndarray:
    """Krippendorff's coincidence matrix o[c, k]: over every unit with m >= 2 values, each
    ordered pair of values from different annotators adds 1 / (m - 1) (Krippendorff 2011,
    section C)."""
    index = {v: i for i, v in enumerate(values)}
    o = np.zeros((len(values), len(values)))
    for unit in units:
        m = len(unit)
        if m < 2:
            continue
        counts = Counter(unit)
        for c, nc in counts.items():
            for k, nk in counts.items():
                o[index[c], index[k]] += (nc * (nc - 1) if c == k else nc * nk) / (m - 1)
    return o


def _ordinal_distance(n_c: np.ndarray) -> np.ndarray:
    """delta^2[c, k] = (sum of n_g for g from c to k - (n_c + n_k) / 2)^2 (values in order)."""
    size = len(n_c)
    d = np.zeros((size, size))
    cum = np.concatenate([[0.0], np.cumsum(n_c)])
    for c in range(size):
        for k in range(c + 1, size):
            d[c, k] = d[k, c] = (cum[k + 1] - cum[c] - (n_c[c] + n_c[k]) / 2) ** 2
    return d


def krippendorff_alpha(units: Iterable[Sequence[Hashable]], metric: str,
                       values: Sequence[Hashable] | None = None) -> dict:
    """Krippendorff's alpha ``1 - (n - 1) * sum(o * delta^2) / sum(n_c * n_k * delta^2)`` of
    ``units`` (each the values that the annotators gave one item), ``metric`` "nominal" or
    "ordinal" (``values`` in order; default: the values present, sorted).

    Returns ``{"alpha", "metric", "items", "values", "reason"}``: ``items`` the units with two
    or more values, ``values`` their values (Krippendorff's n); alpha None with a reason where
    no unit has two values or every value is the same."""
    pairable = [list(u) for u in units if len(u) >= 2]
    out = {"alpha": None, "metric": metric, "items": len(pairable),
           "values": sum(len(u) for u in pairable), "reason": None}
    if not pairable:
        out["reason"] = "no item was answered by two or more annotators"
        return out
    domain = list(values) if values is not None else sorted({v for u in pairable for v in u})
    o = coincidences(pairable, domain)
    n_c = o.sum(axis=1)
    n = n_c.sum()
    if metric == "nominal":
        delta = 1.0 - np.eye(len(domain))
    elif metric == "ordinal":
        delta = _ordinal_distance(n_c)
    else:
        raise ValueError(f"unknown metric {metric!r}: nominal or ordinal")
    expected = float((np.outer(n_c, n_c) * delta).sum())
    if expected == 0:
        out["reason"] = ("every answer is the same value: agreement cannot be told from chance "
                         "(alpha is 0/0)")
        return out
    out["alpha"] = float(1 - (n - 1) * (o * delta).sum() / expected)
    return out


def point_biserial(x: Sequence[float], y: Sequence[float]) -> dict:
    """Pearson's r of x and a two-valued y (the point-biserial correlation) and its two-sided
    p from ``t = r * sqrt((n - 2) / (1 - r^2))`` on n - 2 degrees of freedom."""
    n = len(x)
    out = {"r": None, "p": None, "reason": None}
    if n < 3:
        out["reason"] = f"needs three or more judgments with a preference (has {n})"
        return out
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if np.ptp(xa) == 0 or np.ptp(ya) == 0:
        out["reason"] = ("the ROUGE-L differences are all equal" if np.ptp(xa) == 0 else
                         "every judgment prefers the same side")
        return out
    r = float(np.clip(np.corrcoef(xa, ya)[0, 1], -1.0, 1.0))
    if abs(r) == 1.0:
        p = 0.0
    else:
        t = r * math.sqrt((n - 2) / (1 - r * r))
        p = float(2 * _t().sf(abs(t), n - 2))
    out.update(r=r, p=p)
    return out
