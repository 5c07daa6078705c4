"""configs/: every file names the command that runs it, and that command accepts every key."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
# Benchmark and experiment settings (configs/train/ holds `wikisum train --config` files, checked
# by tests/models/test_train_configs.py).
CONFIGS = sorted((ROOT / "configs" / "bench").rglob("*.yaml"))


def header_command(path: Path) -> list[str]:
    lines = [line for line in path.read_text().splitlines() if line.startswith("# command:")]
    assert len(lines) == 1, f"{path}: one '# command:' line in the header"
    return shlex.split(lines[0].removeprefix("# command:"))


def show_config(script: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, script, *args, "--show-config"], cwd=ROOT,
                          capture_output=True, text=True, check=False)


def test_there_are_configs():
    assert len(CONFIGS) >= 4


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(ROOT)))
def test_config_runs_with_the_command_in_its_header(path):
    command = header_command(path)
    assert command[0].endswith("python")
    assert command[1].startswith(("bench/", "experiments/"))
    rel = str(path.relative_to(ROOT))
    assert command[command.index("--config") + 1] == rel
    done = show_config(*command[1:])
    assert done.returncode == 0, done.stderr
    resolved = json.loads(done.stdout)
    for key, value in yaml.safe_load(path.read_text()).items():
        assert resolved[key.replace("-", "_")] == value, key


def test_command_line_overrides_the_config():
    done = show_config("bench/transformers.py", "--config", "configs/bench/transformers.yaml",
                       "--timeout", "7")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["timeout"] == 7 and json.loads(done.stdout)["budget_mb"] == 2048


def test_a_value_outside_the_choices_is_an_error(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("models: [SEQ2SEQ, NOPE]\n")
    done = show_config("experiments/headlines/run.py", "--config", str(bad))
    assert done.returncode == 2 and "models: 'NOPE' is not one of" in done.stderr


def test_unknown_key_is_an_error_naming_it(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("budget-mb: 1\nbudjet: 2\n")
    done = show_config("bench/transformers.py", "--config", str(bad))
    assert done.returncode == 2 and "unknown option 'budjet'" in done.stderr


def test_long_decode_refuses_positions_past_its_output():
    done = subprocess.run([sys.executable, "bench/long_decode.py", "--output", "500",
                           "--positions", "100", "1000"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 2 and "--output 500 is short of position 1000" in done.stderr
