"""What every abstractive model shares: the batch it reads, the output it returns, and the three
methods that decoding calls.

Data never reaches a model as text. A :class:`Batch` holds right-padded token ids (pad id 0):

    sources    (B, S)  the model input: title <t> ranked paragraphs, cut to L (or an article)
    targets    (B, T)  the lead (or headline) followed by </s>; no <s> (models add it themselves)
    exemplars  (B, E)  the retrieved exemplar's target (AdaDec / AttExp only), else None

Each model turns these into whatever it trains on (a decoder-only model concatenates
``source + <sep> + target``), so the data code is the same for every model.

Training calls ``model(batch) -> ModelOutput``. Decoding (``wikisum.generation.decoding``)
never calls ``forward``; it calls

    state = model.start(batch)                  # encode / prefill; one row per batch row
    logprobs, state = model.step(state, tokens) # tokens (N,): the last emitted token of each row
    state = model.reorder(state, index)         # index (N',): rows to keep or repeat (beam)

``start`` returns a state that already holds the log-probabilities of the first target token
(``state.first_logprobs``, (B, V)), so decoding begins by reading them rather than feeding a <s>.
``step`` appends exactly one token per row and costs one position (an incremental cache), not a
re-run of the prefix.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, Protocol

import torch

PAD_ID = 0


@dataclass
class Batch:
    sources: torch.Tensor  # (B, S) long, right-padded with PAD_ID
    source_lengths: torch.Tensor  # (B,) long
    targets: torch.Tensor  # (B, T) long, right-padded; each row ends with </s>
    target_lengths: torch.Tensor  # (B,) long, </s> included
    exemplars: torch.Tensor | None = None  # (B, E) long, right-padded
    exemplar_lengths: torch.Tensor | None = None  # (B,) long
    ids: list[int] = field(default_factory=list)  # example ids, for predictions files

    @property
    def size(self) -> int:
        return self.sources.shape[0]

    def to(self, device: torch.device | str) -> Batch:
        moved = {f.name: getattr(self, f.name) for f in fields(self)}
        for name, value in moved.items():
            if isinstance(value, torch.Tensor):
                moved[name] = value.to(device, non_blocking=True)
        return replace(self, **moved)


def pad(rows: list[list[int]], pad_id: int = PAD_ID) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad ``rows`` into a (B, max_len) long tensor; returns (ids, lengths)."""
    lengths = torch.tensor([len(r) for r in rows], dtype=torch.long)
    out = torch.full((len(rows), max(1, int(lengths.max()) if rows else 1)), pad_id,
                     dtype=torch.long)
    for i, r in enumerate(rows):
        if r:
            out[i, :len(r)] = torch.tensor(r, dtype=torch.long)
    return out, lengths


def make_batch(sources: list[list[int]], targets: list[list[int]],
               exemplars: list[list[int]] | None = None, ids: list[int] | None = None) -> Batch:
    """A :class:`Batch` from lists of token ids (targets must already end with </s>)."""
    src, src_len = pad(sources)
    tgt, tgt_len = pad(targets)
    ex = ex_len = None
    if exemplars is not None:
        ex, ex_len = pad(exemplars)
    return Batch(src, src_len, tgt, tgt_len, ex, ex_len, list(ids or []))


@dataclass
class ModelOutput:
    loss: torch.Tensor  # scalar: what the optimizer minimises (mean NLL + weighted aux losses)
    target_nll: torch.Tensor  # scalar: summed NLL of the target tokens (</s> included), in nats
    target_tokens: torch.Tensor  # scalar long: how many target tokens target_nll sums over
    aux: dict[str, torch.Tensor] = field(default_factory=dict)  # {"moe_balance": .., "wfe": ..}


class DecodeState(Protocol):
    first_logprobs: torch.Tensor  # (B, V) log-probabilities of the first target token


class FrequencyEstimate(Protocol):
    """WFE (Suzuki & Nagata, 2017): what a model with ``wfe=True`` puts on its decode state as
    ``state.wfe``: ``r`` (B, V) the ReLU'd upper-bound counts and ``g`` (B, V) the logits of
    the gate (sigmoid taken by the decoder)."""

    r: torch.Tensor
    g: torch.Tensor


class Summarizer(Protocol):
    """The interface ``wikisum.generation.decoding`` and ``wikisum.training.loop`` rely on."""

    config: Any

    def forward(self, batch: Batch) -> ModelOutput: ...

    def start(self, batch: Batch) -> Any: ...

    def step(self, state: Any, tokens: torch.Tensor) -> tuple[torch.Tensor, Any]: ...

    def reorder(self, state: Any, index: torch.Tensor) -> Any: ...
