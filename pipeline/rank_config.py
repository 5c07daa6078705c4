"""What ``wikisum rank`` is asked to do: :class:`RankConfig`, its defaults, and the ready model
inputs (``--model-inputs``, specs of :class:`wikisum.core.inputs.InputSpec`).

Apart from the job (:mod:`wikisum.pipeline.rank`, which imports Beam) so that the command line
shows these defaults without importing it: each is declared here once, and the job, ``wikisum
rank``, ``wikisum build`` and ``wikisum exemplars`` read it from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from wikisum import extractors
from wikisum.core import shards_config
from wikisum.core.inputs import CORPORA, DEFAULT_INPUT, InputSpec

DEFAULT_SHARDS = 4


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


@dataclass(frozen=True)
class RankConfig:
    ingest_dir: str
    vocab: str
    out: str
    learned: str | None = None  # a model written by `wikisum.extractors.learned`; None: no learned
    num_shards: int = DEFAULT_SHARDS
    buffer_bytes: int = shards_config.DEFAULT_BUFFER_BYTES  # rows a shard writer holds in memory
    inputs: tuple[InputSpec, ...] = (DEFAULT_INPUT,)  # ready model inputs; the first: default

    def extractor_names(self) -> list[str]:
        """Every registered extractor (``extractors.REGISTRY``, in its order), learned only
        when a model is given."""
        return [n for n in extractors.NAMES if n != "learned" or self.learned]
