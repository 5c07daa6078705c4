"""How much exemplar retrieval leaks on the Gigaword sample, and the ``--max-similarity`` that
stops it (``wikisum exemplars``; ``wikisum.pipeline.exemplars``).

A training example's exemplar is the target of the most similar other training source. The
first 10k lines of Gigaword's train split hold stories filed several times, so a training
example often retrieves a near copy of itself, whose headline is its own; a dev example
rarely does. ``--max-similarity S`` makes a training example skip candidates whose source has a
cosine above S with its own, and those whose target equals its own. This measures, on the 10,000
training and 1,000 validation pairs of ``../shared/data/gigaword`` (converted as
``experiments/headlines/run.py`` does: ``convert-pairs`` train with an 8,000-type BPE, then
``valid.*.filter.txt`` as split ``dev``):

* the top-1 cosine of dev (unchanged by S) and of train without the rules (S = 1);
* for each S of the grid, the top-1 cosine of train with both rules: mean, quantiles, the share
  at or above 0.9 and 0.8, the Kolmogorov-Smirnov distance to dev's, the candidates each rule
  skipped, and how far the exemplar's headline is the example's own: the share equal to it and
  the mean word-overlap F1 (lower-cased words; dev's figure is the scale);
* the chosen S: the largest of the grid whose share of training exemplars at cosine >= 0.9 is
  at most dev's; and ``wikisum exemplars`` itself with the default (its summary and time).

Run by hand, never by CI (about a minute on 2 cores)::

    .venv/bin/python experiments/exemplar_leakage/run.py
    .venv/bin/python experiments/exemplar_leakage/run.py \\
        --dataset experiments/results/headlines/data  # reuse the headlines run's conversion

It prints the table and writes every figure, the machine and the command line to
``experiments/results/exemplar_leakage.json`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import options  # noqa: E402
from machine import command_line, describe, write_results  # noqa: E402

from wikisum.core.loader import Dataset  # noqa: E402
from wikisum.pipeline import exemplars  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "gigaword"
RESULTS = ROOT / "experiments" / "results"
SCRIPT = "experiments/exemplar_leakage/run.py"
# split -> (source lines, target lines), as experiments/headlines/run.py converts them
FILES = {"train": ("train.article.txt", "train.title.txt"),
         "dev": ("valid.article.filter.txt", "valid.title.filter.txt")}
GRID = (0.5, 0.6, 0.7, 0.75) + tuple(round(0.8 + i / 100, 2) for i in range(21))
QUANTILES = (0.5, 0.9, 0.99)


def prepare(folder: Path, work: Path, vocab_size: int) -> Path:
    """Convert train, then dev, into ``work/data``, as experiments/headlines/run.py does."""
    from wikisum.pipeline import pairs

    missing = [name for files in FILES.values() for name in files if not (folder / name).is_file()]
    if missing:
        raise SystemExit(f"{SCRIPT}: {folder} lacks {', '.join(missing)}: pass "
                         "--data a folder of Gigaword pairs (../shared/data/gigaword/MANIFEST.md)")
    data = work / "data"
    if data.exists():
        shutil.rmtree(data)
    for split, (source, target) in FILES.items():  # train first: it trains the vocabulary
        pairs.convert(pairs.PairsConfig(str(folder / source), str(folder / target), split,
                                        str(data), vocab_size=vocab_size))
    return data


def word_f1(a: str, b: str) -> float:
    """F1 of the words two headlines share (lower-cased, counted with repeats)."""
    x, y = Counter(a.lower().split()), Counter(b.lower().split())
    overlap = sum((x & y).values())
    return 0.0 if overlap == 0 else 2 * overlap / (sum(x.values()) + sum(y.values()))


def ks_distance(a: np.ndarray, b: np.ndarray) -> float:
    """The largest gap between the two samples' empirical distribution functions."""
    points = np.concatenate([a, b])
    cdf_a = np.searchsorted(np.sort(a), points, side="right") / a.size
    cdf_b = np.searchsorted(np.sort(b), points, side="right") / b.size
    return float(np.abs(cdf_a - cdf_b).max())


def distribution(similarity: np.ndarray, dev: np.ndarray | None) -> dict:
    out = {"mean": float(similarity.mean()),
           "share_at_least_0.9": float((similarity >= 0.9).mean()),
           "share_at_least_0.8": float((similarity >= 0.8).mean()),
           "quantiles": {str(q): float(np.quantile(similarity, q)) for q in QUANTILES}}
    if dev is not None:
        out["ks_to_dev"] = ks_distance(similarity, dev)
    return out


def leak(query_targets: list[str], exemplar_ids: np.ndarray, targets: dict[int, str]) -> dict:
    """How far each exemplar's headline is the query's own."""
    pairs = list(zip(query_targets, (targets[int(i)] for i in exemplar_ids), strict=True))
    return {"target_equal_share": sum(exemplars.normalise_target(q) ==
                                      exemplars.normalise_target(e) for q, e in pairs)
            / len(pairs),
            "target_word_f1": sum(word_f1(q, e) for q, e in pairs) / len(pairs)}


def measure(data: Path, grid: tuple[float, ...], workers: int) -> dict:
    ds = Dataset(str(data))
    config = exemplars.ExemplarConfig(str(data), workers=workers, max_similarity=1.0)
    train_ids, train = exemplars.sources(ds, "train", config)
    dev_ids, dev_queries = exemplars.sources(ds, "dev", config)
    texts = {split: {r["id"]: r["target"] for r in ds.rows(split, ["id", "target"])}
             for split in FILES}
    train_texts = [texts["train"][int(i)] for i in train_ids]
    groups = exemplars.train_targets(ds, train_ids)

    dev = exemplars.retrieve_split(train_ids, train, dev_ids, dev_queries, False, config)
    unfiltered = exemplars.retrieve_split(train_ids, train, train_ids, train, True, config)
    out = {"rows": {"train": int(train_ids.size), "dev": int(dev_ids.size)},
           "train_targets_shared": int((groups >= 0).sum()),
           "dev": {**distribution(dev.similarity, None),
                   **leak([texts["dev"][int(i)] for i in dev_ids], dev.exemplar_ids,
                          texts["train"])},
           "train_unfiltered": {**distribution(unfiltered.similarity, dev.similarity),
                                **leak(train_texts, unfiltered.exemplar_ids, texts["train"])},
           "grid": []}
    for s in grid:
        started = time.perf_counter()
        got = exemplars.retrieve_split(train_ids, train, train_ids, train, True,
                                       exemplars.ExemplarConfig(str(data), workers=workers,
                                                                max_similarity=s), groups=groups)
        f = got.filtered or exemplars.Filtered(got.similarity, 0, 0, 0, 0)  # S = 1: off
        out["grid"].append({"max_similarity": s, "seconds": time.perf_counter() - started,
                            **distribution(got.similarity, dev.similarity),
                            **leak(train_texts, got.exemplar_ids, texts["train"]),
                            "skipped_near_duplicate": f.skipped_similar,
                            "skipped_same_target": f.skipped_target, "changed": f.changed,
                            "no_candidate": f.no_candidate})
    dev_share = out["dev"]["share_at_least_0.9"]
    fitting = [g["max_similarity"] for g in out["grid"] if g["share_at_least_0.9"] <= dev_share]
    out["chosen"] = max(fitting) if fitting else None
    return out


def report(result: dict) -> None:
    m = result["measured"]
    print(f"\nTop-1 bag-of-words cosine, {m['rows']['train']:,} train x {m['rows']['dev']:,} dev "
          f"pairs ({m['train_targets_shared']:,} training headlines shared by two or more):")
    print(f"{'':<22}{'mean':>7}{'>=0.9':>8}{'>=0.8':>8}{'q50':>7}{'q90':>7}{'q99':>7}"
          f"{'KS':>7}{'same hl':>9}{'hl F1':>7}{'skip cos':>10}{'skip hl':>9}{'changed':>9}")

    def line(name: str, d: dict) -> None:
        q = d["quantiles"]
        print(f"{name:<22}{d['mean']:>7.3f}{100 * d['share_at_least_0.9']:>7.1f}%"
              f"{100 * d['share_at_least_0.8']:>7.1f}%{q['0.5']:>7.3f}{q['0.9']:>7.3f}"
              f"{q['0.99']:>7.3f}{d.get('ks_to_dev', 0.0):>7.3f}"
              f"{100 * d['target_equal_share']:>8.1f}%{d['target_word_f1']:>7.3f}"
              + (f"{d['skipped_near_duplicate']:>10,}{d['skipped_same_target']:>9,}"
                 f"{d['changed']:>9,}" if "changed" in d else ""))

    line("dev", m["dev"])
    line("train, S = 1 (off)", m["train_unfiltered"])
    for g in m["grid"]:
        line(f"train, S = {g['max_similarity']:.2f}", g)
    print(f"\nchosen S (largest with train's share >= 0.9 at most dev's "
          f"{100 * m['dev']['share_at_least_0.9']:.1f}%): {m['chosen']}; the command's default: "
          f"{exemplars.DEFAULT_MAX_SIMILARITY}")
    c = result["command"]
    print(f"`wikisum exemplars` with the default: {c['seconds']:.1f} s; " + ", ".join(
        f"{split} mean {e['mean_similarity']:.3f}, {100 * e['near_duplicate_share']:.1f}% >= 0.9"
        for split, e in c["splits"].items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, metavar="DIR",
                        help="Gigaword pairs in the Rush et al. format (default: %(default)s)")
    parser.add_argument("--dataset", type=Path, metavar="DIR",
                        help="an already converted dataset (train and dev splits), e.g. "
                             "experiments/headlines/run.py's work/data; default: convert --data "
                             "into --work/data")
    parser.add_argument("--work", type=Path, default=RESULTS / "exemplar-leakage", metavar="DIR",
                        help="where --data is converted to (default: %(default)s)")
    parser.add_argument("--vocab-size", type=int, default=8000,
                        help="BPE types, as experiments/headlines/run.py (default: %(default)s)")
    parser.add_argument("--grid", type=float, nargs="+", default=list(GRID), metavar="S",
                        help="values of --max-similarity to measure (default: 0.5, 0.6, 0.7, "
                             "0.75, then 0.80 to 1.00 by 0.01)")
    parser.add_argument("--workers", type=int, default=1, help="retrieval threads")
    parser.add_argument("--out", type=Path, default=RESULTS / "exemplar_leakage.json")
    args = options.parse(parser, argv)
    if any(not 0 <= s <= 1 for s in args.grid):
        parser.error("--grid values must be in [0, 1]")

    data = args.dataset or prepare(args.data, args.work, args.vocab_size)
    info = Dataset(str(data)).info
    if info.get("kind") != "pairs" or not {"train", "dev"} <= set(info.get("rows", {})):
        raise SystemExit(f"{SCRIPT}: {data} is not a pairs dataset with train "
                         "and dev splits")
    started = time.perf_counter()
    measured = measure(data, tuple(sorted(set(args.grid))), args.workers)
    summary = exemplars.run(exemplars.ExemplarConfig(str(data), workers=args.workers))
    command = {"seconds": summary["seconds"], "max_similarity": summary["max_similarity"],
               "splits": {s: {k: v for k, v in e.items() if k != "path"}
                          for s, e in summary["splits"].items()}}
    result = {"command_line": command_line(argv), "machine": describe(args.workers),
              "data": str(args.dataset or args.data), "vocab_size": info["vocab_size"],
              "default_max_similarity": exemplars.DEFAULT_MAX_SIMILARITY,
              "measured": measured, "command": command,
              "seconds": time.perf_counter() - started}
    report(result)
    write_results(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
