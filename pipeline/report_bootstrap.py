"""Means with 95% confidence intervals by a Poisson bootstrap, for ``wikisum report``.

Each article gets ``B`` Poisson(1) weights seeded by its id, the same for every metric, so that
comparisons between extractors are paired (:func:`paired_difference`). The bootstrap is a
``CombineFn`` (:class:`BootstrapMeans`): its state is ``B`` sums per metric, mergeable across
workers, so memory does not grow with the number of articles.
"""

from __future__ import annotations

import apache_beam as beam
import numpy as np

from wikisum.core.records import stable_hash
from wikisum.pipeline.report_config import BOOTSTRAP_SAMPLES


def poisson_weights(article_id, samples: int, seed: int) -> np.ndarray:
    """The article's bootstrap weights: ``samples`` draws of Poisson(1), seeded by its id."""
    rng = np.random.default_rng([stable_hash(str(article_id)) & 0xFFFFFFFF, seed])
    return rng.poisson(1.0, samples).astype(np.float64)


class BootstrapMeans(beam.CombineFn):
    """(article_id, {metric: value}) -> {metric: {"mean", "low", "high", "n"}} (95% CI).

    Poisson bootstrap: replicate b's mean is sum_i w_ib v_i / sum_i w_ib. The accumulator holds,
    per metric, the plain sum and count and the ``samples`` weighted sums and weights.
    """

    def __init__(self, samples: int = BOOTSTRAP_SAMPLES, seed: int = 0,
                 keep_replicates: bool = False):
        self.samples, self.seed = samples, seed
        # With the replicate means kept, any two metrics can be compared afterwards by a paired
        # bootstrap (:func:`paired_difference`): replicate b of both used the same weights.
        self.keep_replicates = keep_replicates

    def create_accumulator(self):
        return {}

    def add_input(self, acc, item):
        article_id, values = item
        w = poisson_weights(article_id, self.samples, self.seed)
        for key, v in values.items():
            slot = acc.get(key)
            if slot is None:
                slot = acc[key] = [0.0, 0, np.zeros(self.samples), np.zeros(self.samples)]
            slot[0] += v
            slot[1] += 1
            slot[2] += w * v
            slot[3] += w
        return acc

    def merge_accumulators(self, accumulators):
        out = {}
        for acc in accumulators:
            for key, (s, n, ws, ww) in acc.items():
                if key not in out:
                    out[key] = [s, n, ws.copy(), ww.copy()]
                else:
                    slot = out[key]
                    slot[0] += s
                    slot[1] += n
                    slot[2] += ws
                    slot[3] += ww
        return out

    def extract_output(self, acc):
        out = {key: interval(s, n, ws, ww) for key, (s, n, ws, ww) in acc.items()}
        if self.keep_replicates:
            for key, (_, _, ws, ww) in acc.items():
                out[key]["replicates"] = replicate_means(ws, ww)
        return out


def replicate_means(weighted_sums: np.ndarray, weights: np.ndarray) -> list[float | None]:
    """The bootstrap replicate means, 7 significant digits; None where a replicate drew no
    article (all its weights 0)."""
    return [float(f"{s / w:.7g}") if w > 0 else None
            for s, w in zip(weighted_sums.tolist(), weights.tolist(), strict=True)]


def paired_difference(a: dict, b: dict, replicates_a, replicates_b) -> dict:
    """Mean of ``a`` minus mean of ``b`` with the 95% interval of the paired bootstrap: the
    2.5/97.5 percentiles of the replicate differences. Both metrics' replicate b used the same
    per-article weights, so each difference is the mean of the per-article differences under
    one resample (a paired comparison: what the articles have in common cancels out).

    ``clear`` is True when the interval excludes 0 (and at least two articles were scored)."""
    ra = np.array([np.nan if x is None else x for x in replicates_a], dtype=np.float64)
    rb = np.array([np.nan if x is None else x for x in replicates_b], dtype=np.float64)
    diff = ra - rb
    diff = diff[~np.isnan(diff)]
    mean = a["mean"] - b["mean"]
    if len(diff) == 0:
        low = high = mean
    else:
        low, high = (float(x) for x in np.percentile(diff, [2.5, 97.5]))
    n = min(a.get("n", 0), b.get("n", 0))
    return {"mean": mean, "low": low, "high": high,
            "clear": bool(n >= 2 and (low > 0 or high < 0))}


def interval(total: float, n: int, weighted_sums: np.ndarray, weights: np.ndarray) -> dict:
    """Mean and the 2.5/97.5 percentiles of the bootstrap replicate means."""
    ok = weights > 0
    replicates = weighted_sums[ok] / weights[ok]
    mean = total / n if n else float("nan")
    if len(replicates) == 0:
        low = high = mean
    else:
        low, high = (float(x) for x in np.percentile(replicates, [2.5, 97.5]))
    return {"mean": mean, "low": low, "high": high, "n": n}

