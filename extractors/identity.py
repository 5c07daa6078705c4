"""The identity extractor: the paragraphs in the order the references give them.

The paper's baseline: citations in the order the article cites them, then search results in
search-rank order. It reads nothing but the number of paragraphs.
"""

from __future__ import annotations

from collections.abc import Sequence


class Identity:
    name = "identity"

    def rank(self, title: str, paragraphs: Sequence[str], target: str | None = None,
             sources: Sequence[str] | None = None) -> list[int]:
        return list(range(len(paragraphs)))
