"""The Transformer family of Liu et al. (2018), "Generating Wikipedia by Summarizing Long
Sequences" (Sec. 4.2): T-ED, T-D and T-DMCA, optionally with a mixture-of-experts layer and
word-frequency estimation (WFE, Suzuki & Nagata 2017).

    t-ed    encoder-decoder (Vaswani et al. 2017): the encoder reads the source with a padding
            mask; the decoder reads <s> + target[:-1] with causal self-attention and
            cross-attention, and predicts the target.
    t-d     decoder only: each example is one sequence ``source + <sep> + target`` trained as a
            language model; the loss covers both parts (``loss_on="all"``, the paper's choice)
            or the target only (``loss_on="target"``).
    t-dmca  t-d whose self-attention layers follow ``layer_kinds``: "local" (blocks of
            ``block_size``) and "compressed" (keys and values shortened by a strided
            convolution), by default local, compressed, local, compressed, local.

Pre-norm layers (tensor2tensor's layer_preprocess "n", postprocess "da"), sinusoidal positions
(no maximum length), embeddings scaled by sqrt(d) and shared by the encoder, the decoder and, with
``tie_embeddings``, the output projection. Decoding calls ``start``/``step``/``reorder``
(:mod:`wikisum.models.base`); ``step`` costs one position thanks to per-layer caches
(:class:`wikisum.models.attention.AttentionCache`).

Presets (``build(name, preset)``):

    tiny   d 64, 4 heads, d_ff 128, 2 layers (t-ed: 2 + 2; t-dmca: local, compressed, local),
           block 64, no dropout: trains a step in milliseconds on a CPU; tests and the demo.
    base   transformer_base: d 512, 8 heads, d_ff 2048, dropout 0.1, 6 layers (t-ed: 6 + 6);
           t-dmca: the 5-layer local, compressed, local, compressed, local stack, block 256.
    paper  t-ed and t-d as base. t-dmca as the paper's best model, T-DMCA-MoE-256:
           the 5-layer stack of base with one mixture-of-experts FFN of 256 experts (top-2,
           d_ff 2048 each) in the middle layer (index 2). The paper does not say which layer
           holds the experts nor their width; the middle layer and the dense d_ff are the
           choices here. About 0.6 B parameters, nearly all in the experts; override
           ``n_experts`` for a smaller one.

One file: a model family is one module, config to build functions (CONTRIBUTING's checklist).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, fields, replace

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from wikisum.models.attention import (
    ATTENTION_IMPLS,
    KINDS,
    AttentionCache,
    AttentionKind,
    CausalSelfAttention,
    MemoryAttention,
    sinusoid,
)
from wikisum.models.base import Batch, ModelOutput
from wikisum.models.losses import masked_weighted_nll, untraced_nll
from wikisum.models.moe import MixtureOfExperts, MoEStats
from wikisum.models.wfe import Estimate, FrequencyEstimator, target_counts, wfe_loss

NAMES = ("t-ed", "t-d", "t-dmca")
PRESETS = ("tiny", "base", "paper")
LOSS_ON = ("all", "target")
DMCA_PATTERN: tuple[AttentionKind, ...] = ("local", "compressed")  # cycled over the layers


@dataclass
class TransformerConfig:
    """Every hyper-parameter of a T-ED / T-D / T-DMCA model (saved in checkpoints)."""

    vocab_size: int = 32000
    d_model: int = 512
    n_heads: int = 8
    n_layers: int = 6  # decoder layers
    n_encoder_layers: int = 6  # t-ed only; 0 for the decoder-only models
    d_ff: int = 2048
    dropout: float = 0.1  # residual, FFN hidden and attention weights
    # Self-attention kind of each decoder layer; None = all "full".
    layer_kinds: list[AttentionKind] | None = None
    block_size: int = 256  # local attention: positions per block
    previous_block: bool = True  # local attention also sees the previous block (tensor2tensor)
    compress_kernel: int = 3  # memory-compressed attention: convolution width ...
    compress_stride: int = 3  # ... and stride, in positions
    moe_layers: list[int] = field(default_factory=list)  # decoder layers whose FFN is a MoE
    n_experts: int = 16
    capacity_factor: float = 1.25
    moe_loss_weight: float = 0.01  # weight of aux["moe_balance"] in the loss
    loss_on: str = "all"  # decoder-only: "all" (source and target) or "target"
    tie_embeddings: bool = True
    wfe: bool = False  # word-frequency estimation (Suzuki & Nagata 2017)
    # Weight of aux["wfe"] in the loss. Eq. 7 sums over the vocabulary per target while the NLL
    # is a mean per token, so on leads of hundreds of tokens a weight near 1 swamps the NLL.
    wfe_weight: float = 0.01
    pad_id: int = 0
    bos_id: int = 2
    eos_id: int = 3
    sep_id: int = 5  # <sep> between source and target (decoder-only models)
    # Activation checkpointing: keep only each decoder layer's input during training and run
    # the layer again in the backward pass (memory of one layer's activations at a time, for
    # about a third more compute).
    checkpoint_layers: bool = False
    # How local and compressed layers attend in training and prefill (models.attention):
    # "auto" (FlexAttention on CUDA where no attention dropout applies, else sdpa), "sdpa" or
    # "flex" (FlexAttention everywhere: compiled on CUDA, eager on CPU; no attention dropout).
    attention_impl: str = "auto"

    def __post_init__(self):
        if self.layer_kinds is None:
            self.layer_kinds = ["full"] * self.n_layers
        self.layer_kinds = list(self.layer_kinds)
        self.moe_layers = list(self.moe_layers)
        for i, kind in enumerate(self.layer_kinds):
            if kind not in KINDS:
                raise ValueError(f"layer_kinds[{i}] = {kind!r} is not an attention kind; "
                                 f"choose from {', '.join(KINDS)}")
        if len(self.layer_kinds) != self.n_layers:
            raise ValueError(f"layer_kinds has {len(self.layer_kinds)} entries for "
                             f"n_layers = {self.n_layers}")
        if self.n_layers < 1 or self.n_encoder_layers < 0:
            raise ValueError(f"n_layers must be >= 1 and n_encoder_layers >= 0, got "
                             f"{self.n_layers} and {self.n_encoder_layers}")
        if self.d_model % self.n_heads or self.d_model % 2:
            raise ValueError(f"d_model {self.d_model} must be even and divisible by n_heads "
                             f"{self.n_heads}")
        for name in ("block_size", "compress_kernel", "compress_stride", "d_ff"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}")
        bad = [i for i in self.moe_layers if not 0 <= i < self.n_layers]
        if bad or len(set(self.moe_layers)) != len(self.moe_layers):
            raise ValueError(f"moe_layers {self.moe_layers} must be distinct layer indices "
                             f"in [0, {self.n_layers})")
        if self.moe_layers and self.n_experts < 2:
            raise ValueError(f"a mixture of experts needs n_experts >= 2, got {self.n_experts}")
        if self.capacity_factor <= 0:
            raise ValueError(f"capacity_factor must be > 0, got {self.capacity_factor}")
        if self.attention_impl not in ATTENTION_IMPLS:
            raise ValueError(f"attention_impl {self.attention_impl!r} must be one of "
                             f"{', '.join(ATTENTION_IMPLS)}")
        if self.loss_on not in LOSS_ON:
            raise ValueError(f"loss_on {self.loss_on!r} must be one of {', '.join(LOSS_ON)}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        top = max(self.pad_id, self.bos_id, self.eos_id, self.sep_id)
        if self.vocab_size <= top:
            raise ValueError(f"vocab_size {self.vocab_size} does not hold special id {top}")


_SIZES = {
    "tiny": dict(d_model=64, n_heads=4, n_layers=2, n_encoder_layers=2, d_ff=128, dropout=0.0,
                 block_size=64, n_experts=4),
    "base": dict(d_model=512, n_heads=8, n_layers=6, n_encoder_layers=6, d_ff=2048,
                 dropout=0.1, block_size=256),
}
_SIZES["paper"] = dict(_SIZES["base"])


def dmca_kinds(n_layers: int) -> list[AttentionKind]:
    """local, compressed, local, ... for ``n_layers`` layers."""
    return [DMCA_PATTERN[i % len(DMCA_PATTERN)] for i in range(n_layers)]


def preset_config(name: str, preset: str) -> dict:
    """The config fields of model ``name`` at size ``preset`` (see the module docstring)."""
    if name not in NAMES:
        raise ValueError(f"unknown transformer {name!r}; choose from {', '.join(NAMES)}")
    if preset not in PRESETS:
        raise ValueError(f"unknown preset {preset!r}; choose from {', '.join(PRESETS)}")
    fields_ = dict(_SIZES[preset])
    if name != "t-ed":
        fields_["n_encoder_layers"] = 0
    if name == "t-dmca":
        fields_["n_layers"] = 3 if preset == "tiny" else 5
        fields_["layer_kinds"] = dmca_kinds(fields_["n_layers"])
        if preset == "paper":
            fields_.update(moe_layers=[2], n_experts=256)
    else:
        fields_["layer_kinds"] = ["full"] * fields_["n_layers"]
    return fields_


def config_from_dict(values: dict) -> TransformerConfig:
    known = {f.name for f in fields(TransformerConfig)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown TransformerConfig field(s) {', '.join(unknown)}; "
                         f"known: {', '.join(sorted(known))}")
    return TransformerConfig(**values)


def needs_exemplars(name: str) -> bool:
    """No model of this family reads a retrieved exemplar."""
    return False


def build(name: str, preset: str = "base", **overrides) -> nn.Module:
    """A freshly initialised ``name`` model of size ``preset``, any config field overridden.

    Overriding ``n_layers`` alone re-derives ``layer_kinds`` (all full; t-dmca: local,
    compressed, ...); overriding ``layer_kinds`` alone sets ``n_layers`` to its length.
    """
    values = preset_config(name, preset)
    if "layer_kinds" in overrides and "n_layers" not in overrides:
        overrides["n_layers"] = len(overrides["layer_kinds"])
    if "n_layers" in overrides and "layer_kinds" not in overrides:
        n = overrides["n_layers"]
        overrides["layer_kinds"] = dmca_kinds(n) if name == "t-dmca" else ["full"] * n
    values.update(overrides)
    return _model(name, config_from_dict(values))


def from_config(name: str, config: dict | TransformerConfig) -> nn.Module:
    """The model ``name`` rebuilt from a saved config (a dict as ``to_dict`` gives, or the
    dataclass)."""
    if name not in NAMES:
        raise ValueError(f"unknown transformer {name!r}; choose from {', '.join(NAMES)}")
    if isinstance(config, TransformerConfig):
        config = asdict(config)
    return _model(name, config_from_dict(dict(config)))


def to_dict(config: TransformerConfig) -> dict:
    return asdict(config)


def _model(name: str, config: TransformerConfig) -> nn.Module:
    if name == "t-ed":
        return EncoderDecoderTransformer(config, name)
    return DecoderOnlyTransformer(config, name)


# ---------------------------------------------------------------------------------------------
# Pure helpers


def concat_source_target(sources: torch.Tensor, source_lengths: torch.Tensor, sep_id: int,
                         pad_id: int, targets: torch.Tensor | None = None,
                         target_lengths: torch.Tensor | None = None, width: int | None = None
                         ) -> tuple[torch.Tensor, torch.Tensor]:
    """Per row ``source[:Ls] + [sep] + target[:Lt]``, right-padded: (B, T) and lengths (B,).

    Rows of a right-padded batch have different source lengths, so the target starts at a
    different column in each row; built with gathers, no loop. Without targets: the decoding
    prefix ``source + [sep]``. T is the longest row, or ``width`` when given (at least that:
    the columns past a row's length are padding).
    """
    b = sources.shape[0]
    ls = source_lengths.to(sources.device)
    lt = (torch.zeros_like(ls) if targets is None else target_lengths.to(sources.device))
    total = ls + 1 + lt  # (B,)
    if width is None:
        width = int(total.max()) if b else 1
    j = torch.arange(width, device=sources.device).unsqueeze(0).expand(b, width)  # (B, T)
    src = sources.gather(1, j.clamp(max=sources.shape[1] - 1))
    out = torch.where(j < ls[:, None], src, torch.full_like(src, pad_id))
    out = torch.where(j == ls[:, None], torch.full_like(src, sep_id), out)
    if targets is not None:
        k = (j - ls[:, None] - 1).clamp(0, targets.shape[1] - 1)
        tgt = targets.to(sources.device).gather(1, k)
        out = torch.where((j > ls[:, None]) & (j < total[:, None]), tgt, out)
    return out, total


def token_nll(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """logits (B, T, V), labels (B, T) -> NLL in nats (B, T), computed in float32 (the plain
    loss that the models' chunked ``nll`` equals; tests compare them)."""
    b, t, v = logits.shape
    return F.cross_entropy(logits.reshape(b * t, v).float(), labels.reshape(b * t),
                           reduction="none").view(b, t)


# ---------------------------------------------------------------------------------------------
# Layers


class FeedForward(nn.Module):
    """The dense position-wise FFN: Linear, ReLU, dropout, Linear."""

    def __init__(self, d_model: int, d_ff: int, dropout: float):
        super().__init__()
        self.inner = nn.Linear(d_model, d_ff)
        self.outer = nn.Linear(d_ff, d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.outer(self.drop(torch.relu(self.inner(x))))


@dataclass
class LayerCache:
    """A decoder layer's decoding cache: its self-attention cache and (T-ED) the
    cross-attention keys and values of the encoder memory, (N, H, S, D)."""

    attn: AttentionCache
    cross_k: torch.Tensor | None = None
    cross_v: torch.Tensor | None = None

    def index_select(self, index: torch.Tensor) -> LayerCache:
        return LayerCache(self.attn.index_select(index), _rows(self.cross_k, index),
                          _rows(self.cross_v, index))


def _rows(t: torch.Tensor | None, index: torch.Tensor) -> torch.Tensor | None:
    return None if t is None else t.index_select(0, index)


class DecoderBlock(nn.Module):
    """One pre-norm decoder layer: causal self-attention of this layer's kind, cross-attention
    over the encoder memory (T-ED), and a dense FFN or a mixture of experts."""

    def __init__(self, config: TransformerConfig, index: int, cross: bool):
        super().__init__()
        c = config
        self.norm_attn = nn.LayerNorm(c.d_model)
        self.attn = CausalSelfAttention(c.d_model, c.n_heads, c.layer_kinds[index], c.block_size,
                                        c.previous_block, c.compress_kernel, c.compress_stride,
                                        c.dropout, c.attention_impl)
        self.norm_cross = nn.LayerNorm(c.d_model) if cross else None
        self.cross = MemoryAttention(c.d_model, c.n_heads, c.dropout) if cross else None
        self.norm_ffn = nn.LayerNorm(c.d_model)
        self.ffn = (MixtureOfExperts(c.d_model, c.d_ff, c.n_experts, c.capacity_factor,
                                     dropout=c.dropout)
                    if index in c.moe_layers else FeedForward(c.d_model, c.d_ff, c.dropout))
        self.drop = nn.Dropout(c.dropout)

    def _ffn(self, x: torch.Tensor, token_mask: torch.Tensor | None
             ) -> tuple[torch.Tensor, MoEStats | None]:
        h = self.norm_ffn(x)
        if isinstance(self.ffn, MixtureOfExperts):
            y, stats = self.ffn(h, token_mask)
            return x + self.drop(y), stats
        return x + self.drop(self.ffn(h)), None

    def forward(self, x: torch.Tensor, token_mask: torch.Tensor | None = None,
                memory: torch.Tensor | None = None, memory_mask: torch.Tensor | None = None,
                return_cache: bool = False
                ) -> tuple[torch.Tensor, AttentionCache | None, MoEStats | None]:
        """x (B, T, d); token_mask (B, T) bool (real tokens, for the MoE); memory (B, S, d) and
        memory_mask (B, S) for cross-attention -> x (B, T, d), the self-attention cache when
        asked, the MoE stats when this layer has one."""
        a, cache = self.attn(self.norm_attn(x), return_cache)
        x = x + self.drop(a)
        if self.cross is not None:
            h = self.norm_cross(x)
            x = x + self.drop(self.cross(h, memory_mask, memory=memory))
        x, stats = self._ffn(x, token_mask)
        return x, cache, stats

    def step(self, x: torch.Tensor, cache: LayerCache, positions: torch.Tensor, length: int,
             memory_mask: torch.Tensor | None) -> torch.Tensor:
        """x (N, 1, d): one new position per row -> (N, 1, d); ``cache`` updated in place."""
        a, cache.attn = self.attn.step(self.norm_attn(x)[:, 0], cache.attn, positions, length)
        x = x + self.drop(a.unsqueeze(1))
        if self.cross is not None:
            h = self.norm_cross(x)
            x = x + self.drop(self.cross(h, memory_mask, kv=(cache.cross_k, cache.cross_v)))
        x, _ = self._ffn(x, None)
        return x


class EncoderBlock(nn.Module):
    """One pre-norm encoder layer (T-ED): self-attention over the padded source, FFN."""

    def __init__(self, config: TransformerConfig):
        super().__init__()
        c = config
        self.norm_attn = nn.LayerNorm(c.d_model)
        self.attn = MemoryAttention(c.d_model, c.n_heads, c.dropout)
        self.norm_ffn = nn.LayerNorm(c.d_model)
        self.ffn = FeedForward(c.d_model, c.d_ff, c.dropout)
        self.drop = nn.Dropout(c.dropout)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x (B, S, d), mask (B, S) bool -> (B, S, d)."""
        h = self.norm_attn(x)
        x = x + self.drop(self.attn(h, mask, memory=h))
        return x + self.drop(self.ffn(self.norm_ffn(x)))


@dataclass
class TransformerState:
    """Decoding state of T-ED / T-D / T-DMCA (see models.base)."""

    first_logprobs: torch.Tensor | None  # (N, V) log-probabilities of the first target token
    caches: list[LayerCache]  # one per decoder layer
    positions: torch.Tensor  # (N,) long: the position each row's next token takes
    length: int  # host-side bound: every written position is < length
    memory_mask: torch.Tensor | None = None  # (N, S) bool, T-ED only
    wfe: Estimate | None = None  # word-frequency estimate, when config.wfe


# ---------------------------------------------------------------------------------------------
# Models


class _Transformer(nn.Module):
    """What both model shapes share: embeddings, decoder stack, output projection, aux
    losses, ``step`` and ``reorder``."""

    def __init__(self, config: TransformerConfig, name: str, cross: bool):
        super().__init__()
        self.config, self.name = config, name
        c = config
        self.embed = nn.Embedding(c.vocab_size, c.d_model)
        nn.init.normal_(self.embed.weight, std=c.d_model ** -0.5)
        self.embed_drop = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(DecoderBlock(c, i, cross) for i in range(c.n_layers))
        self.norm = nn.LayerNorm(c.d_model)
        self.head = None if c.tie_embeddings else nn.Linear(c.d_model, c.vocab_size, bias=False)
        self.frequency = FrequencyEstimator(c.d_model, c.vocab_size) if c.wfe else None

    def embed_tokens(self, tokens: torch.Tensor, positions: torch.Tensor | None = None
                     ) -> torch.Tensor:
        """tokens (B, T) long, positions (B, T) or None (0 .. T-1) -> (B, T, d)."""
        if positions is None:
            positions = torch.arange(tokens.shape[1], device=tokens.device).unsqueeze(0)
        x = self.embed(tokens) * math.sqrt(self.config.d_model)
        return self.embed_drop(x + sinusoid(positions, self.config.d_model, x.dtype))

    def project(self, hidden: torch.Tensor) -> torch.Tensor:
        """(..., d) -> (..., V) logits."""
        return F.linear(hidden, self.embed.weight) if self.head is None else self.head(hidden)

    def nll_loss(self, hidden: torch.Tensor, labels: torch.Tensor, loss_mask: torch.Tensor,
                 target_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """hidden (B, T, d), labels, loss_mask, target_mask (B, T) -> the mean NLL over
        ``loss_mask`` (with its gradient) and the NLL in nats (B, T) float32 (no gradient)
        where either mask is set, 0 elsewhere. The output projection and cross-entropy run a
        chunk of rows at a time, never (B, T, V) logits (``models.losses``); equal to
        ``token_nll(project(hidden), labels)`` masked and averaged."""
        weight, bias = ((self.embed.weight, None) if self.head is None
                        else (self.head.weight, self.head.bias))
        weights = loss_mask.float() / loss_mask.sum().clamp(min=1)
        rows = loss_mask | target_mask
        if torch.compiler.is_compiling():
            # A compiled model's graph ends at the hidden states: the loss's loop over chunks
            # would fix the graph to one batch shape (a recompile of the whole model for each
            # new one). Where the loss covers every labelled position, it skips picking rows,
            # whose count the host would wait for.
            return untraced_nll(hidden, weight, bias, labels, weights, rows,
                                every_row=self.config.loss_on == "all")
        return masked_weighted_nll(hidden, weight, bias, labels, weights, rows)

    def decode_stack(self, x: torch.Tensor, token_mask: torch.Tensor | None = None,
                     memory: torch.Tensor | None = None, memory_mask: torch.Tensor | None = None,
                     return_cache: bool = False
                     ) -> tuple[torch.Tensor, list[LayerCache], list[MoEStats]]:
        """Embedded x (B, T, d) through every decoder layer -> normed hidden (B, T, d), the
        layer caches (when asked) and the MoE stats."""
        caches, stats = [], []
        recompute = self.config.checkpoint_layers and self.training and torch.is_grad_enabled()
        for block in self.blocks:
            if recompute:
                x, cache, moe = checkpoint(block, x, token_mask, memory, memory_mask,
                                           return_cache, use_reentrant=False)
            else:
                x, cache, moe = block(x, token_mask, memory, memory_mask, return_cache)
            if return_cache:
                caches.append(LayerCache(cache))
            if moe is not None:
                stats.append(moe)
        return self.norm(x), caches, stats

    def _output(self, loss: torch.Tensor, nll: torch.Tensor, target_mask: torch.Tensor,
                stats: list[MoEStats], estimate: Estimate | None,
                targets: torch.Tensor) -> ModelOutput:
        """The mean NLL over the loss mask (``loss``), nll and target_mask (B, T) -> the
        ModelOutput: that loss plus the weighted auxiliary losses; target_nll summed over
        target_mask."""
        c = self.config
        aux: dict[str, torch.Tensor] = {}
        if stats:
            # Mean over MoE layers: 1 at balance whatever the number of layers.
            aux["moe_balance"] = torch.stack([s.balance for s in stats]).mean()
            aux["moe_dropped"] = torch.stack([s.dropped for s in stats]).sum().float()
            loss = loss + c.moe_loss_weight * aux["moe_balance"]
        if estimate is not None:
            counts = target_counts(targets, c.vocab_size, ignore=(c.pad_id,))
            aux["wfe"] = wfe_loss(estimate.a_hat.float(), counts)
            loss = loss + c.wfe_weight * aux["wfe"]
        return ModelOutput(loss=loss, target_nll=(nll * target_mask).sum().detach(),
                           target_tokens=target_mask.sum(), aux=aux)

    @torch.no_grad()
    def step(self, state: TransformerState, tokens: torch.Tensor
             ) -> tuple[torch.Tensor, TransformerState]:
        """tokens (N,) long, one per row -> log-probabilities (N, V) of the next token and the
        new state. The caches of ``state`` are written in place: keep the returned state."""
        positions = state.positions
        x = self.embed_tokens(tokens.unsqueeze(1), positions.unsqueeze(1))  # (N, 1, d)
        for block, cache in zip(self.blocks, state.caches, strict=True):
            x = block.step(x, cache, positions, state.length + 1, state.memory_mask)
        logits = self.project(self.norm(x[:, 0]))  # (N, V)
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        return logprobs, replace(state, positions=positions + 1, length=state.length + 1)

    def reorder(self, state: TransformerState, index: torch.Tensor) -> TransformerState:
        """The state of rows ``index`` (N',), in that order (beam search keeps, drops and
        repeats rows)."""
        return TransformerState(
            first_logprobs=_rows(state.first_logprobs, index),
            caches=[cache.index_select(index) for cache in state.caches],
            positions=_rows(state.positions, index), length=state.length,
            memory_mask=_rows(state.memory_mask, index),
            wfe=None if state.wfe is None else state.wfe.index_select(index))


class DecoderOnlyTransformer(_Transformer):
    """T-D and T-DMCA (Liu et al. 2018, Sec. 4.2): a language model over
    ``source + <sep> + target``."""

    def __init__(self, config: TransformerConfig, name: str = "t-d"):
        super().__init__(config, name, cross=False)

    def logits(self, tokens: torch.Tensor) -> torch.Tensor:
        """tokens (B, T) long -> next-token logits (B, T, V)."""
        hidden, _, _ = self.decode_stack(self.embed_tokens(tokens))
        return self.project(hidden)

    def forward(self, inputs: Batch | torch.Tensor) -> ModelOutput | torch.Tensor:
        """A Batch -> ModelOutput (training); token ids (B, T) -> logits (B, T, V)."""
        if isinstance(inputs, torch.Tensor):
            return self.logits(inputs)
        if not isinstance(inputs, Batch):
            raise TypeError(f"{self.name} takes a Batch or token ids, not {type(inputs)}")
        c = self.config
        # The batch's padded width (sources + <sep> + targets), known from the shapes: reading
        # the longest row's length would wait for the device, and break a compiled graph.
        width = inputs.sources.shape[1] + 1 + inputs.targets.shape[1]
        seq, total = concat_source_target(inputs.sources, inputs.source_lengths, c.sep_id,
                                          c.pad_id, inputs.targets, inputs.target_lengths, width)
        tokens, labels = seq[:, :-1], seq[:, 1:]  # (B, T-1): position j predicts token j+1
        j = torch.arange(tokens.shape[1], device=seq.device).unsqueeze(0)  # (1, T-1)
        prefix = (inputs.source_lengths.to(seq.device) + 1).unsqueeze(1)  # (B, 1): source+<sep>
        labelled = (j + 1) < total.unsqueeze(1)  # (B, T-1)
        target_mask = labelled & ((j + 1) >= prefix)
        loss_mask = labelled if c.loss_on == "all" else target_mask
        hidden, _, stats = self.decode_stack(self.embed_tokens(tokens),
                                             token_mask=j < total.unsqueeze(1))
        loss, nll = self.nll_loss(hidden, labels, loss_mask, target_mask)
        estimate = None
        if self.frequency is not None:
            estimate = self.frequency(hidden, j < prefix)
        return self._output(loss, nll, target_mask, stats, estimate, inputs.targets)

    @torch.no_grad()
    def start(self, batch: Batch) -> TransformerState:
        """Prefill ``source + <sep>`` of every row in one pass (rows right-padded to the
        longest; each row's cache is written at its own positions, so a padded row decodes as
        it would alone)."""
        c = self.config
        prefix, lengths = concat_source_target(batch.sources, batch.source_lengths, c.sep_id,
                                               c.pad_id)  # (B, P), (B,)
        j = torch.arange(prefix.shape[1], device=prefix.device).unsqueeze(0)
        real = j < lengths.unsqueeze(1)  # (B, P)
        hidden, caches, _ = self.decode_stack(self.embed_tokens(prefix), token_mask=real,
                                              return_cache=True)
        last = hidden[torch.arange(prefix.shape[0], device=prefix.device), lengths - 1]
        first = torch.log_softmax(self.project(last).float(), dim=-1)  # (B, V)
        estimate = self.frequency(hidden, real) if self.frequency is not None else None
        # Cut the local and compressed caches to their rings now: beam search's first reorder
        # repeats every row `beam` times, and a whole 6,000-token history repeated four
        # times was the peak of a long decode.
        caches = [LayerCache(block.attn.compact(cache.attn, lengths))
                  for block, cache in zip(self.blocks, caches, strict=True)]
        return TransformerState(first, caches, positions=lengths, length=prefix.shape[1],
                                wfe=estimate)


class EncoderDecoderTransformer(_Transformer):
    """T-ED (Liu et al. 2018, Vaswani et al. 2017)."""

    def __init__(self, config: TransformerConfig, name: str = "t-ed"):
        if config.n_encoder_layers < 1:
            raise ValueError("t-ed needs n_encoder_layers >= 1")
        super().__init__(config, name, cross=True)
        self.encoder = nn.ModuleList(EncoderBlock(config) for _ in range(config.n_encoder_layers))
        self.encoder_norm = nn.LayerNorm(config.d_model)

    def encode(self, sources: torch.Tensor, source_lengths: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
        """sources (B, S), source_lengths (B,) -> memory (B, S, d) and its mask (B, S).

        An empty source keeps its first (padding) position unmasked, so that attention over it
        stays defined."""
        j = torch.arange(sources.shape[1], device=sources.device).unsqueeze(0)
        mask = j < source_lengths.to(sources.device).clamp(min=1).unsqueeze(1)
        x = self.embed_tokens(sources)
        for block in self.encoder:
            x = block(x, mask)
        return self.encoder_norm(x), mask

    def logits(self, sources: torch.Tensor, source_lengths: torch.Tensor,
               decoder_inputs: torch.Tensor) -> torch.Tensor:
        """Teacher-forced decoder logits (B, T, V) for decoder_inputs (B, T) (<s> first)."""
        memory, mask = self.encode(sources, source_lengths)
        hidden, _, _ = self.decode_stack(self.embed_tokens(decoder_inputs), memory=memory,
                                         memory_mask=mask)
        return self.project(hidden)

    def forward(self, batch: Batch) -> ModelOutput:
        """A Batch -> ModelOutput: the decoder reads <s> + target[:-1], predicts target."""
        if not isinstance(batch, Batch):
            raise TypeError(f"t-ed takes a Batch (sources and targets), not {type(batch)}; "
                            "for logits call model.logits(sources, source_lengths, inputs)")
        c = self.config
        targets = batch.targets
        bos = torch.full_like(targets[:, :1], c.bos_id)
        inputs = torch.cat([bos, targets[:, :-1]], dim=1)  # (B, T)
        j = torch.arange(targets.shape[1], device=targets.device).unsqueeze(0)
        target_mask = j < batch.target_lengths.to(targets.device).unsqueeze(1)  # (B, T)
        memory, mask = self.encode(batch.sources, batch.source_lengths)
        hidden, _, stats = self.decode_stack(self.embed_tokens(inputs), token_mask=target_mask,
                                             memory=memory, memory_mask=mask)
        loss, nll = self.nll_loss(hidden, targets, target_mask, target_mask)
        estimate = self.frequency(memory, mask) if self.frequency is not None else None
        return self._output(loss, nll, target_mask, stats, estimate, targets)

    @torch.no_grad()
    def start(self, batch: Batch) -> TransformerState:
        """Encode the sources, cache every layer's cross-attention keys and values, and feed
        <s>: the state holds the first target token's log-probabilities."""
        memory, mask = self.encode(batch.sources, batch.source_lengths)
        caches = [LayerCache(AttentionCache(), *block.cross.memory_heads(memory))
                  for block in self.blocks]
        b = memory.shape[0]
        estimate = self.frequency(memory, mask) if self.frequency is not None else None
        state = TransformerState(None, caches, positions=torch.zeros(b, dtype=torch.long,
                                                                     device=memory.device),
                                 length=0, memory_mask=mask, wfe=estimate)
        bos = torch.full((b,), self.config.bos_id, dtype=torch.long, device=memory.device)
        first, state = self.step(state, bos)
        return replace(state, first_logprobs=first)
