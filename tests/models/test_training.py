"""Training runs with the toy model: schedule, resumption (bit-identical on CPU), stops on
non-finite losses, skip counts, corrupt shards."""

from __future__ import annotations

import json
import shutil
import signal
from collections import Counter
from pathlib import Path

import pytest
import torch
from torch import nn
from toys import (
    EMPTY_LEADS,
    TOY,
    Killed,
    Recording,
    config,
    log,
    losses,
    weights,
)

from wikisum.training import checkpoint
from wikisum.training import loop as training
from wikisum.training.batching import CorruptShardError
from wikisum.training.config import ConfigError
from wikisum.training.loop import NonFiniteLoss, learning_rate
from wikisum.workflows import cli

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
    loaded = checkpoint.load(str(out), factory=TOY)
    from wikisum.training.batching import prepare, read_examples, to_batch

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
    from wikisum.core.loader import Dataset

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
    assert checkpoint.latest_checkpoint(str(out)).name == "step-4.pt"
    assert max(losses(out)) == 5
    resumed = training.train(config(toy_data, out), TOY)
    assert resumed["resumed_from"] == 4
    steps = [r["step"] for r in log(out) if "loss" in r]
    assert steps == list(range(1, 9))  # steps after the checkpoint are logged once
    assert losses(out) == losses(whole)
    a, b = weights(whole), weights(out)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_sigterm_checkpoints_after_the_update_and_the_run_resumes_bit_identical(
        uninterrupted, toy_data, tmp_path):
    whole, _, _ = uninterrupted
    out = tmp_path / "preempted"
    stopped = training.train(config(toy_data, out), Recording(signal_at=9))  # update 5
    assert (stopped["stopped_by"], stopped["step"], stopped["complete"]) == ("SIGTERM", 5, False)
    assert checkpoint.latest_checkpoint(str(out)).name == "step-5.pt"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # the handler is gone again
    resumed = training.train(config(toy_data, out), TOY)
    assert resumed["resumed_from"] == 5 and resumed["complete"]
    assert losses(out) == losses(whole)
    a, b = weights(whole), weights(out)
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_time_based_checkpoint_is_written_between_step_checkpoints(toy_data, tmp_path):
    out = tmp_path / "timed"
    training.train(config(toy_data, out, steps=3, checkpoint_every=1000, keep_checkpoints=5,
                          checkpoint_minutes=1e-9), TOY)
    saved = [r["step"] for r in log(out) if r.get("event") == "checkpoint"]
    assert saved == [1, 2, 3]


def test_an_unreadable_last_checkpoint_falls_back_to_the_previous_one(uninterrupted, toy_data,
                                                                    tmp_path, capsys):
    whole, _, _ = uninterrupted
    out = tmp_path / "cut"
    shutil.copytree(whole, out)
    newest = checkpoint.latest_checkpoint(str(out))
    newest.write_bytes(newest.read_bytes()[:1000])  # a copy that stopped half-way
    loaded = checkpoint.load(str(out), factory=TOY)
    assert loaded.step == 6 and f"cannot read checkpoint {newest}" in capsys.readouterr().err
    again = training.train(config(toy_data, out), TOY)
    assert again["resumed_from"] == 6 and again["complete"]
    for path in out.glob("checkpoints/*.pt"):
        path.write_bytes(b"garbage")
    with pytest.raises(ValueError, match="no readable checkpoint"):
        checkpoint.load(str(out), factory=TOY)


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


def test_compile_wraps_the_training_steps_and_checkpoints_keep_the_plain_keys(
        uninterrupted, toy_data, tmp_path, monkeypatch):
    """compile=true: training steps call what torch.compile returns, while evaluation and the
    checkpoints use the plain module (no "_orig_mod." keys), so that a run resumes, decodes and
    exports as without it; a run may also be resumed with compile switched. torch.compile is
    stood in for by a module of OptimizedModule's shape (compiling on CPU is slow)."""
    made = []

    class Compiled(nn.Module):
        def __init__(self, module):
            super().__init__()
            self._orig_mod = module
            self.calls = 0

        def forward(self, *args, **kwargs):
            self.calls += 1
            return self._orig_mod(*args, **kwargs)

    def fake_compile(module, **options):
        made.append(Compiled(module))
        return made[-1]

    monkeypatch.setattr(training.torch, "compile", fake_compile)
    whole, _, _ = uninterrupted
    out = tmp_path / "compiled"
    first = training.train(config(toy_data, out, stop_after=3, compile=True), TOY)
    assert first["step"] == 3
    assert len(made) == 1 and made[0].calls == 6  # 3 updates of 2 batches; dev runs plain
    state = torch.load(out / "checkpoints" / "step-3.pt", weights_only=False)
    assert set(state["model"]) == set(weights(whole))
    resumed = training.train(config(toy_data, out), TOY)  # compile off: resumable
    assert resumed["step"] == 8
    assert losses(out) == losses(whole)  # the wrapper computes what the module computes


# ------------------------------------------------------------------------------------------
# Failures.


def test_a_non_finite_loss_stops_training_with_a_message(toy_data, tmp_path):
    out = tmp_path / "nan"
    cfg = config(toy_data, out, model_overrides={"poison_after": 4})
    with pytest.raises(NonFiniteLoss, match=r"loss nan at step 3 .*last checkpoint is .*step-2"):
        training.train(cfg, TOY)
    assert checkpoint.latest_checkpoint(str(out)).name == "step-2.pt"
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
