"""Settings of a run: key=value, flags and config files, typed, with clear errors."""

from __future__ import annotations

import pytest
from toys import (
    TOY,
)

from wikisum.training.config import ConfigError, TrainConfig, make_config, parse_value

# ------------------------------------------------------------------------------------------
# Settings.


@pytest.mark.parametrize(("raw", "value"), [
    ("1e-3", 0.001), ("3", 3), ("true", True), ("null", None), ("tfidf", "tfidf"),
    ("[0.9, 0.99]", [0.9, 0.99]), ("'quoted'", "quoted"), ("a: b", "a: b")])
def test_values_are_json_or_yaml_scalars(raw, value):
    assert parse_value(raw) == value


def test_key_value_overrides_reach_both_configs():
    cfg = make_config("toy", "D", "R", overrides=[
        "lr=1e-3", "dropout=0.3", "model.d_model=10", "train.seed=5", "accumulate=2",
        "adam_betas=[0.9, 0.99]", "max_target_tokens=null", "steps=1e3"], factory=TOY)
    assert (cfg.lr, cfg.seed, cfg.accumulate, cfg.steps) == (0.001, 5, 2, 1000)
    assert cfg.adam_betas == (0.9, 0.99) and cfg.max_target_tokens is None
    assert cfg.model_overrides == {"dropout": 0.3, "d_model": 10}
    assert isinstance(cfg.lr, float) and isinstance(cfg.steps, int)


@pytest.mark.parametrize(("item", "message"), [
    ("bogus=1", "unknown setting 'bogus'"),
    ("warmup=10", "did you mean warmup_steps"),
    ("model.nope=1", "no field 'nope' in model config"),
    ("train.dropout=0.1", "no field 'dropout' in TrainConfig"),
    ("seed=1", "write train.seed or model.seed"),
    ("steps=many", "steps='many': expected int"),
    ("lr=true", "lr=True: expected float"),
    ("adam_betas=[1]", "expected 2 values"),
    ("no_equals_sign", "'no_equals_sign' is not a key=value"),
    ("steps=0", "steps must be at least 1"),
])
def test_bad_settings_are_clear_errors(item, message):
    with pytest.raises(ConfigError, match=message):
        make_config("toy", "D", "R", overrides=[item], factory=TOY)


def test_an_unknown_model_is_a_clear_error(toy_data):
    with pytest.raises(ValueError, match="unknown model 'nope'"):
        make_config("nope", "D", "R")


CONTENTS = {
    "yaml": "model: toy\ndata: D\nout: R\nsteps: 7\nlr: 0.002\nadam_betas: [0.9, 0.99]\n"
            "model:\n  dropout: 0.2\n",
    "toml": 'data = "D"\nout = "R"\nsteps = 7\nlr = 0.002\nadam_betas = [0.9, 0.99]\n'
            "[model]\ndropout = 0.2\n",
    "json": '{"data": "D", "out": "R", "steps": 7, "lr": 0.002, "adam_betas": [0.9, 0.99], '
            '"model": {"dropout": 0.2}}',
}


@pytest.mark.parametrize("suffix", ["yaml", "toml", "json"])
def test_config_files_in_every_format(suffix, tmp_path):
    path = tmp_path / f"run.{suffix}"
    # YAML maps a repeated key to its last value; the name comes from the argument here.
    path.write_text(CONTENTS[suffix].replace("model: toy\n", ""))
    cfg = make_config("toy", file=str(path), factory=TOY)
    assert cfg == TrainConfig(model="toy", data="D", out="R", steps=7, lr=0.002,
                              adam_betas=(0.9, 0.99), model_overrides={"dropout": 0.2})


def test_flags_override_the_file_and_key_values_override_flags(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{"model": "toy", "data": "D", "out": "R", "steps": 7, "lr": 0.5}')
    cfg = make_config(file=str(path), options={"steps": 9, "preset": None},
                               overrides=["lr=0.25"], factory=TOY)
    assert (cfg.model, cfg.steps, cfg.lr, cfg.preset) == ("toy", 9, 0.25, "auto")


@pytest.mark.parametrize(("name", "text", "message"), [
    ("run.ini", "x", "unknown format '.ini'"),
    ("run.yaml", "steps: [1\n", "does not parse"),
    ("run.toml", "steps = = 1\n", "does not parse"),
    ("run.json", "{steps: 1}", "does not parse"),
    ("run.yaml", "- 1\n- 2\n", "must hold a mapping"),
])
def test_bad_config_files_are_named(name, text, message, tmp_path):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as err:
        make_config("toy", file=str(path), factory=TOY)
    assert str(path) in str(err.value)


def test_wfe_needs_a_model_with_an_estimator():
    with pytest.raises(ConfigError, match="no word-frequency estimator"):
        make_config("toy", "D", "R", wfe=True, factory=TOY)


# ------------------------------------------------------------------------------------------
# Whole articles: the target, the inputs and the length policy.


@pytest.mark.parametrize(("settings", "limit"), [
    ({}, (None, "cut")),
    ({"max_target_tokens": 24}, (24, "cut")),
    ({"target": "article"}, (2192, "skip")),
    ({"target": "article", "max_target_tokens": 6000}, (6000, "skip")),
    ({"target": "article", "long_targets": "cut"}, (2192, "cut")),
    ({"max_target_tokens": 24, "long_targets": "skip"}, (24, "skip")),
])
def test_the_target_limit_is_the_papers_for_articles_and_none_for_leads(settings, limit):
    assert TrainConfig("toy", "D", "R", **settings).target_limit() == limit


@pytest.mark.parametrize(("item", "message"), [
    ("target=headline", "target must be one of lead, article"),
    ("inputs=abstract", "inputs must be one of ranked, title"),
    ("long_targets=drop", "long_targets must be one of auto, skip, cut"),
])
def test_bad_targets_inputs_and_policies_are_clear_errors(item, message):
    with pytest.raises(ConfigError, match=message):
        make_config("toy", "D", "R", overrides=[item], factory=TOY)


def test_a_run_saved_before_targets_reads_as_a_lead_run():
    old = {"model": "toy", "data": "D", "out": "R", "max_target_tokens": 24}
    config = TrainConfig.from_dict(old)
    assert (config.target, config.inputs, config.target_limit()) == ("lead", "ranked",
                                                                      (24, "cut"))
