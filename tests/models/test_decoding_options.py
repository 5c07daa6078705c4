"""Decoding options: sampling (temperature, top-k, top-p, seeds), no_repeat_ngram_size and the
minimum length, on tiny registered models and on a model that wants to stop at once."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch

from wikisum import models
from wikisum.generation.decoding import (
    DecodeOptions,
    NoRepeatNGram,
    Sampling,
    beam_search,
    generate,
    greedy,
    sample,
)
from wikisum.models.base import make_batch

EOS = 3


def tiny(name: str, seed: int = 0):
    torch.manual_seed(seed)
    return models.build(name, "tiny", vocab_size=40).eval()


def batch_of(rows: int, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    sources = [torch.randint(6, 40, (int(n),), generator=g).tolist()
               for n in torch.randint(3, 10, (rows,), generator=g)]
    return make_batch(sources, [[7, EOS]] * rows)


def bigrams(tokens: list[int]) -> list[tuple[int, int]]:
    return list(zip(tokens, tokens[1:], strict=False))


def repeats_a_bigram(tokens: list[int]) -> bool:
    pairs = bigrams(tokens)
    return len(set(pairs)) < len(pairs)


@pytest.mark.parametrize("name", ["t-ed", "seq2seq"])
def test_top_k_one_sampling_is_greedy(name):
    model, batch = tiny(name), batch_of(4)
    plain = greedy(model, batch, max_len=15, eos_id=EOS)
    for seed, temperature in ((0, 1.0), (1, 0.5), (2, 3.0)):
        drawn = sample(model, batch, max_len=15, eos_id=EOS, seed=seed,
                       sampling=Sampling(temperature=temperature, top_k=1))
        assert [h.tokens for h in drawn] == [h.tokens for h in plain]
        assert [h.score for h in drawn] == pytest.approx([h.score for h in plain])
    options = DecodeOptions(sample=True, top_k=1, max_len=15)
    assert generate(model, batch, options, eos_id=EOS) == plain


def test_sampling_with_a_seed_is_deterministic_and_per_row():
    model, batch = tiny("t-ed"), batch_of(5)
    options = DecodeOptions(sample=True, temperature=1.5, seed=7, max_len=12)
    first = generate(model, batch, options, eos_id=EOS, keys=[10, 11, 12, 13, 14])
    again = generate(model, batch, options, eos_id=EOS, keys=[10, 11, 12, 13, 14])
    assert first == again
    other = generate(model, batch, DecodeOptions(sample=True, temperature=1.5, seed=8,
                                                 max_len=12), eos_id=EOS,
                     keys=[10, 11, 12, 13, 14])
    assert [h.tokens for h in other] != [h.tokens for h in first]
    # A row's sample depends on its key, not on the batch around it.
    alone = make_batch([batch.sources[2, :batch.source_lengths[2]].tolist()], [[EOS]])
    assert generate(model, alone, options, eos_id=EOS, keys=[12])[0].tokens == first[2].tokens


@pytest.mark.parametrize("method", ["beam", "greedy", "sampling"])
def test_no_repeat_ngram_size_two_never_repeats_a_bigram(method):
    model, batch = tiny("seq2seq", seed=2), batch_of(6, seed=3)
    kw = {"beam": dict(beam=3), "greedy": dict(beam=1),
          "sampling": dict(sample=True, seed=0, temperature=0.7)}[method]
    plain = generate(model, batch, DecodeOptions(max_len=40, **kw), eos_id=EOS)
    assert any(repeats_a_bigram(h.tokens) for h in plain)  # the check below means something
    blocked = generate(model, batch, DecodeOptions(max_len=40, no_repeat_ngram_size=2, **kw),
                       eos_id=EOS)
    for hyp in blocked:
        assert not repeats_a_bigram(hyp.tokens + ([EOS] if hyp.finished else []))
        assert len(hyp.tokens) > 2


def test_no_repeat_ngram_blocks_the_completions_hand_computed():
    proc = NoRepeatNGram(2)
    proc.init(None, rows=2, beam=1)
    for tokens in ([5, 1], [6, 1], [5, 2], [6, 6]):  # row 0: 5 6 5 6; row 1: 1 1 2 6
        proc.update(torch.tensor(tokens), torch.tensor([0, 1]))
    out = proc.adjust(torch.zeros(2, 8), length=5)
    # Row 0 ends with 6 and holds "6 5": 5 is blocked. Row 1 ends with 6, no bigram starts
    # with 6 before: nothing is.
    assert torch.isinf(out[0]).nonzero().flatten().tolist() == [5]
    assert not torch.isinf(out[1]).any()
    unigram = NoRepeatNGram(1)
    unigram.init(None, rows=1, beam=1)
    unigram.update(torch.tensor([4]), torch.tensor([0]))
    assert torch.isinf(unigram.adjust(torch.zeros(1, 6), 2)).nonzero()[:, 1].tolist() == [4]
    with pytest.raises(ValueError, match="no_repeat_ngram_size"):
        NoRepeatNGram(0)


@dataclass
class _State:
    first_logprobs: torch.Tensor


class WantsToStop:
    """Every step: </s> with probability 0.9, the rest spread over the other tokens."""

    vocab = 8

    def _logprobs(self, rows: int) -> torch.Tensor:
        p = torch.full((rows, self.vocab), 0.1 / (self.vocab - 1))
        p[:, EOS] = 0.9
        return p.log()

    def start(self, batch):
        return _State(self._logprobs(batch.sources.shape[0]))

    def step(self, state, tokens):
        return self._logprobs(tokens.shape[0]), state

    def reorder(self, state, index):
        return state


@pytest.mark.parametrize("kw", [dict(beam=3), dict(beam=1),
                                dict(sample=True, seed=4, temperature=2.0)])
def test_min_len_is_respected_by_every_method(kw):
    model, batch = WantsToStop(), batch_of(3)
    assert all(h.tokens == [] for h in generate(model, batch, DecodeOptions(max_len=20, **kw),
                                                eos_id=EOS)
               if not kw.get("sample"))
    for hyp in generate(model, batch, DecodeOptions(max_len=20, min_len=6, **kw), eos_id=EOS):
        assert hyp.finished and len(hyp.tokens) >= 6


def test_warping_hand_computed():
    scores = torch.tensor([[0.5, 0.3, 0.15, 0.05]]).log()
    kept = lambda s: torch.isfinite(s[0]).nonzero().flatten().tolist()  # noqa: E731
    assert kept(Sampling(top_k=2).warp(scores)) == [0, 1]
    assert kept(Sampling(top_p=0.8).warp(scores)) == [0, 1]
    assert kept(Sampling(top_p=0.81).warp(scores)) == [0, 1, 2]
    assert kept(Sampling(top_p=0.1).warp(scores)) == [0]
    assert Sampling(temperature=2.0).warp(scores)[0, 0] == pytest.approx(math.log(0.5) / 2)


def test_bad_options_are_clear_errors():
    with pytest.raises(ValueError, match="top_k apply to sampling only"):
        DecodeOptions(top_k=5)
    with pytest.raises(ValueError, match="sampling draws one sequence"):
        DecodeOptions(sample=True, beam=4)
    with pytest.raises(ValueError, match="temperature"):
        DecodeOptions(sample=True, temperature=0.0)
    with pytest.raises(ValueError, match="top_p"):
        Sampling(top_p=1.5)
    with pytest.raises(ValueError, match="min_len"):
        DecodeOptions(max_len=5, min_len=5)
    assert DecodeOptions().beam_size == 4 and DecodeOptions(sample=True).beam_size == 1
    assert DecodeOptions().settings()["method"] == "beam"


def test_beam_search_with_a_processor_list_is_unchanged_without_options():
    model, batch = tiny("t-ed"), batch_of(3)
    assert generate(model, batch, DecodeOptions(beam=2, max_len=10), eos_id=EOS) == \
        beam_search(model, batch, beam=2, max_len=10, eos_id=EOS)
