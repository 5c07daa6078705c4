"""Benchmark: a fine-tuning step of ``--model hf`` against the same model trained by a plain
transformers loop on the same batch.

    python bench/hf_finetune.py                 # tiny BART and GPT-2 on the sample build
    python bench/hf_finetune.py --steps 30 --data build/

Both sides train the same tiny randomly initialised checkpoint (tests/models/hfcheckpoints.py)
on the same batches, on one CPU thread: wikisum's side is the update of
:mod:`wikisum.training.loop` (the family's ``forward``, backward, clipping, Adam and the
schedule, as ``_Trainer._update`` runs them); the plain side is
``model(input_ids, attention_mask, labels).loss.backward()``, the same clipping and
``torch.optim.Adam``. The median step time of each, and their ratio (acceptance: at most
1.3), are printed side by side and written to bench/results/hf_finetune.json. Without --data
the sample corpus is generated and built first (about half a minute).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# bench/transformers.py (another benchmark) would shadow the transformers package
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "bench"]
RESULTS = ROOT / "bench" / "results" / "hf_finetune.json"


def sample_build(folder: Path) -> Path:
    from wikisum.pipeline.sample import write_sample
    from wikisum.workflows import cli

    sample, out = folder / "sample", folder / "build"
    write_sample(sample, articles=60, seed=0)
    wiki = sample / "enwiki-sample-pages-articles.xml.bz2"
    status = cli.main(["-q", "build", "--wiki", str(wiki),
                       "--warc", str(sample / "warc" / "*.warc.gz"),
                       "--wet", str(sample / "wet" / "*.warc.wet.gz"),
                       "--search-results", str(sample / "search_results.jsonl"),
                       "--out", str(out), "--vocab-size", "3000", "--shards", "2"])
    if status:
        raise SystemExit(f"the sample build failed (exit {status})")
    return out


def batches(model, data: Path, max_input_tokens: int, batch_tokens: int, count: int) -> list:
    """``count`` training batches of ``data`` in the model's tokens, as the run makes them."""
    from collections import Counter

    from wikisum.core.loader import Dataset
    from wikisum.training import batching

    dataset = Dataset(str(data))
    read = lambda: batching.read_examples(  # noqa: E731
        dataset, "train", "tfidf", "combined", max_input_tokens, encode=model.encode_example)
    out: list = []
    epoch = 0
    while len(out) < count:
        out.extend(batching.epoch_batches(read, eos_id=model.eos_id, max_tokens=batch_tokens,
                                          seed=0, epoch=epoch, counts=Counter()))
        epoch += 1
    return [batching.to_batch(pairs) for pairs in out[:count]]


def time_steps(step, batches: list, warmup: int) -> list[float]:
    times = []
    for i, batch in enumerate(batches):
        started = time.perf_counter()
        step(batch)
        if i >= warmup:
            times.append(time.perf_counter() - started)
    return times


def wikisum_step(model, lr: float):
    """The loop's update (:meth:`wikisum.training.loop._Trainer._update`, accumulate 1)."""
    import torch

    from wikisum.training.loop import scheduler

    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)
    schedule = scheduler(optimizer, 4000)

    def step(batch):
        model.train()
        optimizer.zero_grad(set_to_none=True)
        out = model(batch)
        weight = 1.0  # the batch's share of the update's target tokens (accumulate 1)
        (out.loss * weight).backward()
        float(out.loss.detach()), float(out.target_nll.detach())
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()

    return step


def plain_step(model, kind: str, lr: float, inputs):
    """A transformers fine-tuning loop's step on the same inputs, made ready beforehand."""
    import torch

    optimizer = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.98), eps=1e-9)

    def step(batch):
        ids, mask, labels = inputs[id(batch)]
        model.train()
        optimizer.zero_grad(set_to_none=True)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        float(loss.detach())
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return step


def measure(kind: str, folder: Path, data: Path, args) -> dict:
    import torch

    from wikisum.models import hf

    model = hf.build("hf", init=str(folder))
    plain = hf.build("hf", init=str(folder)).model  # the same weights, a separate copy
    work = batches(model, data, args.max_input_tokens, args.batch_tokens,
                   args.steps + args.warmup)
    # The plain loop's tensors are made before its clock starts (a collator's work).
    inputs = {}
    for batch in work:
        if model.config.kind == "seq2seq":
            ids, mask = model._source(batch)
            inputs[id(batch)] = (ids, mask, model._labels(batch))
        else:
            inputs[id(batch)] = model._causal(batch)
    torch.manual_seed(0)
    ours = time_steps(wikisum_step(model, args.lr), work, args.warmup)
    torch.manual_seed(0)
    theirs = time_steps(plain_step(plain, model.config.kind, args.lr, inputs), work,
                        args.warmup)
    tokens = statistics.mean(int(b.source_lengths.sum() + b.target_lengths.sum())
                             for b in work)
    row = {"model": kind, "kind": model.config.kind,
           "parameters": sum(p.numel() for p in model.parameters()),
           "batch_rows": statistics.mean(b.size for b in work), "batch_tokens": tokens,
           "steps_timed": len(ours), "wikisum_ms": 1000 * statistics.median(ours),
           "plain_ms": 1000 * statistics.median(theirs)}
    row["ratio"] = row["wikisum_ms"] / row["plain_ms"]
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", help="a build or dataset (default: build the sample)")
    parser.add_argument("--steps", type=int, default=40, help="timed steps per side")
    parser.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    parser.add_argument("--max-input-tokens", type=int, default=256)
    parser.add_argument("--batch-tokens", type=int, default=2048)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    import torch

    sys.path.insert(0, str(ROOT / "tests" / "models"))
    import hfcheckpoints

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        data = Path(args.data) if args.data else sample_build(tmp_path)
        from wikisum.core.loader import Dataset

        data = Path(Dataset(str(data)).dir)
        texts = hfcheckpoints.sample_texts(data)
        folders = {
            "bart": hfcheckpoints.save_bart(tmp_path / "bart",
                                            hfcheckpoints.train_tokenizer(texts)),
            "gpt2": hfcheckpoints.save_gpt2(tmp_path / "gpt2", hfcheckpoints.train_tokenizer(
                texts, pad=False, bos=False)),
        }
        rows = [measure(kind, folder, data, args) for kind, folder in folders.items()]
    print(f"{'model':6} {'kind':8} {'params':>8} {'tokens':>7} {'wikisum ms':>11} "
          f"{'plain ms':>9} {'ratio':>6}")
    for r in rows:
        print(f"{r['model']:6} {r['kind']:8} {r['parameters']:>8,} {r['batch_tokens']:>7.0f} "
              f"{r['wikisum_ms']:>11.2f} {r['plain_ms']:>9.2f} {r['ratio']:>6.2f}")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    result = {"settings": {k: v for k, v in vars(args).items()},
              "torch": torch.__version__, "rows": rows,
              "command": "python bench/hf_finetune.py " + " ".join(argv or sys.argv[1:])}
    RESULTS.write_text(json.dumps(result, indent=1) + "\n")
    print(f"-> {RESULTS}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
