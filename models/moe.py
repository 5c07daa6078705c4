"""A sparsely-gated mixture-of-experts feed-forward layer (Shazeer et al. 2017), as Liu et al.
(2018) add to T-DMCA to raise capacity at a fixed cost per token.

Each token goes to its top-2 of E experts (two-layer ReLU networks, like the dense FFN), chosen
by noisy gating, and their outputs are mixed by the gate weights. Work is batched per expert:
tokens are gathered into an (E, capacity, d) buffer, the experts run as two batched matmuls over
stacked weights, and results are scattered back. No Python loop over tokens or experts.

Routing pieces are pure functions (:func:`route`, :func:`balance_loss`, :func:`assign_slots`,
:func:`dispatch`) so that each can be checked on fixed gates; :class:`MixtureOfExperts` wires
them. N tokens, E experts, k = 2 choices, d model width, f expert hidden width, C capacity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class Routing:
    experts: torch.Tensor  # (N, k) long: the chosen experts, best first
    gates: torch.Tensor  # (N, k): mixing weights, softmax over the k chosen logits
    probs: torch.Tensor  # (N, E): softmax over all E logits (for the balancing loss)


@dataclass
class MoEStats:
    balance: torch.Tensor  # scalar: balance_loss of this layer's routing
    dropped: torch.Tensor  # scalar long: token-to-expert assignments dropped for capacity
    assigned: torch.Tensor  # scalar long: token-to-expert assignments of real tokens


def noisy_logits(clean: torch.Tensor, noise_scale: torch.Tensor) -> torch.Tensor:
    """Eq. 4 (Shazeer et al. 2017): H(x) = x W_g + StandardNormal() * Softplus(x W_noise).
    clean, noise_scale (N, E), the latter before the softplus."""
    return clean + torch.randn_like(clean) * F.softplus(noise_scale)


def route(logits: torch.Tensor, k: int = 2) -> Routing:
    """Eq. 3 and 5 (Shazeer et al. 2017): G(x) = Softmax(KeepTopK(H(x), k)).

    logits (N, E) -> the k best experts per token and their gates, which sum to 1 per token.
    """
    top, experts = logits.topk(k, dim=-1)  # (N, k)
    return Routing(experts, top.softmax(dim=-1), logits.softmax(dim=-1))


def balance_loss(probs: torch.Tensor, first: torch.Tensor,
                 mask: torch.Tensor | None = None) -> torch.Tensor:
    """The load-balancing loss of one routing: ``E * sum_e f_e * P_e``, where, over the real
    tokens (``mask``),

        f_e = the fraction of tokens whose first choice is expert e     (not differentiable)
        P_e = the mean probability softmax(H(x))_e the router gives e   (differentiable)

    (the form of Fedus et al. 2022, Eq. 4, applied to the top-1 of a top-2 router). With
    balanced routing (f_e = P_e = 1/E) it is 1; when probabilities agree with choices
    (P_e = f_e, confident routing) it is ``E * sum_e f_e^2``, in [1, E]: 1 iff the load is
    uniform, E iff every token goes to one expert. Its gradient pushes probability away from
    overloaded experts.

    Args:
        probs: (N, E) router probabilities.
        first: (N,) long, each token's first-choice expert.
        mask: (N,) bool, True for real tokens; None = all.
    """
    n_experts = probs.shape[-1]
    weight = probs.new_ones(probs.shape[0]) if mask is None else mask.to(probs.dtype)
    count = weight.sum().clamp(min=1)
    f = (F.one_hot(first, n_experts).to(probs.dtype) * weight[:, None]).sum(0) / count  # (E,)
    p = (probs * weight[:, None]).sum(0) / count  # (E,)
    return n_experts * (f * p).sum()


def assign_slots(experts: torch.Tensor, n_experts: int, capacity: int | None,
                 mask: torch.Tensor | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor, int]:
    """Each assignment's place in its expert's buffer, first come first served.

    Assignments are ranked in row order of ``experts`` (token by token, then choice by choice),
    so the caller decides priority by how it orders tokens. An assignment whose place is at or
    beyond ``capacity`` is dropped: that expert does not see the token. ``capacity`` None means
    no limit (the buffer is as long as the busiest expert's load).

    Args:
        experts: (N, k) long.
        mask: (N,) bool, True for real tokens; padding takes no place and is never kept.

    Returns:
        slots (N, k) long, keep (N, k) bool, and the capacity used.
    """
    n, k = experts.shape
    flat = experts.reshape(-1)  # (N k,) in priority order
    if mask is not None:  # padding goes to a sentinel expert E, ranked apart from real tokens
        flat = torch.where(mask.repeat_interleave(k), flat, n_experts)
    order = torch.sort(flat, stable=True).indices  # grouped by expert, priority kept
    counts = torch.bincount(flat, minlength=n_experts + 1)  # (E + 1,)
    starts = counts.cumsum(0) - counts  # (E + 1,) where each expert's group begins
    rank = torch.arange(flat.numel(), device=flat.device) - starts[flat[order]]
    slots = torch.empty_like(flat)
    slots[order] = rank
    if capacity is None:
        capacity = max(1, int(counts[:n_experts].max()))  # one device sync, at evaluation only
    keep = (slots < capacity) & (flat < n_experts)
    return slots.view(n, k), keep.view(n, k), capacity


def dispatch(x: torch.Tensor, experts: torch.Tensor, gates: torch.Tensor, slots: torch.Tensor,
             keep: torch.Tensor, capacity: int, w_in: torch.Tensor, b_in: torch.Tensor,
             w_out: torch.Tensor, b_out: torch.Tensor, dropout_p: float = 0.0) -> torch.Tensor:
    """y_n = sum_k keep_nk * gate_nk * Expert_{e_nk}(x_n), with Expert_e(x) =
    ReLU(x W_in[e] + b_in[e]) W_out[e] + b_out[e] (Eq. 1, Shazeer et al. 2017).

    x (N, d); experts, gates, slots, keep (N, k); w_in (E, d, f), b_in (E, f), w_out (E, f, d),
    b_out (E, d) -> (N, d). Dropped assignments write to a spare buffer row that is never read
    back, so no shape depends on the data.
    """
    n, d = x.shape
    k = experts.shape[1]
    n_experts = w_in.shape[0]
    trash = n_experts * capacity
    dest = torch.where(keep, experts * capacity + slots, trash).reshape(-1)  # (N k,)
    source = x.unsqueeze(1).expand(n, k, d).reshape(n * k, d)
    buffer = x.new_zeros(trash + 1, d).index_add(0, dest, source)  # (E C + 1, d)
    inputs = buffer[:trash].view(n_experts, capacity, d)  # (E, C, d)
    hidden = torch.relu(torch.baddbmm(b_in.unsqueeze(1), inputs, w_in))  # (E, C, f)
    hidden = F.dropout(hidden, dropout_p, training=dropout_p > 0)
    out = torch.baddbmm(b_out.unsqueeze(1), hidden, w_out).reshape(trash, d)  # (E C, d)
    out = torch.cat([out, out.new_zeros(1, d)])  # the spare row reads as zeros
    weight = (gates * keep).to(out.dtype).unsqueeze(-1)  # (N, k, 1)
    return (out[dest].view(n, k, d) * weight).sum(dim=1)


class MixtureOfExperts(nn.Module):
    """Top-2 noisy-gated mixture of ``n_experts`` FFNs with a capacity limit, a drop-in for the
    dense FFN of a Transformer layer.

    Training: Gaussian gate noise, and each expert takes at most
    ``ceil(capacity_factor * k * N / E)`` assignments of the N tokens of the batch. Tokens are
    ranked by position first (time-major), so whether a token is dropped depends on tokens at
    its own or earlier positions only: no information flows backwards in time. Evaluation: no
    noise and no capacity limit, so a token's output depends on that token alone and cached
    decoding equals a full pass.
    """

    def __init__(self, d_model: int, d_ff: int, n_experts: int, capacity_factor: float = 1.25,
                 k: int = 2, dropout: float = 0.0):
        super().__init__()
        if not 1 <= k <= n_experts:
            raise ValueError(f"top-{k} routing needs 1 <= k <= n_experts ({n_experts})")
        if capacity_factor <= 0:
            raise ValueError(f"capacity_factor must be > 0, got {capacity_factor}")
        self.n_experts, self.k = n_experts, k
        self.capacity_factor, self.dropout = capacity_factor, dropout
        # Zero gates at first: equal load, only noise (Shazeer et al. 2017, Appendix A).
        self.gate = nn.Linear(d_model, n_experts, bias=False)
        self.noise = nn.Linear(d_model, n_experts, bias=False)
        nn.init.zeros_(self.gate.weight)
        nn.init.zeros_(self.noise.weight)
        bound_in = math.sqrt(6 / (d_model + d_ff))  # Glorot, per expert
        self.w_in = nn.Parameter(torch.empty(n_experts, d_model, d_ff).uniform_(-bound_in,
                                                                                bound_in))
        self.b_in = nn.Parameter(torch.zeros(n_experts, d_ff))
        self.w_out = nn.Parameter(torch.empty(n_experts, d_ff, d_model).uniform_(-bound_in,
                                                                                 bound_in))
        self.b_out = nn.Parameter(torch.zeros(n_experts, d_model))

    def capacity(self, n_tokens: int) -> int | None:
        """Assignments each expert takes in training; None (no limit) in evaluation."""
        if not self.training:
            return None
        return max(1, math.ceil(self.capacity_factor * self.k * n_tokens / self.n_experts))

    def forward(self, x: torch.Tensor, mask: torch.Tensor | None = None
                ) -> tuple[torch.Tensor, MoEStats]:
        """x (B, T, d); mask (B, T) bool, True at real tokens (padding is not routed) ->
        (B, T, d) and the layer's :class:`MoEStats`."""
        b, t, d = x.shape
        flat = x.transpose(0, 1).reshape(t * b, d)  # (N, d) time-major: priority by position
        flat_mask = None if mask is None else mask.transpose(0, 1).reshape(-1)
        # The router runs in float32 whatever the autocast dtype: top-k ties and the softmax
        # are sensitive to rounding.
        logits = self.gate(flat).float()  # (N, E)
        if self.training:
            logits = noisy_logits(logits, self.noise(flat).float())
        routing = route(logits, self.k)
        slots, keep, capacity = assign_slots(routing.experts, self.n_experts,
                                             self.capacity(t * b), flat_mask)
        y = dispatch(flat, routing.experts, routing.gates, slots, keep, capacity, self.w_in,
                     self.b_in, self.w_out, self.b_out, self.dropout if self.training else 0.0)
        real = (torch.ones_like(keep) if flat_mask is None
                else flat_mask.unsqueeze(1).expand_as(keep))
        stats = MoEStats(balance=balance_loss(routing.probs, routing.experts[:, 0], flat_mask),
                         dropped=(real & ~keep).sum(), assigned=real.sum())
        return y.view(t, b, d).transpose(0, 1), stats
