"""The resumable batched decode of a dataset split: beam search or sampling over batches, the
reference's likelihood beside each prediction, a memory estimate checked before the first
batch, and a predictions file that a killed decode resumes (``wikisum decode`` calls
:func:`decode`).
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path

from wikisum.core import files, ownership

# decode(search=...): a callable (model, batch) -> one list of token ids per example.
Search = Callable[[object, object], list]


def default_search(options, *, eos_id: int) -> Search:
    """:func:`wikisum.generation.decoding.generate` with ``options`` (a ``DecodeOptions``): beam
    search, greedy search or sampling, each example's sample seeded by its id."""
    from wikisum.generation import decoding

    return lambda model, batch: decoding.generate(model, batch, options, eos_id=eos_id,
                                                  keys=batch.ids or None)


def reference_scores(model, pairs: list, device) -> list[tuple[float, int]]:
    """(summed NLL in nats, tokens) of each pair's target under teacher forcing.

    One forward pass per pair: :class:`wikisum.models.base.ModelOutput` sums over a whole batch.
    """
    import torch

    from wikisum.training.batching import to_batch

    scores = []
    with torch.no_grad():
        for pair in pairs:
            out = model(to_batch([pair]).to(device))
            scores.append((float(out.target_nll), int(out.target_tokens)))
    return scores


def chunks(items: Iterable, size: int) -> Iterator[list]:
    it = iter(items)
    while chunk := list(islice(it, size)):
        yield chunk


def cache_positions(model_config, kind: str, total: int) -> int:
    """Positions (of one hypothesis, keys or values of width d_model) an attention layer of
    ``kind`` keeps while decoding a sequence of ``total`` positions: full attention all of them;
    local attention a ring of one or two blocks; memory-compressed attention a ring of the
    convolution's raw inputs and its complete windows, at least one, as the decoding step
    allocates them (``models.attention.AttentionCache``, ``slot_count``)."""
    if kind == "local":
        block = int(getattr(model_config, "block_size", 256))
        return min(total, (2 if getattr(model_config, "previous_block", True) else 1) * block)
    if kind == "compressed":
        from wikisum.models.attention import slot_count

        kernel = int(getattr(model_config, "compress_kernel", 3))
        stride = int(getattr(model_config, "compress_stride", 3))
        return min(total, kernel) + max(1, slot_count(total, kernel, stride))
    return total


def search_bytes(model_config, beam: int, batch_size: int, max_len: int,
                 input_tokens: int) -> int:
    """An estimate of what beam search holds at its largest, in bytes: per hypothesis
    (batch x beam of them) the log-probabilities and candidate scores over the vocabulary (float32,
    three copies at a step), the token history, and the attention caches of every layer over the
    input and the output (keys and values, float32; local and memory-compressed layers hold
    what :func:`cache_positions` says)."""
    vocab = int(getattr(model_config, "vocab_size", 32000))
    width = int(getattr(model_config, "d_model", getattr(model_config, "d_hidden", 512)))
    total = input_tokens + max_len
    kinds = getattr(model_config, "layer_kinds", None) or (
        ["full"] * int(getattr(model_config, "n_layers", 1)))
    positions = sum(cache_positions(model_config, kind, total) for kind in kinds)
    positions += int(getattr(model_config, "n_encoder_layers", 0)) * total
    per_hypothesis = 3 * vocab * 4 + max_len * 8 + 2 * width * positions * 4
    return beam * batch_size * per_hypothesis


def available_bytes(device) -> int | None:
    """Free memory of ``device`` (MemAvailable on Linux for the CPU); None when unknown."""
    try:
        if getattr(device, "type", str(device)) == "cuda":
            import torch

            return int(torch.cuda.mem_get_info(device)[0])
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, RuntimeError):
        return None
    return None


def check_memory(model_config, beam: int, batch_size: int, max_len: int, input_tokens: int,
                 device) -> None:
    """Refuse a search that cannot fit, with what it would need, before it is killed (by the
    kernel, with no message) part-way."""
    need = search_bytes(model_config, beam, batch_size, max_len, input_tokens)
    have = available_bytes(device)
    if have is not None and need > 0.8 * have:
        raise ValueError(f"beam search would need about {need / 2**30:.1f} GiB (--beam {beam} x "
                         f"--batch-size {batch_size} hypotheses, vocabulary "
                         f"{getattr(model_config, 'vocab_size', '?')}, --max-len {max_len}), "
                         f"more than the {have / 2**30:.1f} GiB free on {device}: lower --beam "
                         "or --batch-size")


def settings_path(out: str | Path) -> Path:
    """The record beside a predictions file: PREDS.jsonl -> PREDS.decode.json."""
    out = Path(out)
    stem = out.name[:-len(".jsonl")] if out.name.endswith(".jsonl") else out.name
    return out.with_name(f"{stem}.decode.json")


# What must agree for a predictions file to be resumed (the rest of the record is informative).
SAME_FOR_RESUME = ("model", "run_name", "step", "split", "extractor", "corpus",
                   "max_input_tokens", "decoding", "target", "inputs")


def done_ids(out: Path, record: dict, overwrite: bool) -> list[int]:
    """The ids of the predictions ``out`` already holds that a resumed decode keeps; [] for a
    fresh start. A last line cut short (the process was killed while writing it) is dropped
    and the file truncated after the last whole line.

    Raises:
        ValueError: ``out`` holds predictions of another run, checkpoint, split or settings, or
            has no record of how it was written, or a bad line before its end.
    """
    meta = settings_path(out)
    if overwrite or not out.exists():
        return []
    if not meta.exists():
        if out.stat().st_size == 0:
            return []
        raise ValueError(f"{out} exists and has no {meta.name} saying how it was decoded: pass "
                         "--overwrite to replace it, or choose another --out")
    try:
        old = json.loads(meta.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise ValueError(f"{meta} is not JSON ({exc}): pass --overwrite to decode again") from exc
    changed = [k for k in SAME_FOR_RESUME if old.get(k) != record.get(k)]
    if changed:
        detail = "; ".join(f"{k}: {old.get(k)!r} -> {record.get(k)!r}" for k in changed)
        raise ValueError(f"{out} holds predictions decoded otherwise ({detail}): pass "
                         "--overwrite to replace them, or choose another --out")
    data = out.read_bytes()
    ids, keep = [], 0
    lines = data.split(b"\n")
    for number, line in enumerate(lines[:-1], 1):  # whole lines (each ends with \n)
        try:
            ids.append(int(json.loads(line)["id"]))
        except (ValueError, KeyError, TypeError) as exc:
            if number == len(lines) - 1:
                break  # a last line the writer did not finish
            raise ValueError(f"{out}:{number}: not a prediction ({exc}): pass --overwrite to "
                             "decode again") from exc
        keep += len(line) + 1
    if keep != len(data):
        with out.open("r+b") as f:
            f.truncate(keep)
    return ids


def check_dataset_vocab(bundle, dataset) -> None:
    """The dataset's token ids are the model's: its vocabulary file (where dataset.json names
    one that is found) is the one the model recorded, by SHA-256.

    Raises:
        VocabularyMismatch: another vocabulary; decoding its ids would give other words.
    """
    from wikisum.training import vocabid
    from wikisum.training.runsetup import find_vocab

    if not bundle.vocab_sha256:
        return
    try:
        source = find_vocab(dataset)
    except FileNotFoundError:
        return
    found = vocabid.sha256(source)
    if found != bundle.vocab_sha256:
        raise vocabid.VocabularyMismatch(
            f"the vocabulary of {dataset.dir} ({source}, SHA-256 {found}) is not the model's "
            f"({bundle.path}: SHA-256 {bundle.vocab_sha256}): its token ids would be read as "
            "other pieces; decode a dataset tokenised with the model's vocabulary")


def dataset_language(dataset) -> str | None:
    """The language dataset.json records (``language``, a language tag), or None where it
    records none ("und" included)."""
    info = getattr(dataset, "info", None)
    value = info.get("language") if isinstance(info, dict) else None
    if isinstance(value, str) and value.strip() and value.strip() != "und":
        return value.strip()
    return None


class ReferenceTexts:
    """The text of each example's reference as the dataset holds it (a ranked dataset's
    ``lead``, a pairs dataset's ``target``), read alongside the examples: the split's rows are
    streamed in the order the loader gives its examples (shard by shard, row by row), so
    memory stays bounded. :meth:`get` asks for the examples' ids in that order (some may be
    skipped); where the dataset has no such column, or an id is not found in order, the text
    is None and the caller decodes the ids instead."""

    def __init__(self, dataset, split: str):
        column = "target" if getattr(dataset, "kind", "ranked") == "pairs" else "lead"
        self.column = column
        try:
            self._rows = iter(dataset.rows(split, ["id", column]))
        except Exception:  # noqa: BLE001 - no text column, or no rows: the ids are decoded
            self._rows = iter(())

    def get(self, example_id: int) -> str | None:
        """The reference text of ``example_id``, whitespace collapsed as the articles'
        layout does (:func:`wikisum.core.articlelayout.article_sections`); None where the
        dataset does not hold it."""
        if self._rows is None:
            return None
        try:
            for row in self._rows:
                if row["id"] == example_id:
                    text = row[self.column]
                    return " ".join(text.split()) if isinstance(text, str) else None
        except Exception:  # noqa: BLE001 - a column that cannot be read: the ids are decoded
            pass
        self._rows = None  # not found in order: from here on, the ids are decoded
        return None


def decode(run: str, split: str, out: str, *, beam: int | None = None, alpha: float = 0.6,
           max_len: int | None = None, min_len: int = 0, data: str | None = None,
           batch_size: int = 8, limit: int | None = None, wfe: bool = False,
           device: str = "auto", search: Search | None = None, factory=None,
           progress: bool = True, no_repeat_ngram_size: int = 0, sample: bool = False,
           temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
           seed: int | None = None, overwrite: bool = False) -> dict:
    """Write the predictions of ``run`` (a run or export directory) on ``split`` to ``out``,
    resuming a decode that stopped part-way (see the command's description); returns counts.

    ``max_len`` None takes the run's default (:mod:`wikisum.training.datastats`); ``beam`` None is
    4 (beam search). ``search`` replaces the search (tests); ``factory`` the model registry.
    ``data`` is a dataset directory or a build's root (its data/).

    Everything is checked (the split too) before ``out`` or its record is made; a decode that
    fails before its first prediction removes both, so that the corrected command starts
    afresh without --overwrite.
    """
    from wikisum import models
    from wikisum.core.loader import Dataset
    from wikisum.core.progress import Progress
    from wikisum.generation import export
    from wikisum.generation.decoding import DecodeOptions
    from wikisum.training import runtime
    from wikisum.training.batching import prepare, read_examples, to_batch
    from wikisum.training.runsetup import exemplars_needed

    for name, value in (("--batch-size", batch_size), ("--limit", 1 if limit is None else limit)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    bundle = export.load(run, str(runtime.resolve_device(device)), factory or models,
                         warn=max_len is None)
    options = DecodeOptions(
        beam=beam, alpha=alpha, max_len=max_len or bundle.decoding["max_len"], min_len=min_len,
        no_repeat_ngram_size=no_repeat_ngram_size, wfe=wfe, sample=sample,
        temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    model = bundle.model
    device_ = next(model.parameters()).device
    if search is None:
        check_memory(bundle.config, options.beam_size, batch_size, options.max_len,
                     bundle.max_input_tokens, device_)
    if not (data or bundle.data):
        raise ValueError(f"{run} is an export, which names no dataset: pass --data")
    try:
        dataset = Dataset(data or bundle.data)
    except FileNotFoundError as exc:
        if data:
            raise
        raise FileNotFoundError(f"the run's dataset: {exc}; pass --data") from exc
    try:
        dataset.split_files(split)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"--split {split}: {exc}") from exc
    # a model with its own tokenizer (hf) reads the dataset's text, not its ids
    encode = getattr(model, "encode_example", None)
    if encode is None:
        check_dataset_vocab(bundle, dataset)
    eos_id = int(model.eos_id if encode is not None else dataset.special_ids["eos"])
    search = search or default_search(options, eos_id=eos_id)
    target = Path(out)
    try:
        dataset.check_view(bundle.target, bundle.inputs)
    except ValueError as exc:
        raise ValueError(f"{run} was trained on {bundle.target} targets from "
                         f"{bundle.inputs} inputs: {exc}") from exc
    record = {"run": str(run), "run_name": bundle.path.resolve().name, "model": bundle.name,
              "step": bundle.step, "split": split, "data": str(dataset.dir),
              "extractor": bundle.extractor, "corpus": bundle.corpus,
              "max_input_tokens": bundle.max_input_tokens, "decoding": options.settings(),
              "target": bundle.target, "inputs": bundle.inputs,
              "max_target_tokens": bundle.max_target_tokens,
              "limit": limit, "complete": False}
    done = done_ids(target, record, overwrite)
    target.parent.mkdir(parents=True, exist_ok=True)
    meta = settings_path(target)
    # Recorded as wikisum's while being written, and with their bytes after (a later decode
    # resumes or replaces them; nothing else does): pipeline.ownership.
    for path in (target, meta):
        ownership.begin_file(str(path), "decode")
    write_json(meta, record)

    skipped: Counter = Counter()
    written = kept_before = 0
    try:
        examples = read_examples(dataset, split, bundle.extractor, bundle.corpus,
                                 bundle.max_input_tokens,
                                 exemplars_needed(factory or models, bundle.name),
                                 target=bundle.target, inputs=bundle.inputs, encode=encode)
        render = record_writer(bundle, eos_id, lang=dataset_language(dataset))
        texts = ReferenceTexts(dataset, split)
        # An article reference is scored as training saw it, cut to max_target_tokens (its
        # record says how much was cut); a lead is scored whole, as it always was.
        score_limit = bundle.max_target_tokens if bundle.target == "article" else None
        if limit is not None:
            examples = islice(examples, limit)
        rows = dataset.info.get("rows")
        total = rows.get(split) if isinstance(rows, dict) else None
        if limit is not None:
            total = min(total, limit) if total is not None else limit
        started = time.perf_counter()
        # the examples kept from before count as done at the start (the rate is this run's)
        bar = Progress(f"decode {split}", total=total, unit="examples", initial=len(done),
                       bar=None if progress else False)
        bar.enabled = bar.enabled and progress
        # a failed write or close (a full disk) names the predictions file
        with bar, files.naming(str(target)), target.open("ab" if done else "wb") as f:
            for chunk in chunks(examples, batch_size):
                kept = [(ex, p) for ex in chunk
                        if (p := prepare(ex, eos_id, skipped, score_limit)) is not None]
                fresh, resumed = [], 0
                for ex, p in kept:
                    if kept_before < len(done):  # written by the run that stopped
                        if ex.id != done[kept_before]:
                            raise ValueError(
                                f"{target}: prediction {kept_before + 1} is of id "
                                f"{done[kept_before]}, the data has id {ex.id} there: the file "
                                "was decoded from other data; pass --overwrite to decode again")
                        kept_before += 1
                        resumed += 1
                    else:
                        fresh.append((ex, p))
                if fresh:
                    pairs = [p for _, p in fresh]
                    hypotheses = search(model, to_batch(pairs).to(device_))
                    scores = reference_scores(model, pairs, device_)
                    lines = []
                    for (ex, _), hyp, (nll, tokens) in zip(fresh, hypotheses, scores,
                                                           strict=True):
                        prediction = render(ex, hyp.tokens, nll, tokens, texts.get(ex.id))
                        lines.append(json.dumps(prediction) + "\n")
                    f.write("".join(lines).encode("utf-8"))
                    f.flush()  # a killed decode keeps what it wrote
                    written += len(fresh)
                bar.update(len(chunk) - resumed)
    except BaseException:
        if not done and not written and (not target.exists() or target.stat().st_size == 0):
            # Nothing decoded, nothing kept: the empty file and its record this invocation
            # made would only make the corrected command refuse to start.
            target.unlink(missing_ok=True)
            meta.unlink(missing_ok=True)
        for path in (target, meta):
            ownership.end_file(str(path), "decode")
        raise
    if kept_before < len(done):
        raise ValueError(f"{target} holds {len(done)} predictions, the data only "
                         f"{kept_before} examples to match: it was decoded from other data; "
                         "pass --overwrite to decode again")
    seconds = time.perf_counter() - started
    write_json(meta, {**record, "complete": True, "examples": kept_before + written})
    for path in (target, meta):
        ownership.end_file(str(path), "decode")
    view = None
    if bundle.target == "article":
        view = write_article_view(target)
    cut = skipped.pop("cut_target", 0)
    return {"examples": kept_before + written, "new": written, "resumed": kept_before,
            "skipped": dict(skipped), "cut": cut, "out": str(target),
            "step": bundle.step, "seconds": seconds, "max_len": options.max_len,
            "target": bundle.target, "view": view}


def record_writer(bundle, eos_id: int, *, lang: str | None = None) -> Callable:
    """``(example, predicted ids, reference NLL, reference tokens, reference text) ->
    prediction record`` for ``bundle``'s target. A lead record holds the prediction and the
    reference as text: the reference is the text the dataset holds (:class:`ReferenceTexts`),
    or where that is None, the reference's ids decoded (in which a character the vocabulary
    lacks would read as ``<unk>``). An article record (``"target": "article"``) holds both
    split back into sections (``prediction_sections``, ``reference_sections``: ``{"title",
    "text"}``, the lead first with title "", the reference's lead the dataset's text where it
    holds it), their text in tensor2tensor's layout (``== Title ==`` before each later
    section) as ``prediction`` and ``reference``, and ``reference_cut``: the reference's
    tokens past ``max_target_tokens``, which its NLL does not score. Every record carries
    ``lang``, the dataset's language, where ``lang`` is given."""
    from dataclasses import asdict, replace

    from wikisum.core import articlelayout

    sp = bundle.tokenizer
    limit = bundle.max_target_tokens
    tagged = {"lang": lang} if lang else {}

    def ended(ids) -> list[int]:
        ids = [int(i) for i in ids]
        return ids[:ids.index(eos_id)] if eos_id in ids else ids

    def lead(ex, hyp, nll, tokens, text: str | None = None) -> dict:
        reference = text if text is not None else sp.decode(list(ex.targets))
        return {"id": ex.id, "title": ex.title, "prediction": sp.decode(ended(hyp)),
                "reference": reference, "reference_nll": nll,
                "reference_tokens": tokens, **tagged}

    def article(ex, hyp, nll, tokens, text: str | None = None) -> dict:
        predicted = articlelayout.decode_article(ended(hyp), sp)
        reference = articlelayout.decode_article(list(ex.targets), sp)
        if text is not None and reference:
            reference[0] = replace(reference[0], text=text)
        return {"id": ex.id, "title": ex.title, "target": "article",
                "prediction": articlelayout.t2t_text(predicted),
                "reference": articlelayout.t2t_text(reference),
                "prediction_sections": [asdict(s) for s in predicted],
                "reference_sections": [asdict(s) for s in reference],
                "reference_nll": nll, "reference_tokens": tokens,
                "reference_cut": max(0, len(ex.targets) - limit) if limit else 0, **tagged}

    if bundle.target == "article":
        articlelayout.section_ids(sp)  # MissingPieces now, not at the first record
        return article
    return lead


def view_path(out: str | Path) -> Path:
    """The Markdown page of a whole-article predictions file: PREDS.jsonl -> PREDS.articles.md."""
    out = Path(out)
    stem = out.name[:-len(".jsonl")] if out.name.endswith(".jsonl") else out.name
    return out.with_name(f"{stem}.articles.md")


def write_article_view(preds: Path) -> str:
    """Each predicted article beside its reference, as Markdown (:mod:`articleview`), next to
    the predictions; returns its path."""
    from wikisum.generation import articleview

    page = view_path(preds)
    ownership.begin_file(str(page), "decode")
    try:
        articleview.write_markdown(str(preds), str(page))
    finally:
        ownership.end_file(str(page), "decode")
    return str(page)


def write_json(path: Path, value: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with files.naming(str(path)):
            tmp.write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
