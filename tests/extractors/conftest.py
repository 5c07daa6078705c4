"""Helpers shared by the extractor tests."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import pytest


@pytest.fixture
def assert_permutation_equivariant() -> Callable[..., None]:
    """Checks that ranking a shuffled input gives the same paragraphs in the same order.

    For inputs without ties only: a tie is broken by position, which a shuffle changes.
    """

    def check(extractor, title: str, paragraphs: Sequence[str], target: str | None = None,
              trials: int = 5, seed: int = 0) -> None:
        expected = extractor.rank(title, paragraphs, target=target)
        rng = random.Random(seed)
        for _ in range(trials):
            perm = list(range(len(paragraphs)))
            rng.shuffle(perm)
            got = extractor.rank(title, [paragraphs[i] for i in perm], target=target)
            assert [perm[i] for i in got] == expected, perm

    return check
