"""wikisum: WikiSum-style multi-document summarization data at web scale, and the abstractive
models that write Wikipedia lead sections from it.

The public API, for use from Python (the ``wikisum`` command covers the same ground)::

    import wikisum

    wikisum.write_sample("sample", articles=60)                 # a generated sample corpus
    data = wikisum.Dataset("build/data")                          # training shards of a build
    for example in data.examples("dev", "tfidf", "combined", max_input_tokens=500):
        ...
    ranker = wikisum.get_extractor("textrank")                    # a paragraph ranker
    order = ranker.rank("Bodmin", paragraphs)
    model = wikisum.build_model("t-dmca", preset="tiny", vocab_size=4000)
    loaded = wikisum.load_model("runs/t-dmca")                    # model + configs + tokenizer
    wikisum.export_model("runs/t-dmca", "exports/t-dmca")        # safetensors + config + tokenizer
    text = wikisum.summarize("exports/t-dmca", pages, title="Bodmin")   # rank, decode, detokenise
    summary = wikisum.train(wikisum.TrainConfig(model="t-dmca", data="build/data", out="run"))

The sub-packages are ``wikisum.pipeline`` (stage one: Beam jobs and the pure functions they
wrap), ``wikisum.extractors`` (paragraph rankers), ``wikisum.models`` (stage two) and
``wikisum.workflows`` (the command line). Names are imported on first use, so that
``import wikisum`` costs neither torch nor Beam.
"""

from __future__ import annotations

from importlib import metadata

from wikisum.core.lazy import lazy_names

try:
    __version__ = metadata.version("wikisum")
except metadata.PackageNotFoundError:  # a checkout on sys.path, not installed
    __version__ = "0+unknown"

# The public names: name, then module:attribute.
_TABLE = """
Dataset        wikisum.core.loader:Dataset
Example        wikisum.core.loader:Example
write_sample   wikisum.pipeline.sample:write_sample
get_extractor  wikisum.extractors:get
EXTRACTORS     wikisum.extractors:NAMES
build_model    wikisum.models:build
load_model     wikisum.generation:load
MODELS         wikisum.models:NAMES
TrainConfig    wikisum.training.config:TrainConfig
train          wikisum.training.loop:train
beam_search    wikisum.generation.decoding:beam_search
DecodeOptions  wikisum.generation.decoding:DecodeOptions
summarize      wikisum.generation:summarize
load_bundle    wikisum.generation:load_bundle
export_model   wikisum.generation:export_model
evaluate       wikisum.generation.evaluation:score_predictions
"""
_API = dict(line.split() for line in _TABLE.strip().splitlines())

__all__ = ["__version__", *_API]

__getattr__, __dir__ = lazy_names(__name__, _API)
