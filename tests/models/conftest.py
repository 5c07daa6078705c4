"""Shared by the model tests."""

from __future__ import annotations

import json
import random
import sys
import types
from pathlib import Path

import pytest
import torch
from toys import Recording, article, config, toy_build, toy_from_config

from wikisum import models
from wikisum.core import schemas, shards, vocab
from wikisum.training import loop as training


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    """Tensors this small run faster on one thread: thread hand-offs cost more than the work,
    ten times more on a busy two-core machine."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


# ------------------------------------------------------------------------------------------
# The toy family and data of toys.py, for the training, config and checkpoint tests.


@pytest.fixture
def toy_registry(monkeypatch):
    """`--model toy` through the real registry (models.build / from_config)."""
    module = types.ModuleType("wikisum_toy_family")
    module.build, module.from_config = toy_build, toy_from_config
    monkeypatch.setitem(sys.modules, "wikisum_toy_family", module)
    monkeypatch.setitem(models.FAMILIES, "toy", "wikisum_toy_family")


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


@pytest.fixture(scope="module")
def other_vocab(tmp_path_factory) -> Path:
    """A vocabulary of the toy data's size trained on other words: what replaces a run's own."""
    path = tmp_path_factory.mktemp("other_vocab") / "vocab.model"
    rng = random.Random(1)
    words = ["uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve", "diez"]
    vocab.train_vocab([" ".join(rng.choice(words) for _ in range(10)) for _ in range(300)],
                      str(path), size=60)
    return path


@pytest.fixture(scope="module")
def uninterrupted(toy_data, tmp_path_factory) -> tuple[Path, dict, Recording]:
    out = tmp_path_factory.mktemp("runs") / "whole"
    factory = Recording()
    return out, training.train(config(toy_data, out), factory), factory




@pytest.fixture(scope="module")
def tiny_run(toy_data, tmp_path_factory) -> Path:
    """A real t-dmca (tiny preset) trained for 3 steps on the toy data: what the decode,
    export and summarize tests use."""
    from wikisum.training.config import TrainConfig

    out = tmp_path_factory.mktemp("runs") / "tiny-t-dmca"
    training.train(TrainConfig(model="t-dmca", data=str(toy_data), out=str(out), preset="tiny",
                               steps=3, max_input_tokens=24, batch_tokens=400, warmup_steps=1,
                               lr=0.01, eval_every=0, log_every=1, device="cpu"))
    return out
