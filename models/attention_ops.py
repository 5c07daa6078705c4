"""The attention ops of the Transformer family of Liu et al. (2018), "Generating Wikipedia by
Summarizing Long Sequences": pure functions over projected heads for full, local and
memory-compressed causal self-attention and attention over an encoder memory. The layers of
:mod:`wikisum.models.attention` own the projections and the caches and call them (the split of
lucidrains' ``local-attention``).

Every op goes through ``torch.nn.functional.scaled_dot_product_attention``. Training and prefill
use its fused causal kernel where it pays: full attention, and compressed attention laid out by
residue class so that its pattern is causal (no mask, no score tensor; the masked construction
is ``compressed_attention_reference``, the reference of the tests). Local attention keeps a
small per-block mask on CPU, where it measured faster than the fused layout
(``local_attention_fused``). A decoding step's compressed attention (one query) takes an explicit
boolean mask (True = may attend).

Shapes: B batch rows, H heads, T positions, D head width; N rows while decoding (B times beams),
S compressed slots, W local window.

Causality, the property every kind keeps: the output at position i depends on positions <= i
only, at every length (also lengths not divisible by the block size or the stride).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def causal_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                     dropout_p: float = 0.0) -> torch.Tensor:
    """Full causal self-attention (T-D). q, k, v (B, H, T, D) -> (B, H, T, D); O(T^2)."""
    return F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout_p)


def local_mask(block_size: int, n_blocks: int, previous_block: bool,
               device: torch.device | None = None) -> torch.Tensor:
    """Which keys each query of a block may use: (n_blocks, block_size, W) bool.

    Keys of block ``a`` are ``[block a-1 ; block a]`` (W = 2 * block_size) with
    ``previous_block``, else block ``a`` alone (W = block_size). Within its own block a query
    sees keys at or before itself; the whole previous block lies before it; block 0 has no
    previous block.
    """
    own = torch.ones(block_size, block_size, dtype=torch.bool, device=device).tril()
    own = own.expand(n_blocks, block_size, block_size)
    if not previous_block:
        return own
    prev = torch.ones(n_blocks, block_size, block_size, dtype=torch.bool, device=device)
    prev[0] = False
    return torch.cat([prev, own], dim=-1)  # (n, bs, 2 bs)


def causal_with_offset(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, offset: int,
                       dropout_p: float = 0.0) -> torch.Tensor:
    """Query m may use keys 0 .. m + offset (and always key 0), through the fused causal kernel
    alone: no mask, no score tensor.

    ``is_causal`` lets query m use keys 0 .. m (top-left aligned). A positive offset is made by
    putting ``offset`` placeholder queries first (their outputs are dropped); a negative one by
    leaving out the first ``-offset`` queries, which may use key 0 alone, so their output is its
    value. q (..., M, D); k, v (..., K, D) -> (..., M, D).
    """
    m = q.shape[-2]
    if offset > 0:
        padded = F.pad(q, (0, 0, offset, 0))
        return F.scaled_dot_product_attention(padded, k, v, is_causal=True,
                                              dropout_p=dropout_p)[..., offset:, :]
    if offset == 0:
        return F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout_p)
    alone = min(-offset, m)
    first = v[..., :1, :].expand(*v.shape[:-2], alone, v.shape[-1])
    if alone == m:
        return first.to(q.dtype)
    rest = F.scaled_dot_product_attention(q[..., alone:, :], k, v, is_causal=True,
                                          dropout_p=dropout_p)
    return torch.cat([first.to(rest.dtype), rest], dim=-2)


def _blocks(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_size: int
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """q, k, v (B, H, T, D) -> (BH, n, bs, D) each, n = ceil(T / bs). Padding goes after every
    real position, so no real query can see it."""
    b, h, t, d = q.shape
    n = -(-t // block_size)
    if n * block_size > t:
        q, k, v = (F.pad(x, (0, 0, 0, n * block_size - t)) for x in (q, k, v))
    return tuple(x.reshape(b * h, n, block_size, d) for x in (q, k, v))


def _windows(x: torch.Tensor, block_size: int) -> torch.Tensor:
    """x (BH, n * bs, D) -> (BH, n, 2 bs, D): for each block a, the rows of blocks a-1 and a
    (zeros before block 0), as overlapping views of one copy of x padded by bs rows in front."""
    bh, t, d = x.shape
    padded = F.pad(x, (0, 0, block_size, 0)).contiguous()  # (BH, bs + T, D)
    n = t // block_size
    return padded.as_strided((bh, n, 2 * block_size, d),
                             ((t + block_size) * d, block_size * d, d, 1))


def local_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_size: int,
                    previous_block: bool = True, dropout_p: float = 0.0) -> torch.Tensor:
    """Local causal attention (T-DMCA): the sequence is cut into blocks of ``block_size`` and a
    query attends within its own block and, with ``previous_block`` (tensor2tensor's
    ``local_attention_1d``), to the block before it; without it blocks are independent, as
    Liu et al. (2018, Sec. 4.2) describe.

    q, k, v (B, H, T, D) -> (B, H, T, D). Memory O(T * block_size): an explicit (blocks, bs, W)
    mask with the previous block (independent blocks are one fused causal call), never (T, T).
    """
    b, h, t, d = q.shape
    qb, kb, vb = _blocks(q, k, v, block_size)  # (BH, n, bs, D) each
    n = qb.shape[1]
    if previous_block:
        # Keys of block a: block a-1 (zeros before block 0, masked) then block a, as
        # overlapping windows of one padded copy (a view: no (BH, n, 2bs, D) copy is kept).
        kb, vb = (_windows(x.reshape(b * h, n * block_size, d), block_size) for x in (kb, vb))
        mask = local_mask(block_size, n, True, q.device).unsqueeze(0)  # (1, n, bs, 2bs)
        out = F.scaled_dot_product_attention(qb, kb, vb, attn_mask=mask, dropout_p=dropout_p)
    else:
        out = F.scaled_dot_product_attention(qb, kb, vb, is_causal=True, dropout_p=dropout_p)
    return out.reshape(b, h, n * block_size, d)[:, :, :t]


def local_attention_fused(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_size: int,
                          previous_block: bool = True, dropout_p: float = 0.0) -> torch.Tensor:
    """Local causal attention (T-DMCA): the sequence is cut into blocks of ``block_size`` and a
    query attends within its own block and, with ``previous_block`` (tensor2tensor's
    ``local_attention_1d``), to the block before it; without it blocks are independent, as
    Liu et al. (2018, Sec. 4.2) describe.

    Fused, with no mask: independent blocks are one causal call over (blocks, bs) rows. With
    the previous block, query i of block a may use keys [block a-1 ; block a][0 .. bs + i], a
    causal pattern shifted by bs (``causal_with_offset``); block 0, which has no previous block,
    is plain causal. q, k, v (B, H, T, D) -> (B, H, T, D); memory O(T) besides the kernel's own.

    It equals :func:`local_attention` (tested), but the shifted pattern needs bs placeholder
    queries per block: on CPU, a T-DMCA step of five local layers at L = 11,000 (base width)
    peaked at 2,735 MiB with it against 2,077 MiB with the masked version (20.7 s against
    18.5 s), so the masked one stays the default; a kernel with lower-right causal alignment
    (CUDA) needs no placeholders.
    """
    b, h, t, d = q.shape
    qb, kb, vb = _blocks(q, k, v, block_size)  # (BH, n, bs, D) each
    n = qb.shape[1]
    first = F.scaled_dot_product_attention(qb[:, :1], kb[:, :1], vb[:, :1], is_causal=True,
                                           dropout_p=dropout_p)  # (BH, 1, bs, D)
    if previous_block and n > 1:
        keys = torch.cat([kb[:, :-1], kb[:, 1:]], dim=2)  # (BH, n-1, 2bs, D)
        values = torch.cat([vb[:, :-1], vb[:, 1:]], dim=2)
        rest = causal_with_offset(qb[:, 1:], keys, values, block_size, dropout_p)
        out = torch.cat([first, rest], dim=1)
    elif n > 1:
        rest = F.scaled_dot_product_attention(qb[:, 1:], kb[:, 1:], vb[:, 1:], is_causal=True,
                                              dropout_p=dropout_p)
        out = torch.cat([first, rest], dim=1)
    else:
        out = first
    return out.reshape(b, h, n * block_size, d)[:, :, :t]


def slot_count(length: int, kernel: int, stride: int) -> int:
    """How many complete convolution windows (compressed slots) ``length`` positions hold."""
    return 0 if length < kernel else (length - kernel) // stride + 1


def slot_ends(n_slots: int, kernel: int, stride: int,
              device: torch.device | None = None) -> torch.Tensor:
    """(S,) long: the last position each compressed slot covers; slot j covers
    ``[stride * j, stride * j + kernel - 1]``."""
    return torch.arange(n_slots, device=device) * stride + (kernel - 1)


def compressed_mask(length: int, n_slots: int, kernel: int, stride: int,
                    device: torch.device | None = None) -> torch.Tensor:
    """(T, 1 + S) bool: query i may use the null slot (column 0) always, and slot j iff its
    whole window lies at or before i (``stride * j + kernel - 1 <= i``)."""
    ends = slot_ends(n_slots, kernel, stride, device)
    usable = ends.unsqueeze(0) <= torch.arange(length, device=device).unsqueeze(1)  # (T, S)
    null = torch.ones(length, 1, dtype=torch.bool, device=device)
    return torch.cat([null, usable], dim=1)


def compressed_attention(q: torch.Tensor, k_slots: torch.Tensor, v_slots: torch.Tensor,
                         kernel: int, stride: int, dropout_p: float = 0.0) -> torch.Tensor:
    """Memory-compressed causal attention (Liu et al. 2018, Sec. 4.2) over slots that already
    hold the null slot first, with the fused causal kernel and no mask.

    Query i may use the null slot and slot j iff ``stride * j + kernel - 1 <= i``. For the
    queries i = stride * m + r of one residue class r this is j <= m + floor((r - kernel + 1) /
    stride): with the null slot as key 0, query m may use keys 0 .. m + c_r, c_r =
    floor((r - kernel + 1) / stride) + 1, a causal pattern shifted by c_r
    (:func:`causal_with_offset`). So: one fused causal call per residue class, about half the
    work of the masked construction (:func:`compressed_attention_reference`) and memory O(T).

    q (B, H, T, D); k_slots, v_slots (B, H, 1 + S, D) -> (B, H, T, D).
    """
    b, h, t, d = q.shape
    m = -(-t // stride)
    pad = m * stride - t
    qp = F.pad(q, (0, 0, 0, pad)) if pad else q
    groups = qp.view(b, h, m, stride, d)  # query stride * m + r at [:, :, m, r]
    outs = [causal_with_offset(groups[:, :, :, r], k_slots, v_slots,
                               (r - kernel + 1) // stride + 1, dropout_p)
            for r in range(stride)]  # each (B, H, M, D)
    return torch.stack(outs, dim=3).reshape(b, h, m * stride, d)[:, :, :t]


def compressed_attention_reference(q: torch.Tensor, k_slots: torch.Tensor,
                                   v_slots: torch.Tensor, kernel: int, stride: int,
                                   dropout_p: float = 0.0) -> torch.Tensor:
    """:func:`compressed_attention` built with an explicit (T, 1 + S) mask: the reference the
    fused version is tested against. Memory O(T * S), S about T / stride."""
    t, s = q.shape[2], k_slots.shape[2] - 1
    mask = compressed_mask(t, s, kernel, stride, q.device)[None, None]  # (1, 1, T, 1 + S)
    return F.scaled_dot_product_attention(q, k_slots, v_slots, attn_mask=mask,
                                          dropout_p=dropout_p)


def attention_with_null(q: torch.Tensor, k_slots: torch.Tensor, v_slots: torch.Tensor,
                        null_k: torch.Tensor, null_v: torch.Tensor, usable: torch.Tensor
                        ) -> torch.Tensor:
    """A decoding step's memory-compressed attention: one query per row over the null slot and
    the cached slots, without concatenating them (``with_null`` copies every slot, twice a
    layer and step: at thousands of slots those copies, each a fresh allocation, cost more
    than the attention's arithmetic). The softmax over [null ; slots] is taken in two parts
    merged by their common maximum, in float32.

    q (N, H, 1, D); k_slots, v_slots (N, H, S, D); null_k, null_v (d,); usable (N, S) bool,
    the slots each row may use (the null slot always) -> (N, H, 1, D). Equals
    ``scaled_dot_product_attention`` over ``with_null`` of the slots with the null column
    usable.
    """
    n, h, _, dh = q.shape
    scale = dh ** -0.5
    qf = q.float()
    scores = torch.matmul(q, k_slots.to(q.dtype).transpose(-1, -2)).float() * scale
    scores = scores.masked_fill(~usable[:, None, None, :], float("-inf"))  # (N, H, 1, S)
    null = (qf * null_k.float().view(1, h, 1, dh)).sum(-1, keepdim=True) * scale  # (N,H,1,1)
    top = torch.maximum(scores.amax(-1, keepdim=True), null)  # finite: the null score is
    weights, w_null = torch.exp(scores - top), torch.exp(null - top)
    out = torch.matmul(weights.to(v_slots.dtype), v_slots).float()
    out = out + w_null * null_v.float().view(1, h, 1, dh)
    return (out / (weights.sum(-1, keepdim=True) + w_null)).to(q.dtype)


def memory_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, key_mask: torch.Tensor,
                     dropout_p: float = 0.0) -> torch.Tensor:
    """Attention over a padded memory (encoder self-attention, cross-attention).

    q (B, H, T, D); k, v (B, H, S, D); key_mask (B, S) bool, True at real positions (every row
    needs at least one) -> (B, H, T, D).
    """
    mask = key_mask[:, None, None, :]  # (B, 1, 1, S)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
