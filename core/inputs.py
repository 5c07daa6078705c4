"""What a model reads from a ranked article: the paragraphs of one corpus, in one extractor's
order, cut to L subword tokens. :data:`DEFAULT_INPUT` is the paper's choice (tf-idf on the
combined corpus, L = 500): ``wikisum rank`` writes it ready by default, and ``wikisum train``
and ``wikisum exemplars`` read it unless told otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

# The reference corpora of an article: its citations, its search results, and both.
CORPORA = ("citations", "search", "combined")


@dataclass(frozen=True)
class InputSpec:
    """One model input: extractor x corpus x L."""

    extractor: str
    corpus: str
    max_input_tokens: int

    @property
    def name(self) -> str:
        return f"{self.extractor}-{self.corpus}-{self.max_input_tokens}"


DEFAULT_INPUT = InputSpec("tfidf", "combined", 500)
