"""The output layer and its cross-entropy without (N, V) logits.

At the paper's lengths the logits are the largest tensor of a training step: L = 11,000 positions
x V = 32,000 in float32 are 1.4 GB, and the loss's float copy, its softmax and the gradient add
as much again each. :func:`weighted_nll` computes the projection, the negative log-likelihood
and, in the same pass, the gradient of the weighted loss ``CHUNK_BYTES`` of logits at a time
(the weights, a loss mask over its size, are known before the backward pass), so the memory of
the loss is O(chunk x V), nothing is recomputed, and the gradient is exact: that of the same
float32 computation as ``(w * F.cross_entropy(F.linear(h, W, b).float(), y)).sum()``. The
Transformers use it. Where the NLL feeds something else before the loss (the recurrent family's
copy mixture, log(p_gen P_vocab(y) + copy terms)), :func:`chunked_nll` keeps each row's
log-sum-exp and recomputes a chunk's logits in the backward pass instead.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
import torch.nn.functional as F

CHUNK_BYTES = 64 * 1024 * 1024  # float32 logits held at once, forward and backward


def chunk_rows(vocab_size: int, chunk_bytes: int = CHUNK_BYTES) -> int:
    """Rows of (rows, V) float32 logits that fit in ``chunk_bytes``."""
    return max(1, chunk_bytes // (4 * vocab_size))


class _OutputGrads:
    """The output layer's gradients (hidden, weight, bias), accumulated a chunk of rows at a
    time from d = (softmax - onehot(label)) x g, g the per-row weight of the NLL."""

    def __init__(self, hidden, weight, bias, need: tuple[bool, bool, bool]):
        need_h, need_w, need_b = need
        self.hidden, self.dtypes = hidden, (weight.dtype, None if bias is None else bias.dtype)
        self.h = torch.empty_like(hidden) if need_h else None
        self.w = torch.zeros(weight.shape, dtype=torch.float32, device=weight.device) \
            if need_w else None
        self.b = torch.zeros(weight.shape[0], dtype=torch.float32, device=weight.device) \
            if need_b and bias is not None else None
        self.w32 = weight.float() if self.wanted else None

    @property
    def wanted(self) -> bool:
        return self.h is not None or self.w is not None or self.b is not None

    def add(self, part: slice, probs_g: torch.Tensor, labels: torch.Tensor,
            g: torch.Tensor) -> None:
        """probs_g (c, V): the chunk's softmax times g (changed in place into d)."""
        d = probs_g
        d[torch.arange(d.shape[0], device=d.device), labels] -= g
        if self.h is not None:
            self.h[part] = (d @ self.w32).to(self.hidden.dtype)
        if self.w is not None:
            self.w += d.t() @ self.hidden[part].float()
        if self.b is not None:
            self.b += d.sum(0)

    def result(self, scale: torch.Tensor | None = None) -> tuple:
        """(hidden, weight, bias) gradients in their tensors' dtypes, times ``scale``."""
        return _scaled(self.h, self.w, self.b, self.dtypes, scale)


def _scaled(h, w, b, dtypes, scale: torch.Tensor | None) -> tuple:
    """Accumulated output-layer gradients (h in hidden's dtype, w and b float32) times
    ``scale``, w and b in ``dtypes`` (weight's, bias's)."""
    w_dtype, b_dtype = dtypes
    if scale is not None:
        h = None if h is None else h * scale.to(h.dtype)
        w = None if w is None else w * scale.float()
        b = None if b is None else b * scale.float()
    return (h, None if w is None else w.to(w_dtype), None if b is None else b.to(b_dtype))


class _ChunkedNLL(torch.autograd.Function):
    """hidden (N, d), weight (V, d), bias (V,) or None, labels (N,) -> nll (N,) float32, for a
    loss whose gradient is not known in the forward pass (a mixture such as the copy
    mechanism's): each row's log-sum-exp is kept, and the chunk's logits are recomputed in the
    backward pass."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, labels, rows):
        n = hidden.shape[0]
        nll = torch.empty(n, dtype=torch.float32, device=hidden.device)
        lse = torch.empty(n, dtype=torch.float32, device=hidden.device)
        for start in range(0, n, rows):
            part = slice(start, start + rows)
            logits = F.linear(hidden[part], weight, bias).float()  # (c, V)
            lse[part] = torch.logsumexp(logits, dim=-1)
            nll[part] = lse[part] - logits.gather(1, labels[part, None]).squeeze(1)
        ctx.save_for_backward(hidden, weight, bias, labels, lse)
        ctx.rows = rows
        return nll

    @staticmethod
    def backward(ctx, grad):
        hidden, weight, bias, labels, lse = ctx.saved_tensors
        grads = _OutputGrads(hidden, weight, bias, ctx.needs_input_grad[:3])
        b32 = None if bias is None else bias.float()
        for start in range(0, hidden.shape[0], ctx.rows):
            part = slice(start, start + ctx.rows)
            g = grad[part].float()  # (c,)
            logits = F.linear(hidden[part].float(), grads.w32, b32)  # (c, V), recomputed
            grads.add(part, torch.exp(logits - lse[part, None]) * g[:, None], labels[part], g)
        return (*grads.result(), None, None)


def chunked_nll(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                labels: torch.Tensor, rows: int | None = None) -> torch.Tensor:
    """Negative log-likelihood in nats (N,) float32 of ``labels`` (N,) under
    ``softmax(hidden @ weight.T + bias)`` (-inf in ``bias`` takes a word out), differentiable
    for any use of it; ``rows`` rows of logits at a time (default: :data:`CHUNK_BYTES`)."""
    if hidden.shape[0] == 0:
        return hidden.new_zeros(0, dtype=torch.float32)
    return _ChunkedNLL.apply(hidden, weight, bias, labels, rows or chunk_rows(weight.shape[0]))


class _WeightedNLL(torch.autograd.Function):
    """sum_i w_i nll_i with the gradient computed in the forward pass, chunk by chunk: the
    weights (the loss mask over its size) are known then, so nothing is recomputed in the
    backward pass, which only scales the stored gradients by the incoming one."""

    @staticmethod
    def forward(ctx, hidden, weight, bias, labels, weights, rows, with_grad, step=None):
        n = hidden.shape[0]
        nll = torch.empty(n, dtype=torch.float32, device=hidden.device)
        grads = _OutputGrads(hidden, weight, bias,
                             tuple(with_grad and flag for flag in ctx.needs_input_grad[:3]))
        for start in range(0, n, rows):
            part = slice(start, start + rows)
            if step is not None:
                _fixed_chunk(step, grads, part, rows, nll, hidden, weight, bias, labels, weights)
                continue
            logits = F.linear(hidden[part], weight, bias).float()  # (c, V)
            lse = torch.logsumexp(logits, dim=-1)
            picked = labels[part]
            nll[part] = lse - logits.gather(1, picked[:, None]).squeeze(1)
            if grads.wanted:
                g = weights[part].float()  # (c,)
                # softmax x g, in place in the chunk's logits
                grads.add(part, torch.exp(logits.sub_(lse[:, None])).mul_(g[:, None]), picked, g)
        ctx.save_for_backward(grads.h, grads.w, grads.b)
        ctx.dtypes = grads.dtypes
        ctx.mark_non_differentiable(nll)
        loss = (nll * weights.float()).sum()
        return loss, nll

    @staticmethod
    def backward(ctx, grad_loss, _grad_nll):
        # Saved tensors (not ctx attributes) so that they go as soon as this node has run.
        return (*_scaled(*ctx.saved_tensors, ctx.dtypes, grad_loss), None, None, None, None,
                None)


def chunk_step(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
               labels: torch.Tensor, g: torch.Tensor, w32: torch.Tensor | None,
               want: tuple[bool, bool, bool]) -> tuple:
    """One chunk of :class:`_WeightedNLL`'s pass as a pure function, for torch.compile to fuse:
    hidden (c, d), labels and g (c,) -> the chunk's NLL (c,) float32 and its share of the
    gradients of sum(g * nll) wrt hidden (c, d), weight (V, d) and bias (V,) (None where not
    ``want``); w32 is weight in float32 (None when nothing is wanted)."""
    logits = F.linear(hidden, weight, bias).float()  # (c, V)
    lse = torch.logsumexp(logits, dim=-1)
    nll = lse - logits.gather(1, labels[:, None]).squeeze(1)
    if not any(want):
        return nll, None, None, None
    d = torch.exp(logits - lse[:, None]) * g[:, None]
    d = d.scatter_add(1, labels[:, None], -g[:, None])  # softmax x g - onehot(label) x g
    return (nll,
            (d @ w32).to(hidden.dtype) if want[0] else None,
            d.t() @ hidden.float() if want[1] else None,
            d.sum(0) if want[2] else None)


def _fixed_chunk(step: Callable, grads: _OutputGrads, part: slice, rows: int, nll, hidden,
                 weight, bias, labels, weights) -> None:
    """:func:`chunk_step` (or its compiled form, ``step``) on rows ``part``, padded to
    ``rows`` rows of weight 0 so that every call has one shape (one compiled graph); writes
    the chunk's NLL into ``nll`` and adds its gradients to ``grads``."""
    h, y, g = hidden[part], labels[part], weights[part].float()
    short = rows - h.shape[0]
    if short:
        h, y, g = F.pad(h, (0, 0, 0, short)), F.pad(y, (0, short)), F.pad(g, (0, short))
    want = (grads.h is not None, grads.w is not None, grads.b is not None)
    got, dh, dw, db = step(h, weight, bias, y, g, grads.w32, want)
    nll[part] = got[:rows - short]
    if dh is not None:
        grads.h[part] = dh[:rows - short]
    if dw is not None:
        grads.w += dw
    if db is not None:
        grads.b += db


@functools.cache
def compiled_chunk_step() -> Callable:
    """:func:`chunk_step` under torch.compile, one graph for every chunk of one shape (and one
    for each of the few row counts of :func:`weighted_nll`'s padding). Not ``fullgraph``: past
    dynamo's recompile limit (8 graphs, e.g. a process that trains several vocabularies or
    dtypes) a ``fullgraph`` function raises, this one runs eagerly, with the same results."""
    return torch.compile(chunk_step, dynamic=False)


def weighted_nll(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                 labels: torch.Tensor, weights: torch.Tensor, rows: int | None = None,
                 step: Callable | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss ``sum_i weights_i * nll_i`` (a scalar with its gradient) and the per-row NLL
    (N,) float32 (no gradient), for hidden (N, d), weight (V, d), bias (V,) or None, labels and
    weights (N,). Logits are held ``rows`` rows at a time, and the gradient is computed in the
    same pass, so the output layer costs three matrix products, as with full logits. With
    ``step`` (:func:`chunk_step` or :func:`compiled_chunk_step`'s) each chunk is that function
    of ``rows`` rows, the last one padded; without, the chunk's work is done in place."""
    if hidden.shape[0] == 0:
        zero = hidden.new_zeros((), dtype=torch.float32)
        return zero + 0.0 * hidden.sum() + 0.0 * weight.sum(), zero.new_zeros(0)
    rows = rows or chunk_rows(weight.shape[0])
    if step is not None:  # fewer rows than a chunk: padded to a power of two (few shapes)
        rows = min(rows, max(64, 1 << (hidden.shape[0] - 1).bit_length()))
    # The forward pass of a Function runs without grad mode: ask now whether a gradient is
    # wanted (evaluation under no_grad computes the loss alone).
    with_grad = torch.is_grad_enabled()
    return _WeightedNLL.apply(hidden, weight, bias, labels, weights, rows, with_grad, step)


def masked_weighted_nll(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                        labels: torch.Tensor, weights: torch.Tensor, rows_mask: torch.Tensor,
                        rows: int | None = None, step: Callable | None = None
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """hidden (B, T, d), labels, weights (B, T), rows_mask (B, T) bool -> the loss
    ``sum(weights * nll)`` and nll (B, T) float32, computed only where ``rows_mask`` is True
    (weights must be 0 elsewhere) and 0 there: a decoder-only model scores just the positions
    its loss and its target NLL read."""
    b, t, d = hidden.shape
    index = rows_mask.reshape(-1).nonzero().squeeze(1)  # (n,)
    loss, picked = weighted_nll(hidden.reshape(b * t, d).index_select(0, index), weight, bias,
                                labels.reshape(-1).index_select(0, index),
                                weights.reshape(-1).index_select(0, index), rows, step)
    nll = torch.zeros(b * t, dtype=torch.float32, device=hidden.device)
    return loss, nll.index_copy(0, index, picked).view(b, t)


def _outside_graphs(fn: Callable) -> Callable:
    """``fn`` run eagerly where torch.compile traces its caller (the graph ends there).
    ``torch.compiler.disable`` is applied on the first call, so that importing this module does
    not load dynamo."""
    disabled: list[Callable] = []

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if not disabled:
            disabled.append(torch.compiler.disable(fn))
        return disabled[0](*args, **kwargs)

    return call


@_outside_graphs
def untraced_nll(hidden: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None,
                 labels: torch.Tensor, weights: torch.Tensor, rows_mask: torch.Tensor,
                 every_row: bool, step: Callable | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`masked_weighted_nll` for a compiled model, run outside its graph: the loop over
    chunks depends on the number of rows, so a traced loss would tie the compiled model to one
    batch shape. Each chunk is instead one call of ``step``, by default (on CUDA)
    :func:`chunk_step` compiled on its own, whose shape is that of every chunk (the last one
    padded): the chunk's projection, softmax and gradients fused as they would be in the
    model's graph, compiled once for a chunk's rows (and once more for each power of two from
    64 rows that a batch smaller than a chunk is padded to). With ``every_row`` it scores
    every row instead of picking the rows of ``rows_mask`` (those outside it must weigh 0;
    their NLL is zeroed): no wait for the count of rows, for the price of the padding's
    rows."""
    if step is None and hidden.is_cuda:
        step = compiled_chunk_step()
    if not every_row:
        return masked_weighted_nll(hidden, weight, bias, labels, weights, rows_mask, step=step)
    b, t, d = hidden.shape
    loss, nll = weighted_nll(hidden.reshape(b * t, d), weight, bias, labels.reshape(-1),
                             weights.reshape(-1), step=step)
    return loss, nll.view(b, t) * rows_mask
