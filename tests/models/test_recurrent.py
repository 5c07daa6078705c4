"""The recurrent family (seq2seq, attexp, adadec, adadec+attexp): properties on tiny shapes."""

from __future__ import annotations

import math
from dataclasses import asdict

import pytest
import torch

from wikisum import models
from wikisum.models import recurrent
from wikisum.models.base import make_batch
from wikisum.models.recurrent import (
    AdaptiveLSTMCell,
    adaptive_cell_parameters,
    lambda_parameters,
    lstm_cell_parameters,
)
from wikisum.models.wfe import Estimate

NAMES = ["seq2seq", "attexp", "adadec", "adadec+attexp"]
VOCAB = 24
EOS = 3


def tiny(name: str, **overrides):
    torch.manual_seed(0)
    return models.build(name, "tiny", vocab_size=VOCAB, dropout=0.0, **overrides)


def ragged_batch():
    """Right-padded rows of different lengths everywhere, one of them with an empty exemplar."""
    sources = [[5, 6, 7, 8, 9, 10], [11, 12, 13], [14, 5, 15, 16, 17, 18, 19, 20]]
    targets = [[6, 21, 7, EOS], [22, 8, 23, 12, 5, 6, EOS], [19, EOS]]
    exemplars = [[21, 22, 23], [4, 5, 6, 7, 8], []]
    return make_batch(sources, targets, exemplars, ids=[0, 1, 2])


def explicit_lstm_cell(cell: AdaptiveLSTMCell, lam: torch.Tensor) -> torch.nn.LSTMCell:
    """A torch.nn.LSTMCell holding U diag(lam) V^T and B lam, built gate by gate."""
    d_in, d = cell.v_in.shape[1], cell.u_in.shape[2]
    w_in = torch.cat([cell.u_in[g].T @ torch.diag(lam) @ cell.v_in[g].T for g in range(4)])
    w_rec = torch.cat([cell.u_rec[g].T @ torch.diag(lam) @ cell.v_rec[g].T for g in range(4)])
    bias = torch.cat([cell.b[g] @ lam for g in range(4)])
    ref = torch.nn.LSTMCell(d_in, d)
    with torch.no_grad():
        ref.weight_ih.copy_(w_in)  # (4d, d_in)
        ref.weight_hh.copy_(w_rec)  # (4d, d)
        ref.bias_ih.copy_(bias)
        ref.bias_hh.zero_()
    return ref


@pytest.mark.parametrize("rank", [3, 5])
def test_adaptive_cell_equals_an_lstm_cell_with_the_built_matrices(rank):
    torch.manual_seed(0)
    d_in, d, n = 7, 5, 3
    cell = AdaptiveLSTMCell(d_in, d, rank)
    with torch.no_grad():  # away from the initialisation, B too
        for p in cell.parameters():
            p.normal_()
    x, h, c = torch.randn(n, d_in), torch.randn(n, d), torch.randn(n, d)
    lam = torch.randn(n, rank)  # one lambda per row: each row has its own decoder
    got_h, got_c = cell(x, (h, c), lam)
    for i in range(n):
        ref = explicit_lstm_cell(cell, lam[i])
        want_h, want_c = ref(x[i:i + 1], (h[i:i + 1], c[i:i + 1]))
        torch.testing.assert_close(got_h[i:i + 1], want_h, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(got_c[i:i + 1], want_c, rtol=1e-5, atol=1e-5)


def count(module: torch.nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def test_parameter_counts_follow_the_formula():
    model = tiny("adadec", rank=12, exemplar_hidden=6)
    cfg = model.config
    D, d, r, e = cfg.d_embed, cfg.d_hidden, cfg.rank, cfg.exemplar_hidden
    assert count(model.cell) == adaptive_cell_parameters(D + d, d, r) == 4 * r * (D + d + 4 * d)
    assert count(model.lambda_net) == lambda_parameters(D, e, r)
    # The only difference from the baseline: the adaptive cell and lambda replace the LSTM cell.
    baseline = tiny("seq2seq", rank=12, exemplar_hidden=6)
    extra = (adaptive_cell_parameters(D + d, d, r) + lambda_parameters(D, e, r)
             - lstm_cell_parameters(D + d, d))
    assert count(model) - count(baseline) == extra


@pytest.mark.parametrize("name", ["adadec", "adadec+attexp"])
@pytest.mark.parametrize("rank", [None, 5])
def test_lambda_has_norm_sqrt_d(name, rank):
    model = tiny(name, rank=rank).eval()
    state = model.start(ragged_batch())
    d = model.config.d_hidden
    assert state.lam.shape == (3, rank or d)
    torch.testing.assert_close(state.lam.norm(dim=-1), torch.full((3,), math.sqrt(d)))
    assert not torch.allclose(state.lam[0], state.lam[1])  # it depends on the exemplar


def test_copy_puts_the_attention_on_the_source_ids():
    model = tiny("seq2seq").eval()
    with torch.no_grad():
        model.attention.w_a.weight.zero_()  # uniform attention over the real source positions
        model.switch.weight.zero_()
        model.switch.bias.copy_(torch.tensor([-40.0, 40.0]))  # p_gen = 0: copy only
        model.out_bias[20] = 50.0  # the vocabulary softmax favours token 20 above all
    batch = make_batch([[7, 7, 9], [11, 13]], [[7, EOS], [13, EOS]])
    probs = model.start(batch).first_logprobs.exp()
    want = torch.zeros(2, VOCAB)
    want[0, 7], want[0, 9] = 2 / 3, 1 / 3  # a repeated source token gets both positions' mass
    want[1, 11], want[1, 13] = 1 / 2, 1 / 2  # nothing lands on the padding id
    torch.testing.assert_close(probs, want, rtol=0, atol=1e-6)
    with torch.no_grad():  # p_gen = 1: the vocabulary distribution alone
        model.switch.bias.copy_(torch.tensor([40.0, -40.0]))
    assert model.start(batch).first_logprobs.argmax(-1).tolist() == [20, 20]


def test_copy_emits_a_source_token_the_vocabulary_does_not_favour():
    model = tiny("attexp").eval()
    with torch.no_grad():
        model.switch.weight.zero_()
        model.switch.bias.copy_(torch.tensor([0.0, 3.0, -40.0]))  # p_gen ~ 0.05, no exemplar copy
        model.out_bias[20] = 5.0
    batch = make_batch([[8, 9, 10, 11]], [[8, EOS]], [[12, 13]])
    state = model.start(batch)
    logprobs, _ = model.step(state, torch.tensor([8]))
    assert logprobs.argmax(-1).item() in {8, 9, 10, 11}
    with torch.no_grad():
        model.switch.bias.copy_(torch.tensor([40.0, -40.0, -40.0]))
    logprobs, _ = model.step(model.start(batch), torch.tensor([8]))
    assert logprobs.argmax(-1).item() == 20


def test_exemplar_copy_lands_on_exemplar_ids_and_never_from_an_empty_exemplar():
    model = tiny("attexp").eval()
    with torch.no_grad():
        model.exemplar_attention.w_a.weight.zero_()
        model.switch.weight.zero_()
        model.switch.bias.copy_(torch.tensor([-40.0, -40.0, 40.0]))  # copy from the exemplar
        model.out_bias[20] = 50.0  # generation: token 20 alone
    batch = make_batch([[8, 9], [8, 9]], [[8, EOS], [8, EOS]], [[12, 13, 12, 14], []])
    probs = model.start(batch).first_logprobs.exp()
    assert probs[0, [12, 13, 14]].tolist() == pytest.approx([0.5, 0.25, 0.25], abs=1e-6)
    # The empty exemplar's copy switch is blocked: generating and copying from the source share
    # the mass equally, and the probabilities still sum to one.
    torch.testing.assert_close(probs.sum(-1), torch.ones(2))
    assert probs[1, [8, 9]].sum().item() == pytest.approx(0.5, abs=1e-6)
    assert probs[1, 20].item() == pytest.approx(0.5, abs=1e-6)
    assert probs[:, [0, 2]].max().item() < 1e-30  # <pad> and <s> are never produced


@pytest.mark.parametrize("name", NAMES)
def test_step_by_step_equals_teacher_forcing_with_padding_and_reorder(name):
    model = tiny(name, wfe=True).eval()
    batch = ragged_batch()
    targets, lengths = batch.targets, batch.target_lengths.tolist()
    with torch.no_grad():
        full = model.logprobs(batch)  # (B, T, V)
        out = model(batch)
        state = model.start(batch)
    T = targets.shape[1]
    # forward scores the target tokens of the same distribution, padding left out
    gathered = full.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    mask = torch.arange(T)[None] < batch.target_lengths[:, None]
    torch.testing.assert_close(out.target_nll, -gathered[mask].sum())
    assert out.target_tokens.item() == sum(lengths)
    torch.testing.assert_close(state.first_logprobs, full[:, 0], rtol=1e-5, atol=1e-5)
    rows = torch.arange(3)
    with torch.no_grad():
        for t in range(1, T):
            if t == 2:  # beam-style: drop row 1, repeat row 2
                rows = torch.tensor([2, 0, 2, 0])
                state = model.reorder(state, torch.tensor([2, 0, 2, 0]))
            logprobs, state = model.step(state, targets[rows, t - 1])
            for i, row in enumerate(rows.tolist()):
                if t < lengths[row]:
                    torch.testing.assert_close(logprobs[i], full[row, t], rtol=1e-5, atol=1e-5)
    assert state.first_logprobs.shape == (4, VOCAB)
    torch.testing.assert_close(state.wfe.r, model.start(batch).wfe.r[rows])


@pytest.mark.parametrize("name", ["seq2seq", "adadec+attexp"])
def test_padding_does_not_change_a_row(name):
    model = tiny(name).eval()
    batch = ragged_batch()
    with torch.no_grad():
        together = model.logprobs(batch)
        for i in range(3):
            alone = make_batch([batch.sources[i, :batch.source_lengths[i]].tolist()],
                               [batch.targets[i, :batch.target_lengths[i]].tolist()],
                               [batch.exemplars[i, :batch.exemplar_lengths[i]].tolist()])
            n = int(batch.target_lengths[i])
            torch.testing.assert_close(model.logprobs(alone)[0, :n], together[i, :n],
                                       rtol=1e-5, atol=1e-5)


def toy_data(seed: int = 1, n: int = 4):
    g = torch.Generator().manual_seed(seed)

    def seq(lo, hi):
        length = int(torch.randint(lo, hi + 1, (1,), generator=g))
        return torch.randint(4, VOCAB, (length,), generator=g).tolist()

    return make_batch([seq(4, 7) for _ in range(n)], [seq(2, 4) + [EOS] for _ in range(n)],
                      [seq(2, 5) for _ in range(n)])


def greedy(model, batch, max_len: int) -> list[list[int]]:
    state = model.start(batch)
    logprobs, out = state.first_logprobs, []
    for _ in range(max_len):
        tokens = logprobs.argmax(-1)
        out.append(tokens)
        logprobs, state = model.step(state, tokens)
    rows = torch.stack(out, 1).tolist()
    return [r[:r.index(EOS) + 1] if EOS in r else r for r in rows]


@pytest.mark.parametrize("name,wfe", [(n, False) for n in NAMES] + [("adadec+attexp", True)])
def test_overfits_a_handful_of_examples(name, wfe):
    model = tiny(name, wfe=wfe)
    batch = toy_data()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(300):
        out = model(batch)
        optimizer.zero_grad()
        out.loss.backward()
        optimizer.step()
        if (out.target_nll.item() / out.target_tokens.item() < 0.02
                and (not wfe or out.aux["wfe"].item() < 1.0)):
            break
    assert out.target_nll.item() / out.target_tokens.item() < 0.02
    if wfe:
        assert set(out.aux) == {"wfe"} and out.aux["wfe"].item() < 1.0
    model.eval()
    with torch.no_grad():
        want = [batch.targets[i, :batch.target_lengths[i]].tolist() for i in range(batch.size)]
        assert greedy(model, batch, max_len=6) == want


def test_wfe_loss_enters_the_loss_and_the_estimate_reaches_the_decode_state():
    model = tiny("seq2seq", wfe=True, wfe_weight=0.5).eval()
    batch = ragged_batch()
    with torch.no_grad():
        out = model(batch)
        state = model.start(batch)
    torch.testing.assert_close(out.loss, out.target_nll / out.target_tokens
                               + 0.5 * out.aux["wfe"])
    assert isinstance(state.wfe, Estimate) and state.wfe.r.shape == state.wfe.g.shape == (3, VOCAB)
    assert "wfe" not in tiny("seq2seq").eval()(batch).aux


@pytest.mark.parametrize("name", NAMES)
def test_build_and_from_config_round_trip(name):
    model = models.build(name, "tiny", vocab_size=VOCAB, rank=6, wfe=True)
    assert model.name == name
    assert (model.config.attexp, model.config.adadec) == recurrent.NAMES[name]
    saved = asdict(model.config)
    rebuilt = models.from_config(name, saved)
    assert rebuilt.config == model.config and rebuilt.name == name
    rebuilt.load_state_dict(model.state_dict())  # the same shapes, parameter for parameter
    batch = ragged_batch()
    with torch.no_grad():
        torch.testing.assert_close(rebuilt.eval()(batch).loss, model.eval()(batch).loss)


def test_bad_configs_and_batches_are_refused_with_a_reason():
    with pytest.raises(ValueError, match="contradicts model 'seq2seq'"):
        models.build("seq2seq", "tiny", adadec=True)
    with pytest.raises(ValueError, match="unknown RecurrentConfig fields"):
        models.build("seq2seq", "tiny", n_heads=4)
    with pytest.raises(ValueError, match="contradicts model 'adadec'"):
        models.from_config("adadec", asdict(models.build("seq2seq", "tiny").config))
    with pytest.raises(ValueError, match="d_hidden must be even"):
        models.build("seq2seq", "tiny", d_hidden=15)
    with pytest.raises(ValueError, match="unknown preset"):
        recurrent.build("seq2seq", "huge")
    model = tiny("adadec")
    no_exemplar = make_batch([[5, 6]], [[5, EOS]])
    with pytest.raises(ValueError, match="batch.exemplars is None"):
        model(no_exemplar)
    with pytest.raises(ValueError, match="empty source in batch rows \\[1\\]"):
        tiny("seq2seq")(make_batch([[5], []], [[5, EOS], [6, EOS]]))
    with pytest.raises(ValueError, match="outside \\[0, 24\\)"):
        tiny("seq2seq")(make_batch([[5, 99]], [[5, EOS]]))
