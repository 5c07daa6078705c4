"""`wikisum export` and `models.summarize` on a tiny trained t-dmca: the export loads without
the training state, and summarize builds the model input as training did (title, <t>, the
paragraphs in the extractor's order, cut to L), decodes and detokenises."""

from __future__ import annotations

import hashlib
import json
import pickle
import shutil
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch
from toys import TOY, config

from wikisum import extractors, generation
from wikisum.core import schemas, shards
from wikisum.core.loader import Dataset
from wikisum.extractors import learned, trees
from wikisum.generation import export, inference
from wikisum.generation.decoding import beam_search
from wikisum.models.base import make_batch
from wikisum.training import checkpoint, datastats
from wikisum.training import loop as training
from wikisum.workflows import cli

TEXTS = ["the river runs north of the city.\nA green house stands by the stone bridge.",
         "Alpha beta gamma delta.\n\n- small light over the river"]
TITLE = "river city"


@pytest.fixture(scope="module")
def exported(tiny_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("exports") / "tiny"
    assert cli.main(["export", "--run", str(tiny_run), "--out", str(out)]) == 0
    return out


def expected_p99(data) -> int:
    lengths = sorted(len(r["lead_ids"]) + 1 for r in Dataset(str(data)).rows("train")
                     if len(r["lead_ids"]))
    return lengths[-(-99 * len(lengths) // 100) - 1]


def test_train_records_the_target_lengths(tiny_run, toy_data):
    stats = json.loads((tiny_run / datastats.STATS_FILE).read_text())
    assert stats["examples"] == 27 and stats["read"] == 30  # 3 empty leads
    assert stats["target_tokens"]["p99"] == expected_p99(toy_data)
    assert datastats.default_max_len(tiny_run) == 2 * expected_p99(toy_data)


def test_a_run_without_the_record_falls_back_with_a_warning(tmp_path, capsys):
    assert datastats.default_max_len(tmp_path) == datastats.FALLBACK_MAX_LEN == 500
    assert "--max-len defaults to 500" in capsys.readouterr().err
    assert datastats.max_len_from({"target_tokens": {"p99": 4000}}) == datastats.MAX_LEN_CAP


def test_export_holds_weights_config_and_tokenizer_only(exported, tiny_run, toy_data,
                                                        tmp_path):
    from safetensors.torch import load_file

    assert sorted(p.name for p in exported.iterdir() if not p.name.startswith(".wikisum")) == [
        "README.md", "config.json", "data_stats.json", "model.safetensors", "tokenizer.model"]
    info = json.loads((exported / "config.json").read_text())
    assert info["format"] == export.EXPORT_FORMAT and info["model"] == "t-dmca"
    assert info["input"] == {"extractor": "tfidf", "corpus": "combined", "max_input_tokens": 24,
                             "target": "lead", "inputs": "ranked", "max_target_tokens": None}
    assert info["decoding"] == {"beam": 4, "alpha": 0.6, "max_len": 2 * expected_p99(toy_data),
                                "min_len": 0}
    assert all(isinstance(t, torch.Tensor) for t in load_file(exported / "model.safetensors")
               .values())
    # Moved away from the run, and the run gone: it still loads, with the run's weights.
    moved = tmp_path / "elsewhere"
    shutil.copytree(exported, moved)
    bundle = generation.load_export(str(moved))
    trained = checkpoint.load(str(tiny_run)).model.state_dict()
    assert bundle.model.state_dict().keys() == trained.keys()
    assert all(torch.equal(bundle.model.state_dict()[k], v) for k, v in trained.items())
    assert (bundle.kind, bundle.step, bundle.max_input_tokens) == ("export", 3, 24)
    assert not bundle.model.training


def test_summarize_a_run_and_its_export_end_to_end(tiny_run, exported):
    summary = generation.summarize(str(tiny_run), TEXTS, title=TITLE, max_len=10)
    assert isinstance(summary, str)
    assert generation.summarize(str(exported), TEXTS, title=TITLE, max_len=10) == summary

    # The same, by hand: the input as training builds it, then beam search.
    bundle = generation.load_bundle(str(exported))
    paragraphs = ["the river runs north of the city.",
                  "A green house stands by the stone bridge.", "Alpha beta gamma delta.",
                  "small light over the river"]
    assert inference.paragraphs_of(TEXTS) == paragraphs
    sp = bundle.tokenizer
    order = extractors.get("tfidf").rank(TITLE, paragraphs)
    ids = sp.encode(TITLE) + [bundle.special_ids["title_sep"]]
    for i in order:
        ids += sp.encode(paragraphs[i])
    assert inference.model_input(bundle, TEXTS, TITLE) == ids[:24]
    hyp = beam_search(bundle.model, make_batch([ids[:24]], [[bundle.eos_id]]), beam=4,
                      alpha=0.6, max_len=10, eos_id=bundle.eos_id)[0]
    assert summary == sp.decode(hyp.tokens)


def test_summarize_takes_the_decoding_options(exported):
    bundle = generation.load_bundle(str(exported))
    drawn = [generation.summarize(bundle, TEXTS, title=TITLE, sample=True, top_k=5, seed=3,
                              max_len=12) for _ in range(2)]
    assert drawn[0] == drawn[1]
    greedy = generation.summarize(bundle, TEXTS, title=TITLE, beam=1, max_len=12)
    assert generation.summarize(bundle, TEXTS, title=TITLE, sample=True, top_k=1, seed=9,
                            max_len=12) == greedy
    text = generation.summarize(bundle, TEXTS, title=TITLE, no_repeat_ngram_size=1, max_len=12)
    pieces = bundle.tokenizer.encode(text)
    assert len(set(pieces)) == len(pieces)


def test_summarize_says_what_is_wrong(exported, tmp_path):
    bundle = generation.load_bundle(str(exported))
    with pytest.raises(ValueError, match="nothing to summarize"):
        generation.summarize(bundle, ["  \n 12:30 \n"], title=TITLE)
    with pytest.raises(ValueError, match="cheating oracle"):
        generation.summarize(bundle, TEXTS, title=TITLE, extractor="cheating")
    with pytest.raises(TypeError, match="unknown decoding settings"):
        generation.summarize(bundle, TEXTS, title=TITLE, beams=3)
    with pytest.raises(ValueError, match="apply to sampling only"):
        generation.summarize(bundle, TEXTS, title=TITLE, top_p=0.5)
    with pytest.raises(FileNotFoundError, match="run directory .* or an export directory"):
        generation.summarize(str(tmp_path / "nowhere"), TEXTS)


def test_export_refuses_a_foreign_directory(tiny_run, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(SystemExit, match="holds files wikisum did not write"):
        cli.main(["export", "--run", str(tiny_run), "--out", str(tmp_path)])
    with pytest.raises(FileExistsError, match="is not an earlier export"):
        export.export(tiny_run, tmp_path)
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(ValueError, match="not a wikisum export"):
        export.load_export(tmp_path)


# ------------------------------------------------------------------------------------------
# An export is shared: nothing in it is code, and its tokenizer is the one it was exported with.


class Payload:
    """Unpickling this creates ``marker``: what a crafted file in a shared export could do."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_an_export_holding_a_pickle_is_refused_and_never_loaded(exported, toy_data, tmp_path):
    marker = tmp_path / "ran"
    copy = tmp_path / "export"
    shutil.copytree(exported, copy)
    info = json.loads((copy / "config.json").read_text())
    info["input"]["extractor"] = "learned"  # as an export of a learned-extractor model
    (copy / "config.json").write_text(json.dumps(info))
    blob = pickle.dumps({"format": 1, "model": Payload(marker)})
    (copy / "extractor.pkl").write_bytes(blob)
    refused = (r"holds extractor\.pkl, a pickle, which can run code when loaded: the export is "
               r"refused and nothing in it was loaded; .* export the run again \(`wikisum "
               r"export --run RUN --out")
    with pytest.raises(ValueError, match=refused):
        generation.summarize(str(copy), TEXTS, title=TITLE, max_len=5)
    with pytest.raises(SystemExit, match="wikisum decode: .*extractor.pkl"):
        cli.main(["decode", "--run", str(copy), "--data", str(toy_data), "--out",
                  str(tmp_path / "preds.jsonl"), "--device", "cpu"])
    (copy / "extractor.pkl").rename(copy / "extractor.json")  # under the new name: read, refused
    with pytest.raises(ValueError, match="pickled learned extractor .* so it is not read"):
        generation.summarize(str(copy), TEXTS, title=TITLE, max_len=5)
    assert not marker.exists()
    pickle.loads(blob)  # the payload is real: unpickling it runs it
    assert marker.exists()


def test_an_export_with_another_tokenizer_is_refused(exported, toy_data, other_vocab, tmp_path):
    copy = tmp_path / "export"
    shutil.copytree(exported, copy)
    recorded = sha256(toy_data.parent / "vocab.model")
    assert json.loads((copy / "config.json").read_text())[export.TOKENIZER_HASH] == recorded
    shutil.copy(other_vocab, copy / "tokenizer.model")
    with pytest.raises(ValueError, match=f"tokenizer.model is not the vocabulary the model was "
                                         f"trained with: its SHA-256 is {sha256(other_vocab)}, "
                                         f".*config.json records {recorded}"):
        generation.load_bundle(str(copy))


def learned_extractor_run(toy_data: Path, root: Path) -> tuple[Path, Path]:
    """A toy run trained on a copy of the toy data ranked by a learned extractor (two small
    trees: tf-idf, then position), and that extractor's file."""
    data = root / "data"
    shutil.copytree(toy_data, data)
    for path in data.glob("*.parquet"):
        rows = pq.read_table(path).to_pylist()
        for row in rows:
            row["rankings"].append({"extractor": "learned", "corpus": "combined",
                                    "order": [1, 2, 0]})
        shards.write_table(str(path), rows, schemas.RANKED)
    def tree(feature: int, threshold: float, low: float, high: float) -> dict:
        return {"leaf": [False, True, True], "feature": [feature, 0, 0],
                "threshold": [threshold, 0.0, 0.0], "missing_left": [True, False, False],
                "left": [1, 0, 0], "right": [2, 0, 0], "value": [0.0, low, high]}

    fitted = trees.from_dict({"kind": trees.KIND, "baseline": 0.1,
                              "n_features": len(learned.FEATURES),
                              "trees": [tree(0, 0.05, 0.0, 0.3), tree(3, 0.5, 0.2, -0.1)]})
    model = data / learned.FILE_NAME
    learned.Learned(fitted, info={"articles": 3}).save(str(model))
    info = json.loads((data / "dataset.json").read_text())
    info.update(extractors=["tfidf", "learned"], learned_model=str(model))
    (data / "dataset.json").write_text(json.dumps(info))
    run = root / "run"
    training.train(config(data, run, extractor="learned", steps=2, eval_every=0), TOY)
    return run, model


def test_an_export_holds_the_learned_extractor_as_json(toy_data, tmp_path):
    run, model = learned_extractor_run(toy_data, tmp_path)
    out = tmp_path / "export"
    export.export(run, out, factory=TOY)
    assert sorted(p.name for p in out.iterdir() if p.suffix in (".json", ".pkl")) == [
        "config.json", "data_stats.json", "extractor.json"]
    bundle = export.load_export(out, factory=TOY)
    assert bundle.learned_extractor == str(out / "extractor.json")
    paragraphs = inference.paragraphs_of(TEXTS)
    original = learned.load(str(model))
    assert np.array_equal(learned.load(bundle.learned_extractor).scores(TITLE, paragraphs),
                          original.scores(TITLE, paragraphs))
    assert inference.ranker(bundle).rank(TITLE, paragraphs) == original.rank(TITLE, paragraphs)
    # An export made before (its extractor pickled) is refused; exporting again mends it.
    (out / "extractor.pkl").write_bytes(pickle.dumps({"format": 1}))
    with pytest.raises(ValueError, match="export the run again"):
        export.load_export(out, factory=TOY)
    export.export(run, out, factory=TOY)
    assert not (out / "extractor.pkl").exists()
    assert export.load_export(out, factory=TOY).learned_extractor == str(out / "extractor.json")
    # A dataset's learned extractor pickled by an older wikisum is never loaded by export.
    marker = tmp_path / "ran"
    model.write_bytes(pickle.dumps({"format": 1, "model": Payload(marker)}))
    with pytest.raises(ValueError, match="pickled learned extractor .* retrain it with "
                                         "`wikisum rank --train-learned`"):
        export.export(run, tmp_path / "again", factory=TOY)
    assert not marker.exists()
