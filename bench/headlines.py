"""Headline generation on Gigaword: SEQ2SEQ, ATTEXP, ADADEC and SEQ2SEQ+WFE trained alike.

What it measures (the figures the headline issue asks for), on the 10k training and 1k
validation pairs of ``../shared/data/gigaword`` (Rush et al. 2015 format):

* **ROUGE-1/2/L F1** (``wikisum.models.evaluation.rouge``) of each model's headlines of the
  validation pairs, decoded with AdaDec's setting: beam 5, length penalty alpha 1.0, at most 30
  subwords.
* **Redundancy** (``wikisum.models.evaluation.redundancy``: the share of outputs repeating a content
  word, repeated content tokens per output) of SEQ2SEQ (no WFE) and of SEQ2SEQ+WFE decoded with
  the word-frequency constraint, at beams 1, 5 and 10; SEQ2SEQ+WFE without the constraint too,
  which separates what training the estimator does from what decoding with it does.
* **Retrieval time** of ``wikisum exemplars`` (``wikisum.pipeline.exemplars.run``): 10k train
  queries x 10k train sources, and 1k validation queries x 10k.

Steps, all in ``--work`` (default ``bench/results/headlines/``, git-ignored):

    convert-pairs train (BPE, --vocab-size types) and valid.*.filter.txt as split "dev"
    exemplars (timed)
    train the four models: the same preset, size, steps, batch budget, learning rate and seed,
        each in a child process with --threads torch threads, --jobs of them at a time
    decode the dev split (workflows.decode.decode) and score it (models.evaluation.summarize)

The papers trained on 3.8M pairs with 25k BPE types; 10k pairs get a smaller vocabulary (8000
by default) and models small enough to train on a CPU in minutes, so absolute scores are far
below the papers'. The comparison between models, and the redundancy with and without WFE, are
the point. Run by hand, never by CI::

    .venv/bin/python bench/headlines.py            # about 30 minutes on 2 cores
    .venv/bin/python bench/headlines.py --quick    # a smoke run: 30 steps, 50 dev pairs
    .venv/bin/python bench/headlines.py --rescore  # score the last run's predictions again

Besides ROUGE and redundancy, each decoding records how far outputs collapse onto a few
headlines (share of distinct outputs, the most frequent one), redundancy without Gigaword's
``<unk>`` marker, and for ATTEXP and ADADEC how often the output is the exemplar itself; the
retrieval records how many queries have a near-duplicate exemplar. A prefix baseline (an
article's first 8 words) and the redundancy of the reference headlines give the scale.

It prints the tables and writes every figure, the commands, the machine and the seed to
``bench/results/headlines.json`` (``--out``; ``headlines-quick.json`` with ``--quick``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "gigaword"
RESULTS = ROOT / "bench" / "results"
# The files of the data folder (its MANIFEST.md): split -> (source lines, target lines).
FILES = {"train": ("train.article.txt", "train.title.txt"),
         "dev": ("valid.article.filter.txt", "valid.title.filter.txt")}

# label -> (registry name, trained with the word-frequency estimator)
MODELS = {"SEQ2SEQ": ("seq2seq", False), "ATTEXP": ("attexp", False),
          "ADADEC": ("adadec", False), "SEQ2SEQ+WFE": ("seq2seq", True)}
# Child processes start in this order, the slowest first (ATTEXP and ADADEC read exemplars;
# SEQ2SEQ+WFE decodes the most), so that two jobs at a time end close together.
ORDER = ("SEQ2SEQ+WFE", "ATTEXP", "ADADEC", "SEQ2SEQ")

# The "tiny" preset widened: a step of a 40-pair batch costs ~0.3 s on one core.
WIDEN_TINY = {"d_embed": 64, "d_hidden": 128, "encoder_layers": 2, "exemplar_hidden": 32}
WFE_WEIGHT = 0.1  # models.recurrent: ~1 / (target length) for headlines of ~10 subwords

BEAMS = (1, 5, 10)
MAIN_BEAM = 5  # AdaDec's setting (Peng et al. 2019): beam 5, length penalty 1.0
ALPHA = 1.0
MAX_LEN = 30  # subwords, </s> included: a dev headline has ~11 (at most 23)
UNK_MARKS = ("\u2047", "<unk>")  # how an unknown piece decodes; Gigaword's own marker
UNK_WORD = "unk"
PREFIX_WORDS = 8  # the prefix baseline: an article's first words, about a headline's length
NEAR_DUPLICATE = 0.9  # bag-of-words cosine of an exemplar's source that makes it a near copy

# ROUGE-1/2/L F1 the papers report on the Gigaword test set of Rush et al. (3.8M train pairs).
PAPERS = {"SEQ2SEQ (Peng et al. 2019)": (35.8, 17.5, 33.5),
          "ADADEC (Peng et al. 2019)": (37.3, 18.5, 34.7),
          "EncDec+WFE (Suzuki & Nagata 2017)": (36.30, 17.31, 33.88)}


@dataclass
class Settings:
    """What every model of one benchmark run shares; a child process reads it as JSON."""

    data: str  # the converted dataset (work/data)
    preset: str = "tiny"
    size: dict = field(default_factory=dict)  # model config fields over the preset
    steps: int = 1200
    warmup_steps: int = 300
    lr: float = 1e-3
    batch_tokens: int = 2000
    max_input_tokens: int = 100  # subwords; articles have ~36 (at most 76): none is cut
    seed: int = 0
    device: str = "auto"
    threads: int = 1
    decode_limit: int | None = None  # None: every dev pair
    decode_batch: int = 50
    beams: tuple[int, ...] = BEAMS
    alpha: float = ALPHA
    max_len: int = MAX_LEN


def decodes(label: str, settings: Settings) -> list[tuple[int, bool]]:
    """(beam, WFE constraint) of every decoding of model ``label``: AdaDec's beam for all;
    every beam for SEQ2SEQ and SEQ2SEQ+WFE, the latter with and without the constraint."""
    if label == "SEQ2SEQ":
        return [(b, False) for b in settings.beams]
    if label == "SEQ2SEQ+WFE":
        return [(b, wfe) for wfe in (True, False) for b in settings.beams]
    return [(MAIN_BEAM, False)]


def train_overrides(label: str, settings: Settings) -> list[str]:
    """key=value settings of the run, as `wikisum train` takes them."""
    _, wfe = MODELS[label]
    size = dict(settings.size)
    if wfe:
        size["wfe_weight"] = WFE_WEIGHT
    return [f"{k}={json.dumps(v)}" for k, v in size.items()] + [
        f"warmup_steps={settings.warmup_steps}", f"lr={settings.lr}", f"seed={settings.seed}",
        f"eval_every={settings.steps}", "dev_examples=null", f"checkpoint_every={settings.steps}",
        "keep_checkpoints=1", "log_every=50", "tensorboard=false"]


def train_command(label: str, settings: Settings, run: str) -> list[str]:
    """The `wikisum train` command line that trains what the child process trains."""
    name, wfe = MODELS[label]
    return (["wikisum", "train", "--model", name, "--data", settings.data, "--out", run,
             "--preset", settings.preset, "--steps", str(settings.steps),
             "--batch-tokens", str(settings.batch_tokens),
             "--max-input-tokens", str(settings.max_input_tokens), "--device", settings.device]
            + (["--wfe"] if wfe else []) + train_overrides(label, settings))


def decode_command(run: str, preds: str, beam: int, wfe: bool, settings: Settings) -> list[str]:
    return (["wikisum", "decode", "--run", run, "--split", "dev", "--out", preds,
             "--beam", str(beam), "--alpha", str(settings.alpha),
             "--max-len", str(settings.max_len), "--batch-size", str(settings.decode_batch),
             "--device", settings.device]
            + (["--limit", str(settings.decode_limit)] if settings.decode_limit else [])
            + (["--wfe"] if wfe else []))


def degeneracy(predictions: list[str]) -> dict:
    """How far outputs collapse onto a few headlines: the share of distinct outputs and of the
    most frequent one (1.0 and 1/n for outputs that all differ)."""
    if not predictions:
        raise ValueError("no predictions to measure")
    counts = Counter(predictions)
    top, top_count = counts.most_common(1)[0]
    n = len(predictions)
    return {"distinct_share": len(counts) / n, "top_share": top_count / n, "top": top}


def score(predictions: list[str], references: list[str]) -> dict:
    """ROUGE F1 (percent), redundancy and length of predictions against references.

    Gigaword marks rare words "<unk>"; the BPE vocabulary has no "<" nor ">", so a generated
    marker decodes as "⁇ unk ⁇" and every "unk" is one content word to ``redundancy``. Two
    markers in an output are two rare words, not a repeat: ``redundancy_without_unk`` does not
    count them.
    """
    from wikisum.models import evaluation

    means = evaluation.rouge(predictions, references)
    return {"rouge_f": {k: 100 * means[k]["f"] for k in evaluation.ROUGE_TYPES},
            "redundancy": evaluation.redundancy(predictions),
            "redundancy_without_unk": evaluation.redundancy(
                predictions, evaluation.STOPWORDS | {UNK_WORD}),
            "unk_share": sum(any(m in p for m in UNK_MARKS) for p in predictions)
            / len(predictions),
            "words": sum(len(p.split()) for p in predictions) / len(predictions),
            "empty": sum(not p.strip() for p in predictions),
            **degeneracy(predictions)}


def exemplar_match(data: str, records: list[dict], tokenizer) -> dict:
    """How much the outputs of a model that reads exemplars (ATTEXP, ADADEC) are the exemplar:
    the share of outputs equal to their exemplar's text, and their mean ROUGE-1 F1 (percent)
    against it. Dev exemplars are the targets of the most similar training sources."""
    from wikisum.models import evaluation
    from wikisum.pipeline.loader import Dataset

    wanted = {r["id"] for r in records}
    texts = {ex.id: tokenizer.decode(list(ex.exemplar))
             for ex in Dataset(data).examples("dev", exemplars=True) if ex.id in wanted}
    exemplars = [texts[r["id"]] for r in records]
    predictions = [r["prediction"] for r in records]
    means = evaluation.rouge(predictions, exemplars)
    return {"equal_share": sum(p.strip() == e.strip() for p, e in zip(predictions, exemplars,
                                                                      strict=True)) / len(records),
            "rouge1_f": 100 * means["rouge1"]["f"]}


def score_records(records: list[dict], name: str, data: str, tokenizer) -> dict:
    """:func:`score` of a predictions file's records, with :func:`exemplar_match` for the
    models that read exemplars."""
    out = score([r["prediction"] for r in records], [r["reference"] for r in records])
    if name in ("attexp", "adadec"):
        out["exemplar_match"] = exemplar_match(data, records, tokenizer)
    return out


def read_predictions(path: str) -> list[dict]:
    return [json.loads(line) for line in Path(path).read_text("utf-8").splitlines()]


# ------------------------------------------------------------------------------------------
# The child process: train one model, decode, score.


def child(spec_path: str) -> int:
    """Train, decode and score the model a spec file names; writes its result beside it."""
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    settings = Settings(**spec["settings"])
    label, run = spec["label"], spec["run"]
    os.environ.setdefault("OMP_NUM_THREADS", str(settings.threads))
    import torch

    from wikisum.models import checkpoint, evaluation, training
    from wikisum.models.config import make_config
    from wikisum.workflows.decode import decode

    torch.set_num_threads(settings.threads)
    name, wfe = MODELS[label]
    options = {"preset": settings.preset, "steps": settings.steps,
               "batch_tokens": settings.batch_tokens,
               "max_input_tokens": settings.max_input_tokens, "device": settings.device}
    config = make_config(name, settings.data, run, options=options,
                                  overrides=train_overrides(label, settings), wfe=wfe)
    summary = training.train(config)
    loaded = checkpoint.load(run)
    result = {"label": label, "model": name, "wfe_trained": wfe,
              "parameters": sum(p.numel() for p in loaded.model.parameters()),
              "model_config": asdict(loaded.config), "train_seconds": summary["seconds"],
              "final_loss": summary["loss"], "dev": summary["dev"],
              "skipped": summary["skipped"], "tokens_seen": summary["tokens_seen"],
              "commands": [shlex.join(train_command(label, settings, run))], "decodes": []}
    tokenizer = loaded.tokenizer
    del loaded
    for beam, constrained in decodes(label, settings):
        preds = str(Path(run) / f"dev-beam{beam}{'-wfe' if constrained else ''}.jsonl")
        out = decode(run, "dev", preds, beam=beam, alpha=settings.alpha, max_len=settings.max_len,
                     batch_size=settings.decode_batch, limit=settings.decode_limit,
                     wfe=constrained, device=settings.device, progress=False)
        records = read_predictions(preds)
        metrics = evaluation.summarize(records)
        entry = {"beam": beam, "wfe_decoding": constrained, "seconds": out["seconds"],
                 "examples": out["examples"], "predictions": preds,
                 "reference_perplexity": metrics["perplexity"],
                 **score_records(records, name, settings.data, tokenizer)}
        result["decodes"].append(entry)
        result["commands"].append(shlex.join(decode_command(run, preds, beam, constrained,
                                                            settings)))
        print(f"{label} beam {beam}{' wfe' if constrained else ''}: R-1/2/L "
              + "/".join(f"{v:.1f}" for v in entry["rouge_f"].values())
              + f", {out['seconds']:.0f} s", flush=True)
    Path(spec["result"]).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


# ------------------------------------------------------------------------------------------
# The parent: data, retrieval, children, tables.


def check_data(folder: Path) -> None:
    missing = [name for pair in FILES.values() for name in pair if not (folder / name).is_file()]
    if missing:
        raise SystemExit(f"bench/headlines.py: {folder} lacks {', '.join(missing)}: pass --data "
                         "a folder of Gigaword pairs in the Rush et al. format (see "
                         "../shared/data/gigaword/MANIFEST.md)")


def prepare_data(folder: Path, work: Path, vocab_size: int, reuse: bool) -> dict:
    """Convert train and dev into ``work/data`` (kept with ``reuse`` when both are there)."""
    from wikisum.pipeline import pairs

    data = work / "data"
    info = pairs.read_info(str(data)) if (data / "dataset.json").is_file() else None
    if reuse and info and set(FILES) <= set(info.get("rows", {})):
        return {"reused": True, "vocab_size": info["vocab_size"], "rows": info["rows"]}
    if data.exists():
        shutil.rmtree(data)
    started = time.perf_counter()
    rows = {}
    for split, (source, target) in FILES.items():  # train first: it trains the vocabulary
        summary = pairs.convert(pairs.PairsConfig(str(folder / source), str(folder / target),
                                                  split, str(data), vocab_size=vocab_size))
        rows[split] = summary["rows"]
    info = pairs.read_info(str(data))
    return {"reused": False, "vocab_size": info["vocab_size"], "rows": rows,
            "seconds": time.perf_counter() - started}


def lengths(data: Path) -> dict:
    """Mean subword lengths of sources and targets per split."""
    from wikisum.pipeline.loader import Dataset

    out = {}
    ds = Dataset(str(data))
    for split in FILES:
        n = src = tgt = 0
        for ex in ds.examples(split):
            n, src, tgt = n + 1, src + len(ex.inputs), tgt + len(ex.targets)
        out[split] = {"source": src / n, "target": tgt / n}
    return out


def retrieval(data: Path, workers: int) -> dict:
    """Time `wikisum exemplars` on every split."""
    from wikisum.pipeline import exemplars

    summary = exemplars.run(exemplars.ExemplarConfig(str(data), workers=workers))
    out = {"workers": workers, "total_seconds": summary["seconds"],
           "splits": {s: {"queries": e["rows"], "seconds": e["seconds"],
                          "mean_similarity": e["mean_similarity"]}
                      for s, e in summary["splits"].items()}}
    add_near_duplicates(out, data)
    return out


def add_near_duplicates(retrieved: dict, data: Path) -> None:
    """The share of each split's queries whose exemplar's source has a cosine of at least
    NEAR_DUPLICATE with theirs: a training example with a near-duplicate exemplar teaches a
    model to copy it, which pays off on the dev split only as often as dev has one."""
    import pyarrow.parquet as pq

    from wikisum.pipeline.loader import exemplars_path

    for split, entry in retrieved["splits"].items():
        similarity = pq.read_table(exemplars_path(str(data), split),
                                   columns=["similarity"])["similarity"].to_numpy()
        entry["near_duplicate_share"] = float((similarity >= NEAR_DUPLICATE).mean())


def prefix_baseline(folder: Path, limit: int | None) -> dict:
    """The first PREFIX_WORDS words of each dev article as its headline, and (under
    "references") the redundancy of the dev headlines themselves: how often real headlines
    repeat a word."""
    from wikisum.models import evaluation

    source, target = (folder / name for name in FILES["dev"])
    articles = source.read_text("utf-8").splitlines()[:limit]
    titles = target.read_text("utf-8").splitlines()[:limit]
    out = score([" ".join(a.split()[:PREFIX_WORDS]) for a in articles], titles)
    out["references"] = {
        "redundancy": evaluation.redundancy(titles),
        "redundancy_without_unk": evaluation.redundancy(titles,
                                                        evaluation.STOPWORDS | {UNK_WORD}),
        "words": sum(len(t.split()) for t in titles) / len(titles)}
    return out


def run_children(labels: list[str], settings: Settings, work: Path, jobs: int,
                 reuse: bool) -> dict[str, dict]:
    """One child process per model, ``jobs`` at a time; returns label -> result (or error)."""
    pending = [label for label in ORDER if label in labels]
    running: dict[str, tuple[subprocess.Popen, Path, float]] = {}
    results: dict[str, dict] = {}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(settings.threads)}
    while pending or running:
        while pending and len(running) < jobs:
            label = pending.pop(0)
            folder = work / "runs" / label.lower().replace("+", "-")
            if folder.exists() and not reuse:
                shutil.rmtree(folder)
            folder.mkdir(parents=True, exist_ok=True)
            spec = {"label": label, "run": str(folder), "result": str(folder / "result.json"),
                    "settings": asdict(settings)}
            (folder / "spec.json").write_text(json.dumps(spec, indent=1) + "\n", "utf-8")
            log = (folder / "child.log").open("w", encoding="utf-8")
            command = [sys.executable, __file__, "--child", str(folder / "spec.json")]
            proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    cwd=ROOT)
            log.close()
            running[label] = (proc, folder, time.perf_counter())
            print(f"started {label} (pid {proc.pid}, log {folder / 'child.log'})", flush=True)
        time.sleep(2.0)
        for label, (proc, folder, started) in list(running.items()):
            if proc.poll() is None:
                continue
            del running[label]
            wall = time.perf_counter() - started
            if proc.returncode == 0:
                results[label] = json.loads((folder / "result.json").read_text("utf-8"))
                results[label]["wall_seconds"] = wall
                print(f"done {label} in {wall:.0f} s", flush=True)
            else:
                tail = (folder / "child.log").read_text("utf-8").strip().splitlines()[-5:]
                results[label] = {"label": label, "error": "\n".join(tail),
                                  "returncode": proc.returncode}
                print(f"FAILED {label} (exit {proc.returncode}):\n  " + "\n  ".join(tail),
                      flush=True)
    return results


def main_decode(result: dict, beam: int = MAIN_BEAM, wfe: bool = False) -> dict | None:
    return next((d for d in result.get("decodes", [])
                 if d["beam"] == beam and d["wfe_decoding"] == wfe), None)


def report(results: dict[str, dict], prefix: dict, retrieved: dict, settings: Settings) -> None:
    print(f"\nValidation pairs, beam {MAIN_BEAM}, alpha {settings.alpha}, max_len "
          f"{settings.max_len} (ROUGE F1 %):")
    print(f"{'model':<14}{'params':>9}{'train s':>9}{'dev ppl':>9}{'R-1':>7}{'R-2':>7}"
          f"{'R-L':>7}{'words':>7}{'distinct':>9}{'top':>6}")
    for label in MODELS:
        r = results.get(label, {})
        d = main_decode(r, MAIN_BEAM, False)
        if d is None:
            print(f"{label:<14} {r.get('error', 'not run').splitlines()[-1][:80]}")
            continue
        ppl = d["reference_perplexity"] or float("nan")  # teacher-forced, per subword
        print(f"{label:<14}{r['parameters']:>9,}{r['train_seconds']:>9.0f}{ppl:>9.2f}"
              + "".join(f"{v:>7.2f}" for v in d["rouge_f"].values())
              + f"{d['words']:>7.1f}{100 * d['distinct_share']:>8.1f}%"
              + f"{100 * d['top_share']:>5.1f}%")
    print(f"{'PREFIX-' + str(PREFIX_WORDS):<14}{'':>27}"
          + "".join(f"{v:>7.2f}" for v in prefix["rouge_f"].values())
          + f"{prefix['words']:>7.1f}")

    for label in MODELS:
        d = main_decode(results.get(label, {}), MAIN_BEAM, False) or {}
        if "exemplar_match" in d:
            m = d["exemplar_match"]
            print(f"{label}: {100 * m['equal_share']:.1f}% of outputs equal their exemplar; "
                  f"ROUGE-1 F1 against it {m['rouge1_f']:.2f}")

    print("\nRedundancy (share of outputs repeating a content word; repeated tokens per output):")
    print(f"{'model, decoding':<30}{'beam':>5}{'R-1':>7}{'R-2':>7}{'R-L':>7}{'repeating':>11}"
          f"{'rep/out':>9}{'no-unk':>8}{'rep/out':>9}{'words':>7}{'seconds':>9}")
    rows = [("SEQ2SEQ", False, "SEQ2SEQ"), ("SEQ2SEQ+WFE", True, "SEQ2SEQ+WFE, WFE decoding"),
            ("SEQ2SEQ+WFE", False, "SEQ2SEQ+WFE, plain decoding")]
    for label, wfe, text in rows:
        for beam in settings.beams:
            d = main_decode(results.get(label, {}), beam, wfe)
            if d is None:
                continue
            red, known = d["redundancy"], d["redundancy_without_unk"]
            print(f"{text:<30}{beam:>5}" + "".join(f"{v:>7.2f}" for v in d["rouge_f"].values())
                  + f"{100 * red['share_repeating']:>10.1f}%"
                  + f"{red['repeated_tokens_per_output']:>9.3f}"
                  + f"{100 * known['share_repeating']:>7.1f}%"
                  + f"{known['repeated_tokens_per_output']:>9.3f}{d['words']:>7.1f}"
                  + f"{d['seconds']:>9.1f}")
    refs = prefix["references"]
    print(f"{'dev headlines (references)':<35}{'':>21}"
          f"{100 * refs['redundancy']['share_repeating']:>10.1f}%"
          f"{refs['redundancy']['repeated_tokens_per_output']:>9.3f}"
          f"{100 * refs['redundancy_without_unk']['share_repeating']:>7.1f}%"
          f"{refs['redundancy_without_unk']['repeated_tokens_per_output']:>9.3f}"
          f"{refs['words']:>7.1f}")
    print("(no-unk: the same without counting Gigaword's <unk> marker as a word)")

    print(f"\nExemplar retrieval (`wikisum exemplars`, {retrieved['workers']} worker(s)):")
    train_q = retrieved["splits"]["train"]["queries"]
    for split, e in retrieved["splits"].items():
        print(f"  {split}: {e['queries']:,} queries x {train_q:,} train sources: "
              f"{e['seconds']:.2f} s (mean top-1 cosine {e['mean_similarity']:.3f}; "
              f"{100 * e['near_duplicate_share']:.1f}% at least {NEAR_DUPLICATE})")
    print(f"  all, reading the shards included: {retrieved['total_seconds']:.2f} s")


def rescore(out: Path) -> int:
    """Score again the predictions files of the run ``out`` records (no training, no decoding):
    for a change of metrics. Timings, retrieval and commands are kept."""
    from wikisum.pipeline import vocab

    if not out.is_file():
        raise SystemExit(f"bench/headlines.py: {out} not found: --rescore reads the results of "
                         "an earlier run")
    record = json.loads(out.read_text("utf-8"))
    settings = Settings(**record["settings"])
    tokenizer = vocab.load(str(Path(settings.data) / "vocab.model"))
    for result in record["models"].values():
        for entry in result.get("decodes", []):
            records = read_predictions(entry["predictions"])
            entry.update(score_records(records, result["model"], settings.data, tokenizer))
    add_near_duplicates(record["retrieval"], Path(settings.data))
    record["prefix_baseline"] = prefix_baseline(Path(record["data_folder"]),
                                                settings.decode_limit)
    record["rescored"] = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                          "command": shlex.join(["python", "bench/headlines.py", *sys.argv[1:]])}
    report(record["models"], record["prefix_baseline"], record["retrieval"], settings)
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"\nrescored; written to {out}")
    return 0


def machine() -> dict:
    import torch

    from bench.machine import cpu_model

    return {"cpu": cpu_model(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "torch": torch.__version__, "loadavg": list(os.getloadavg())}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--child", metavar="SPEC", help=argparse.SUPPRESS)
    p.add_argument("--data", type=Path, default=DEFAULT_DATA, metavar="DIR",
                   help="Gigaword pairs (default: ../shared/data/gigaword)")
    p.add_argument("--work", type=Path, metavar="DIR",
                   help="converted data and runs (default: bench/results/headlines[-quick])")
    p.add_argument("--out", type=Path, metavar="RESULTS.json",
                   help="results (default: bench/results/headlines[-quick].json)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run: 30 steps, 50 dev pairs decoded")
    p.add_argument("--preset", default="tiny", choices=("tiny", "base", "paper"),
                   help="model size; tiny is widened to " + ", ".join(
                       f"{k} {v}" for k, v in WIDEN_TINY.items()) + " (default: %(default)s)")
    p.add_argument("--steps", type=int, help="optimizer updates per model (default: 1200)")
    p.add_argument("--batch-tokens", type=int, default=2000, metavar="N",
                   help="batch budget, padding and exemplar included (default: %(default)s)")
    p.add_argument("--warmup", type=int, metavar="N", help="warmup updates (default: 300)")
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate (%(default)s)")
    p.add_argument("--seed", type=int, default=0, help="training seed (default: %(default)s)")
    p.add_argument("--vocab-size", type=int, default=8000, metavar="N",
                   help="BPE types (default: %(default)s; the papers: 25k on 3.8M pairs)")
    p.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    p.add_argument("--jobs", type=int, default=2, help="models trained at a time (default: 2)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per model (default: 1)")
    p.add_argument("--retrieval-workers", type=int, default=1, metavar="N",
                   help="threads of `wikisum exemplars` (default: %(default)s)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda (default: auto)")
    p.add_argument("--reuse", action="store_true",
                   help="keep the converted data and trained runs of an earlier run in --work "
                        "(decode and score again; training time then reads ~0)")
    p.add_argument("--rescore", action="store_true",
                   help="only score again the predictions of the run --out records")
    from bench import options

    args = options.parse(p, argv)
    if args.child:
        return child(args.child)
    suffix = "-quick" if args.quick else ""
    out = args.out or RESULTS / f"headlines{suffix}.json"
    if args.rescore:
        return rescore(out)
    for name in ("steps", "warmup", "batch_tokens", "jobs", "threads", "retrieval_workers"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {value}")
    check_data(args.data)
    work = (args.work or RESULTS / f"headlines{suffix}").resolve()
    settings = Settings(
        data=str(work / "data"), preset=args.preset,
        size=WIDEN_TINY if args.preset == "tiny" else {},
        steps=args.steps or (30 if args.quick else Settings.steps),
        warmup_steps=args.warmup or (10 if args.quick else Settings.warmup_steps),
        lr=args.lr, batch_tokens=args.batch_tokens, seed=args.seed, device=args.device,
        threads=args.threads, decode_limit=50 if args.quick else None)

    started = time.perf_counter()
    host = machine()
    print(f"data: {args.data}; work: {work}; load average {host['loadavg'][0]:.2f}", flush=True)
    data = prepare_data(args.data, work, args.vocab_size, args.reuse)
    data["lengths"] = lengths(work / "data")
    retrieved = retrieval(work / "data", args.retrieval_workers)
    print(f"data: {data['rows']} pairs, {data['vocab_size']} BPE types; retrieval "
          f"{retrieved['total_seconds']:.1f} s", flush=True)
    results = run_children(args.models, settings, work, args.jobs, args.reuse)
    prefix = prefix_baseline(args.data, settings.decode_limit)
    report(results, prefix, retrieved, settings)
    host["loadavg_end"] = list(os.getloadavg())
    record = {
        "bench": "headlines", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": shlex.join(["python", "bench/headlines.py", *(argv or sys.argv[1:])]),
        "machine": host, "data_folder": str(args.data), "work": str(work), "data": data,
        "settings": asdict(settings), "wfe_weight": WFE_WEIGHT, "prefix_words": PREFIX_WORDS,
        "retrieval": retrieved, "prefix_baseline": prefix, "models": results,
        "papers_rouge_f": PAPERS, "wall_seconds": time.perf_counter() - started}
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"\n{time.perf_counter() - started:.0f} s in all; written to {out}")
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
