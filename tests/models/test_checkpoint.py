"""load(): a trained model, its configs and tokenizer from a run or a checkpoint file."""

from __future__ import annotations

import json

import pytest
import torch
from toys import (
    TOY,
    ToyConfig,
    config,
)

from wikisum.training import checkpoint

# ------------------------------------------------------------------------------------------
# load().


def test_load_restores_model_configs_and_tokenizer(uninterrupted, toy_data):
    out, _, _ = uninterrupted
    loaded = checkpoint.load(str(out), factory=TOY)
    ckpt = torch.load(out / "checkpoints" / "step-8.pt", weights_only=True)
    assert not loaded.model.training
    assert loaded.name == "toy" and loaded.step == 8
    assert loaded.config == ToyConfig(**ckpt["model_config"])
    assert loaded.train_config == config(toy_data, out)
    assert all(torch.equal(v, ckpt["model"][k]) for k, v in loaded.model.state_dict().items())
    assert loaded.tokenizer.get_piece_size() == json.loads(
        (toy_data / "dataset.json").read_text())["vocab_size"]
    same = checkpoint.load(str(out / "checkpoints" / "step-6.pt"), factory=TOY)
    assert same.step == 6


def test_load_without_a_checkpoint_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint in"):
        checkpoint.load(str(tmp_path), factory=TOY)
    with pytest.raises(FileNotFoundError, match="neither a run directory"):
        checkpoint.load(str(tmp_path / "missing"), factory=TOY)


def test_load_names_an_unreadable_checkpoint(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    bad = tmp_path / "checkpoints" / "step-3.pt"
    bad.write_bytes(b"garbage")
    with pytest.raises(ValueError, match=f"cannot read checkpoint {bad}"):
        checkpoint.load(str(tmp_path), factory=TOY)
