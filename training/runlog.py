"""The log of a run, on rank 0: ``RUN/log.jsonl`` always, and TensorBoard (``RUN/tensorboard``)
and Weights & Biases where ``log_to`` asks for them; both are optional extras
(``pip install 'wikisum[tensorboard]'``, ``'wikisum[wandb]'``), and asking for one that is not
installed is an error before training starts.

Weights & Biases reads its usual environment (``WANDB_PROJECT``, default ``wikisum``;
``WANDB_ENTITY``; ``WANDB_MODE=offline``); the wandb run id is kept in ``RUN/wandb.json`` so a
resumed run goes on logging to the same wandb run.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from wikisum.core.files import write_text_atomically
from wikisum.training.config import ConfigError

# Log target -> (module that must import, the extra that installs it).
OPTIONAL_TARGETS = {"tensorboard": ("tensorboard", "tensorboard"), "wandb": ("wandb", "wandb")}


def check_log_targets(log_to: tuple[str, ...]) -> None:
    """Raise :class:`ConfigError` for a log target whose package is not installed."""
    for target in log_to:
        if target not in OPTIONAL_TARGETS:
            continue
        module, extra = OPTIONAL_TARGETS[target]
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise ConfigError(f"--log-to {target} needs the {module} package, which is not "
                              f"installed: pip install 'wikisum[{extra}]' (or pip install "
                              f"{module}), or leave {target} out of --log-to")


def _step_of(line: str) -> int | None:
    """The step of a log line; None for a line cut short when its process was killed."""
    try:
        return int(json.loads(line).get("step", 0))
    except (ValueError, AttributeError):
        return None


def _scalars(record: dict) -> dict[str, float]:
    return {k: v for k, v in record.items() if k != "step" and not isinstance(v, bool)
            and isinstance(v, int | float) and math.isfinite(v)}


class RunLog:
    """RUN/log.jsonl (and TensorBoard, wandb) on rank 0; nothing on the other ranks.

    Args:
        run: the run directory.
        resume_step: the step a resumed run goes on from (its later log lines are dropped: they
            are run again), or None for a new run.
        active: whether this process writes (rank 0).
        log_to: log targets (jsonl is always written).
        settings: the run's settings, for wandb's run config.
    """

    def __init__(self, run: Path, resume_step: int | None, active: bool,
                 log_to: tuple[str, ...] = ("jsonl",), settings: dict[str, Any] | None = None):
        self.active = active
        self.path = run / "log.jsonl"
        self.writer = None
        self.wandb = None
        if not active:
            return
        check_log_targets(log_to)
        kept = []
        if resume_step is not None and self.path.exists():
            # A killed run logged steps after its last checkpoint; they are run again now.
            kept = [line for line in self.path.read_text(encoding="utf-8").splitlines()
                    if _step_of(line) is not None and _step_of(line) <= resume_step]
        write_text_atomically(self.path, "".join(line + "\n" for line in kept))
        self.file = self.path.open("a", encoding="utf-8")
        if "tensorboard" in log_to:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(run / "tensorboard"), purge_step=resume_step)
        if "wandb" in log_to:
            self.wandb = _start_wandb(run, settings or {})

    def write(self, record: dict, progress: str | None = None) -> None:
        if not self.active:
            return
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        if "step" in record:
            scalars = _scalars(record)
            if self.writer is not None:
                for key, value in scalars.items():
                    self.writer.add_scalar(key, value, record["step"])
            if self.wandb is not None and scalars:
                self.wandb.log(scalars, step=int(record["step"]))
        if progress:
            print(progress, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.active and not self.file.closed:
            self.file.close()
            if self.writer is not None:
                self.writer.close()
            if self.wandb is not None:
                self.wandb.finish()


def _start_wandb(run: Path, settings: dict[str, Any]):
    import wandb

    state = run / "wandb.json"
    try:
        run_id = json.loads(state.read_text(encoding="utf-8"))["id"]
    except (OSError, ValueError, KeyError, TypeError):
        run_id = uuid.uuid4().hex[:12]
        write_text_atomically(state, json.dumps({"id": run_id}) + "\n")
    return wandb.init(project=os.environ.get("WANDB_PROJECT", "wikisum"), id=run_id,
                      resume="allow", name=run.resolve().name, dir=str(run),
                      config=settings)
