"""The vocabulary's defaults, declared here once: :mod:`wikisum.core.vocab` trains with them, and
`wikisum vocab --help` and `wikisum build --help` show them without importing sentencepiece."""

from __future__ import annotations

DEFAULT_SIZE = 32000  # the paper's 32k subwords
DEFAULT_MAX_TEXTS = 300_000  # leads and paragraphs sampled to train it
# From this requested size on the vocabulary has byte fallback (256 byte pieces, at most an
# eighth of it) unless told otherwise; a smaller one (tests, toy runs) has none unless asked.
BYTE_FALLBACK_MIN_SIZE = 2048
