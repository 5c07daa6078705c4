"""Summaries of new text by a trained model: tokenise, rank, cut to L, decode, detokenise.

    from wikisum import generation

    generation.summarize("runs/t-dmca", [page_one, page_two], title="Bodmin")
    bundle = generation.load_bundle("exports/t-dmca")              # load once ...
    generation.summarize(bundle, texts, title="Bodmin", no_repeat_ngram_size=3)   # ... use often
    generation.summarize(bundle, texts, title="Bodmin", sample=True, top_p=0.9, seed=0)

The model input is built as ``wikisum rank`` and the loader build it for training: every text is
cut into paragraphs (one per non-empty line, whitespace collapsed, list markers dropped; page
furniture such as cookie notices and share buttons dropped, as ingest does), the paragraphs are
tokenised with the run's sentencepiece model and ranked by the run's extractor with the title
as the query, and the input is the title's tokens, ``<t>``, then the paragraphs' tokens in rank
order, cut to the first L tokens. For a headline-pairs model the input is the texts' tokens,
cut to L; the title is not read. A title-only model (``wikisum train --inputs title``) reads the
title and ``<t>`` alone; the texts are not read. A pretrained model (``--model hf``) reads the same
title and ranked paragraphs, tokenised and cut to L by its own tokenizer. Decoding is
:func:`wikisum.generation.decoding.generate`, beam search with the run's defaults unless told
otherwise.

A model trained on whole articles (``wikisum train --target article``) writes the lead and then
sections under headings; ``summarize`` returns them as an
:class:`~wikisum.core.articlelayout.Article` (its ``sections``, ``headings``, ``lead``,
``text`` and ``markdown()``):

    article = generation.summarize("runs/articles", texts, title="Bodmin", target="article")
    [s.title for s in article.sections], article.markdown()
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from wikisum.core.articlelayout import Article, decode_article
from wikisum.generation.export import Bundle, load


def paragraphs_of(texts: str | Sequence[str]) -> list[str]:
    """The paragraphs the extractors rank: one per non-empty line of every text, without page
    furniture (:func:`wikisum.core.paragraphs.filter_paragraphs`)."""
    from wikisum.core.paragraphs import filter_paragraphs, split_paragraphs

    if isinstance(texts, str):
        texts = [texts]
    out: list[str] = []
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"texts must be strings, got {type(text).__name__}")
        kept, _ = filter_paragraphs(split_paragraphs(text))
        out.extend(kept)
    return out


def ranker(bundle: Bundle, extractor: str | None = None):
    """The extractor that ranks the paragraphs: the run's, unless ``extractor`` names another."""
    from wikisum import extractors
    from wikisum.generation.export import _learned_path

    name = extractor or bundle.extractor
    if name == "cheating":
        raise ValueError("the model was trained on the cheating oracle's rankings, which read "
                         "the reference lead; new text has none: pass extractor='tfidf' (or "
                         "another extractor) to rank without it")
    if name == "learned":
        path = bundle.learned_extractor or _learned_path(name, bundle.data)
        if not path:
            raise FileNotFoundError("the learned extractor's model file is not known: export "
                                    "the run (it copies the file), or pass another extractor")
        return extractors.get(name, path=path)
    return extractors.get(name)


def model_input(bundle: Bundle, texts: str | Sequence[str], title: str = "",
                extractor: str | None = None) -> list[int]:
    """The token ids the model reads for ``texts`` (module docstring)."""
    sp = bundle.tokenizer
    L = bundle.max_input_tokens
    if hasattr(bundle.model, "encode_example"):
        return _own_tokens(bundle, texts, title, extractor)
    if bundle.inputs == "title":
        if not title.strip():
            raise ValueError("the model reads the title alone (trained with --inputs title): "
                             "pass title=")
        return [*sp.encode(title), int(bundle.special_ids["title_sep"])][:L]
    paragraphs = paragraphs_of(texts)
    if bundle.dataset_kind == "pairs":
        ids = sp.encode(" ".join(paragraphs))[:L]
        if not ids:
            raise ValueError("nothing to summarize: the texts hold no words")
        return ids
    if not paragraphs:
        raise ValueError("nothing to summarize: the texts hold no paragraph with a word in it")
    order = ranker(bundle, extractor).rank(title, paragraphs, sources=["citation"] *
                                           len(paragraphs))
    pieces = sp.encode(paragraphs)
    ids = list(sp.encode(title)) + [int(bundle.special_ids["title_sep"])]
    for i in order:
        if len(ids) >= L:
            break
        ids.extend(pieces[i])
    return ids[:L]


def _own_tokens(bundle: Bundle, texts: str | Sequence[str], title: str,
                extractor: str | None) -> list[int]:
    """The input of a model with its own tokenizer (``--model hf``): the same text, ranked
    the same way, tokenised and cut to L by the model (``encode_example``)."""
    from wikisum.core.loader import TextExample

    if bundle.inputs == "title":
        if not title.strip():
            raise ValueError("the model reads the title alone (trained with --inputs title): "
                             "pass title=")
        example = TextExample(0, title, [], "")
    else:
        paragraphs = paragraphs_of(texts)
        if not paragraphs:
            raise ValueError("nothing to summarize: the texts hold no paragraph with a word "
                             "in it")
        if bundle.dataset_kind == "pairs":
            example = TextExample(0, "", [" ".join(paragraphs)], "", titled=False)
        else:
            order = ranker(bundle, extractor).rank(title, paragraphs,
                                                   sources=["citation"] * len(paragraphs))
            example = TextExample(0, title, [paragraphs[i] for i in order], "")
    return bundle.model.encode_example(example, bundle.max_input_tokens).inputs


def options_for(bundle: Bundle, **settings):
    """:class:`wikisum.generation.decoding.DecodeOptions` from the bundle's defaults (beam,
    alpha, max_len, min_len) and ``settings`` (any DecodeOptions field; None keeps the
    default)."""
    from dataclasses import fields

    from wikisum.generation.decoding import DecodeOptions

    known = {f.name for f in fields(DecodeOptions)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise TypeError(f"unknown decoding settings {unknown}; known: {', '.join(sorted(known))}")
    values = {k: v for k, v in bundle.decoding.items() if k in known}
    if settings.get("sample"):
        values.pop("beam", None)  # sampling draws one sequence
    values.update({k: v for k, v in settings.items() if v is not None})
    return DecodeOptions(**values)


def summarize(model: str | Path | Bundle, texts: str | Sequence[str], title: str = "", *,
              extractor: str | None = None, device: str = "cpu", target: str | None = None,
              **settings) -> str | Article:
    """The summary of ``texts`` (one article's reference texts, or one text) by ``model``.

    Args:
        model: a run directory, a checkpoint file, an export directory, or a :class:`Bundle`
            (:func:`wikisum.generation.load_bundle`: load once, summarize many).
        texts: the source documents (paragraphs are their non-empty lines), or one string.
        title: the article's title, the query the extractor ranks the paragraphs by (WikiSum
            models); headline models ignore it.
        extractor: rank with this extractor instead of the one the model was trained with.
        device: where a model given by path is loaded (cpu, cuda, ...).
        target: what to return: "article" (an :class:`Article`, from a model trained on whole
            articles), "lead" (text; of an article model, its article's lead), or None: the
            model's own target (an Article for an article model, else the text).
        settings: decoding options (:class:`wikisum.generation.decoding.DecodeOptions`): beam,
            alpha, max_len, min_len, no_repeat_ngram_size, sample, temperature, top_k, top_p,
            seed, wfe. Unset ones take the model's defaults (beam search).

    Raises:
        ValueError: the texts hold nothing to summarize, or the model reads a retrieved training
            exemplar (AdaDec, AttExp), which new text has none of, or ``target="article"`` of a
            model trained on leads.
    """
    import torch

    from wikisum import models
    from wikisum.generation.decoding import generate
    from wikisum.models.base import make_batch

    bundle = model if isinstance(model, Bundle) else load(model, _device(device))
    if target not in (None, "lead", "article"):
        raise ValueError(f"target {target!r}: choose from lead, article (or None: the model's)")
    if target == "article" and bundle.target != "article":
        raise ValueError(f"{bundle.path} was trained on {bundle.target}s, not whole articles: "
                         "train one with `wikisum train --target article`")
    if models.needs_exemplars(bundle.name):
        raise ValueError(f"{bundle.name} reads a training example retrieved for each input "
                         "(`wikisum exemplars`); summarize has no training data to retrieve "
                         "from: use `wikisum decode` on a dataset")
    options = options_for(bundle, **settings)
    ids = model_input(bundle, texts, title, extractor)
    eos = int(getattr(bundle.model, "eos_id", bundle.eos_id))
    where = next(bundle.model.parameters()).device
    batch = make_batch([ids], [[eos]]).to(where)
    with torch.no_grad():
        hyp = generate(bundle.model, batch, options, eos_id=eos, keys=[0])[0]
    tokens = [int(t) for t in hyp.tokens if t != eos]
    if bundle.target != "article":
        return bundle.tokenizer.decode(tokens)
    article = Article(title, tuple(decode_article(tokens, bundle.tokenizer)))
    return article.lead if target == "lead" else article


def _device(device: str) -> str:
    from wikisum.training import runtime

    return str(runtime.resolve_device(device))
