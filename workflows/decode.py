"""``wikisum decode``: a trained run's summaries of a split, with the reference's likelihood.

:func:`decode` is importable; :func:`run` is the command's glue.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path

from wikisum.models import datastats
from wikisum.pipeline import ownership
from wikisum.workflows import checks

HELP = "summaries of a split by a trained run (batched beam search or sampling), as JSON lines"
DESCRIPTION = f"""\
Decode a split of the run's dataset (or --data) with the run's latest checkpoint, or its
checkpoints/best.pt where early stopping (patience) wrote one (or an export's weights):
batched beam search with GNMT's length penalty (--alpha); --beam 1 is greedy search;
--do-sample draws tokens instead (with --temperature, --top-k, --top-p, --seed).
--no-repeat-ngram-size N never repeats an N-gram; --wfe constrains word frequencies with the
model's estimator (a model trained with --wfe).

--max-len defaults to {datastats.DEFAULT_MAX_LEN_HELP} (`wikisum train` records it).

Output (--out), one JSON object a line, in data order, written as it goes:
  {{"id", "title", "prediction", "reference", "reference_nll", "reference_tokens"}}
reference_nll (nats) and reference_tokens (wordpieces, </s> included) come from a teacher-forced
pass over the reference, so `wikisum evaluate` reports perplexity without the model. Examples
with an empty reference are skipped and counted. Beside it, PREDS.decode.json records the run,
checkpoint step, split and decoding settings, and whether the file is complete.

A killed decode resumes: run the same command again and it keeps the predictions already written
(a line cut short is dropped) and decodes the rest. A file written by another run, checkpoint or
other settings is refused; --overwrite starts it again. Progress with an ETA goes to stderr.
"""

# A search: (model, batch) -> one hypothesis (with .tokens, </s> excluded) per batch row.
Search = Callable[[object, object], list]


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("decode", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True, metavar="RUN",
                   help="a `wikisum train` --out, or a `wikisum export` --out (with --data)")
    p.add_argument("--split", default="test", help="split to decode (default: %(default)s)")
    p.add_argument("--out", required=True, metavar="PREDS", help="predictions file (.jsonl)")
    p.add_argument("--beam", type=checks.count(1), metavar="K",
                   help="beam size; 1 is greedy search (default: 4)")
    p.add_argument("--alpha", type=checks.number(0, 10), default=0.6,
                   help="length penalty exponent (default: %(default)s)")
    p.add_argument("--max-len", type=checks.count(1), metavar="N",
                   help="most generated tokens, </s> included (default: twice the 99th "
                        f"percentile of the run's training targets, at most "
                        f"{datastats.MAX_LEN_CAP}; {datastats.FALLBACK_MAX_LEN} for a run "
                        "trained without that record)")
    p.add_argument("--min-len", type=checks.count(0), default=0, metavar="N",
                   help="fewest tokens before </s> (default: %(default)s)")
    p.add_argument("--no-repeat-ngram-size", type=checks.count(0), default=0, metavar="N",
                   help="never emit an N-gram twice in one output; 0: off (default: "
                        "%(default)s)")
    sampling = p.add_argument_group("sampling (instead of beam search)")
    sampling.add_argument("--do-sample", dest="sample", action="store_true",
                          help="draw each token from the model's distribution")
    sampling.add_argument("--temperature", type=checks.number(0, 100, low_open=True),
                          default=1.0, help="divides the scores (default: %(default)s)")
    sampling.add_argument("--top-k", type=checks.count(0), default=0, metavar="K",
                          help="draw from the K likeliest tokens; 0: all (default: %(default)s)")
    sampling.add_argument("--top-p", type=checks.number(0, 1, low_open=True), default=1.0,
                          metavar="P", help="draw from the likeliest tokens whose probability "
                                            "reaches P; 1: all (default: %(default)s)")
    sampling.add_argument("--seed", type=checks.count(0), metavar="N",
                          help="seed: the same seed gives the same samples (default: none)")
    p.add_argument("--data", metavar="DIR",
                   help="dataset directory (default: the one the run was trained on; an "
                        "export needs it)")
    p.add_argument("--batch-size", type=checks.count(1), default=8, metavar="N",
                   help="examples decoded together (default: %(default)s)")
    p.add_argument("--limit", type=checks.count(1), metavar="N",
                   help="decode the first N examples only")
    p.add_argument("--wfe", action="store_true", help="word-frequency-constrained decoding")
    p.add_argument("--device", type=checks.device, default="auto",
                   help="auto, cpu, cuda, cuda:N (default: %(default)s)")
    p.add_argument("--overwrite", action="store_true",
                   help="decode from the start into --out even where it holds predictions")
    p.set_defaults(func=run)


def default_search(options, *, eos_id: int) -> Search:
    """:func:`wikisum.models.decoding.generate` with ``options`` (a ``DecodeOptions``): beam
    search, greedy search or sampling, each example's sample seeded by its id."""
    from wikisum.models import decoding

    return lambda model, batch: decoding.generate(model, batch, options, eos_id=eos_id,
                                                  keys=batch.ids or None)


def reference_scores(model, pairs: list, device) -> list[tuple[float, int]]:
    """(summed NLL in nats, tokens) of each pair's target under teacher forcing.

    One forward pass per pair: :class:`wikisum.models.base.ModelOutput` sums over a whole batch.
    """
    import torch

    from wikisum.models.batching import to_batch

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
                   "max_input_tokens", "decoding")


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


def decode(run: str, split: str, out: str, *, beam: int | None = None, alpha: float = 0.6,
           max_len: int | None = None, min_len: int = 0, data: str | None = None,
           batch_size: int = 8, limit: int | None = None, wfe: bool = False,
           device: str = "auto", search: Search | None = None, factory=None,
           progress: bool = True, no_repeat_ngram_size: int = 0, sample: bool = False,
           temperature: float = 1.0, top_k: int = 0, top_p: float = 1.0,
           seed: int | None = None, overwrite: bool = False) -> dict:
    """Write the predictions of ``run`` (a run or export directory) on ``split`` to ``out``,
    resuming a decode that stopped part-way (see the command's description); returns counts.

    ``max_len`` None takes the run's default (:mod:`wikisum.models.datastats`); ``beam`` None is
    4 (beam search). ``search`` replaces the search (tests); ``factory`` the model registry.
    ``data`` is a dataset directory or a build's root (its data/).

    Everything is checked (the split too) before ``out`` or its record is made; a decode that
    fails before its first prediction removes both, so that the corrected command starts
    afresh without --overwrite.
    """
    from wikisum import models
    from wikisum.models import export, runtime
    from wikisum.models.batching import prepare, read_examples, to_batch
    from wikisum.models.decoding import DecodeOptions
    from wikisum.models.training import exemplars_needed
    from wikisum.pipeline.loader import Dataset
    from wikisum.workflows.progress import Progress

    for name, value in (("--batch-size", batch_size), ("--limit", 1 if limit is None else limit)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    bundle = export.load(run, str(runtime.resolve_device(device)), factory or models,
                         warn=max_len is None)
    options = DecodeOptions(
        beam=beam, alpha=alpha, max_len=max_len or bundle.decoding["max_len"], min_len=min_len,
        no_repeat_ngram_size=no_repeat_ngram_size, wfe=wfe, sample=sample,
        temperature=temperature, top_k=top_k, top_p=top_p, seed=seed)
    model, tokenizer = bundle.model, bundle.tokenizer
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
    eos_id = int(dataset.special_ids["eos"])
    search = search or default_search(options, eos_id=eos_id)
    target = Path(out)
    record = {"run": str(run), "run_name": bundle.path.resolve().name, "model": bundle.name,
              "step": bundle.step, "split": split, "data": str(dataset.dir),
              "extractor": bundle.extractor, "corpus": bundle.corpus,
              "max_input_tokens": bundle.max_input_tokens, "decoding": options.settings(),
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
                                 exemplars_needed(factory or models, bundle.name))
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
        with bar, target.open("ab" if done else "wb") as f:
            for chunk in chunks(examples, batch_size):
                kept = [(ex, p) for ex in chunk
                        if (p := prepare(ex, eos_id, skipped)) is not None]
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
                        ids = list(hyp.tokens)
                        ids = ids[:ids.index(eos_id)] if eos_id in ids else ids
                        lines.append(json.dumps({
                            "id": ex.id, "title": ex.title, "prediction": tokenizer.decode(ids),
                            "reference": tokenizer.decode(list(ex.targets)),
                            "reference_nll": nll, "reference_tokens": tokens}) + "\n")
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
    return {"examples": kept_before + written, "new": written, "resumed": kept_before,
            "skipped": dict(skipped), "out": str(target), "step": bundle.step,
            "seconds": seconds, "max_len": options.max_len}


def write_json(path: Path, value: dict) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def run(args: argparse.Namespace) -> int:
    from wikisum.models.batching import CorruptShardError
    from wikisum.workflows.progress import say

    checks.input_path(args.run, "--run", "decode", "any")
    data = checks.dataset(args.data, "--data", "decode") if args.data else None
    try:
        result = decode(args.run, args.split, args.out, beam=args.beam, alpha=args.alpha,
                        max_len=args.max_len, min_len=args.min_len, data=data,
                        batch_size=args.batch_size, limit=args.limit, wfe=args.wfe,
                        device=args.device, no_repeat_ngram_size=args.no_repeat_ngram_size,
                        sample=args.sample, temperature=args.temperature, top_k=args.top_k,
                        top_p=args.top_p, seed=args.seed, overwrite=args.overwrite)
    except (CorruptShardError, FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum decode: {exc}") from exc
    skipped = ", ".join(f"{v} {k}" for k, v in result["skipped"].items())
    resumed = f", {result['resumed']} kept from before" if result["resumed"] else ""
    say(f"decode: {result['examples']} {args.split} examples by {args.run} (step "
        f"{result['step']}, max-len {result['max_len']}{resumed}) -> {result['out']}"
        + (f" (skipped {skipped})" if skipped else ""))
    return 0


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership): the predictions
    and the settings record beside them."""
    from wikisum.pipeline.ownership import Output

    return [Output("--out", args.out, "file"),
            Output("--out", str(settings_path(args.out)), "file")]
