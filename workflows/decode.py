"""``wikisum decode``: a trained run's summaries of a split, with the reference's likelihood.

:func:`decode` is importable; :func:`run` is the command's glue.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from itertools import islice
from pathlib import Path

from wikisum.workflows import checks

HELP = "summaries of a split by a trained run (batched beam search), as JSON lines"
DESCRIPTION = """\
Decode a split of the run's dataset (or --data) with the run's latest checkpoint: batched beam
search with GNMT's length penalty (--alpha); --beam 1 is greedy search. --wfe constrains word
frequencies with the model's estimator (a model trained with --wfe).

Output (--out), one JSON object a line, in data order:
  {"id", "title", "prediction", "reference", "reference_nll", "reference_tokens"}
reference_nll (nats) and reference_tokens (wordpieces, </s> included) come from a teacher-forced
pass over the reference, so `wikisum evaluate` reports perplexity without the model. Examples
with an empty reference are skipped and counted. A progress line goes to stderr.
"""

# A search: (model, batch) -> one hypothesis (with .tokens, </s> excluded) per batch row.
Search = Callable[[object, object], list]


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("decode", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True, metavar="RUN", help="a `wikisum train` --out")
    p.add_argument("--split", default="test", help="split to decode (default: %(default)s)")
    p.add_argument("--out", required=True, metavar="PREDS", help="predictions file (.jsonl)")
    p.add_argument("--beam", type=checks.count(1), default=4,
                   help="beam size (default: %(default)s)")
    p.add_argument("--alpha", type=checks.number(0, 10), default=0.6,
                   help="length penalty exponent (default: %(default)s)")
    p.add_argument("--max-len", type=checks.count(1), default=500, metavar="N",
                   help="most generated tokens, </s> included (default: %(default)s)")
    p.add_argument("--min-len", type=checks.count(0), default=0, metavar="N",
                   help="fewest tokens before </s> (default: %(default)s)")
    p.add_argument("--data", metavar="DIR",
                   help="dataset directory (default: the one the run was trained on)")
    p.add_argument("--batch-size", type=checks.count(1), default=8, metavar="N",
                   help="examples decoded together (default: %(default)s)")
    p.add_argument("--limit", type=checks.count(1), metavar="N",
                   help="decode the first N examples only")
    p.add_argument("--wfe", action="store_true", help="word-frequency-constrained decoding")
    p.add_argument("--device", type=checks.device, default="auto",
                   help="auto, cpu, cuda, cuda:N (default: %(default)s)")
    p.set_defaults(func=run)


def default_search(*, beam: int, alpha: float, max_len: int, min_len: int, wfe: bool,
                   eos_id: int) -> Search:
    """Beam search of :mod:`wikisum.models.decoding`; greedy search when ``beam`` is 1."""
    from wikisum.models import decoding

    if beam == 1:
        return lambda model, batch: decoding.greedy(model, batch, max_len=max_len, eos_id=eos_id,
                                                    wfe=wfe, min_len=min_len, alpha=alpha)
    return lambda model, batch: decoding.beam_search(model, batch, beam=beam, alpha=alpha,
                                                     max_len=max_len, eos_id=eos_id,
                                                     min_len=min_len, wfe=wfe)


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


def search_bytes(model_config, beam: int, batch_size: int, max_len: int,
                 input_tokens: int) -> int:
    """An estimate of what beam search holds at its largest, in bytes: per hypothesis
    (batch x beam of them) the log-probabilities and candidate scores over the vocabulary (float32,
    three copies at a step), the token history, and the attention caches of every layer over the
    input and the output (keys and values, float32)."""
    vocab = int(getattr(model_config, "vocab_size", 32000))
    width = int(getattr(model_config, "d_model", getattr(model_config, "d_hidden", 512)))
    layers = int(getattr(model_config, "n_layers", 1)) + int(getattr(model_config,
                                                                     "n_encoder_layers", 0))
    per_hypothesis = 3 * vocab * 4 + max_len * 8 + 2 * layers * width * (input_tokens
                                                                          + max_len) * 4
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


def decode(run: str, split: str, out: str, *, beam: int = 4, alpha: float = 0.6,
           max_len: int = 500, min_len: int = 0, data: str | None = None, batch_size: int = 8,
           limit: int | None = None, wfe: bool = False, device: str = "auto",
           search: Search | None = None, factory=None, progress: bool = True) -> dict:
    """Write the predictions of ``run`` on ``split`` to ``out``; returns counts.

    ``search`` replaces :func:`default_search` (tests); ``factory`` the model registry.
    """
    from wikisum import models
    from wikisum.models import checkpoint, runtime
    from wikisum.models.batching import prepare, read_examples, to_batch
    from wikisum.models.training import exemplars_needed
    from wikisum.pipeline.loader import Dataset

    for name, value in (("--beam", beam), ("--batch-size", batch_size), ("--max-len", max_len),
                        ("--limit", 1 if limit is None else limit)):
        if value < 1:
            raise ValueError(f"{name} must be at least 1, got {value}")
    loaded = checkpoint.load(run, str(runtime.resolve_device(device)), factory or models)
    model, tokenizer, config = loaded.model, loaded.tokenizer, loaded.train_config
    check_memory(loaded.config, beam, batch_size, max_len, config.max_input_tokens,
                 next(model.parameters()).device)
    dataset = Dataset(data or config.data)
    eos_id = int(dataset.special_ids["eos"])
    search = search or default_search(beam=beam, alpha=alpha, max_len=max_len, min_len=min_len,
                                      wfe=wfe, eos_id=eos_id)
    examples = read_examples(dataset, split, config.extractor, config.corpus,
                             config.max_input_tokens,
                             exemplars_needed(factory or models, loaded.name))
    if limit is not None:
        examples = islice(examples, limit)
    device_ = next(model.parameters()).device
    skipped: Counter = Counter()
    written = 0
    started = last_report = time.perf_counter()
    target = Path(out)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for chunk in chunks(examples, batch_size):
            kept = [(ex, p) for ex in chunk if (p := prepare(ex, eos_id, skipped)) is not None]
            if not kept:
                continue
            pairs = [p for _, p in kept]
            hypotheses = search(model, to_batch(pairs).to(device_))
            scores = reference_scores(model, pairs, device_)
            for (ex, _), hyp, (nll, tokens) in zip(kept, hypotheses, scores, strict=True):
                ids = list(hyp.tokens)
                ids = ids[:ids.index(eos_id)] if eos_id in ids else ids
                f.write(json.dumps({
                    "id": ex.id, "title": ex.title, "prediction": tokenizer.decode(ids),
                    "reference": tokenizer.decode(list(ex.targets)), "reference_nll": nll,
                    "reference_tokens": tokens}) + "\n")
            written += len(kept)
            now = time.perf_counter()
            if progress and now - last_report >= 5.0:
                print(f"decode {split}: {written} examples, {written / (now - started):.2f}/s",
                      file=sys.stderr, flush=True)
                last_report = now
    os.replace(tmp, target)
    seconds = time.perf_counter() - started
    if progress:
        print(f"decode {split}: {written} examples in {seconds:.1f} s", file=sys.stderr)
    return {"examples": written, "skipped": dict(skipped), "out": str(target),
            "step": loaded.step, "seconds": seconds}


def run(args: argparse.Namespace) -> int:
    from wikisum.models.batching import CorruptShardError

    try:
        result = decode(args.run, args.split, args.out, beam=args.beam, alpha=args.alpha,
                        max_len=args.max_len, min_len=args.min_len, data=args.data,
                        batch_size=args.batch_size, limit=args.limit, wfe=args.wfe,
                        device=args.device)
    except (CorruptShardError, FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum decode: {exc}") from exc
    skipped = ", ".join(f"{v} {k}" for k, v in result["skipped"].items())
    print(f"decode: {result['examples']} {args.split} examples by {args.run} (step "
          f"{result['step']}) -> {result['out']}" + (f" (skipped {skipped})" if skipped else ""))
    return 0
