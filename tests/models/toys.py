"""A toy model with the interface of wikisum.models.base, a family for the registry, and a small
ranked dataset: what the training, config and checkpoint tests run on (imported as ``toys``)."""

from __future__ import annotations

import json
import os
import random
import signal
import types
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from wikisum.models.base import PAD_ID, Batch, ModelOutput
from wikisum.training import checkpoint
from wikisum.training.config import TrainConfig

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
        self.signal_at: int | None = None  # the forward pass during which SIGTERM arrives
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
            if self.signal_at == self.calls:
                os.kill(os.getpid(), signal.SIGTERM)
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

    def __init__(self, crash_after: int | None = None, signal_at: int | None = None):
        self.made: list[Toy] = []
        self.crash_after = crash_after
        self.signal_at = signal_at

    def _keep(self, model: Toy) -> Toy:
        model.crash_after = self.crash_after
        model.signal_at = self.signal_at
        self.made.append(model)
        return model

    def build(self, name, preset="base", **overrides):
        return self._keep(toy_build(name, preset, **overrides))

    def from_config(self, name, config):
        return self._keep(toy_from_config(name, config))


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


def config(data: Path, out: Path, **changes) -> TrainConfig:
    values = dict(model="toy", data=str(data), out=str(out), preset="tiny", steps=8,
                  batch_tokens=60, shuffle_buffer=8, sort_pool=8, lr=0.05, warmup_steps=3,
                  accumulate=2, log_every=1, eval_every=4, dev_examples=None,
                  checkpoint_every=2, keep_checkpoints=2, device="cpu")
    values.update(changes)
    return TrainConfig(**values)


def log(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]


def losses(run: Path) -> dict[int, float]:
    return {r["step"]: r["loss"] for r in log(run) if "loss" in r}


def weights(run: Path) -> dict[str, torch.Tensor]:
    return checkpoint.load(str(run), factory=TOY).model.state_dict()
