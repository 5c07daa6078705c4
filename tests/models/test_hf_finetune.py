"""`wikisum train --model hf --init PATH`: tiny BART- and GPT-2-style checkpoints made here from
their configs (random weights, a WordPiece tokenizer trained on the sample) fine-tuned on the
sample build, decoded, evaluated and summarised; a killed run resumes bit for bit; folders that
cannot be fine-tuned are refused naming the folder."""

from __future__ import annotations

import json
from pathlib import Path

import hfcheckpoints
import pytest

pytest.importorskip("transformers")

from wikisum.workflows import cli  # noqa: E402

L = 96  # input tokens: short, so that a step is quick
COMMON = ["--max-input-tokens", str(L), "--batch-tokens", "1024", "--device", "cpu",
          "lr=3e-3", "log_every=1", "eval_every=0", "checkpoint_minutes=0"]


@pytest.fixture(scope="module")
def data(built_sample) -> Path:
    return built_sample[0] / "data"


@pytest.fixture(scope="module")
def checkpoints(data, tmp_path_factory) -> dict[str, Path]:
    """Folders: bart (pad, bos, eos), gpt2 (eos only: it separates and pads), and three that
    cannot be fine-tuned."""
    root = tmp_path_factory.mktemp("hf")
    texts = hfcheckpoints.sample_texts(data)
    full = hfcheckpoints.train_tokenizer(texts)
    eos_only = hfcheckpoints.train_tokenizer(texts, pad=False, bos=False)
    no_eos = hfcheckpoints.train_tokenizer(texts, eos=False)
    folders = {
        "bart": hfcheckpoints.save_bart(root / "bart", full),
        "gpt2": hfcheckpoints.save_gpt2(root / "gpt2", eos_only),
        "no-eos": hfcheckpoints.save_gpt2(root / "no-eos", no_eos),
        "short": hfcheckpoints.save_gpt2(root / "short", eos_only, positions=64),
        "empty": root / "empty",
        "unknown": root / "unknown",
    }
    folders["empty"].mkdir()
    folders["unknown"].mkdir()
    (folders["unknown"] / "config.json").write_text(json.dumps({"model_type": "vit"}))
    return folders


def train(init: Path, data: Path, out: Path, *extra: str) -> int:
    return cli.main(["train", "--model", "hf", "--init", str(init), "--data", str(data),
                     "--out", str(out), *COMMON, *extra])


def losses(run: Path) -> list[float]:
    rows = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    return [r["loss"] for r in rows if "loss" in r]


@pytest.mark.parametrize("kind", ["bart", "gpt2"])
def test_fine_tune_decode_evaluate_summarize(kind, checkpoints, data, tmp_path):
    from wikisum import generation

    run = tmp_path / "run"
    assert train(checkpoints[kind], data, run, "--steps", "12") == 0
    seen = losses(run)
    assert len(seen) == 12
    assert sum(seen[-3:]) / 3 < sum(seen[:3]) / 3 - 0.1, seen
    info = json.loads((run / "config.json").read_text())
    assert info["model"] == "hf"
    assert info["model_config"]["init"] == str(checkpoints[kind].resolve())
    assert info["model_config"]["kind"] == ("seq2seq" if kind == "bart" else "causal")
    assert info["model_config"]["hf_config"]["vocab_size"] > 0
    assert (run / "hf-tokenizer" / "tokenizer.json").is_file()

    preds = run / "preds.jsonl"
    assert cli.main(["decode", "--run", str(run), "--split", "test", "--out", str(preds),
                     "--max-len", "12", "--min-len", "4", "--beam", "2",
                     "--no-repeat-ngram-size", "2"]) == 0
    rows = [json.loads(line) for line in preds.read_text().splitlines()]
    assert len(rows) == 7 and all(r["prediction"] and r["reference"] for r in rows)
    assert all(r["reference_tokens"] > 0 for r in rows)
    metrics = run / "metrics.json"
    assert cli.main(["evaluate", "--preds", str(preds), "--out", str(metrics)]) == 0
    assert "rouge" in metrics.read_text().lower()

    summary = generation.summarize(str(run), ["The river rises in the hills.",
                                              "It flows into the sea."], title="River",
                                   max_len=8, min_len=2, beam=1)
    assert isinstance(summary, str) and summary

    # exported as its own transformers folder, read back by transformers and by wikisum
    import transformers

    out = tmp_path / "export"
    assert cli.main(["export", "--run", str(run), "--out", str(out)]) == 0
    record = json.loads((out / "wikisum.json").read_text())
    assert record["model"] == "hf" and record["input"]["max_input_tokens"] > 0
    assert (out / "README.md").read_text().startswith("---\n")
    auto = (transformers.AutoModelForSeq2SeqLM if kind == "bart"
            else transformers.AutoModelForCausalLM)
    loaded = auto.from_pretrained(str(out), local_files_only=True)
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(out), local_files_only=True)
    assert loaded.config.vocab_size == info["model_config"]["hf_config"]["vocab_size"]
    assert tokenizer("River")["input_ids"]
    from_export = generation.summarize(str(out), ["The river rises in the hills.",
                                                  "It flows into the sea."], title="River",
                                       max_len=8, min_len=2, beam=1)
    assert from_export == summary


@pytest.mark.parametrize("kind", ["bart", "gpt2"])
def test_killed_run_resumes_bit_for_bit(kind, checkpoints, data, tmp_path):
    whole, parts = tmp_path / "whole", tmp_path / "parts"
    assert train(checkpoints[kind], data, whole, "--steps", "6") == 0
    assert train(checkpoints[kind], data, parts, "--steps", "6", "--stop-after", "3") == 0
    assert len(losses(parts)) == 3
    assert cli.main(["train", "--out", str(parts)]) == 0  # the run's own settings
    assert losses(parts) == losses(whole)  # exactly: the same floats


@pytest.mark.parametrize("folder, message", [
    ("empty", "not a Hugging Face checkpoint (no config.json)"),
    ("unknown", "has no seq2seq or causal language-model head"),
    ("no-eos", "has no eos token"),
    ("short", "context window is 64 positions, shorter than the input"),
])
def test_folders_that_cannot_be_fine_tuned(folder, message, checkpoints, data, tmp_path):
    with pytest.raises(SystemExit) as exc:
        train(checkpoints[folder], data, tmp_path / "run", "--steps", "1")
    text = str(exc.value)
    assert message in text and str(checkpoints[folder].resolve()) in text
    assert "\n" not in text


class Killed(BaseException):
    """A crash inside an update: nothing of the run's own gets to react to it."""


def test_a_run_killed_inside_an_update_resumes_from_its_checkpoint_bit_for_bit(
        checkpoints, data, tmp_path, monkeypatch):
    from wikisum.models import hf
    from wikisum.training import checkpoint

    def train_6(out: Path) -> int:
        return cli.main(["train", "--model", "hf", "--init", str(checkpoints["gpt2"]), "--data",
                         str(data), "--out", str(out), "--steps", "6", *COMMON,
                         "checkpoint_every=2"])

    whole, killed = tmp_path / "whole", tmp_path / "killed"
    assert train_6(whole) == 0
    forward = hf.HFSummarizer.forward
    calls = {"n": 0}

    def crashing(self, batch):
        calls["n"] += 1
        if calls["n"] > 5 and self.training:  # inside update 6, after step-4.pt
            raise Killed
        return forward(self, batch)

    monkeypatch.setattr(hf.HFSummarizer, "forward", crashing)
    with pytest.raises(Killed):
        train_6(killed)
    monkeypatch.setattr(hf.HFSummarizer, "forward", forward)
    assert checkpoint.latest_checkpoint(str(killed)).name == "step-4.pt"
    assert cli.main(["train", "--out", str(killed)]) == 0
    assert losses(killed) == losses(whole)  # the steps after the checkpoint logged once
