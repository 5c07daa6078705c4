"""A run and its build, moved together elsewhere and used from another working directory: `train
--out RUN` resumes with no --model or --data, and `decode --run RUN` needs no --data."""

from __future__ import annotations

import json
import os
import shutil

from wikisum.workflows import cli


def test_a_moved_run_and_build_resume_and_decode_from_anywhere(built_sample, tmp_path,
                                                               monkeypatch):
    first = tmp_path / "first"
    shutil.copytree(built_sample[0], first / "build")
    monkeypatch.chdir(first)  # relative paths, as typed in a shell
    assert cli.main(["train", "--model", "t-dmca", "--data", "build/data", "--out", "runs/r",
                     "--preset", "tiny", "--steps", "3", "--stop-after", "2",
                     "--max-input-tokens", "48", "--batch-tokens", "1200", "--device", "cpu",
                     "eval_every=0", "max_target_tokens=16"]) == 0
    info = json.loads((first / "runs" / "r" / "config.json").read_text())
    assert info["train_config"]["data"] == os.path.join("..", "..", "build", "data")

    moved = tmp_path / "elsewhere" / "project"
    moved.parent.mkdir()
    shutil.move(first, moved)
    monkeypatch.chdir(tmp_path / "elsewhere")  # neither the old directory nor the new one
    run = "project/runs/r"

    assert cli.main(["train", "--out", run]) == 0
    summary = json.loads((moved / "runs" / "r" / "summary.json").read_text())
    assert (summary["step"], summary["resumed_from"], summary["complete"]) == (3, 2, True)

    preds = tmp_path / "preds.jsonl"
    assert cli.main(["decode", "--run", run, "--split", "test", "--out", str(preds),
                     "--beam", "1", "--max-len", "6", "--limit", "2", "--device", "cpu"]) == 0
    assert len(preds.read_text().splitlines()) == 2
