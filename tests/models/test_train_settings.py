"""Settings that fit the run: the automatic warmup and preset, warnings about settings that make
little sense, what a run says at start, log targets (jsonl, tensorboard, wandb), resuming from
the run's own settings, and the paths a run records."""

from __future__ import annotations

import importlib.machinery
import json
import os
import sys
import types
from pathlib import Path

import pytest
from toys import TOY, config, log

from wikisum.training import checkpoint, runlog, runpaths
from wikisum.training import loop as training
from wikisum.training.config import (
    ConfigError,
    TrainConfig,
    auto_preset,
    default_warmup,
    make_config,
    parse_log_to,
)

# ------------------------------------------------------------------------------------------
# Automatic settings.


@pytest.mark.parametrize(("steps", "warmup"), [(5, 1), (20, 2), (1000, 100), (20000, 2000),
                                               (40000, 4000), (500000, 4000)])
def test_default_warmup_is_4000_or_a_tenth_of_the_steps(steps, warmup):
    assert default_warmup(steps) == warmup


def test_auto_preset_is_small_on_cpu_and_base_on_cuda():
    assert (auto_preset("cpu"), auto_preset("cuda"), auto_preset("mps")) == ("tiny", "base",
                                                                             "tiny")


def test_a_new_run_settles_auto_settings_and_a_resumed_one_keeps_its_own(tmp_path):
    cfg = TrainConfig(model="toy", data="D", out="R", steps=20)
    assert (cfg.preset, cfg.warmup_steps) == ("auto", None)
    fresh = training.settle_auto(cfg, None, "cpu")
    assert (fresh.config.preset, fresh.config.warmup_steps) == ("tiny", 2)
    assert set(fresh.chosen) == {"preset", "warmup_steps"}
    assert training.settle_auto(cfg, None, "cuda").config.preset == "base"
    # resumed (with more steps, on another device): what the checkpoint says
    state = {"train_config": {"preset": "paper", "warmup_steps": 7}}
    resumed = training.settle_auto(TrainConfig(model="toy", data="D", out="R", steps=900),
                                   state, "cuda")
    assert (resumed.config.preset, resumed.config.warmup_steps, resumed.chosen) == (
        "paper", 7, {})
    given = TrainConfig(model="toy", data="D", out="R", preset="base", warmup_steps=3)
    assert training.settle_auto(given, None, "cpu").config == given


def test_a_short_run_reaches_its_peak_learning_rate(toy_data, tmp_path):
    out = tmp_path / "run"
    training.train(config(toy_data, out, warmup_steps=None, steps=20, stop_after=4), TOY)
    info = json.loads((out / "config.json").read_text())
    assert info["train_config"]["warmup_steps"] == 2
    lrs = {r["step"]: r["lr"] for r in log(out) if "lr" in r}
    assert lrs[2] == pytest.approx(0.05)  # the peak, at step 2 of 20
    # more steps on resume: the warmup the run started with stays
    training.train(config(toy_data, out, warmup_steps=None, steps=400, stop_after=1), TOY)
    state = checkpoint.read_checkpoint(checkpoint.latest_checkpoint(str(out)))
    assert (state["step"], state["train_config"]["warmup_steps"]) == (5, 2)


# ------------------------------------------------------------------------------------------
# What a run says.


def test_a_run_says_what_it_trains_and_warns_about_settings_that_make_no_sense(
        toy_data, tmp_path, capsys):
    training.train(config(toy_data, tmp_path / "run", steps=4, warmup_steps=4000,
                          batch_tokens=100_000, accumulate=1, sort_pool=64), TOY)
    err = capsys.readouterr().err
    assert "train: toy preset tiny" in err and "parameters on cpu" in err
    assert "warmup 4,000, lr 0.05" in err
    assert ("warning: warmup_steps=4000 is not less than steps=4: the learning rate rises all "
            "run and peaks at 5e-05 instead of lr=0.05 (leave warmup_steps unset for 1)") in err
    assert "fits in 1 batch(es) of batch_tokens=100,000" in err
    assert "train toy: 4 steps in" in err  # progress, closed (plain lines: not a terminal)


def test_sensible_settings_give_no_warning_and_an_estimate_after_five_updates(
        toy_data, tmp_path, capsys):
    training.train(config(toy_data, tmp_path / "run", steps=8, warmup_steps=None,
                          preset="auto"), TOY)
    err = capsys.readouterr().err
    assert "warning" not in err
    assert "preset tiny (auto on cpu; --preset to choose)" in err
    assert "warmup 1 (default: 4000 or 10% of steps, the lesser)" in err
    assert "over the first 5 updates: about" in err and "for the 3 left" in err
    assert "dev toy step 4 ppl" in err


# ------------------------------------------------------------------------------------------
# Log targets.


@pytest.mark.parametrize(("given", "parsed"), [
    ("jsonl", ("jsonl",)), ("tensorboard", ("jsonl", "tensorboard")),
    ("wandb,jsonl, tensorboard", ("jsonl", "wandb", "tensorboard")),
    (["wandb", "wandb"], ("jsonl", "wandb")), ("", ("jsonl",))])
def test_log_targets_parse_from_a_list_or_commas(given, parsed):
    assert parse_log_to(given) == parsed


def test_an_unknown_log_target_is_an_error():
    with pytest.raises(ConfigError, match="unknown log target 'mlflow'; choose from jsonl, "
                                          "tensorboard, wandb"):
        TrainConfig(model="toy", data="D", out="R", log_to="jsonl,mlflow")


def test_a_log_target_that_is_not_installed_is_a_clear_error(toy_data, tmp_path, monkeypatch):
    real = runlog.importlib.util.find_spec
    monkeypatch.setattr(runlog.importlib.util, "find_spec",
                        lambda name: None if name == "tensorboard" else real(name))
    with pytest.raises(ConfigError, match=r"--log-to tensorboard needs the tensorboard package, "
                                          r"which is not installed: pip install "
                                          r"'wikisum\[tensorboard\]'"):
        training.train(config(toy_data, tmp_path / "run", log_to="tensorboard"), TOY)
    assert not (tmp_path / "run").exists()  # before anything was written


def test_the_old_tensorboard_setting_means_a_log_target(toy_data, tmp_path):
    cfg = make_config("toy", str(toy_data), str(tmp_path / "r"), factory=TOY,
                      overrides=["tensorboard=true", "log_to=wandb"])
    assert cfg.log_to == ("jsonl", "wandb", "tensorboard")
    cfg = make_config("toy", str(toy_data), str(tmp_path / "r"), factory=TOY,
                      overrides=["tensorboard=false"])
    assert cfg.log_to == ("jsonl",)


class FakeWandb:
    def __init__(self):
        self.inits, self.logged, self.finished = [], [], 0

    def init(self, **kwargs):
        self.inits.append(kwargs)
        return self

    def log(self, values, step):
        self.logged.append((step, values))

    def finish(self):
        self.finished += 1


def test_wandb_gets_the_scalars_and_a_resumed_run_logs_to_the_same_wandb_run(
        toy_data, tmp_path, monkeypatch):
    fake = FakeWandb()
    module = types.ModuleType("wandb")
    module.__spec__ = importlib.machinery.ModuleSpec("wandb", None)
    module.init = fake.init
    monkeypatch.setitem(sys.modules, "wandb", module)
    monkeypatch.delenv("WANDB_PROJECT", raising=False)
    out = tmp_path / "run"
    training.train(config(toy_data, out, steps=4, stop_after=2, log_to="wandb"), TOY)
    training.train(config(toy_data, out, steps=4, log_to=["wandb"]), TOY)
    first, second = fake.inits
    assert first["id"] == second["id"] == json.loads((out / "wandb.json").read_text())["id"]
    assert (first["project"], first["resume"], first["name"]) == ("wikisum", "allow", "run")
    assert first["config"]["steps"] == 4 and fake.finished == 2
    steps = [step for step, values in fake.logged if "loss" in values]
    assert steps == [1, 2, 3, 4]
    assert all(isinstance(v, float | int) for _, values in fake.logged for v in values.values())
    assert (out / "log.jsonl").exists()  # jsonl is always written


# ------------------------------------------------------------------------------------------
# Resuming from the run's own settings; the paths a run records.


def test_a_run_records_its_dataset_relative_to_itself(toy_data, tmp_path):
    out = tmp_path / "run"
    training.train(config(toy_data, out, steps=2), TOY)
    info = json.loads((out / "config.json").read_text())
    expected = os.path.relpath(toy_data, out)
    assert info[runpaths.RELATIVE_TO] == "run"
    assert (info["train_config"]["data"], info["train_config"]["out"]) == (expected, ".")
    state = checkpoint.read_checkpoint(checkpoint.latest_checkpoint(str(out)))
    assert state["train_config"]["data"] == expected
    loaded = checkpoint.load(str(out), factory=TOY)
    assert Path(loaded.train_config.data).resolve() == toy_data.resolve()
    assert loaded.train_config.out == str(out)


def test_make_config_with_only_the_run_resumes_it_with_its_settings(toy_data, tmp_path):
    out = tmp_path / "run"
    training.train(config(toy_data, out, steps=4, stop_after=2, lr=0.03,
                          model_overrides={"d_model": 6}), TOY)
    cfg = make_config(out=str(out), factory=TOY)
    assert (cfg.model, cfg.preset, cfg.lr, cfg.steps, cfg.model_overrides) == (
        "toy", "tiny", 0.03, 4, {"d_model": 6})
    assert cfg.stop_after is None and cfg.device == "auto" and cfg.out == str(out)
    assert Path(cfg.data).resolve() == toy_data.resolve()
    # flags and key=values (in either spelling) still win
    cfg = make_config(out=str(out), options={"steps": 9}, overrides=["train.lr=0.01",
                                                                     "model.d_model=5"],
                      factory=TOY)
    assert (cfg.steps, cfg.lr, cfg.model_overrides) == (9, 0.01, {"d_model": 5})
    summary = training.train(make_config(out=str(out), options={"device": "cpu"},
                                         factory=TOY), TOY)
    assert (summary["step"], summary["resumed_from"]) == (4, 2)


def test_a_run_whose_dataset_is_gone_asks_for_data(toy_data, tmp_path):
    out = tmp_path / "run"
    training.train(config(toy_data, out, steps=2), TOY)
    info = json.loads((out / "config.json").read_text())
    info["train_config"]["data"] = "../elsewhere/data"
    (out / "config.json").write_text(json.dumps(info))
    with pytest.raises(ConfigError, match=r"the run's dataset '../elsewhere/data' is not found "
                                          r"\(tried .*elsewhere/data.*\): give --data DIR"):
        make_config(out=str(out), factory=TOY)
    assert make_config(data=str(toy_data), out=str(out), factory=TOY).data == str(toy_data)


def test_stored_paths_are_relative_to_the_run_unless_that_cannot_work(tmp_path, monkeypatch):
    run, data = tmp_path / "runs" / "r", tmp_path / "build" / "data"
    assert runpaths.store_path(str(data), run) == os.path.join("..", "..", "build", "data")
    assert runpaths.store_path("gs://bucket/data", run) == "gs://bucket/data"
    monkeypatch.chdir(tmp_path)
    assert runpaths.store_path("build/data", "runs/r") == os.path.join("..", "..", "build",
                                                                         "data")
    # on another filesystem than the run: absolute (moving one does not move the other)
    monkeypatch.setattr(runpaths, "_device", lambda path: 1 if "build" in str(path) else 2)
    assert runpaths.store_path("build/data", "runs/r") == str(data)


def test_an_older_run_reads_its_working_directory_paths_first(tmp_path, monkeypatch):
    for where in ("here/data", "runs/r/data", "runs/data"):
        (tmp_path / where).mkdir(parents=True)
        (tmp_path / where / "dataset.json").write_text("{}")
    monkeypatch.chdir(tmp_path)
    # written before paths were relative to the run: as written first
    assert runpaths.resolve_dataset("here/data", "runs/r", False)[0] == "here/data"
    assert runpaths.resolve_dataset("data", "runs/r", False)[0] == os.path.join("runs", "r",
                                                                                "data")
    # relative to the run first
    assert runpaths.resolve_dataset("../data", "runs/r", True)[0] == os.path.join("runs",
                                                                                   "data")
    assert runpaths.resolve_dataset("missing", "runs/r", True) == (
        None, [os.path.join("runs", "r", "missing"), "missing"])


def test_the_log_to_flag_repeats_or_takes_commas(toy_registry, toy_data, tmp_path, monkeypatch):
    from wikisum.workflows import cli

    seen = []

    def fake_train(config):
        seen.append(config)
        raise ValueError("stopped here")

    monkeypatch.setattr(training, "train", fake_train)
    with pytest.raises(SystemExit, match="stopped here"):
        cli.main(["train", "--model", "toy", "--data", str(toy_data), "--out",
                  str(tmp_path / "r"), "--log-to", "wandb,tensorboard", "--log-to", "jsonl"])
    assert seen[0].log_to == ("jsonl", "wandb", "tensorboard")
    assert (seen[0].preset, seen[0].warmup_steps) == ("auto", None)
