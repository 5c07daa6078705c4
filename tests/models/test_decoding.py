"""Beam search, greedy search and the WFE processor, on fixed tables of log-probabilities (where
exhaustive search gives the right answer) and on a tiny recurrent model."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass, replace

import pytest
import torch
from torch import nn

from wikisum.generation import decoding
from wikisum.generation.decoding import (
    Hypothesis,
    WFEProcessor,
    beam_search,
    greedy,
    length_penalty,
)
from wikisum.models.base import make_batch
from wikisum.models.wfe import Estimate


@dataclass
class TableState:
    first_logprobs: torch.Tensor  # (B, V)
    table: torch.Tensor  # (N,) which table each slot reads
    wfe: Estimate | None = None


class TableModel:
    """Next-token log-probs that depend only on the last token: ``tables[i][last]`` (V,), and
    ``firsts[i]`` for the first token. The batch picks table i by its first source token, so
    rows of one batch follow different tables (and a mixed-up reorder shows)."""

    config = None

    def __init__(self, firsts: torch.Tensor, tables: torch.Tensor,
                 wfe: Estimate | None = None):
        self.firsts = firsts  # (I, V) log-probs
        self.tables = tables  # (I, V, V) log-probs
        self.estimate = wfe  # (I, V) budgets and gate logits, or None
        self.steps = 0

    def start(self, batch) -> TableState:
        which = batch.sources[:, 0]  # (B,)
        wfe = None if self.estimate is None else self.estimate.index_select(which)
        return TableState(self.firsts[which], which, wfe)

    def step(self, state: TableState, tokens: torch.Tensor):
        self.steps += 1
        return self.tables[state.table, tokens], state  # (N, V)

    def reorder(self, state: TableState, index: torch.Tensor) -> TableState:
        return replace(state, table=state.table.index_select(0, index))


def table_batch(*which: int):
    return make_batch([[w, 7] for w in which], [[1] for _ in which])


def random_tables(count: int, vocab: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    firsts = torch.log_softmax(2 * torch.randn(count, vocab, generator=g), dim=-1)
    tables = torch.log_softmax(2 * torch.randn(count, vocab, vocab, generator=g), dim=-1)
    return firsts, tables


def exhaustive(first: torch.Tensor, table: torch.Tensor, *, eos: int, max_len: int,
               alpha: float) -> tuple[list[int], float, float]:
    """The best finished sequence (tokens, score, logprob) by enumerating every one."""
    vocab = first.shape[0]
    best = None
    for length in range(1, max_len + 1):
        for seq in itertools.product(range(vocab), repeat=length):
            if seq[-1] != eos or eos in seq[:-1]:
                continue
            lp = float(first[seq[0]]) + sum(float(table[a, b]) for a, b in itertools.pairwise(seq))
            score = lp / length_penalty(length, alpha)  # |Y| counts </s>
            if best is None or score > best[1]:
                best = (list(seq[:-1]), score, lp)
    return best


def test_length_penalty_values():
    assert length_penalty(1, 0.6) == pytest.approx(1.0)
    assert length_penalty(7, 1.0) == pytest.approx(2.0)
    assert length_penalty(25, 0.5) == pytest.approx(math.sqrt(5.0))
    assert length_penalty(13, 0.6) == pytest.approx(3.0 ** 0.6)
    assert length_penalty(300, 0.0) == 1.0


@pytest.mark.parametrize("alpha", [0.0, 0.6, 2.0])
def test_wide_beam_finds_the_exhaustive_optimum(alpha):
    # V = 4 (</s> = 3), up to 4 tokens: 64 slots hold every hypothesis, so the search is exact
    # and must agree with enumeration, score and log-prob included.
    firsts, tables = random_tables(12, 4, seed=1)
    model = TableModel(firsts, tables)
    got = beam_search(model, table_batch(*range(12)), beam=64, alpha=alpha, max_len=4,
                      eos_id=3)
    for i, hyp in enumerate(got):
        tokens, score, lp = exhaustive(firsts[i], tables[i], eos=3, max_len=4, alpha=alpha)
        assert hyp.finished
        assert hyp.tokens == tokens, f"table {i}"
        assert hyp.score == pytest.approx(score, abs=1e-5)
        assert hyp.logprob == pytest.approx(lp, abs=1e-5)


def garden_path() -> TableModel:
    # Tokens: a = 0, b = 1, </s> = 2. "a" is the likelier first token but nothing good follows
    # it; "b </s>" is the best sequence.
    log = math.log
    firsts = torch.tensor([[log(0.6), log(0.4 - 1e-6), log(1e-6)]])
    tables = torch.tensor([[[log(0.34), log(0.33), log(0.33)],  # after a
                            [log(0.005), log(0.005), log(0.99)],  # after b
                            [log(0.34), log(0.33), log(0.33)]]])  # after </s> (unused)
    return TableModel(firsts, tables)


def test_beam_finds_what_greedy_misses():
    model = garden_path()
    lp = math.log(0.4 - 1e-6) + math.log(0.99)
    best = beam_search(model, table_batch(0), beam=2, alpha=0.6, max_len=6, eos_id=2)[0]
    assert best == Hypothesis([1], pytest.approx(lp / length_penalty(2, 0.6)),
                              pytest.approx(lp), True)
    assert best.tokens == exhaustive(model.firsts[0], model.tables[0], eos=2, max_len=6,
                                     alpha=0.6)[0]
    # Greedy takes "a" and then follows "a" (p = 0.34) until it is cut at max_len.
    cut = greedy(model, table_batch(0), max_len=6, eos_id=2)[0]
    assert cut.tokens == [0] * 6 and not cut.finished
    assert cut.logprob == pytest.approx(math.log(0.6) + 5 * math.log(0.34))


def test_search_stops_once_no_alive_hypothesis_can_win():
    # alpha = 0: "b </s>" (log p = -0.93) finishes at step 2 while the best alive, "a a", is at
    # -1.59 and can only fall; the search ends there (one model.step after the first token)
    # instead of carrying "a a ..." on to max_len.
    model = garden_path()
    beam_search(model, table_batch(0), beam=2, alpha=0.0, max_len=50, eos_id=2)
    assert model.steps == 1


@pytest.mark.parametrize("alpha", [0.0, 0.6])
def test_rows_decode_independently(alpha):
    firsts, tables = random_tables(5, 6, seed=3)
    model = TableModel(firsts, tables)
    together = beam_search(model, table_batch(0, 1, 2, 3, 4), beam=3, alpha=alpha, max_len=9,
                           eos_id=5)
    alone = [beam_search(model, table_batch(i), beam=3, alpha=alpha, max_len=9, eos_id=5)[0]
             for i in range(5)]
    assert together == alone
    assert len({len(h.tokens) for h in together}) > 1  # rows finished at different steps


def test_min_len_blocks_early_end():
    model = garden_path()
    got = beam_search(model, table_batch(0), beam=2, alpha=0.6, max_len=8, eos_id=2,
                      min_len=3)[0]
    assert got.finished and len(got.tokens) >= 3
    with pytest.raises(ValueError, match="min_len"):
        beam_search(model, table_batch(0), max_len=3, min_len=3, eos_id=2)


class BlockAfter:
    """A custom score processor: every token, </s> included, is impossible past ``length``."""

    def __init__(self, length: int):
        self.length = length
        self.updates = 0

    def init(self, state, rows, beam):
        self.updates = 0

    def adjust(self, logprobs, length):
        return logprobs if length <= self.length else torch.full_like(logprobs, -math.inf)

    def update(self, tokens, index):
        self.updates += 1


def test_custom_processor_and_a_stuck_row():
    # Nothing can follow two tokens: the search returns the best alive hypothesis, unfinished.
    for search in (lambda m, **kw: beam_search(m, beam=2, **kw), greedy):
        model, block = repeating_model(), BlockAfter(2)
        got = search(model, batch=table_batch(0), max_len=10, eos_id=4, processors=[block])[0]
        assert (got.tokens, got.finished) == ([1, 1], False)
        assert got.logprob == pytest.approx(math.log(0.60) + math.log(0.55))
        assert block.updates == 2


class TinyRNN(nn.Module):
    """A small recurrent summarizer with the decoding interface of ``wikisum.models.base``; its
    state depends on the whole prefix, so a wrong reorder changes what follows."""

    def __init__(self, vocab: int = 11, d: int = 16, wfe: bool = False, eos_bias: float = 0.0):
        super().__init__()
        self.config = None
        self.emb = nn.Embedding(vocab, d)
        self.cell = nn.GRUCell(d, d)
        self.out = nn.Linear(d, vocab)
        self.freq = nn.Linear(d, 2 * vocab) if wfe else None
        with torch.no_grad():  # peaky distributions: some rows end early, others run long
            self.out.weight.mul_(3.0)
            self.out.bias[3] += eos_bias  # </s> = 3

    def start(self, batch):
        mask = (batch.sources != 0).unsqueeze(-1).float()  # (B, S, 1)
        h = torch.tanh((self.emb(batch.sources) * mask).sum(1) / mask.sum(1))  # (B, d)
        wfe = None
        if self.freq is not None:
            r, g = self.freq(h).chunk(2, dim=-1)
            wfe = Estimate(torch.relu(1.5 + 4 * r), 4 * g + 2)  # (B, V) budgets of 0 to ~4
        return RNNState(torch.log_softmax(self.out(h), -1), h, wfe)

    def step(self, state, tokens):
        h = self.cell(self.emb(tokens), state.h)  # (N, d)
        return torch.log_softmax(self.out(h), -1), replace(state, h=h)

    def reorder(self, state, index):
        return replace(state, h=state.h.index_select(0, index))


@dataclass
class RNNState:
    first_logprobs: torch.Tensor  # (B, V)
    h: torch.Tensor  # (N, d)
    wfe: Estimate | None = None


def rnn_batch(rows: int = 6, seed: int = 0, words: tuple[int, int] = (4, 11)):
    g = torch.Generator().manual_seed(seed)
    sources = [torch.randint(*words, (int(n),), generator=g).tolist()
               for n in torch.randint(2, 7, (rows,), generator=g)]
    return make_batch(sources, [[3]] * rows)


def score_sequence(model, source: list[int], seq: tuple[int, ...]) -> float:
    """log p(seq | source), fed token by token through start / step."""
    state = model.start(make_batch([source], [[3]]))
    lp, total = state.first_logprobs, 0.0
    for i, token in enumerate(seq):
        total += float(lp[0, token])
        if i + 1 < len(seq):
            lp, state = model.step(state, torch.tensor([token]))
    return total


@torch.no_grad()
@pytest.mark.parametrize("seed", [0, 3])
def test_wide_beam_finds_the_exhaustive_optimum_of_a_model(seed):
    # The model's state depends on the whole prefix, so this also checks that the search
    # reorders the state along with the hypotheses. V = 5, up to 4 tokens: 512 slots hold
    # every candidate of every step (at most 4^3 x 5 + 21 finished), so the search is exact.
    torch.manual_seed(seed)
    model = TinyRNN(vocab=5, eos_bias=-6.0).eval()
    batch = rnn_batch(rows=3, seed=seed, words=(1, 5))
    got = beam_search(model, batch, beam=512, alpha=1.0, max_len=4, eos_id=3)
    for i, hyp in enumerate(got):
        source = batch.sources[i, :batch.source_lengths[i]].tolist()
        scored = {seq: score_sequence(model, source, seq)
                  for n in range(1, 5) for seq in itertools.product(range(5), repeat=n)
                  if seq[-1] == 3 and 3 not in seq[:-1]}
        best = max(scored, key=lambda seq: scored[seq] / length_penalty(len(seq), 1.0))
        assert hyp.tokens == list(best[:-1]), i
        assert hyp.logprob == pytest.approx(scored[best], abs=1e-4)
    assert len({tuple(h.tokens) for h in got}) > 1


@pytest.mark.parametrize("wfe", [False, True])
def test_beam_of_one_is_greedy(wfe):
    kinds = set()
    for seed in range(4):
        torch.manual_seed(seed)
        model = TinyRNN(wfe=wfe).eval()
        batch = rnn_batch(seed=seed)
        beam = beam_search(model, batch, beam=1, alpha=0.6, max_len=12, eos_id=3, wfe=wfe,
                           min_len=1)
        plain = greedy(model, batch, alpha=0.6, max_len=12, eos_id=3, wfe=wfe, min_len=1)
        assert beam == plain, seed
        kinds |= {(h.finished, len(h.tokens)) for h in plain}
    # Both ways of ending, and several lengths, were compared.
    assert {f for f, _ in kinds} == {True, False} and len(kinds) > 4


@pytest.mark.parametrize("name", ["t-ed", "seq2seq"])
def test_beam_of_one_is_greedy_on_registered_models(name):
    from wikisum import models

    torch.manual_seed(0)
    model = models.build(name, "tiny", vocab_size=60, wfe=True).eval()
    g = torch.Generator().manual_seed(1)
    batch = make_batch([torch.randint(6, 60, (n,), generator=g).tolist() for n in (5, 9, 3)],
                       [[7, 3]] * 3)
    beam = beam_search(model, batch, beam=1, max_len=10, eos_id=3, wfe=True)
    assert beam == greedy(model, batch, max_len=10, eos_id=3, wfe=True)
    with torch.no_grad():
        limits = decoding.wfe_limits(model.start(batch).wfe.a_hat)  # (B, V)
    for hyp, limit in zip(beam, limits, strict=True):
        assert all(n <= limit[w] for w, n in Counter(hyp.tokens).items())


def test_rnn_rows_decode_independently():
    torch.manual_seed(3)
    model = TinyRNN().eval()
    batch = rnn_batch(rows=5, seed=3)
    together = beam_search(model, batch, beam=4, alpha=0.6, max_len=10, eos_id=3)
    for i, hyp in enumerate(together):
        one = make_batch([batch.sources[i, :batch.source_lengths[i]].tolist()], [[3]])
        alone = beam_search(model, one, beam=4, alpha=0.6, max_len=10, eos_id=3)[0]
        # Tokens exactly; scores up to float32 rounding (a GRU on 1 row vs 5 sums differently).
        assert (alone.tokens, alone.finished) == (hyp.tokens, hyp.finished), i
        assert alone.score == pytest.approx(hyp.score, abs=1e-5)
        assert alone.logprob == pytest.approx(hyp.logprob, abs=1e-5)
    assert {h.finished for h in together} == {True, False}  # rows ended at different steps


# WFE


def test_wfe_limits_round_the_estimate_and_allow_every_word_once():
    a_hat = torch.tensor([[0.0, 0.2, 0.49, 0.5, 1.4, 1.5, 2.6, 7.0]])
    assert decoding.wfe_limits(a_hat).tolist() == [[1, 1, 1, 1, 1, 2, 3, 7]]


def test_wfe_adjustment_blocks_used_up_words_and_charges_nothing_else():
    left = torch.tensor([[0.0, 1.0, 3.0, 0.0, -1.0]])
    adj = decoding.wfe_adjustment(left, eos_id=3)
    assert adj.tolist() == [[float("-inf"), 0.0, 0.0, 0.0, float("-inf")]]  # </s> never blocked


def sure(r: list[list[float]]) -> Estimate:
    """An estimate a_hat = r: the gate wide open (sigmoid(30) is 1 in float32)."""
    r_ = torch.tensor(r)
    return Estimate(r_, torch.full_like(r_, 30.0))


def test_wfe_processor_keeps_the_counts_left_per_hypothesis():
    proc = WFEProcessor(eos_id=2)
    estimate = sure([[2.0, 0.3, 0.0], [1.0, 1.0, 1.0]])  # limits [2, 1, 1] and [1, 1, 1]
    proc.init(TableState(torch.zeros(2, 3), torch.zeros(2), estimate), rows=2, beam=2)
    # Row 0 expands into two slots that emit 0 and 1; row 1 into two that both emit 0.
    proc.update(torch.tensor([0, 1, 0, 0]), torch.tensor([0, 0, 1, 1]))
    assert proc.left.tolist() == [[1.0, 1.0, 1.0], [2.0, 0.0, 1.0],
                                  [0.0, 1.0, 1.0], [0.0, 1.0, 1.0]]
    # Slot 1 continues as two slots (0 and 3 of 4) while slot 0 is dropped.
    proc.update(torch.tensor([0, 2, 2, 1]), torch.tensor([1, 2, 3, 1]))
    assert proc.left.tolist() == [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0],
                                  [0.0, 1.0, 0.0], [2.0, -1.0, 1.0]]
    adj = proc.adjust(torch.zeros(4, 3), length=3)
    assert adj[0].tolist() == [0.0, float("-inf"), 0.0]
    assert adj[1].tolist() == [float("-inf"), 0.0, 0.0]  # </s> (2) open with nothing left


def repeating_model(estimate: Estimate | None = None) -> TableModel:
    # Tokens 0..3 and </s> = 4. Word 1 is always likeliest, then 2; </s> is unlikely, and
    # almost impossible as the first token.
    firsts = torch.log(torch.tensor([[0.04, 0.60, 0.30, 0.0599, 0.0001]]))
    row = torch.log(torch.tensor([0.04, 0.55, 0.30, 0.03, 0.08]))
    tables = row.expand(5, 5).unsqueeze(0).clone()
    if estimate is None:  # a_hat ~ 0, 2, 1.5, 0.3, 0: limits 1, 2, 1 (1.4998 rounds down), 1
        estimate = Estimate(torch.tensor([[0.0, 2.0, 1.5, 0.3, 0.0]]),
                            torch.tensor([[9.0, 9.0, 9.0, 9.0, -9.0]]))  # </s> gated shut too
    return TableModel(firsts, tables, estimate)


def test_without_wfe_the_toy_repeats():
    model = repeating_model()
    out = beam_search(model, table_batch(0), beam=3, max_len=10, eos_id=4)[0]
    assert out.tokens == [1] * 10 and not out.finished


@pytest.mark.parametrize("beam", [1, 3])
def test_wfe_never_exceeds_the_rounded_estimate_and_never_blocks_eos(beam):
    model = repeating_model()
    out = beam_search(model, table_batch(0), beam=beam, max_len=10, eos_id=4, wfe=True)[0]
    counts = Counter(out.tokens)
    assert counts[1] == 2 and all(counts[w] <= 1 for w in (0, 2, 3)), counts
    # Every word's uses are spent before max_len; </s> (estimate 0, gate shut) still ends it.
    assert out.finished and len(out.tokens) < 10


def test_wfe_greedy_score_hand_computed_charges_only_the_log_probs():
    model = repeating_model()
    out = greedy(model, table_batch(0), max_len=10, eos_id=4, wfe=True, alpha=0.6)[0]
    # 1, 1 (its 2 uses spent), 2 (1.5 rounds to 1 use), then 0.04 and 0.03 < 0.08 of </s>.
    assert out.tokens == [1, 1, 2]
    lp = math.log(0.60) + math.log(0.55) + math.log(0.30) + math.log(0.08)
    assert out.logprob == pytest.approx(lp, abs=1e-5)
    # No gate term and no charge for an estimate below 1: the score is the model's own.
    assert out.score == pytest.approx(lp / length_penalty(4, 0.6), abs=1e-5)


def test_an_estimate_below_one_allows_the_word_once():
    # Word 0 is always likeliest and estimated 0 times (ReLU(r) = 0); words 1 and 2 at 0.3.
    firsts = torch.log(torch.tensor([[0.70, 0.10, 0.10, 0.05, 0.05]]))
    row = torch.log(torch.tensor([0.50, 0.20, 0.15, 0.05, 0.10]))
    model = TableModel(firsts, row.expand(5, 5).unsqueeze(0).clone(),
                       sure([[0.0, 0.3, 0.3, 0.0, 0.0]]))
    out = greedy(model, table_batch(0), max_len=10, eos_id=4, wfe=True)[0]
    assert out.tokens == [0, 1, 2] and out.finished  # each word once, then </s>
    out = beam_search(model, table_batch(0), beam=3, max_len=10, eos_id=4, wfe=True)[0]
    assert out.tokens.count(0) == 1 and out.finished


@pytest.mark.parametrize("beam", [1, 3])
def test_a_shut_gate_does_not_shorten_outputs(beam):
    # sigmoid(-4) ~ 0.018 for every word, but r is large: every limit is far above max_len, so
    # WFE decoding is plain decoding, token for token and score for score.
    gate_shut = Estimate(torch.full((1, 5), 1000.0), torch.full((1, 5), -4.0))
    model = repeating_model(gate_shut)
    plain = beam_search(model, table_batch(0), beam=beam, max_len=10, eos_id=4)
    assert beam_search(model, table_batch(0), beam=beam, max_len=10, eos_id=4,
                       wfe=True) == plain


def test_wfe_limits_hold_on_a_model():
    torch.manual_seed(5)
    model = TinyRNN(wfe=True).eval()
    batch = rnn_batch(rows=8, seed=5)
    with torch.no_grad():
        limits = decoding.wfe_limits(model.start(batch).wfe.a_hat)  # (B, V)
    outs = beam_search(model, batch, beam=3, max_len=15, eos_id=3, wfe=True)
    for hyp, limit in zip(outs, limits, strict=True):
        for word, count in Counter(hyp.tokens).items():
            assert count <= limit[word], (word, count, float(limit[word]))
    free = beam_search(model, batch, beam=3, max_len=15, eos_id=3)
    assert any(max(Counter(h.tokens).values(), default=0) > 1 for h in free)


def test_wfe_without_a_head_is_a_clear_error():
    firsts, tables = random_tables(1, 4, seed=0)
    with pytest.raises(ValueError, match="no `wfe` estimate"):
        beam_search(TableModel(firsts, tables), table_batch(0), eos_id=3, wfe=True)
    with pytest.raises(ValueError, match="no `wfe` estimate"):
        greedy(TableModel(firsts, tables), table_batch(0), eos_id=3, wfe=True)


# ---------------------------------------------------------------------------------------------
# Long outputs: a real T-DMCA decoded for hundreds of cached steps

LONG_VOCAB, LONG_LEN = 120, 200


def long_model():
    """A tiny T-DMCA (blocks of 8: the output runs through dozens of local blocks) whose WFE
    head is set by hand: word w may occur ``1 + w % 4`` times, 300 uses over the vocabulary."""
    from wikisum import models

    torch.manual_seed(0)
    model = models.build("t-dmca", "tiny", vocab_size=LONG_VOCAB, d_model=16, n_heads=2,
                         d_ff=32, block_size=8, wfe=True).eval()
    head = model.frequency
    with torch.no_grad():
        head.r_out.weight.zero_()
        head.r_out.bias.copy_(1.0 + torch.arange(LONG_VOCAB) % 4)
        head.g_out.weight.zero_()
        head.g_out.bias.fill_(30.0)  # sigmoid(30) is 1 in float32: a_hat is the bias
    return model


def trigrams(tokens: list[int]) -> list[tuple[int, ...]]:
    return [tuple(tokens[i:i + 3]) for i in range(len(tokens) - 2)]


def test_long_outputs_never_repeat_a_trigram_and_keep_to_the_wfe_limits():
    """Beam search over 200 tokens (</s> held off by min_len) on two rows: with
    ``no_repeat_ngram_size=3`` no trigram occurs twice; with WFE as well no word exceeds
    ``1 + w % 4``, and the limits bind. Unconstrained, the same model loops within 30 tokens."""
    from wikisum.generation.decoding import DecodeOptions, generate

    model = long_model()
    batch = make_batch([[7, 8, 9, 10, 11], [12, 13]], [[3]] * 2)
    limits = [1 + w % 4 for w in range(LONG_VOCAB)]
    with torch.no_grad():
        assert decoding.wfe_limits(model.start(batch).wfe.a_hat).tolist() == [limits] * 2

    def run(length, **options):
        return generate(model, batch, DecodeOptions(beam=4, max_len=length,
                                                    min_len=length - 1, **options), eos_id=3)

    for hyp in run(30):
        assert len(set(trigrams(hyp.tokens))) < len(trigrams(hyp.tokens))
    blocked, kept = run(LONG_LEN, no_repeat_ngram_size=3), run(LONG_LEN, no_repeat_ngram_size=3,
                                                               wfe=True)
    for hyp in blocked + kept:
        assert len(hyp.tokens) >= LONG_LEN - 1
        grams = trigrams(hyp.tokens)
        assert len(set(grams)) == len(grams), Counter(grams).most_common(1)
    for hyp in blocked:
        assert any(n > limits[w] for w, n in Counter(hyp.tokens).items())
    for hyp in kept:
        counts = Counter(hyp.tokens)
        over = {w: n for w, n in counts.items() if n > limits[w]}
        assert not over, over
        at_limit = sum(n == limits[w] for w, n in counts.items())
        assert at_limit >= 60, at_limit  # the limits bind: most words used are used up
