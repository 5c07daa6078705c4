"""Processes and devices of a run: this process's rank, the world size and its device; joins
the process group under ``torchrun`` (NCCL on GPUs, gloo on CPUs)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist

from wikisum.training.config import ConfigError


@dataclass(frozen=True)
class Processes:
    rank: int = 0
    world: int = 1
    device: torch.device = torch.device("cpu")
    started_group: bool = False  # this run initialised the process group (and destroys it)

    @property
    def main(self) -> bool:
        return self.rank == 0

    def all_sum(self, values: list[float]) -> list[float]:
        tensor = torch.tensor(values, dtype=torch.float64, device=self.device)
        if self.world > 1:
            dist.all_reduce(tensor)
        return tensor.tolist()

    def gather(self, obj: Any) -> list[Any]:
        if self.world == 1:
            return [obj]
        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, obj)
        return out


def resolve_device(name: str, local_rank: int = 0) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(name)
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"device {name!r}: CUDA is not available here")
        if device.index is None:
            device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    return device


def processes(device_name: str) -> Processes:
    """This process's rank, world size and device; joins the process group under torchrun."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = resolve_device(device_name, local_rank)
    if world <= 1:
        return Processes(device=device)
    started = not dist.is_initialized()
    if started:
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return Processes(dist.get_rank(), dist.get_world_size(), device, started)
