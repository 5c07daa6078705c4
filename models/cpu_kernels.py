"""The CPU autograd kernels of the attention in :mod:`wikisum.models.attention`, built on
PyTorch's CPU flash-attention ops (``torch.ops.aten._scaled_dot_product_flash_attention_for_cpu``
and its backward, private ops that return the log-sum-exp that merging partial results needs).

- :class:`_LocalAttentionCPU`: local causal attention in chunks of query rows, keeping the
  output and log-sum-exp only (the blocks are made again in the backward pass).
- :class:`_CompressedAttentionCPU`: memory-compressed attention from the raw keys and values,
  one causal call with an offset per residue class of the position modulo the stride.

:func:`use_flash_cpu` says where they run (a CPU tensor, no dropout, a torch with the ops);
elsewhere the attention modules use the fused ``scaled_dot_product_attention`` paths. The
slot construction (:func:`compress`, :func:`with_null`) is here because the compressed kernel
makes the slots again in its backward pass; the attention modules use it too.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

# The CPU flash kernel's forward (output and log-sum-exp) and backward, called directly where
# the attention needs the log-sum-exp (merging partial results) or a custom backward pass.
_FLASH_CPU = getattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu", None)
_FLASH_CPU_BACKWARD = getattr(
    torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None)
LOCAL_CHUNK_ROWS = 2048  # query rows per call of the CPU local attention (both passes)


def _block_rows(x: torch.Tensor, first: int, count: int, block_size: int) -> torch.Tensor:
    """Blocks ``first`` .. ``first + count - 1`` of x (B, H, T, D) as a contiguous
    (BH, count, bs, D) copy, zero rows past T."""
    b, h, t, d = x.shape
    start, end = first * block_size, (first + count) * block_size
    part = x[:, :, start:min(end, t)]
    if end > t:
        part = F.pad(part, (0, 0, 0, end - t))
    return part.reshape(b * h, count, block_size, d)


class _LocalAttentionCPU(torch.autograd.Function):
    """:func:`.attention.local_attention` with the CPU flash kernel, keeping nothing but the
    output and its log-sum-exp (what full attention keeps).

    A block's queries attend to their own block (a causal call) and to the whole previous
    block (an unmasked call); the two partial results are merged by their log-sum-exps, as
    blockwise attention does, so each block costs 1.5 bs^2 scores and no mask exists. The
    backward pass gives each call the merged output and log-sum-exp, which makes its gradients
    those of the whole softmax. Both passes go ``LOCAL_CHUNK_ROWS`` query rows at a time, so the
    padded block copies never exist for the whole sequence; the inputs q, k, v are kept as they
    came (views of the projection's output, which the layer holds anyway).
    """

    @staticmethod
    def forward(ctx, q, k, v, block_size, previous_block):
        b, h, t, d = q.shape
        n = -(-t // block_size)
        step = max(1, LOCAL_CHUNK_ROWS // block_size)
        store = q.new_empty(b, n, block_size, h, d)  # (B, T', H, D): merging heads is a view
        lse_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32
        lse = torch.empty(b * h, n, block_size, dtype=lse_dtype, device=q.device)
        for a in range(0, n, step):
            c = min(step, n - a)
            qb = _block_rows(q, a, c, block_size)
            o, l_own = _FLASH_CPU(qb, _block_rows(k, a, c, block_size),
                                  _block_rows(v, a, c, block_size), 0.0, True)
            if previous_block:
                lo = 1 if a == 0 else 0  # block 0 has no previous block
                if c > lo:
                    o_prev, l_prev = _FLASH_CPU(qb[:, lo:],
                                                _block_rows(k, a + lo - 1, c - lo, block_size),
                                                _block_rows(v, a + lo - 1, c - lo, block_size),
                                                0.0, False)
                    mine = l_own[:, lo:]
                    merged = torch.logaddexp(mine, l_prev)
                    mixed = o[:, lo:]
                    mixed.mul_(torch.exp(mine - merged).unsqueeze(-1).to(o.dtype))
                    mixed.add_(o_prev.mul_(torch.exp(l_prev - merged).unsqueeze(-1).to(o.dtype)))
                    l_own[:, lo:] = merged
            store[:, a:a + c] = o.view(b, h, c, block_size, d).permute(0, 2, 3, 1, 4)
            lse[:, a:a + c] = l_own
        out = store.view(b, n * block_size, h, d).transpose(1, 2)  # (B, H, T', D)
        ctx.save_for_backward(q, k, v, out, lse)
        ctx.block_size, ctx.previous_block = block_size, previous_block
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, out, lse = ctx.saved_tensors
        bs, previous = ctx.block_size, ctx.previous_block
        b, h, t, d = q.shape
        n = out.shape[2] // bs
        step = max(1, LOCAL_CHUNK_ROWS // bs)
        gq, gk, gv = (torch.zeros(b * h, n, bs, d, dtype=x.dtype, device=x.device)
                      for x in (q, k, v))
        for a in range(0, n, step):
            c = min(step, n - a)
            qb = _block_rows(q, a, c, bs)
            g, o = _block_rows(grad, a, c, bs), _block_rows(out, a, c, bs)
            lo_ = lse[:, a:a + c]
            dq, dk, dv = _FLASH_CPU_BACKWARD(g, qb, _block_rows(k, a, c, bs),
                                             _block_rows(v, a, c, bs), o, lo_, 0.0, True)
            gq[:, a:a + c] += dq
            gk[:, a:a + c] += dk
            gv[:, a:a + c] += dv
            first = 1 if a == 0 else 0
            if previous and c > first:
                dq, dk, dv = _FLASH_CPU_BACKWARD(
                    g[:, first:].contiguous(), qb[:, first:],
                    _block_rows(k, a + first - 1, c - first, bs),
                    _block_rows(v, a + first - 1, c - first, bs),
                    o[:, first:], lo_[:, first:], 0.0, False)
                gq[:, a + first:a + c] += dq
                gk[:, a + first - 1:a + c - 1] += dk
                gv[:, a + first - 1:a + c - 1] += dv
        unblock = (lambda x: x.reshape(b, h, n * bs, d)[:, :, :t])  # noqa: E731
        return unblock(gq), unblock(gk), unblock(gv), None, None


def local_attention_cpu(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_size: int,
                        previous_block: bool = True) -> torch.Tensor:
    """:func:`.attention.local_attention` through :class:`_LocalAttentionCPU` (no dropout): q, k, v
    (B, H, T, D) -> (B, H, T, D)."""
    return _LocalAttentionCPU.apply(q, k, v, block_size, previous_block)[:, :, :q.shape[2]]


def use_flash_cpu(q: torch.Tensor, dropout_p: float) -> bool:
    """Whether the CPU flash kernel's attention (:func:`local_attention_cpu`,
    :class:`_CompressedAttentionCPU`) can run: a CPU tensor, no dropout (the kernel has none),
    and a torch with the kernel's ops."""
    return (q.device.type == "cpu" and dropout_p == 0.0 and _FLASH_CPU is not None
            and _FLASH_CPU_BACKWARD is not None)


def _flash_with_offset(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, offset: int
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`.attention.causal_with_offset` by the CPU flash kernel, with the log-sum-exp:
    q (B, H, M, D); k, v (B, H, K, D) -> out (B, H, M, D), lse (B, H, M)."""
    m = q.shape[-2]
    if offset > 0:
        o, lse = _FLASH_CPU(F.pad(q, (0, 0, offset, 0)), k, v, 0.0, True)
        return o[..., offset:, :], lse[..., offset:]
    if offset == 0:
        return _FLASH_CPU(q, k, v, 0.0, True)
    alone = min(-offset, m)  # queries that may use key 0 alone: its value, score q . k0
    scale = q.shape[-1] ** -0.5
    first = v[..., :1, :].expand(*v.shape[:-2], alone, v.shape[-1])
    first_lse = (q[..., :alone, :] * k[..., :1, :]).sum(-1).float() * scale
    if alone == m:
        return first.to(q.dtype), first_lse
    o, lse = _FLASH_CPU(q[..., alone:, :], k, v, 0.0, True)
    return torch.cat([first.to(o.dtype), o], dim=-2), torch.cat([first_lse.to(lse.dtype), lse],
                                                                 dim=-1)


def _flash_with_offset_backward(grad: torch.Tensor, q: torch.Tensor, k: torch.Tensor,
                                v: torch.Tensor, out: torch.Tensor, lse: torch.Tensor,
                                offset: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Gradients of :func:`_flash_with_offset` for q, k, v. Placeholder queries (offset > 0)
    get a zero gradient, which makes their part zero whatever output they are given."""
    m = q.shape[-2]
    if offset > 0:
        pad = (0, 0, offset, 0)
        dq, dk, dv = _FLASH_CPU_BACKWARD(F.pad(grad, pad), F.pad(q, pad), k, v, F.pad(out, pad),
                                         F.pad(lse, (offset, 0)), 0.0, True)
        return dq[..., offset:, :], dk, dv
    if offset == 0:
        return _FLASH_CPU_BACKWARD(grad, q, k, v, out, lse, 0.0, True)
    alone = min(-offset, m)  # softmax over one key: only its value gets a gradient
    dq = torch.zeros_like(q)
    dk, dv = torch.zeros_like(k), torch.zeros_like(v)
    dv[..., :1, :] = grad[..., :alone, :].sum(-2, keepdim=True)
    if alone < m:
        dq_r, dk_r, dv_r = _FLASH_CPU_BACKWARD(grad[..., alone:, :].contiguous(),
                                               q[..., alone:, :], k, v, out[..., alone:, :],
                                               lse[..., alone:], 0.0, True)
        dq[..., alone:, :] = dq_r
        dk += dk_r
        dv += dv_r
    return dq, dk, dv


def compress(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, kernel: int,
             stride: int, heads: int) -> torch.Tensor:
    """Raw keys or values (B, T, d) -> compressed slots (B, H, S, D): a strided convolution
    over the sequence (none while T < kernel)."""
    b, t, d = x.shape
    if t < kernel:
        return x.new_zeros(b, heads, 0, d // heads)
    slots = F.conv1d(x.transpose(1, 2), weight, bias, stride).transpose(1, 2)  # (B, S, d)
    return slots.view(b, slots.shape[1], heads, d // heads).transpose(1, 2)  # (B, H, S, D)


def with_null(slots: torch.Tensor, null: torch.Tensor) -> torch.Tensor:
    """(B, H, S, D) -> (B, H, 1 + S, D): the null slot (d,) first."""
    b, h, _, d = slots.shape
    return torch.cat([null.to(slots.dtype).view(1, h, 1, d).expand(b, h, 1, d), slots], dim=2)


class _CompressedAttentionCPU(torch.autograd.Function):
    """:class:`CausalSelfAttention`'s compressed attention from the raw keys and values, with
    the CPU flash kernel, keeping what a full-attention layer keeps: its inputs (views of the
    projection's output), the output and its log-sum-exp. The compressed slots are made again
    from the raw keys and values in the backward pass (two strided convolutions, about 1 % of a
    T-DMCA step), so they are not kept; the queries go one residue class of the position modulo
    the stride at a time (:func:`compressed_attention`), each a causal call with an offset.

    Inputs: q (B, H, T, D); k, v (B, T, d) raw; each convolution's weight and bias; the null
    slots (d,); kernel, stride. Output (B, H, M * stride, D), M = ceil(T / stride), laid out so
    that merging the heads needs no copy.
    """

    @staticmethod
    def _slots(k, v, wk, bk, wv, bv, null_k, null_v, kernel, stride, heads):
        """Keys and values (B, H, 1 + S, D) with the null slot first."""
        return (with_null(compress(k, wk, bk, kernel, stride, heads), null_k),
                with_null(compress(v, wv, bv, kernel, stride, heads), null_v))

    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu")
    def forward(ctx, q, k, v, wk, bk, wv, bv, null_k, null_v, kernel, stride):
        b, h, t, d = q.shape
        ks, vs = _CompressedAttentionCPU._slots(k, v, wk, bk, wv, bv, null_k, null_v, kernel,
                                                stride, h)
        m = -(-t // stride)
        store = q.new_zeros(b, m, stride, h, d)  # (B, T', H, D) once flattened
        lse_dtype = torch.float64 if q.dtype == torch.float64 else torch.float32
        lse = torch.zeros(b, h, m, stride, dtype=lse_dtype, device=q.device)
        for r in range(min(stride, t)):
            q_r = q[:, :, r::stride]  # (B, H, M_r, D), M_r = ceil((T - r) / stride)
            o, l_r = _flash_with_offset(q_r, ks, vs, (r - kernel + 1) // stride + 1)
            store[:, :q_r.shape[2], r] = o.transpose(1, 2)
            lse[:, :, :q_r.shape[2], r] = l_r
        out = store.view(b, m * stride, h, d).transpose(1, 2)  # (B, H, T', D)
        ctx.save_for_backward(q, k, v, wk, bk, wv, bv, null_k, null_v, out, lse)
        ctx.kernel, ctx.stride = kernel, stride
        return out

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad):
        q, k, v, wk, bk, wv, bv, null_k, null_v, out, lse = ctx.saved_tensors
        kernel, stride = ctx.kernel, ctx.stride
        b, h, t, d = q.shape
        m = out.shape[2] // stride
        inputs = [x.detach().requires_grad_(need) for x, need in
                  zip((k, v, wk, bk, wv, bv, null_k, null_v), ctx.needs_input_grad[1:9],
                      strict=True)]
        with torch.enable_grad():
            ks, vs = _CompressedAttentionCPU._slots(*inputs, kernel, stride, h)
        dq = torch.zeros(b, h, m, stride, d, dtype=q.dtype, device=q.device)
        dks, dvs = torch.zeros_like(ks), torch.zeros_like(vs)
        for r in range(min(stride, t)):
            q_r = q[:, :, r::stride]
            rows = q_r.shape[2]
            dq_r, dk_r, dv_r = _flash_with_offset_backward(
                grad[:, :, r::stride][:, :, :rows].contiguous(), q_r, ks.detach(), vs.detach(),
                out[:, :, r::stride][:, :, :rows], lse[:, :, :rows, r].contiguous(),
                (r - kernel + 1) // stride + 1)
            dq[:, :, :rows, r] = dq_r
            dks += dk_r
            dvs += dv_r
        wanted = [x for x in inputs if x.requires_grad]
        found = iter(torch.autograd.grad((ks, vs), wanted, (dks, dvs), allow_unused=True)
                     if wanted else ())
        rest = [next(found) if x.requires_grad else None for x in inputs]
        return (dq.view(b, h, m * stride, d)[:, :, :t], *rest, None, None)
