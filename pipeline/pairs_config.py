"""What ``wikisum convert-pairs`` is asked to do: :class:`PairsConfig` and its defaults.

Apart from the job (:mod:`wikisum.pipeline.pairs`, which imports Beam's file systems and
pyarrow) so that the command line shows these defaults without importing it: each is declared
here once.
"""

from __future__ import annotations

from dataclasses import dataclass

from wikisum.core import vocab_config

DEFAULT_VOCAB_SIZE = 25000  # BPE types on Gigaword in AdaDec (Peng et al. 2019)
DEFAULT_SHARDS = 1
DEFAULT_MAX_TEXTS = vocab_config.DEFAULT_MAX_TEXTS  # lines sampled to train the vocabulary


@dataclass(frozen=True)
class PairsConfig:
    source: str  # *.article.txt (plain or .gz/.bz2: compression follows the file name)
    target: str  # *.title.txt, aligned with `source` line by line
    split: str
    out: str
    vocab: str | None = None  # None: OUT's recorded vocabulary, else train one (train only)
    vocab_size: int = DEFAULT_VOCAB_SIZE  # upper bound, when a vocabulary is trained
    num_shards: int = DEFAULT_SHARDS
    max_texts: int = DEFAULT_MAX_TEXTS  # (the field `vocab` hides the module here)
