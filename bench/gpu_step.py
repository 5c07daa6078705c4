"""Benchmark: where a T-D / T-DMCA training step's time goes on a GPU, and what the step's
options change.

    python bench/gpu_step.py --config configs/bench/gpu-step.yaml   # on a CUDA machine
    python bench/gpu_step.py --smoke                                 # the same code on CPU

Each row is one setting of a training step (forward, backward, Adam; bf16 autocast), given as
``MODEL key=value ...``:

- ``impl``: attention_impl (sdpa | flex | auto; default auto);
- ``L``: tokens per sequence (default 8192); ``batch``: sequences per step (default 1);
- ``compile``: no | default | reduce-overhead (torch.compile's mode; default no);
- ``fused``: 1 for Adam's fused kernel, 0 for its default (several launches per group of
  tensors); default 1 on CUDA;
- ``chunk``: MiB of float32 logits the loss holds at a time (default: models.losses');
- ``ckpt``: 1 for activation checkpointing per layer (default 0);
- ``profile``: 1 to run three more steps under torch.profiler (default 0).

For each row: warm-up steps (compilation included), then timed steps (each between two CUDA
events; the median is reported), tokens/s, model TFLOP/s and MFU by the FLOP model of
bench/transformers.py (``flops_per_token``), and peak memory. With ``profile=1`` also the GPU's
busy time (the sum of its kernels' times) against the step's time, and the kernel time by kind:
matrix products, attention, Triton kernels (what torch.compile generated), other element-wise
and reduction kernels, the optimizer, copies. For each model compiled, the graph breaks
(``torch._dynamo.explain`` at L = 1,024).

Results are printed as JSON lines and written whole after each row to
bench/results/gpu_step[-LABEL].json (and $OUT/gpu_step[-LABEL].json). ``--label`` names a run, so
that runs of two versions of the code (put first on PYTHONPATH) sit side by side.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import shlex
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.transformers import (  # noqa: E402
    PEAK_BF16_TFLOPS,
    SHAPES,
    SMOKE_SHAPE,
    DeviceRun,
    build,
    flops_per_token,
    prepare_torch,
    training_batch,
)

RESULTS = ROOT / "bench" / "results"
ROW_KEYS = {"impl": "auto", "L": 8192, "batch": 1, "compile": "no", "fused": None,
            "chunk": None, "ckpt": 0, "profile": 0}
COMPILE_MODES = ("no", "default", "reduce-overhead")


def parse_row(text: str) -> dict:
    """``"t-dmca impl=flex L=8192 compile=default"`` -> the row's settings (defaults filled)."""
    words = text.split()
    if not words or "=" in words[0]:
        raise argparse.ArgumentTypeError(f"row {text!r}: starts with the model (t-d, t-dmca)")
    row = {"model": words[0], **ROW_KEYS}
    for word in words[1:]:
        key, sep, value = word.partition("=")
        if not sep or key not in ROW_KEYS:
            raise argparse.ArgumentTypeError(
                f"row {text!r}: {word!r} is not KEY=VALUE with KEY one of {', '.join(ROW_KEYS)}")
        if key in ("impl", "compile"):
            row[key] = value
        else:
            try:
                row[key] = int(value)
            except ValueError:
                raise argparse.ArgumentTypeError(f"row {text!r}: {key} takes an integer, got "
                                                 f"{value!r}") from None
    if row["compile"] not in COMPILE_MODES:
        raise argparse.ArgumentTypeError(f"row {text!r}: compile is one of "
                                         f"{', '.join(COMPILE_MODES)}")
    if row["impl"] not in ("auto", "sdpa", "flex"):
        raise argparse.ArgumentTypeError(f"row {text!r}: impl is auto, sdpa or flex")
    for key, low in (("L", 2), ("batch", 1), ("chunk", 1)):
        if row[key] is not None and row[key] < low:
            raise argparse.ArgumentTypeError(f"row {text!r}: {key} must be at least {low}")
    for key in ("fused", "ckpt", "profile"):
        if row[key] not in (None, 0, 1):
            raise argparse.ArgumentTypeError(f"row {text!r}: {key} is 0 or 1")
    return row


# Operations of a compiled (Triton) kernel's name that only cast, copy or lay out data.
CAST_OPS = {"to", "copy", "t", "view", "unsafe", "clone", "transpose", "permute", "unsqueeze",
            "squeeze", "expand", "slice", "select", "as", "strided", "alias", "contiguous"}
MATMUL_MARKS = ("gemm", "cutlass", "xmma", "nvjet", "cublas", "wgmma", "sm90_", "splitk")


def kernel_kind(name: str) -> str:
    """A CUDA kernel's name -> the kind of work it does (for the profile's breakdown). A Triton
    kernel of torch.compile's is named after the operations it fuses: one whose operations all
    cast, copy or lay out data counts as a cast, any other as compiled work."""
    n = name.lower()
    if n.startswith("triton"):
        if "flex_attention" in n:
            return "attention"
        ops = {op for op in n.split("_fused_", 1)[-1].split("_") if op and not op.isdigit()}
        return "casts and copies" if ops and ops <= CAST_OPS else \
            "triton (compiled element-wise)"
    if "flash" in n or "fmha" in n or "attention" in n:
        return "attention"
    if any(mark in n for mark in MATMUL_MARKS):
        return "matrix products"
    if "adam" in n or "multi_tensor" in n:
        return "optimizer"
    if "memcpy" in n or "memset" in n or "copy" in n:
        return "casts and copies"
    if "conv" in n:
        return "convolution"
    if "reduce" in n or "softmax" in n or "layer_norm" in n or "layernorm" in n:
        return "reductions"
    return "other element-wise"


class StepRun(DeviceRun):
    """The rows of one run, their results written after each."""

    def __init__(self, args, command: str):
        smoke = args.smoke
        name = "gpu_step" + (f"-{args.label}" if args.label else "") + \
            ("-smoke" if smoke else "") + ".json"
        paths = [RESULTS / name]
        if os.environ.get("OUT") and not smoke:
            paths.append(Path(os.environ["OUT"]) / name)
        super().__init__(smoke, "gpu_step needs a CUDA device (--smoke runs the same code on "
                         "CPU)", args.budget_seconds, paths)
        self.shape = dict(SMOKE_SHAPE if self.smoke else SHAPES["base"])
        self.warmup, self.steps = (1, 2) if self.smoke else (args.warmup, args.steps)
        self.peak = float(os.environ.get("PEAK_BF16_TFLOPS", PEAK_BF16_TFLOPS))
        self.explained: set[tuple] = set()
        self.results = {"command": command, "label": args.label, "smoke": self.smoke,
                        "shape": self.shape, "environment": self.environment(),
                        "rows": [], "graph_breaks": [], "skipped": []}
        self.write()

    def environment(self) -> dict:
        import platform

        import torch

        import wikisum

        env = {"torch": torch.__version__, "cuda": torch.version.cuda,
               "python": platform.python_version(), "wikisum": str(Path(wikisum.__file__).parent),
               "peak_bf16_tflops": self.peak, "warmup_steps": self.warmup,
               "timed_steps": self.steps}
        if self.device.type == "cuda":
            env["device"] = torch.cuda.get_device_name(0)
        return env

    # -- one step ---------------------------------------------------------------------------

    def context(self, impl: str):
        """bf16 autocast; in the smoke, no gradients for a flex model: torch has no backward
        pass of flex attention on CPU, so the smoke's flex rows run the forward pass alone."""
        import torch

        stack = contextlib.ExitStack()
        stack.enter_context(torch.autocast(self.device.type, dtype=torch.bfloat16))
        if self.smoke and impl == "flex":
            stack.enter_context(torch.no_grad())
        return stack

    def step(self, net, optimizer, batch, graphs: bool):
        import torch

        if graphs:
            torch.compiler.cudagraph_mark_step_begin()
        with self.context(net.config.attention_impl):
            out = net(batch)
            if out.loss.requires_grad:  # (not in the smoke's flex rows)
                out.loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return out.loss.detach().clone()

    def batch(self, length: int, rows: int):
        """The same batch in every row of a length and size (a generator seeded by them)."""
        import torch

        gen = torch.Generator().manual_seed(length * 1000 + rows)
        return training_batch(length, self.shape["vocab_size"], self.device, rows, gen)

    @contextlib.contextmanager
    def loss_chunk(self, mib: int | None):
        """models.losses' chunk of logits set to ``mib`` MiB for the row (restored after)."""
        from wikisum.models import losses

        if mib is None:
            yield
            return
        original = losses.chunk_rows
        losses.chunk_rows = functools.partial(original, chunk_bytes=mib << 20)
        try:
            yield
        finally:
            losses.chunk_rows = original

    def reset(self) -> None:
        """DeviceRun's reset, and a fresh dynamo: each row compiles for its own shapes."""
        import torch._dynamo

        torch._dynamo.reset()
        self.reset_memory()

    def row(self, spec: dict) -> dict:
        import torch

        row = dict(spec)
        fused = spec["fused"] if spec["fused"] is not None else int(self.device.type == "cuda")
        row["fused"] = fused
        graphs = spec["compile"] == "reduce-overhead"
        self.reset()
        model = net = optimizer = None
        try:
            with self.loss_chunk(spec["chunk"]):
                torch.manual_seed(0)
                model = build(spec["model"], attention_impl=spec["impl"],
                              checkpoint_layers=bool(spec["ckpt"]), **self.shape)
                model = model.to(self.device).train()
                optimizer = self.adam(model, bool(fused))
                net = model
                if spec["compile"] != "no":
                    if self.smoke:  # dynamo alone: inductor's kernels need the GPU's compilers
                        net = torch.compile(model, backend="eager")
                    else:
                        net = torch.compile(model, mode=None if spec["compile"] == "default"
                                            else spec["compile"])
                    self.graph_breaks(spec, model)
                batch = self.batch(spec["L"], spec["batch"])
                t0 = time.perf_counter()
                losses = [self.step(net, optimizer, batch, graphs) for _ in range(self.warmup)]
                self.sync()
                row["warmup_seconds"] = round(time.perf_counter() - t0, 2)
                row["first_loss"] = round(float(losses[0]), 5)
                self.reset_peak()
                seconds = self.timed(net, optimizer, batch, graphs)
                tokens = spec["L"] * spec["batch"]
                flops = flops_per_token(model.config, spec["L"])["flops"]
                rate = tokens / seconds
                row.update(step_ms=round(seconds * 1e3, 2), tokens_per_s=round(rate),
                           model_tflops=round(rate * flops / 1e12, 1),
                           mfu=round(rate * flops / (self.peak * 1e12), 4),
                           peak_mib=self.peak_mib())
                if spec["profile"]:
                    row["breakdown"] = self.profile(net, optimizer, batch, graphs)
        except Exception as exc:  # a row failing (OOM, a compile error) ends that row only
            import traceback

            row["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}"
            traceback.print_exc(file=sys.stderr)
        finally:
            del model, net, optimizer
            self.reset()
        return row

    def timed(self, net, optimizer, batch, graphs: bool) -> float:
        """The median seconds of ``steps`` steps, each between two CUDA events (wall clock on
        CPU)."""
        import torch

        times = []
        for _ in range(self.steps):
            if self.device.type == "cuda":
                begin, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
                begin.record()
                self.step(net, optimizer, batch, graphs)
                end.record()
                end.synchronize()
                times.append(begin.elapsed_time(end) / 1e3)
            else:
                t0 = time.perf_counter()
                self.step(net, optimizer, batch, graphs)
                times.append(time.perf_counter() - t0)
        return statistics.median(times)

    def profile(self, net, optimizer, batch, graphs: bool, steps: int = 3) -> dict:
        """Three steps under torch.profiler: the wall time a step, the GPU's busy time a step
        (its kernels' times summed), that time by kind of kernel, and the ten costliest
        kernels."""
        import torch
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU]
        if self.device.type == "cuda":
            activities.append(ProfilerActivity.CUDA)
        self.sync()
        with profile(activities=activities) as prof:
            t0 = time.perf_counter()
            for _ in range(steps):
                self.step(net, optimizer, batch, graphs)
            self.sync()
            wall = (time.perf_counter() - t0) / steps
        kinds: dict[str, float] = {}
        kernels = []
        launches = 0
        for event in prof.key_averages():
            if getattr(event, "device_type", None) != torch.autograd.DeviceType.CUDA:
                continue
            if getattr(event, "is_user_annotation", False):  # a span (Optimizer.step), no kernel
                continue
            us = getattr(event, "self_device_time_total", 0.0) or 0.0
            if us <= 0:
                continue
            launches += event.count
            kind = kernel_kind(event.key)
            kinds[kind] = kinds.get(kind, 0.0) + us
            kernels.append((us, event.count, event.key))
        busy = sum(kinds.values()) / steps / 1e3  # ms a step
        kernels.sort(reverse=True)
        return {"wall_ms": round(wall * 1e3, 2), "gpu_busy_ms": round(busy, 2),
                "gpu_busy_share": round(busy / (wall * 1e3), 3) if wall else None,
                "kernels_per_step": round(launches / steps),
                "ms_by_kind": {k: round(v / steps / 1e3, 3)
                               for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])},
                "top_kernels": [{"ms": round(us / steps / 1e3, 3), "calls": count // steps,
                                 "name": name[:160]} for us, count, name in kernels[:12]]}

    def graph_breaks(self, spec: dict, model) -> None:
        """The graph breaks of ``model`` under torch.compile (once per model and impl)."""
        import torch

        key = (spec["model"], spec["impl"], spec["ckpt"])
        if key in self.explained:
            return
        self.explained.add(key)
        found = {"model": spec["model"], "impl": spec["impl"], "ckpt": spec["ckpt"]}
        try:
            with self.context(spec["impl"]):
                explained = torch._dynamo.explain(model)(self.batch(min(1024, spec["L"]), 1))
            found.update(graphs=explained.graph_count, breaks=explained.graph_break_count,
                         reasons=sorted({r.reason.splitlines()[0][:160]
                                         for r in explained.break_reasons}))
        except Exception as exc:
            found["error"] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
        finally:
            torch._dynamo.reset()
        self.record("graph_breaks", found)

    def run(self, rows: list[dict]) -> None:
        prepare_torch(self.device)
        for spec in rows:
            if self.left() < 0:
                self.record("skipped", {**spec, "reason": "time budget"})
                continue
            self.record("rows", self.row(spec))
        self.table()

    def table(self) -> None:
        print(f"{'row':58} {'step ms':>8} {'tok/s':>9} {'MFU':>6} {'MiB':>7} {'busy':>5}")
        for r in self.results["rows"]:
            name = " ".join([r["model"], r["impl"], f"L={r['L']}", f"b={r['batch']}",
                             f"c={r['compile']}", f"fused={r['fused']}",
                             f"chunk={r['chunk']}", f"ckpt={r['ckpt']}"])
            if "error" in r:
                print(f"{name:58} {r['error'][:60]}")
                continue
            busy = r.get("breakdown", {}).get("gpu_busy_share", "")
            print(f"{name:58} {r['step_ms']:>8} {r['tokens_per_s']:>9} {r['mfu']:>6} "
                  f"{r['peak_mib'] or '':>7} {busy:>5}", flush=True)


SMOKE_ROWS = ("t-dmca impl=flex L=600 compile=default profile=1",
              "t-d impl=sdpa L=600 batch=2 chunk=1 ckpt=1")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", nargs="+", default=None, metavar="ROW",
                   help="the rows, each 'MODEL key=value ...' (above)")
    p.add_argument("--smoke", action="store_true",
                   help="the same code on CPU at tiny sizes, on its own two rows")
    p.add_argument("--label", default="", help="names the results file (gpu_step-LABEL.json)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps a row (default 3)")
    p.add_argument("--steps", type=int, default=10, help="timed steps a row (default 10)")
    p.add_argument("--budget-seconds", type=float, default=300,
                   help="rows not started within this many seconds are recorded as skipped")
    from bench import options

    args = options.parse(p, argv)
    rows = list(SMOKE_ROWS) if args.smoke else args.rows
    if not rows:
        p.error("--rows is needed (or --config FILE, or --smoke)")
    try:
        rows = [parse_row(r) for r in rows]
    except argparse.ArgumentTypeError as exc:
        p.error(str(exc))
    command = ["python", "bench/gpu_step.py", *(sys.argv[1:] if argv is None else argv)]
    StepRun(args, shlex.join(command)).run(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
