"""What ``wikisum exemplars`` is asked to do: :class:`ExemplarConfig`, its defaults and the
default number of workers.

Apart from the retrieval (:mod:`wikisum.pipeline.exemplars`, which imports numpy, scipy,
scikit-learn and pyarrow) so that the command line shows these defaults without importing it:
each is declared here once.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from wikisum.core.inputs import DEFAULT_INPUT

# A ranked dataset's source is a model input: by default the one the trainers read.
DEFAULT_EXTRACTOR = DEFAULT_INPUT.extractor
DEFAULT_CORPUS = DEFAULT_INPUT.corpus
DEFAULT_MAX_INPUT_TOKENS = DEFAULT_INPUT.max_input_tokens
DEFAULT_MAX_CELLS = 1 << 24  # similarities per block and worker: 64 MiB of float32
MAX_BLOCK = 1024  # larger blocks are no faster (cache) and delay progress reports
DEFAULT_MAX_SIMILARITY = 0.9  # a training query skips candidates with a cosine above this
MAX_WORKERS = 8


@dataclass(frozen=True)
class ExemplarConfig:
    data: str
    extractor: str = DEFAULT_EXTRACTOR  # ranked datasets: whose model input is the source
    corpus: str = DEFAULT_CORPUS
    max_input_tokens: int = DEFAULT_MAX_INPUT_TOKENS
    block_size: int | None = None  # None: auto_block_size
    workers: int = 1
    max_similarity: float = DEFAULT_MAX_SIMILARITY  # training queries; 1: no skipping


def default_workers() -> int:
    """The CPUs this process may use, at most ``MAX_WORKERS`` (``--workers``' default)."""
    try:
        return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0))))
    except AttributeError:  # not on every platform
        return max(1, min(MAX_WORKERS, os.cpu_count() or 1))
