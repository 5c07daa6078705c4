"""Training runs with a toy model: schedule, resumption (bit-identical on CPU), stops on
non-finite losses, skip counts, corrupt shards, settings from files and key=value, load()."""

from __future__ import annotations

import json
import random
import shutil
import sys
import types
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from wikisum import models
from wikisum.models import training
from wikisum.models.base import PAD_ID, Batch, ModelOutput
from wikisum.models.batching import CorruptShardError
from wikisum.models.training import ConfigError, NonFiniteLoss, TrainConfig, learning_rate
from wikisum.pipeline import schemas, shards, vocab
from wikisum.workflows import cli

# ------------------------------------------------------------------------------------------
# A toy model with the interface of models.base, and a family module for the registry.


@dataclass
class ToyConfig:
    vocab_size: int = 64
    d_model: int = 8
    dropout: float = 0.1
    seed: int = 0  # shares a name with TrainConfig.seed, to test ambiguous settings
    bos_id: int = 2
    eos_id: int = 3
    poison_after: int | None = None  # training forward passes after which the loss is NaN


PRESETS = {"tiny": {"d_model": 8}, "base": {"d_model": 12}, "paper": {"d_model": 16}}


@dataclass
class ToyState:
    context: torch.Tensor  # (N, d)
    first_logprobs: torch.Tensor  # (N, V)


class Killed(Exception):
    """Stands for the process being killed mid-run."""


class Toy(nn.Module):
    """Mean of the source embeddings + the previous target token -> the next token."""

    def __init__(self, name: str, config: ToyConfig):
        super().__init__()
        self.name, self.config = name, config
        self.embed = nn.Embedding(config.vocab_size, config.d_model)
        self.proj = nn.Linear(2 * config.d_model, config.vocab_size)
        self.drop = nn.Dropout(config.dropout)
        self.calls = 0
        self.crash_after: int | None = None
        self.shapes: list[tuple[int, int, int]] = []  # (B, S, T) of training batches

    def _context(self, batch: Batch) -> torch.Tensor:
        mask = (batch.sources != PAD_ID).unsqueeze(-1).float()  # (B, S, 1)
        return (self.embed(batch.sources) * mask).sum(1) / mask.sum(1).clamp_min(1)  # (B, d)

    def _logprobs(self, context: torch.Tensor, prev: torch.Tensor) -> torch.Tensor:
        h = torch.cat([context.unsqueeze(1).expand(-1, prev.shape[1], -1), self.embed(prev)], -1)
        return F.log_softmax(self.proj(self.drop(h)), -1)  # (B, T, V)

    def forward(self, batch: Batch) -> ModelOutput:
        if self.training:
            self.calls += 1
            self.shapes.append((batch.size, batch.sources.shape[1], batch.targets.shape[1]))
            if self.crash_after is not None and self.calls > self.crash_after:
                raise Killed(f"killed at forward pass {self.calls}")
        bos = torch.full((batch.size, 1), self.config.bos_id, dtype=torch.long)
        prev = torch.cat([bos, batch.targets[:, :-1]], 1)  # (B, T)
        logp = self._logprobs(self._context(batch), prev)
        nll = -logp.gather(-1, batch.targets.unsqueeze(-1)).squeeze(-1)  # (B, T)
        mask = batch.targets != PAD_ID
        total, tokens = (nll * mask).sum(), mask.sum()
        loss = total / tokens
        poison = self.config.poison_after
        if self.training and poison is not None and self.calls > poison:
            loss = loss * float("nan")
        return ModelOutput(loss, total.detach(), tokens)

    def start(self, batch: Batch) -> ToyState:
        context = self._context(batch)
        bos = torch.full((batch.size, 1), self.config.bos_id, dtype=torch.long)
        return ToyState(context, self._logprobs(context, bos)[:, 0])

    def step(self, state: ToyState, tokens: torch.Tensor):
        return self._logprobs(state.context, tokens.unsqueeze(1))[:, 0], state

    def reorder(self, state: ToyState, index: torch.Tensor) -> ToyState:
        return ToyState(state.context.index_select(0, index),
                        state.first_logprobs.index_select(0, index))


def toy_build(name: str, preset: str = "base", **overrides) -> Toy:
    return Toy(name, ToyConfig(**{**PRESETS[preset], **overrides}))


def toy_from_config(name: str, config: dict) -> Toy:
    return Toy(name, ToyConfig(**config))


TOY = types.SimpleNamespace(build=toy_build, from_config=toy_from_config)


class Recording:
    """A factory that keeps the models it makes (and can arm them to crash)."""

    def __init__(self, crash_after: int | None = None):
        self.made: list[Toy] = []
        self.crash_after = crash_after

    def _keep(self, model: Toy) -> Toy:
        model.crash_after = self.crash_after
        self.made.append(model)
        return model

    def build(self, name, preset="base", **overrides):
        return self._keep(toy_build(name, preset, **overrides))

    def from_config(self, name, config):
        return self._keep(toy_from_config(name, config))


@pytest.fixture
def toy_registry(monkeypatch):
    """`--model toy` through the real registry (models.build / from_config)."""
    module = types.ModuleType("wikisum_toy_family")
    module.build, module.from_config = toy_build, toy_from_config
    monkeypatch.setitem(sys.modules, "wikisum_toy_family", module)
    monkeypatch.setitem(models.FAMILIES, "toy", "wikisum_toy_family")


# ------------------------------------------------------------------------------------------
# A small ranked dataset: 30 train articles (3 with an empty lead) in two shards, 6 dev.

EMPTY_LEADS = {5, 17, 23}


def article(i: int, split: str, rng: random.Random, size: int) -> dict:
    def ids(lo, hi):
        return [rng.randrange(6, size) for _ in range(rng.randint(lo, hi))]

    return {"id": i, "title": f"title {i}", "split": split, "title_ids": ids(1, 2),
            "lead": "lead", "lead_ids": [] if i in EMPTY_LEADS else ids(2, 8),
            "reference_urls": ["u"],
            "paragraphs": [{"text": "p", "ids": ids(2, 6), "reference": 0,
                            "sources": ["citations"]} for _ in range(3)],
            "rankings": [{"extractor": "tfidf", "corpus": "combined", "order": [2, 0, 1]}]}


@pytest.fixture(scope="module")
def toy_data(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("toy_data")
    rng = random.Random(0)
    words = ["alpha", "beta", "gamma", "delta", "river", "stone", "north", "city", "house",
             "green", "small", "light"]
    texts = [" ".join(rng.choice(words) for _ in range(10)) for _ in range(300)]
    ids = vocab.train_vocab(texts, str(root / "vocab.model"), size=60)
    size = vocab.load(str(root / "vocab.model")).get_piece_size()
    data = root / "data"
    data.mkdir()
    splits = {"train": [range(0, 15), range(15, 30)], "dev": [range(100, 106)],
              "test": [range(200, 204)]}
    for split, parts in splits.items():
        for k, part in enumerate(parts):
            rows = [article(i, split, rng, size) for i in part]
            shards.write_table(str(data / f"{split}-{k:05d}-of-{len(parts):05d}.parquet"), rows,
                               schemas.RANKED)
    info = {"format": 1, "vocab": str(root / "vocab.model"), "vocab_size": size,
            "special_ids": ids.__dict__, "extractors": ["tfidf"], "corpora": ["combined"]}
    (data / "dataset.json").write_text(json.dumps(info))
    return data


def config(data: Path, out: Path, **changes) -> TrainConfig:
    values = dict(model="toy", data=str(data), out=str(out), preset="tiny", steps=8,
                  batch_tokens=60, shuffle_buffer=8, sort_pool=8, lr=0.05, warmup_steps=3,
                  accumulate=2, log_every=1, eval_every=4, dev_examples=None,
                  checkpoint_every=2, keep_checkpoints=2, tensorboard=False, device="cpu")
    values.update(changes)
    return TrainConfig(**values)


def log(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]


def losses(run: Path) -> dict[int, float]:
    return {r["step"]: r["loss"] for r in log(run) if "loss" in r}


def weights(run: Path) -> dict[str, torch.Tensor]:
    return training.load(str(run), factory=TOY).model.state_dict()


@pytest.fixture(scope="module")
def uninterrupted(toy_data, tmp_path_factory) -> tuple[Path, dict, Recording]:
    out = tmp_path_factory.mktemp("runs") / "whole"
    factory = Recording()
    return out, training.train(config(toy_data, out), factory), factory


# ------------------------------------------------------------------------------------------
# The learning rate.


def test_learning_rate_warms_up_linearly_then_decays_as_inverse_sqrt():
    got = [learning_rate(s, 2.0, 4) for s in (1, 2, 3, 4, 16, 64)]
    assert got == pytest.approx([0.5, 1.0, 1.5, 2.0, 1.0, 0.5])


def test_update_k_runs_at_the_schedule_value_of_step_k():
    param = nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([param], lr=2.0)
    sched = training.scheduler(opt, warmup=4)
    used = []
    for _ in range(6):
        used.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert used == pytest.approx([learning_rate(k, 2.0, 4) for k in range(1, 7)])


# ------------------------------------------------------------------------------------------
# A run.


def test_a_run_is_self_contained_and_logs_every_step(uninterrupted, toy_data):
    out, summary, _ = uninterrupted
    assert summary["step"] == 8 and summary["complete"]
    assert (out / "vocab.model").read_bytes() == (toy_data.parent / "vocab.model").read_bytes()
    info = json.loads((out / "config.json").read_text())
    assert info["model"] == "toy" and info["model_config"]["d_model"] == 8
    assert info["train_config"]["lr"] == 0.05
    steps = [r for r in log(out) if "loss" in r]
    assert [r["step"] for r in steps] == list(range(1, 9))
    for r in steps:
        assert r["lr"] == pytest.approx(learning_rate(r["step"], 0.05, 3))
        assert r["tokens_per_s"] > 0 and r["loss"] > 0
    dev = [r for r in log(out) if "dev_ppl" in r]
    assert [r["step"] for r in dev] == [4, 8] and summary["dev"] == dev[-1]


def test_checkpoints_keep_the_last_k_and_leave_no_temporary_file(uninterrupted):
    out, summary, _ = uninterrupted
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-6.pt", "step-8.pt"]
    assert summary["checkpoint"] == str(out / "checkpoints" / "step-8.pt")


def test_batches_respect_the_token_budget(uninterrupted):
    _, _, factory = uninterrupted
    shapes = factory.made[-1].shapes  # made[0] only had its config read (meta device)
    assert len(shapes) == 16  # 8 updates x 2 accumulated batches
    assert all(b * (s + t) <= 60 for b, s, t in shapes)
    assert max(b for b, _, _ in shapes) > 1


def test_empty_targets_are_counted_and_reported(uninterrupted):
    out, summary, _ = uninterrupted
    epochs = [r for r in log(out) if r.get("event") == "epoch_end"]
    assert epochs, "8 updates should cross an epoch of 27 examples"
    assert epochs[0]["skipped"] == {"empty_target": len(EMPTY_LEADS)}
    assert epochs[0]["examples"] == 30 - len(EMPTY_LEADS)
    assert summary["skipped"]["empty_target"] >= len(EMPTY_LEADS)
    assert [r for r in log(out) if r.get("event") == "end"][0]["skipped"] == summary["skipped"]


def test_dev_perplexity_is_per_target_wordpiece(uninterrupted, toy_data):
    out, summary, _ = uninterrupted
    loaded = training.load(str(out), factory=TOY)
    from wikisum.models.batching import prepare, read_examples, to_batch

    nll = tokens = 0.0
    with torch.no_grad():
        for ex in read_examples(loaded_dataset(toy_data), "dev", "tfidf", "combined", 500):
            out_ = loaded.model(to_batch([prepare(ex, 3, Counter())]))
            nll += float(out_.target_nll)
            tokens += float(out_.target_tokens)
    assert summary["dev"]["dev_tokens"] == tokens
    assert summary["dev"]["dev_ppl"] == pytest.approx(torch.tensor(nll / tokens).exp().item(),
                                                      rel=1e-5)


def loaded_dataset(data: Path):
    from wikisum.pipeline.loader import Dataset

    return Dataset(str(data))


# ------------------------------------------------------------------------------------------
# Resumption.


def test_a_stopped_run_resumes_with_the_same_losses(uninterrupted, toy_data, tmp_path):
    whole, _, _ = uninterrupted
    out = tmp_path / "stopped"
    first = training.train(config(toy_data, out, stop_after=3), TOY)
    assert first["step"] == 3 and not first["complete"]
    assert (out / "checkpoints" / "step-3.pt").exists()
    second = training.train(config(toy_data, out), TOY)
    assert second["resumed_from"] == 3 and second["step"] == 8
    assert losses(out) == losses(whole)  # bit-identical floats, steps 1..8
    assert second["dev"] == pytest.approx(training_dev(whole))
    a, b = weights(whole), weights(out)
    assert all(torch.equal(a[k], b[k]) for k in a)


def training_dev(run: Path) -> dict:
    return json.loads((run / "summary.json").read_text())["dev"]


def test_a_killed_run_resumes_from_its_last_checkpoint(uninterrupted, toy_data, tmp_path):
    whole, _, _ = uninterrupted
    out = tmp_path / "killed"
    with pytest.raises(Killed):  # during update 6 (forward passes 11 and 12)
        training.train(config(toy_data, out), Recording(crash_after=10))
    assert training.latest_checkpoint(str(out)).name == "step-4.pt"
    assert max(losses(out)) == 5
    resumed = training.train(config(toy_data, out), TOY)
    assert resumed["resumed_from"] == 4
    steps = [r["step"] for r in log(out) if "loss" in r]
    assert steps == list(range(1, 9))  # steps after the checkpoint are logged once
    assert losses(out) == losses(whole)
    a, b = weights(whole), weights(out)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_resuming_with_other_settings_is_an_error(uninterrupted, toy_data, tmp_path):
    out = tmp_path / "changed"
    training.train(config(toy_data, out, stop_after=1), TOY)
    with pytest.raises(ConfigError, match=r"lr: 0.05 -> 0.1"):
        training.train(config(toy_data, out, lr=0.1), TOY)


def test_a_finished_run_is_not_trained_further(uninterrupted, toy_data):
    out, _, _ = uninterrupted
    again = training.train(config(toy_data, out), TOY)
    assert again["resumed_from"] == 8 and again["step"] == 8
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-6.pt", "step-8.pt"]


# ------------------------------------------------------------------------------------------
# Failures.


def test_a_non_finite_loss_stops_training_with_a_message(toy_data, tmp_path):
    out = tmp_path / "nan"
    cfg = config(toy_data, out, model_overrides={"poison_after": 4})
    with pytest.raises(NonFiniteLoss, match=r"loss nan at step 3 .*last checkpoint is .*step-2"):
        training.train(cfg, TOY)
    assert training.latest_checkpoint(str(out)).name == "step-2.pt"
    assert log(out)[-1] == {"step": 3, "event": "non_finite", "detail": "loss nan"}


def test_the_command_exits_non_zero_on_a_non_finite_loss(toy_data, tmp_path, toy_registry):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["train", "--model", "toy", "--data", str(toy_data), "--out",
                  str(tmp_path / "r"), "--preset", "tiny", "--steps", "5", "--device", "cpu",
                  "model.poison_after=2", "warmup_steps=2", "batch_tokens=60"])
    assert "wikisum train: loss nan at step 3" in str(exit_.value.code)


def test_a_corrupt_shard_is_named(toy_data, tmp_path, toy_registry):
    data = tmp_path / "data"
    shutil.copytree(toy_data, data)
    bad = data / "train-00001-of-00002.parquet"
    bad.write_bytes(b"not parquet at all")
    with pytest.raises(CorruptShardError, match=str(bad)):
        training.train(config(data, tmp_path / "r", sort_pool=64), TOY)
    with pytest.raises(SystemExit, match=str(bad)):
        cli.main(["train", "--model", "toy", "--data", str(data), "--out",
                  str(tmp_path / "r2"), "--preset", "tiny", "--device", "cpu", "sort_pool=64"])


# ------------------------------------------------------------------------------------------
# Settings.


@pytest.mark.parametrize(("raw", "value"), [
    ("1e-3", 0.001), ("3", 3), ("true", True), ("null", None), ("tfidf", "tfidf"),
    ("[0.9, 0.99]", [0.9, 0.99]), ("'quoted'", "quoted"), ("a: b", "a: b")])
def test_values_are_json_or_yaml_scalars(raw, value):
    assert training.parse_value(raw) == value


def test_key_value_overrides_reach_both_configs():
    cfg = training.make_config("toy", "D", "R", overrides=[
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
        training.make_config("toy", "D", "R", overrides=[item], factory=TOY)


def test_an_unknown_model_is_a_clear_error(toy_data):
    with pytest.raises(ValueError, match="unknown model 'nope'"):
        training.make_config("nope", "D", "R")


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
    cfg = training.make_config("toy", file=str(path), factory=TOY)
    assert cfg == TrainConfig(model="toy", data="D", out="R", steps=7, lr=0.002,
                              adam_betas=(0.9, 0.99), model_overrides={"dropout": 0.2})


def test_flags_override_the_file_and_key_values_override_flags(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{"model": "toy", "data": "D", "out": "R", "steps": 7, "lr": 0.5}')
    cfg = training.make_config(file=str(path), options={"steps": 9, "preset": None},
                               overrides=["lr=0.25"], factory=TOY)
    assert (cfg.model, cfg.steps, cfg.lr, cfg.preset) == ("toy", 9, 0.25, "base")


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
        training.make_config("toy", file=str(path), factory=TOY)
    assert str(path) in str(err.value)


def test_wfe_needs_a_model_with_an_estimator():
    with pytest.raises(ConfigError, match="no word-frequency estimator"):
        training.make_config("toy", "D", "R", wfe=True, factory=TOY)


# ------------------------------------------------------------------------------------------
# load().


def test_load_restores_model_configs_and_tokenizer(uninterrupted, toy_data):
    out, _, _ = uninterrupted
    loaded = training.load(str(out), factory=TOY)
    ckpt = torch.load(out / "checkpoints" / "step-8.pt", weights_only=True)
    assert not loaded.model.training
    assert loaded.name == "toy" and loaded.step == 8
    assert loaded.config == ToyConfig(**ckpt["model_config"])
    assert loaded.train_config == config(toy_data, out)
    assert all(torch.equal(v, ckpt["model"][k]) for k, v in loaded.model.state_dict().items())
    assert loaded.tokenizer.get_piece_size() == json.loads(
        (toy_data / "dataset.json").read_text())["vocab_size"]
    same = training.load(str(out / "checkpoints" / "step-6.pt"), factory=TOY)
    assert same.step == 6


def test_load_without_a_checkpoint_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint in"):
        training.load(str(tmp_path), factory=TOY)
    with pytest.raises(FileNotFoundError, match="neither a run directory"):
        training.load(str(tmp_path / "missing"), factory=TOY)


def test_load_names_an_unreadable_checkpoint(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    bad = tmp_path / "checkpoints" / "step-3.pt"
    bad.write_bytes(b"garbage")
    with pytest.raises(ValueError, match=f"cannot read checkpoint {bad}"):
        training.load(str(tmp_path), factory=TOY)
