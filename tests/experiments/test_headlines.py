"""experiments/headlines/run.py: the plan of runs, the prefix baseline's ids and the analysis
over seeds (paired tests, the trend), on small files written here: nothing is trained."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def headlines():
    path = ROOT / "experiments" / "headlines" / "run.py"
    spec = importlib.util.spec_from_file_location("experiment_headlines", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[spec.name]


def test_plan_runs_every_model_per_seed_then_the_trend(headlines):
    jobs = headlines.plan(["SEQ2SEQ", "ADADEC"], [3, 7], [5000, 2500], ["SEQ2SEQ"])
    assert [(j.label, j.seed, j.train_pairs, j.all_beams) for j in jobs] == [
        ("ADADEC", 3, None, True), ("SEQ2SEQ", 3, None, True),
        ("ADADEC", 7, None, False), ("SEQ2SEQ", 7, None, False),
        ("SEQ2SEQ", 3, 5000, False), ("SEQ2SEQ", 3, 2500, False)]  # the longest first
    assert len({j.key for j in jobs}) == len(jobs)
    assert headlines.Job("SEQ2SEQ+WFE", 1, 2500).key == "seq2seq-wfe-2500-seed1"


def test_only_the_first_seed_decodes_every_beam(headlines):
    settings = headlines.Settings(data="d")
    assert headlines.decodes("SEQ2SEQ", settings, all_beams=True) == [(1, False), (5, False),
                                                                      (10, False)]
    assert headlines.decodes("SEQ2SEQ+WFE", settings, all_beams=False) == [(5, True),
                                                                           (5, False)]
    assert headlines.decodes("ADADEC", settings, all_beams=True) == [(5, False)]


def test_training_runs_stop_early_on_the_whole_dev_split(headlines):
    settings = headlines.Settings(data="d", eval_every=150, patience=2, steps=900)
    overrides = headlines.train_overrides("SEQ2SEQ", settings)
    assert {"eval_every=150", "patience=2", "dev_examples=null"} <= set(overrides)


def test_prefix_records_take_the_ids_of_convert_pairs(headlines, tmp_path):
    source, target = headlines.FILES["dev"]
    (tmp_path / source).write_text("one two three four five six seven eight nine\nshort one\n")
    (tmp_path / target).write_text("a title\nanother title\n")
    records = headlines.prefix_records(tmp_path, None)
    assert [r["id"] for r in records] == [1, 2]
    assert records[0]["prediction"] == "one two three four five six seven eight"
    assert records[1] == {"id": 2, "prediction": "short one", "reference": "another title"}


def _run(tmp_path: Path, label: str, seed: int, predictions: list[str], references: list[str],
         train_pairs=None) -> dict:
    path = tmp_path / f"{label}-{seed}-{train_pairs}.jsonl"
    path.write_text("".join(json.dumps({"id": i + 1, "prediction": p, "reference": r}) + "\n"
                            for i, (p, r) in enumerate(zip(predictions, references,
                                                           strict=True))))
    decode = {"beam": 5, "wfe_decoding": False, "predictions": str(path),
              "rouge_f": {"rouge1": 1.0, "rouge2": 0.0, "rougeL": 1.0}, "words": 2.0,
              "redundancy": {"share_repeating": 0.0}, "distinct_share": 1.0}
    return {"label": label, "seed": seed, "train_pairs": train_pairs, "parameters": 10,
            "best_dev_ppl": 5.0, "best_step": 100, "updates": 300, "train_seconds": 1.0,
            "dev_curve": [[100, 5.0], [200, 6.0]], "decodes": [decode]}


def test_analysis_pairs_systems_by_example_and_averages_seeds(headlines, tmp_path):
    refs = [f"alpha{i} beta{i} gamma{i}" for i in range(30)]
    good = [f"alpha{i} beta{i}" for i in range(30)]
    bad = [f"delta{i} beta{i}" for i in range(30)]
    runs = {"s0": _run(tmp_path, "SEQ2SEQ", 0, bad, refs),
            "s1": _run(tmp_path, "SEQ2SEQ", 1, bad, refs),
            "a0": _run(tmp_path, "ADADEC", 0, good, refs),
            "a1": _run(tmp_path, "ADADEC", 1, bad, refs),
            "t": _run(tmp_path, "ADADEC", 0, bad, refs, train_pairs=10),
            "failed": {"error": "boom"}}
    prefix = [{"id": i + 1, "prediction": p, "reference": r}
              for i, (p, r) in enumerate(zip(good, refs, strict=True))]
    analysis = headlines.analyse(runs, prefix, resamples=200, train_rows=40)

    assert set(analysis["systems"]) == {"SEQ2SEQ", "ADADEC"}
    assert analysis["systems"]["ADADEC"]["seeds"] == [0, 1]
    adadec = next(c for c in analysis["comparisons"]
                  if (c["a"], c["b"]) == ("SEQ2SEQ", "ADADEC"))
    assert adadec["examples"] == 30
    # averaged over seeds: half the ADADEC runs match two of three words, SEQ2SEQ one
    bad_r1, good_r1 = 2 * (1 / 2 * 1 / 3) / (1 / 2 + 1 / 3), 2 * (2 / 3) / (1 + 2 / 3)
    assert adadec["averaged_over_seeds"]["R-1"]["diff"] == pytest.approx((good_r1 - bad_r1) / 2)
    assert adadec["averaged_over_seeds"]["R-1"]["p_value"] < 0.05
    assert adadec["by_seed"][0]["R-1"]["diff"] == pytest.approx(good_r1 - bad_r1)
    assert adadec["by_seed"][1]["R-1"]["diff"] == pytest.approx(0.0)
    below = next(c for c in analysis["comparisons"] if (c["a"], c["b"]) == ("PREFIX", "SEQ2SEQ"))
    assert below["averaged_over_seeds"]["R-1"]["diff"] < 0
    trend = analysis["trend"]["ADADEC"]
    assert [(row["train_pairs"], row["all"]) for row in trend] == [(10, False), (40, True)]
    assert "SEQ2SEQ" not in analysis["trend"]


def test_dev_curves_are_read_from_the_run_log(headlines, tmp_path):
    (tmp_path / "log.jsonl").write_text(
        '{"step": 50, "loss": 3.0}\n{"step": 200, "dev_ppl": 40.5, "dev_nll": 3.7}\n'
        '{"step": 200, "event": "best", "path": "best.pt", "dev_ppl": 40.5}\n'
        '{"step": 400, "dev_ppl": 38.0}\n{"step": 400, "event": "end"}\n')
    assert headlines.dev_curve(str(tmp_path)) == [[200, 40.5], [400, 38.0]]


def test_reuse_keeps_early_stopped_runs_and_extends_those_that_used_their_budget(headlines,
                                                                               tmp_path):
    def folder(name: str, steps: int, result: dict | None) -> Path:
        path = tmp_path / name
        path.mkdir()
        spec = {"label": "SEQ2SEQ", "settings": {"steps": steps, "seed": 0}}
        (path / "spec.json").write_text(json.dumps(spec))
        if result is not None:
            (path / "result.json").write_text(json.dumps(result))
        return path

    def spec(steps: int, seed: int = 0) -> dict:
        return {"label": "SEQ2SEQ", "settings": {"steps": steps, "seed": seed}}

    stopped = folder("stopped", 4000, {"stopped_by": "early_stopping", "updates": 3000})
    used = folder("used", 4000, {"stopped_by": None, "updates": 4000})
    killed = folder("killed", 4000, None)
    assert headlines.reuse_decision(stopped, spec(4000)) == "keep"
    assert headlines.reuse_decision(stopped, spec(6000)) == "keep"
    assert headlines.reuse_decision(stopped, spec(3500)) == "new"  # a smaller budget
    assert headlines.reuse_decision(stopped, spec(6000, seed=1)) == "new"
    assert headlines.reuse_decision(used, spec(6000)) == "extend"
    assert headlines.reuse_decision(used, spec(4000)) == "keep"
    assert headlines.reuse_decision(killed, spec(4000)) == "new"
    assert headlines.reuse_decision(tmp_path / "absent", spec(4000)) == "new"
