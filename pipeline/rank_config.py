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
from wikisum.core.inputs import parse_inputs as parse_inputs

DEFAULT_SHARDS = 4
# What a dataset's rows hold as targets: the lead (the paper's task, always written), and the
# whole article (section 6: the lead, then every section under its heading).
TARGETS = ("lead", "article")
DEFAULT_TARGETS = ("lead",)


def parse_targets(text: str) -> tuple[str, ...]:
    """``--targets lead,article`` -> ("lead", "article"); the lead is always one.

    Raises:
        ValueError: a name that is not one of :data:`TARGETS`.
    """
    names = [t.strip() for t in text.split(",") if t.strip()]
    unknown = [t for t in names if t not in TARGETS]
    if unknown:
        raise ValueError(f"--targets {', '.join(unknown)}: not one of {', '.join(TARGETS)}")
    return tuple(t for t in TARGETS if t in names or t == "lead")


@dataclass(frozen=True)
class RankConfig:
    ingest_dir: str
    vocab: str
    out: str
    learned: str | None = None  # a model written by `wikisum.extractors.learned`; None: no learned
    num_shards: int = DEFAULT_SHARDS
    buffer_bytes: int = shards_config.DEFAULT_BUFFER_BYTES  # rows a shard writer holds in memory
    inputs: tuple[InputSpec, ...] = (DEFAULT_INPUT,)  # ready model inputs; the first: default
    # The corpora the ingest output's paragraphs can be split into (its summary.json says:
    # without citations and search results told apart, only `combined`).
    corpora: tuple[str, ...] = CORPORA
    targets: tuple[str, ...] = DEFAULT_TARGETS  # TARGETS written: the lead, and the article?

    def extractor_names(self) -> list[str]:
        """Every registered extractor (``extractors.REGISTRY``, in its order), learned only
        when a model is given."""
        return [n for n in extractors.NAMES if n != "learned" or self.learned]
