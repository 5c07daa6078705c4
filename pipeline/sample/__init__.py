"""A generator of small WikiSum inputs in the real formats (see ``corpus.write_sample``)."""

from wikisum.pipeline.sample.corpus import write_sample

__all__ = ["write_sample"]
