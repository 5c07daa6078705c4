"""Fixtures of the command tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from wikisum.workflows import cli


@pytest.fixture(scope="session")
def sample_run(built_sample, tmp_path_factory) -> Path:
    """A tiny T-DMCA trained for 2 steps on the built sample (L 64): a run to decode and
    export. Read it, never write into it."""
    run = tmp_path_factory.mktemp("sample-run") / "run"
    status = cli.main(["-q", "train", "--model", "t-dmca", "--data", str(built_sample[0] / "data"),
                       "--out", str(run), "--preset", "tiny", "--steps", "2",
                       "--max-input-tokens", "64", "--batch-tokens", "1200", "--device", "cpu",
                       "warmup_steps=1", "eval_every=2", "checkpoint_every=2",
                       "dev_examples=2", "max_target_tokens=24"])
    assert status == 0
    return run
