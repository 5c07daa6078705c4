"""Record helpers: the stable train/dev/test split."""

from __future__ import annotations

from collections import Counter

from wikisum.core.records import split_of


def test_split_is_stable_and_roughly_80_10_10():
    splits = Counter(split_of(f"Article {i}") for i in range(5000))
    assert split_of("Article 1") == split_of("Article 1")
    assert 3800 < splits["train"] < 4200 and 350 < splits["dev"] < 650
