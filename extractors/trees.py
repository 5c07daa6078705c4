"""Gradient-boosted regression trees as plain arrays: what the learned extractor stores and scores
with, so that its file is data (JSON), never a pickle whose loading could run code.

:func:`from_sklearn` takes the fitted trees of a scikit-learn ``HistGradientBoostingRegressor``
(squared error, numerical features); :meth:`Trees.predict` gives the same scores as the
estimator's ``predict``, bit for bit: each row walks every tree as scikit-learn's
``_predict_from_raw_data`` does (NaN goes the way the split learned, else left when the value is
``<= threshold``), and the leaf values are added to the baseline in the trees' order, as
``_raw_predict`` adds them.

:func:`from_dict` is the only way in from a file, and checks what it is given: children after
their parent (so every walk ends within the tree's depth), features within range, finite
values, a bounded number of nodes.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import numpy as np

KIND = "gradient_boosted_trees"
MAX_NODES = 1_000_000  # all trees together; a fitted extractor has at most 200 x 61
FIELDS = ("leaf", "feature", "threshold", "missing_left", "left", "right", "value")
MAX_INT = 2**62  # an index or count in a file is below this, so int64 arithmetic holds it
MAX_FLOAT_INT = int(sys.float_info.max)  # a larger integer has no float
# Rows scored at once: the walk holds a few (rows, trees) arrays, 8 bytes an entry (4,096 rows of
# 200 trees: about 6.5 MB each), whatever the number of paragraphs.
PREDICT_ROWS = 4096


@dataclass(frozen=True)
class Trees:
    """Every tree's nodes, concatenated; a tree's nodes are ``roots[t]`` to the next root."""

    baseline: float
    n_features: int
    roots: np.ndarray  # (T,) int64: the first node of each tree
    leaf: np.ndarray  # (N,) bool
    feature: np.ndarray  # (N,) int64: the feature a split reads (0 at leaves)
    threshold: np.ndarray  # (N,) float64: go left when value <= threshold
    missing_left: np.ndarray  # (N,) bool: where a NaN goes
    left: np.ndarray  # (N,) int64: global node index
    right: np.ndarray  # (N,) int64
    value: np.ndarray  # (N,) float64: a leaf's prediction (learning rate applied)
    depth: int  # the longest walk from a root to a leaf, in splits

    def predict(self, x: np.ndarray) -> np.ndarray:
        """(n,) scores of the rows of ``x`` (n, n_features)."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.n_features:
            raise ValueError(f"expected (n, {self.n_features}) features, got {x.shape}")
        if x.shape[0] > PREDICT_ROWS:  # rows are scored alone: in blocks, memory stays bounded
            return np.concatenate([self.predict(x[i:i + PREDICT_ROWS])
                                   for i in range(0, x.shape[0], PREDICT_ROWS)])
        n = x.shape[0]
        rows = np.arange(n)[:, None]  # (n, 1)
        node = np.broadcast_to(self.roots, (n, len(self.roots))).copy()  # (n, T)
        for _ in range(self.depth):
            inner = ~self.leaf[node]
            if not inner.any():
                break
            data = x[rows, self.feature[node]]  # (n, T)
            go_left = np.where(np.isnan(data), self.missing_left[node],
                               data <= self.threshold[node])
            node = np.where(inner, np.where(go_left, self.left[node], self.right[node]), node)
        values = self.value[node]  # (n, T)
        out = np.zeros(n) + self.baseline
        for t in range(values.shape[1]):  # in order, as scikit-learn sums them
            out += values[:, t]
        return out

    def to_dict(self) -> dict:
        """A JSON-ready description: one list per field per tree, child indices within the
        tree."""
        ends = [*self.roots[1:].tolist(), len(self.leaf)]
        trees = []
        for start, end in zip(self.roots.tolist(), ends, strict=True):
            tree = {}
            for name in FIELDS:
                part = getattr(self, name)[start:end]
                if name in ("left", "right"):
                    part = np.where(self.leaf[start:end], 0, part - start)
                tree[name] = [bool(v) for v in part] if part.dtype == bool else part.tolist()
            trees.append(tree)
        return {"kind": KIND, "baseline": self.baseline, "n_features": self.n_features,
                "trees": trees}


def from_dict(saved: object) -> Trees:
    """Trees from :meth:`Trees.to_dict`'s form, checked.

    Raises:
        ValueError: it is not that form, or its trees are not well formed.
    """
    if not isinstance(saved, dict) or saved.get("kind") != KIND:
        raise ValueError(f"the model is not {KIND!r}")
    baseline = saved.get("baseline")
    n_features = saved.get("n_features")
    trees = saved.get("trees")
    if not _finite(baseline):
        raise ValueError("baseline is not a finite number")
    if type(n_features) is not int or not 1 <= n_features < MAX_INT:
        raise ValueError("n_features is not a positive integer below 2**62")
    if not isinstance(trees, list) or not trees:
        raise ValueError("no trees")
    columns: dict[str, list] = {name: [] for name in FIELDS}
    roots, depth, total = [], 0, 0
    for t, tree in enumerate(trees):
        try:
            nodes = _check_tree(tree, n_features)
        except ValueError as exc:
            raise ValueError(f"tree {t}: {exc}") from None
        total += len(nodes["leaf"])
        if total > MAX_NODES:
            raise ValueError(f"more than {MAX_NODES:,} nodes")
        roots.append(sum(len(c) for c in columns["leaf"]))
        for name in FIELDS:
            columns[name].append(nodes[name])
        depth = max(depth, nodes["depth"])
    start = np.asarray(roots, dtype=np.int64)
    sizes = [len(c) for c in columns["leaf"]]
    offset = np.repeat(start, sizes)  # (N,) the root of each node's tree
    arrays = {name: np.concatenate(columns[name]) for name in FIELDS}
    leaf = arrays["leaf"]
    return Trees(float(baseline), n_features, start, leaf, arrays["feature"],
                 arrays["threshold"], arrays["missing_left"],
                 np.where(leaf, offset, arrays["left"] + offset),
                 np.where(leaf, offset, arrays["right"] + offset), arrays["value"], depth)


def _number(value: object) -> bool:
    """A JSON number that is a float, infinities included: not NaN, not an integer too large
    for a float (``10**400``, which float() and math.isnan() refuse with OverflowError)."""
    if type(value) is float:
        return not math.isnan(value)
    return type(value) is int and abs(value) <= MAX_FLOAT_INT


def _finite(value: object) -> bool:
    return _number(value) and math.isfinite(value)


def _check_tree(tree: object, n_features: int) -> dict:
    """One tree's columns as arrays, and its depth; children come after their parent."""
    if not isinstance(tree, dict) or set(tree) != set(FIELDS):
        raise ValueError(f"not an object with exactly the fields {', '.join(FIELDS)}")
    n = len(tree["leaf"]) if isinstance(tree["leaf"], list) else -1
    if n < 1 or any(not isinstance(tree[f], list) or len(tree[f]) != n for f in FIELDS):
        raise ValueError("fields are not lists of one length >= 1")
    if n > MAX_NODES:
        raise ValueError(f"more than {MAX_NODES:,} nodes")
    for name in ("leaf", "missing_left"):
        if any(type(v) is not bool for v in tree[name]):
            raise ValueError(f"{name} holds a value that is not true or false")
    for name in ("feature", "left", "right"):
        if any(type(v) is not int or not -MAX_INT < v < MAX_INT for v in tree[name]):
            raise ValueError(f"{name} holds a value that is not an integer below 2**62 "
                             "in size")
    for name in ("threshold", "value"):
        if any(not _number(v) for v in tree[name]):
            raise ValueError(f"{name} holds a value that is not a number (or one too large "
                             "for a float)")
    leaf = np.asarray(tree["leaf"], dtype=bool)
    feature = np.asarray(tree["feature"], dtype=np.int64)
    left = np.asarray(tree["left"], dtype=np.int64)
    right = np.asarray(tree["right"], dtype=np.int64)
    value = np.asarray(tree["value"], dtype=np.float64)
    index = np.arange(n)
    inner = ~leaf
    if not np.all(np.isfinite(value[leaf])):
        raise ValueError("a leaf value is not finite")
    if np.any((feature[inner] < 0) | (feature[inner] >= n_features)):
        raise ValueError(f"a split reads a feature outside 0..{n_features - 1}")
    for child in (left, right):
        if np.any((child[inner] <= index[inner]) | (child[inner] >= n)):
            raise ValueError("a child does not come after its parent within the tree")
    depths = np.zeros(n, dtype=np.int64)
    for i in np.flatnonzero(inner):  # parents before children: one pass in index order
        depths[left[i]] = depths[right[i]] = max(depths[left[i]], depths[right[i]],
                                                 depths[i] + 1)
    return {"leaf": leaf, "feature": np.where(leaf, 0, feature),
            "threshold": np.asarray(tree["threshold"], dtype=np.float64),
            "missing_left": np.asarray(tree["missing_left"], dtype=bool), "left": left,
            "right": right, "value": value, "depth": int(depths.max())}


def from_sklearn(model) -> Trees:
    """The fitted trees of a ``HistGradientBoostingRegressor`` (squared error, one tree per
    iteration, no categorical feature)."""
    if getattr(model, "n_trees_per_iteration_", None) != 1:
        raise ValueError("expected a fitted regressor with one tree per iteration")
    link = type(getattr(getattr(model, "_loss", None), "link", None)).__name__
    if link != "IdentityLink":
        raise ValueError(f"expected a squared-error regressor (identity link), got {link}")
    columns: dict[str, list] = {name: [] for name in FIELDS}
    for (predictor,) in model._predictors:
        nodes = predictor.nodes
        if nodes["is_categorical"].any():
            raise ValueError("categorical splits are not supported")
        leaf = nodes["is_leaf"].astype(bool)
        columns["leaf"].append([bool(v) for v in leaf])
        columns["feature"].append(np.where(leaf, 0, nodes["feature_idx"]).tolist())
        columns["threshold"].append(np.where(leaf, 0.0, nodes["num_threshold"]).tolist())
        columns["missing_left"].append([bool(v) for v in nodes["missing_go_to_left"]])
        columns["left"].append(np.where(leaf, 0, nodes["left"]).astype(np.int64).tolist())
        columns["right"].append(np.where(leaf, 0, nodes["right"]).astype(np.int64).tolist())
        columns["value"].append(np.where(leaf, nodes["value"], 0.0).tolist())
    trees = [{name: columns[name][t] for name in FIELDS} for t in range(len(columns["leaf"]))]
    return from_dict({"kind": KIND, "baseline": float(model._baseline_prediction.ravel()[0]),
                      "n_features": int(model.n_features_in_), "trees": trees})
