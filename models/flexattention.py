"""FlexAttention paths for T-DMCA's local and memory-compressed attention (CUDA).

``torch.nn.attention.flex_attention`` runs attention under a block-sparse mask: a
:class:`~torch.nn.attention.flex_attention.BlockMask` says which (128 queries x 128 keys) tiles
are empty, full or partial, and a ``mask_mod`` decides position by position inside the partial
ones. Compiled (``torch.compile``, on CUDA) it is one fused kernel per layer that skips the
empty tiles, with no mask or score tensor in memory, forward and backward.

- Local attention: query i may use key j iff j <= i and j lies in i's block or, with
  ``previous_block``, in the block before it (:func:`local_attention_flex`).
- Memory-compressed attention: the null slot is key 0; slot j (key 1 + j) covers positions
  ``[stride * j, stride * j + kernel - 1]`` and query i may use it iff
  ``stride * j + kernel - 1 <= i`` (:func:`compressed_attention_flex`).

Both equal the implementations of :mod:`wikisum.models.attention_ops` (tested); they are what
``attention_impl="flex"`` (and ``"auto"`` on CUDA) runs in training and prefill. The block masks
are made from the patterns' bounds, tile by tile, never from a (T, T) or (T, S) evaluation of
the mask, so they cost O((T / 128)^2) at any length. Called eagerly they are cached per
(pattern, T, keys, device), and the compiled function is made once per process. Where
torch.compile traces a model (``compile=true``), they are built inside the compiled graph, so
that the whole training step is one graph: no graph break at each layer (tested).

``torch.nn.attention.flex_attention`` is imported inside the functions only: importing this
module needs neither it nor Triton, and the CPU build never loads them unless the flex path is
asked for. On CPU the functions run flex attention eagerly (an unfused implementation that
builds the score matrix), forward only: torch refuses flex attention's backward pass on CPU
tensors that need gradients, compiled or not, so training through the flex path needs CUDA
(``attention_impl="auto"`` takes sdpa on CPU).
"""

from __future__ import annotations

import functools
import warnings
from collections import OrderedDict
from collections.abc import Callable

import torch

SPARSE_BLOCK = 128  # FlexAttention's tile: queries x keys per block-mask entry
MAX_CACHED_MASKS = 16  # block masks kept (a (T / 128)^2 table each, several at long T)

_MASKS: OrderedDict[tuple, object] = OrderedDict()
_COMPILED: dict[str, Callable] = {}
_AVAILABLE: list[bool] = []  # filled on the first question


def available() -> bool:
    """Whether this torch has FlexAttention (``torch.nn.attention.flex_attention``); imported
    on the first question only."""
    if not _AVAILABLE:
        try:
            import torch.nn.attention.flex_attention  # noqa: F401
        except ImportError:
            _AVAILABLE.append(False)
        else:
            _AVAILABLE.append(True)
    return _AVAILABLE[0]


def worthwhile(q: torch.Tensor) -> bool:
    """Whether queries q (B, H, T, D) suit the compiled kernel where ``attention_impl="auto"``
    chooses: at least one tile of positions (shorter sequences gain nothing from skipping
    tiles) and a head width that is a power of two from 16 up (the widths its Triton kernels
    take)."""
    t, d = q.shape[-2], q.shape[-1]
    return t >= SPARSE_BLOCK and d >= 16 and d & (d - 1) == 0


def clear_caches() -> None:
    """Forget the cached block masks (their device memory goes back to the allocator)."""
    _MASKS.clear()


# ---------------------------------------------------------------------------------------------
# The patterns: mask_mods (inside partial tiles) and their bounds per query (for the tiles)


@functools.cache
def local_mask_mod(block_size: int, previous_block: bool) -> Callable:
    """mask_mod of local attention: key j <= query i, and j at or after the start of i's block
    (of the block before it with ``previous_block``). One object per pattern, so that compiled
    code made for it is reused."""
    back = 1 if previous_block else 0

    def local(b, h, q_idx, kv_idx):
        return (kv_idx <= q_idx) & (kv_idx >= (q_idx // block_size - back) * block_size)

    return local


@functools.cache
def compressed_mask_mod(kernel: int, stride: int) -> Callable:
    """mask_mod of memory-compressed attention over [null ; slots]: key 0 (the null slot)
    always, key 1 + j (slot j) iff ``stride * j + kernel - 1 <= i``."""

    def compressed(b, h, q_idx, kv_idx):
        return (kv_idx == 0) | (stride * (kv_idx - 1) + (kernel - 1) <= q_idx)

    return compressed


def _local_tiles(q0, q1, k0, k1, block_size: int, previous_block: bool):
    """Which tiles (query rows q0..q1, keys k0..k1; broadcast tensors) hold an allowed pair,
    and which hold only allowed pairs. Query i may use keys lo(i) .. i, lo(i) = the start of
    its block (or of the previous one), non-decreasing in i."""
    back = 1 if previous_block else 0

    def lo(i):
        return ((i // block_size - back) * block_size).clamp(min=0)

    first = torch.maximum(q0, k0)  # the first row that may reach key k0 or later
    some = (first <= q1) & (lo(first) <= k1)
    every = (k1 <= q0) & (lo(q1) <= k0)
    return some, every


def _compressed_tiles(q0, q1, k0, k1, kernel: int, stride: int):
    """As :func:`_local_tiles` for compressed attention: query i may use keys 0 .. hi(i),
    hi(i) = max(0, floor((i - kernel + 1) / stride) + 1), non-decreasing in i."""

    def hi(i):
        return (torch.div(i - (kernel - 1), stride, rounding_mode="floor") + 1).clamp(min=0)

    return k0 <= hi(q1), k1 <= hi(q0)


def _ordered(dense: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A (rows, cols) bool tile table -> (1, 1, rows) counts and (1, 1, rows, cols) column
    indices, each row's set columns first (in increasing order): BlockMask's layout."""
    as_int = dense.to(torch.int32)
    counts = as_int.sum(-1, dtype=torch.int32)
    order = torch.argsort(as_int, dim=-1, descending=True, stable=True).to(torch.int32)
    return counts[None, None].contiguous(), order[None, None].contiguous()


def _tile_mask(q_len: int, kv_len: int, tiles: Callable, mask_mod: Callable,
               device: torch.device, sparse_block: int):
    """The BlockMask of a pattern (``tiles`` gives its tile tables) over ``q_len`` queries and
    ``kv_len`` keys.

    A tile is full when all its pairs are allowed and it lies wholly inside both lengths
    (the kernel then skips the mask_mod); partial when some pair is allowed; else skipped.
    This is what ``create_block_mask`` makes (tested), without evaluating the mask at every
    (query, key) pair. Plain tensor work on (T / 128)-sized tables: where torch.compile traces
    the model it becomes part of the compiled graph."""
    from torch.nn.attention.flex_attention import BlockMask

    with torch.no_grad():
        rows = torch.arange(-(-q_len // sparse_block), device=device) * sparse_block
        cols = torch.arange(-(-kv_len // sparse_block), device=device) * sparse_block
        q0, k0 = rows[:, None], cols[None, :]
        q1 = (rows + sparse_block).clamp(max=q_len)[:, None] - 1
        k1 = (cols + sparse_block).clamp(max=kv_len)[None, :] - 1
        some, every = tiles(q0, q1, k0, k1)
        whole = (((rows + sparse_block <= q_len)[:, None])
                 & ((cols + sparse_block <= kv_len)[None, :]))
        full = every & whole
        partial = some & ~full
        counts, indices = _ordered(partial)
        full_counts, full_indices = _ordered(full)
        return BlockMask.from_kv_blocks(counts, indices, full_counts, full_indices,
                                        BLOCK_SIZE=sparse_block, mask_mod=mask_mod,
                                        seq_lengths=(q_len, kv_len))


def _pattern_mask(key: tuple, q_len: int, kv_len: int, tiles: Callable, mask_mod: Callable,
                  device: torch.device, sparse_block: int):
    """:func:`_tile_mask`, built inside the graph where torch.compile is tracing (no graph
    break, no Python-side state in the graph), else kept in a cache under ``key`` and the
    lengths (eager calls: one build per pattern and length)."""
    if torch.compiler.is_compiling():
        return _tile_mask(q_len, kv_len, tiles, mask_mod, device, sparse_block)
    key = (*key, q_len, kv_len, str(device), sparse_block)
    found = _MASKS.get(key)
    if found is not None:
        _MASKS.move_to_end(key)
        return found
    mask = _tile_mask(q_len, kv_len, tiles, mask_mod, device, sparse_block)
    _MASKS[key] = mask
    while len(_MASKS) > MAX_CACHED_MASKS:
        _MASKS.popitem(last=False)
    return mask


def _factory(cached: Callable) -> Callable:
    """A cached mask_mod factory, or where dynamo traces, the function it wraps (dynamo
    traces through the cache anyway, and warns that it does)."""
    return cached.__wrapped__ if torch.compiler.is_compiling() else cached


def local_block_mask(length: int, block_size: int, previous_block: bool = True,
                     device: torch.device | str = "cpu", sparse_block: int = SPARSE_BLOCK):
    """The BlockMask of local attention over ``length`` positions (cached in eager calls;
    built in the graph under torch.compile)."""
    return _pattern_mask(("local", block_size, previous_block), length, length,
                         functools.partial(_local_tiles, block_size=block_size,
                                           previous_block=previous_block),
                         _factory(local_mask_mod)(block_size, previous_block),
                         torch.device(device), sparse_block)


def compressed_block_mask(length: int, n_keys: int, kernel: int, stride: int,
                          device: torch.device | str = "cpu",
                          sparse_block: int = SPARSE_BLOCK):
    """The BlockMask of compressed attention: ``length`` queries over ``n_keys`` = 1 + S keys
    (the null slot first) (cached in eager calls; built in the graph under torch.compile)."""
    return _pattern_mask(("compressed", kernel, stride), length, n_keys,
                         functools.partial(_compressed_tiles, kernel=kernel, stride=stride),
                         _factory(compressed_mask_mod)(kernel, stride), torch.device(device),
                         sparse_block)


# ---------------------------------------------------------------------------------------------
# The attention calls


def compiled_flex_attention() -> Callable:
    """``torch.compile(flex_attention)``, made once per process (compiled code is then kept per
    mask pattern, dtype and shape by torch.compile itself)."""
    if "flex" not in _COMPILED:
        from torch.nn.attention.flex_attention import flex_attention

        _COMPILED["flex"] = torch.compile(flex_attention)
    return _COMPILED["flex"]


def _attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_mask) -> torch.Tensor:
    """flex_attention of q (B, H, T, D) over k, v (B, H, K, D) under ``block_mask``: compiled
    on CUDA (as part of the model's graph where the model itself is being compiled), eager
    elsewhere. Keys and values take the queries' dtype, and autocast is off inside (the inputs
    are already in the precision it chose)."""
    from torch.nn.attention.flex_attention import flex_attention

    k, v = k.to(q.dtype), v.to(q.dtype)
    with torch.autocast(q.device.type, enabled=False):
        if torch.compiler.is_compiling():
            return flex_attention(q, k, v, block_mask=block_mask)
        if q.is_cuda:
            return compiled_flex_attention()(q, k, v, block_mask=block_mask)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*without torch.compile")
            return flex_attention(q, k, v, block_mask=block_mask)


def local_attention_flex(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, block_size: int,
                         previous_block: bool = True) -> torch.Tensor:
    """:func:`wikisum.models.attention_ops.local_attention` by FlexAttention (no dropout):
    q, k, v (B, H, T, D) -> (B, H, T, D)."""
    mask = local_block_mask(q.shape[2], block_size, previous_block, q.device)
    return _attend(q, k, v, mask)


def compressed_attention_flex(q: torch.Tensor, k_slots: torch.Tensor, v_slots: torch.Tensor,
                              kernel: int, stride: int) -> torch.Tensor:
    """:func:`wikisum.models.attention_ops.compressed_attention` by FlexAttention (no dropout):
    q (B, H, T, D); k_slots, v_slots (B, H, 1 + S, D), the null slot first -> (B, H, T, D)."""
    mask = compressed_block_mask(q.shape[2], k_slots.shape[2], kernel, stride, q.device)
    return _attend(q, k_slots, v_slots, mask)

