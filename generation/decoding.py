"""Decoding outside the model: beam search, greedy search and sampling, which run the score
processors of :mod:`wikisum.generation.processors`, and the options every decoding entry point
takes (:class:`DecodeOptions`, :func:`generate`).

    options = DecodeOptions(beam=4, no_repeat_ngram_size=3)        # beam search (the default)
    options = DecodeOptions(sample=True, top_p=0.9, seed=0)        # nucleus sampling
    hypotheses = generate(model, batch, options, eos_id=3)

Every model exposes ``start`` / ``step`` / ``reorder`` (:mod:`wikisum.models.base`); the functions
here only see the (N, V) log-probabilities that ``step`` returns, so they are tested on fixed tables
of log-probabilities as well as on real models. Copy-aware models (pointer-generator, AttExp)
need nothing special: their ``step`` already returns the final, copy-mixed distribution over the
vocabulary, and that is all the search reads.

Length. ``|Y|`` is the number of generated target tokens, ``</s>`` included: a hypothesis
``a b </s>`` has length 3. This is what tensor2tensor's beam search divides by (its step ``i``
scores the sequence of ``i + 1`` decoded tokens, the new one being possibly ``</s>``). The input
(or, for decoder-only models, the prefix ``source <sep>``) never counts. ``max_len`` bounds the
same count: a hypothesis that reaches ``max_len`` tokens without ``</s>`` is cut there
(``finished=False``) and is returned only for a row that finished nothing.

Scores. The beam ranks by ``s / lp(|Y|)`` where ``s`` sums the log-probabilities of the tokens
plus whatever the score processors add (the WFE term), and ``lp`` is GNMT's length penalty
(Wu et al., 2016). ``Hypothesis.logprob`` sums the model's own log-probabilities only.

Beam layout. Row ``b`` of the batch owns slots ``b * K .. b * K + K - 1`` of every (N, ...)
tensor, N = rows still decoding x K. At the first step each row has a single slot (the state
``start`` returned), so the model state is expanded by the first ``reorder`` rather than copied
up front; rows that are done are dropped from the state by the same ``reorder`` call.

Search (per row, K slots). At step t the candidates are the expansions of the alive slots, scored
``(s + log p) / lp(t)``, and the finished hypotheses already in the beam, which keep their score;
the K best become the new beam. An expansion by </s> becomes a finished hypothesis only when it
ranks among those K (as in fairseq). A finished hypothesis then holds its slot for as long as no
expansion beats it, which shrinks the beam as hypotheses finish (as Sockeye's does) and makes
``beam=1`` exactly greedy search. Every finished hypothesis is also kept in the row's list, so
one pushed out of the beam can still be the answer. A row is done when

  * its beam holds only finished hypotheses (no expansion ranked among the K best), or
  * no alive hypothesis can still beat its best finished one: scores never rise (log-probs and
    processor terms are <= 0), so an alive ``s`` can at best reach ``max_L s / lp(L)`` over the
    lengths L it may still end at (tensor2tensor's bound, with ``lp(max_len)`` for alpha >= 0),
  * or it reaches ``max_len`` tokens, or no candidate has a finite score (then, if it finished
    nothing, its best alive hypothesis is returned unfinished).

Sampling (:func:`sample`) follows one hypothesis per row, as greedy search does, but draws each
token from the processed scores warped by :class:`Sampling` (temperature, then top-k, then
top-p, the order of Hugging Face's ``generate``); ``top_k=1`` is greedy search. With a seed,
every row draws from its own generator, seeded from the seed and the row's key (the example id
in ``wikisum decode``), so a row's sample depends neither on the batch it is in nor on a resumed
run skipping the rows before it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

# The processors' names are importable from here too (wfe_limits and wfe_adjustment: re-exported)
from wikisum.generation.processors import (  # noqa: F401
    NEG_INF,
    MinLength,
    NoRepeatNGram,
    ScoreProcessor,
    WFEProcessor,
    wfe_adjustment,
    wfe_limits,
)


@dataclass
class Hypothesis:
    tokens: list[int]  # generated target ids, without </s>
    score: float  # what the beam ranks by: (sum of log-probs + processor terms) / lp(|Y|)
    logprob: float  # sum of the model's log-probs of the tokens and of </s> (if emitted), nats
    finished: bool = True  # False: cut at max_len (or stuck) before emitting </s>


def length_penalty(length: int, alpha: float) -> float:
    """GNMT's length penalty (Wu et al., 2016): ``((5 + |Y|) / 6) ** alpha``."""
    return ((5.0 + length) / 6.0) ** alpha


def _end_penalties(length: int, max_len: int, alpha: float) -> tuple[float, float]:
    """The penalties at both ends of the lengths an alive hypothesis of ``length`` tokens may
    still end at (length + 1 .. max_len); ``s / lp(L)`` is monotonic in L, so its maximum over
    those lengths is at one of them."""
    return length_penalty(length + 1, alpha), length_penalty(max_len, alpha)


def _processors(processors: Sequence[ScoreProcessor], *, min_len: int, max_len: int, eos_id: int,
                wfe: bool) -> list[ScoreProcessor]:
    if max_len < 1:
        raise ValueError(f"max_len must be >= 1, got {max_len}")
    if not 0 <= min_len < max_len:
        raise ValueError(f"min_len must be in [0, max_len), got min_len={min_len}, "
                         f"max_len={max_len}")
    out: list[ScoreProcessor] = []
    if min_len > 0:
        out.append(MinLength(min_len, eos_id))
    if wfe:
        out.append(WFEProcessor(eos_id))
    return out + list(processors)


def _adjust(processors: list[ScoreProcessor], logprobs: torch.Tensor, length: int
            ) -> torch.Tensor:
    scores = logprobs.float()
    for p in processors:
        scores = p.adjust(scores, length)
    return scores


@torch.no_grad()
def beam_search(model, batch, *, beam: int = 4, alpha: float = 0.6, max_len: int = 500,
                eos_id: int, min_len: int = 0, wfe: bool = False,
                processors: Sequence[ScoreProcessor] = ()) -> list[Hypothesis]:
    """The best hypothesis of each batch row under the length-normalised score (module doc).

    Args:
        model: any :class:`wikisum.models.base.Summarizer` (used in its train/eval mode as is).
        batch: a :class:`wikisum.models.base.Batch`; its targets are not read.
        beam: K, hypotheses kept per row.
        alpha: length-penalty exponent; 0 ranks by the plain sum of log-probs.
        max_len: most generated tokens per hypothesis, </s> included.
        eos_id: the id of </s>.
        min_len: fewest tokens before </s>.
        wfe: constrain word frequencies with the model's WFE estimate (``state.wfe``).
        processors: further score processors, applied after min_len and WFE.
    """
    if beam < 1:
        raise ValueError(f"beam must be >= 1, got {beam}")
    procs = _processors(processors, min_len=min_len, max_len=max_len, eos_id=eos_id, wfe=wfe)
    state = model.start(batch)
    logprobs = state.first_logprobs  # (B, V): one slot per row before the first step
    rows, vocab = logprobs.shape
    device = logprobs.device
    for p in procs:
        p.init(state, rows, beam)

    K = beam
    row_ids = list(range(rows))  # the batch row of each row still decoding
    width = 1  # slots per row in `state` and `logprobs`
    scores = torch.zeros(rows, 1, device=device)  # (Ba, W) beam score s of each alive slot
    model_lp = torch.zeros(rows, 1, device=device)  # (Ba, W) sum of the model's log-probs
    carried = torch.full((rows, 1), NEG_INF, device=device)  # (Ba, W) finished slot's score
    history = torch.zeros(rows, 1, 0, dtype=torch.long, device=device)  # (Ba, W, t - 1)
    finished: list[list[Hypothesis]] = [[] for _ in range(rows)]
    best_finished = torch.full((rows,), NEG_INF, device=device)  # (Ba,)
    results: list[Hypothesis | None] = [None] * rows

    for t in range(1, max_len + 1):
        ba = len(row_ids)
        adjusted = _adjust(procs, logprobs, t).view(ba, width, vocab)  # (Ba, W, V)
        total = scores.unsqueeze(-1) + adjusted  # (Ba, W, V) beam score s of each expansion
        expand = total / length_penalty(t, alpha)  # (Ba, W, V)
        pool = torch.cat([expand.reshape(ba, width * vocab), carried], dim=1)  # (Ba, W*V + W)
        k = min(K, pool.shape[1])
        top, idx = pool.topk(k, dim=1)  # (Ba, k)
        if k < K:  # a vocabulary smaller than the beam at the first step: pad with empty slots
            top = torch.cat([top, top.new_full((ba, K - k), NEG_INF)], dim=1)
            idx = torch.cat([idx, idx.new_full((ba, K - k), width * vocab)], dim=1)
        is_carry = idx >= width * vocab  # (Ba, K): a finished hypothesis keeps its slot
        parent = torch.where(is_carry, idx - width * vocab, idx // vocab)  # (Ba, K) slot in row
        token = torch.where(is_carry, torch.full_like(idx, eos_id), idx % vocab)  # (Ba, K)
        finite = torch.isfinite(top)
        new_eos = ~is_carry & (token == eos_id) & finite
        alive = ~is_carry & (token != eos_id) & finite

        flat = parent * vocab + token  # (Ba, K) index into the row's W * V candidates
        step_lp = logprobs.view(ba, width * vocab).gather(1, flat).float()  # (Ba, K)
        raw = total.view(ba, width * vocab).gather(1, flat)  # (Ba, K)
        new_scores = torch.where(alive, raw, NEG_INF)  # (Ba, K) beam score s of alive slots
        new_lp = model_lp.gather(1, parent) + torch.where(is_carry, 0.0, step_lp)  # (Ba, K)
        new_carried = torch.where(is_carry | new_eos, top, NEG_INF)
        new_history = torch.cat([
            history.gather(1, parent.unsqueeze(-1).expand(-1, -1, history.shape[2])),
            token.unsqueeze(-1)], dim=2)  # (Ba, K, t)

        for b, k_ in new_eos.nonzero().tolist():
            finished[row_ids[b]].append(Hypothesis(
                new_history[b, k_, :t - 1].tolist(), float(top[b, k_]), float(new_lp[b, k_])))
        if new_eos.any():
            best_finished = torch.maximum(
                best_finished, torch.where(new_eos, top, NEG_INF).amax(dim=1))

        lp_next, lp_last = _end_penalties(t, max_len, alpha)
        best_alive = new_scores.amax(dim=1)  # (Ba,) -inf where nothing is alive
        bound = torch.maximum(best_alive / lp_next, best_alive / lp_last)
        stuck = ~finite.any(dim=1)
        done = stuck | (best_finished >= bound) | (t == max_len)

        for b in done.nonzero().flatten().tolist():
            row = row_ids[b]
            if finished[row]:
                results[row] = max(finished[row], key=lambda h: h.score)
            elif stuck[b]:  # nothing could follow: the best alive hypothesis so far, unfinished
                results[row] = _unfinished(history[b], scores[b], model_lp[b], t - 1, alpha)
            else:
                results[row] = _unfinished(new_history[b], new_scores[b], new_lp[b], t, alpha)
        keep = (~done).nonzero().flatten()  # (Ba',)
        if keep.numel() == 0:
            break

        index = (keep.unsqueeze(1) * width + parent[keep]).flatten()  # (Ba' * K,)
        tokens = token[keep].flatten()  # (Ba' * K,)
        row_ids = [row_ids[b] for b in keep.tolist()]
        scores, model_lp, carried = new_scores[keep], new_lp[keep], new_carried[keep]
        history, best_finished = new_history[keep], best_finished[keep]
        width = K
        state = model.reorder(state, index)
        for p in procs:
            p.update(tokens, index)
        logprobs, state = model.step(state, tokens)  # (Ba' * K, V)
    return results


def _unfinished(history: torch.Tensor, scores: torch.Tensor, model_lp: torch.Tensor,
                length: int, alpha: float) -> Hypothesis:
    """The best alive slot of one row, as an unfinished hypothesis of ``length`` tokens.
    history (W, length), scores and model_lp (W,)."""
    best = int(scores.argmax())
    score = float(scores[best])
    return Hypothesis(history[best, :length].tolist(), score / length_penalty(length, alpha),
                      float(model_lp[best]) if math.isfinite(score) else NEG_INF,
                      finished=False)


@torch.no_grad()
def greedy(model, batch, *, max_len: int = 500, eos_id: int, wfe: bool = False,
           min_len: int = 0, alpha: float = 0.6,
           processors: Sequence[ScoreProcessor] = ()) -> list[Hypothesis]:
    """The argmax token at every step until </s> or ``max_len``: ``beam_search`` with
    ``beam=1``, same results, without the beam's bookkeeping. ``alpha`` only sets how
    ``Hypothesis.score`` is normalised (as ``beam_search`` with the same alpha would)."""
    procs = _processors(processors, min_len=min_len, max_len=max_len, eos_id=eos_id, wfe=wfe)
    return _one_path(model, batch, procs, max_len=max_len, eos_id=eos_id, alpha=alpha,
                     pick=lambda adjusted, row_ids: adjusted.max(dim=1).indices)


def _one_path(model, batch, procs: list[ScoreProcessor], *, max_len: int, eos_id: int,
              alpha: float, pick) -> list[Hypothesis]:
    """One hypothesis per row, extended by ``pick(adjusted (Ba, V), row_ids) -> (Ba,)`` tokens
    at every step until </s> or ``max_len`` (greedy search and sampling)."""
    state = model.start(batch)
    logprobs = state.first_logprobs  # (B, V)
    rows = logprobs.shape[0]
    device = logprobs.device
    for p in procs:
        p.init(state, rows, 1)

    row_ids = list(range(rows))
    scores = torch.zeros(rows, device=device)  # (Ba,) beam score s
    model_lp = torch.zeros(rows, device=device)  # (Ba,)
    history = torch.zeros(rows, 0, dtype=torch.long, device=device)  # (Ba, t - 1)
    results: list[Hypothesis | None] = [None] * rows
    for t in range(1, max_len + 1):
        adjusted = _adjust(procs, logprobs, t)  # (Ba, V)
        token = pick(adjusted, row_ids)  # (Ba,)
        best = adjusted.gather(1, token.unsqueeze(1)).squeeze(1)  # (Ba,)
        finite = torch.isfinite(best)
        new_scores = scores + best
        new_lp = model_lp + logprobs.float().gather(1, token.unsqueeze(1)).squeeze(1)
        new_history = torch.cat([history, token.unsqueeze(1)], dim=1)  # (Ba, t)
        eos = (token == eos_id) & finite
        done = eos | ~finite | (t == max_len)
        for b in done.nonzero().flatten().tolist():
            if eos[b]:
                # Normalised in float32 like the beam's candidates, so that beam=1 agrees.
                results[row_ids[b]] = Hypothesis(
                    history[b].tolist(), float(new_scores[b] / length_penalty(t, alpha)),
                    float(new_lp[b]))
            elif not finite[b]:
                results[row_ids[b]] = _unfinished(history[b:b + 1], scores[b:b + 1],
                                                  model_lp[b:b + 1], t - 1, alpha)
            else:
                results[row_ids[b]] = _unfinished(new_history[b:b + 1], new_scores[b:b + 1],
                                                  new_lp[b:b + 1], t, alpha)
        keep = (~done).nonzero().flatten()
        if keep.numel() == 0:
            break
        row_ids = [row_ids[b] for b in keep.tolist()]
        scores, model_lp, history = new_scores[keep], new_lp[keep], new_history[keep]
        tokens = token[keep]
        state = model.reorder(state, keep)
        for p in procs:
            p.update(tokens, keep)
        logprobs, state = model.step(state, tokens)
    return results


# ------------------------------------------------------------------------------------------
# Sampling, and the options every decoding entry point (``wikisum decode``, ``summarize``) takes.


@dataclass(frozen=True)
class Sampling:
    """How :func:`sample` reshapes the processed scores before drawing a token: divide by
    ``temperature``, keep the ``top_k`` best (0: all), then the smallest set of best tokens
    whose probability reaches ``top_p`` (1: all)."""

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0

    def __post_init__(self):
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be a positive number, got {self.temperature}")
        if self.top_k < 0:
            raise ValueError(f"top_k must be at least 0 (0: no limit), got {self.top_k}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")

    def warp(self, scores: torch.Tensor) -> torch.Tensor:
        """scores (N, V) -> (N, V), -inf for the tokens that may not be drawn."""
        out = scores / self.temperature
        if self.top_k:
            kth = out.topk(min(self.top_k, out.shape[1]), dim=1).values[:, -1:]  # (N, 1)
            out = out.masked_fill(out < kth, NEG_INF)
        if self.top_p < 1:
            ordered, order = out.sort(dim=1, descending=True)
            probs = torch.softmax(ordered, dim=1)
            # a token goes when the better ones already reach top_p (the best one never goes)
            drop = (probs.cumsum(dim=1) - probs) >= self.top_p
            out = out.masked_fill(torch.zeros_like(drop).scatter(1, order, drop), NEG_INF)
        return out


def row_seed(seed: int, key: int) -> int:
    """The seed of the generator of the row with ``key`` (an example id) under ``seed``."""
    return (seed * 1_000_003 + key) % 2**63


@torch.no_grad()
def sample(model, batch, *, max_len: int = 500, eos_id: int, sampling: Sampling = Sampling(),
           seed: int | None = None, keys: Sequence[int] | None = None, wfe: bool = False,
           min_len: int = 0, alpha: float = 0.6,
           processors: Sequence[ScoreProcessor] = ()) -> list[Hypothesis]:
    """One sampled hypothesis per row: each token drawn from the processed scores (min_len, WFE,
    ``processors``) warped by ``sampling``. ``Hypothesis.score`` is what greedy search would
    give the same tokens (the processed, unwarped log-probs over the length penalty).

    With ``seed``, row r draws from a generator seeded by ``row_seed(seed, keys[r])`` (keys
    default to the row numbers): the same seed and keys give the same samples, whatever the
    batch. Without, the draws come from torch's global generator.
    """
    procs = _processors(processors, min_len=min_len, max_len=max_len, eos_id=eos_id, wfe=wfe)
    rows = batch.sources.shape[0]
    keys = list(range(rows)) if keys is None else list(keys)
    if len(keys) != rows:
        raise ValueError(f"{len(keys)} keys for a batch of {rows} rows")
    generators = None
    if seed is not None:
        device = batch.sources.device
        generators = [torch.Generator(device=device).manual_seed(row_seed(seed, k))
                      for k in keys]

    def pick(adjusted: torch.Tensor, row_ids: list[int]) -> torch.Tensor:
        warped = sampling.warp(adjusted)
        # a row with nothing left to draw is stuck; draw anything, its score says so
        warped = warped.masked_fill(~torch.isfinite(warped).any(dim=1, keepdim=True), 0.0)
        probs = torch.softmax(warped, dim=1)
        if generators is None:
            return torch.multinomial(probs, 1).squeeze(1)
        return torch.cat([torch.multinomial(probs[b], 1, generator=generators[row])
                          for b, row in enumerate(row_ids)])

    return _one_path(model, batch, procs, max_len=max_len, eos_id=eos_id, alpha=alpha,
                     pick=pick)


DEFAULT_BEAM = 4


@dataclass(frozen=True)
class DecodeOptions:
    """How to decode: beam search (the default), greedy search (``beam=1``) or sampling.

    Attributes:
        beam: hypotheses kept per row (None: :data:`DEFAULT_BEAM`; sampling draws one).
        alpha: GNMT length-penalty exponent (ranks the beam; normalises scores).
        max_len: most generated tokens, </s> included.
        min_len: fewest tokens before </s>.
        no_repeat_ngram_size: no n-gram of this size occurs twice in an output (0: off).
        wfe: word-frequency-constrained decoding (a model trained with WFE).
        sample: draw tokens instead of searching; with ``temperature``, ``top_k`` (0: no
            limit), ``top_p`` (1: no limit) and ``seed`` (None: torch's global generator).
    """

    beam: int | None = None
    alpha: float = 0.6
    max_len: int = 500
    min_len: int = 0
    no_repeat_ngram_size: int = 0
    wfe: bool = False
    sample: bool = False
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int | None = None

    def __post_init__(self):
        if self.beam is not None and self.beam < 1:
            raise ValueError(f"beam must be at least 1, got {self.beam}")
        if self.max_len < 1:
            raise ValueError(f"max_len must be at least 1, got {self.max_len}")
        if not 0 <= self.min_len < self.max_len:
            raise ValueError(f"min_len must be in [0, max_len), got min_len={self.min_len}, "
                             f"max_len={self.max_len}")
        if self.no_repeat_ngram_size < 0:
            raise ValueError("no_repeat_ngram_size must be at least 0 (0: off), got "
                             f"{self.no_repeat_ngram_size}")
        if not (math.isfinite(self.alpha) and self.alpha >= 0):
            raise ValueError(f"alpha must be a finite number >= 0, got {self.alpha}")
        self.sampling()  # checks temperature, top_k, top_p
        if self.sample:
            if self.beam not in (None, 1):
                raise ValueError(f"sampling draws one sequence per example: beam {self.beam} "
                                 "does not apply (leave it out)")
        else:
            given = [name for name, value, default in (
                ("temperature", self.temperature, 1.0), ("top_k", self.top_k, 0),
                ("top_p", self.top_p, 1.0), ("seed", self.seed, None)) if value != default]
            if given:
                raise ValueError(f"{', '.join(given)} apply to sampling only: set sample "
                                 "(--do-sample) as well, or leave them out for beam search")

    @property
    def beam_size(self) -> int:
        return 1 if self.sample else (self.beam or DEFAULT_BEAM)

    @property
    def method(self) -> str:
        """'sampling', 'greedy' or 'beam'."""
        return "sampling" if self.sample else ("greedy" if self.beam_size == 1 else "beam")

    def sampling(self) -> Sampling:
        return Sampling(self.temperature, self.top_k, self.top_p)

    def settings(self) -> dict:
        """What decides the outputs, as plain values (the record of a predictions file)."""
        out = {"method": self.method, "beam": self.beam_size, "alpha": self.alpha,
               "max_len": self.max_len, "min_len": self.min_len,
               "no_repeat_ngram_size": self.no_repeat_ngram_size, "wfe": self.wfe}
        if self.sample:
            out.update(temperature=self.temperature, top_k=self.top_k, top_p=self.top_p,
                       seed=self.seed)
        return out


def generate_settings(options: DecodeOptions) -> dict:
    """``options`` as the arguments of transformers' ``generate`` (a pretrained model,
    ``--model hf``): ``num_beams`` the beam, ``length_penalty`` alpha (it divides a beam's
    score by ``length ** alpha``, not GNMT's ``((5 + length) / 6) ** alpha``: the same
    preference, not the same ranking), ``max_new_tokens`` max_len, ``min_new_tokens``
    min_len, ``no_repeat_ngram_size``; sampling: ``do_sample`` with ``temperature``,
    ``top_k`` and ``top_p``."""
    if options.wfe:
        raise ValueError("wfe decoding needs a model trained with the word-frequency "
                         "estimator; a pretrained (hf) model has none")
    settings: dict = {"max_new_tokens": options.max_len, "min_new_tokens": options.min_len}
    if options.no_repeat_ngram_size:
        settings["no_repeat_ngram_size"] = options.no_repeat_ngram_size
    if options.sample:
        settings.update(do_sample=True, num_beams=1, temperature=options.temperature,
                        top_k=options.top_k or None, top_p=options.top_p)
    else:
        settings.update(do_sample=False, num_beams=options.beam_size,
                        length_penalty=options.alpha)
        if options.beam_size > 1:
            settings["early_stopping"] = True
    return settings


def generate(model, batch, options: DecodeOptions, *, eos_id: int,
             keys: Sequence[int] | None = None,
             processors: Sequence[ScoreProcessor] = ()) -> list[Hypothesis]:
    """The hypothesis of every batch row under ``options`` (beam search, greedy search or
    sampling). ``keys`` (one per row, e.g. example ids) seed sampling's per-row generators.
    A pretrained model (``generate_ids``: ``--model hf``) decodes with transformers'
    ``generate`` (:func:`generate_settings`; its hypotheses carry no scores) and ends its
    outputs at its own eos."""
    if hasattr(model, "generate_ids"):
        if processors:
            raise ValueError("score processors do not apply to a pretrained (hf) model")
        seeds = None
        if options.sample and options.seed is not None:
            seeds = [row_seed(options.seed, int(k)) for k in (keys or range(batch.size))]
        return [Hypothesis(tokens=tokens, score=0.0, logprob=0.0, finished=finished)
                for tokens, finished in model.generate_ids(batch, generate_settings(options),
                                                           seeds)]
    procs = list(processors)
    if options.no_repeat_ngram_size:
        procs.append(NoRepeatNGram(options.no_repeat_ngram_size))
    common = dict(max_len=options.max_len, eos_id=eos_id, min_len=options.min_len,
                  wfe=options.wfe, alpha=options.alpha, processors=procs)
    if options.sample:
        return sample(model, batch, sampling=options.sampling(), seed=options.seed, keys=keys,
                      **common)
    if options.beam_size == 1:
        return greedy(model, batch, **common)
    return beam_search(model, batch, beam=options.beam_size, **common)
