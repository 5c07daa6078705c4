"""Facts about the machine a benchmark ran on, shared by the scripts in bench/."""

from __future__ import annotations


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, or "" where there is none."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name")), "")
    except OSError:
        return ""
