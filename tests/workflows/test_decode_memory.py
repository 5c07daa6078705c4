"""decode refuses a beam search that cannot fit in memory, before it starts."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from wikisum.workflows import decode

CONFIG = SimpleNamespace(vocab_size=32000, d_model=512, n_layers=5)


def test_the_estimate_grows_with_beam_batch_and_length():
    small = decode.search_bytes(CONFIG, 4, 8, 500, 500)
    assert decode.search_bytes(CONFIG, 8, 8, 500, 500) == 2 * small
    assert decode.search_bytes(CONFIG, 4, 16, 500, 500) == 2 * small
    assert decode.search_bytes(CONFIG, 4, 8, 1000, 500) > small
    # beam 4, 8 rows, vocabulary 32k, 5 layers of width 512 over 1,000 positions: ~0.5 GiB
    assert 0.2 * 2**30 < small < 1 * 2**30


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
