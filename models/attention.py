"""Attention layers for the Transformer family of Liu et al. (2018), "Generating Wikipedia by
Summarizing Long Sequences": full, local and memory-compressed causal self-attention (the decoder
layers of T-D and T-DMCA), attention over an encoder memory (T-ED), their incremental decoding
caches, and the sinusoidal position signal.

The attention ops are pure functions over projected heads (:mod:`wikisum.models.attention_ops`;
their names are importable from here too); the layers here own the projections and the
incremental caches (the split of lucidrains' ``local-attention``) and choose, call by call,
between those ops, the CPU kernels (:mod:`wikisum.models.cpu_kernels`) and FlexAttention
(:mod:`wikisum.models.flexattention`). Decoding steps (one query) use explicit boolean masks
(True = may attend). One code path runs on CPU and GPU and under ``torch.autocast``.

Shapes: B batch rows, H heads, T positions, D = d / H head width, d model width; N rows while
decoding (B times beams), C cache capacity in positions, S compressed slots, W local window.

Causality, the property every kind keeps: the output at position i depends on positions <= i
only, at every length (also lengths not divisible by the block size or the stride).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

# The ops not called here (local_mask, causal_with_offset, local_attention_fused,
# compressed_mask, compressed_attention_reference) are re-exported: importable from here too.
from wikisum.models.attention_ops import (  # noqa: F401
    attention_with_null,
    causal_attention,
    causal_with_offset,
    compressed_attention,
    compressed_attention_reference,
    compressed_mask,
    local_attention,
    local_attention_fused,
    local_mask,
    memory_attention,
    slot_count,
    slot_ends,
)
from wikisum.models.cpu_kernels import (
    _CompressedAttentionCPU,
    compress,
    local_attention_cpu,
    use_flash_cpu,
    with_null,
)
from wikisum.models.flexattention import available as flex_available
from wikisum.models.flexattention import compressed_attention_flex, local_attention_flex
from wikisum.models.flexattention import worthwhile as flex_worthwhile

AttentionKind = Literal["full", "local", "compressed"]
KINDS: tuple[str, ...] = ("full", "local", "compressed")
# How local and compressed layers attend in training and prefill: "sdpa", the constructions of
# attention_ops (``scaled_dot_product_attention``; the CPU kernels on CPU); "flex", FlexAttention
# with block masks (compiled on CUDA, eager elsewhere; no attention dropout); "auto", flex
# where the tensors are on CUDA, FlexAttention exists, no dropout applies and the shape suits
# it (``flexattention.worthwhile``), else sdpa. Full attention is the fused causal kernel in
# every case; decoding steps do not change.
# Why auto takes flex on CUDA (H200, torch 2.11, base T-DMCA, bf16; docs/benchmarks.md): eager,
# flex trains as fast as sdpa (within 3.5 % at L = 8,192 and 11,000) with 6-7 % less peak
# memory, and under torch.compile it compiled at both lengths where sdpa failed at 8,192 (an
# inductor error). The trade-off: compiled sdpa, where it compiles, was 1.7x faster than
# compiled flex at 11,000, and the first flex call of a process compiles its kernel (~10 s).
# Since a compiled T-DMCA is one graph (block masks built in the graph, no device sync) and
# Adam is fused, compiled flex trained it at L = 8,192 in 12.1 ms a step on an H100 (24.4 ms
# before; docs/benchmarks.md). That was measured with the loss traced too; with the loss
# outside the graph, as the code is, the step took about 20 ms, bound by the host.
ATTENTION_IMPLS: tuple[str, ...] = ("auto", "sdpa", "flex")
CACHE_CHUNK = 128  # positions a decoding cache grows by, so that it is not copied every step


def check_kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown attention kind {kind!r}; choose from {', '.join(KINDS)}")
    return kind


def check_impl(impl: str) -> str:
    if impl not in ATTENTION_IMPLS:
        raise ValueError(f"unknown attention_impl {impl!r}; choose from "
                         f"{', '.join(ATTENTION_IMPLS)}")
    return impl


def split_heads(x: torch.Tensor, n_heads: int) -> torch.Tensor:
    """(B, T, d) -> (B, H, T, D)."""
    b, t, d = x.shape
    return x.view(b, t, n_heads, d // n_heads).transpose(1, 2)


def merge_heads(x: torch.Tensor) -> torch.Tensor:
    """(B, H, T, D) -> (B, T, d)."""
    b, h, t, d = x.shape
    return x.transpose(1, 2).reshape(b, t, h * d)


# ---------------------------------------------------------------------------------------------
# Incremental decoding caches


@dataclass
class AttentionCache:
    """What one causal self-attention layer keeps between decoding steps, per row.

    full:         k, v (N, H, C, D): keys and values of positions 0 .. C-1.
    local:        k, v (N, H, W, D): a ring of the last W = (1 or 2) x block_size positions
                  (position p at p % W), all a step reads.
    compressed:   k, v (N, kernel, d): a ring of the raw (pre-convolution) keys and values of
                  the last ``kernel`` positions, and k_slots, v_slots (N, H, S, D): the
                  compressed slots (null slot not included).
    After a prefill every kind holds the whole history (entry p at index p); local and
    compressed caches become rings on the first step, or before it through
    :meth:`CausalSelfAttention.compact`. Entries at or after a row's next position are stale
    and masked until written.
    """

    k: torch.Tensor | None = None
    v: torch.Tensor | None = None
    k_slots: torch.Tensor | None = None
    v_slots: torch.Tensor | None = None

    def index_select(self, index: torch.Tensor) -> AttentionCache:
        """The cache of rows ``index`` (N',), in that order (rows may repeat)."""
        picked = {f.name: getattr(self, f.name) for f in fields(self)}
        return AttentionCache(**{name: None if t is None else t.index_select(0, index)
                                 for name, t in picked.items()})


def ring(cache: torch.Tensor | None, dim: int, size: int, positions: torch.Tensor,
         like: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """``cache`` as a ring of ``size`` entries along ``dim``: position p of a row lives at
    p % size, so the ring holds each row's last ``size`` positions. A full history (a prefill's
    cache, entry p at index p) is turned into one on the first step, from the rows' next
    ``positions`` (N,); created zero-filled (dtype of ``like``, ``shape`` with ``dim`` set) when
    None. A history of exactly ``size`` entries already has the ring's layout."""
    if cache is None:
        new_shape = list(shape)
        new_shape[dim] = size
        return like.new_zeros(new_shape)
    if cache.shape[dim] == size:
        return cache
    slots = torch.arange(size, device=positions.device)
    # slot j holds p_j = pos - size + ((j - pos) mod size), in [pos - size, pos)
    held = positions.unsqueeze(1) - size + (slots.unsqueeze(0) - positions.unsqueeze(1)) % size
    index = held.clamp(0, cache.shape[dim] - 1)  # (N, size); p < 0 is never read
    view = [index.shape[0]] + [1] * (cache.dim() - 1)
    view[dim] = size
    expand = list(cache.shape)
    expand[dim] = size
    return cache.gather(dim, index.view(view).expand(expand))


def grow(cache: torch.Tensor | None, dim: int, size: int, like: torch.Tensor,
         shape: tuple[int, ...]) -> torch.Tensor:
    """``cache`` with at least ``size`` entries along ``dim``, zero-filled; created (dtype of
    ``like``, ``shape`` with ``dim`` set) when None. Grows by CACHE_CHUNK so most steps copy
    nothing."""
    if cache is not None and cache.shape[dim] >= size:
        return cache
    have = 0 if cache is None else cache.shape[dim]
    new_shape = list(shape)
    new_shape[dim] = max(size, have + CACHE_CHUNK) - have
    extra = like.new_zeros(new_shape)
    return extra if cache is None else torch.cat([cache, extra.to(cache.dtype)], dim=dim)


# ---------------------------------------------------------------------------------------------
# Modules


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention of one kind ("full", "local" or "compressed").

    ``forward`` runs a whole sequence (training, prefill); ``step`` adds one position per row
    to an :class:`AttentionCache` at a per-row position, costing one query.
    """

    def __init__(self, d_model: int, n_heads: int, kind: AttentionKind = "full",
                 block_size: int = 256, previous_block: bool = True, compress_kernel: int = 3,
                 compress_stride: int = 3, dropout: float = 0.0, attention_impl: str = "auto"):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.kind = check_kind(kind)
        self.attention_impl = check_impl(attention_impl)
        self.d_model, self.n_heads = d_model, n_heads
        self.block_size, self.previous_block = block_size, previous_block
        self.kernel, self.stride = compress_kernel, compress_stride
        self.dropout = dropout
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        if kind == "compressed":
            # Strided convolutions over the sequence shorten keys and values by `stride`.
            self.compress_k = nn.Conv1d(d_model, d_model, compress_kernel, stride=compress_stride)
            self.compress_v = nn.Conv1d(d_model, d_model, compress_kernel, stride=compress_stride)
            # A learned slot every query may use, so that queries before the first complete
            # window (i < kernel - 1) still attend to something.
            self.null_k = nn.Parameter(torch.randn(d_model) * 0.02)
            self.null_v = nn.Parameter(torch.randn(d_model) * 0.02)

    def ring_size(self) -> int | None:
        """Positions a decoding step reads from this layer's raw cache: the local window (one
        or two blocks), the compressed layer's convolution width; None for full attention."""
        if self.kind == "local":
            return (2 if self.previous_block else 1) * self.block_size
        return self.kernel if self.kind == "compressed" else None

    def compact(self, cache: AttentionCache, positions: torch.Tensor) -> AttentionCache:
        """A prefill's cache (the whole history) cut to the ring a step reads, for rows whose
        next positions are ``positions`` (N,): what ``step`` would make of it first, done
        before beam search repeats every row ``beam`` times. A local layer then holds W
        positions a row instead of the prefix, a compressed one ``kernel`` raw positions
        beside its slots; full attention's cache is returned as is."""
        size = self.ring_size()
        if size is None or cache.k is None:
            return cache
        dim = 2 if self.kind == "local" else 1  # (N, H, T, D) or raw (N, T, d)
        return AttentionCache(ring(cache.k, dim, size, positions, cache.k, cache.k.shape),
                              ring(cache.v, dim, size, positions, cache.v, cache.v.shape),
                              cache.k_slots, cache.v_slots)

    def _compress(self, conv: nn.Conv1d, x: torch.Tensor) -> torch.Tensor:
        """(B, T, d) raw keys or values -> (B, H, S, D) slots."""
        return compress(x, conv.weight, conv.bias, self.kernel, self.stride, self.n_heads)

    def uses_flex(self, q: torch.Tensor, dropout_p: float) -> bool:
        """Whether ``forward`` attends through FlexAttention for queries ``q`` at this dropout
        (``attention_impl``; full attention never does)."""
        if self.kind == "full" or self.attention_impl == "sdpa":
            return False
        if self.attention_impl == "flex":
            if dropout_p > 0:
                raise ValueError(f"attention_impl='flex' has no attention dropout (dropout "
                                 f"{dropout_p} in training): use dropout 0, or "
                                 "attention_impl 'auto', which takes sdpa where dropout applies")
            return True
        return dropout_p == 0.0 and q.is_cuda and flex_worthwhile(q) and flex_available()

    def forward(self, x: torch.Tensor, return_cache: bool = False
                ) -> tuple[torch.Tensor, AttentionCache | None]:
        """x (B, T, d) -> (B, T, d), and the cache of all T positions when asked (prefill)."""
        p = self.dropout if self.training else 0.0
        q, k, v = self.qkv(x).split(self.d_model, dim=-1)  # (B, T, d) each
        qh = split_heads(q, self.n_heads)  # (B, H, T, D)
        cache = None
        flex = self.uses_flex(qh, p)
        if self.kind == "compressed" and flex:
            k_slots = self._compress(self.compress_k, k)  # (B, H, S, D)
            v_slots = self._compress(self.compress_v, v)
            y = compressed_attention_flex(
                qh, with_null(k_slots, self.null_k), with_null(v_slots, self.null_v),
                self.kernel, self.stride)
            if return_cache:
                cache = AttentionCache(k, v, k_slots, v_slots)
        elif self.kind == "compressed" and use_flash_cpu(qh, p) and not return_cache:
            y = _CompressedAttentionCPU.apply(
                qh, k, v, self.compress_k.weight, self.compress_k.bias, self.compress_v.weight,
                self.compress_v.bias, self.null_k, self.null_v, self.kernel, self.stride)
            y = y[:, :, :x.shape[1]]
        elif self.kind == "compressed":
            k_slots = self._compress(self.compress_k, k)  # (B, H, S, D)
            v_slots = self._compress(self.compress_v, v)
            y = compressed_attention(qh, with_null(k_slots, self.null_k),
                                     with_null(v_slots, self.null_v),
                                     self.kernel, self.stride, p)
            if return_cache:
                cache = AttentionCache(k, v, k_slots, v_slots)
        else:
            kh, vh = split_heads(k, self.n_heads), split_heads(v, self.n_heads)
            if self.kind == "local":
                if flex:
                    y = local_attention_flex(qh, kh, vh, self.block_size, self.previous_block)
                elif use_flash_cpu(qh, p):
                    y = local_attention_cpu(qh, kh, vh, self.block_size, self.previous_block)
                else:
                    y = local_attention(qh, kh, vh, self.block_size, self.previous_block, p)
            else:
                y = causal_attention(qh, kh, vh, p)
            if return_cache:
                cache = AttentionCache(kh, vh)
        return self.out(merge_heads(y)), cache

    def step(self, x: torch.Tensor, cache: AttentionCache, positions: torch.Tensor,
             length: int) -> tuple[torch.Tensor, AttentionCache]:
        """One new position per row.

        Args:
            x: (N, d) the new position's input.
            cache: written in place (and grown): keep the returned one.
            positions: (N,) long, where each row's new position goes (rows differ when their
                prefixes had different lengths).
            length: an upper bound on ``positions.max() + 1`` known without a device sync.

        Returns (N, d) and the cache.
        """
        n = x.shape[0]
        h, dh = self.n_heads, self.d_model // self.n_heads
        rows = torch.arange(n, device=x.device)
        q, k, v = self.qkv(x).split(self.d_model, dim=-1)  # (N, d) each
        qh = q.view(n, h, 1, dh)  # (N, H, 1, D)
        pos = positions.unsqueeze(1)  # (N, 1)
        if self.kind == "compressed":
            usable = self._step_compressed(k, v, cache, positions, length)  # (N, S)
            y = attention_with_null(qh, cache.k_slots, cache.v_slots, self.null_k,
                                    self.null_v, usable)  # (N, H, 1, D)
            return self.out(y.reshape(n, self.d_model)), cache
        if self.kind == "full":
            cache.k = grow(cache.k, 2, length, k, (n, h, 0, dh))  # (N, H, C, D)
            cache.v = grow(cache.v, 2, length, v, (n, h, 0, dh))
            cache.k[rows, :, positions] = k.view(n, h, dh).to(cache.k.dtype)
            cache.v[rows, :, positions] = v.view(n, h, dh).to(cache.v.dtype)
            keys, values = cache.k, cache.v
            mask = torch.arange(cache.k.shape[2], device=x.device).unsqueeze(0) <= pos
        else:
            # Only the window of the current (and previous) block is read: W keys per row,
            # kept in a ring of W positions (beam search copies W, not the whole history).
            w = self.ring_size()
            cache.k = ring(cache.k, 2, w, positions, k, (n, h, 0, dh))  # (N, H, W, D)
            cache.v = ring(cache.v, 2, w, positions, v, (n, h, 0, dh))
            cache.k[rows, :, positions % w] = k.view(n, h, dh).to(cache.k.dtype)
            cache.v[rows, :, positions % w] = v.view(n, h, dh).to(cache.v.dtype)
            first = (positions // self.block_size - (w // self.block_size - 1)).clamp(min=0)
            window = (first * self.block_size).unsqueeze(1) + torch.arange(
                w, device=x.device)  # (N, W) absolute positions
            mask = window <= pos  # (N, W); a later position's slot holds an older one
            index = (window % w)[:, None, :, None].expand(n, h, -1, dh)  # (N, H, W, D)
            keys, values = cache.k.gather(2, index), cache.v.gather(2, index)
        y = F.scaled_dot_product_attention(qh, keys.to(qh.dtype), values.to(qh.dtype),
                                           attn_mask=mask[:, None, None, :])  # (N, H, 1, D)
        return self.out(y.reshape(n, self.d_model)), cache

    def _step_compressed(self, k: torch.Tensor, v: torch.Tensor, cache: AttentionCache,
                         positions: torch.Tensor, length: int) -> torch.Tensor:
        """Store raw k, v (N, d) at ``positions``; where a window completes there, compute its
        slot. Returns which of ``cache.k_slots``' S slots each row may use, (N, S) bool."""
        n, d = k.shape
        h, dh = self.n_heads, d // self.n_heads
        rows = torch.arange(n, device=k.device)
        # The raw keys and values of the last `kernel` positions only (a ring): all a new
        # slot's convolution reads.
        r = self.kernel
        cache.k = ring(cache.k, 1, r, positions, k, (n, 0, d))  # (N, kernel, d)
        cache.v = ring(cache.v, 1, r, positions, v, (n, 0, d))
        cache.k[rows, positions % r] = k.to(cache.k.dtype)
        cache.v[rows, positions % r] = v.to(cache.v.dtype)
        n_slots = max(1, slot_count(length, self.kernel, self.stride))
        cache.k_slots = grow(cache.k_slots, 2, n_slots, k, (n, h, 0, dh))  # (N, H, S, D)
        cache.v_slots = grow(cache.v_slots, 2, n_slots, v, (n, h, 0, dh))
        # The window ending at each row's position (clamped at 0; only used where complete).
        start = positions - (self.kernel - 1)  # (N,)
        window = (start.unsqueeze(1) + torch.arange(self.kernel, device=k.device)).clamp(min=0)
        complete = (start >= 0) & (start % self.stride == 0)  # (N,)
        slot = start.clamp(min=0) // self.stride  # (N,)
        for raw, conv, slots in ((cache.k, self.compress_k, cache.k_slots),
                                 (cache.v, self.compress_v, cache.v_slots)):
            index = (window % r).unsqueeze(2).expand(n, self.kernel, d)
            taken = raw.gather(1, index)  # (N, kernel, d): the window's raw positions
            new = conv(taken.transpose(1, 2).to(k.dtype)).view(n, h, dh)  # (N, H, D)
            old = slots[rows, :, slot]  # (N, H, D)
            slots[rows, :, slot] = torch.where(complete[:, None, None], new.to(slots.dtype), old)
        ends = slot_ends(cache.k_slots.shape[2], self.kernel, self.stride, k.device)  # (S,)
        return ends.unsqueeze(0) <= positions.unsqueeze(1)  # (N, S)


class MemoryAttention(nn.Module):
    """Multi-head attention from queries ``x`` over a padded memory: the encoder's
    self-attention (memory = x) and the decoder's cross-attention (memory = encoder output)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0):
        super().__init__()
        if d_model % n_heads:
            raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
        self.d_model, self.n_heads, self.dropout = d_model, n_heads, dropout
        self.q = nn.Linear(d_model, d_model)
        self.kv = nn.Linear(d_model, 2 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def memory_heads(self, memory: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """memory (B, S, d) -> keys, values (B, H, S, D): computed once per decode."""
        k, v = self.kv(memory).split(self.d_model, dim=-1)
        return split_heads(k, self.n_heads), split_heads(v, self.n_heads)

    def forward(self, x: torch.Tensor, memory_mask: torch.Tensor,
                memory: torch.Tensor | None = None,
                kv: tuple[torch.Tensor, torch.Tensor] | None = None) -> torch.Tensor:
        """x (B, T, d); memory_mask (B, S) bool; memory (B, S, d) or its ``kv`` heads ->
        (B, T, d)."""
        k, v = kv if kv is not None else self.memory_heads(memory)
        q = split_heads(self.q(x), self.n_heads)  # (B, H, T, D)
        p = self.dropout if self.training else 0.0
        y = memory_attention(q, k.to(q.dtype), v.to(q.dtype), memory_mask, p)
        return self.out(merge_heads(y))


def sinusoid(positions: torch.Tensor, d_model: int, dtype: torch.dtype = torch.float32
             ) -> torch.Tensor:
    """Sinusoidal position signal (Vaswani et al. 2017, Sec. 3.5), any length: positions
    (...,) long -> (..., d) with sines in the first half and cosines in the second, timescales
    from 1 to 10^4 (tensor2tensor's layout)."""
    half = d_model // 2
    scale = math.log(10000.0) / max(half - 1, 1)
    inv = torch.exp(torch.arange(half, device=positions.device, dtype=torch.float32) * -scale)
    angle = positions.to(torch.float32).unsqueeze(-1) * inv  # (..., d/2)
    return torch.cat([angle.sin(), angle.cos()], dim=-1).to(dtype)
