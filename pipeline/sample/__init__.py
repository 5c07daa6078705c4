"""A generator of small WikiSum inputs in the real formats (see ``corpus.write_sample``).

``write_sample`` is imported on first use: the generator imports pyarrow and warcio, and the
command line reads the corpus's names and defaults (``config.py``) without them.
"""

import importlib


def __getattr__(name: str):
    if name != "write_sample":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = importlib.import_module("wikisum.pipeline.sample.corpus").write_sample
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"write_sample"})


__all__ = ["write_sample"]
