"""Facts about the machine a benchmark ran on, shared by the scripts in bench/."""

from __future__ import annotations

import os


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo, or "" where there is none."""
    try:
        with open("/proc/cpuinfo") as f:
            return next((line.split(":", 1)[1].strip() for line in f
                         if line.startswith("model name")), "")
    except OSError:
        return ""


def command_line(argv: list[str] | None) -> str:
    """The command a benchmark ran as: its script name and arguments."""
    import sys
    from pathlib import Path

    return " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])])


def describe(cores_used: int | None = None) -> dict:
    """The machine's CPU, Python and platform, for a results file."""
    import platform

    facts = {"cpu": cpu_model(), "python": platform.python_version(),
             "platform": platform.platform()}
    if cores_used is not None:
        facts["cores_used"] = cores_used
    return facts


def write_results(path, result: dict) -> None:
    """Writes a benchmark's results as JSON (folders made as needed) and says where."""
    import json
    from pathlib import Path

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\nwrote {path}")


def process_children(pid: int) -> list[int]:
    """The direct children of a process, from /proc (Linux); [] once it is gone."""
    kids: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids.extend(int(x) for x in f.read().split())
        except OSError:
            pass
    return kids


def rss_and_hwm(pid: int) -> tuple[int, int]:
    """Resident set and its high-water mark (VmRSS, VmHWM), in bytes; zeros once the process
    is gone."""
    rss = hwm = 0
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    hwm = int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return rss, hwm
