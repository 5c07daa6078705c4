"""The learned extractor's file is data: the fitted trees as JSON, scoring exactly as the
scikit-learn regressor did; a pickle (the format before) is refused without being loaded."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import numpy as np
import pytest
from sklearn.ensemble import HistGradientBoostingRegressor
from threadpoolctl import threadpool_limits

from wikisum.extractors import learned, trees


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """scikit-learn's OpenMP threads on a busy machine take seconds for milliseconds of work."""
    with threadpool_limits(1):
        yield


class Payload:
    """Unpickling this creates ``marker``: what a hostile shared file could do."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def hostile_pickle(marker: Path) -> bytes:
    """A pickle of the old format's shape whose loading runs code."""
    return pickle.dumps({"format": 1, "features": learned.FEATURES, "model": Payload(marker),
                         "info": {}})


@pytest.fixture(scope="module")
def fitted():
    """A regressor on data with NaNs (splits that send missing values either way, and
    infinite thresholds), and rows to score."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, len(learned.FEATURES)))
    x[rng.random(x.shape) < 0.05] = np.nan
    y = 2 * np.nan_to_num(x[:, 0]) + 3 * np.isnan(x[:, 2]) + rng.normal(size=2000) / 10
    model = HistGradientBoostingRegressor(max_iter=60, random_state=0).fit(x, y)
    rows = rng.normal(size=(300, len(learned.FEATURES)))
    rows[rng.random(rows.shape) < 0.05] = np.nan
    return model, rows


def test_the_trees_score_exactly_as_the_regressor(fitted, tmp_path):
    model, rows = fitted
    scorer = trees.from_sklearn(model)
    assert np.isinf(scorer.threshold).any()  # the case of a split on missing values is here
    assert np.array_equal(scorer.predict(rows), model.predict(rows))
    saved = learned.Learned(scorer, info={"articles": 1})
    saved.save(str(tmp_path / "m.json"))
    again = learned.load(str(tmp_path / "m.json"))
    assert np.array_equal(again.model.predict(rows), model.predict(rows))
    assert again.info == {"articles": 1}
    text = (tmp_path / "m.json").read_text()
    assert json.loads(text)["format"] == learned.FORMAT  # JSON, no pickle opcode
    assert not learned.looks_pickled(text.encode())


def test_a_pickle_is_refused_and_never_loaded(tmp_path):
    marker = tmp_path / "ran"
    blob = hostile_pickle(marker)
    for name in ("learned.pkl", "learned.json", "extractor.json"):
        (tmp_path / name).write_bytes(blob)
        with pytest.raises(ValueError, match="pickled learned extractor .* can run code .* "
                                             "not read; retrain it with `wikisum rank "
                                             "--train-learned`"):
            learned.load(str(tmp_path / name))
    protocol0 = pickle.dumps({"model": Payload(marker)}, protocol=0)
    (tmp_path / "old.pkl").write_bytes(protocol0)
    with pytest.raises(ValueError, match="pickled learned extractor"):
        learned.load(str(tmp_path / "old.pkl"))
    assert not marker.exists()
    pickle.loads(blob)  # the payload is real: unpickling it runs it
    assert marker.exists()


def test_a_model_that_does_not_check_is_refused(fitted, tmp_path):
    model, _ = fitted
    good = learned.Learned(trees.from_sklearn(model)).to_dict()

    def refused(change, match):
        saved = copy.deepcopy(good)
        change(saved)
        (tmp_path / "m.json").write_text(json.dumps(saved))
        with pytest.raises(ValueError, match=match):
            learned.load(str(tmp_path / "m.json"))

    def loop(saved):  # a child before its parent: a walk that would never end
        saved["model"]["trees"][0]["left"][0] = 0

    def far_feature(saved):
        tree = saved["model"]["trees"][0]
        tree["feature"][tree["leaf"].index(False)] = 99

    refused(loop, "tree 0: a child does not come after its parent")
    refused(far_feature, "tree 0: a split reads a feature outside")
    refused(lambda s: s["model"]["trees"][1]["value"].__setitem__(1, "1"), "not a number")
    refused(lambda s: s["model"].update(baseline=None), "baseline")
    refused(lambda s: s.update(format_version=1), "format version 1")
    refused(lambda s: s.update(features=["tfidf"]), "retrain it")
    (tmp_path / "nan.json").write_text(json.dumps(good).replace('"baseline":', '"baseline":NaN,'
                                                                '"x":'))
    with pytest.raises(ValueError, match="NaN"):
        learned.load(str(tmp_path / "nan.json"))
    (tmp_path / "big.json").write_bytes(b" " * (learned.MAX_BYTES + 1))
    with pytest.raises(ValueError, match="over 16 MiB"):
        learned.load(str(tmp_path / "big.json"))


@pytest.mark.parametrize("field,huge", [
    ("left", 2**70), ("right", 2**70), ("feature", 2**70), ("feature", -(10**400)),
    ("value", 10**400), ("threshold", -(10**400)), ("baseline", 10**400),
    ("n_features", 2**70),
])
def test_a_huge_integer_is_refused_naming_the_file(fitted, tmp_path, field, huge):
    # JSON integers have no bound: one past int64 or float range is a clear ValueError (what
    # `wikisum rank --learned` reports), not an OverflowError traceback.
    model, _ = fitted
    saved = learned.Learned(trees.from_sklearn(model)).to_dict()
    if field in ("baseline", "n_features"):
        saved["model"][field] = huge
    else:
        tree = saved["model"]["trees"][0]
        at = tree["leaf"].index(field != "value")  # a split reads left/right/feature
        tree[field][at] = huge
    path = tmp_path / "m.json"
    path.write_text(json.dumps(saved))
    with pytest.raises(ValueError, match=f"^{path}: the model does not check: .*{field}"):
        learned.load(str(path))
