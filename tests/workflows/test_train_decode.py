"""`wikisum train` -> `wikisum decode` -> `wikisum evaluate` on the built sample, for a model of
each family (each skipped until its module imports), and the commands' error messages."""

from __future__ import annotations

import dataclasses
import importlib
import json
import math
from collections import Counter

import pytest
import torch

from wikisum.workflows import cli
from wikisum.workflows import train as train_command


def importable(module: str) -> bool:
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


def needs(module: str):
    return pytest.mark.skipif(not importable(module), reason=f"{module} is not importable yet")


MODELS = [pytest.param("t-dmca", marks=needs("wikisum.models.transformer")),
          pytest.param("seq2seq", marks=needs("wikisum.models.recurrent"))]


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module", params=MODELS)
def trained(request, built_sample, tmp_path_factory):
    """A tiny model trained for 4 steps: stopped after 2, then resumed by the same command."""
    name = request.param
    data = built_sample[0] / "data"
    run = tmp_path_factory.mktemp("runs") / name
    argv = ["train", "--model", name, "--data", str(data), "--out", str(run),
            "--preset", "tiny", "--steps", "4", "--stop-after", "2", "--max-input-tokens", "64",
            "--batch-tokens", "1200", "--device", "cpu", "warmup_steps=2", "eval_every=2",
            "checkpoint_every=2", "log_every=1", "dev_examples=4", "max_target_tokens=24",
            "tensorboard=false"]
    assert cli.main(argv) == 0
    first = json.loads((run / "summary.json").read_text())
    assert cli.main(argv) == 0
    return name, run, data, first


def test_train_writes_a_self_contained_resumable_run(trained):
    name, run, data, first = trained
    assert (first["step"], first["complete"]) == (2, False)
    summary = json.loads((run / "summary.json").read_text())
    assert (summary["step"], summary["resumed_from"], summary["complete"]) == (4, 2, True)
    assert (run / "vocab.model").read_bytes() == (data.parent / "vocab.model").read_bytes()
    info = json.loads((run / "config.json").read_text())
    assert info["model"] == name and info["train_config"]["max_input_tokens"] == 64
    log = lines(run / "log.jsonl")
    assert [r["step"] for r in log if "loss" in r] == [1, 2, 3, 4]
    dev = [r for r in log if "dev_ppl" in r]
    assert [r["step"] for r in dev] == [2, 4] and all(math.isfinite(r["dev_ppl"]) for r in dev)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step-2.pt", "step-4.pt"]


def test_decode_and_evaluate_a_run(trained, tmp_path, capsys):
    from wikisum.core.loader import Dataset
    from wikisum.training import checkpoint
    from wikisum.training.batching import prepare, read_examples, to_batch

    _, run, data, _ = trained
    preds = tmp_path / "preds.jsonl"
    assert cli.main(["decode", "--run", str(run), "--split", "test", "--out", str(preds),
                     "--beam", "2", "--max-len", "12", "--limit", "3", "--batch-size", "2",
                     "--device", "cpu"]) == 0
    records = lines(preds)
    assert str(preds) in capsys.readouterr().out
    loaded = checkpoint.load(str(run))
    examples = list(read_examples(Dataset(str(data)), "test", "tfidf", "combined", 64))
    examples = [ex for ex in examples if ex.targets][:3]
    assert [r["id"] for r in records] == [ex.id for ex in examples]
    dataset = Dataset(str(data))
    leads = {row["id"]: row["lead"] for row in dataset.rows("test", ["id", "lead"])}
    lang = dataset.info.get("language")
    for record, ex in zip(records, examples, strict=True):
        # each record in the dataset's language, where dataset.json names one
        assert set(record) == {"id", "title", "prediction", "reference", "reference_nll",
                               "reference_tokens", *(["lang"] if lang else [])}
        assert record.get("lang") == lang
        assert record["title"] == ex.title
        # the reference is the dataset's lead text, not its ids decoded back
        assert record["reference"] == " ".join(leads[ex.id].split())
        assert record["reference_tokens"] == len(ex.targets) + 1  # </s> included
        with torch.no_grad():
            out = loaded.model(to_batch([prepare(ex, 3, Counter())]))
        assert record["reference_nll"] == pytest.approx(float(out.target_nll), rel=1e-5)

    greedy = tmp_path / "greedy.jsonl"
    assert cli.main(["decode", "--run", str(run), "--split", "test", "--out", str(greedy),
                     "--beam", "1", "--max-len", "12", "--limit", "1", "--device", "cpu"]) == 0
    assert len(lines(greedy)) == 1

    metrics_path = tmp_path / "metrics.json"
    assert cli.main(["evaluate", "--preds", str(preds), "--out", str(metrics_path)]) == 0
    table = capsys.readouterr().out
    assert "ROUGE-1" in table and "perplexity" in table and str(metrics_path) in table
    metrics = json.loads(metrics_path.read_text())
    nll = sum(r["reference_nll"] for r in records)
    tokens = sum(r["reference_tokens"] for r in records)
    assert metrics["perplexity"] == pytest.approx(math.exp(nll / tokens))
    assert set(metrics["rouge"]) == {"rouge1", "rouge2", "rougeL"}
    assert metrics["examples"] == 3


def test_help_shows_train_config_defaults(capsys):
    from wikisum.training.config import TrainConfig

    defaults = {f.name: f.default for f in dataclasses.fields(TrainConfig)}
    for key, shown in train_command.SHOWN_DEFAULTS.items():
        assert defaults[key] == shown, key
    with pytest.raises(SystemExit):
        cli.main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert f"(default: {defaults['max_input_tokens']})" in text
    assert f"(default: {defaults['steps']})" in text


@needs("wikisum.models.recurrent")
def test_train_rejects_an_unknown_setting_by_name(tmp_path):
    with pytest.raises(SystemExit, match="unknown setting 'bogus'"):
        cli.main(["train", "--model", "seq2seq", "--data", "D", "--out", str(tmp_path),
                  "bogus=1"])


def test_train_needs_a_model(tmp_path):
    with pytest.raises(SystemExit, match="no model"):
        cli.main(["train", "--data", "D", "--out", str(tmp_path)])


def test_decode_without_a_checkpoint_says_so(tmp_path):
    with pytest.raises(SystemExit, match="no checkpoint in"):
        cli.main(["decode", "--run", str(tmp_path), "--out", str(tmp_path / "p.jsonl")])


@pytest.mark.parametrize(("content", "message"), [
    ('{"id": 1, "prediction": "a", "reference": "a"}\n{"id": 2, "pred', "preds.jsonl:2: not JSON"),
    ('{"id": 1, "prediction": "a"}\n', "preds.jsonl:1: no reference"),
    ("[1, 2]\n", "preds.jsonl:1: a record must be a JSON object"),
    ("\n", "holds no predictions"),
])
def test_evaluate_names_the_bad_line(content, message, tmp_path):
    preds = tmp_path / "preds.jsonl"
    preds.write_text(content)
    with pytest.raises(SystemExit, match=message):
        cli.main(["evaluate", "--preds", str(preds)])


def test_evaluate_writes_beside_the_predictions_by_default(tmp_path, capsys):
    preds = tmp_path / "preds.jsonl"
    preds.write_text(json.dumps({"id": 1, "prediction": "the cat sat", "reference": "the cat",
                                 "reference_nll": 2.0, "reference_tokens": 4}) + "\n")
    assert cli.main(["evaluate", "--preds", str(preds)]) == 0
    metrics = json.loads((tmp_path / "preds.metrics.json").read_text())
    assert metrics["rouge"]["rouge1"]["r"] == 1.0
    assert metrics["perplexity"] == pytest.approx(math.exp(0.5))
