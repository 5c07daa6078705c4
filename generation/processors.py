"""Score processors: what a search may emit next, as adjustments of every hypothesis's
next-token scores (:class:`ScoreProcessor`): a minimum length, WFE's word-frequency cap
(Suzuki & Nagata, 2017) and no repeated n-grams.

Beam search, greedy search and sampling (:mod:`wikisum.generation.decoding`) run ``min_len``
and WFE first, then the processors they are given. Each processor is a small piece of tensor
code over (N, V) scores, so it is tested on fixed tables of log-probabilities.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch

NEG_INF = float("-inf")


class ScoreProcessor(Protocol):
    """Adjusts the next-token scores of every hypothesis before the beam picks its top K.

    Stateful and single-use per search: ``beam_search`` calls ``init`` once, then for every step
    ``adjust`` and, with the tokens it chose, ``update``. Adjustments must be <= 0 (penalise or
    block with -inf, never reward): the stopping rule relies on scores never rising.
    """

    def init(self, state: Any, rows: int, beam: int) -> None:
        """``state`` is what ``model.start`` returned: ``rows`` rows, one slot each. ``beam``
        is the number of slots per row after the first step."""

    def adjust(self, logprobs: torch.Tensor, length: int) -> torch.Tensor:
        """logprobs (N, V), one row per current slot; ``length`` is |Y| of the hypotheses the
        candidates make (</s> included). Returns (N, V)."""

    def update(self, tokens: torch.Tensor, index: torch.Tensor) -> None:
        """index (N',): the previous slot each new slot continues (the same index given to
        ``model.reorder``); tokens (N',): the token each new slot emitted."""


class MinLength:
    """Blocks </s> until the hypothesis holds at least ``min_len`` tokens before it."""

    def __init__(self, min_len: int, eos_id: int):
        self.min_len = min_len
        self.eos_id = eos_id

    def init(self, state: Any, rows: int, beam: int) -> None:
        pass

    def adjust(self, logprobs: torch.Tensor, length: int) -> torch.Tensor:
        if length > self.min_len:  # </s> as token number `length` leaves length - 1 before it
            return logprobs
        out = logprobs.clone()
        out[:, self.eos_id] = NEG_INF
        return out

    def update(self, tokens: torch.Tensor, index: torch.Tensor) -> None:
        pass


def wfe_limits(a_hat: torch.Tensor) -> torch.Tensor:
    """How many times each word may occur in an output under WFE: the estimated frequency
    rounded to the nearest count, and at least 1 (a word used once is never a repeat).

        n_w = max(1, floor(a_hat_w + 1/2))

    Shapes: a_hat (N, V); returns (N, V) float32 of whole numbers >= 1.
    """
    return torch.floor(a_hat.float() + 0.5).clamp_(min=1.0)


def wfe_adjustment(left: torch.Tensor, eos_id: int) -> torch.Tensor:
    """The WFE decoding term: 0 for a word a hypothesis may still emit (``left > 0``), -inf for
    one it has used up; </s> is never blocked. Nothing is charged per token, so the constraint
    only removes repeats and never favours shorter outputs. Shapes: left (N, V); returns (N, V)
    float32."""
    adj = torch.zeros_like(left, dtype=torch.float32).masked_fill_(left <= 0, NEG_INF)
    adj[:, eos_id] = 0.0
    return adj


class WFEProcessor:
    """Word-frequency estimation at decoding time (Suzuki & Nagata, 2017), as a hard cap on each
    word's count.

    The model estimates an upper bound ``a_hat = ReLU(r) * sigmoid(g)`` on how often each word
    occurs in the output (``state.wfe``, :class:`wikisum.models.wfe.Estimate`; eq. 7 trains
    ``a_hat`` itself, not ``r``, against the true counts). Each hypothesis y_<j keeps what is left
    of every word's limit, and the next word's score is

        s(y_j = w | y_<j) = log p(w | y_<j, x) + log 1[c_w(y_<j) < n_w],
        n_w = max(1, floor(a_hat_w + 1/2))                                 (:func:`wfe_limits`)

    where c_w(y_<j) counts w in the hypothesis; </s> is never blocked. So a word with estimate
    a_hat may be emitted round(a_hat) times, and once even when a_hat < 0.5.

    The paper's decoding (its Algorithm 1, as we read it) adds ``log(clip(a_hat - c(y_<j), 0,
    1))`` instead: a word may occur ceil(a_hat) times, the last use charged log of the fraction
    left, and a word with a_hat = 0 never. This module applied that with ReLU(r) as the
    remaining count and added log sigmoid(g) to every word. On Gigaword headlines both costs
    fell on words only, never on </s>: every token paid log sigmoid(g) and every word estimated
    below 1 paid log a_hat, so hypotheses that ended early won, and outputs got a fifth shorter
    (docs/benchmarks.md, Headlines). Rounding instead of the fractional charge also makes eq.
    7's margin (an estimate up to a + epsilon is not penalised) allow a word a times, not a + 1.
    """

    def __init__(self, eos_id: int):
        self.eos_id = eos_id
        self.left: torch.Tensor | None = None  # (N, V) float32: uses each hypothesis has left

    def init(self, state: Any, rows: int, beam: int) -> None:
        estimate = getattr(state, "wfe", None)
        if estimate is None:
            raise ValueError(
                f"WFE decoding needs a model with a word-frequency head, but the decode state "
                f"{type(state).__name__} has no `wfe` estimate; train the model with wfe=True "
                f"or decode with wfe=False")
        if estimate.r.shape[0] != rows:
            raise ValueError(f"state.wfe.r has {estimate.r.shape[0]} rows, the batch {rows}")
        self.left = wfe_limits(estimate.a_hat)  # (rows, V)

    def adjust(self, logprobs: torch.Tensor, length: int) -> torch.Tensor:
        return logprobs + wfe_adjustment(self.left, self.eos_id)

    def update(self, tokens: torch.Tensor, index: torch.Tensor) -> None:
        self.left = self.left.index_select(0, index)  # (N', V)
        self.left.scatter_add_(1, tokens.unsqueeze(1), torch.full_like(self.left[:, :1], -1.0))


class NoRepeatNGram:
    """Blocks every token that would complete an n-gram the hypothesis already holds (fairseq's
    and Hugging Face's ``no_repeat_ngram_size``): with n = 2 no bigram occurs twice in an output.
    Each hypothesis keeps its own history of tokens, reordered with the beam."""

    def __init__(self, n: int):
        if n < 1:
            raise ValueError(f"no_repeat_ngram_size must be at least 1, got {n}")
        self.n = n
        self.rows = 0
        self.history: torch.Tensor | None = None  # (N, t) tokens of each slot so far

    def init(self, state: Any, rows: int, beam: int) -> None:
        self.rows = rows
        self.history = None

    def adjust(self, logprobs: torch.Tensor, length: int) -> torch.Tensor:
        n, history = self.n, self.history
        if history is None or history.shape[1] < n:  # no complete n-gram yet
            return logprobs
        t = history.shape[1]
        windows = history.unfold(1, n, 1)  # (N, t - n + 1, n) every n-gram so far
        prefix = history[:, t - n + 1:]  # (N, n - 1) what the next token would complete
        match = (windows[:, :, :n - 1] == prefix.unsqueeze(1)).all(dim=-1)  # (N, t - n + 1)
        rows, starts = match.nonzero(as_tuple=True)
        if rows.numel() == 0:
            return logprobs
        out = logprobs.clone()
        out[rows, windows[rows, starts, n - 1]] = NEG_INF
        return out

    def update(self, tokens: torch.Tensor, index: torch.Tensor) -> None:
        if self.history is None:
            self.history = tokens.new_zeros((self.rows, 0))
        self.history = torch.cat([self.history.index_select(0, index), tokens.unsqueeze(1)], 1)
