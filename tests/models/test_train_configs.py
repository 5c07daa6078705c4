"""configs/train/: the runs of Liu et al. (2018), Table 4, one `wikisum train --config` file each.

Every file loads through make_config (what `wikisum train --config FILE` calls) and builds its
model through training.build_model on the meta device (no memory): the parameter count and the
command its header states must be what the file is."""

from __future__ import annotations

import re
import shlex
import types
from pathlib import Path

import pytest
import torch

from wikisum.training import loop as training
from wikisum.training.config import make_config

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs" / "train"
PAPER_VOCAB = 32000  # Liu et al. (2018), Sec. 4.2.1
# file stem -> (model, L, experts): Table 4's six rows.
RUNS = {
    "seq2seq-l500": ("seq2seq", 500, 0),
    "t-ed-l500": ("t-ed", 500, 0),
    "t-d-l4000": ("t-d", 4000, 0),
    "t-dmca-l11000": ("t-dmca", 11000, 0),
    "t-dmca-moe128-l11000": ("t-dmca", 11000, 128),
    "t-dmca-moe256-l7500": ("t-dmca", 7500, 256),
}


def header(path: Path, key: str) -> str:
    """The value of the header line ``# key: value`` (exactly one)."""
    values = re.findall(rf"^# {key}: (.+)$", path.read_text(encoding="utf-8"), re.MULTILINE)
    assert len(values) == 1, f"{path.name}: {len(values)} '# {key}:' lines"
    return values[0].strip()


def test_the_files_are_the_six_runs_of_table_4():
    assert sorted(p.name for p in CONFIGS.iterdir()) == sorted(f"{s}.yaml" for s in RUNS)


@pytest.mark.parametrize("stem", RUNS)
def test_a_run_builds_to_the_parameters_its_header_states(stem, tmp_path):
    path = CONFIGS / f"{stem}.yaml"
    command = shlex.split(header(path, "command"))
    assert command[:4] == ["wikisum", "train", "--config", f"configs/train/{path.name}"]
    flags = dict(zip(command[4::2], command[5::2], strict=True))
    assert set(flags) == {"--data", "--out"}
    config = make_config(data=str(tmp_path / "data"), out=str(tmp_path / "run"), file=str(path))
    name, length, experts = RUNS[stem]
    assert (config.model, config.max_input_tokens) == (name, length)
    assert (config.extractor, config.corpus, config.max_target_tokens) == ("tfidf", "combined",
                                                                         None)
    assert config.model_overrides["vocab_size"] == PAPER_VOCAB
    # What training.train builds: the vocabulary comes from the dataset and must agree.
    dataset = types.SimpleNamespace(info={"vocab_size": PAPER_VOCAB}, special_ids={},
                                    dir=str(tmp_path / "data"))
    with torch.device("meta"):
        model = training.build_model(config, dataset)
    assert all(p.is_meta for p in model.parameters())
    moe_layers = getattr(model.config, "moe_layers", [])
    assert (model.config.n_experts if moe_layers else 0) == experts
    assert sum(p.numel() for p in model.parameters()) == int(header(path, "parameters"))
