"""Model families and their blocks (stage two): the Transformer family (T-ED, T-D, T-DMCA with
mixture of experts) in :mod:`~wikisum.models.transformer`, the recurrent family (seq2seq,
AdaDec, word-frequency estimation) in :mod:`~wikisum.models.recurrent`, attention, experts,
losses, and the CPU kernels. Training is :mod:`wikisum.training`; decoding, export and
summarising are :mod:`wikisum.generation`.

    model = models.build("t-dmca", preset="tiny", vocab_size=4000)

The registry (:mod:`wikisum.models.registry`) is re-exported here.
"""

from wikisum.models.registry import (
    FAMILIES,
    NAMES,
    PRESETS,
    build,
    family,
    from_config,
    needs_exemplars,
)

__all__ = ["FAMILIES", "NAMES", "PRESETS", "build", "family", "from_config", "needs_exemplars"]
