"""Word-frequency estimation (WFE; Suzuki & Nagata, 2017): from the encoder states, an upper bound
on how many times each vocabulary word may appear in the output.

    r = W_r2 (sum_i W_r1 h_i)                      (B, V)  how many times, unbounded
    g = W_g2 [max_i W_g1 h_i ; min_i W_g1 h_i]     (B, V)  whether at all (logits)
    a_hat = ReLU(r) * sigmoid(g)                   (B, V)

The model trains it jointly with the likelihood against the true target word counts ``a``
(:func:`wfe_loss`). Decoding caps each word's count in a hypothesis at ``max(1, round(a_hat))``
and charges nothing else (``wikisum.generation.processors.WFEProcessor``, which gives the rule and
how it departs from the paper's). The encoder states are whatever a model encodes its
input with: the encoder of a seq2seq model, the prefix (input + <sep>) of a decoder-only one.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

# Eq. 7 hyper-parameters (the paper's values).
EPSILON = 0.25
POWER = 2.0
C_OVER = 0.2
C_UNDER = 1.0


@dataclass
class Estimate:
    r: torch.Tensor  # (B, V) ReLU(r): how many times, unbounded, >= 0
    g: torch.Tensor  # (B, V) gate logits: whether at all

    @property
    def a_hat(self) -> torch.Tensor:
        return self.r * torch.sigmoid(self.g)

    def index_select(self, index: torch.Tensor) -> Estimate:
        return Estimate(self.r.index_select(0, index), self.g.index_select(0, index))


class FrequencyEstimator(nn.Module):
    """Maps encoder states (B, S, d) with a padding mask to an :class:`Estimate` over V words."""

    def __init__(self, d_model: int, vocab_size: int, d_hidden: int | None = None):
        super().__init__()
        d_hidden = d_hidden or d_model
        self.r_in = nn.Linear(d_model, d_hidden)
        self.r_out = nn.Linear(d_hidden, vocab_size)
        self.g_in = nn.Linear(d_model, d_hidden)
        self.g_out = nn.Linear(2 * d_hidden, vocab_size)
        # r sums over every input position (hundreds on WikiSum): with the default init the
        # first estimates are in the hundreds and eq. 7's squared error swamps the likelihood.
        # Start every word's r at 0.5 instead: small, and positive so that no word starts with
        # a dead ReLU (r <= 0 gets no gradient, and eq. 7 never pushes a_hat below epsilon).
        nn.init.normal_(self.r_out.weight, std=1e-3)
        nn.init.constant_(self.r_out.bias, 0.5)

    def forward(self, states: torch.Tensor, mask: torch.Tensor) -> Estimate:
        """states (B, S, d); mask (B, S) bool, True where a position holds a real token."""
        m = mask.unsqueeze(-1)  # (B, S, 1)
        r_hidden = (self.r_in(states) * m).sum(dim=1)  # (B, h): summed over positions
        g_hidden = self.g_in(states)  # (B, S, h)
        big = torch.finfo(g_hidden.dtype).max
        g_max = g_hidden.masked_fill(~m, -big).amax(dim=1)  # (B, h): row-wise max
        g_min = g_hidden.masked_fill(~m, big).amin(dim=1)  # (B, h): row-wise min
        r = torch.relu(self.r_out(r_hidden))  # (B, V)
        g = self.g_out(torch.cat([g_max, g_min], dim=-1))  # (B, V)
        return Estimate(r, g)


def target_counts(targets: torch.Tensor, vocab_size: int, ignore: tuple[int, ...] = (0,)
                  ) -> torch.Tensor:
    """a: (B, V) how many times each word occurs in each target row (padding not counted)."""
    counts = torch.zeros(targets.shape[0], vocab_size, device=targets.device)
    counts.scatter_add_(1, targets, torch.ones_like(targets, dtype=counts.dtype))
    for i in ignore:
        counts[:, i] = 0
    return counts


def wfe_loss(a_hat: torch.Tensor, counts: torch.Tensor, epsilon: float = EPSILON,
             power: float = POWER, c_over: float = C_OVER, c_under: float = C_UNDER
             ) -> torch.Tensor:
    """Eq. 7 (Suzuki & Nagata, 2017): an asymmetric, epsilon-insensitive loss of the estimate.

    a_hat is an *upper bound*: estimating below the true count (which would block a word the
    reference uses) costs ``c_under * (a - a_hat)^b``; estimating above costs only beyond a
    margin, and less, ``c_over * max(0, a_hat - a - epsilon)^b``. Summed over the vocabulary,
    averaged over the batch. Shapes: a_hat, counts (B, V); returns a scalar.
    """
    diff = a_hat - counts
    under = c_under * torch.clamp(-diff, min=0) ** power
    over = c_over * torch.clamp(diff - epsilon, min=0) ** power
    return (under + over).sum(dim=-1).mean()
