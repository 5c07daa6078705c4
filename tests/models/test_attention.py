"""Attention kinds of T-D / T-DMCA: causality at awkward lengths, local = full when one block
covers the sequence, memory-compressed = a brute-force reference, cached steps = a full pass."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from wikisum.models import attention, cpu_kernels
from wikisum.models.attention import AttentionCache, CausalSelfAttention

LENGTHS = [1, 2, 3, 7, 255, 256, 257, 769]
BLOCK = 256
D, HEADS = 8, 2


def layer(kind: str, block_size: int = BLOCK, previous_block: bool = True,
          d: int = D, heads: int = HEADS) -> CausalSelfAttention:
    torch.manual_seed(0)
    module = CausalSelfAttention(d, heads, kind, block_size, previous_block).eval()
    if kind == "compressed":  # a null slot that stands out, so a wrong mask shows
        with torch.no_grad():
            module.null_k.normal_()
            module.null_v.normal_()
    return module


def cut_points(length: int) -> list[int]:
    """Positions t after which the input is changed: sequence start, block edges, the end."""
    points = {0, length // 2, BLOCK - 1, BLOCK, length - 2}
    return sorted(t for t in points if 0 <= t < length - 1)


CONFIGS = [("full", True), ("local", True), ("local", False), ("compressed", True)]


@pytest.mark.parametrize("kind,previous_block", CONFIGS)
@pytest.mark.parametrize("length", LENGTHS)
def test_no_later_position_changes_an_earlier_output(kind, previous_block, length):
    module = layer(kind, previous_block=previous_block)
    torch.manual_seed(length)
    x = torch.randn(1, length, D)
    with torch.no_grad():
        y = module(x)[0]
        assert y.shape == (1, length, D) and torch.isfinite(y).all()
        for t in cut_points(length):
            changed = x.clone()
            changed[:, t + 1:] = torch.randn(1, length - t - 1, D) * 3
            y2 = module(changed)[0]
            torch.testing.assert_close(y2[:, :t + 1], y[:, :t + 1], rtol=0, atol=1e-6,
                                       msg=f"{kind}: position <= {t} saw a later position")
            # The change does arrive (at the last position, which every kind lets see
            # itself or, compressed, a complete window from length 3 on).
            if kind != "compressed" or length >= 3:
                assert not torch.allclose(y2[:, -1], y[:, -1])


@pytest.mark.parametrize("length", [1, 5, 64])
@pytest.mark.parametrize("previous_block", [True, False])
def test_local_attention_with_one_block_is_full_causal_attention(length, previous_block):
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 3, length, 4) for _ in range(3))
    full = attention.causal_attention(q, k, v)
    local = attention.local_attention(q, k, v, block_size=64, previous_block=previous_block)
    torch.testing.assert_close(local, full)
    # The modules too: same weights, one block covering the sequence.
    full_layer, local_layer = layer("full"), layer("local", block_size=64)
    local_layer.load_state_dict(full_layer.state_dict())
    x = torch.randn(2, length, D)
    with torch.no_grad():
        torch.testing.assert_close(local_layer(x)[0], full_layer(x)[0])


@pytest.mark.parametrize("previous_block", [True, False])
def test_local_attention_equals_dense_attention_with_the_band_mask(previous_block):
    """Block size 4 over 11 positions: query i sees j <= i in its block, plus the whole
    previous block when previous_block (brute-force mask built position by position)."""
    torch.manual_seed(0)
    length, bs = 11, 4
    q, k, v = (torch.randn(1, 2, length, 4) for _ in range(3))
    mask = torch.zeros(length, length, dtype=torch.bool)
    for i in range(length):
        for j in range(i + 1):
            same = j // bs == i // bs
            previous = j // bs == i // bs - 1
            mask[i, j] = same or (previous_block and previous)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    got = attention.local_attention(q, k, v, bs, previous_block)
    torch.testing.assert_close(got, expected)


def brute_force_compressed(module: CausalSelfAttention, x: torch.Tensor) -> torch.Tensor:
    """Memory-compressed attention written out: for each query i, slot j = conv over raw keys
    at positions 3j, 3j+1, 3j+2 computed by hand, usable iff 3j + 2 <= i; the null slot always.
    x (1, T, d) -> (1, T, d)."""
    d, h = module.d_model, module.n_heads
    dh = d // h
    w_qkv, b_qkv = module.qkv.weight, module.qkv.bias
    t = x.shape[1]
    out = torch.zeros(t, d)
    q = x[0] @ w_qkv[:d].T + b_qkv[:d]  # (T, d)
    k = x[0] @ w_qkv[d:2 * d].T + b_qkv[d:2 * d]
    v = x[0] @ w_qkv[2 * d:].T + b_qkv[2 * d:]

    def conv(raw, c, start):  # one output of Conv1d(d, d, 3, stride 3): sum over taps
        return c.bias + sum(c.weight[:, :, tap] @ raw[start + tap] for tap in range(3))

    for i in range(t):
        keys = [module.null_k]
        values = [module.null_v]
        for j in range(t):
            if 3 * j + 2 <= i:
                keys.append(conv(k, module.compress_k, 3 * j))
                values.append(conv(v, module.compress_v, 3 * j))
        keys, values = torch.stack(keys), torch.stack(values)  # (1 + usable, d)
        heads = []
        for head in range(h):
            cols = slice(head * dh, (head + 1) * dh)
            scores = keys[:, cols] @ q[i, cols] / math.sqrt(dh)
            heads.append(torch.softmax(scores, dim=0) @ values[:, cols])
        out[i] = torch.cat(heads)
    return (out @ module.out.weight.T + module.out.bias).unsqueeze(0)


@pytest.mark.parametrize("length", [1, 2, 3, 4, 8, 10])
def test_compressed_attention_equals_a_brute_force_reference(length):
    module = layer("compressed")
    torch.manual_seed(1)
    x = torch.randn(1, length, D)
    with torch.no_grad():
        torch.testing.assert_close(module(x)[0], brute_force_compressed(module, x),
                                   rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind,previous_block", CONFIGS)
def test_cached_steps_from_ragged_prefills_equal_a_full_pass(kind, previous_block):
    """Rows prefilled with 5, 2 and 0 positions (right-padded with noise), then stepped one
    position at a time, with a reorder in the middle: every step equals the full pass of that
    row alone."""
    module = layer(kind, block_size=4, previous_block=previous_block)
    torch.manual_seed(2)
    total = 15
    rows = torch.randn(3, total, D)  # row r's full input sequence
    lengths = torch.tensor([5, 2, 0])
    with torch.no_grad():
        expected = [module(rows[r:r + 1])[0][0] for r in range(3)]  # (T, d) each
        prefix = rows[:, :5].clone()
        prefix[1, 2:] = torch.randn(3, D) * 5  # padding content must not matter
        prefix[2] = torch.randn(5, D) * 5
        _, cache = module(prefix, return_cache=True)
        lengths_now, which, length_bound = lengths.clone(), torch.arange(3), 5
        for s in range(9):
            if s == 4:
                index = torch.tensor([2, 0, 0, 1])
                cache, lengths_now, which = (cache.index_select(index), lengths_now[index],
                                             which[index])
            x = rows[which, lengths_now]  # (N, d): each row's next input
            y, cache = module.step(x, cache, lengths_now, length_bound + 1)
            for n, r in enumerate(which.tolist()):
                torch.testing.assert_close(y[n], expected[r][lengths_now[n]], rtol=1e-5,
                                           atol=1e-5, msg=f"{kind}: step {s}, row {r}")
            lengths_now, length_bound = lengths_now + 1, length_bound + 1


def test_a_step_on_an_empty_cache_equals_position_zero():
    for kind in attention.KINDS:
        module = layer(kind)
        x = torch.randn(2, 1, D)
        with torch.no_grad():
            y, _ = module.step(x[:, 0], AttentionCache(), torch.zeros(2, dtype=torch.long), 1)
            torch.testing.assert_close(y, module(x)[0][:, 0])


def test_a_steps_attention_over_the_null_and_the_slots_equals_one_over_their_concatenation():
    """Rows that may use all, some or none of 300 slots (the last: the null slot alone, whose
    value is then the output), with large scores, so that merging the two softmax parts shows
    any error."""
    gen = torch.Generator().manual_seed(0)
    n, h, s, dh = 3, HEADS, 300, D // HEADS
    q = 4 * torch.randn(n, h, 1, dh, generator=gen)
    k, v = torch.randn(n, h, s, dh, generator=gen), torch.randn(n, h, s, dh, generator=gen)
    null_k, null_v = torch.randn(D, generator=gen), torch.randn(D, generator=gen)
    usable = torch.arange(s).unsqueeze(0) < torch.tensor([[s], [17], [0]])  # (N, S)
    got = attention.attention_with_null(q, k, v, null_k, null_v, usable)
    mask = torch.cat([usable.new_ones(n, 1), usable], dim=1)[:, None, None, :]
    expected = F.scaled_dot_product_attention(q, cpu_kernels.with_null(k, null_k),
                                              cpu_kernels.with_null(v, null_v), attn_mask=mask)
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(got[2, :, 0], null_v.view(h, dh))


@pytest.mark.parametrize("kind", attention.KINDS)
def test_runs_under_bf16_autocast(kind):
    module = CausalSelfAttention(D, HEADS, kind, block_size=4)
    x = torch.randn(2, 13, D, requires_grad=True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y, cache = module(x, return_cache=True)
        step, _ = module.step(x[:, 0], cache, torch.tensor([13, 13]), 14)
    assert y.dtype == torch.bfloat16 and torch.isfinite(y.float()).all()
    assert torch.isfinite(step.float()).all()
    y.float().sum().backward()
    assert torch.isfinite(x.grad).all()


def test_unknown_kind_is_a_clear_error():
    with pytest.raises(ValueError, match="'global'.*full, local, compressed"):
        CausalSelfAttention(D, HEADS, "global")


def test_masks_by_hand():
    # Slot j covers [3j, 3j+2]; query 5 may use slot 0 (ends at 2) and slot 1 (ends at 5).
    mask = attention.compressed_mask(7, 2, 3, 3)
    assert mask[:, 0].all()
    assert mask[:, 1].tolist() == [False, False, True, True, True, True, True]
    assert mask[:, 2].tolist() == [False, False, False, False, False, True, True]
    assert attention.slot_count(2, 3, 3) == 0 and attention.slot_count(8, 3, 3) == 2
    local = attention.local_mask(2, 2, previous_block=True)  # (blocks, bs, 2 bs)
    assert local[0].tolist() == [[False, False, True, False], [False, False, True, True]]
    assert local[1].tolist() == [[True, True, True, False], [True, True, True, True]]


def test_sinusoid_has_no_maximum_length():
    pe = attention.sinusoid(torch.tensor([0, 1, 50_000]), 8)
    assert pe.shape == (3, 8)
    torch.testing.assert_close(pe[0], torch.tensor([0.0] * 4 + [1.0] * 4))
    assert pe[1, 0] == pytest.approx(math.sin(1.0))  # timescale 1 for the first pair
    assert torch.isfinite(pe).all()


# ---------------------------------------------------------------------------------------------
# The fused constructions equal the masked ones, in outputs and gradients

FUSED_LENGTHS = [1, 2, 3, 7, 255, 256, 257, 769, 1000]


def grads_of(fn, *tensors: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
    leaves = [t.detach().clone().requires_grad_(True) for t in tensors]
    out = fn(*leaves)
    weights = torch.linspace(-1, 1, out.numel(), dtype=out.dtype).view_as(out)
    (out * weights).sum().backward()
    # No gradient at all where the output does not depend on a tensor (queries that can use
    # the null slot alone): zero, as the masked construction gives.
    return out.detach(), [torch.zeros_like(leaf) if leaf.grad is None else leaf.grad
                          for leaf in leaves]


def assert_same_values_and_grads(attend, reference, qkv, *args) -> None:
    """``attend(q, k, v, *args)`` equals ``reference(q, k, v, *args)`` in its output and in the
    gradients of q, k and v."""
    got, got_grads = grads_of(lambda a, b, c: attend(a, b, c, *args), *qkv)
    want, want_grads = grads_of(lambda a, b, c: reference(a, b, c, *args), *qkv)
    torch.testing.assert_close(got, want)
    for mine, theirs in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(mine, theirs)


@pytest.mark.parametrize("kernel,stride", [(3, 3), (2, 3), (5, 3), (7, 3), (4, 2), (1, 1)])
@pytest.mark.parametrize("length", FUSED_LENGTHS)
def test_fused_compressed_attention_equals_the_masked_reference(length, kernel, stride):
    torch.manual_seed(length)
    slots = 1 + attention.slot_count(length, kernel, stride)
    q = torch.randn(2, 2, length, 4, dtype=torch.float64)
    ks, vs = (torch.randn(2, 2, slots, 4, dtype=torch.float64) for _ in range(2))
    fused, fused_grads = grads_of(
        lambda a, b, c: attention.compressed_attention(a, b, c, kernel, stride), q, ks, vs)
    ref, ref_grads = grads_of(
        lambda a, b, c: attention.compressed_attention_reference(a, b, c, kernel, stride),
        q, ks, vs)
    torch.testing.assert_close(fused, ref)
    for got, want in zip(fused_grads, ref_grads, strict=True):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("previous_block", [True, False])
@pytest.mark.parametrize("block_size", [4, 7, 256])
@pytest.mark.parametrize("length", FUSED_LENGTHS)
def test_fused_local_attention_equals_the_masked_one(length, block_size, previous_block):
    torch.manual_seed(length)
    q, k, v = (torch.randn(1, 2, length, 4, dtype=torch.float64) for _ in range(3))
    assert_same_values_and_grads(attention.local_attention_fused, attention.local_attention,
                                 (q, k, v), block_size, previous_block)


@pytest.mark.parametrize("offset", [-3, -1, 0, 1, 2, 5])
def test_causal_with_offset_lets_query_m_use_keys_up_to_m_plus_offset(offset):
    torch.manual_seed(0)
    m, n_keys = 6, 5
    q = torch.randn(1, m, 4, dtype=torch.float64)
    k, v = (torch.randn(1, n_keys, 4, dtype=torch.float64) for _ in range(2))
    mask = torch.zeros(m, n_keys, dtype=torch.bool)
    for i in range(m):
        mask[i, :max(1, min(n_keys, i + offset + 1))] = True  # key 0 always
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    torch.testing.assert_close(attention.causal_with_offset(q, k, v, offset), expected)


@pytest.mark.parametrize("length", [257, 1000])
def test_fused_compressed_attention_is_causal(length):
    torch.manual_seed(1)
    q = torch.randn(1, 2, length, 4, dtype=torch.float64)
    slots = 1 + attention.slot_count(length, 3, 3)
    ks, vs = (torch.randn(1, 2, slots, 4, dtype=torch.float64) for _ in range(2))
    y = attention.compressed_attention(q, ks, vs, 3, 3)
    t = length // 2  # slots from position t on change; outputs up to t - 1 must not
    first_changed = -(-(t - 2) // 3) if t >= 2 else 0
    ks2, vs2 = ks.clone(), vs.clone()
    ks2[:, :, 1 + first_changed:] += 5
    vs2[:, :, 1 + first_changed:] += 5
    q2 = q.clone()
    q2[:, :, t:] += 5
    y2 = attention.compressed_attention(q2, ks2, vs2, 3, 3)
    torch.testing.assert_close(y2[:, :, :t], y[:, :, :t])
    assert not torch.allclose(y2[:, :, -1], y[:, :, -1])


# The CPU flash-kernel attention (what a CPU training step runs): the same values and
# gradients as the reference constructions, at awkward lengths and across query chunks.


def test_the_cpu_kernel_path_is_taken_without_dropout_only():
    q = torch.zeros(1, 1, 4, 4)
    assert cpu_kernels.use_flash_cpu(q, 0.0)
    assert not cpu_kernels.use_flash_cpu(q, 0.1)


@pytest.mark.parametrize("chunk_rows", [cpu_kernels.LOCAL_CHUNK_ROWS, 8])
@pytest.mark.parametrize("previous_block", [True, False])
@pytest.mark.parametrize("block_size", [4, 7, 256])
@pytest.mark.parametrize("length", FUSED_LENGTHS)
def test_cpu_local_attention_equals_the_masked_one(length, block_size, previous_block,
                                                   chunk_rows, monkeypatch):
    monkeypatch.setattr(cpu_kernels, "LOCAL_CHUNK_ROWS", chunk_rows)  # 8: 1 or 2 blocks a call
    torch.manual_seed(length)
    q, k, v = (torch.randn(2, 2, length, 4, dtype=torch.float64) for _ in range(3))
    assert_same_values_and_grads(cpu_kernels.local_attention_cpu, attention.local_attention,
                                 (q, k, v), block_size, previous_block)


def layer_grads(module: CausalSelfAttention, x: torch.Tensor, cpu_kernel: bool, monkeypatch):
    """Output and gradients (input and every parameter) of one layer, through the CPU kernel
    path or the reference path."""
    if not cpu_kernel:
        monkeypatch.setattr(attention, "use_flash_cpu", lambda q, p: False)
    x = x.detach().clone().requires_grad_(True)
    y, _ = module(x)
    weights = torch.linspace(-1, 1, y.numel(), dtype=y.dtype).view_as(y)
    inputs = [x, *module.parameters()]
    grads = torch.autograd.grad((y * weights).sum(), inputs, allow_unused=True)
    monkeypatch.undo()
    return y.detach(), [torch.zeros_like(t) if g is None else g for t, g in zip(inputs, grads,
                                                                                 strict=True)]


@pytest.mark.parametrize("kernel,stride", [(3, 3), (2, 3), (5, 3), (7, 3), (4, 2), (1, 1)])
@pytest.mark.parametrize("length", FUSED_LENGTHS)
def test_cpu_compressed_layer_equals_the_reference_path(length, kernel, stride, monkeypatch):
    """Slots recomputed in the backward pass: the convolutions' and null slots' gradients too."""
    torch.manual_seed(length)
    module = CausalSelfAttention(8, 2, "compressed", compress_kernel=kernel,
                                 compress_stride=stride).double()
    x = torch.randn(2, length, 8, dtype=torch.float64)
    got, got_grads = layer_grads(module, x, True, monkeypatch)
    ref, ref_grads = layer_grads(module, x, False, monkeypatch)
    torch.testing.assert_close(got, ref)
    for mine, want in zip(got_grads, ref_grads, strict=True):
        torch.testing.assert_close(mine, want)


@pytest.mark.parametrize("kind", ["local", "compressed"])
def test_cpu_kernel_layers_keep_no_more_than_full_attention(kind):
    """What the backward pass keeps (tensor storage saved by autograd, parameters aside) is
    no more than a full-attention layer keeps: the projection's output, the layer input, the
    output and its log-sum-exp (at a length of whole blocks and strides: otherwise the output
    holds the padding of the last one)."""

    def saved_bytes(module: CausalSelfAttention) -> int:
        storages = {}

        def pack(t):
            storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
            return t

        params = {p.untyped_storage().data_ptr() for p in module.parameters()}
        x = torch.randn(1, 960, 64, requires_grad=True)  # 15 blocks of 64, 320 strides
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            module(x)
        return sum(n for ptr, n in storages.items() if ptr not in params)

    torch.manual_seed(0)
    full = saved_bytes(CausalSelfAttention(64, 4, "full", block_size=64))
    assert saved_bytes(CausalSelfAttention(64, 4, kind, block_size=64)) <= full
