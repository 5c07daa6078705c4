"""Benchmark: T-D vs T-DMCA training-step memory and time over L, the longest L each fits in a
memory budget, and decoding speed with and without the incremental cache.

    python bench/transformers.py                  # CPU figures (several minutes on 2 cores)
    python bench/transformers.py --quick          # L up to 4k, a smaller budget
    python bench/transformers.py --gpu            # on a CUDA machine (below)
    python bench/transformers.py --gpu-smoke      # the --gpu code path on CPU, tiny sizes

A third row, ``t-d-materialized``, is T-D with its attention scores built in full, as
tensor2tensor built them when the paper compared the two.

Each (model, L) training step runs in a fresh child process, so that its peak resident memory
(ru_maxrss) is its own; the figure reported is that peak minus the child's memory before the
step (imports, weights). Both models have the same width and depth; T-D uses full causal
attention in every layer, T-DMCA alternates local (blocks of 256) and memory-compressed
attention. Results are printed and written to bench/results/transformers.json.

``--gpu`` (one process, one CUDA device, base width, 5 layers, V 32,000, bf16 autocast), in
the order of importance, each figure printed as a JSON line when known and the whole written
to bench/results/transformers_gpu.json (and $OUT/transformers_gpu.json) after every figure:
the environment; training tokens/s, MFU and peak memory (forward, backward, Adam) at L = 8,192
and 11,000 for T-D, T-DMCA with sdpa attention and T-DMCA with FlexAttention; cached beam
search after an 11,000-token input; the longest L that trains on the card; with
``--gpu-compile``, the training rows again with the model compiled. Parts not started within
``--gpu-budget-seconds`` are recorded as skipped.
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


def training_batch(length: int, vocab_size: int, device=None, rows: int = 1,
                   generator=None):
    """``rows`` examples whose ``source + <sep> + target`` is ``length`` tokens: the model's
    own training path (its loss, chunked output layer included) is what a step measures. The
    ids come from ``generator`` (a CPU one) where given, else from the global random state."""
    import torch

    from wikisum.models.base import Batch

    target = min(TARGET_TOKENS, max(1, length // 4))
    source = max(1, length - target - 1)
    if generator is None:
        ids = torch.randint(6, vocab_size, (rows, source + target), device=device)
    else:
        ids = torch.randint(6, vocab_size, (rows, source + target), generator=generator)
        ids = ids.to(device)
    return Batch(sources=ids[:, :source],
                 source_lengths=torch.full((rows,), source, device=device),
                 targets=ids[:, source:],
                 target_lengths=torch.full((rows,), target, device=device))


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


def decoding_input(name: str, prefix: int, device=None, **overrides):
    """Model ``name`` (config fields ``overrides``) in eval mode, a random ``prefix``-token
    source, and its one-row batch, on ``device``."""
    import torch

    from wikisum.models.base import make_batch

    torch.manual_seed(0)
    model = build(name, **overrides).eval()
    vocab = model.config.vocab_size
    source = torch.randint(6, vocab, (prefix,)).tolist()
    batch = make_batch([source], [[3]])
    if device is not None:
        model, batch = model.to(device), batch.to(device)
    return model, source, batch


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


# ---------------------------------------------------------------------------------------------
# GPU figures (--gpu), and the same code path on CPU at tiny sizes (--gpu-smoke)

GPU_RESULTS = ROOT / "bench" / "results" / "transformers_gpu.json"
SMOKE_RESULTS = ROOT / "bench" / "results" / "transformers_gpu_smoke.json"
# Dense bf16 peak of an H100 / H200 SXM (the figure MFU is a share of); PEAK_BF16_TFLOPS
# overrides it for another card.
PEAK_BF16_TFLOPS = 989.0
GPU_LENGTHS = (8192, 11000)
GPU_ROWS = (("t-d", "sdpa"), ("t-dmca", "sdpa"), ("t-dmca", "flex"))
SMOKE_SHAPE = dict(d_model=64, n_heads=4, n_layers=2, d_ff=128, vocab_size=1000, dropout=0.0)


def flops_per_token(config, length: int) -> dict:
    """Training FLOPs per token of a decoder-only model of ``config`` at ``length``: the model
    of docs/benchmarks.md, forward multiply-adds (MACs) per token, x 2 FLOPs per MAC, x 3 for
    forward + backward. MACs: projections and FFN 4 d^2 + 2 d d_ff per layer; the output layer
    d V; attention 2 d x the keys a query attends on average (full L/2, local 1.5 x block,
    compressed L / (2 stride)); the compressed layers' two convolutions 2 kernel d^2 / stride."""
    d, kinds = config.d_model, config.layer_kinds
    keys = {"full": length / 2, "local": 1.5 * config.block_size,
            "compressed": length / (2 * config.compress_stride)}
    macs = {"layers": len(kinds) * (4 * d * d + 2 * d * config.d_ff),
            "output": d * config.vocab_size,
            "attention": sum(2 * d * keys[k] for k in kinds),
            "convolutions": kinds.count("compressed") * 2 * config.compress_kernel * d * d
            / config.compress_stride}
    return {"macs": {k: round(v) for k, v in macs.items()}, "flops": 6 * sum(macs.values())}


def write_results(results: dict, paths: list[Path]) -> None:
    """The results as JSON to every path (a path that cannot be written is reported)."""
    text = json.dumps(results, indent=1) + "\n"
    for path in paths:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        except OSError as exc:
            print(f"cannot write {path}: {exc}", file=sys.stderr, flush=True)


def prepare_torch(device) -> None:
    """On CUDA, room for the compiled variants of a GPU run (flex per pattern, static then
    dynamic lengths, with and without gradients; the compiled models); on CPU (a smoke run),
    two threads."""
    import torch

    if device.type == "cuda":
        import torch._dynamo

        config = torch._dynamo.config
        name = "recompile_limit" if hasattr(config, "recompile_limit") else "cache_size_limit"
        setattr(config, name, max(64, getattr(config, name)))
    else:
        torch.set_num_threads(min(2, torch.get_num_threads()))


class DeviceRun:
    """What a GPU benchmark run (or its smoke run on CPU) keeps: its device, its clock and time
    budget, and its results, written whole to ``paths`` after every figure (a killed run keeps
    what it had)."""

    def __init__(self, smoke: bool, refusal: str, budget: float, paths: list[Path]):
        import torch

        self.smoke = smoke
        self.device = torch.device("cpu" if smoke else "cuda")
        if not smoke and not torch.cuda.is_available():
            raise SystemExit(refusal)
        self.budget, self.start = budget, time.perf_counter()
        self.paths = paths
        self.results: dict = {}

    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def left(self) -> float:
        return self.budget - self.elapsed()

    def record(self, section: str, row: dict) -> None:
        row = {**row, "at_seconds": round(self.elapsed(), 1)}
        if isinstance(self.results[section], list):
            self.results[section].append(row)
        else:
            self.results[section] = row
        print(json.dumps({"section": section, **row}), flush=True)
        self.write()

    def write(self) -> None:
        write_results(self.results, self.paths)

    def sync(self) -> None:
        import torch

        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def reset_memory(self) -> None:
        """Free what the last row or probe left (cached block masks included) and start
        counting the peak again."""
        import gc

        import torch

        from wikisum.models import flexattention

        flexattention.clear_caches()
        gc.collect()
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()

    def reset_peak(self) -> None:
        import torch

        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()

    def peak_mib(self) -> float | None:
        import torch

        if self.device.type != "cuda":
            return None
        return round(torch.cuda.max_memory_allocated() / 2**20, 1)

    def adam(self, model, fused: bool | None = None):
        """Adam as the trainer makes it: its fused kernel on CUDA (``fused`` says otherwise)."""
        import torch

        if fused is None:
            fused = self.device.type == "cuda"
        return torch.optim.Adam(model.parameters(), lr=1e-4, **({"fused": True} if fused else {}))


class GpuRun(DeviceRun):
    """The --gpu (or --gpu-smoke) run: its settings, the time left, and its results, written
    whole after every figure (a killed run keeps what it had)."""

    def __init__(self, args, command: str):
        smoke = args.gpu_smoke
        paths = [SMOKE_RESULTS if smoke else GPU_RESULTS]
        if os.environ.get("OUT") and not smoke:
            paths.append(Path(os.environ["OUT"]) / "transformers_gpu.json")
        super().__init__(smoke, "--gpu needs a CUDA device (--gpu-smoke runs the same code on "
                         "CPU)", args.gpu_budget_seconds, paths)
        self.shape = dict(SMOKE_SHAPE if self.smoke else SHAPES["base"])
        self.lengths = (600,) if self.smoke else GPU_LENGTHS
        self.steps = 2 if self.smoke else max(5, args.gpu_steps)
        self.warmup = 1 if self.smoke else 3
        self.decode_prefix = 600 if self.smoke else 11000
        self.decode_tokens = 8 if self.smoke else 64
        self.longest_start = 600 if self.smoke else 16384
        self.longest_limit = 1200 if self.smoke else 1 << 21  # the smoke: two probes
        self.longest_seconds = args.gpu_longest_seconds
        # The smoke compiles with dynamo alone (backend "eager"): it checks that the model
        # traces, not inductor's kernels, which need the GPU machine's compilers.
        self.compile = args.gpu_compile
        self.results = {"command": command, "smoke": self.smoke, "budget_seconds": self.budget,
                        "shape": self.shape, "environment": None, "training": [],
                        "decoding": [], "longest": [], "training_compiled": [],
                        "skipped": []}

    def skip(self, what: str) -> None:
        self.record("skipped", {"part": what, "reason": "skipped: time budget"})

    # -- helpers ------------------------------------------------------------------------------

    def autocast(self):
        import torch

        return torch.autocast(self.device.type, dtype=torch.bfloat16)

    def forward_only(self, impl: str) -> bool:
        """Whether a row's steps stop after the forward pass: the smoke's flex rows, as torch
        has no backward pass of flex attention on CPU (the rows then say ``forward_only``)."""
        return self.smoke and impl == "flex"

    def model(self, name: str, impl: str):
        import torch

        torch.manual_seed(0)
        return build(name, attention_impl=impl, **self.shape).to(self.device)

    def step(self, net, optimizer, batch):
        """One training step (forward, backward, Adam); returns the loss (detached). A model
        that :meth:`forward_only` stops runs the forward pass alone."""
        import torch

        if self.forward_only(net.config.attention_impl):
            with torch.no_grad(), self.autocast():
                return net(batch).loss.detach()
        with self.autocast():
            out = net(batch)
        out.loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return out.loss.detach()

    # -- (a) -------------------------------------------------------------------------------

    def environment(self) -> None:
        import platform

        import torch

        from wikisum.models import flexattention

        peak = float(os.environ.get("PEAK_BF16_TFLOPS", PEAK_BF16_TFLOPS))
        row = {"device": (torch.cuda.get_device_name(0) if self.device.type == "cuda"
                          else "cpu (smoke run)"),
               "torch": torch.__version__, "cuda": torch.version.cuda,
               "python": platform.python_version(), "flex_attention": flexattention.available(),
               "peak_bf16_tflops": peak,
               "peak_note": "assumed: H100/H200 SXM dense bf16 (989 TFLOP/s) unless "
                            "PEAK_BF16_TFLOPS is set",
               "autocast": "bf16", "timed_steps": self.steps, "warmup_steps": self.warmup}
        if self.device.type == "cuda":
            row["memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30,
                                      1)
        self.peak = peak
        self.record("environment", row)

    # -- (b) -------------------------------------------------------------------------------

    def training_row(self, name: str, impl: str, length: int, compiled: bool) -> dict:
        """Tokens/s, MFU and peak memory of training steps (forward, backward, Adam) at
        ``length``: ``warmup`` steps (compilation included), then ``steps`` timed ones."""
        import torch

        row = {"model": name, "attention_impl": impl, "length": length, "compiled": compiled}
        if self.forward_only(impl):
            row["forward_only"] = True
        self.reset_memory()
        model = optimizer = net = None
        try:
            model = self.model(name, impl).train()
            optimizer = self.adam(model)
            if compiled:
                net = torch.compile(model, backend="eager") if self.smoke else \
                    torch.compile(model)
            else:
                net = model
            batch = training_batch(length, self.shape["vocab_size"], self.device)
            self.reset_memory()
            t0 = time.perf_counter()
            losses = [self.step(net, optimizer, batch) for _ in range(self.warmup)]
            self.sync()
            t1 = time.perf_counter()
            for _ in range(self.steps):
                self.step(net, optimizer, batch)
            self.sync()
            seconds = (time.perf_counter() - t1) / self.steps
            flops = flops_per_token(model.config, length)
            tokens_per_s = length / seconds
            # Same seed, weights and batch in every row of a length: the first loss agrees
            # between T-DMCA's attention implementations (a check of the flex path in bf16).
            row.update(params=sum(p.numel() for p in model.parameters()),
                       first_loss=round(float(losses[0]), 5),
                       warmup_seconds=round(t1 - t0, 2), step_seconds=round(seconds, 4),
                       tokens_per_s=round(tokens_per_s), flops_per_token=flops["flops"],
                       macs_per_token=flops["macs"],
                       model_tflops=round(tokens_per_s * flops["flops"] / 1e12, 1),
                       mfu=round(tokens_per_s * flops["flops"] / (self.peak * 1e12), 4),
                       peak_mib=self.peak_mib())
        except Exception as exc:  # one row failing (OOM, a compile error) ends only that row
            row["error"] = describe_error(exc)
            traceback_to_stderr()
        finally:
            del model, optimizer, net
            self.reset_memory()
        return row

    def training(self, compiled: bool) -> None:
        section = "training_compiled" if compiled else "training"
        for length in self.lengths:
            for name, impl in GPU_ROWS:
                what = f"{section} {name} {impl} L={length}"
                if self.left() <= 0:
                    self.skip(what)
                    continue
                self.record(section, self.training_row(name, impl, length, compiled))

    # -- (c) -------------------------------------------------------------------------------

    def faster_dmca_impl(self) -> str:
        """Of T-DMCA's sdpa and flex rows, the faster at the longest length measured."""
        rows = [r for r in self.results["training"]
                if r["model"] == "t-dmca" and "tokens_per_s" in r]
        if not rows:
            return "flex"
        longest = max(r["length"] for r in rows)
        return max((r for r in rows if r["length"] == longest),
                   key=lambda r: r["tokens_per_s"])["attention_impl"]

    def longest(self) -> None:
        """The longest L (doubling from ``longest_start``) whose training step fits on the
        card, per model, until the first out-of-memory error or the model's time cap."""

        faster = self.faster_dmca_impl()
        # The smoke takes flex whatever was faster (eager flex is slow on CPU), to run it.
        for name, impl, why in (("t-d", "sdpa", "fused causal attention"),
                                ("t-dmca", "flex" if self.smoke else faster,
                                 f"faster in the training rows: {faster}")):
            if self.left() <= 0:
                self.skip(f"longest {name}")
                continue
            cap = min(self.longest_seconds, self.left())
            begin = time.perf_counter()
            row = {"model": name, "attention_impl": impl, "why": why,
                   "cap_seconds": round(cap, 1), "longest": 0, "probes": []}
            if self.forward_only(impl):
                row["forward_only"] = True
            stop = "search limit"
            self.reset_memory()
            try:
                model = self.model(name, impl).train()
                optimizer = self.adam(model)
            except Exception as exc:
                row["error"] = describe_error(exc)
                self.record("longest", row)
                continue
            length = self.longest_start
            while length <= self.longest_limit:
                if time.perf_counter() - begin > cap:
                    stop = "time cap"
                    break
                self.reset_memory()
                probe = {"length": length}
                try:
                    batch = training_batch(length, self.shape["vocab_size"], self.device)
                    t0 = time.perf_counter()
                    self.step(model, optimizer, batch)
                    self.sync()
                    probe.update(step_seconds=round(time.perf_counter() - t0, 3),
                                 peak_mib=self.peak_mib())
                except Exception as exc:
                    probe["error"] = describe_error(exc)
                    optimizer.zero_grad(set_to_none=True)
                    row["probes"].append(probe)
                    stop = "out of memory" if is_oom(exc) else "error"
                    if stop == "error":
                        traceback_to_stderr()
                    break
                row["probes"].append(probe)
                row.update(longest=length, peak_mib=probe["peak_mib"],
                           step_seconds=probe["step_seconds"])
                print(json.dumps({"section": "longest-probe", "model": name, **probe}),
                      flush=True)
                length *= 2
            row["stopped_by"] = stop
            row["capped"] = stop == "time cap"
            row["seconds"] = round(time.perf_counter() - begin, 1)
            del model, optimizer
            self.reset_memory()
            self.record("longest", row)

    # -- (d) -------------------------------------------------------------------------------

    def decoding_row(self, name: str, impl: str, bf16: bool) -> dict:
        """Cached beam search (beam 4) after a ``decode_prefix``-token input: the prefill
        (model.start) timed apart, after an untimed warm-up of both (compilation)."""
        import contextlib

        import torch

        from wikisum.generation.decoding import beam_search

        row = {"model": name, "attention_impl": impl, "prefix": self.decode_prefix, "beam": 4,
               "new_tokens": self.decode_tokens, "dtype": "bf16 autocast" if bf16 else "float32"}
        self.reset_memory()
        model = None
        try:
            model, _, batch = decoding_input(name, self.decode_prefix, self.device,
                                             attention_impl=impl, **self.shape)
            cast = self.autocast() if bf16 else contextlib.nullcontext()
            with torch.no_grad(), cast:
                model.start(batch)  # warm-up: compiled attention, kernels, allocator
                beam_search(model, batch, beam=4, max_len=4, min_len=3,
                            eos_id=model.config.eos_id)
                self.sync()
                t0 = time.perf_counter()
                model.start(batch)
                self.sync()
                prefill = time.perf_counter() - t0
                t0 = time.perf_counter()
                beam_search(model, batch, beam=4, max_len=self.decode_tokens,
                            min_len=self.decode_tokens - 1, eos_id=model.config.eos_id)
                self.sync()
                total = time.perf_counter() - t0
            steps = max(total - prefill, 1e-9)
            row.update(prefill_seconds=round(prefill, 3), search_seconds=round(total, 3),
                       cached_tokens_per_s=round(self.decode_tokens / steps, 1),
                       peak_mib=self.peak_mib())
        except Exception as exc:
            row["error"] = describe_error(exc)
            traceback_to_stderr()
        finally:
            del model
            self.reset_memory()
        return row

    def decoding(self) -> None:
        for name, impl in (("t-d", "sdpa"), ("t-dmca", "flex")):
            if self.left() <= 0:
                self.skip(f"decoding {name}")
                continue
            row = self.decoding_row(name, impl, bf16=True)
            if "error" in row and not is_oom_text(row["error"]):  # bf16 refused: float32
                self.record("decoding", row)
                row = self.decoding_row(name, impl, bf16=False)
            if "error" in row and impl == "flex":  # the flex prefill failed: sdpa
                self.record("decoding", row)
                row = self.decoding_row(name, "sdpa", bf16=True)
            self.record("decoding", row)

    def run(self) -> dict:

        prepare_torch(self.device)
        self.environment()
        self.training(compiled=False)
        self.decoding()
        self.longest()
        if self.compile:
            self.training(compiled=True)
        self.results["seconds"] = round(self.elapsed(), 1)
        self.write()
        print(f"written to {', '.join(map(str, self.paths))} ({self.elapsed():.0f} s)",
              flush=True)
        return self.results


def is_oom(exc: BaseException) -> bool:
    import torch

    return isinstance(exc, torch.OutOfMemoryError) or is_oom_text(str(exc))


def is_oom_text(text: str) -> bool:
    return "out of memory" in text.lower()


def describe_error(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:400]}"


def traceback_to_stderr() -> None:
    import traceback

    traceback.print_exc(file=sys.stderr)
    sys.stderr.flush()


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--child", nargs=2, metavar=("MODEL", "L"), help=argparse.SUPPRESS)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--quick", action="store_true", help="L up to 4k and a 1 GiB budget")
    p.add_argument("--budget-mb", type=float, default=4096,
                   help="memory budget for the longest-L search (default: %(default)s MiB)")
    p.add_argument("--timeout", type=float, default=600, help="per child process, seconds")
    p.add_argument("--gpu", action="store_true",
                   help="the CUDA figures instead: bf16 training tokens/s and MFU at L = 8,192 "
                        "and 11,000, cached beam-search decoding after 11,000 tokens, the "
                        "longest L on the card (bench/results/transformers_gpu.json, and "
                        "$OUT/transformers_gpu.json when OUT is set)")
    p.add_argument("--gpu-smoke", action="store_true",
                   help="the --gpu code path end to end on CPU at tiny sizes (L 600, 2 layers, "
                        "vocabulary 1,000, eager FlexAttention): checks that --gpu runs")
    p.add_argument("--gpu-compile", action="store_true",
                   help="--gpu also measures the training rows with torch.compile of the model "
                        "(last, within the time budget)")
    p.add_argument("--gpu-budget-seconds", type=float, default=330,
                   help="--gpu: parts not started within this many seconds are recorded as "
                        "skipped (default: %(default)s)")
    p.add_argument("--gpu-longest-seconds", type=float, default=60,
                   help="--gpu: time cap of each model's longest-L search (default: "
                        "%(default)s)")
    p.add_argument("--gpu-steps", type=int, default=5,
                   help="--gpu: timed training steps per row, after 3 warm-up steps "
                        "(at least 5; default: %(default)s)")
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
    elif args.gpu or args.gpu_smoke:
        GpuRun(args, results["command"]).run()
        return 0
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
