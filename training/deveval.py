"""Evaluation during training: the dev perplexity of the model being trained, and the early
stopping on it (``patience``) that a checkpoint carries across a resume."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from itertools import islice

import torch

from wikisum.training import batching
from wikisum.training.config import TrainConfig
from wikisum.training.runtime import Processes


@dataclass
class EarlyStopping:
    """Where early stopping on the dev perplexity stands: the best perplexity and its step,
    and how many evaluations in a row have not improved on it. Checkpoints hold it, so a
    resumed run goes on counting where the killed one was."""

    best_ppl: float = math.inf
    best_step: int | None = None
    bad: int = 0  # evaluations since the best one

    @classmethod
    def from_state(cls, state: dict | None) -> EarlyStopping:
        saved = (state or {}).get("early_stopping")
        return cls(**saved) if saved else cls()

    def state(self) -> dict:
        return asdict(self)

    def observe(self, step: int, ppl: float) -> bool:
        """Count the evaluation of ``step``; True when it is a new best (strictly lower)."""
        if ppl < self.best_ppl:
            self.best_ppl, self.best_step, self.bad = ppl, step, 0
            return True
        self.bad += 1
        return False

    def exhausted(self, patience: int) -> bool:
        """True when ``patience`` (> 0) evaluations in a row brought no new best."""
        return patience > 0 and self.bad >= patience


@torch.no_grad()
def dev_perplexity(model: torch.nn.Module, examples: Iterable, config: TrainConfig,
                   procs: Processes, *, eos_id: int, autocast, step: int) -> dict | None:
    """exp(summed target NLL / target tokens) over (the first ``dev_examples`` of) the dev
    split's ``examples``, per target wordpiece, </s> included: each rank reads every
    ``world``-th example, the sums are over all ranks. ``model`` is left in training mode.

    Returns:
        The log entry of ``step`` (``dev_ppl``, ``dev_nll``, ``dev_tokens``, ``dev_cut``), or
        None when no dev target was read.
    """
    c = config
    if c.dev_examples is not None:
        examples = islice(examples, c.dev_examples)
    mine = (ex for i, ex in enumerate(examples) if i % procs.world == procs.rank)
    skips: Counter = Counter()
    # dev keeps its long targets, cut (what the perplexity is over says how many)
    pairs = (p for ex in mine
             if (p := batching.prepare(ex, eos_id, skips, c.target_limit()[0])))
    model.eval()
    nll = tokens = 0.0
    for pairs_ in batching.length_batches(pairs, c.batch_tokens, pool=c.sort_pool,
                                          counts=skips):
        with autocast:
            out = model(batching.to_batch(pairs_).to(procs.device))
        nll += float(out.target_nll)
        tokens += float(out.target_tokens)
    model.train()
    nll, tokens, cut = procs.all_sum([nll, tokens, skips[batching.CUT_TARGET]])
    if tokens == 0:
        return None
    return {"step": step, "dev_ppl": math.exp(nll / tokens),
            "dev_nll": nll / tokens, "dev_tokens": int(tokens), "dev_cut": int(cut)}
