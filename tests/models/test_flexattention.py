"""FlexAttention paths of local and memory-compressed attention (models.flexattention): equal
to the reference implementations at lengths not divisible by the block or the stride (outputs,
eager on CPU; outputs and gradients, compiled on CUDA, where tests skip without one), causal,
block masks equal to ``create_block_mask``'s; the ``attention_impl`` setting.

torch runs flex attention's backward pass on CUDA only: on CPU it refuses inputs that need
gradients, eager or compiled. So on CPU the flex path is checked forward (under ``no_grad``),
and its gradients, the model's included, by the CUDA tests below.

Imports torch and the models only, so the file runs where the pipeline's packages are missing
(``pytest --noconftest`` skips the folder's shared fixtures too)."""

from __future__ import annotations

import itertools

import pytest
import torch

from wikisum import models
from wikisum.models import attention, flexattention
from wikisum.models.attention import CausalSelfAttention, slot_count
from wikisum.models.transformer import TransformerConfig, config_from_dict, to_dict

LENGTHS = [1, 2, 3, 7, 255, 256, 257, 769, 1000]
HEADS, D = 2, 8
CUDA = torch.cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device: the compiled FlexAttention "
                                "kernels run on CUDA only")


def tensors(seed: int, *shapes, dtype=torch.float32, device="cpu") -> list[torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(*s, generator=gen).to(device=device, dtype=dtype).requires_grad_()
            for s in shapes]


def run(fn, inputs: list[torch.Tensor], seed: int = 1):
    """fn(*inputs) and the gradients of <output, a fixed random tensor> for every input."""
    leaves = [x.detach().clone().requires_grad_() for x in inputs]
    out = fn(*leaves)
    gen = torch.Generator().manual_seed(seed)
    weight = torch.randn(out.shape, generator=gen).to(out.device, out.dtype)
    (out * weight).sum().backward()
    return out.detach(), [x.grad for x in leaves]


def forward(fn, inputs: list[torch.Tensor]) -> torch.Tensor:
    """fn(*inputs) without gradients (how the flex path runs on CPU)."""
    with torch.no_grad():
        return fn(*(x.detach() for x in inputs))


def assert_same(got, want, **tolerance):
    out, grads = got
    ref, ref_grads = want
    torch.testing.assert_close(out, ref, **tolerance)
    for name, g, r in zip("qkv", grads, ref_grads, strict=True):
        torch.testing.assert_close(g, r, **tolerance, msg=lambda m, n=name: f"d{n}: {m}")


def local_case(length: int, block_size: int, previous_block: bool, seed: int = 0, **kw):
    """Inputs q, k, v of local attention and its flex and reference functions."""
    inputs = tensors(seed, *[(1, HEADS, length, kw.pop("d", D))] * 3, **kw)
    return (inputs,
            lambda q, k, v: flexattention.local_attention_flex(q, k, v, block_size,
                                                               previous_block),
            lambda q, k, v: attention.local_attention(q, k, v, block_size, previous_block))


def compressed_case(length: int, kernel: int, stride: int, seed: int = 0, **kw):
    """Inputs q, k, v (the slots) of compressed attention and its flex and reference
    functions."""
    d = kw.pop("d", D)
    keys = 1 + slot_count(length, kernel, stride)
    inputs = tensors(seed, (1, HEADS, length, d), (1, HEADS, keys, d), (1, HEADS, keys, d), **kw)
    return (inputs,
            lambda q, k, v: flexattention.compressed_attention_flex(q, k, v, kernel, stride),
            lambda q, k, v: attention.compressed_attention_reference(q, k, v, kernel, stride))


# ---------------------------------------------------------------------------------------------
# Eager FlexAttention (CPU) against the reference implementations


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("previous_block", [True, False])
def test_local_flex_equals_the_masked_reference(length, previous_block):
    inputs, flex, ref = local_case(length, 256, previous_block)
    torch.testing.assert_close(forward(flex, inputs), forward(ref, inputs), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("length", [7, 40, 257])
@pytest.mark.parametrize("previous_block", [True, False])
def test_local_flex_with_a_small_block_equals_the_masked_reference(length, previous_block):
    """Block 16: a tile of 128 queries spans eight blocks, so tiles are partial off the
    diagonal too."""
    inputs, flex, ref = local_case(length, 16, previous_block)
    torch.testing.assert_close(forward(flex, inputs), forward(ref, inputs), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("length", LENGTHS)
def test_compressed_flex_equals_the_masked_reference(length):
    inputs, flex, ref = compressed_case(length, 3, 3)
    torch.testing.assert_close(forward(flex, inputs), forward(ref, inputs), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("length", [2, 7, 257])
@pytest.mark.parametrize("kernel,stride", [(5, 2), (2, 4)])
def test_compressed_flex_with_other_windows_equals_the_masked_reference(length, kernel, stride):
    """Overlapping windows (kernel > stride) and gaps between them (kernel < stride)."""
    inputs, flex, ref = compressed_case(length, kernel, stride)
    torch.testing.assert_close(forward(flex, inputs), forward(ref, inputs), atol=1e-5, rtol=1e-5)


def test_the_mask_mods_by_hand():
    q, kv = torch.tensor(5), torch.arange(8)
    # block 4: query 5 is in block 1 (positions 4..7); the previous block is 0..3
    local, independent = (flexattention.local_mask_mod(4, p) for p in (True, False))
    assert local(0, 0, q, kv).tolist() == [1] * 6 + [0] * 2
    assert independent(0, 0, q, kv).tolist() == [0] * 4 + [1] * 2 + [0] * 2
    # kernel 3, stride 2: slot j covers 2j .. 2j + 2, so query 5 has slots 0 and 1 (ends 2, 4)
    # beside the null slot (key 0)
    assert flexattention.compressed_mask_mod(3, 2)(0, 0, q, kv).tolist() == [1] * 3 + [0] * 5


# ---------------------------------------------------------------------------------------------
# Causality, at the layer (the compressed layer's convolutions included)


@pytest.mark.parametrize("kind,previous_block", [("local", True), ("local", False),
                                                 ("compressed", True)])
def test_no_later_position_changes_an_earlier_output(kind, previous_block):
    torch.manual_seed(0)
    module = CausalSelfAttention(D, HEADS, kind, block_size=64, previous_block=previous_block,
                                 attention_impl="flex").eval()
    length = 300
    x = torch.randn(1, length, D)
    with torch.no_grad():
        y = module(x)[0]
        for t in (0, 63, 64, 150, length - 2):
            changed = x.clone()
            changed[:, t + 1:] = torch.randn(1, length - t - 1, D) * 3
            y2 = module(changed)[0]
            torch.testing.assert_close(y2[:, :t + 1], y[:, :t + 1], rtol=0, atol=1e-6,
                                       msg=f"{kind}: a position <= {t} saw a later one")
            assert not torch.allclose(y2[:, -1], y[:, -1])


# ---------------------------------------------------------------------------------------------
# Block masks


def tile_tables(mask) -> tuple[torch.Tensor, torch.Tensor]:
    """A BlockMask's (partial, full) tile tables as (rows, cols) bool."""
    def table(counts, indices):
        rows, cols = indices.shape[-2:]
        dense = torch.zeros(rows, cols, dtype=torch.bool)
        for r in range(rows):
            dense[r, indices[0, 0, r, :counts[0, 0, r]].long()] = True
        return dense

    return (table(mask.kv_num_blocks, mask.kv_indices),
            table(mask.full_kv_num_blocks, mask.full_kv_indices))


def test_block_masks_equal_create_block_mask():
    """The tile tables made from the patterns' bounds equal those create_block_mask makes by
    evaluating the mask_mod at every pair, at awkward lengths and two tile sizes."""
    from torch.nn.attention.flex_attention import create_block_mask

    for length, block, previous, tile in itertools.product(
            [1, 7, 255, 257, 1000], [256, 16, 100], [True, False], [128, 32]):
        ours = flexattention.local_block_mask(length, block, previous, "cpu", tile)
        ref = create_block_mask(flexattention.local_mask_mod(block, previous), 1, 1, length,
                                length, device="cpu", BLOCK_SIZE=tile)
        for a, b in zip(tile_tables(ours), tile_tables(ref), strict=True):
            assert torch.equal(a, b), ("local", length, block, previous, tile)
    for length, (kernel, stride), tile in itertools.product(
            [1, 2, 3, 7, 256, 257, 1000], [(3, 3), (5, 2), (2, 4)], [128, 32]):
        keys = 1 + slot_count(length, kernel, stride)
        ours = flexattention.compressed_block_mask(length, keys, kernel, stride, "cpu", tile)
        ref = create_block_mask(flexattention.compressed_mask_mod(kernel, stride), 1, 1, length,
                                keys, device="cpu", BLOCK_SIZE=tile)
        for a, b in zip(tile_tables(ours), tile_tables(ref), strict=True):
            assert torch.equal(a, b), ("compressed", length, kernel, stride, tile)


def test_block_masks_by_hand_and_cached():
    """Local, block 256, 640 positions in tiles of 128: tile row r (queries 128r ..) holds
    its diagonal tile partially, and fully the tiles of its own and the previous block that
    lie before it."""
    mask = flexattention.local_block_mask(640, 256, True, "cpu")
    partial, full = tile_tables(mask)
    assert partial.nonzero().tolist() == [[r, r] for r in range(5)]
    assert full.nonzero().tolist() == [[1, 0], [2, 0], [2, 1], [3, 0], [3, 1], [3, 2],
                                       [4, 2], [4, 3]]
    assert flexattention.local_block_mask(640, 256, True, "cpu") is mask


# ---------------------------------------------------------------------------------------------
# attention_impl


def test_attention_impl_round_trips_and_old_configs_load_as_auto():
    model = models.build("t-dmca", "tiny", vocab_size=40, attention_impl="flex")
    saved = to_dict(model.config)
    assert saved["attention_impl"] == "flex"
    again = models.from_config("t-dmca", saved)
    assert again.config == model.config
    assert {b.attn.attention_impl for b in again.blocks} == {"flex"}
    del saved["attention_impl"]  # a checkpoint written before the field existed
    assert config_from_dict(saved).attention_impl == "auto"


def test_bad_attention_impl_is_a_clear_error():
    with pytest.raises(ValueError, match="attention_impl 'triton' must be one of auto, sdpa, "
                                         "flex"):
        TransformerConfig(attention_impl="triton")
    with pytest.raises(ValueError, match="unknown attention_impl 'fast'"):
        CausalSelfAttention(D, HEADS, "local", attention_impl="fast")


def test_which_layers_take_flex():
    q = torch.zeros(1, HEADS, 256, 32)
    layer = {(kind, impl): CausalSelfAttention(64, HEADS, kind, attention_impl=impl)
             for kind in ("full", "local", "compressed") for impl in ("auto", "sdpa", "flex")}
    assert not any(layer[kind, impl].uses_flex(q, 0.0)  # auto: on CUDA only
                   for kind in ("full", "local", "compressed") for impl in ("auto", "sdpa"))
    assert not layer["full", "flex"].uses_flex(q, 0.0)
    assert layer["local", "flex"].uses_flex(q, 0.0)
    assert layer["compressed", "flex"].uses_flex(q, 0.0)
    with pytest.raises(ValueError, match="no attention dropout"):
        layer["local", "flex"].uses_flex(q, 0.1)
    assert flexattention.worthwhile(q)
    assert not flexattention.worthwhile(q[:, :, :127])  # shorter than a tile
    assert not flexattention.worthwhile(torch.zeros(1, 1, 256, 24))  # width not a power of 2


def test_a_model_with_flex_equals_one_with_sdpa_on_cpu():
    """T-DMCA (local, compressed, local) at 300 tokens: the logits (the gradients: on CUDA,
    test_a_model_with_flex_equals_one_with_sdpa_on_cuda)."""
    logits = []
    for impl in ("sdpa", "flex"):
        torch.manual_seed(0)
        model = models.build("t-dmca", "tiny", vocab_size=40, dropout=0.0,
                             attention_impl=impl)
        tokens = torch.randint(6, 40, (2, 300), generator=torch.Generator().manual_seed(1))
        with torch.no_grad():
            logits.append(model(tokens))
    torch.testing.assert_close(logits[1], logits[0], atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# CUDA: the compiled kernels. One head width (64, the base model's) throughout, so compiled
# code is shared between the tests; lengths 7, 1000 and 4097 (the second makes torch.compile
# treat the length as dynamic, the third then reuses that code).
#
# Tolerances: float32 1e-3 absolute and relative (the kernel and the reference sum in other
# orders, about 1e-6 apart at the default "highest" float32 matmul precision; a key wrongly let
# in or left out moves its query's outputs by about a value over the keys it attends, a few
# 1e-3 at 512 keys; the masks themselves are checked exactly on CPU above). bf16: the kernel
# runs on bf16 inputs, the reference on the same values in float32; the error relative to the
# reference's norm must stay under 1e-2 (bf16 keeps 8 bits: about 4e-3 per rounding).

CUDA_LENGTHS = [7, 1000, 4097]
CUDA_D = 64
# The patterns of the float32 test: (block size, previous block) or (kernel, stride).
CUDA_PATTERNS = {"local": (256, True), "local-independent": (256, False),
                 "local-block-16": (16, True), "compressed": (3, 3),
                 "compressed-overlapping": (5, 2), "compressed-gaps": (2, 4)}
# (pattern, length) of the float32 test. The other variants differ from the local and the
# compressed pattern only in their masks' bounds, whose outputs are checked at every length on
# CPU above, so they run at one length here (their gradients): listed that way rather than
# skipped, so that a CUDA run reports no skips of its own.
CUDA_FLOAT32_CASES = ([("local", n) for n in CUDA_LENGTHS] + [("compressed", n) for n in
                                                               CUDA_LENGTHS]
                      + [(p, 257) for p in ("local-block-16", "compressed-overlapping",
                                            "compressed-gaps")]
                      + [("local-independent", 1000)])


@pytest.fixture
def enough_recompiles():
    """Room for the compiled variants these tests make (patterns x dtypes x static/dynamic),
    above dynamo's default of 8 per function, past which it would run them eagerly. (Set and
    put back by hand: the name is an alias in newer versions, which monkeypatch's undo
    breaks.)"""
    import torch._dynamo

    config = torch._dynamo.config
    name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
    before = getattr(config, name)
    setattr(config, name, max(64, before))
    yield
    setattr(config, name, before)


def relative_error(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got.float() - want.float()).norm() / want.float().norm().clamp(min=1e-12))


@needs_cuda
@pytest.mark.parametrize("pattern,length", CUDA_FLOAT32_CASES,
                         ids=[f"{p}-{n}" for p, n in CUDA_FLOAT32_CASES])
def test_compiled_flex_equals_the_reference_in_float32(pattern, length, enough_recompiles):
    kw = dict(d=CUDA_D, device="cuda")
    case = compressed_case if pattern.startswith("compressed") else local_case
    inputs, flex, ref = case(length, *CUDA_PATTERNS[pattern], **kw)
    assert_same(run(flex, inputs), run(ref, inputs), atol=1e-3, rtol=1e-3)


@needs_cuda
@pytest.mark.parametrize("pattern", ["local", "compressed"])
def test_compiled_flex_equals_the_reference_in_bf16(pattern, enough_recompiles):
    kw = dict(d=CUDA_D, device="cuda", dtype=torch.bfloat16)
    if pattern == "compressed":
        inputs, flex, ref = compressed_case(1000, 3, 3, **kw)
    else:
        inputs, flex, ref = local_case(1000, 256, True, **kw)
    (out, grads), (ref_out, ref_grads) = run(flex, inputs), run(ref, [x.float() for x in inputs])
    assert out.dtype == torch.bfloat16
    assert relative_error(out, ref_out) < 1e-2
    for g, r in zip(grads, ref_grads, strict=True):
        assert relative_error(g, r) < 1e-2


@needs_cuda
def test_a_model_with_flex_equals_one_with_sdpa_on_cuda(enough_recompiles):
    """T-DMCA, 5 layers (local, compressed, ...), head width 64, 1,000 tokens, float32: the
    loss (1e-3) and every gradient (1e-3 of its norm)."""
    from wikisum.models.base import Batch

    def step(impl: str):
        torch.manual_seed(0)
        model = models.build("t-dmca", "tiny", vocab_size=500, d_model=128, n_heads=2,
                             d_ff=256, n_layers=5, block_size=256, dropout=0.0,
                             attention_impl=impl).cuda()
        gen = torch.Generator().manual_seed(1)
        ids = torch.randint(6, 500, (1, 1000), generator=gen).cuda()
        batch = Batch(sources=ids[:, :799], source_lengths=torch.tensor([799]).cuda(),
                      targets=ids[:, 799:], target_lengths=torch.tensor([201]).cuda())
        loss = model(batch).loss
        loss.backward()
        assert all(b.attn.uses_flex(torch.zeros(1, 2, 999, 64, device="cuda"), 0.0)
                   == (impl == "flex" and b.attn.kind != "full") for b in model.blocks)
        return loss.detach(), {n: p.grad for n, p in model.named_parameters()}

    loss_sdpa, grads_sdpa = step("sdpa")
    loss_flex, grads_flex = step("flex")
    torch.testing.assert_close(loss_flex, loss_sdpa, atol=1e-3, rtol=1e-3)
    for name in grads_sdpa:
        assert relative_error(grads_flex[name], grads_sdpa[name]) < 1e-3, name


@needs_cuda
def test_auto_takes_flex_on_cuda_without_dropout_only():
    layer = CausalSelfAttention(128, 2, "local", attention_impl="auto").cuda()
    q = torch.zeros(1, 2, 1000, 64, device="cuda")
    assert layer.uses_flex(q, 0.0)
    assert not layer.uses_flex(q, 0.1)
    assert not layer.uses_flex(q[:, :, :100], 0.0)


# ---------------------------------------------------------------------------------------------
# The whole model under torch.compile: one graph (no breaks), the same loss (and, on CUDA, the
# same gradients).


def ragged_batch(vocab: int, device="cpu"):
    """Two rows: the longer source in one, the longer target in the other, so that the batch's
    padded width (sources + <sep> + targets) is longer than either row."""
    from wikisum.models.base import Batch

    gen = torch.Generator().manual_seed(3)
    sources = torch.randint(6, vocab, (2, 300), generator=gen)
    targets = torch.randint(6, vocab, (2, 90), generator=gen)
    return Batch(sources=sources.to(device), source_lengths=torch.tensor([300, 211]).to(device),
                 targets=targets.to(device), target_lengths=torch.tensor([40, 90]).to(device))


def dmca(impl: str, device="cpu", **overrides):
    torch.manual_seed(0)
    shape = dict(vocab_size=300, d_model=64, n_heads=2, d_ff=128, n_layers=2, block_size=128,
                 dropout=0.0)
    return models.build("t-dmca", "tiny", attention_impl=impl, **{**shape, **overrides}
                        ).to(device)


def loss_and_grads(net, model, batch):
    out = net(batch)
    out.loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    model.zero_grad(set_to_none=True)
    return out, grads


@pytest.mark.parametrize("loss_on", ["all", "target"])
def test_the_compiled_model_is_one_graph_up_to_its_loss_and_the_same(loss_on):
    """dynamo traces T-DMCA with FlexAttention in one graph up to its hidden states: the block
    masks are built in the graph and the batch's width comes from its shapes. The only break is
    the loss, which runs outside the graph (losses.untraced_nll). Run from that trace (backend
    "eager"), a ragged batch's loss and target NLL equal the eager model's. Forward only (flex
    attention has no backward pass on CPU): the gradients of the compiled model are compared on
    CUDA (test_the_compiled_model_equals_the_eager_one_on_cuda)."""
    import torch._dynamo

    model = dmca("flex", loss_on=loss_on).train()
    batch = ragged_batch(300)
    torch._dynamo.reset()
    try:
        with torch.no_grad():
            explained = torch._dynamo.explain(model)(batch)
            where = {r.user_stack[-1].name for r in explained.break_reasons}
            assert where == {"call"} and all(
                r.user_stack[-1].filename.endswith("losses.py")
                for r in explained.break_reasons), [r.reason for r in explained.break_reasons]
            assert len(explained.graphs) <= 3
            want = model(batch)
            got = torch.compile(model, backend="eager")(batch)
    finally:
        torch._dynamo.reset()
    torch.testing.assert_close(got.loss, want.loss, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got.target_nll, want.target_nll, atol=1e-4, rtol=1e-5)
    assert int(got.target_tokens) == int(want.target_tokens) == 130


def test_a_compiled_model_stops_recompiling_as_batch_shapes_change():
    """Training batches differ in rows and widths. Once each dimension has changed (dynamo then
    compiles it as dynamic), and a single-row batch and a batch within one 128-position tile
    have been seen (dynamo specialises sizes of 1), new shapes compile nothing: the graph holds
    no loop whose length depends on the batch's shape. (Forward passes: flex attention has no
    backward pass on CPU.)"""
    import torch._dynamo

    from wikisum.models.base import make_batch

    compiled = []

    def counting(gm, example_inputs):
        compiled.append(gm)
        return gm.forward

    gen = torch.Generator().manual_seed(0)

    def batch(lengths):
        return make_batch([torch.randint(6, 300, (s,), generator=gen).tolist()
                           for s, _ in lengths],
                          [torch.randint(6, 300, (t,), generator=gen).tolist() + [3]
                           for _, t in lengths])

    model = dmca("flex").train()
    torch._dynamo.reset()
    try:
        net = torch.compile(model, backend=counting)
        warm = ([(150, 40), (100, 20)], [(170, 30), (160, 10), (9, 9)], [(230, 40)],
                [(90, 10), (14, 5)])
        later = ([(160, 20), (150, 22)], [(80, 20), (30, 5)])
        # (past dynamo's recompile limit a frame would run eagerly and compile nothing more)
        with torch.no_grad(), torch._dynamo.config.patch(fail_on_recompile_limit_hit=True):
            for lengths in warm:
                net(batch(lengths))
            settled = len(compiled)
            for lengths in later:
                b = batch(lengths)
                got = net(b).loss
            torch.testing.assert_close(got, model(b).loss, atol=1e-5, rtol=1e-5)
    finally:
        torch._dynamo.reset()
    assert len(compiled) == settled


def test_traced_block_masks_equal_the_cached_ones():
    """Built in a traced graph (no cache), the block masks are the eager ones."""
    import torch._dynamo

    def both(length):
        local = flexattention.local_block_mask(length, 256, True, "cpu")
        compressed = flexattention.compressed_block_mask(length, 1 + slot_count(length, 3, 3),
                                                         3, 3, "cpu")
        return local.kv_num_blocks, local.kv_indices, local.full_kv_num_blocks, \
            local.full_kv_indices, compressed.kv_num_blocks, compressed.kv_indices, \
            compressed.full_kv_num_blocks, compressed.full_kv_indices

    torch._dynamo.reset()
    try:
        traced = torch.compile(both, backend="eager", fullgraph=True)
        for length in (257, 1000):
            flexattention.clear_caches()
            for got, want in zip(traced(length), both(length), strict=True):
                assert torch.equal(got, want)
    finally:
        torch._dynamo.reset()


@needs_cuda
def test_the_compiled_model_equals_the_eager_one_on_cuda(enough_recompiles):
    """torch.compile (inductor) of T-DMCA with FlexAttention, its block masks built in the
    graph, float32, a ragged batch of two rows: the loss (1e-3) and every gradient (1e-3 of its
    norm) of the eager model with sdpa. Passed on an H100 with the loss traced in the graph;
    not yet run on a GPU with the loss outside it and its chunks compiled on their own."""
    import torch._dynamo

    batch = ragged_batch(300, "cuda")
    eager = dmca("sdpa", "cuda").train()
    want, want_grads = loss_and_grads(eager, eager, batch)
    model = dmca("flex", "cuda").train()
    torch._dynamo.reset()
    try:
        got, got_grads = loss_and_grads(torch.compile(model), model, batch)
    finally:
        torch._dynamo.reset()
    torch.testing.assert_close(got.loss, want.loss, atol=1e-3, rtol=1e-3)
    for name, grad in want_grads.items():
        assert relative_error(got_grads[name], grad) < 1e-3, name
