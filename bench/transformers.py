"""Benchmark: T-D vs T-DMCA training-step memory and time over L, the longest L each fits in a
memory budget, and decoding speed with and without the incremental cache.

    python bench/transformers.py                  # CPU figures (several minutes on 2 cores)
    python bench/transformers.py --quick          # L up to 4k, a smaller budget
    python bench/transformers.py --gpu            # on a CUDA machine: bf16 tokens/s, MFU at
                                                  # L=8k, and the longest L on the card

A third row, ``t-d-materialized``, is T-D with its attention scores built in full, as
tensor2tensor built them when the paper compared the two.

Each (model, L) training step runs in a fresh child process, so that its peak resident memory
(ru_maxrss) is its own; the figure reported is that peak minus the child's memory before the
step (imports, weights). Both models have the same width and depth; T-D uses full causal
attention in every layer, T-DMCA alternates local (blocks of 256) and memory-compressed
attention. Results are printed and written to bench/results/transformers.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "results" / "transformers.json"
# Both models get the same width and depth (T-DMCA local/compressed/local/..., T-D all full).
# "base": transformer_base width, 5 layers, a 32,000-piece vocabulary (the paper's setting);
# "small": the setting of the figures first quoted in docs/benchmarks.md.
SHAPES = {
    "base": dict(d_model=512, n_heads=8, n_layers=5, d_ff=2048, vocab_size=32000, dropout=0.0),
    "small": dict(d_model=256, n_heads=4, n_layers=4, d_ff=1024, vocab_size=8000, dropout=0.0),
}
SHAPE_NAME = "base"
SHAPE = SHAPES[SHAPE_NAME]
CHECKPOINT_LAYERS = False
LOSS_ON = "all"  # decoder-only loss: "all" (the paper's language model) or "target"
# Children's malloc: with a fixed mmap threshold every large block goes back to the system when
# freed, so the peak resident memory is that of the live tensors, not of heap holes.
FREED_ENV = {"MALLOC_MMAP_THRESHOLD_": "131072"}
RETURN_FREED = False
TARGET_TOKENS = 200  # of the L positions of a step, the lead's; the rest is the source
LENGTHS = (1024, 2048, 4096, 8192, 16384)


def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


MATERIALIZED = "t-d-materialized"


def materialize_full_attention() -> None:
    """Make full causal attention build its (T, T) score matrix, as tensor2tensor did: SDPA
    with an explicit mask takes the unfused path. The paper's memory comparison was made
    against such a T-D; ours uses the fused kernel, whose memory is linear in T."""
    import torch
    import torch.nn.functional as F

    from wikisum.models import attention

    def materialized(q, k, v, dropout_p=0.0):
        t = q.shape[2]
        mask = torch.ones(t, t, dtype=torch.bool, device=q.device).tril()
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)

    attention.causal_attention = materialized


def build(name: str, **overrides):
    from wikisum import models
    from wikisum.models.transformer import dmca_kinds

    if name == MATERIALIZED:
        materialize_full_attention()
        name = "t-d"
    shape = {**SHAPE, **overrides}
    if name == "t-dmca":
        kinds = dmca_kinds(shape["n_layers"])
    else:
        kinds = ["full"] * shape["n_layers"]
    return models.build(name, preset="base", layer_kinds=kinds, loss_on=LOSS_ON, **shape)


def training_batch(length: int, vocab_size: int, device=None):
    """One example whose ``source + <sep> + target`` is ``length`` tokens: the model's own
    training path (its loss, chunked output layer included) is what a step measures."""
    import torch

    from wikisum.models.base import Batch

    target = min(TARGET_TOKENS, max(1, length // 4))
    source = max(1, length - target - 1)
    ids = torch.randint(6, vocab_size, (1, source + target), device=device)
    return Batch(sources=ids[:, :source], source_lengths=torch.tensor([source], device=device),
                 targets=ids[:, source:], target_lengths=torch.tensor([target], device=device))


def child_step(name: str, length: int, threads: int, checkpoint_layers: bool = False) -> dict:
    """One forward + backward of a batch of one sequence of ``length`` tokens (in this process)."""
    import torch

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = build(name, checkpoint_layers=checkpoint_layers).train()
    batch = training_batch(length, SHAPE["vocab_size"])
    base = rss_mb()
    start = time.perf_counter()
    model(batch).loss.backward()
    seconds = time.perf_counter() - start
    return {"model": name, "length": length, "checkpoint_layers": checkpoint_layers,
            "loss_on": LOSS_ON, "return_freed": "MALLOC_MMAP_THRESHOLD_" in os.environ,
            "seconds": round(seconds, 3),
            "step_peak_mb": round(rss_mb() - base, 1), "tokens_per_s": round(length / seconds)}


def run_child(name: str, length: int, threads: int, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--child", name, str(length), "--threads", str(threads),
           "--shape", SHAPE_NAME, "--loss-on", LOSS_ON] + (
               ["--checkpoint-layers"] if CHECKPOINT_LAYERS else [])
    env = {**os.environ, "PYTHONPATH": str(ROOT), **(FREED_ENV if RETURN_FREED else {})}
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"model": name, "length": length, "error": f"over {timeout:.0f} s"}
    if proc.returncode != 0:
        tail = proc.stderr.strip().splitlines()[-1:] or ["killed"]
        return {"model": name, "length": length, "error": tail[0][:200]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def longest_fitting(name: str, budget_mb: float, threads: int, timeout: float,
                    start: int = 1024, limit: int = 262144) -> dict:
    """The longest L (a multiple of 1024) whose step stays under ``budget_mb``: doubling, then
    bisection. Each probe is a child process."""
    probes = []

    def fits(length):
        r = run_child(name, length, threads, timeout)
        probes.append(r)
        return "error" not in r and r["step_peak_mb"] <= budget_mb

    if not fits(start):
        return {"model": name, "budget_mb": budget_mb, "longest": 0, "probes": probes}
    good, bad = start, None
    while bad is None and good < limit:
        nxt = min(good * 2, limit)
        if fits(nxt):
            good = nxt
        else:
            bad = nxt
    while bad is not None and bad - good > 1024:
        mid = (good + bad) // 2 // 1024 * 1024
        if mid in (good, bad):
            break
        if fits(mid):
            good = mid
        else:
            bad = mid
    return {"model": name, "budget_mb": budget_mb, "longest": good,
            "capped_at_limit": bad is None, "probes": probes}


def decoding_input(name: str, prefix: int):
    """Model ``name`` in eval mode, a random ``prefix``-token source, and its one-row batch."""
    import torch

    from wikisum.models.base import make_batch

    torch.manual_seed(0)
    model = build(name).eval()
    source = torch.randint(6, SHAPE["vocab_size"], (prefix,)).tolist()
    return model, source, make_batch([source], [[3]])


def decode_speed(prefix: int, new_tokens: int, threads: int) -> list[dict]:
    """Greedy decoding tokens/s with the cache (start + step) and without (a full forward
    over the whole sequence for every new token)."""
    import torch


    torch.set_num_threads(threads)
    out = []
    for name in ("t-d", "t-dmca"):
        model, source, batch = decoding_input(name, prefix)
        with torch.no_grad():
            start = time.perf_counter()
            state = model.start(batch)
            token = state.first_logprobs.argmax(-1)
            for _ in range(new_tokens - 1):
                logprobs, state = model.step(state, token)
                token = logprobs.argmax(-1)
            cached = new_tokens / (time.perf_counter() - start)

            seq = torch.tensor([source + [model.config.sep_id]])
            start = time.perf_counter()
            for _ in range(new_tokens):
                token = model(seq)[:, -1].argmax(-1)
                seq = torch.cat([seq, token[:, None]], dim=1)
            uncached = new_tokens / (time.perf_counter() - start)
        out.append({"model": name, "prefix": prefix, "new_tokens": new_tokens,
                    "cached_tokens_per_s": round(cached, 1),
                    "uncached_tokens_per_s": round(uncached, 1),
                    "speedup": round(cached / uncached, 1)})
    return out


def beam_decode_speed(prefix: int, beam: int, new_tokens: int, threads: int) -> list[dict]:
    """Cached beam-search tokens/s after a ``prefix``-token input (the prefill timed apart):
    ``new_tokens`` steps of ``beam`` hypotheses (min_len keeps </s> away)."""
    import torch

    from wikisum.generation.decoding import beam_search

    torch.set_num_threads(threads)
    out = []
    for name in ("t-d", "t-dmca"):
        model, _, batch = decoding_input(name, prefix)
        with torch.no_grad():
            start = time.perf_counter()
            model.start(batch)
            prefill = time.perf_counter() - start
            start = time.perf_counter()
            beam_search(model, batch, beam=beam, max_len=new_tokens, min_len=new_tokens - 1,
                        eos_id=model.config.eos_id)
            total = time.perf_counter() - start
        steps = max(total - prefill, 1e-9)
        out.append({"model": name, "prefix": prefix, "beam": beam, "new_tokens": new_tokens,
                    "prefill_seconds": round(prefill, 2),
                    "cached_tokens_per_s": round(new_tokens / steps, 1)})
    return out


def gpu_figures(length: int = 8192, steps: int = 10) -> dict:
    """bf16 training tokens/s and model-FLOPs utilisation at ``length``, and the longest L."""
    import torch

    assert torch.cuda.is_available(), "--gpu needs a CUDA device"
    device = torch.device("cuda")
    name_gpu = torch.cuda.get_device_name(0)
    peak_tflops = float(os.environ.get("PEAK_BF16_TFLOPS", "989"))  # H100/H200 SXM dense bf16
    shape = dict(d_model=512, n_heads=8, n_layers=6, d_ff=2048, vocab_size=32000, dropout=0.0)
    out = {"device": name_gpu, "peak_bf16_tflops": peak_tflops, "shape": shape, "models": []}
    for name in ("t-d", "t-dmca"):
        model = build(name, **shape).to(device)
        opt = torch.optim.Adam(model.parameters(), lr=1e-4)
        params = sum(p.numel() for p in model.parameters())
        tokens = torch.randint(6, shape["vocab_size"], (1, length), device=device)

        def step(model, opt, tokens):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                logits = model(tokens)
                loss = torch.nn.functional.cross_entropy(logits[0, :-1].float(), tokens[0, 1:])
            loss.backward()
            opt.step()
            opt.zero_grad(set_to_none=True)

        for _ in range(3):
            step(model, opt, tokens)
        torch.cuda.synchronize()
        start = time.perf_counter()
        for _ in range(steps):
            step(model, opt, tokens)
        torch.cuda.synchronize()
        tps = steps * length / (time.perf_counter() - start)
        # 6 N per token for the weights, plus attention: 2 matmuls x 2 FLOPs x d per attended
        # key, x3 for the backward pass.
        kinds = model.config.layer_kinds
        attended = sum({"full": length / 2, "local": 1.5 * model.config.block_size,
                        "compressed": length / 6}[k] for k in kinds)
        flops_per_token = 6 * params + 12 * shape["d_model"] * attended
        mfu = tps * flops_per_token / (peak_tflops * 1e12)
        longest = 0
        n = 8192
        while n <= 1 << 20:
            try:
                torch.cuda.empty_cache()
                tokens = torch.randint(6, shape["vocab_size"], (1, n), device=device)
                step(model, opt, tokens)
                torch.cuda.synchronize()
                longest = n
                n *= 2
            except torch.OutOfMemoryError:
                break
        out["models"].append({"model": name, "length": length, "tokens_per_s": round(tps),
                              "mfu": round(mfu, 4), "params": params,
                              "longest_power_of_two_l": longest})
        del model, opt
        torch.cuda.empty_cache()
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--child", nargs=2, metavar=("MODEL", "L"), help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--quick", action="store_true", help="L up to 4k and a 1 GiB budget")
    p.add_argument("--budget-mb", type=float, default=4096,
                   help="memory budget for the longest-L search (default: %(default)s MiB)")
    p.add_argument("--timeout", type=float, default=600, help="per child process, seconds")
    p.add_argument("--gpu", action="store_true", help="the CUDA figures instead")
    p.add_argument("--shape", choices=sorted(SHAPES), default="base",
                   help="model width, depth and vocabulary (default: %(default)s)")
    p.add_argument("--lengths", default=None, metavar="L,L,...",
                   help="only the training steps at these lengths (no longest-L search, no "
                        "decoding figures)")
    p.add_argument("--checkpoint-layers", action="store_true",
                   help="train with activation checkpointing per layer")
    p.add_argument("--loss-on", choices=("all", "target"), default="all",
                   help="positions the loss covers: all (the paper's language-model loss, "
                        "default) or the target only, so the output layer runs on the "
                        "target's positions alone")
    p.add_argument("--return-freed-memory", action="store_true",
                   help="children free large blocks back to the system (glibc "
                        "MALLOC_MMAP_THRESHOLD_=131072), so that the peak is that of live "
                        "tensors, not of the heap's holes")
    p.add_argument("--longest", default=None, metavar="MODEL,...",
                   help="only the longest-L search under --budget-mb for these models "
                        "(t-d, t-dmca, t-d-materialized)")
    p.add_argument("--beam-decode", type=int, default=None, metavar="PREFIX",
                   help="only cached beam-search (beam 4, 64 tokens) after a PREFIX-token input")
    from bench import options

    args = options.parse(p, argv)
    global SHAPE, SHAPE_NAME, CHECKPOINT_LAYERS, LOSS_ON, RETURN_FREED
    SHAPE_NAME, SHAPE = args.shape, SHAPES[args.shape]
    CHECKPOINT_LAYERS, LOSS_ON = args.checkpoint_layers, args.loss_on
    RETURN_FREED = args.return_freed_memory
    if args.child:
        print(json.dumps(child_step(args.child[0], int(args.child[1]), args.threads,
                                    args.checkpoint_layers)))
        return 0

    from bench.machine import cpu_model

    command = ["python", "bench/transformers.py", *(sys.argv[1:] if argv is None else argv)]
    results = {"command": shlex.join(command), "cpu": cpu_model(), "threads": args.threads,
               "shape": SHAPE}
    if args.beam_decode:
        results["beam_decoding"] = beam_decode_speed(args.beam_decode, 4, 64, args.threads)
        for r in results["beam_decoding"]:
            print(json.dumps(r), flush=True)
    elif args.gpu:
        results["gpu"] = gpu_figures()
        print(json.dumps(results["gpu"], indent=1))
    elif args.longest:
        results["longest"] = []
        for name in args.longest.split(","):
            r = longest_fitting(name, args.budget_mb, args.threads, args.timeout)
            results["longest"].append(r)
            print(f"longest L in {args.budget_mb:.0f} MiB: {name} {r['longest']}"
                  + (" (search limit)" if r.get("capped_at_limit") else ""), flush=True)
    elif args.lengths:
        results["steps"] = []
        for length in (int(x) for x in args.lengths.split(",")):
            for name in ("t-d", "t-dmca"):
                r = run_child(name, length, args.threads, args.timeout)
                results["steps"].append(r)
                print(json.dumps(r), flush=True)
    else:
        lengths = [n for n in LENGTHS if not args.quick or n <= 4096]
        budget = 1024 if args.quick else args.budget_mb
        results["steps"] = []
        print(f"{'model':8} {'L':>6} {'seconds':>8} {'peak MiB':>9} {'tokens/s':>9}")
        for length in lengths:
            for name in ("t-d", "t-dmca", MATERIALIZED):
                r = run_child(name, length, args.threads, args.timeout)
                results["steps"].append(r)
                if "error" in r:
                    print(f"{name:8} {length:>6} {r['error']}")
                else:
                    print(f"{name:8} {length:>6} {r['seconds']:>8} {r['step_peak_mb']:>9} "
                          f"{r['tokens_per_s']:>9}", flush=True)
        results["longest"] = [longest_fitting(n, budget, args.threads, args.timeout)
                              for n in ("t-d", "t-dmca", MATERIALIZED)]
        td, dmca, td_mat = (r["longest"] for r in results["longest"])
        results["longest_ratio"] = round(dmca / td, 2) if td else None
        results["longest_ratio_vs_materialized"] = round(dmca / td_mat, 2) if td_mat else None
        for r in results["longest"]:
            print(f"longest L in {budget:.0f} MiB: {r['model']} {r['longest']}"
                  + (" (search limit)" if r.get("capped_at_limit") else ""))
        print(f"T-DMCA / T-D longest-L ratio: {results['longest_ratio']} (fused attention), "
              f"{results['longest_ratio_vs_materialized']} (materialized, as in the paper)")
        results["decoding"] = decode_speed(prefix=1024, new_tokens=64, threads=args.threads)
        for r in results["decoding"]:
            print(f"decode {r['model']}: {r['cached_tokens_per_s']} tokens/s cached, "
                  f"{r['uncached_tokens_per_s']} uncached ({r['speedup']}x)")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    print(f"written to {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
