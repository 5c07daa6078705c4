"""The chunked output layer + cross-entropy (gradient computed in the forward pass) equals the
plain one, in value and gradient, and the models' losses use it without changing a number."""

from __future__ import annotations

import shutil

import pytest
import torch
import torch.nn.functional as F

from wikisum.models import losses, transformer
from wikisum.models.base import Batch


def plain_nll(hidden, weight, bias, labels):
    return F.cross_entropy(F.linear(hidden, weight, bias).float(), labels, reduction="none")


def chunk_steps():
    """The ways a chunk is computed: in place (None), :func:`losses.chunk_step` eagerly, and
    traced by torch.compile as a compiled model's loss runs it (backend "eager": the trace, not
    inductor, which would compile C++ for the CPU)."""
    import torch._dynamo

    torch._dynamo.reset()
    return {"in place": None, "chunk_step": losses.chunk_step,
            "traced": torch.compile(losses.chunk_step, backend="eager", dynamic=False,
                                    fullgraph=True)}


STEPS = ("in place", "chunk_step", "traced")


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("rows", [1, 3, 7, 64])
@pytest.mark.parametrize("with_bias", [True, False])
def test_weighted_nll_equals_the_plain_loss_and_its_gradients(rows, with_bias, step):
    torch.manual_seed(rows)
    n, d, v = 19, 6, 23  # 19 rows: no chunk size above divides it
    hidden = torch.randn(n, d)
    weight = torch.randn(v, d)
    bias = torch.randn(v) if with_bias else None
    labels = torch.randint(0, v, (n,))
    weights = torch.rand(n) * (torch.rand(n) > 0.3)  # some rows weigh nothing
    results = []
    for chunked in (False, True):
        leaves = [t.clone().requires_grad_(True) if t is not None else None
                  for t in (hidden, weight, bias)]
        if chunked:
            loss, nll = losses.weighted_nll(*leaves, labels, weights, rows,
                                            step=chunk_steps()[step])
            assert not nll.requires_grad
        else:
            nll = plain_nll(*leaves, labels)
            loss = (nll * weights).sum()
        (2.5 * loss).backward()  # an upstream gradient other than 1
        results.append((loss.detach(), nll.detach(),
                        [t.grad for t in leaves if t is not None]))
    (got_loss, got_nll, got_grads), (want_loss, want_nll, want_grads) = results[1], results[0]
    # float32 both ways; the chunked gradient sums its chunks in another order
    torch.testing.assert_close(got_loss, want_loss, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(got_nll, want_nll, rtol=1e-5, atol=1e-6)
    for g, w in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("step", STEPS)
@pytest.mark.parametrize("with_bias", [True, False])
def test_under_autocast_both_losses_equal_the_plain_autocast_loss(with_bias, step):
    """Under bf16 autocast (the trainer's on CUDA) both chunked losses give the loss, the NLL
    and the gradients of the plain loss under autocast, whose products run in bf16."""
    torch.manual_seed(5)
    n, d, v = 37, 16, 300
    hidden, weight = torch.randn(n, d), torch.randn(v, d) * 0.3
    bias = torch.randn(v) if with_bias else None
    labels, weights = torch.randint(0, v, (n,)), torch.rand(n)

    def run(kind):
        leaves = [t.clone().requires_grad_(True) if t is not None else None
                  for t in (hidden, weight, bias)]
        with torch.autocast("cpu", dtype=torch.bfloat16):
            if kind == "weighted":
                loss, nll = losses.weighted_nll(*leaves, labels, weights, 8,
                                                step=chunk_steps()[step])
            else:
                nll = (losses.chunked_nll(*leaves, labels, 8) if kind == "chunked"
                       else plain_nll(*leaves, labels))
                loss = (nll * weights).sum()
        loss.backward()
        return [loss.detach(), nll.detach()] + [t.grad for t in leaves if t is not None]

    want = run("plain")
    for kind in ("weighted", "chunked"):
        for got, ref in zip(run(kind), want, strict=True):
            # bf16 products: the chunks sum their gradients in another order
            torch.testing.assert_close(got, ref, rtol=2e-2, atol=2e-2, msg=kind)


@pytest.mark.parametrize("step", STEPS)
def test_under_no_grad_every_chunk_step_gives_the_loss_and_nll(step):
    """Evaluation (no gradient wanted) through each way of computing a chunk, the last padded."""
    torch.manual_seed(2)
    hidden, weight, bias = torch.randn(19, 6), torch.randn(23, 6), torch.randn(23)
    labels, weights = torch.randint(0, 23, (19,)), torch.rand(19)
    with torch.no_grad():
        loss, nll = losses.weighted_nll(hidden, weight, bias, labels, weights, 7,
                                        step=chunk_steps()[step])
    want = plain_nll(hidden, weight, bias, labels)
    torch.testing.assert_close(nll, want, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(loss, (want * weights).sum(), rtol=1e-5, atol=1e-6)


def test_weighted_nll_under_no_grad_is_the_loss_alone():
    torch.manual_seed(0)
    hidden, weight = torch.randn(5, 4, requires_grad=True), torch.randn(7, 4, requires_grad=True)
    labels, weights = torch.randint(0, 7, (5,)), torch.full((5,), 0.2)
    with torch.no_grad():
        loss, nll = losses.weighted_nll(hidden, weight, None, labels, weights)
    assert not loss.requires_grad
    torch.testing.assert_close(nll, plain_nll(hidden, weight, None, labels).detach())


def test_chunk_rows_bounds_the_logits_held():
    assert losses.chunk_rows(32_000) * 32_000 * 4 <= losses.CHUNK_BYTES
    assert losses.chunk_rows(10**9) == 1


def test_a_compiled_chunk_compiles_once_as_the_batch_shape_changes():
    """A compiled model's loss (``untraced_nll``, outside the model's graph) calls one compiled
    chunk: chunks are padded to one shape (to a power of two, at least 64 rows, where a batch
    holds fewer rows than a chunk), so batches of 20 to 64 rows compile it once, and its
    results are those computed in place."""
    import torch._dynamo

    graphs = []

    def counting(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    torch._dynamo.reset()
    try:
        step = torch.compile(losses.chunk_step, backend=counting, dynamic=False, fullgraph=True)
        weight = torch.randn(23, 6, requires_grad=True)

        def model(hidden, labels, weights, mask, step):
            return losses.untraced_nll(hidden * 2, weight, None, labels, weights, mask,
                                       every_row=True, step=step)

        compiled = torch.compile(model, backend="eager")
        gen = torch.Generator().manual_seed(0)
        for rows in (20, 20, 37, 64):
            hidden = torch.randn(1, rows, 6, generator=gen)
            labels = torch.randint(0, 23, (1, rows), generator=gen)
            mask = torch.rand(1, rows, generator=gen) > 0.2
            weights = mask.float() / mask.sum()
            results = []
            for run, chunk in ((compiled, step), (model, None)):
                weight.grad = None
                loss, nll = run(hidden, labels, weights, mask, chunk)
                loss.backward()
                results.append((loss.detach(), nll, weight.grad.clone()))
            for got, want in zip(*results, strict=True):
                torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-6)
                assert got.shape == want.shape
    finally:
        torch._dynamo.reset()
    assert len(graphs) == 1


@pytest.mark.skipif(not (shutil.which("g++") or shutil.which("c++")),
                    reason="no C++ compiler: inductor compiles C++ on the CPU")
# (torch's own CPU code generation touches torch.jit, which warns of its deprecation)
@pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
def test_the_inductor_compiled_chunk_equals_the_in_place_one_on_the_cpu():
    """The chunk as inductor compiles it (C++ on the CPU, Triton on CUDA: the same lowering of
    its operations) against the in-place loop: loss, NLL and gradients, float32 and under bf16
    autocast, the last chunk padded (700 rows in chunks of 512)."""
    import torch._dynamo

    torch.manual_seed(3)
    n, d, v = 700, 64, 5000
    hidden, weight, bias = torch.randn(n, d), torch.randn(v, d) * 0.1, torch.randn(v)
    labels, weights = torch.randint(0, v, (n,)), torch.rand(n)

    def run(step, autocast):
        leaves = [t.clone().requires_grad_(True) for t in (hidden, weight, bias)]
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            loss, nll = losses.weighted_nll(*leaves, labels, weights, 512, step=step)
        loss.backward()
        return [loss.detach(), nll] + [t.grad for t in leaves]

    torch._dynamo.reset()
    try:
        step = torch.compile(losses.chunk_step, dynamic=False)
        for autocast in (False, True):
            tolerance = dict(rtol=2e-2, atol=2e-2) if autocast else dict(rtol=1e-4, atol=1e-5)
            for got, want in zip(run(step, autocast), run(None, autocast), strict=True):
                torch.testing.assert_close(got, want, **tolerance)
    finally:
        torch._dynamo.reset()


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device: the loss's chunks "
                    "are compiled (inductor) on CUDA only")
def test_the_inductor_compiled_chunk_equals_the_in_place_one_on_cuda():
    """On CUDA a compiled model's loss runs :func:`losses.compiled_chunk_step` (inductor, fused
    kernels): under bf16 autocast its loss, NLL and gradients are those computed in place."""
    import torch._dynamo

    torch.manual_seed(3)
    n, d, v = 700, 64, 5000  # two chunks of 512 rows, the second padded
    hidden = torch.randn(n, d, device="cuda")
    weight, bias = torch.randn(v, d, device="cuda") * 0.1, torch.randn(v, device="cuda")
    labels, weights = torch.randint(0, v, (n,), device="cuda"), torch.rand(n, device="cuda")

    def run(step):
        leaves = [t.clone().requires_grad_(True) for t in (hidden, weight, bias)]
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss, nll = losses.weighted_nll(*leaves, labels, weights, 512, step=step)
        loss.backward()
        return [loss.detach(), nll] + [t.grad for t in leaves]

    torch._dynamo.reset()
    try:
        got = run(losses.compiled_chunk_step())
    finally:
        torch._dynamo.reset()
    for a, b in zip(got, run(None), strict=True):
        torch.testing.assert_close(a, b, rtol=2e-2, atol=2e-2)


def test_masked_weighted_nll_scores_only_the_rows_asked_and_zero_elsewhere():
    torch.manual_seed(0)
    hidden, weight = torch.randn(2, 5, 4), torch.randn(9, 4)
    labels = torch.randint(0, 9, (2, 5))
    rows = torch.tensor([[True, False, True, True, False], [False, False, False, False, True]])
    weights = rows.float() / rows.sum()
    loss, got = losses.masked_weighted_nll(hidden, weight, None, labels, weights, rows, rows=2)
    want = plain_nll(hidden.reshape(10, 4), weight, None, labels.reshape(10)).view(2, 5)
    torch.testing.assert_close(got, torch.where(rows, want, torch.zeros_like(want)))
    torch.testing.assert_close(loss, want[rows].mean())


def batch() -> Batch:
    sources = torch.tensor([[5, 6, 7, 8, 9, 10], [11, 12, 13, 0, 0, 0]])
    targets = torch.tensor([[20, 21, 22, 3], [23, 24, 3, 0]])
    return Batch(sources=sources, source_lengths=torch.tensor([6, 3]), targets=targets,
                 target_lengths=torch.tensor([4, 3]))


@pytest.mark.parametrize("name,overrides", [("t-d", {}), ("t-dmca", {"loss_on": "target"}),
                                            ("t-ed", {}), ("t-d", {"wfe": True})])
def test_models_losses_equal_the_plain_loss_and_its_gradients(name, overrides, monkeypatch):
    """The model's loss through the chunked path against the same model computing (B, T, V)
    logits and the plain cross-entropy (the path before): same loss, same gradients."""
    torch.manual_seed(0)
    model = transformer.build(name, preset="tiny", vocab_size=40, block_size=4, dropout=0.0,
                              **overrides)

    def plain(self, hidden, labels, loss_mask, target_mask):  # the loss as it was computed
        nll = transformer.token_nll(self.project(hidden), labels)  # before: every position
        return (nll * loss_mask).sum() / loss_mask.sum().clamp(min=1), nll.detach()

    outputs = []
    for patch in (False, True):
        if patch:
            monkeypatch.setattr(transformer._Transformer, "nll_loss", plain)
        model.zero_grad()
        out = model(batch())
        out.loss.backward()
        outputs.append((out.loss.detach(), out.target_nll,
                        {k: p.grad.clone() for k, p in model.named_parameters()
                         if p.grad is not None}))
    (loss, target_nll, grads), (loss0, target_nll0, grads0) = outputs
    torch.testing.assert_close(loss, loss0, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(target_nll, target_nll0, rtol=1e-5, atol=1e-5)
    assert grads.keys() == grads0.keys()
    for key in grads:
        torch.testing.assert_close(grads[key], grads0[key], rtol=1e-4, atol=1e-5, msg=key)


@pytest.mark.parametrize("name", ["t-d", "t-dmca", "t-ed"])
def test_activation_checkpointing_changes_memory_not_numbers(name):
    torch.manual_seed(0)
    plain = transformer.build(name, preset="tiny", vocab_size=40, block_size=4, dropout=0.1,
                              moe_layers=[0])
    checkpointed = transformer.build(name, preset="tiny", vocab_size=40, block_size=4,
                                     dropout=0.1, moe_layers=[0], checkpoint_layers=True)
    checkpointed.load_state_dict(plain.state_dict())
    results, calls = [], []
    for model in (plain, checkpointed):
        runs, forward = [0], model.blocks[0].forward

        def counted(*args, forward=forward, runs=runs, **kwargs):
            runs[0] += 1
            return forward(*args, **kwargs)

        model.blocks[0].forward = counted
        torch.manual_seed(1)  # the same dropout masks, replayed by the recomputation
        out = model.train()(batch())
        out.loss.backward()
        results.append((out.loss.detach(), {k: p.grad for k, p in model.named_parameters()}))
        calls.append(runs[0])
    assert calls == [1, 2]  # the checkpointed layer ran again in the backward pass
    torch.testing.assert_close(results[1][0], results[0][0])
    for key, grad in results[0][1].items():
        torch.testing.assert_close(results[1][1][key], grad, msg=key)


@pytest.mark.parametrize("name,copy", [("seq2seq", False), ("seq2seq", True),
                                       ("adadec+attexp", True)])
def test_recurrent_loss_gradients_equal_those_of_the_full_distribution(name, copy):
    """The recurrent family's loss (log P(target) through the chunked output layer, the copy
    mixture on top) against the loss read off the full (B, T, V) distribution."""
    from wikisum import models
    from wikisum.models.base import make_batch

    torch.manual_seed(0)
    model = models.build(name, "tiny", vocab_size=40, dropout=0.0, copy=copy)
    data = make_batch([[5, 6, 7, 8], [9, 10, 11, 0]], [[6, 21, 7, 3], [22, 8, 3]],
                      [[21, 22], [5, 6, 7]], ids=[0, 1])
    mask = torch.arange(4)[None] < data.target_lengths[:, None]
    grads = []
    for chunked in (True, False):
        model.zero_grad()
        if chunked:
            loss = model(data).loss
        else:
            full = model.logprobs(data).gather(-1, data.targets.unsqueeze(-1)).squeeze(-1)
            loss = -full[mask].sum() / mask.sum()
        loss.backward()
        grads.append((loss.detach(), {k: p.grad.clone() for k, p in model.named_parameters()
                                      if p.grad is not None}))
    (chunked_loss, chunked_grads), (full_loss, full_grads) = grads
    torch.testing.assert_close(chunked_loss, full_loss, rtol=1e-5, atol=1e-6)
    assert chunked_grads.keys() == full_grads.keys()
    for key, grad in full_grads.items():
        torch.testing.assert_close(chunked_grads[key], grad, rtol=1e-4, atol=1e-5, msg=key)


@pytest.mark.parametrize("rows", [1, 4, 64])
def test_chunked_nll_equals_the_plain_nll_with_words_taken_out(rows):
    torch.manual_seed(rows)
    hidden, weight, bias = torch.randn(11, 5), torch.randn(17, 5), torch.randn(17)
    bias[[0, 2]] = float("-inf")  # never generated, as the recurrent models' <pad> and <s>
    labels = torch.randint(3, 17, (11,))
    upstream = torch.randn(11)  # any use of the NLL, not a loss weight known beforehand
    results = []
    for fn in (plain_nll, lambda h, w, b, y: losses.chunked_nll(h, w, b, y, rows)):
        leaves = [t.clone().requires_grad_(True) for t in (hidden, weight, bias)]
        nll = fn(*leaves, labels)
        (nll * upstream).sum().backward()
        results.append((nll.detach(), [t.grad for t in leaves]))
    torch.testing.assert_close(results[1][0], results[0][0], rtol=1e-5, atol=1e-6)
    for got, want in zip(results[1][1], results[0][1], strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
