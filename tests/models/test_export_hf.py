"""`wikisum export --format hf` on a tiny trained T-D and T-DMCA (local blocks of 4, compressed
attention, a mixture of experts): the folder loads with transformers' Auto classes in a fresh
process where wikisum cannot be imported and the hub cannot be reached, its logits equal
wikisum's, greedy `generate` equals `wikisum decode --beam 1` token for token, and its tokenizer
gives wikisum's ids."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
import yaml

from wikisum.core.loader import Dataset
from wikisum.generation import export, inference
from wikisum.generation.decoding import DecodeOptions, generate
from wikisum.models.base import make_batch
from wikisum.training import loop as training
from wikisum.training.config import TrainConfig
from wikisum.workflows import cli

pytest.importorskip("transformers")

L = 24
# An untied output projection: at initialisation a tied one makes every model repeat the last
# input token (<sep>), which would leave the greedy comparison nothing to compare.
MODELS = {"t-d": {"tie_embeddings": False},
          "t-dmca": {"block_size": 4, "moe_layers": [1], "n_experts": 4,
                     "tie_embeddings": False}}
TITLE = "river city"
PAGES = ["the river runs north of the city and the green house stands by the stone bridge.\n"
         "Alpha beta gamma delta, the small light over the river.\n"
         "North of the city the stone house is green and small."]
TEXTS = ["the river runs north of the city.", "Ünïcödé naïve café, 東京 and ☃",
         "  leading spaces\tand a tab  ", "a <sep> and a <t> inside, and </s> <pad> as text",
         "ﬁne ligatures and ①② (NFKC)", ""]

# Run in a fresh interpreter: wikisum is made unimportable before anything else is imported.
CHILD = r"""
import importlib.abc, json, sys

class NoWikisum(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "wikisum" or name.startswith("wikisum."):
            raise ImportError(f"{name} is hidden from this process")

sys.meta_path.insert(0, NoWikisum())
try:
    import wikisum  # noqa: F401
    raise SystemExit("wikisum is importable")
except ImportError:
    pass
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

jobs = json.load(open(sys.argv[1]))
out = {}
for name, job in jobs.items():
    model = AutoModelForCausalLM.from_pretrained(job["dir"], trust_remote_code=True,
                                                 local_files_only=True).eval()
    tokenizer = AutoTokenizer.from_pretrained(job["dir"], trust_remote_code=True,
                                              local_files_only=True)
    with torch.no_grad():
        logits = [model(torch.tensor([ids])).logits[0].tolist() for ids in job["sequences"]]
        generated = []
        for ids in job["prompts"]:
            x = torch.tensor([ids])
            y = model.generate(x, attention_mask=torch.ones_like(x),
                               max_new_tokens=job["max_len"])
            generated.append(y[0, len(ids):].tolist())
    out[name] = {
        "logits": logits, "generated": generated,
        "summary_ids": [model.summary_ids(ids, max_new_tokens=job["max_len"])
                        for ids in job["prompts"]],
        "texts": [tokenizer.decode(g, skip_special_tokens=True) for g in generated],
        "encode": [tokenizer.encode(t) for t in job["texts"]],
        "call": tokenizer(job["texts"])["input_ids"],
        "prompt": tokenizer.prompt(job["title"], job["ranked"]),
        "classes": [type(model).__name__, type(tokenizer).__name__, str(model.dtype)]}
assert not any(m == "wikisum" or m.startswith("wikisum.") for m in sys.modules)
json.dump(out, open(sys.argv[2], "w"))
"""


@pytest.fixture(scope="module")
def runs(toy_data, tmp_path_factory) -> dict:
    """Each model trained for 2 steps at a small learning rate (so that greedy decoding still
    writes varied tokens), and exported with --format hf."""
    root = tmp_path_factory.mktemp("hf")
    out = {}
    for name, overrides in MODELS.items():
        run = root / name
        training.train(TrainConfig(model=name, data=str(toy_data), out=str(run), preset="tiny",
                                    model_overrides=overrides, steps=2, max_input_tokens=L,
                                    batch_tokens=400, warmup_steps=1, lr=1e-4, eval_every=2,
                                    log_every=1, device="cpu"))
        folder = root / f"{name}-hf"
        assert cli.main(["export", "--run", str(run), "--out", str(folder), "--format",
                         "hf"]) == 0
        out[name] = (run, folder)
    return out


@pytest.fixture(scope="module")
def wikisum_side(runs, toy_data, tmp_path_factory) -> dict:
    """What wikisum computes: logits, greedy decodes (library and `wikisum decode --beam 1`),
    ids of TEXTS, and summarize's model input for PAGES."""
    side = {}
    for name, (run, _) in runs.items():
        bundle = export.load_run(run)
        sep, eos = bundle.special_ids["sep"], bundle.eos_id
        examples = list(Dataset(str(toy_data)).examples("test", bundle.extractor, bundle.corpus,
                                                        L))
        sequences = [ex.inputs + [sep] + ex.targets for ex in examples]
        with torch.no_grad():
            logits = [bundle.model.logits(torch.tensor([s]))[0] for s in sequences]
        max_len = int(bundle.decoding["max_len"])
        greedy = [generate(bundle.model, make_batch([ex.inputs], [[eos]]),
                           DecodeOptions(beam=1, max_len=max_len), eos_id=eos, keys=[0])[0].tokens
                  for ex in examples]
        preds = tmp_path_factory.mktemp("preds") / f"{name}.jsonl"
        assert cli.main(["decode", "--run", str(run), "--split", "test", "--out", str(preds),
                         "--beam", "1", "--batch-size", "1", "--device", "cpu"]) == 0
        paragraphs = inference.paragraphs_of(PAGES)
        order = inference.ranker(bundle).rank(TITLE, paragraphs,
                                              sources=["citation"] * len(paragraphs))
        side[name] = {
            "sequences": sequences, "logits": logits, "max_len": max_len,
            "prompts": [ex.inputs + [sep] for ex in examples],
            "greedy": [[int(t) for t in g] for g in greedy],
            "decoded": [json.loads(line)["prediction"] for line in preds.read_text().splitlines()],
            "ids": [list(bundle.tokenizer.encode(t)) for t in TEXTS],
            "ranked": [paragraphs[i] for i in order],
            "prompt": inference.model_input(bundle, PAGES, TITLE) + [sep]}
    return side


@pytest.fixture(scope="module")
def loaded(runs, wikisum_side, tmp_path_factory) -> dict:
    """The CHILD's results: both folders loaded in one fresh process without wikisum."""
    work = tmp_path_factory.mktemp("child")
    jobs = {name: {"dir": str(folder), "sequences": wikisum_side[name]["sequences"],
                   "prompts": wikisum_side[name]["prompts"],
                   "max_len": wikisum_side[name]["max_len"], "texts": TEXTS, "title": TITLE,
                   "ranked": wikisum_side[name]["ranked"]}
            for name, (_, folder) in runs.items()}
    (work / "jobs.json").write_text(json.dumps(jobs))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", HF_HOME=str(work / "hf-home"),
               HF_MODULES_CACHE=str(work / "hf-modules"), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", CHILD, str(work / "jobs.json"),
                           str(work / "out.json")], cwd=work, env=env, capture_output=True,
                          text=True, check=False, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads((work / "out.json").read_text())


@pytest.mark.parametrize("name", MODELS)
def test_the_folder_loads_without_wikisum_and_gives_wikisums_logits(name, loaded,
                                                                   wikisum_side):
    got = loaded[name]
    assert got["classes"] == ["WikisumForCausalLM", "WikisumTokenizer", "torch.float32"]
    expected = wikisum_side[name]["logits"]
    assert len(got["logits"]) == len(expected) == 4
    assert max(len(s) for s in wikisum_side[name]["sequences"]) > 2 * MODELS["t-dmca"][
        "block_size"]  # several local blocks and compressed slots
    for ours, theirs in zip(got["logits"], expected, strict=True):
        torch.testing.assert_close(torch.tensor(ours), theirs, rtol=0, atol=1e-5)


@pytest.mark.parametrize("name", MODELS)
def test_greedy_generate_is_wikisum_decode_beam_1(name, loaded, wikisum_side):
    side, got = wikisum_side[name], loaded[name]
    assert got["summary_ids"] == side["greedy"]
    eos = 3
    cut = [g[:g.index(eos)] if eos in g else g for g in got["generated"]]
    assert cut == side["greedy"]
    assert len({tuple(g) for g in side["greedy"]}) > 1 or len(set(side["greedy"][0])) > 1
    assert got["texts"] == side["decoded"]


def test_the_tokenizer_gives_wikisums_ids_and_prompt(loaded, wikisum_side):
    for name in MODELS:
        assert loaded[name]["encode"] == wikisum_side[name]["ids"]
        assert loaded[name]["call"] == wikisum_side[name]["ids"]
        assert loaded[name]["prompt"] == wikisum_side[name]["prompt"]
        assert len(wikisum_side[name]["prompt"]) == L + 1  # cut to L, then <sep>


def test_the_folder_holds_a_card_config_and_no_wikisum_import(runs):
    run, folder = runs["t-dmca"]
    config = json.loads((folder / "config.json").read_text())
    assert config["auto_map"] == {"AutoConfig": "configuration_wikisum.WikisumConfig",
                                  "AutoModelForCausalLM": "modeling_wikisum.WikisumForCausalLM"}
    assert config["model_type"] == "wikisum" and config["wikisum_model"] == "t-dmca"
    tokenizer = json.loads((folder / "tokenizer_config.json").read_text())
    assert tokenizer["auto_map"]["AutoTokenizer"][0] == "tokenization_wikisum.WikisumTokenizer"
    for path in folder.glob("*.py"):
        source = path.read_text()
        assert "from wikisum" not in source and "import wikisum" not in source, path.name
    card = (folder / "README.md").read_text()
    assert card.startswith("---\n")
    meta = yaml.safe_load(card.split("---\n")[1])
    assert meta["library_name"] == "transformers" and meta["datasets"] == ["data"]
    assert (meta["wikisum"]["extractor"], meta["wikisum"]["L"]) == ("tfidf", L)
    dev = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()
           if '"dev_ppl"' in line and '"event"' not in line][-1]
    metric = meta["model-index"][0]["results"][0]["metrics"][0]
    assert metric["type"] == "perplexity" and metric["value"] == round(dev["dev_ppl"], 4)
    with pytest.raises(ValueError, match="is a `wikisum export --format hf` folder"):
        export.load(folder)


def test_other_families_are_refused_in_one_line(toy_data, tmp_path):
    run = tmp_path / "t-ed"
    training.train(TrainConfig(model="t-ed", data=str(toy_data), out=str(run), preset="tiny",
                               steps=1, max_input_tokens=L, batch_tokens=400, warmup_steps=1,
                               eval_every=0, log_every=1, device="cpu"))
    with pytest.raises(SystemExit, match=r"--format hf exports t-d and t-dmca only, not t-ed: ")\
            as refused:
        cli.main(["export", "--run", str(run), "--out", str(tmp_path / "out"), "--format", "hf"])
    assert "\n" not in str(refused.value)
    assert not (tmp_path / "out").exists()
