"""Benchmark: whole-article decoding (Liu et al. 2018, Sec. 6) with T-DMCA's cached step: the
cost of a beam-search step at output positions 100, 1,000 and 2,000 after a 6,000-token prefix,
the prefill, and peak memory.

    python bench/long_decode.py --config configs/bench/long-decode.yaml   # the paper's setting
    python bench/long_decode.py --quick                 # a 600-token prefix, 300 steps: a smoke run

T-DMCA at the base width (d 512, 8 heads, d_ff 2,048, vocabulary 32,000, 5 layers local,
compressed, local, compressed, local, blocks of 256, kernel and stride 3) with random weights:
a step's cost does not depend on what the weights say. One row: ``model.start`` prefills its
``source <sep>`` (the prefix), the first ``model.reorder`` expands it to ``beam`` hypotheses, and
every step then does what beam search asks of the model: ``reorder`` to the chosen parents and
``step`` with their tokens, the parents and tokens being the ``beam`` best of the (beam x V)
log-probabilities with </s> masked (so the output never ends). Each step is timed alone, and
inside it the attention of the local and of the compressed layers and the reorder; the figures
are means over ``--window`` steps centred on each ``--positions`` entry. The load of a shared
machine drifts over a long decode, so the windows are then measured a second time taking their
steps in turn (one at position 100, one at 1,000, one at 2,000, ...), each from a state with the
same caches as decoding there (a prefill of ``prefix + position`` tokens): a step's growth with
the output length is read from that second measurement.

Reported: hypothesis-steps/s (tokens/s: beam tokens per step) and steps/s per window, the
prefill's seconds, the process's peak resident memory (after the model is built, after the
prefill, at the end of the decode, before the second measurement) and, on CUDA,
``torch.cuda.max_memory_allocated``; the caches' own bytes at the end beside
``generation.decode.search_bytes``' estimate; and the growth of a step's cost from the first to
the last window split into what the compressed layers and the reorder add (their slots grow by
one every ``stride`` positions) and the rest. Printed and written to
bench/results/long_decode.json (``--quick``: long_decode-quick.json).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import resource
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

RESULTS = ROOT / "bench" / "results" / "long_decode.json"
RESULTS_QUICK = ROOT / "bench" / "results" / "long_decode-quick.json"
SHAPE = dict(d_model=512, n_heads=8, n_layers=5, d_ff=2048, vocab_size=32000, block_size=256,
             dropout=0.0)
QUICK = dict(prefix=600, output=300, positions=[50, 150, 250], window=20)


def mib(n_bytes: float) -> float:
    return round(n_bytes / 2**20, 1)


def peak_rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # Linux: KiB


def build(device):
    """T-DMCA base (random weights, eval mode) on ``device``."""
    import torch

    from wikisum import models
    from wikisum.models.transformer import dmca_kinds

    torch.manual_seed(0)
    model = models.build("t-dmca", "base", layer_kinds=dmca_kinds(SHAPE["n_layers"]), **SHAPE)
    return model.to(device).eval()


class Clock:
    """Seconds spent in each timed part of the current step, synchronising CUDA around each."""

    def __init__(self, device):
        import torch

        self.device = device
        self.sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        self.parts: dict[str, float] = {}

    def wrap(self, part: str, fn):
        @functools.wraps(fn)
        def timed(*args, **kwargs):
            self.sync()
            start = time.perf_counter()
            out = fn(*args, **kwargs)
            self.sync()
            self.parts[part] = self.parts.get(part, 0.0) + time.perf_counter() - start
            return out
        return timed


def cache_bytes(state) -> int:
    """Bytes of every tensor the decoding state's layer caches hold."""
    total = 0
    for cache in state.caches:
        for t in (cache.attn.k, cache.attn.v, cache.attn.k_slots, cache.attn.v_slots,
                  cache.cross_k, cache.cross_v):
            if t is not None:
                total += t.numel() * t.element_size()
    return total


def beam_choice(logprobs, beam: int, eos_id: int):
    """The ``beam`` best (parent, token) pairs over all hypotheses' next tokens, </s> masked:
    the parents (beam,) and tokens (beam,)."""
    import torch

    scores = logprobs.clone()
    scores[:, eos_id] = float("-inf")
    best = scores.view(-1).topk(beam).indices  # (beam,)
    vocab = logprobs.shape[1]
    parents, tokens = best // vocab, best % vocab
    order = torch.argsort(parents)  # beam search keeps its slots in parent order
    return parents[order], tokens[order]


def beam_step(model, state, logprobs, beam: int, clock: Clock):
    """One step as beam search takes it: choose, ``reorder``, ``step``. Returns the new
    log-probabilities, the new state and the step's timings (seconds, and its parts)."""
    clock.parts = {}
    clock.sync()
    start = time.perf_counter()
    parents, tokens = beam_choice(logprobs, beam, model.config.eos_id)
    state = clock.wrap("reorder", model.reorder)(state, parents)
    logprobs, state = model.step(state, tokens)
    clock.sync()
    return logprobs, state, {"seconds": time.perf_counter() - start, **clock.parts}


def random_batch(model, tokens: int, seed: int):
    """A one-row batch whose source is ``tokens`` random ids, on the model's device."""
    import torch

    from wikisum.models.base import make_batch

    gen = torch.Generator().manual_seed(seed)
    source = torch.randint(6, model.config.vocab_size, (tokens,), generator=gen).tolist()
    return make_batch([source], [[model.config.eos_id]]).to(next(model.parameters()).device)


def instrument(model, device) -> Clock:
    """A clock timing each layer's attention step by kind ("local", "compressed")."""
    clock = Clock(device)
    for block in model.blocks:
        block.attn.step = clock.wrap(block.attn.kind, block.attn.step)
    return clock


def decode(model, clock: Clock, prefix: int, output: int, beam: int) -> dict:
    """Prefill ``prefix`` tokens, then ``output`` timed beam-search steps: the prefill's
    seconds, every step's timings, and the memory figures."""
    import torch

    from bench.machine import rss_and_hwm

    after_build = rss_and_hwm(os.getpid())[1]
    batch = random_batch(model, prefix, seed=0)
    with torch.no_grad():
        clock.sync()
        start = time.perf_counter()
        state = model.start(batch)
        clock.sync()
        prefill = time.perf_counter() - start
        after_prefill = rss_and_hwm(os.getpid())[1]
        logprobs = state.first_logprobs  # (1, V)
        steps = []
        for _ in range(output):
            logprobs, state, record = beam_step(model, state, logprobs, beam, clock)
            steps.append(record)
        final_cache = cache_bytes(state)
    memory = {"hwm_after_build_mib": mib(after_build),
              "hwm_after_prefill_mib": mib(after_prefill), "peak_rss_mib": peak_rss_mib(),
              "caches_at_end_mib": mib(final_cache)}
    if clock.device.type == "cuda":
        memory["cuda_max_allocated_mib"] = mib(torch.cuda.max_memory_allocated(clock.device))
    return {"prefill_seconds": round(prefill, 2),
            "prefill_tokens_per_s": round((prefix + 1) / prefill), "steps": steps,
            "memory": memory}


def interleaved(model, clock: Clock, prefix: int, spans: list[tuple[int, int]], beam: int
                ) -> list[list[dict]]:
    """The steps of every span (first, last output position) taken in turn, one of each at a
    time, so that a change in the machine's load falls on every position alike. The state
    before a span's first step is made by prefilling ``prefix + first - 2`` tokens and taking
    one untimed step (the beam's expansion): the same caches, slots included, as decoding
    there. Returns each span's step timings."""
    import torch

    entries = []
    with torch.no_grad():
        for first, _ in spans:
            state = model.start(random_batch(model, prefix + first - 2, seed=first))
            logprobs, state, _ = beam_step(model, state, state.first_logprobs, beam, clock)
            entries.append([logprobs, state])
        timings: list[list[dict]] = [[] for _ in spans]
        for i in range(max(last - first + 1 for first, last in spans)):
            for k, (first, last) in enumerate(spans):
                if first + i <= last:
                    logprobs, state = entries[k]
                    logprobs, state, record = beam_step(model, state, logprobs, beam, clock)
                    entries[k] = [logprobs, state]
                    timings[k].append(record)
    return timings


def span(centre: int, width: int, output: int) -> tuple[int, int]:
    """The first and last output positions of the ``width`` steps centred on ``centre``,
    within 1 .. ``output``."""
    first = max(1, centre - width // 2)
    return first, min(output, first + width - 1)


def window_figures(steps: list[dict], first: int, centre: int, beam: int, slots: int
                   ) -> dict:
    """Means over ``steps`` (the timings of output positions ``first`` on) around output
    position ``centre``, where the compressed layers hold ``slots`` slots."""
    n = len(steps)

    def mean_ms(key):
        return round(1000 * sum(s.get(key, 0.0) for s in steps) / n, 2)

    step_ms = mean_ms("seconds")
    parts = {k: mean_ms(k) for k in ("local", "compressed", "reorder")}
    return {"output_position": centre, "steps": [first, first + n - 1], "step_ms": step_ms,
            "steps_per_s": round(1000 / step_ms, 2),
            "tokens_per_s": round(beam * 1000 / step_ms, 1),
            "local_attention_ms": parts["local"], "compressed_attention_ms": parts["compressed"],
            "reorder_ms": parts["reorder"],
            "rest_ms": round(step_ms - sum(parts.values()), 2), "compressed_slots": slots}


def growth(first: dict, last: dict) -> dict:
    """How a step's cost changes from the first window to the last, and what of it the
    compressed layers (their attention over more slots) and the reorder (which copies the
    slots) account for."""
    def delta(key):
        return round(last[key] - first[key], 2)

    total = delta("step_ms")
    slots = delta("compressed_attention_ms") + delta("reorder_ms")
    return {"from": first["output_position"], "to": last["output_position"],
            "step_ms": total, "step_ratio": round(last["step_ms"] / first["step_ms"], 3),
            "compressed_attention_ms": delta("compressed_attention_ms"),
            "reorder_ms": delta("reorder_ms"), "local_attention_ms": delta("local_attention_ms"),
            "rest_ms": delta("rest_ms"), "slots_added": last["compressed_slots"]
            - first["compressed_slots"],
            "share_from_slots": round(slots / total, 2) if total > 0 else None}


def report(title: str, windows: list[dict], change: dict) -> None:
    print(f"{title}:")
    print(f"{'position':>8} {'step ms':>8} {'steps/s':>8} {'tokens/s':>9} {'local':>7} "
          f"{'compr.':>7} {'reorder':>8} {'rest':>7} {'slots':>6}")
    for w in windows:
        print(f"{w['output_position']:>8} {w['step_ms']:>8} {w['steps_per_s']:>8} "
              f"{w['tokens_per_s']:>9} {w['local_attention_ms']:>7} "
              f"{w['compressed_attention_ms']:>7} {w['reorder_ms']:>8} {w['rest_ms']:>7} "
              f"{w['compressed_slots']:>6}")
    g = change
    print(f"step {g['from']} -> {g['to']}: {g['step_ms']:+} ms (x{g['step_ratio']}); compressed "
          f"attention {g['compressed_attention_ms']:+} ms, reorder {g['reorder_ms']:+} ms, "
          f"local attention {g['local_attention_ms']:+} ms, rest {g['rest_ms']:+} ms "
          f"({g['slots_added']} slots added)")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--prefix", type=int, default=6000,
                   help="source tokens before <sep> (default: %(default)s)")
    p.add_argument("--output", type=int, default=2048,
                   help="beam-search steps after the prefix (default: %(default)s)")
    p.add_argument("--beam", type=int, default=4, help="hypotheses (default: %(default)s)")
    p.add_argument("--positions", type=int, nargs="+", default=[100, 1000, 2000],
                   metavar="N", help="output positions whose steps are reported (default: "
                                     "%(default)s)")
    p.add_argument("--window", type=int, default=50,
                   help="steps averaged around each position (default: %(default)s)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--device", default="cpu", help="cpu or cuda (default: %(default)s)")
    p.add_argument("--omp-wait-policy", choices=("active", "passive"), default=None,
                   help="OMP_WAIT_POLICY for torch's threads (default: the environment's). "
                        "On a machine whose cores other processes share, threads that spin "
                        "while waiting made a 2-thread step four times slower than 1 thread; "
                        "passive waiting removes that")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run: prefix 600, 300 steps, positions 50, 150, 250, window 20")
    p.add_argument("--out", type=Path, default=None,
                   help="results file (default: bench/results/long_decode.json, or "
                        "long_decode-quick.json with --quick)")
    from bench import options

    args = options.parse(p, argv)
    if args.quick:
        for key, value in QUICK.items():
            setattr(args, key, value)
    if args.output < max(args.positions):
        p.error(f"--output {args.output} is short of position {max(args.positions)}")

    if args.omp_wait_policy:  # read when torch starts its thread pool: set before the import
        os.environ["OMP_WAIT_POLICY"] = args.omp_wait_policy.upper()
    import torch

    from bench.machine import describe
    from wikisum.generation.decode import search_bytes
    from wikisum.models.attention import slot_count

    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(device)
    model = build(device)
    config = model.config
    clock = instrument(model, device)
    run = decode(model, clock, args.prefix, args.output, args.beam)
    spans = [span(c, args.window, args.output) for c in args.positions]
    kernel, stride = config.compress_kernel, config.compress_stride

    def slots(centre):
        return slot_count(args.prefix + 1 + centre, kernel, stride)

    sequential = [window_figures(run["steps"][first - 1:last], first, c, args.beam, slots(c))
                  for c, (first, last) in zip(args.positions, spans, strict=True)]
    turns = interleaved(model, clock, args.prefix, spans, args.beam)
    alternating = [window_figures(t, first, c, args.beam, slots(c))
                   for c, (first, _), t in zip(args.positions, spans, turns, strict=True)]
    command = ["python", "bench/long_decode.py", *(sys.argv[1:] if argv is None else argv)]
    results = {
        "command": shlex.join(command), "machine": describe(args.threads),
        "load_average_1min": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "(unset)"),
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "torch": torch.__version__, "weights": "random (seed 0)",
        "model": {"name": "t-dmca", **SHAPE, "layer_kinds": config.layer_kinds,
                  "compress_kernel": kernel, "compress_stride": stride},
        "prefix": args.prefix, "output": args.output, "beam": args.beam,
        "window": args.window, "prefill_seconds": run["prefill_seconds"],
        "prefill_tokens_per_s": run["prefill_tokens_per_s"],
        "windows": sequential, "growth": growth(sequential[0], sequential[-1]),
        "windows_interleaved": alternating,
        "growth_interleaved": growth(alternating[0], alternating[-1]),
        "memory": run["memory"],
        "search_bytes_estimate_mib": mib(search_bytes(config, args.beam, 1, args.output,
                                                      args.prefix)),
        "step_ms_all": [round(1000 * s["seconds"], 2) for s in run["steps"]],
    }
    print(f"T-DMCA base, random weights, beam {args.beam}, prefix {args.prefix}, "
          f"{args.output} steps, {args.threads} threads on {results['device']} (load "
          f"{results['load_average_1min'][0]} before, {results['load_average_1min'][1]} after)")
    print(f"prefill: {run['prefill_seconds']} s ({run['prefill_tokens_per_s']} tokens/s)")
    report("one decode, windows in order", sequential, results["growth"])
    report("windows' steps taken in turn", alternating, results["growth_interleaved"])
    print(f"memory (MiB): {json.dumps(run['memory'])}; search_bytes estimate "
          f"{results['search_bytes_estimate_mib']} MiB")
    out = args.out or (RESULTS_QUICK if args.quick else RESULTS)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
