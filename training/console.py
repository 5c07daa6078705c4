"""What a training run prints: the start line (what trains, where, for how long), the data line,
the time estimate after the first updates, and the summary line at the end."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from wikisum.training import datastats
from wikisum.training.config import TrainConfig

if TYPE_CHECKING:
    import torch


def start_line(config: TrainConfig, chosen: dict[str, str], *, name: str, parameters: int,
               device: torch.device, world: int, step: int, resumed: bool, end: int) -> str:
    """What trains (``chosen``: the automatic settings and how they were chosen), where, and
    for how long: from ``step`` (a resumed run's) to ``end``."""
    c = config
    preset = c.preset + (f" ({chosen['preset']}; --preset to choose)" if "preset" in chosen
                         else "")
    warmup = f"warmup {c.warmup_steps:,}" + (
        f" ({chosen['warmup_steps']})" if "warmup_steps" in chosen else "")
    what = f"resuming at step {step:,}" if resumed else "starting"
    return (f"train: {name} preset {preset}, {parameters:,} parameters on {device}"
            + (f" x{world}" if world > 1 else "")
            + f"; {what}, {end - step:,} updates to step {end:,} of {c.steps:,}; {warmup}, "
            f"lr {c.lr:g}, batch {c.batch_tokens:,} tokens x{c.accumulate}")


def data_line(config: TrainConfig, run_dir: Path) -> str:
    """What the model learns from what, and how many training targets are over the length
    limit (skipped or cut), from RUN/data_stats.json."""
    c = config
    limit, policy = c.target_limit()
    source = ("the title alone" if c.inputs == "title" else
              f"{c.extractor} on {c.corpus}, L = {c.max_input_tokens:,}")
    line = f"train: data: {c.target} targets from {source}"
    if limit is None:
        return line + "; targets whole (no max_target_tokens)"
    over = (datastats.read(run_dir) or {}).get("over_limit")
    action = ("skipped in training" if policy == "skip" else "cut to that length")
    line += f"; max_target_tokens {limit:,}"
    if over:
        line += (f": {over['examples']:,} of {over['of']:,} train targets longer "
                 f"({100 * over['share']:.1f}%), {action}")
    else:
        line += f": longer targets {action}"
    return line + f"; dev perplexity over targets cut to {limit:,}"


def estimate_line(seconds: float, tokens: float, updates: int, left: int) -> str:
    """'measured ...: about T for the N updates left' from this invocation's first
    ``updates`` (dev evaluations and checkpoints come on top)."""
    from wikisum.core.progress import format_seconds

    per_update = seconds / max(updates, 1)
    return (f"train: {per_update:.2f} s/update, {tokens / max(seconds, 1e-9):,.0f} tokens/s "
            f"over the first {updates} updates: about {format_seconds(per_update * left)} "
            f"for the {left:,} left (evaluations and checkpoints not counted)")


def summary_line(summary: dict) -> str:
    """One line for the console."""
    dev = summary["dev"]
    parts = [f"train: {summary['model']} step {summary['step']}/{summary['steps']}"]
    if summary["resumed_from"] is not None:
        parts.append(f"(resumed from {summary['resumed_from']})")
    if summary["loss"] is not None:
        parts.append(f"loss {summary['loss']:.4f}")
    if dev:
        parts.append(f"dev ppl {dev['dev_ppl']:.3f}")
    skipped = {k: v for k, v in summary["skipped"].items() if v}
    if skipped:
        parts.append("skipped " + ", ".join(f"{v} {k}" for k, v in skipped.items()))
    parts.append(f"-> {summary['checkpoint']}")
    early = summary.get("early_stopping")
    if early and early["best_step"] is not None:
        parts.append(f"({'stopped early; ' if early['stopped'] else ''}best dev ppl "
                     f"{early['best_dev_ppl']:.3f} at step {early['best_step']} -> "
                     f"{early['best_checkpoint']}, which decode uses)")
    return " ".join(parts)
