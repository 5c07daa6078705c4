"""Stage two's inputs tampered with: ``train`` settings (``key=value`` and ``--config`` files),
the weights and config of an export or of a Hugging Face folder, a cut checkpoint, and the
predictions files ``evaluate`` and ``human-eval`` read.

Each case is a row of a table: a clear one-line error naming the file (and the key, tensor or
line), never a constructed object, a silent wrong answer or an unbounded allocation. The cases
where memory is the point run in a child process under an address-space limit.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from toys import TOY

from wikisum import generation
from wikisum.core.loader import Dataset
from wikisum.generation import humaneval
from wikisum.training import runsetup
from wikisum.training.config import ConfigError, TrainConfig, make_config
from wikisum.workflows import cli
from wikisum.workflows.evaluate import evaluate


def one_line(message: str) -> str:
    assert "\n" not in message, message
    return message


def child(script: str, *args: str, limit_mb: int = 2048, timeout: int = 120):
    """``script`` run by a fresh interpreter under an address-space limit of ``limit_mb``."""
    limited = (f"import resource\nresource.setrlimit(resource.RLIMIT_AS, ({limit_mb} << 20, "
               f"{limit_mb} << 20))\n") + script
    return subprocess.run([sys.executable, "-c", limited, *args], capture_output=True,
                          text=True, timeout=timeout, check=False)


# ------------------------------------------------------------------------------------------
# `train key=value`: unknown, dunder and nested keys, values that are objects or not finite.

OVERRIDES = [  # (name, setting, the error it gives)
    ("unknown key", "bogus=1", r"unknown setting 'bogus'"),
    ("dunder key", "__class__=x", r"unknown setting '__class__'"),
    ("dunder scope", "__dict__.x=1", r"only model.<field> and train.<field>"),
    ("dunder model field", "model.__init__=1", r"no field '__init__' in model config"),
    ("nested key", "model.x.y=1", r"only model.<field> and train.<field>"),
    ("empty part", "a..b=1", r"only model.<field> and train.<field>"),
    ("the overrides dict itself", "model_overrides={}", r"unknown setting 'model_overrides'"),
    ("JSON object for a path", 'data={"a": 1}', r"data=\{'a': 1\}: expected str"),
    ("YAML object for a path", "out={a: 1}", r"out=\{'a': 1\}: expected str"),
    ("YAML list for a name", "extractor=[tfidf, textrank]", r"extractor=.*expected str"),
    ("YAML object for a number", "lr={a: 1}", r"lr=\{'a': 1\}: expected float"),
    ("NaN (JSON's extension)", "model.dropout=NaN", r"model.dropout=nan: expected a finite"),
    ("YAML .inf", "weight_decay=.inf", r"weight_decay=inf: expected a finite number"),
    ("JSON -Infinity", "clip_norm=-Infinity", r"clip_norm=-inf: expected a finite number"),
    ("a float beyond float", "adam_eps=1e400", r"adam_eps=inf: expected a finite number"),
    ("a tag in a value", "steps=!!python/object/apply:os.system [echo]",
     r"steps=.*expected int"),
]


@pytest.mark.parametrize(("setting", "message"), [c[1:] for c in OVERRIDES],
                         ids=[c[0] for c in OVERRIDES])
def test_a_bad_setting_is_a_one_line_error_naming_it(setting, message):
    with pytest.raises(ConfigError, match=message) as caught:
        make_config("toy", "D", "R", overrides=[setting], factory=TOY)
    one_line(str(caught.value))


def test_a_yaml_flow_list_is_a_list():
    cfg = make_config("toy", "D", "R", overrides=["log_to=[jsonl, tensorboard]"], factory=TOY)
    assert cfg.log_to == ("jsonl", "tensorboard")


# Model settings that cannot build a model, or build one too big for any machine: refused in
# one line naming the setting, before memory is taken.
BUILDS = [
    ("negative width", {"d_model": -4}, r"cannot be built with the settings d_model=-4"),
    ("zero heads", {"n_heads": 0}, r"cannot be built with the settings n_heads=0"),
    ("width beyond int64", {"d_model": 10 ** 30}, r"cannot be built with the settings"),
    ("no such layer kind", {"layer_kinds": ["nope"]}, r"'nope' is not an attention kind"),
]


@pytest.mark.parametrize(("overrides", "message"), [c[1:] for c in BUILDS],
                         ids=[c[0] for c in BUILDS])
def test_model_settings_that_cannot_build_are_named(toy_data, overrides, message):
    config = TrainConfig(model="t-dmca", data=str(toy_data), out="R", preset="tiny",
                         model_overrides=overrides)
    with pytest.raises(ConfigError, match=message) as caught:
        runsetup.build_model(config, Dataset(str(toy_data)))
    one_line(str(caught.value))


HUGE_MODEL = """
import sys
from wikisum.core.loader import Dataset
from wikisum.training import runsetup
from wikisum.training.config import ConfigError, TrainConfig
config = TrainConfig(model="t-dmca", data=sys.argv[1], out="R", preset="tiny",
                     model_overrides={"d_model": 1_000_000})
try:
    runsetup.build_model(config, Dataset(sys.argv[1]))
except ConfigError as exc:
    print(exc)
    sys.exit(0)
sys.exit(1)
"""


def test_a_model_too_big_for_the_machine_is_refused_before_it_is_built(toy_data):
    done = child(HUGE_MODEL, str(toy_data))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "parameters, about" in done.stdout and "GiB of memory free" in done.stdout


# ------------------------------------------------------------------------------------------
# `train --config FILE`: tags that would build objects, aliases, depth, duplicates, bytes.

FILES = [  # (name, file name, content, the error it gives)
    ("python/object/apply", "c.yaml",
     "model: toy\nlr: !!python/object/apply:os.system ['echo PWNED']\n",
     r"c.yaml line 2: the tag !!python/object/apply:os.system is not accepted"),
    ("python/name", "c.yaml", "model: toy\nlr: !!python/name:os.system\n",
     r"c.yaml line 2: the tag !!python/name:os.system is not accepted"),
    ("python/object", "c.yml", "steps: !!python/object:collections.OrderedDict {a: 1}\n",
     r"c.yml line 1: the tag !!python/object:collections.OrderedDict is not accepted"),
    ("python/object/new", "c.yaml", "lr: !!python/object/new:builtins.float ['1']\n",
     r"line 1: the tag !!python/object/new:builtins.float is not accepted"),
    ("python/module", "c.yaml", "x: !!python/module:os\n",
     r"line 1: the tag !!python/module:os is not accepted"),
    ("a local tag", "c.yaml", "lr: !evil 1\n", r"line 1: the tag !evil is not accepted"),
    ("a tag on a key", "c.yaml", "? !!python/name:os.system\n: 1\n",
     r"line 1: the tag !!python/name:os.system is not accepted"),
    ("an alias", "c.yaml", "a: &x 1\nlr: *x\n", r"line 1: anchors and aliases"),
    ("a key twice", "c.yaml", "lr: 0.1\nsteps: 3\nlr: 0.2\n", r"line 3: the key 'lr' is given"),
    ("a key in both spellings", "c.yaml", "lr: 0.1\ntrain: {lr: 0.2}\n",
     r"the setting 'train.lr' is given twice"),
    ("a JSON key twice", "c.json", '{"lr": 0.1, "lr": 0.2}', r"the key 'lr' is given twice"),
    ("a nested section", "c.yaml", "model:\n  x:\n    y: 1\n",
     r"c.yaml: unknown setting 'model.x': no field 'x' in model config"),
    ("a dunder section", "c.yaml", "__class__: {a: 1}\n", r"c.yaml: unknown setting '__class__'"),
    ("an object for a number", "c.yaml", "train: {lr: {a: 1}}\n",
     r"c.yaml: train.lr=\{'a': 1\}: expected float"),
    ("deep YAML", "c.yaml", "lr: " + "[" * 50_000 + "]" * 50_000 + "\n",
     r"c.yaml line 1: settings nested over 16 levels deep"),
    ("deep JSON", "c.json", '{"lr": ' + "[" * 50_000 + "]" * 50_000 + "}",
     r"c.json nests its values too deep"),
    ("deep TOML", "c.toml", "lr = " + "[" * 50_000 + "]" * 50_000 + "\n",
     r"c.toml nests its values too deep"),
    ("not UTF-8", "c.yaml", b"lr: 0.1\nextractor: \xff\xfe\n",
     r"c.yaml is not UTF-8 text \(byte 0xff at offset 19\)"),
    ("over a megabyte", "c.yaml", "# " + "x" * (1 << 20) + "\n", r"c.yaml is over 1,048,576"),
    ("YAML that does not parse", "c.yaml", "lr: [1, 2\nsteps: 3\n",
     r"c.yaml line \d+ does not parse as YAML"),
    ("a NaN", "c.yaml", "lr: .nan\n", r"c.yaml: lr=nan: expected a finite number"),
]


@pytest.mark.parametrize(("name", "content", "message"), [c[1:] for c in FILES],
                         ids=[c[0] for c in FILES])
def test_a_hostile_config_file_is_refused_in_one_line(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ConfigError, match=message) as caught:
        make_config("toy", "D", "R", file=str(path), factory=TOY)
    assert f"config file {path}" in str(caught.value)
    one_line(str(caught.value))


def test_a_refused_tag_constructs_nothing(tmp_path):
    marker = tmp_path / "ran"
    path = tmp_path / "c.yaml"
    path.write_text(f"lr: !!python/object/apply:os.system ['touch {marker}']\n")
    with pytest.raises(ConfigError):
        make_config("toy", "D", "R", file=str(path), factory=TOY)
    assert not marker.exists()


# Nine lines of aliases stand for 387 million values: refused, in bounded memory.
LAUGHS = """
import sys
sys.path.insert(0, sys.argv[2])
from toys import TOY
from wikisum.training.config import ConfigError, make_config
try:
    make_config("toy", "D", "R", file=sys.argv[1], factory=TOY)
except ConfigError as exc:
    print(exc)
    sys.exit(0)
sys.exit(1)
"""


def test_a_billion_laughs_config_is_refused_in_bounded_memory(tmp_path):
    anchors = ['&a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for previous, name in zip("abcdefgh", "bcdefghi", strict=True):
        anchors.append(f"&{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    path = tmp_path / "laughs.yaml"
    path.write_text("log_to: [" + ", ".join(anchors) + "]\n")
    done = child(LAUGHS, str(path), str(Path(__file__).parent))
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert "laughs.yaml line 1: anchors and aliases" in done.stdout


# ------------------------------------------------------------------------------------------
# An export (`wikisum export`) whose weights or config were tampered with, used by summarize.

TEXTS = ["the river runs north of the city.\nA green house stands by the stone bridge."]


@pytest.fixture(scope="module")
def exported(tiny_run, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tampering") / "export"
    assert cli.main(["export", "--run", str(tiny_run), "--out", str(out)]) == 0
    return out


def _weights(folder: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(folder / "model.safetensors"))


def _save(folder: Path, weights: dict[str, torch.Tensor]) -> None:
    from safetensors.torch import save_file

    save_file(weights, str(folder / "model.safetensors"), metadata={"format": "pt"})


def _poke(value: float):
    def change(folder: Path, weights: dict, config: dict) -> None:
        name = "blocks.1.ffn.inner.bias"
        tensor = weights[name].clone()
        tensor.view(-1)[5] = value
        _save(folder, {**weights, name: tensor})
    return change


def _reshape(folder: Path, weights: dict, config: dict) -> None:
    name = "blocks.1.ffn.inner.bias"
    _save(folder, {**weights, name: torch.zeros(weights[name].numel() + 1)})


def _as_ints(folder: Path, weights: dict, config: dict) -> None:
    name = "blocks.1.ffn.inner.bias"
    _save(folder, {**weights, name: weights[name].to(torch.int64)})


def _extra(folder: Path, weights: dict, config: dict) -> None:
    _save(folder, {**weights, "evil.payload": torch.zeros(3)})


def _config(field: str, change):
    def edit(folder: Path, weights: dict, config: dict) -> None:
        config["model_config"][field] = change(config["model_config"][field])
        (folder / "config.json").write_text(json.dumps(config))
    return edit


def _special(folder: Path, weights: dict, config: dict) -> None:
    config["special_ids"]["eos"] = 10 ** 6
    (folder / "config.json").write_text(json.dumps(config))


def _cut(folder: Path, weights: dict, config: dict) -> None:
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[:len(data) // 2])


EXPORTS = [  # (name, the tampering, the error it gives)
    ("a NaN weight", _poke(float("nan")),
     r"model.safetensors: weight blocks.1.ffn.inner.bias holds 1 NaN or infinite value"),
    ("an inf weight", _poke(float("inf")), r"weight blocks.1.ffn.inner.bias holds 1 NaN"),
    ("a -inf weight", _poke(float("-inf")), r"weight blocks.1.ffn.inner.bias holds 1 NaN"),
    ("a tensor of another shape", _reshape,
     r"tensor blocks.1.ffn.inner.bias has shape \[129\] where .*config.json makes it \[128\]"),
    ("an integer tensor", _as_ints, r"tensor blocks.1.ffn.inner.bias is torch.int64"),
    ("a tensor the model lacks", _extra, r"has no place for: evil.payload"),
    ("config.json with twice the d_model", _config("d_model", lambda v: 2 * v),
     r"config.json makes it \[\d+\]: the config and the weights are of different models"),
    ("config.json with another vocabulary size", _config("vocab_size", lambda v: v + 5),
     r"tensor embed.weight has shape \[40, 64\] where .*config.json makes it \[45, 64\]"),
    ("config.json claiming a vocabulary of 10^12", _config("vocab_size", lambda v: 10 ** 12),
     r"tensor embed.weight has shape \[40, 64\] where .* makes it \[1000000000000, 64\]"),
    ("config.json with another layer count", _config("n_layers", lambda v: v + 1),
     r"config.json: model t-dmca cannot be built from its model_config"),
    ("config.json with a negative width", _config("d_model", lambda v: -v),
     r"cannot be built from its model_config \(Trying to create tensor with negative"),
    ("an eos id outside the vocabulary", _special, r"special id eos = 1000000 is not an id"),
    ("the weights cut in half", _cut, r"model.safetensors is not a readable safetensors file"),
]


@pytest.mark.parametrize(("tamper", "message"), [c[1:] for c in EXPORTS],
                         ids=[c[0] for c in EXPORTS])
def test_a_tampered_export_is_refused_naming_the_file_and_tensor(exported, tmp_path, tamper,
                                                                   message):
    folder = tmp_path / "export"
    shutil.copytree(exported, folder)
    tamper(folder, _weights(exported), json.loads((exported / "config.json").read_text()))
    with pytest.raises(ValueError, match=message) as caught:
        generation.summarize(str(folder), TEXTS, title="river city", max_len=4)
    one_line(str(caught.value))
    assert str(folder) in str(caught.value)


DECODED = [c for c in EXPORTS if c[0] in {
    "a NaN weight", "an inf weight", "a tensor of another shape",
    "config.json with another vocabulary size", "an eos id outside the vocabulary"}]


@pytest.mark.parametrize(("tamper", "message"), [c[1:] for c in DECODED],
                         ids=[c[0] for c in DECODED])
def test_decode_and_load_bundle_refuse_a_tampered_export_alike(exported, toy_data, tmp_path,
                                                               tamper, message):
    folder = tmp_path / "export"
    shutil.copytree(exported, folder)
    tamper(folder, _weights(exported), json.loads((exported / "config.json").read_text()))
    with pytest.raises(ValueError, match=message) as caught:
        generation.load_bundle(str(folder))
    one_line(str(caught.value))
    preds = tmp_path / "preds.jsonl"
    with pytest.raises(SystemExit, match=message) as exited:
        cli.main(["decode", "--run", str(folder), "--data", str(toy_data), "--split", "test",
                  "--out", str(preds), "--max-len", "4"])
    assert str(folder) in one_line(str(exited.value.code))
    assert not preds.exists()


def test_a_run_with_a_nan_weight_is_refused_by_load(tiny_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    [ckpt] = sorted((run / "checkpoints").glob("step-*.pt"))
    state = torch.load(ckpt, map_location="cpu", weights_only=False)
    weights = state["model"]
    name = next(key for key, value in weights.items() if value.is_floating_point())
    weights[name].view(-1)[0] = float("nan")
    torch.save(state, ckpt)
    with pytest.raises(ValueError, match=rf"weight {re.escape(name)} holds 1 NaN") as caught:
        generation.load_bundle(str(run))
    one_line(str(caught.value))


def test_the_untampered_export_still_summarizes(exported):
    assert isinstance(generation.summarize(str(exported), TEXTS, title="river", max_len=4), str)


def test_a_run_whose_only_checkpoint_is_cut_is_refused_naming_it(tiny_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(tiny_run, run)
    [ckpt] = sorted((run / "checkpoints").glob("step-*.pt"))
    ckpt.write_bytes(ckpt.read_bytes()[:ckpt.stat().st_size // 2])
    with pytest.raises(ValueError, match=rf"no readable checkpoint: cannot read checkpoint "
                                         rf"{ckpt}") as caught:
        generation.summarize(str(run), TEXTS, title="river", max_len=4)
    one_line(str(caught.value))


# ------------------------------------------------------------------------------------------
# A Hugging Face folder (`train --init`, an export of a fine-tuned run) tampered with.


@pytest.fixture(scope="module")
def gpt2(tmp_path_factory) -> Path:
    from hfcheckpoints import save_gpt2, train_tokenizer

    folder = tmp_path_factory.mktemp("hf") / "gpt2"
    texts = ["the river runs north of the city by the green house"] * 20
    return save_gpt2(folder, train_tokenizer(texts, vocab_size=80))


def _hf_poke(value: float):
    def change(folder: Path) -> None:
        weights = _weights(folder)
        tensor = weights["transformer.h.1.mlp.c_fc.weight"].clone()
        tensor.view(-1)[7] = value
        _save(folder, {**weights, "transformer.h.1.mlp.c_fc.weight": tensor})
    return change


def _hf_config(field: str, value: int):
    def change(folder: Path) -> None:
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, field: value}))
    return change


HF = [  # (name, the tampering, the error it gives)
    ("a NaN weight", _hf_poke(float("nan")),
     r"weight transformer.h.1.mlp.c_fc.weight holds 1 NaN or infinite value"),
    ("an inf weight", _hf_poke(float("inf")), r"transformer.h.1.mlp.c_fc.weight holds 1 NaN"),
    ("config.json with a layer more than the weights", _hf_config("n_layer", 3),
     r"the weights do not fit its config.json: 12 tensor\(s\) lacking from the weights"),
    ("config.json with a layer fewer", _hf_config("n_layer", 1),
     r"the weights do not fit its config.json: \d+ tensor\(s\) in the weights but not"),
    ("config.json with another width", _hf_config("n_embd", 64),
     r"model.safetensors: tensor .* has shape .* where .*config.json makes it"),
    ("config.json claiming a vocabulary of 10^12", _hf_config("vocab_size", 10 ** 12),
     r"tensor transformer.wte.weight has shape \[\d+, 32\] where .* \[1000000000000, 32\]"),
]


@pytest.mark.parametrize(("tamper", "message"), [c[1:] for c in HF], ids=[c[0] for c in HF])
def test_a_tampered_hf_folder_is_refused_naming_the_tensor(gpt2, tmp_path, tamper, message):
    from wikisum.models import hf

    folder = tmp_path / "gpt2"
    shutil.copytree(gpt2, folder)
    tamper(folder)
    with pytest.raises(hf.HFCheckpointError, match=message) as caught:
        hf.build("hf", init=str(folder))
    one_line(str(caught.value))
    assert str(folder) in str(caught.value)


def test_the_untampered_hf_folder_builds(gpt2):
    from wikisum.models import hf

    assert hf.build("hf", init=str(gpt2)).config.kind == "causal"


# ------------------------------------------------------------------------------------------
# Predictions files for `evaluate` and `human-eval`.


def record(i, **changes) -> dict:
    return {"id": f"ex{i}", "prediction": "the cat sat on the mat",
            "reference": "the cat sat on a mat", **changes}


def lines(*records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


GOOD = lines(record(0), record(1))
REFUSED = [  # (name, the file's bytes, the error it gives, after "PREDS")
    ("invalid UTF-8", lines(record(0)) + b'{"id": "ex1", "prediction": "a \xff", '
     b'"reference": "a"}\n', r":2: not UTF-8 \(byte 0xff at column 32\)"),
    ("a raw NUL", lines(record(0)) + b'{"id": "ex1", "prediction": "a \x00", "reference": "a"}\n',
     r":2: not JSON \(Invalid control character at column 32\)"),
    ("deep JSON", lines(record(0)) + b'{"id": "ex1", "prediction": ' + b"[" * 100_000
     + b"]" * 100_000 + b', "reference": "a"}\n', r":2: not a prediction record \(JSON nested"),
    ("an id that is a number with a fraction", lines(record(0), record(1, id=1.5)),
     r":2: id is a number \(1.5\); an id is a string or an integer"),
    ("an id that is a list", lines(record(0), record(1, id=[1])), r":2: id is a list"),
    ("an id that is null", lines(record(0), record(1, id=None)), r":2: id is null;"),
    ("an id that is a boolean", lines(record(0), record(1, id=True)), r":2: id is a boolean"),
    ("an id given twice", lines(record(0), record(1), record(0)),
     r": id 'ex0' occurs more than once \(records 1 and 3\)"),
    ("no id", lines(record(0), {"prediction": "a", "reference": "a"}), r":2: no id"),
    ("a prediction that is a number", lines(record(0), record(1, prediction=5)),
     r":2: prediction is a number \(5\), not text"),
    ("a prediction that is null", lines(record(0), record(1, prediction=None)),
     r":2: prediction is null, not text"),
    ("a reference that is an object", lines(record(0), record(1, reference={"a": 1})),
     r":2: reference is an object"),
    ("a lone surrogate", lines(record(0)) + b'{"id": "ex1", "prediction": "a \\ud800", '
     b'"reference": "a"}\n', r":2: prediction holds a lone surrogate"),
    ("NaN as reference_nll", lines(record(0)) + b'{"id": "ex1", "prediction": "a", '
     b'"reference": "a", "reference_nll": NaN, "reference_tokens": 2}\n',
     r":2: not JSON \(NaN is not a JSON number\)"),
    ("a list as reference_nll", lines(record(0), record(1, reference_nll=[1],
                                                         reference_tokens=2)),
     r":2: reference_nll is \[1\], not a finite number >= 0"),
    ("text as reference_tokens", lines(record(0), record(1, reference_nll=1.0,
                                                          reference_tokens="x")),
     r":2: reference_tokens is 'x', not a count >= 0"),
]


@pytest.mark.parametrize(("content", "message"), [c[1:] for c in REFUSED],
                         ids=[c[0] for c in REFUSED])
def test_a_hostile_predictions_file_is_refused_naming_the_line(tmp_path, content, message):
    preds = tmp_path / "preds.jsonl"
    preds.write_bytes(content)
    with pytest.raises(ValueError, match=f"{preds}{message}") as caught:
        evaluate(str(preds), str(tmp_path / "m.json"), bootstrap=0)
    one_line(str(caught.value))
    assert not (tmp_path / "m.json").exists()


ACCEPTED = [  # (name, the file's bytes): scored exactly as GOOD is
    ("a BOM", b"\xef\xbb\xbf" + GOOD),
    ("CRLF line ends", GOOD.replace(b"\n", b"\r\n")),
    ("blank lines", b"\n" + GOOD.replace(b"\n", b"\n\n")),
    ("U+2028 and a form feed inside a prediction",
     "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in (
         record(0), record(1, prediction="the cat sat\u2028on the\x0cmat"))).encode()),
]


@pytest.mark.parametrize("content", [c[1] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_a_harmless_variation_is_scored_as_the_plain_file(tmp_path, content):
    plain, varied = tmp_path / "plain.jsonl", tmp_path / "varied.jsonl"
    plain.write_bytes(GOOD)
    varied.write_bytes(content)
    a, _ = evaluate(str(plain), str(tmp_path / "a.json"), bootstrap=0)
    b, _ = evaluate(str(varied), str(tmp_path / "b.json"), bootstrap=0)
    assert a["examples"] == b["examples"] == 2
    assert a["rouge"] == b["rouge"]


def test_proto_and_an_escaped_nul_are_plain_ids_and_text(tmp_path):
    preds = tmp_path / "preds.jsonl"
    preds.write_bytes(lines(record(0, id="__proto__"), record(1, id="constructor",
                                                              prediction="a\u0000b")))
    metrics, _ = evaluate(str(preds), str(tmp_path / "m.json"), bootstrap=0)
    assert metrics["examples"] == 2
    assert list(humaneval.read_predictions(str(preds))) == ['"__proto__"', '"constructor"']


def test_human_eval_reads_through_the_same_checks(tmp_path):
    preds = tmp_path / "preds.jsonl"
    preds.write_bytes(b"\xef\xbb\xbf" + lines(record(0)) + b'{"id": "ex1", "prediction": '
                      b'"\xc3", "reference": "a"}\n')
    with pytest.raises(ValueError, match=rf"{preds}:2: not UTF-8"):
        humaneval.read_predictions(str(preds))


# A 50 MB line: refused by line number (the limit is 8 MiB), read in bounded chunks (never
# held whole): under a 200 MB address-space limit.
LONG_LINE = """
import sys
from wikisum.generation.predictions import read_predictions
try:
    read_predictions(sys.argv[1])
except ValueError as exc:
    print(exc)
    sys.exit(0)
sys.exit(1)
"""


def test_a_50_mb_line_is_refused_in_bounded_memory(tmp_path):
    preds = tmp_path / "preds.jsonl"
    with preds.open("wb") as f:
        f.write(lines(record(0)))
        f.write(b'{"id": "ex1", "prediction": "')
        block = b"a " * (1 << 19)
        for _ in range(50):
            f.write(block)
        f.write(b'", "reference": "a"}\n')
    done = child(LONG_LINE, str(preds), limit_mb=200)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    assert f"{preds}:2: the line is over 8,388,608 bytes" in done.stdout
