"""Headline generation on Gigaword: SEQ2SEQ, ATTEXP, ADADEC and SEQ2SEQ+WFE trained alike.

What it measures, on the 10k training and 1k validation pairs of ``../shared/data/gigaword``
(Rush et al. 2015 format):

* **ROUGE-1/2/L F1** (``wikisum.generation.evaluation.rouge``) of each model's headlines of the
  validation pairs, decoded with AdaDec's setting: beam 5, length penalty alpha 1.0, at most 30
  subwords; each model trained with several seeds (``--seeds``), reported as mean and spread.
* **Training to convergence**: every run evaluates the dev perplexity every ``--eval-every``
  updates and stops when ``--patience`` evaluations in a row bring no better one (or at
  ``--steps``); decoding uses the best checkpoint. The dev curves go to a plot (``--plot``).
* **Significance**: paired bootstraps over the validation pairs (``wikisum.core.stats``) of
  ADADEC, ATTEXP and SEQ2SEQ+WFE against SEQ2SEQ, of WFE decoding against plain decoding of the
  same model, and of every model against the prefix baseline (an article's first 8 words):
  on the per-pair scores averaged over the seeds, and seed by seed.
* **Redundancy** (``wikisum.generation.evaluation.redundancy``: the share of outputs
  repeating a content word, repeated content tokens per output) of SEQ2SEQ and of SEQ2SEQ+WFE
  decoded with and without the word-frequency constraint, at beams 1, 5 and 10 (first seed).
* **The trend with the training size** (``--trend 2500 5000``): the models trained again on the
  first N training pairs (same vocabulary, same dev pairs, exemplars retrieved among those N).
* **Retrieval time** of ``wikisum exemplars`` (``wikisum.pipeline.exemplars.run``): 10k train
  queries x 10k train sources, and 1k validation queries x 10k.

Steps, all in ``--work`` (default ``experiments/results/headlines/``, git-ignored):

    convert-pairs train (BPE, --vocab-size types) and valid.*.filter.txt as split "dev"
    exemplars (timed; training retrieval without near copies, the command's default)
    train every model with every seed (and the trend's runs): the same preset, size, step
        budget, batch budget, learning rate and early stopping, each in a child process with
        --threads torch threads, --jobs of them at a time
    decode the dev split (generation.decode.decode) and score it
        (generation.evaluation.score_predictions)

The papers trained on 3.8M pairs with 25k BPE types; 10k pairs get a smaller vocabulary (8000
by default) and models small enough to train on a CPU in minutes, so absolute scores are far
below the papers'. Run by hand, never by CI::

    .venv/bin/python experiments/headlines/run.py --config configs/bench/headlines.yaml  # ~1.5 h
    .venv/bin/python experiments/headlines/run.py --quick    # a smoke run: 30 steps, 50 dev pairs
    .venv/bin/python experiments/headlines/run.py --rescore  # score the last run's predictions

It prints the tables and writes every figure, the commands, the machine and the seeds to
``experiments/results/headlines.json`` (``--out``; ``headlines-quick.json`` with ``--quick``), the
tables as Markdown beside it (``.md``) for experiments/headlines/README.md, and the dev
curves to ``--plot``.
A rerun with ``--reuse`` keeps every run that finished (its result.json) and runs only the rest.
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
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "gigaword"
RESULTS = ROOT / "experiments" / "results"
SCRIPT = "experiments/headlines/run.py"
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
PAPER_DIGITS = {"SEQ2SEQ (Peng et al. 2019)": "{:.1f}", "ADADEC (Peng et al. 2019)": "{:.1f}",
                "EncDec+WFE (Suzuki & Nagata 2017)": "{:.2f}"}  # as each paper prints them


@dataclass
class Settings:
    """What every model of one benchmark run shares; a child process reads it as JSON."""

    data: str  # the converted dataset (work/data)
    preset: str = "tiny"
    size: dict = field(default_factory=dict)  # model config fields over the preset
    steps: int = 6000  # the budget; early stopping ends most runs before it
    warmup_steps: int = 300
    lr: float = 1e-3
    batch_tokens: int = 2000
    max_input_tokens: int = 100  # subwords; articles have ~36 (at most 76): none is cut
    seed: int = 0
    eval_every: int = 200  # updates between dev perplexities (the whole dev split)
    patience: int = 3  # evaluations without a better dev perplexity before stopping
    device: str = "auto"
    threads: int = 1
    decode_limit: int | None = None  # None: every dev pair
    decode_batch: int = 50
    beams: tuple[int, ...] = BEAMS
    alpha: float = ALPHA
    max_len: int = MAX_LEN


def decodes(label: str, settings: Settings, all_beams: bool = True) -> list[tuple[int, bool]]:
    """(beam, WFE constraint) of every decoding of model ``label``: AdaDec's beam for all;
    SEQ2SEQ+WFE with and without the constraint; with ``all_beams`` every beam of
    ``settings.beams`` for SEQ2SEQ and SEQ2SEQ+WFE (the redundancy table)."""
    beams = settings.beams if all_beams else (MAIN_BEAM,)
    if label == "SEQ2SEQ":
        return [(b, False) for b in beams]
    if label == "SEQ2SEQ+WFE":
        return [(b, wfe) for wfe in (True, False) for b in beams]
    return [(MAIN_BEAM, False)]


def train_overrides(label: str, settings: Settings) -> list[str]:
    """key=value settings of the run, as `wikisum train` takes them."""
    _, wfe = MODELS[label]
    size = dict(settings.size)
    if wfe:
        size["wfe_weight"] = WFE_WEIGHT
    return [f"{k}={json.dumps(v)}" for k, v in size.items()] + [
        f"warmup_steps={settings.warmup_steps}", f"lr={settings.lr}", f"seed={settings.seed}",
        f"eval_every={settings.eval_every}", f"patience={settings.patience}",
        "dev_examples=null", f"checkpoint_every={settings.steps}",
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
    from wikisum.generation import evaluation

    means = evaluation.rouge(predictions, references)
    return {"rouge_f": {k: 100 * means[k]["f"] for k in evaluation.ROUGE_TYPES},
            "redundancy": evaluation.redundancy(predictions),
            "redundancy_without_unk": evaluation.redundancy(predictions, ignore={UNK_WORD}),
            "unk_share": sum(any(m in p for m in UNK_MARKS) for p in predictions)
            / len(predictions),
            "words": sum(len(p.split()) for p in predictions) / len(predictions),
            "empty": sum(not p.strip() for p in predictions),
            **degeneracy(predictions)}


def exemplar_match(data: str, records: list[dict], tokenizer) -> dict:
    """How much the outputs of a model that reads exemplars (ATTEXP, ADADEC) are the exemplar:
    the share of outputs equal to their exemplar's text, and their mean ROUGE-1 F1 (percent)
    against it. Dev exemplars are the targets of the most similar training sources."""
    from wikisum.core.loader import Dataset
    from wikisum.generation import evaluation

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


def dev_curve(run: str) -> list[list[float]]:
    """[step, dev perplexity] of every evaluation a run's log records, in order (the "best"
    events that repeat an evaluation's perplexity are not evaluations)."""
    out = []
    for line in (Path(run) / "log.jsonl").read_text("utf-8").splitlines():
        entry = json.loads(line)
        if "dev_ppl" in entry and "event" not in entry:
            out.append([entry["step"], entry["dev_ppl"]])
    return out


def child(spec_path: str) -> int:
    """Train, decode and score the model a spec file names; writes its result beside it."""
    spec = json.loads(Path(spec_path).read_text(encoding="utf-8"))
    settings = Settings(**spec["settings"])
    label, run = spec["label"], spec["run"]
    os.environ.setdefault("OMP_NUM_THREADS", str(settings.threads))
    import torch

    from wikisum.generation import evaluation
    from wikisum.generation.decode import decode
    from wikisum.training import checkpoint
    from wikisum.training import loop as training
    from wikisum.training.config import make_config

    torch.set_num_threads(settings.threads)
    name, wfe = MODELS[label]
    options = {"preset": settings.preset, "steps": settings.steps,
               "batch_tokens": settings.batch_tokens,
               "max_input_tokens": settings.max_input_tokens, "device": settings.device}
    config = make_config(name, settings.data, run, options=options,
                         overrides=train_overrides(label, settings), wfe=wfe)
    summary = training.train(config)
    loaded = checkpoint.load(run)
    early = summary.get("early_stopping") or {}
    result = {"label": label, "model": name, "wfe_trained": wfe, "seed": settings.seed,
              "train_pairs": spec.get("train_pairs"), "data": settings.data,
              "parameters": sum(p.numel() for p in loaded.model.parameters()),
              "model_config": asdict(loaded.config), "train_seconds": summary["seconds"],
              "updates": summary["step"], "stopped_by": summary["stopped_by"],
              "best_step": early.get("best_step"), "best_dev_ppl": early.get("best_dev_ppl"),
              "decoded_step": loaded.step, "dev_curve": dev_curve(run),
              "resumed_from": summary["resumed_from"],
              "final_loss": summary["loss"], "dev": summary["dev"],
              "skipped": summary["skipped"], "tokens_seen": summary["tokens_seen"],
              "commands": [shlex.join(train_command(label, settings, run))], "decodes": []}
    result["train_seconds"] += spec.get("previous_train_seconds", 0.0)  # an extended run
    tokenizer = loaded.tokenizer
    del loaded
    for beam, constrained in decodes(label, settings, spec.get("all_beams", True)):
        preds = str(Path(run) / f"dev-beam{beam}{'-wfe' if constrained else ''}.jsonl")
        out = decode(run, "dev", preds, beam=beam, alpha=settings.alpha, max_len=settings.max_len,
                     batch_size=settings.decode_batch, limit=settings.decode_limit,
                     wfe=constrained, device=settings.device, progress=False, overwrite=True)
        records = read_predictions(preds)
        metrics = evaluation.score_predictions(records)
        entry = {"beam": beam, "wfe_decoding": constrained, "seconds": out["seconds"],
                 "examples": out["examples"], "predictions": preds,
                 "reference_perplexity": metrics["perplexity"],
                 **score_records(records, name, settings.data, tokenizer)}
        result["decodes"].append(entry)
        result["commands"].append(shlex.join(decode_command(run, preds, beam, constrained,
                                                            settings)))
        print(f"{label} seed {settings.seed} beam {beam}{' wfe' if constrained else ''}: "
              "R-1/2/L " + "/".join(f"{v:.1f}" for v in entry["rouge_f"].values())
              + f", {out['seconds']:.0f} s", flush=True)
    Path(spec["result"]).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    return 0


# ------------------------------------------------------------------------------------------
# The parent: data, retrieval, children, tables.


def check_data(folder: Path) -> None:
    missing = [name for pair in FILES.values() for name in pair if not (folder / name).is_file()]
    if missing:
        raise SystemExit(f"{SCRIPT}: {folder} lacks {', '.join(missing)}: pass --data "
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


def prepare_subset(folder: Path, work: Path, n: int, reuse: bool) -> Path:
    """``work/data-N``: the first ``n`` training pairs and every dev pair, encoded with the full
    run's vocabulary (so that only the number of training pairs differs), with exemplars
    retrieved among those ``n``."""
    from wikisum.core.loader import exemplars_path
    from wikisum.pipeline import exemplars, pairs

    data = work / f"data-{n}"
    info = pairs.read_info(str(data)) if (data / "dataset.json").is_file() else None
    if (reuse and info and set(FILES) <= set(info.get("rows", {}))
            and Path(exemplars_path(str(data), "dev")).exists()):
        return data
    if data.exists():
        shutil.rmtree(data)
    lines = work / f"pairs-{n}"
    lines.mkdir(parents=True, exist_ok=True)
    for name in FILES["train"]:
        with (folder / name).open(encoding="utf-8") as src:
            head = [next(src) for _ in range(n)]
        (lines / name).write_text("".join(head), encoding="utf-8")
    vocab = str(work / "data" / "vocab.model")
    for split, (source, target) in FILES.items():
        where = lines if split == "train" else folder
        pairs.convert(pairs.PairsConfig(str(where / source), str(where / target), split,
                                        str(data), vocab=vocab))
    exemplars.run(exemplars.ExemplarConfig(str(data)))
    return data


def lengths(data: Path) -> dict:
    """Mean subword lengths of sources and targets per split."""
    from wikisum.core.loader import Dataset

    out = {}
    ds = Dataset(str(data))
    for split in FILES:
        n = src = tgt = 0
        for ex in ds.examples(split):
            n, src, tgt = n + 1, src + len(ex.inputs), tgt + len(ex.targets)
        out[split] = {"source": src / n, "target": tgt / n}
    return out


def retrieval(data: Path, workers: int) -> dict:
    """Time `wikisum exemplars` on every split (with the command's default max_similarity)."""
    from wikisum.pipeline import exemplars

    summary = exemplars.run(exemplars.ExemplarConfig(str(data), workers=workers))
    out = {"workers": workers, "total_seconds": summary["seconds"],
           "max_similarity": exemplars.ExemplarConfig(str(data)).max_similarity,
           "splits": {s: {"queries": e["rows"], "seconds": e["seconds"],
                          "mean_similarity": e["mean_similarity"]}
                      for s, e in summary["splits"].items()}}
    add_near_duplicates(out, data)
    return out


def add_near_duplicates(retrieved: dict, data: Path) -> None:
    """The share of each split's queries whose exemplar's source has a cosine of at least
    NEAR_DUPLICATE with theirs: a training example with a near-duplicate exemplar teaches a
    model to copy it, which pays off on the dev split only as often as dev has one."""
    for split, entry in retrieved["splits"].items():
        similarity = exemplar_similarities(str(data), split)
        entry["near_duplicate_share"] = float((similarity >= NEAR_DUPLICATE).mean())


def exemplar_similarities(data: str, split: str):
    """(N,) the top-1 cosine of each of ``split``'s exemplars in ``data`` (numpy), or None when
    the split has no exemplars file."""
    import pyarrow.parquet as pq

    from wikisum.core.loader import exemplars_path

    path = Path(exemplars_path(data, split))
    if not path.exists():
        return None
    return pq.read_table(path, columns=["similarity"])["similarity"].to_numpy()


def prefix_records(folder: Path, limit: int | None) -> list[dict]:
    """The prefix baseline as prediction records: the first PREFIX_WORDS words of each dev
    article, with the id `convert-pairs` gives its line (1-based)."""
    source, target = (folder / name for name in FILES["dev"])
    articles = source.read_text("utf-8").splitlines()[:limit]
    titles = target.read_text("utf-8").splitlines()[:limit]
    return [{"id": i + 1, "prediction": " ".join(a.split()[:PREFIX_WORDS]), "reference": t}
            for i, (a, t) in enumerate(zip(articles, titles, strict=True))]


def prefix_baseline(folder: Path, limit: int | None) -> dict:
    """The scores of :func:`prefix_records` and (under "references") the redundancy of the dev
    headlines themselves: how often real headlines repeat a word."""
    from wikisum.generation import evaluation

    records = prefix_records(folder, limit)
    titles = [r["reference"] for r in records]
    out = score([r["prediction"] for r in records], titles)
    out["references"] = {
        "redundancy": evaluation.redundancy(titles),
        "redundancy_without_unk": evaluation.redundancy(titles, ignore={UNK_WORD}),
        "words": sum(len(t.split()) for t in titles) / len(titles)}
    return out


@dataclass(frozen=True)
class Job:
    """One child process: a model, a seed, and the training pairs it sees (None: all)."""

    label: str
    seed: int
    train_pairs: int | None = None
    all_beams: bool = False

    @property
    def key(self) -> str:
        size = "all" if self.train_pairs is None else str(self.train_pairs)
        return f"{self.label.lower().replace('+', '-')}-{size}-seed{self.seed}"


def plan(labels: list[str], seeds: list[int], trend: list[int],
         trend_labels: list[str]) -> list[Job]:
    """Every child of a benchmark run, in start order: the full runs seed by seed (the slowest
    model first, the first seed with every beam), then the trend's runs (first seed)."""
    jobs = [Job(label, seed, None, seed == seeds[0])
            for seed in seeds for label in ORDER if label in labels]
    jobs += [Job(label, seeds[0], n) for n in sorted(trend, reverse=True)
             for label in ORDER if label in trend_labels]
    return jobs


def reuse_decision(folder: Path, spec: dict) -> str:
    """What ``--reuse`` does with the run in ``folder`` for ``spec``: "keep" its result (the
    same spec; or one that differs only in a larger step budget and stopped early before the
    smaller one: the learning rate does not depend on the budget, so the run would be the same),
    "extend" it (it used its whole smaller budget: resume from its last checkpoint), or "new"."""
    try:
        old = json.loads((folder / "spec.json").read_text("utf-8"))
        result = json.loads((folder / "result.json").read_text("utf-8"))
    except (OSError, ValueError):
        return "new"
    new = json.loads(json.dumps(spec))
    old.pop("previous_train_seconds", None)  # what an extended run records of its first part
    if old == new:
        return "keep"
    old_steps, new_steps = old["settings"]["steps"], new["settings"]["steps"]
    old["settings"]["steps"] = new["settings"]["steps"]
    if old != new or new_steps < old_steps:
        return "new"
    if result.get("stopped_by") == "early_stopping":
        return "keep"
    return "extend" if result.get("updates") == old_steps else "new"


def run_children(jobs: list[Job], settings: Settings, work: Path, data: dict[int | None, Path],
                 parallel: int, reuse: bool) -> dict[str, dict]:
    """One child process per job, ``parallel`` at a time; returns key -> result (or error).
    With ``reuse`` a job whose result.json exists (from the same settings) is not run again."""
    pending = list(jobs)
    running: dict[str, tuple[subprocess.Popen, Path, float]] = {}
    results: dict[str, dict] = {}
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": str(settings.threads)}
    started_all, finished = time.perf_counter(), 0
    while pending or running:
        while pending and len(running) < parallel:
            job = pending.pop(0)
            folder = work / "runs" / job.key
            job_settings = replace(settings, seed=job.seed, data=str(data[job.train_pairs]))
            spec = {"label": job.label, "run": str(folder), "result": str(folder / "result.json"),
                    "train_pairs": job.train_pairs, "all_beams": job.all_beams,
                    "settings": asdict(job_settings)}
            decision = reuse_decision(folder, spec) if reuse else "new"
            if decision == "keep":
                results[job.key] = json.loads((folder / "result.json").read_text("utf-8"))
                finished += 1
                print(f"kept {job.key} (--reuse)", flush=True)
                continue
            if decision == "extend":  # resumes from its last checkpoint to the larger budget
                spec["previous_train_seconds"] = json.loads(
                    (folder / "result.json").read_text("utf-8"))["train_seconds"]
                (folder / "result.json").unlink()
            else:
                if folder.exists():
                    shutil.rmtree(folder)
                folder.mkdir(parents=True)
            (folder / "spec.json").write_text(json.dumps(spec, indent=1) + "\n", "utf-8")
            log = (folder / "child.log").open("w", encoding="utf-8")
            command = [sys.executable, __file__, "--child", str(folder / "spec.json")]
            proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                    cwd=ROOT)
            log.close()
            running[job.key] = (proc, folder, time.perf_counter())
            print(f"started {job.key} (pid {proc.pid}, log {folder / 'child.log'})", flush=True)
        time.sleep(2.0)
        for key, (proc, folder, started) in list(running.items()):
            if proc.poll() is None:
                continue
            del running[key]
            finished += 1
            wall = time.perf_counter() - started
            if proc.returncode == 0:
                results[key] = json.loads((folder / "result.json").read_text("utf-8"))
                results[key]["wall_seconds"] = wall
                r = results[key]
                print(f"done {key} in {wall:.0f} s: {r['updates']} updates, best dev ppl "
                      f"{r['best_dev_ppl'] or float('nan'):.2f} at {r['best_step']} "
                      f"({finished}/{len(jobs)} jobs, {time.perf_counter() - started_all:.0f} s)",
                      flush=True)
            else:
                tail = (folder / "child.log").read_text("utf-8").strip().splitlines()[-5:]
                results[key] = {"error": "\n".join(tail), "returncode": proc.returncode}
                print(f"FAILED {key} (exit {proc.returncode}):\n  " + "\n  ".join(tail),
                      flush=True)
    return results


# ------------------------------------------------------------------------------------------
# Analysis: systems over seeds, paired tests, the trend.

# A system: a model and how it is decoded (SEQ2SEQ+WFE both ways).
SYSTEMS = {"SEQ2SEQ": ("SEQ2SEQ", False), "ATTEXP": ("ATTEXP", False),
           "ADADEC": ("ADADEC", False), "SEQ2SEQ+WFE": ("SEQ2SEQ+WFE", True),
           "SEQ2SEQ+WFE, plain decoding": ("SEQ2SEQ+WFE", False)}
# (A, B): B against A. The prefix baseline is "PREFIX".
COMPARISONS = [("SEQ2SEQ", "ADADEC"), ("SEQ2SEQ", "ATTEXP"), ("SEQ2SEQ", "SEQ2SEQ+WFE"),
               ("SEQ2SEQ+WFE, plain decoding", "SEQ2SEQ+WFE"),
               *[("PREFIX", name) for name in SYSTEMS]]
TESTED = {"R-1": "rouge.rouge1.f", "R-2": "rouge.rouge2.f", "R-L": "rouge.rougeL.f",
          "repeating": "redundancy.share_repeating", "words": "prediction_words"}


def main_decode(result: dict, beam: int = MAIN_BEAM, wfe: bool = False) -> dict | None:
    return next((d for d in result.get("decodes", [])
                 if d["beam"] == beam and d["wfe_decoding"] == wfe), None)


def runs_of(results: dict[str, dict], label: str, train_pairs: int | None = None) -> list[dict]:
    return sorted((r for r in results.values() if "error" not in r and r["label"] == label
                   and r.get("train_pairs") == train_pairs), key=lambda r: r["seed"])


def per_example(path: str) -> dict[int, dict[str, float]]:
    """id -> the TESTED scores of one predictions file."""
    from wikisum.generation import evaluation

    records = read_predictions(path)
    scores = evaluation.per_example_scores(records)
    return {r["id"]: {k: scores[v][i] for k, v in TESTED.items()} for i, r in enumerate(records)}


def mean_sd(values: list[float]) -> dict:
    import numpy as np

    a = np.asarray(values, dtype=float)
    return {"mean": float(a.mean()), "sd": float(a.std(ddof=1)) if a.size > 1 else 0.0,
            "values": [float(v) for v in a]}


def analyse(results: dict[str, dict], prefix: list[dict], resamples: int,
            train_rows: int, data: str | None = None) -> dict:
    """Per system: ROUGE, words and repetition as mean and sd over seeds; paired tests
    (averaged over seeds and seed by seed) of COMPARISONS; the trend over training sizes; with
    ``data`` (the full dataset) :func:`exemplar_analysis`."""
    from wikisum.core import stats
    from wikisum.generation import evaluation

    prefix_scores = evaluation.per_example_scores(prefix)
    per_system: dict[str, dict[int, dict[int, dict]]] = {
        "PREFIX": {-1: {r["id"]: {k: prefix_scores[v][i] for k, v in TESTED.items()}
                        for i, r in enumerate(prefix)}}}
    systems: dict[str, dict] = {}
    for name, (label, wfe) in SYSTEMS.items():
        runs = [(r, main_decode(r, MAIN_BEAM, wfe)) for r in runs_of(results, label)]
        runs = [(r, d) for r, d in runs if d is not None]
        if not runs:
            continue
        per_system[name] = {r["seed"]: per_example(d["predictions"]) for r, d in runs}
        systems[name] = {
            "seeds": [r["seed"] for r, _ in runs],
            **{k: mean_sd([d["rouge_f"][m] for _, d in runs])
               for k, m in (("R-1", "rouge1"), ("R-2", "rouge2"), ("R-L", "rougeL"))},
            "words": mean_sd([d["words"] for _, d in runs]),
            "repeating": mean_sd([100 * d["redundancy"]["share_repeating"] for _, d in runs]),
            "distinct": mean_sd([100 * d["distinct_share"] for _, d in runs]),
            "best_dev_ppl": mean_sd([r["best_dev_ppl"] or float("nan") for r, _ in runs]),
            "best_step": mean_sd([r["best_step"] or float("nan") for r, _ in runs]),
            "updates": mean_sd([r["updates"] for r, _ in runs]),
            "train_seconds": mean_sd([r["train_seconds"] for r, _ in runs]),
            "parameters": runs[0][0]["parameters"],
            "exemplar_equal": (mean_sd([100 * d["exemplar_match"]["equal_share"]
                                        for _, d in runs])
                               if "exemplar_match" in runs[0][1] else None)}

    def averaged(name: str, ids: list[int]) -> dict[str, list[float]]:
        seeds = per_system[name]
        return {k: [sum(seeds[s][i][k] for s in seeds) / len(seeds) for i in ids]
                for k in TESTED}

    comparisons = []
    for a, b in COMPARISONS:
        if a not in per_system or b not in per_system:
            continue
        ids = sorted(set.intersection(*(set(v) for v in per_system[a].values()),
                                      *(set(v) for v in per_system[b].values())))
        pooled = stats.paired_bootstraps(averaged(a, ids), averaged(b, ids),
                                         resamples=resamples)
        by_seed = {}
        for seed in sorted(per_system[b]):
            s_a = seed if seed in per_system[a] else next(iter(per_system[a]))
            tests = stats.paired_bootstraps(
                {k: [per_system[a][s_a][i][k] for i in ids] for k in TESTED},
                {k: [per_system[b][seed][i][k] for i in ids] for k in TESTED},
                resamples=resamples)
            by_seed[seed] = {k: t.as_dict() for k, t in tests.items()}
        comparisons.append({"a": a, "b": b, "examples": len(ids),
                            "averaged_over_seeds": {k: t.as_dict() for k, t in pooled.items()},
                            "by_seed": by_seed})

    exemplar = exemplar_analysis(data, per_system, prefix, resamples) if data else None

    trend = {}
    for label in MODELS:
        sizes = sorted({r.get("train_pairs") for r in results.values()
                        if "error" not in r and r["label"] == label} - {None})
        if not sizes:
            continue
        _, wfe = SYSTEMS[label]
        rows = []
        for n in [*sizes, None]:
            runs = runs_of(results, label, n)[:1]  # the first seed: what the trend ran
            d = main_decode(runs[0], MAIN_BEAM, wfe) if runs else None
            if d is None:
                continue
            rows.append({"train_pairs": n or train_rows, "all": n is None,
                         "seed": runs[0]["seed"], "rouge_f": d["rouge_f"],
                         "dev_exemplar_cosine": dev_exemplar_cosine(runs[0].get("data")),
                         "best_dev_ppl": runs[0]["best_dev_ppl"],
                         "best_step": runs[0]["best_step"], "updates": runs[0]["updates"],
                         "dev_curve": runs[0]["dev_curve"]})
        trend[label] = rows
    return {"systems": systems, "comparisons": comparisons, "trend": trend,
            "exemplars": exemplar, "resamples": resamples}


# Bins of the dev pairs by their exemplar's source cosine: how ADADEC's gain depends on how
# close a neighbour the retrieval found.
SIMILARITY_BINS = ((0.0, 0.3), (0.3, 0.5), (0.5, 0.7), (0.7, 1.01))


def bin_label(entry: dict) -> str:
    """"[0.3, 0.5)"; the last bin, which holds a cosine of 1, closes: "[0.7, 1.0]"."""
    close = "]" if entry["high"] >= 1.0 else ")"
    return f"[{entry['low']:.1f}, {entry['high']:.1f}{close}"


def exemplar_analysis(data: str, per_system: dict, prefix: list[dict], resamples: int) -> dict:
    """What the dev exemplars carry: their headlines scored as outputs against the references
    (the exemplar baseline), and ADADEC - SEQ2SEQ (R-L, averaged over seeds) per bin of the
    exemplar's source cosine, with a paired bootstrap in each bin."""
    import glob

    import pyarrow.parquet as pq

    from wikisum.core import stats
    from wikisum.core.loader import exemplars_path
    from wikisum.generation import evaluation

    table = pq.read_table(exemplars_path(data, "dev"), columns=["id", "exemplar_id",
                                                                "similarity"]).to_pylist()
    found = {r["id"]: r for r in table}
    train = {}
    for path in sorted(glob.glob(str(Path(data) / "train-*.parquet"))):
        for row in pq.read_table(path, columns=["id", "target"]).to_pylist():
            train[row["id"]] = row["target"]
    records = [r for r in prefix if r["id"] in found]
    as_output = evaluation.rouge([train[found[r["id"]]["exemplar_id"]] for r in records],
                                 [r["reference"] for r in records])
    out = {"pairs": len(records),
           "exemplar_as_output_rouge_f": {k: 100 * v["f"] for k, v in as_output.items()},
           "bins": []}
    if "ADADEC" not in per_system or "SEQ2SEQ" not in per_system:
        return out

    def rouge_l(name: str, i: int) -> float:
        seeds = per_system[name]
        return sum(seeds[s][i]["R-L"] for s in seeds) / len(seeds)

    for low, high in SIMILARITY_BINS:
        ids = [r["id"] for r in records if low <= found[r["id"]]["similarity"] < high
               and all(r["id"] in v for name in ("ADADEC", "SEQ2SEQ")
                       for v in per_system[name].values())]
        entry = {"low": low, "high": min(high, 1.0), "pairs": len(ids)}
        if len(ids) >= 2:
            test = stats.paired_bootstrap([rouge_l("SEQ2SEQ", i) for i in ids],
                                          [rouge_l("ADADEC", i) for i in ids],
                                          resamples=resamples)
            entry["adadec_minus_seq2seq_rouge_l"] = test.as_dict()
        out["bins"].append(entry)
    return out


def dev_exemplar_cosine(data: str | None) -> float | None:
    """The mean top-1 cosine of the dev pairs' exemplars in ``data`` (None without them): how
    close a neighbour a pool of that many training pairs offers."""
    similarity = exemplar_similarities(data, "dev") if data else None
    return None if similarity is None else float(similarity.mean())


PLOT_TICKS = (60, 80, 100, 150, 200, 300, 500)  # dev perplexities labelled on the log axis


def plot_curves(results: dict[str, dict], path: Path) -> None:
    """Dev perplexity against updates: one panel per model, a line per seed (all pairs) and
    dashed lines for the trend's smaller training sets; a dot at each run's best."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    labels = [label for label in MODELS if runs_of(results, label)]
    if not labels:
        return
    fig, axes = plt.subplots(1, len(labels), figsize=(3.6 * len(labels), 3.8), sharey=True,
                             squeeze=False)
    sizes = sorted({r.get("train_pairs") for r in results.values() if "error" not in r}
                   - {None})
    values = [ppl for r in results.values() if "error" not in r for _, ppl in r["dev_curve"]]
    low, high = min(values) * 0.95, max(values) * 1.05
    for ax, label in zip(axes[0], labels, strict=True):
        for r in runs_of(results, label):
            steps, ppl = zip(*r["dev_curve"], strict=True)
            line, = ax.plot(steps, ppl, lw=1.2, label=f"10k, seed {r['seed']}")
            if r["best_step"]:
                ax.plot([r["best_step"]], [r["best_dev_ppl"]], "o", ms=3, color=line.get_color())
        for n in sizes:
            for r in runs_of(results, label, n):
                steps, ppl = zip(*r["dev_curve"], strict=True)
                ax.plot(steps, ppl, "--", lw=1, label=f"{n / 1000:g}k, seed {r['seed']}")
        ax.set_title(label, fontsize=10)
        ax.set_xlabel("updates")
        ax.set_yscale("log")
        ax.set_yticks([t for t in PLOT_TICKS if low <= t <= high])
        ax.yaxis.set_major_formatter(matplotlib.ticker.ScalarFormatter())
        ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.grid(alpha=0.3, which="both")
    axes[0][0].set_ylabel("dev perplexity (per subword)")
    axes[0][-1].legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _pm(entry: dict | None, digits: int = 2) -> str:
    if entry is None:
        return ""
    return (f"{entry['mean']:.{digits}f} ± {entry['sd']:.{digits}f}" if len(entry["values"]) > 1
            else f"{entry['mean']:.{digits}f}")


def _test(t: dict, scale: float = 100.0) -> str:
    from wikisum.core.stats import format_p

    return (f"{t['diff'] * scale:+.2f} [{t['low'] * scale:.2f}, {t['high'] * scale:.2f}], "
            f"{format_p(t['p_value'], t['resamples'])}")


def markdown(analysis: dict, prefix: dict, results: dict[str, dict], retrieved: dict,
             settings: Settings) -> str:
    """The Headlines tables for experiments/headlines/README.md."""
    from wikisum.core.stats import format_p

    out = ["| system | parameters | seeds | best update | dev ppl | R-1 | R-2 | R-L | words "
           "| repeating | distinct |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
           "| ---: | ---: | ---: |"]
    for name, s in analysis["systems"].items():
        out.append(f"| {name} | {s['parameters']:,} | {len(s['seeds'])} | "
                   f"{_pm(s['best_step'], 0)} | {_pm(s['best_dev_ppl'], 1)} | {_pm(s['R-1'])} | "
                   f"{_pm(s['R-2'])} | {_pm(s['R-L'])} | {_pm(s['words'], 1)} | "
                   f"{_pm(s['repeating'], 1)} % | {_pm(s['distinct'], 1)} % |")
    out.append(f"| prefix: the article's first {PREFIX_WORDS} words | | | | | "
               + " | ".join(f"{v:.2f}" for v in prefix["rouge_f"].values())
               + f" | {prefix['words']:.1f} | {100 * prefix['redundancy']['share_repeating']:.1f}"
               " % | |")
    out.append("| *papers, 3.8M pairs, Gigaword test set:* | | | | | | | | | | |")
    for name, scores in PAPERS.items():
        out.append(f"| {name} | | | | | " + " | ".join(PAPER_DIGITS[name].format(v)
                                                        for v in scores) + " | | | |")
    out += ["", "| B against A (B - A, points) | R-1 | R-2 | R-L | repeating | words "
            "| R-L, seed by seed |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for c in analysis["comparisons"]:
        t = c["averaged_over_seeds"]
        seeds = "; ".join(f"{100 * v['R-L']['diff']:+.2f} "
                          f"({format_p(v['R-L']['p_value'], v['R-L']['resamples'])})"
                          for v in c["by_seed"].values())
        out.append(f"| {c['b']} - {c['a']} | {_test(t['R-1'])} | {_test(t['R-2'])} | "
                   f"{_test(t['R-L'])} | {_test(t['repeating'])} | {_test(t['words'], 1)} | "
                   f"{seeds} |")
    ex = analysis.get("exemplars")
    if ex:
        out += ["", "| dev pairs by their exemplar's source cosine | pairs "
                "| ADADEC - SEQ2SEQ, R-L |", "| --- | ---: | --- |"]
        for b in ex["bins"]:
            t = b.get("adadec_minus_seq2seq_rouge_l")
            out.append(f"| {bin_label(b)} | {b['pairs']} | "
                       f"{_test(t) if t else ''} |")
        out.append("| the exemplar's headline as the output (all pairs) | "
                   f"{ex['pairs']} | R-1/2/L " + " / ".join(
                       f"{v:.2f}" for v in ex["exemplar_as_output_rouge_f"].values()) + " |")
    if analysis["trend"]:
        out += ["", "| model | training pairs | dev exemplars' mean cosine | updates (best) "
                "| best dev ppl | R-1 | R-2 | R-L |",
                "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for label, rows in analysis["trend"].items():
            for row in rows:
                cosine = row.get("dev_exemplar_cosine")
                out.append(f"| {label} | {row['train_pairs']:,} | "
                           f"{'' if cosine is None else f'{cosine:.3f}'} | "
                           f"{row['updates']} ({row['best_step']}) | {row['best_dev_ppl']:.1f} | "
                           + " | ".join(f"{v:.2f}" for v in row["rouge_f"].values()) + " |")
    out += ["", "| model, decoding (first seed) | beam | R-1 | R-2 | R-L | repeating "
            "| repeated / output | repeating, no `<unk>` | words | decode s |",
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for label, wfe, text in (("SEQ2SEQ", False, "SEQ2SEQ"),
                             ("SEQ2SEQ+WFE", True, "SEQ2SEQ+WFE, WFE decoding"),
                             ("SEQ2SEQ+WFE", False, "SEQ2SEQ+WFE, plain decoding")):
        runs = runs_of(results, label)
        for beam in settings.beams:
            d = main_decode(runs[0], beam, wfe) if runs else None
            if d is None:
                continue
            red, known = d["redundancy"], d["redundancy_without_unk"]
            out.append(f"| {text} | {beam} | " + " | ".join(f"{v:.2f}"
                                                           for v in d["rouge_f"].values())
                       + f" | {100 * red['share_repeating']:.1f} % | "
                       f"{red['repeated_tokens_per_output']:.3f} | "
                       f"{100 * known['share_repeating']:.1f} % | {d['words']:.1f} | "
                       f"{d['seconds']:.1f} |")
    refs = prefix["references"]
    out.append(f"| the reference headlines | | | | | "
               f"{100 * refs['redundancy']['share_repeating']:.1f} % | "
               f"{refs['redundancy']['repeated_tokens_per_output']:.3f} | "
               f"{100 * refs['redundancy_without_unk']['share_repeating']:.1f} % | "
               f"{refs['words']:.1f} | |")
    train_q = retrieved["splits"]["train"]["queries"]
    out += ["", f"| queries x train sources (max_similarity {retrieved['max_similarity']}) "
            "| seconds | mean top-1 cosine | exemplar with cosine >= 0.9 |",
            "| --- | ---: | ---: | ---: |"]
    for split, e in retrieved["splits"].items():
        out.append(f"| {e['queries']:,} {split} x {train_q:,} | {e['seconds']:.2f} | "
                   f"{e['mean_similarity']:.3f} | {100 * e['near_duplicate_share']:.1f} % |")
    return "\n".join(out) + "\n"


def report(analysis: dict, prefix: dict) -> None:
    print(f"\nValidation pairs, beam {MAIN_BEAM}, alpha {ALPHA} (ROUGE F1 %, mean ± sd over "
          "seeds):")
    print(f"{'system':<30}{'seeds':>6}{'best step':>14}{'dev ppl':>14}{'R-1':>15}{'R-2':>15}"
          f"{'R-L':>15}{'words':>12}{'repeating':>14}")
    for name, s in analysis["systems"].items():
        print(f"{name:<30}{len(s['seeds']):>6}{_pm(s['best_step'], 0):>14}"
              f"{_pm(s['best_dev_ppl'], 1):>14}{_pm(s['R-1']):>15}{_pm(s['R-2']):>15}"
              f"{_pm(s['R-L']):>15}{_pm(s['words'], 1):>12}{_pm(s['repeating'], 1):>14}")
    print(f"{'PREFIX-' + str(PREFIX_WORDS):<30}{'':>34}"
          + "".join(f"{v:>15.2f}" for v in prefix["rouge_f"].values())
          + f"{prefix['words']:>12.1f}")
    print("\nPaired bootstrap over the validation pairs (B - A, per-pair scores averaged over "
          "seeds; 95% interval, sign-flip p):")
    for c in analysis["comparisons"]:
        t = c["averaged_over_seeds"]
        print(f"  {c['b']} - {c['a']}: R-1 {_test(t['R-1'])}; R-2 {_test(t['R-2'])}; "
              f"R-L {_test(t['R-L'])}; repeating {_test(t['repeating'])}; "
              f"words {_test(t['words'], 1)}")
    ex = analysis.get("exemplars")
    if ex:
        print("exemplar headline as output: R-1/2/L " + "/".join(
            f"{v:.2f}" for v in ex["exemplar_as_output_rouge_f"].values()))
        for b in ex["bins"]:
            t = b.get("adadec_minus_seq2seq_rouge_l")
            print(f"  cosine {bin_label(b)}: {b['pairs']} pairs"
                  + (f", ADADEC - SEQ2SEQ R-L {_test(t)}" if t else ""))
    for label, rows in analysis["trend"].items():
        print(f"trend {label}: " + "; ".join(
            f"{r['train_pairs']} pairs R-L {r['rouge_f']['rougeL']:.2f} "
            f"(best dev ppl {r['best_dev_ppl']:.1f} at {r['best_step']})" for r in rows))


def finish(record: dict, out: Path, plot: Path | None) -> None:
    """Analysis, tables, plot and the JSON of a run (or a rescore) in ``record``."""
    settings = Settings(**record["settings"])
    for key, result in record["runs"].items():  # the curves as the runs' logs hold them now
        log = Path(record["work"]) / "runs" / key / "log.jsonl"
        if "error" not in result and log.is_file():
            result["dev_curve"] = dev_curve(str(log.parent))
    prefix = prefix_records(Path(record["data_folder"]), settings.decode_limit)
    record["analysis"] = analyse(record["runs"], prefix, record.get("resamples", 1000),
                                 record["data"]["rows"]["train"], settings.data)
    report(record["analysis"], record["prefix_baseline"])
    md = markdown(record["analysis"], record["prefix_baseline"], record["runs"],
                  record["retrieval"], settings)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".md").write_text(md, encoding="utf-8")
    if plot is not None:
        plot_curves(record["runs"], plot)
        record["plot"] = str(plot)
    out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"\nwritten to {out} (tables: {out.with_suffix('.md')}"
          + (f", dev curves: {plot}" if plot else "") + ")")


def rescore(out: Path, plot: Path | None) -> int:
    """Score again the predictions files of the run ``out`` records (no training, no decoding):
    for a change of metrics. Timings, retrieval and commands are kept."""
    from wikisum.core import vocab

    if not out.is_file():
        raise SystemExit(f"{SCRIPT}: {out} not found: --rescore reads the results of "
                         "an earlier run")
    record = json.loads(out.read_text("utf-8"))
    if "runs" not in record:
        raise SystemExit(f"{SCRIPT}: {out} is from an older version of this script "
                         "(no per-seed runs): run the benchmark again")
    settings = Settings(**record["settings"])
    tokenizer = vocab.load(str(Path(settings.data) / "vocab.model"))
    for result in record["runs"].values():
        for entry in result.get("decodes", []):
            records = read_predictions(entry["predictions"])
            entry.update(score_records(records, result["model"], result["data"], tokenizer))
    add_near_duplicates(record["retrieval"], Path(settings.data))
    record["prefix_baseline"] = prefix_baseline(Path(record["data_folder"]),
                                                settings.decode_limit)
    record["rescored"] = {"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                          "command": shlex.join(["python", SCRIPT, *sys.argv[1:]])}
    finish(record, out, plot)
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
                   help="converted data and runs (default: experiments/results/headlines[-quick])")
    p.add_argument("--out", type=Path, metavar="RESULTS.json",
                   help="results (default: experiments/results/headlines[-quick].json); the tables "
                        "go beside it as .md")
    p.add_argument("--plot", type=Path, metavar="FILE.png",
                   help="dev curves (default: beside --out, .png)")
    p.add_argument("--quick", action="store_true",
                   help="a smoke run: 30 steps, 50 dev pairs decoded")
    p.add_argument("--preset", default="tiny", choices=("tiny", "base", "paper"),
                   help="model size; tiny is widened to " + ", ".join(
                       f"{k} {v}" for k, v in WIDEN_TINY.items()) + " (default: %(default)s)")
    p.add_argument("--steps", type=int,
                   help=f"update budget per model (default: {Settings.steps})")
    p.add_argument("--eval-every", type=int, metavar="N",
                   help=f"updates between dev perplexities (default: {Settings.eval_every})")
    p.add_argument("--patience", type=int, metavar="N",
                   help="evaluations without a better dev perplexity before a run stops "
                        f"(default: {Settings.patience}; 0: train the whole budget)")
    p.add_argument("--batch-tokens", type=int, default=2000, metavar="N",
                   help="batch budget, padding and exemplar included (default: %(default)s)")
    p.add_argument("--warmup", type=int, metavar="N", help="warmup updates (default: 300)")
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate (%(default)s)")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], metavar="S",
                   help="training seeds, one run of every model each (default: 0 1 2)")
    p.add_argument("--trend", type=int, nargs="*", default=[], metavar="N",
                   help="also train on the first N training pairs, first seed (e.g. 2500 5000)")
    p.add_argument("--trend-models", nargs="+", choices=list(MODELS), metavar="MODEL",
                   help="the models the trend trains (default: --models)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N",
                   help="resamples of the paired tests (default: %(default)s)")
    p.add_argument("--vocab-size", type=int, default=8000, metavar="N",
                   help="BPE types (default: %(default)s; the papers: 25k on 3.8M pairs)")
    p.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    p.add_argument("--jobs", type=int, default=2, help="models trained at a time (default: 2)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per model (default: 1)")
    p.add_argument("--retrieval-workers", type=int, default=1, metavar="N",
                   help="threads of `wikisum exemplars` (default: %(default)s)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda (default: auto)")
    p.add_argument("--reuse", action="store_true",
                   help="keep the converted data and every finished run of an earlier run in "
                        "--work (the same settings), and run only the rest")
    p.add_argument("--rescore", action="store_true",
                   help="only score again the predictions of the run --out records")
    from bench import options

    args = options.parse(p, argv)
    if args.child:
        return child(args.child)
    suffix = "-quick" if args.quick else ""
    out = args.out or RESULTS / f"headlines{suffix}.json"
    plot = args.plot or out.with_suffix(".png")
    if args.rescore:
        return rescore(out, plot)
    for name in ("steps", "eval_every", "warmup", "batch_tokens", "jobs", "threads",
                 "retrieval_workers", "bootstrap"):
        value = getattr(args, name)
        if value is not None and value < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1, got {value}")
    if args.patience is not None and args.patience < 0:
        p.error(f"--patience must be at least 0, got {args.patience}")
    if len(set(args.seeds)) != len(args.seeds):
        p.error(f"--seeds repeats a seed: {args.seeds}")
    if any(n < 2 for n in args.trend):
        p.error(f"--trend sizes must be at least 2 pairs, got {args.trend}")
    check_data(args.data)
    work = (args.work or RESULTS / f"headlines{suffix}").resolve()
    settings = Settings(
        data=str(work / "data"), preset=args.preset,
        size=WIDEN_TINY if args.preset == "tiny" else {},
        steps=args.steps or (30 if args.quick else Settings.steps),
        warmup_steps=args.warmup or (10 if args.quick else Settings.warmup_steps),
        eval_every=args.eval_every or (10 if args.quick else Settings.eval_every),
        patience=Settings.patience if args.patience is None else args.patience,
        lr=args.lr, batch_tokens=args.batch_tokens, seed=args.seeds[0], device=args.device,
        threads=args.threads, decode_limit=50 if args.quick else None)

    started = time.perf_counter()
    host = machine()
    print(f"data: {args.data}; work: {work}; load average {host['loadavg'][0]:.2f}", flush=True)
    data = prepare_data(args.data, work, args.vocab_size, args.reuse)
    data["lengths"] = lengths(work / "data")
    retrieved = retrieval(work / "data", args.retrieval_workers)
    print(f"data: {data['rows']} pairs, {data['vocab_size']} BPE types; retrieval "
          f"{retrieved['total_seconds']:.1f} s", flush=True)
    folders: dict[int | None, Path] = {None: work / "data"}
    for n in args.trend:
        if n >= data["rows"]["train"]:
            p.error(f"--trend {n}: the training split has only {data['rows']['train']} pairs")
        folders[n] = prepare_subset(args.data, work, n, args.reuse)
    jobs = plan(args.models, args.seeds, args.trend, args.trend_models or args.models)
    print(f"{len(jobs)} runs, {args.jobs} at a time", flush=True)
    results = run_children(jobs, settings, work, folders, args.jobs, args.reuse)
    host["loadavg_end"] = list(os.getloadavg())
    record = {
        "bench": "headlines", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": shlex.join(["python", SCRIPT, *(argv or sys.argv[1:])]),
        "machine": host, "data_folder": str(args.data), "work": str(work), "data": data,
        "settings": asdict(settings), "seeds": args.seeds, "trend_sizes": args.trend,
        "resamples": args.bootstrap, "wfe_weight": WFE_WEIGHT, "prefix_words": PREFIX_WORDS,
        "retrieval": retrieved, "prefix_baseline": prefix_baseline(args.data,
                                                                   settings.decode_limit),
        "runs": results, "papers_rouge_f": PAPERS, "wall_seconds": time.perf_counter() - started}
    finish(record, out, plot)
    print(f"{record['wall_seconds']:.0f} s in all")
    return 1 if any("error" in r for r in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
