"""decode refuses a beam search that cannot fit in memory, before it starts."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from wikisum.generation import decode

CONFIG = SimpleNamespace(vocab_size=32000, d_model=512, n_layers=5)


def test_the_estimate_grows_with_beam_batch_and_length():
    small = decode.search_bytes(CONFIG, 4, 8, 500, 500)
    assert decode.search_bytes(CONFIG, 8, 8, 500, 500) == 2 * small
    assert decode.search_bytes(CONFIG, 4, 16, 500, 500) == 2 * small
    assert decode.search_bytes(CONFIG, 4, 8, 1000, 500) > small
    # beam 4, 8 rows, vocabulary 32k, 5 layers of width 512 over 1,000 positions: ~0.5 GiB
    assert 0.2 * 2**30 < small < 1 * 2**30


def test_local_and_compressed_layers_count_what_their_caches_keep():
    """T-DMCA's local layers keep two blocks and its compressed layers a ring of raw positions
    and one slot per complete window: at an 11,000-token input its caches are a fraction of
    T-D's; T-D's estimate is unchanged."""
    t_d = SimpleNamespace(vocab_size=32000, d_model=512, n_layers=5, n_encoder_layers=0,
                          layer_kinds=["full"] * 5)
    kinds = ["local", "compressed", "local", "compressed", "local"]
    t_dmca = SimpleNamespace(vocab_size=32000, d_model=512, n_layers=5, n_encoder_layers=0,
                             layer_kinds=kinds, block_size=256, previous_block=True,
                             compress_kernel=3, compress_stride=3)
    assert decode.search_bytes(t_d, 4, 1, 500, 11000) == decode.search_bytes(
        SimpleNamespace(vocab_size=32000, d_model=512, n_layers=5), 4, 1, 500, 11000)
    per_position = 4 * 2 * 512 * 4  # beam 4, keys and values, float32
    fixed = 4 * (3 * 32000 * 4 + 500 * 8)
    assert decode.search_bytes(t_dmca, 4, 1, 500, 11000) == fixed + per_position * (
        3 * 512 + 2 * (3 + (11500 - 3) // 3 + 1))  # ring of 3 raw positions + 3,833 slots
    assert decode.search_bytes(t_dmca, 4, 1, 500, 11000) < 0.3 * decode.search_bytes(
        t_d, 4, 1, 500, 11000)
    # short sequences: a local ring never holds more positions than there are
    assert decode.cache_positions(t_dmca, "local", 100) == 100
    assert decode.cache_positions(t_dmca, "compressed", 2) == 2 + 1
    # T-ED: the decoder's layers and the encoder's outputs, as before
    t_ed = SimpleNamespace(vocab_size=100, d_model=8, n_layers=2, n_encoder_layers=3,
                           layer_kinds=["full", "full"])
    assert decode.search_bytes(t_ed, 1, 1, 10, 20) == 3 * 100 * 4 + 80 + 2 * 8 * 5 * 30 * 4


def test_a_search_that_cannot_fit_is_refused_with_what_it_needs(monkeypatch):
    monkeypatch.setattr(decode, "available_bytes", lambda device: 8 * 2**30)
    decode.check_memory(CONFIG, 4, 8, 500, 500, "cpu")  # fits
    with pytest.raises(ValueError, match=r"beam search would need about [\d.]+ GiB \(--beam "
                                         r"100000 x --batch-size 8.*8.0 GiB free on cpu"):
        decode.check_memory(CONFIG, 100_000, 8, 500, 500, "cpu")


def test_unknown_free_memory_does_not_block(monkeypatch):
    monkeypatch.setattr(decode, "available_bytes", lambda device: None)
    decode.check_memory(CONFIG, 100_000, 8, 500, 500, "cpu")


def test_free_memory_is_read_on_this_machine():
    assert decode.available_bytes("cpu") is None or decode.available_bytes("cpu") > 0
