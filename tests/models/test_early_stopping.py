"""Early stopping on the dev perplexity (TrainConfig.patience), with a toy model whose dev
perplexity falls, then rises: the run stops, keeps its best checkpoint (which loading a run
directory picks) and says why; a killed and resumed run keeps counting."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from toys import Killed, Toy, ToyConfig, config, log

from wikisum.models.base import ModelOutput
from wikisum.training import checkpoint
from wikisum.training import loop as training
from wikisum.training.config import ConfigError, make_config


class Overfits(Toy):
    """A toy whose dev NLL per token is ``1 + 0.1 |u - 4|`` after u updates (accumulate=2: two
    training forward passes an update): lowest at update 4, then rising. The count is a
    buffer, so a checkpoint holds it and a resumed run goes on where the killed one was."""

    def __init__(self, name: str, config_: ToyConfig):
        super().__init__(name, config_)
        self.register_buffer("passes", torch.zeros(()))

    def forward(self, batch) -> ModelOutput:
        out = super().forward(batch)
        if self.training:
            self.passes += 1
            return out
        nll = 1.0 + 0.1 * abs(float(self.passes) / 2 - 4)
        return ModelOutput(out.loss, out.target_tokens * nll, out.target_tokens)


class Factory:
    def __init__(self, crash_after: int | None = None):
        self.crash_after = crash_after

    def _arm(self, model: Overfits) -> Overfits:
        model.crash_after = self.crash_after
        return model

    def build(self, name, preset="base", **overrides):
        from toys import PRESETS

        return self._arm(Overfits(name, ToyConfig(**{**PRESETS[preset], **overrides})))

    def from_config(self, name, config_):
        return self._arm(Overfits(name, ToyConfig(**config_)))


def early(data: Path, out: Path, **changes):
    values = dict(steps=20, eval_every=2, checkpoint_every=3, keep_checkpoints=2, patience=2)
    values.update(changes)
    return config(data, out, **values)


def dev_ppls(run: Path) -> dict[int, float]:
    return {r["step"]: r["dev_ppl"] for r in log(run) if "dev_ppl" in r}


def test_the_run_stops_after_patience_evaluations_without_a_better_dev_perplexity(
        toy_data, tmp_path):
    out = tmp_path / "run"
    summary = training.train(early(toy_data, out), Factory())
    # dev NLL 1.2, 1.0 (the best), 1.2, 1.4: two evaluations without a better one
    assert dev_ppls(out) == pytest.approx({2: math.exp(1.2), 4: math.exp(1.0),
                                           6: math.exp(1.2), 8: math.exp(1.4)})
    assert (summary["step"], summary["stopped_by"], summary["complete"]) == (
        8, "early_stopping", False)
    assert summary["early_stopping"] == {
        "patience": 2, "stopped": True, "best_step": 4, "best_dev_ppl": pytest.approx(math.e),
        "evaluations_without_improvement": 2,
        "best_checkpoint": str(out / "checkpoints" / "best.pt")}
    stop = [r for r in log(out) if r.get("event") == "early_stop"]
    assert stop == [{"step": 8, "event": "early_stop", "patience": 2,
                     "evaluations_without_improvement": 2, "best_step": 4,
                     "best_dev_ppl": pytest.approx(math.e)}]
    assert [r["step"] for r in log(out) if r.get("event") == "best"] == [2, 4]
    assert json.loads((out / "summary.json").read_text())["stopped_by"] == "early_stopping"
    assert "best dev ppl 2.718 at step 4" in training.summary_line(summary)
    # The run directory stands for its best checkpoint; the last one is still there to resume.
    assert checkpoint.load(str(out), factory=Factory()).step == 4
    assert checkpoint.latest_checkpoint(str(out)).name == "step-8.pt"
    assert checkpoint.load(str(out / "checkpoints" / "step-8.pt"), factory=Factory()).step == 8


def test_a_killed_run_keeps_its_patience_counter(toy_data, tmp_path):
    whole = tmp_path / "whole"
    training.train(early(toy_data, whole), Factory())
    out = tmp_path / "killed"
    with pytest.raises(Killed):  # during update 7: the checkpoint of step 6 counted one eval
        training.train(early(toy_data, out), Factory(crash_after=12))
    assert checkpoint.latest_checkpoint(str(out)).name == "step-6.pt"
    resumed = training.train(early(toy_data, out), Factory())
    # A counter started afresh would take step 8 as its best and stop at step 12.
    assert (resumed["resumed_from"], resumed["step"], resumed["stopped_by"]) == (
        6, 8, "early_stopping")
    assert resumed["early_stopping"]["best_step"] == 4
    assert dev_ppls(out) == dev_ppls(whole)
    assert checkpoint.load(str(out), factory=Factory()).step == 4


def test_a_stopped_run_stays_stopped_unless_patience_is_raised(toy_data, tmp_path):
    out = tmp_path / "run"
    training.train(early(toy_data, out), Factory())
    again = training.train(early(toy_data, out), Factory())
    assert (again["resumed_from"], again["step"], again["stopped_by"]) == (
        8, 8, "early_stopping")
    more = training.train(early(toy_data, out, patience=3), Factory())
    assert (more["step"], more["stopped_by"]) == (10, "early_stopping")
    assert more["early_stopping"]["best_step"] == 4


def test_without_patience_the_run_trains_on_and_keeps_no_best_checkpoint(toy_data, tmp_path):
    out = tmp_path / "run"
    summary = training.train(early(toy_data, out, steps=10, patience=0), Factory())
    assert (summary["step"], summary["stopped_by"]) == (10, None)
    assert "early_stopping" not in summary
    assert not (out / "checkpoints" / "best.pt").exists()
    assert checkpoint.load(str(out), factory=Factory()).step == 10


def test_patience_is_a_train_setting_and_needs_evaluations(toy_data, tmp_path):
    cfg = make_config("toy", str(toy_data), str(tmp_path / "r"), factory=Factory(),
                      overrides=["patience=3"])
    assert cfg.patience == 3
    with pytest.raises(ConfigError, match="eval_every"):
        config(toy_data, tmp_path / "r", patience=2, eval_every=0)
    with pytest.raises(ConfigError, match="patience must be at least 0"):
        config(toy_data, tmp_path / "r", patience=-1)
