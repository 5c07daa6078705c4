"""Generation (stage two's output side): beam search and its score processors
(:mod:`~wikisum.generation.decoding`), the resumable batched decode of a dataset
(:mod:`~wikisum.generation.decode`), export (:mod:`~wikisum.generation.export`), summarising
new text (:mod:`~wikisum.generation.inference`) and the evaluation metrics
(:mod:`~wikisum.generation.evaluation`).

    loaded = generation.load("runs/t-dmca")          # model + config + tokenizer from a run
    generation.export_model("runs/t-dmca", "exports/t-dmca")   # safetensors + config + tokenizer
    generation.summarize("exports/t-dmca", texts, title="Bodmin")  # new text -> a summary
"""

from __future__ import annotations


def load(path: str, device: str = "cpu"):

    """A trained model from a run directory or checkpoint file.

    See :func:`wikisum.training.checkpoint.load`.

    Returns a ``Loaded`` with ``.model`` (eval mode), ``.config``, ``.train_config`` and
    ``.tokenizer`` (the run's sentencepiece model).
    """
    from wikisum.training import checkpoint

    return checkpoint.load(path, device=device)


def load_bundle(path: str, device: str = "cpu"):
    """A run directory, checkpoint file or export directory as a
    :class:`wikisum.generation.export.Bundle`: model (eval mode), tokenizer, special ids, how its
    inputs are made and its default decoding settings. Load once, summarize many."""
    from wikisum.generation import export

    return export.load(path, device)


def load_export(path: str, device: str = "cpu"):
    """An export directory (``wikisum export``) as a :class:`wikisum.generation.export.Bundle`."""
    from wikisum.generation import export

    return export.load_export(path, device)


def export_model(run: str, out: str) -> dict:
    """Write the model of ``run`` to ``out`` (safetensors weights, config, tokenizer); see
    :func:`wikisum.generation.export.export`."""
    from wikisum.generation import export

    return export.export(run, out)


def summarize(model, texts, title: str = "", **options):
    """The summary of ``texts`` (one article's source documents) by ``model`` (a run or export
    directory, or a bundle from :func:`load_bundle`): tokenise, rank the paragraphs with the
    model's extractor (the title is the query), cut to L, decode (beam search unless told
    otherwise), detokenise. A model trained on whole articles returns an
    :class:`wikisum.core.articlelayout.Article` (``target="article"``; ``target="lead"`` its
    lead). See :func:`wikisum.generation.inference.summarize`."""
    from wikisum.generation import inference

    return inference.summarize(model, texts, title, **options)
