"""The recurrent family of the AdaDec paper (Peng et al., NAACL 2019, "Text Generation with
Exemplar-based Adaptive Decoding"), each model optionally with word-frequency estimation (WFE;
Suzuki & Nagata, 2017).

    model = models.build("adadec", preset="tiny", vocab_size=4000)

seq2seq        the paper's baseline: a BiLSTM encoder with residual connections between layers,
               a tanh bridge from its last state to the decoder's initial state, a one-layer LSTM
               decoder with input feeding and Luong attention, and the copy mechanism of See et
               al. (2017) over the source tokens; input and output embeddings tied.
attexp         seq2seq that also encodes the exemplar (the retrieved training target) and attends
               over it and copies from it.
adadec         seq2seq whose decoder LSTM is built for each exemplar: its input and recurrent
               matrices are U diag(lambda) V^T and its bias B lambda, with lambda = C a computed
               from the exemplar (Peng et al. 2019, §3). The matrices are never materialised.
adadec+attexp  both.

The vocabulary is a shared subword vocabulary, so the copy distribution is the attention scattered
onto the source token ids: no extended vocabulary and no out-of-vocabulary slots.

Shapes: B batch rows, N decoding rows (B times the beam), S source length, E exemplar length,
T target length, V vocabulary, D = d_embed, d = d_hidden, r = rank, e = exemplar_hidden.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from wikisum.models.base import PAD_ID, Batch, ModelOutput
from wikisum.models.losses import chunked_nll
from wikisum.models.wfe import Estimate, FrequencyEstimator, target_counts, wfe_loss

# name -> (attexp, adadec): the two switches that tell the four models apart.
NAMES: dict[str, tuple[bool, bool]] = {
    "seq2seq": (False, False),
    "attexp": (True, False),
    "adadec": (False, True),
    "adadec+attexp": (True, True),
}

PRESETS: dict[str, dict] = {
    # A training step in milliseconds on a CPU: for tests and smoke runs.
    "tiny": dict(d_embed=16, d_hidden=16, encoder_layers=2, exemplar_hidden=8, dropout=0.1),
    "base": dict(d_embed=128, d_hidden=256, encoder_layers=2, exemplar_hidden=64, dropout=0.2),
    # The scale of the AdaDec paper's summarization models: 256-unit LSTMs, rank r = d.
    "paper": dict(d_embed=256, d_hidden=256, encoder_layers=2, exemplar_hidden=128, dropout=0.2),
}


@dataclass
class RecurrentConfig:
    vocab_size: int = 32000
    d_embed: int = 128  # D: word embeddings, tied with the output layer
    d_hidden: int = 256  # d: the decoder LSTM; each encoder direction has d / 2
    encoder_layers: int = 2
    dropout: float = 0.2  # on the embeddings and on the input of the output softmax layer
    rank: int | None = None  # r of U diag(lambda) V^T (ADADEC); None: r = d
    exemplar_hidden: int = 64  # e: each direction of the BiLSTM that reads the exemplar for lambda
    attexp: bool = False  # attend over and copy from the exemplar
    adadec: bool = False  # the exemplar-adaptive decoder cell
    copy: bool = True  # See et al. (2017) copy mechanism
    wfe: bool = False  # jointly trained word-frequency estimator (Suzuki & Nagata, 2017)
    # Suzuki & Nagata add the WFE loss to the NLL summed over a target; here the NLL is a mean per
    # token, so the WFE loss is weighted by about 1 / (target length): 0.01 for leads of ~100
    # tokens (use ~0.1 for headlines).
    wfe_weight: float = 0.01
    pad_id: int = 0
    bos_id: int = 2
    eos_id: int = 3

    def __post_init__(self):
        if self.rank is None:
            self.rank = self.d_hidden
        for name in ("vocab_size", "d_embed", "d_hidden", "encoder_layers", "rank",
                     "exemplar_hidden"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"RecurrentConfig.{name} must be a positive integer, "
                                 f"got {value!r}")
        if self.d_hidden % 2:
            raise ValueError(f"RecurrentConfig.d_hidden must be even (the encoder's two directions "
                             f"have d_hidden / 2 each), got {self.d_hidden}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"RecurrentConfig.dropout must be in [0, 1), got {self.dropout}")
        if self.wfe_weight < 0:
            raise ValueError(f"RecurrentConfig.wfe_weight must be >= 0, got {self.wfe_weight}")
        for name in ("pad_id", "bos_id", "eos_id"):
            value = getattr(self, name)
            if not 0 <= value < self.vocab_size:
                raise ValueError(f"RecurrentConfig.{name}={value} is outside the vocabulary "
                                 f"(vocab_size {self.vocab_size})")


def adaptive_cell_parameters(d_in: int, d: int, r: int) -> int:
    """Trainable parameters of :class:`AdaptiveLSTMCell`.

    Each of the 4 gates has an input matrix U diag(lambda) V^T with U (d, r) and V (d_in, r):
    r (d + d_in); a recurrent one with U, V (d, r): 2 r d; and a bias B lambda with B (d, r): r d.
    In all 4 r (d_in + 4 d). A torch.nn.LSTMCell of the same shape has 4 d (d_in + d) + 8 d
    (:func:`lstm_cell_parameters`), so with r = d and d_in = 2 d (input feeding with D = d) the
    adaptive cell has 24 d^2 against 12 d^2 + 8 d: about twice as many.
    """
    return 4 * r * (d_in + 4 * d)


def lstm_cell_parameters(d_in: int, d: int) -> int:
    """torch.nn.LSTMCell(d_in, d): weights 4 d (d_in + d) and two bias vectors of 4 d."""
    return 4 * d * (d_in + d) + 8 * d


def lambda_parameters(d_embed: int, e: int, r: int) -> int:
    """Trainable parameters of :class:`ExemplarLambda`: a one-layer BiLSTM over the exemplar's
    embeddings, 2 x lstm_cell_parameters(D, e), and C (r, 2 e)."""
    return 2 * lstm_cell_parameters(d_embed, e) + r * 2 * e


class BiLSTMEncoder(nn.Module):
    """Layers of bidirectional LSTMs, each after the first adding its input to its output (a
    residual connection). Output size ``d_out``: each direction has d_out / 2 units."""

    def __init__(self, d_in: int, d_out: int, layers: int):
        super().__init__()
        self.layers = nn.ModuleList(
            nn.LSTM(d_in if i == 0 else d_out, d_out // 2, batch_first=True, bidirectional=True)
            for i in range(layers))

    def forward(self, x: torch.Tensor, lengths: torch.Tensor
                ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """x (B, L, d_in), lengths (B,) each >= 1 -> states (B, L, d_out), zero at padding, and
        the last layer's final (h, c), each (B, d_out): forward and backward concatenated."""
        total = x.shape[1]
        lengths = lengths.cpu()
        for i, lstm in enumerate(self.layers):
            packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
            out, (h, c) = lstm(packed)  # h, c: (2, B, d_out / 2)
            out, _ = pad_packed_sequence(out, batch_first=True, total_length=total)
            x = out + x if i > 0 else out  # (B, L, d_out); padding stays zero
        return x, (torch.cat([h[0], h[1]], dim=-1), torch.cat([c[0], c[1]], dim=-1))


class LuongAttention(nn.Module):
    """The "general" score h_t^T W_a m_s (Luong et al. 2015, Eq. 8), softmax over the real
    positions (Eq. 7). W_a m_s is computed once per memory (:meth:`keys`), not once per step."""

    def __init__(self, d: int):
        super().__init__()
        self.w_a = nn.Linear(d, d, bias=False)

    def keys(self, memory: torch.Tensor) -> torch.Tensor:
        return self.w_a(memory)  # (N, L, d): W_a m_s

    def forward(self, query: torch.Tensor, keys: torch.Tensor, memory: torch.Tensor,
                mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """query (N, d), keys and memory (N, L, d), mask (N, L) bool -> context (N, d) and
        weights (N, L). A row with no real position gets zero weights and a zero context."""
        scores = torch.einsum("nd,nld->nl", query, keys)  # (N, L)
        empty = ~mask.any(dim=-1, keepdim=True)  # (N, 1)
        scores = scores.masked_fill(~mask, float("-inf")).masked_fill(empty, 0.0)
        weights = torch.softmax(scores, dim=-1).masked_fill(~mask, 0.0)  # (N, L)
        return torch.einsum("nl,nld->nd", weights, memory), weights


class AdaptiveLSTMCell(nn.Module):
    """An LSTM cell whose matrices are U diag(lambda) V^T, lambda given per row (Peng et al.
    2019, §3: P = sum_i lambda_i u_i v_i^T = U Lambda V^T; bias B lambda).

    Every gate (i, f, g, o, torch.nn.LSTMCell's order) has its own U and V for the input and the
    recurrent matrix; one lambda (N, r) scales all of them. The (d, d_in) matrices are never
    built: x is multiplied by V^T (rank r), scaled by lambda, then multiplied by U, so a step costs
    O(r (d_in + d)) per gate rather than O(d (d_in + d)) for a materialised matrix per row.
    """

    GATES = 4

    def __init__(self, d_in: int, d: int, r: int):
        super().__init__()
        g = self.GATES
        self.v_in = nn.Parameter(torch.empty(g, d_in, r))  # V of each gate's input matrix
        self.u_in = nn.Parameter(torch.empty(g, r, d))  # U^T of each gate's input matrix
        self.v_rec = nn.Parameter(torch.empty(g, d, r))  # V of each gate's recurrent matrix
        self.u_rec = nn.Parameter(torch.empty(g, r, d))  # U^T of each gate's recurrent matrix
        self.b = nn.Parameter(torch.empty(g, d, r))  # B of each gate: bias = B lambda
        self.reset_parameters()

    def reset_parameters(self):
        # Orthonormal U, V: with ||lambda|| = sqrt(d) the singular values of U diag(lambda) V^T are
        # the |lambda_i|, about 1, the scale of an orthogonally initialised LSTM.
        with torch.no_grad():
            for p in (self.v_in, self.u_in, self.v_rec, self.u_rec):
                for gate in p:
                    nn.init.orthogonal_(gate)
            nn.init.normal_(self.b, std=0.01)

    def forward(self, x: torch.Tensor, state: tuple[torch.Tensor, torch.Tensor],
                lam: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (N, d_in), state (h, c) each (N, d), lam (N, r) -> the next (h, c), each (N, d)."""
        h, c = state
        scale = lam.unsqueeze(1)  # (N, 1, r): the same lambda for every gate
        z_in = torch.einsum("ni,gir->ngr", x, self.v_in) * scale  # (N, 4, r): Lambda V^T x
        z_rec = torch.einsum("nj,gjr->ngr", h, self.v_rec) * scale  # (N, 4, r): Lambda V^T h
        gates = (torch.einsum("ngr,grd->ngd", z_in, self.u_in)
                 + torch.einsum("ngr,grd->ngd", z_rec, self.u_rec)
                 + torch.einsum("gdr,nr->ngd", self.b, lam))  # (N, 4, d)
        i, f, g, o = gates.unbind(dim=1)  # each (N, d)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c


class ExemplarLambda(nn.Module):
    """lambda = C a (Peng et al. 2019, §3), a (B, 2 e) the final states of a one-layer BiLSTM over
    the exemplar; lambda is rescaled to l2 norm sqrt(d) so that only its direction depends on the
    exemplar and the decoder's matrices keep their scale."""

    def __init__(self, d_embed: int, e: int, r: int, d: int):
        super().__init__()
        self.lstm = nn.LSTM(d_embed, e, batch_first=True, bidirectional=True)
        self.c = nn.Linear(2 * e, r, bias=False)
        self.norm = math.sqrt(d)

    def forward(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """x (B, E, D) embedded exemplar, lengths (B,) each >= 1 -> lambda (B, r)."""
        packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
        _, (h, _) = self.lstm(packed)  # (2, B, e)
        lam = self.c(torch.cat([h[0], h[1]], dim=-1))  # (B, r)
        return lam * (self.norm / lam.norm(dim=-1, keepdim=True).clamp_min(1e-12))


@dataclass
class RecurrentState:
    """What decoding carries from step to step; every tensor has the decoding rows first."""

    first_logprobs: torch.Tensor | None  # (N, V) log-probabilities of the first target token
    h: torch.Tensor  # (N, d) decoder LSTM state
    c: torch.Tensor  # (N, d)
    feed: torch.Tensor  # (N, d) h~ of the last step, fed back as input (zeros before the first)
    memory: torch.Tensor  # (N, S, d) source encoder states
    keys: torch.Tensor  # (N, S, d) W_a memory
    mask: torch.Tensor  # (N, S) bool: real source positions
    sources: torch.Tensor  # (N, S) source ids, where copied attention lands
    exemplar_memory: torch.Tensor | None = None  # (N, E, d) ATTEXP
    exemplar_keys: torch.Tensor | None = None  # (N, E, d)
    exemplar_mask: torch.Tensor | None = None  # (N, E) bool
    exemplars: torch.Tensor | None = None  # (N, E) exemplar ids
    lam: torch.Tensor | None = None  # (N, r) ADADEC: lambda of the row's exemplar
    wfe: Estimate | None = None  # WFE: (N, V) budgets and gate logits


@dataclass
class _Step:
    feed: torch.Tensor  # (N, d) h~_t
    alphas: list[torch.Tensor]  # attention weights over each memory: (N, S), then (N, E)
    switch: torch.Tensor | None  # (N, 1 + memories) logits of generate / copy from each memory


class RecurrentSummarizer(nn.Module):
    """One of the four models of :data:`NAMES`; see the module docstring."""

    def __init__(self, name: str, config: RecurrentConfig):
        super().__init__()
        if NAMES.get(name) != (config.attexp, config.adadec):
            raise ValueError(f"config (attexp={config.attexp}, adadec={config.adadec}) is not "
                             f"model {name!r}; expected {NAMES.get(name)}")
        self.name = name
        self.config = config
        cfg = config
        V, D, d = cfg.vocab_size, cfg.d_embed, cfg.d_hidden
        memories = 2 if cfg.attexp else 1
        self.embed = nn.Embedding(V, D, padding_idx=cfg.pad_id)
        self.drop = nn.Dropout(cfg.dropout)
        self.encoder = BiLSTMEncoder(D, d, cfg.encoder_layers)
        self.bridge = nn.Linear(2 * d, 2 * d)  # [h; c] of the encoder -> [h0; c0] of the decoder
        self.attention = LuongAttention(d)
        if cfg.attexp:
            self.exemplar_encoder = BiLSTMEncoder(D, d, 1)
            self.exemplar_attention = LuongAttention(d)
        if cfg.adadec:
            self.cell = AdaptiveLSTMCell(D + d, d, cfg.rank)
            self.lambda_net = ExemplarLambda(D, cfg.exemplar_hidden, cfg.rank, d)
        else:
            self.cell = nn.LSTMCell(D + d, d)
        self.combine = nn.Linear((memories + 1) * d, d, bias=False)  # W_c (Luong Eq. 5)
        self.to_embed = nn.Linear(d, D, bias=False) if D != d else nn.Identity()
        self.out_bias = nn.Parameter(torch.zeros(V))
        self.register_buffer("never_generated", torch.tensor(sorted({cfg.pad_id, cfg.bos_id})),
                             persistent=False)
        if cfg.copy:
            # [contexts; h_t; x_t] -> logits of (generate, copy from each memory) (See Eq. 8)
            self.switch = nn.Linear(memories * d + d + D, 1 + memories)
        if cfg.wfe:
            self.frequency = FrequencyEstimator(d, V)
        with torch.no_grad():
            nn.init.normal_(self.embed.weight, std=D ** -0.5)
            self.embed.weight[cfg.pad_id].zero_()

    # -- training ---------------------------------------------------------------------------

    def forward(self, batch: Batch) -> ModelOutput:
        """Teacher forcing: the decoder reads <s> + target[:-1] and scores every target token."""
        logp, state = self._teacher_forced(batch, gather=True)  # (B, T)
        targets = batch.targets.to(logp.device)
        mask = (torch.arange(targets.shape[1], device=targets.device).unsqueeze(0)
                < batch.target_lengths.to(targets.device).unsqueeze(1))  # (B, T)
        nll = -logp.masked_fill(~mask, 0.0).sum()
        tokens = mask.sum()
        loss = nll / tokens.clamp_min(1)
        aux = {}
        if self.config.wfe:
            ignore = tuple(sorted({PAD_ID, self.config.pad_id}))
            counts = target_counts(targets, self.config.vocab_size, ignore=ignore)  # (B, V)
            aux["wfe"] = wfe_loss(state.wfe.a_hat, counts)  # Eq. 7, Suzuki & Nagata
            loss = loss + self.config.wfe_weight * aux["wfe"]
        return ModelOutput(loss=loss, target_nll=nll, target_tokens=tokens, aux=aux)

    def logprobs(self, batch: Batch) -> torch.Tensor:
        """(B, T, V): the whole teacher-forced distribution of every target position."""
        return self._teacher_forced(batch, gather=False)[0]

    def _teacher_forced(self, batch: Batch, gather: bool
                        ) -> tuple[torch.Tensor, RecurrentState]:
        state = self._encode(batch)
        targets = batch.targets.to(state.h.device)
        B, T = targets.shape
        bos = targets.new_full((B, 1), self.config.bos_id)
        inputs = torch.cat([bos, targets[:, :-1]], dim=1)  # (B, T): <s> + target[:-1]
        emb = self.drop(self.embed(inputs))  # (B, T, D)
        steps = []
        for t in range(T):  # input feeding makes every step depend on the last one's h~
            out, state = self._advance(state, emb[:, t])
            steps.append(out)
        feed = torch.stack([s.feed for s in steps], dim=1)  # (B, T, d)
        alphas = [torch.stack([s.alphas[k] for s in steps], dim=1)  # (B, T, S) / (B, T, E)
                  for k in range(len(steps[0].alphas))]
        switch = (torch.stack([s.switch for s in steps], dim=1)  # (B, T, 1 + memories)
                  if self.config.copy else None)
        logp = self._readout(feed, alphas, switch, self._copy_ids(state),
                             targets if gather else None)
        return logp, state

    # -- decoding (models.base interface) ---------------------------------------------------

    def start(self, batch: Batch) -> RecurrentState:
        """Encode the batch and read <s>: the state holds the first token's log-probabilities."""
        state = self._encode(batch)
        bos = torch.full((batch.size,), self.config.bos_id, dtype=torch.long,
                         device=state.h.device)
        logprobs, state = self.step(state, bos)
        return replace(state, first_logprobs=logprobs)

    def step(self, state: RecurrentState, tokens: torch.Tensor
             ) -> tuple[torch.Tensor, RecurrentState]:
        """tokens (N,): each row's last token -> log-probabilities (N, V) of the copy-mixed
        distribution of the next token, and the state one LSTM step further."""
        out, state = self._advance(state, self.drop(self.embed(tokens)))
        switch = out.switch.unsqueeze(1) if out.switch is not None else None
        logp = self._readout(out.feed.unsqueeze(1), [a.unsqueeze(1) for a in out.alphas],
                             switch, self._copy_ids(state), None)  # (N, 1, V)
        return logp.squeeze(1), state

    def reorder(self, state: RecurrentState, index: torch.Tensor) -> RecurrentState:
        """Keep or repeat rows (index (N',)) of every tensor of the state."""
        changes = {}
        for f in fields(state):
            value = getattr(state, f.name)
            if isinstance(value, Estimate):
                changes[f.name] = value.index_select(index)
            elif value is not None:
                changes[f.name] = value.index_select(0, index)
        return replace(state, **changes)

    # -- the pieces --------------------------------------------------------------------------

    def _check(self, batch: Batch) -> None:
        cfg = self.config
        if batch.sources.dim() != 2 or batch.sources.shape[0] == 0:
            raise ValueError(f"batch.sources must be (B, S) with B >= 1, got "
                             f"{tuple(batch.sources.shape)}")
        lengths = batch.source_lengths
        if bool((lengths < 1).any()):
            rows = (lengths < 1).nonzero().flatten().tolist()
            raise ValueError(f"empty source in batch rows {rows} (ids {batch.ids or 'unknown'}): "
                             "a source needs at least one token")
        if int(lengths.max()) > batch.sources.shape[1]:
            raise ValueError(f"source_lengths up to {int(lengths.max())} exceed the "
                             f"{batch.sources.shape[1]} source columns")
        needs_exemplar = cfg.attexp or cfg.adadec
        if needs_exemplar and (batch.exemplars is None or batch.exemplar_lengths is None):
            raise ValueError(f"model {self.name!r} reads exemplars, but batch.exemplars is None: "
                             "load the data with exemplars (pipeline.loader Example.exemplar)")
        for label, ids in (("sources", batch.sources), ("targets", batch.targets),
                           ("exemplars", batch.exemplars if needs_exemplar else None)):
            if ids is not None and ids.numel() and (int(ids.max()) >= cfg.vocab_size
                                                    or int(ids.min()) < 0):
                raise ValueError(f"batch.{label} holds ids outside [0, {cfg.vocab_size}): "
                                 f"min {int(ids.min())}, max {int(ids.max())}")

    def _encode(self, batch: Batch) -> RecurrentState:
        self._check(batch)
        cfg = self.config
        device = self.embed.weight.device
        sources = batch.sources.to(device)
        lengths = batch.source_lengths.to(device)
        B, S = sources.shape
        memory, (h_n, c_n) = self.encoder(self.drop(self.embed(sources)), lengths)  # (B, S, d)
        mask = torch.arange(S, device=device).unsqueeze(0) < lengths.unsqueeze(1)  # (B, S)
        h0, c0 = torch.tanh(self.bridge(torch.cat([h_n, c_n], dim=-1))).chunk(2, dim=-1)
        state = RecurrentState(first_logprobs=None, h=h0, c=c0, feed=torch.zeros_like(h0),
                               memory=memory, keys=self.attention.keys(memory), mask=mask,
                               sources=sources)
        if cfg.attexp or cfg.adadec:
            exemplars = batch.exemplars.to(device)
            ex_lengths = batch.exemplar_lengths.to(device)
            # An empty exemplar is read as one pad token; nothing is attended or copied from it.
            readable = ex_lengths.clamp_min(1)
            ex_emb = self.drop(self.embed(exemplars))  # (B, E, D)
            if cfg.attexp:
                ex_memory, _ = self.exemplar_encoder(ex_emb, readable)  # (B, E, d)
                ex_mask = (torch.arange(exemplars.shape[1], device=device).unsqueeze(0)
                           < ex_lengths.unsqueeze(1))  # (B, E)
                state = replace(state, exemplar_memory=ex_memory,
                                exemplar_keys=self.exemplar_attention.keys(ex_memory),
                                exemplar_mask=ex_mask, exemplars=exemplars)
            if cfg.adadec:
                state = replace(state, lam=self.lambda_net(ex_emb, readable))  # (B, r)
        if cfg.wfe:
            state = replace(state, wfe=self.frequency(memory, mask))  # (B, V) each
        return state

    def _advance(self, state: RecurrentState, emb: torch.Tensor) -> tuple[_Step, RecurrentState]:
        """One decoder step: emb (N, D) the embedded previous token."""
        x = torch.cat([emb, state.feed], dim=-1)  # (N, D + d): input feeding (Luong §3.3)
        if self.config.adadec:
            h, c = self.cell(x, (state.h, state.c), state.lam)
        else:
            h, c = self.cell(x, (state.h, state.c))
        context, alpha = self.attention(h, state.keys, state.memory, state.mask)  # (N, d), (N, S)
        contexts, alphas = [context], [alpha]
        if self.config.attexp:
            context, alpha = self.exemplar_attention(h, state.exemplar_keys, state.exemplar_memory,
                                                     state.exemplar_mask)  # (N, d), (N, E)
            contexts.append(context)
            alphas.append(alpha)
        feed = torch.tanh(self.combine(torch.cat(contexts + [h], dim=-1)))  # (N, d) Luong Eq. 5
        switch = None
        if self.config.copy:
            switch = self.switch(torch.cat(contexts + [h, emb], dim=-1))  # (N, 1 + memories)
            if self.config.attexp:  # nothing to copy from an empty exemplar
                empty = ~state.exemplar_mask.any(dim=-1)  # (N,)
                blocked = torch.zeros_like(switch, dtype=torch.bool)
                blocked[:, 2] = empty
                switch = switch.masked_fill(blocked, float("-inf"))
        return _Step(feed, alphas, switch), replace(state, h=h, c=c, feed=feed)

    def _copy_ids(self, state: RecurrentState) -> list[torch.Tensor]:
        return [state.sources] + ([state.exemplars] if self.config.attexp else [])

    def _readout(self, feed: torch.Tensor, alphas: list[torch.Tensor],
                 switch: torch.Tensor | None, copy_ids: list[torch.Tensor],
                 targets: torch.Tensor | None) -> torch.Tensor:
        """The output distribution, mixing generation and copying (See et al. 2017, Eq. 9):

            P(w) = p_gen P_vocab(w) + sum_k p_k sum_{i: x^k_i = w} alpha^k_i

        with (p_gen, p_1, ..) = softmax(switch) (Eq. 8 generalised to one switch per memory:
        for seq2seq it is sigmoid(p_gen logit - copy logit)). feed (B, T, d); alphas (B, T, L_k);
        switch (B, T, 1 + memories); copy_ids (B, L_k). Returns log P: (B, T, V), or (B, T) of
        the ``targets`` (B, T) alone, which needs neither (B, T, V) logits nor a scatter
        (:meth:`_target_logprobs`).
        """
        hidden = self.to_embed(self.drop(feed))  # (B, T, D)
        if targets is not None:
            return self._target_logprobs(hidden, alphas, switch, copy_ids, targets)
        logits = F.linear(hidden, self.embed.weight, self.out_bias)  # (B, T, V): tied (Luong Eq. 6)
        # <pad> and <s> are never targets: generation gives them no mass (copying cannot either,
        # as attention is zero on padding and <s> is not in the data).
        logits = logits.index_fill(-1, self.never_generated, float("-inf"))
        if not self.config.copy:
            return torch.log_softmax(logits, dim=-1)
        modes = torch.softmax(switch, dim=-1)  # (B, T, 1 + memories)
        p = modes[..., :1] * torch.softmax(logits, dim=-1)  # (B, T, V)
        T = feed.shape[1]
        for k, (alpha, ids) in enumerate(zip(alphas, copy_ids, strict=True)):
            index = ids.unsqueeze(1).expand(-1, T, -1)  # (B, T, L_k)
            p = p.scatter_add(-1, index, modes[..., k + 1:k + 2] * alpha)
        return torch.log(p.clamp_min(torch.finfo(p.dtype).tiny))

    def _target_logprobs(self, hidden: torch.Tensor, alphas: list[torch.Tensor],
                         switch: torch.Tensor | None, copy_ids: list[torch.Tensor],
                         targets: torch.Tensor) -> torch.Tensor:
        """log P(target) (B, T) as :meth:`_readout` gives it, without (B, T, V) logits: the
        generation term log P_vocab(y) = -nll comes from the chunked output layer
        (``models.losses.chunked_nll``); the copy terms need no vocabulary dimension."""
        b, t, d = hidden.shape
        bias = self.out_bias.index_fill(0, self.never_generated, float("-inf"))
        log_vocab = -chunked_nll(hidden.reshape(b * t, d), self.embed.weight, bias,
                                 targets.reshape(b * t)).view(b, t)  # (B, T)
        if not self.config.copy:
            return log_vocab
        modes = torch.softmax(switch, dim=-1)  # (B, T, 1 + memories)
        y = targets.unsqueeze(-1)  # (B, T, 1)
        p = modes[..., 0] * log_vocab.exp().to(modes.dtype)  # (B, T)
        for k, (alpha, ids) in enumerate(zip(alphas, copy_ids, strict=True)):
            hits = ids.unsqueeze(1) == y  # (B, T, L_k): where the target sits in memory k
            p = p + modes[..., k + 1] * (alpha * hits).sum(-1)
        return torch.log(p.clamp_min(torch.finfo(p.dtype).tiny))


def _flags(name: str) -> tuple[bool, bool]:
    if name not in NAMES:
        raise ValueError(f"unknown recurrent model {name!r}; choose from {', '.join(NAMES)}")
    return NAMES[name]


def _config(name: str, values: dict) -> RecurrentConfig:
    attexp, adadec = _flags(name)
    known = {f.name for f in fields(RecurrentConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown RecurrentConfig fields {unknown}; known: {sorted(known)}")
    for key, flag in (("attexp", attexp), ("adadec", adadec)):
        if key in values and bool(values[key]) != flag:
            raise ValueError(f"{key}={values[key]!r} contradicts model {name!r} ({key}={flag})")
    return RecurrentConfig(**{**values, "attexp": attexp, "adadec": adadec})


def needs_exemplars(name: str) -> bool:
    """Whether model ``name`` reads a retrieved exemplar (AttExp, AdaDec; Peng et al. 2019)."""
    attexp, adadec = NAMES[name]
    return attexp or adadec


def build(name: str, preset: str = "base", **overrides) -> RecurrentSummarizer:
    """A freshly initialised model ``name`` (a key of :data:`NAMES`) of size ``preset``."""
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    return RecurrentSummarizer(name, _config(name, {**PRESETS[preset], **overrides}))


def from_config(name: str, config: dict | RecurrentConfig) -> RecurrentSummarizer:
    """The model ``name`` rebuilt from a saved config (``dataclasses.asdict(model.config)``)."""
    values = asdict(config) if isinstance(config, RecurrentConfig) else dict(config)
    return RecurrentSummarizer(name, _config(name, values))
