"""The log of a run: ``RUN/log.jsonl`` (and TensorBoard when it imports) on rank 0, and a
progress line on stderr."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

from wikisum.models.checkpoint import write_text_atomically


def _step_of(line: str) -> int | None:
    """The step of a log line; None for a line cut short when its process was killed."""
    try:
        return int(json.loads(line).get("step", 0))
    except (ValueError, AttributeError):
        return None


class RunLog:
    """RUN/log.jsonl (and TensorBoard) on rank 0, a progress line on stderr."""

    def __init__(self, run: Path, resume_step: int | None, active: bool, tensorboard: bool):
        self.active = active
        self.path = run / "log.jsonl"
        self.writer = None
        if not active:
            return
        kept = []
        if resume_step is not None and self.path.exists():
            # A killed run logged steps after its last checkpoint; they are run again now.
            kept = [line for line in self.path.read_text(encoding="utf-8").splitlines()
                    if _step_of(line) is not None and _step_of(line) <= resume_step]
        write_text_atomically(self.path, "".join(line + "\n" for line in kept))
        self.file = self.path.open("a", encoding="utf-8")
        if tensorboard:
            try:
                from torch.utils.tensorboard import SummaryWriter
            except ImportError:
                pass
            else:
                self.writer = SummaryWriter(str(run / "tensorboard"), purge_step=resume_step)

    def write(self, record: dict, progress: str | None = None) -> None:
        if not self.active:
            return
        self.file.write(json.dumps(record) + "\n")
        self.file.flush()
        if self.writer is not None and "step" in record:
            for key, value in record.items():
                if key != "step" and isinstance(value, int | float) and math.isfinite(value):
                    self.writer.add_scalar(key, value, record["step"])
        if progress:
            print(progress, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.active and not self.file.closed:
            self.file.close()
            if self.writer is not None:
                self.writer.close()
