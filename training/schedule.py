"""The optimizer and its learning-rate schedule: Adam (AdamW, i.e. decoupled decay, when
``weight_decay > 0``) over the trainable parameters, with tensor2tensor's linear warmup then
inverse-square-root decay (:func:`learning_rate`)."""

from __future__ import annotations

import math

import torch

from wikisum.training.config import TrainConfig


def learning_rate(step: int, peak: float, warmup: int) -> float:
    """tensor2tensor's "linear_warmup * rsqrt_decay" (the noam schedule without d_model^-0.5):

        lr(step) = peak * min(step / warmup, sqrt(warmup / step))     step = 1, 2, ...

    rising linearly to ``peak`` at ``step = warmup``, then decaying as 1 / sqrt(step). It equals
    t2t's ``c * min(1, step / warmup) * rsqrt(max(step, warmup))`` with ``c = peak * sqrt(warmup)``.
    """
    step = max(step, 1)
    return peak * min(step / warmup, math.sqrt(warmup / step))


def scheduler(optimizer: torch.optim.Optimizer, warmup: int) -> torch.optim.lr_scheduler.LambdaLR:
    """:func:`learning_rate` as a multiplier of the optimizer's lr (= peak). Update k (1-based)
    runs at lr(k): LambdaLR's counter is k - 1 before that update."""
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda done: learning_rate(done + 1, 1.0, warmup))


def build_optimizer(model: torch.nn.Module, config: TrainConfig
                    ) -> tuple[torch.optim.Optimizer, torch.optim.lr_scheduler.LambdaLR]:
    """Adam(W) over ``model``'s trainable parameters with ``config``'s lr, betas, eps and weight
    decay, and its :func:`scheduler` of ``config.warmup_steps``."""
    params = [p for p in model.parameters() if p.requires_grad]
    optim = torch.optim.AdamW if config.weight_decay > 0 else torch.optim.Adam
    # On CUDA the fused implementation: a few kernel launches update every parameter (the
    # same algorithm; the default launches several kernels per group of tensors).
    fused = {"fused": True} if params and all(p.is_cuda for p in params) else {}
    optimizer = optim(params, lr=config.lr, betas=config.adam_betas, eps=config.adam_eps,
                      weight_decay=config.weight_decay, **fused)
    return optimizer, scheduler(optimizer, config.warmup_steps)
