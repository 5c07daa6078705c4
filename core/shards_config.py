"""The shard writers' memory bound, declared here once: :mod:`wikisum.core.shards` writes with it,
and every job's ``--shard-buffer`` shows it as its default without importing pyarrow."""

from __future__ import annotations

# A shard writer keeps at most this many bytes of (pickled) rows in memory; the rest is sorted
# in runs on local disk and merged.
DEFAULT_BUFFER_BYTES = 256 * 1024 * 1024
