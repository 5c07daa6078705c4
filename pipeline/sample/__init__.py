"""A generator of small WikiSum inputs in the real formats (see ``corpus.write_sample``).

``write_sample`` is imported on first use: the generator imports pyarrow and warcio, and the
command line reads the corpus's names and defaults (``config.py``) without them.
"""

from wikisum.core.lazy import lazy_names

__getattr__, __dir__ = lazy_names(__name__, {"write_sample": "wikisum.pipeline.sample.corpus"})


__all__ = ["write_sample"]
