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


def parse_inputs(text: str, extractor_names: list[str]) -> tuple[InputSpec, ...]:
    """``EXTRACTOR-CORPUS[-L][,...]`` (L defaults to the default input's), or ``all`` (every
    extractor x corpus at that L) -> input specs, the first one the default config."""
    if text.strip() == "all":
        return tuple(InputSpec(e, c, DEFAULT_INPUT.max_input_tokens)
                     for e in extractor_names for c in CORPORA)
    specs: list[InputSpec] = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        head, _, last = item.rpartition("-")
        length = DEFAULT_INPUT.max_input_tokens
        if last.isdigit():
            item, length = head, int(last)
        extractor, _, corpus = item.rpartition("-")
        if extractor not in extractor_names or corpus not in CORPORA or length < 1:
            raise ValueError(f"model inputs {item!r}: expected EXTRACTOR-CORPUS[-L] with an "
                             f"extractor of {extractor_names}, a corpus of {list(CORPORA)} and "
                             "L >= 1 (e.g. tfidf-combined-500), or 'all'")
        spec = InputSpec(extractor, corpus, length)
        if spec not in specs:
            specs.append(spec)
    if not specs:
        raise ValueError("no model inputs named; e.g. tfidf-combined-500")
    return tuple(specs)
