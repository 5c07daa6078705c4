"""The vocabulary's defaults, declared here once: :mod:`wikisum.core.vocab` trains with them, and
`wikisum vocab --help` and `wikisum build --help` show them without importing sentencepiece."""

from __future__ import annotations

DEFAULT_SIZE = 32000  # the paper's 32k subwords
DEFAULT_MAX_TEXTS = 300_000  # leads and paragraphs sampled to train it
