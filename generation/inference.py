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
            model trained on leads, or a model given by path whose weights are not the finite
            weights of the model its config describes (:func:`load_checked`).
    """
    import torch

    from wikisum import models
    from wikisum.generation.decoding import generate
    from wikisum.models.base import make_batch

    bundle = model if isinstance(model, Bundle) else load_checked(model, _device(device))
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


def load_checked(path: str | Path, device: str = "cpu") -> Bundle:
    """:func:`wikisum.generation.export.load` of ``path``, its weights checked: an export's
    by :func:`check_export_weights` before the model is built, and every model's parameters
    finite once loaded (a run's checkpoint holding NaN would decode garbage).

    Raises:
        ValueError: the weights fail a check; the message names the file and the tensor.
    """
    from wikisum.generation.export import PRETRAINED_RECORD, is_export

    folder = Path(path)
    if is_export(folder) and not (folder / PRETRAINED_RECORD).is_file():
        check_export_weights(folder)
    bundle = load(path, device)
    check_finite_weights(bundle.model, str(bundle.path))
    return bundle


def check_export_weights(folder: str | Path) -> None:
    """Refuse an export (``wikisum export``) whose ``model.safetensors`` is not the model its
    ``config.json`` describes, or holds NaN or infinite weights, before any model is built.

    The shapes come from the file's header and from the model built on the meta device from
    config.json, so a config claiming a huge size takes no memory; tensors are then read one
    at a time to check they are finite. Each refusal names the file and the tensor: a config
    that does not build (a negative width, ...), a tensor missing, one the model has no place
    for, one of another shape (another d_model, layer count or vocabulary size in config.json
    than in the weights), an integer tensor where the model holds floats, a NaN or inf, a
    special id (eos, ...) outside the vocabulary.

    Raises:
        ValueError: one line saying which of these, naming the file and the tensor.
    """
    import json

    import torch
    from safetensors import SafetensorError, safe_open

    from wikisum import models
    from wikisum.generation.export import CONFIG, EXPORT_FORMAT, WEIGHTS

    folder = Path(folder)
    config_path, weights_path = folder / CONFIG, folder / WEIGHTS
    try:
        info = json.loads(config_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return  # loading says what is wrong with the config itself
    if not isinstance(info, dict) or info.get("format") != EXPORT_FORMAT:
        return
    name, model_config = info.get("model"), info.get("model_config")
    if not isinstance(name, str) or not isinstance(model_config, dict):
        raise ValueError(f"{config_path}: no model name and model_config: export the run again")
    try:
        with torch.device("meta"):
            skeleton = models.from_config(name, model_config)
    except (ValueError, TypeError, RuntimeError, ArithmeticError, KeyError) as exc:
        detail = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        raise ValueError(f"{config_path}: model {name} cannot be built from its model_config "
                         f"({detail}): the export is damaged; export the run again") from None
    _check_special_ids(info.get("special_ids"), model_config.get("vocab_size"), config_path)
    expected = skeleton.state_dict()
    parameters = {key for key, _ in skeleton.named_parameters()}
    try:
        with safe_open(str(weights_path), framework="pt") as weights:
            present = set(weights.keys())
            _fits(present, set(expected), weights_path, config_path, name)
            for key in sorted(present):
                shape = tuple(weights.get_slice(key).get_shape())
                want = expected[key]
                if shape != tuple(want.shape):
                    raise ValueError(
                        f"{weights_path}: tensor {key} has shape {list(shape)} where "
                        f"{config_path} makes it {list(want.shape)}: the config and the "
                        "weights are of different models; export the run again")
                if key not in parameters:
                    continue
                tensor = weights.get_tensor(key)
                if want.is_floating_point() and not tensor.is_floating_point():
                    raise ValueError(f"{weights_path}: tensor {key} is {tensor.dtype} where "
                                     f"the model holds {want.dtype}: export the run again")
                bad = int((~torch.isfinite(tensor)).sum()) if tensor.is_floating_point() else 0
                if bad:
                    raise ValueError(_non_finite(weights_path, key, bad, tensor.numel()))
    except SafetensorError as exc:
        raise ValueError(f"{weights_path} is not a readable safetensors file ({exc}): the "
                         "export is damaged or cut short; export the run again") from None


def _check_special_ids(special: object, vocab_size: object, config_path: Path) -> None:
    """Refuse special ids (eos ends every summary) that are not ids of the vocabulary."""
    if not isinstance(special, dict):
        raise ValueError(f"{config_path}: special_ids is not a mapping: export the run again")
    size = vocab_size if isinstance(vocab_size, int) and not isinstance(vocab_size, bool) \
        else None
    for key, value in special.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0 or (
                size is not None and value >= size):
            raise ValueError(f"{config_path}: special id {key} = {str(value)[:40]} is not an id "
                             f"of the model's vocabulary (0 to {size - 1 if size else '?'}): the "
                             "export is damaged; export the run again")


def _fits(present: set[str], expected: set[str], weights_path: Path, config_path: Path,
          name: str) -> None:
    """Refuse weights lacking a tensor of the model, or holding one it has no place for."""
    problems = []
    for found, what in ((expected - present, f"lacking that {config_path.name}'s model has"),
                        (present - expected, f"that {config_path.name}'s model has no place "
                                             "for")):
        if found:
            shown = ", ".join(sorted(found)[:3]) + (f" and {len(found) - 3} more"
                                                    if len(found) > 3 else "")
            problems.append(f"{len(found)} tensor(s) {what}: {shown}")
    if problems:
        raise ValueError(f"{weights_path} does not fit model {name} of {config_path}: "
                         f"{'; '.join(problems)}; export the run again")


def check_finite_weights(model, where: str) -> None:
    """Refuse a model any of whose parameters is NaN or infinite, naming the first such
    tensor and how many of its values are bad."""
    import torch

    for key, weight in model.named_parameters():
        if weight.is_floating_point():
            bad = int((~torch.isfinite(weight.detach())).sum())
            if bad:
                raise ValueError(_non_finite(where, key, bad, weight.numel()))


def _non_finite(where, key: str, bad: int, total: int) -> str:
    return (f"{where}: weight {key} holds {bad:,} NaN or infinite value(s) of {total:,}: the "
            "weights are damaged; refused (they would give garbage summaries)")


def _device(device: str) -> str:
    from wikisum.training import runtime

    return str(runtime.resolve_device(device))
