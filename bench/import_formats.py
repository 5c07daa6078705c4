"""Peak memory and throughput of ``wikisum import`` on large generated sources: a Multi-News
JSON Lines file (2 GiB by default) and a set of hiersumm ``.pt`` shards, one of them larger
than the rest.

The acceptance it measures (formats/importing.py reads its source as a stream):

* **Multi-News.** A generated ``train.jsonl`` of ``--multinews-mib`` imports with the peak
  memory of the whole process tree under 1 GB (10^9 bytes).
* **hiersumm.** ``WIKI.train.K.pt`` shards import with a peak bounded by the largest shard:
  the peak above the import's fixed memory (the same import of one tiny shard, the ``floor``
  run) is at most :data:`TARGET_SHARD_RATIO` x what ``torch.load`` of the largest shard alone
  takes (the ``reference``, measured in a child process, as the import loads it:
  ``torchfiles.load_records``, ``weights_only``). The ``equal`` run imports ``--hiersumm-shards``
  shards of ``--hiersumm-shard-mib`` each; ``with-large`` the same shards and one
  ``--hiersumm-large-factor`` times as large after them, to show the peak following the largest
  shard.

The sources are generated, deterministically from ``--seed``, and streamed to disk (never a whole
file in memory, except one ``.pt`` shard, which ``torch.save`` writes from a list). Text is
made-up words drawn from a Zipf law, so that sentencepiece and the rankers see text-like
frequencies. Multi-News examples follow the train split's statistics (Fabbri et al. 2019): 2 to
10 documents in the proportions of the train split, about 2,100 words of source, summaries of
about 260 words starting with ``– ``, documents joined as the hub's files join them (each
followed by `` ||||| ``, paragraphs separated by ``\\n \\n`` as the hub's loader writes them, or
``NEWLINE_CHAR`` as the release does, ``--paragraph-break``). hiersumm examples are as its ranked
WikiSum holds them: up to 40 paragraphs of 20 to 100 words as ids of a sentencepiece model with
hiersumm's pieces (``<S> </S> <PAD> <T> <P> <Q>``), ``tgt`` ``<S> ... <Q> ... </S>``.

Each import is ``wikisum -v import ...`` (the console script) in a child process. Its memory is
sampled every ``--interval`` seconds from /proc: the summed VmRSS of the process and every
descendant (the ranking workers of ``multiprocessing.Pool``), the summed Pss (the same tree with
pages shared between processes counted once: forked workers share the parent's pages, which
VmRSS counts in each), and the parent's VmRSS alone; the parent's VmHWM (its exact high-water
mark) is kept as well. ``/usr/bin/time`` or ``getrusage`` would give only the largest single
process. The command's ``-v`` lines mark its phases: the vocabulary pass (sampling the train
split's texts, then training sentencepiece) and the import pass, each with its time and peaks.
Rates: examples / wall seconds of the whole command, MB (10^6 bytes) of input / wall seconds,
and the import pass's own examples/s.

Run by hand, never by CI (the full config takes about an hour and a half on 2 cores)::

    .venv/bin/python bench/import_formats.py --config configs/bench/import-formats-small.yaml
    nohup .venv/bin/python bench/import_formats.py --config configs/bench/import-formats.yaml \\
        > /tmp/bench-import-formats.log 2>&1 &

It prints a table with PASS/MISS per target and writes every figure, the options, the machine
and the command line to ``bench/results/import_formats.json`` (``--out`` to change). The
scratch folder (``--work``) is removed at the end unless ``--keep``; with ``--keep`` a rerun
reuses the generated sources that match its options.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pickle
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import machine  # noqa: E402
import options  # noqa: E402

DEFAULT_OUT = ROOT / "bench" / "results" / "import_formats.json"
WIKISUM = Path(sys.executable).with_name("wikisum")  # the console script beside this Python
MIB = 2**20

TARGET_MULTINEWS_BYTES = 10**9  # "peak memory under 1 GB"
# "bounded by the largest shard": the peak above the import's fixed memory, against what the
# largest shard takes loaded alone; the rest is the window of examples in flight and the
# Parquet writers' buffers.
TARGET_SHARD_RATIO = 1.25

# Multi-News' train split: examples by number of source documents (Fabbri et al. 2019).
MULTINEWS_DOCS = {2: 23894, 3: 12707, 4: 5022, 5: 1873, 6: 763, 7: 382, 8: 209, 9: 89, 10: 33}
MULTINEWS_SOURCE_WORDS = 2100  # mean words of an example's documents together
MULTINEWS_SUMMARY_WORDS = 264  # mean words of a summary
PARAGRAPH_BREAKS = {"newline": " \n \n ", "NEWLINE_CHAR": " NEWLINE_CHAR NEWLINE_CHAR "}
HIERSUMM_PIECES = ("<S>", "</S>", "<PAD>", "<T>", "<P>", "<Q>")  # src/train_abstractive.py
HIERSUMM_PARAGRAPHS = 40  # hiersumm's ranked WikiSum keeps the top 40

# Phase markers in the output of `wikisum -v import` (formats/importing.py, core/vocab.py,
# core/progress.py).
SAMPLED = re.compile(r"import: vocabulary from [\d,]+ of [\d,]+ texts")
TRAINED = re.compile(r"vocab: \d+ pieces -> ")
CLOSED = re.compile(r"^import: [\d,]+ examples in ")


# ------------------------------------------------------------------------------------------
# Text


class Words:
    """Made-up words with Zipf frequencies (s = 1), the shortest the most frequent, as in
    English; :meth:`sentences` draws text from them with a numpy generator."""

    ONSETS = ("b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w",
              "st", "tr", "ch", "sh", "br", "pl")
    VOWELS = ("a", "e", "i", "o", "u", "ai", "ea", "ou", "io")
    CODAS = ("", "", "", "n", "r", "s", "t", "l", "nd", "ng")

    def __init__(self, seed: int, size: int = 50_000):
        rng = random.Random(seed)
        seen: set[str] = set()
        words: list[str] = []
        while len(words) < size:
            syllables = rng.choices((1, 2, 3, 4), weights=(4, 5, 3, 1))[0]
            word = "".join(rng.choice(self.ONSETS) + rng.choice(self.VOWELS)
                           for _ in range(syllables)) + rng.choice(self.CODAS)
            if word not in seen:
                seen.add(word)
                words.append(word)
        words.sort(key=len)  # stable: the order drawn within a length
        self.words = words
        weights = 1.0 / np.arange(1, size + 1)
        self.cumulative = np.cumsum(weights) / weights.sum()

    def sentences(self, rng: np.random.Generator, n_words: int) -> list[str]:
        """About ``n_words`` words as sentences of 8 to 35 words, capitalised, with a stop."""
        picks = np.searchsorted(self.cumulative, rng.random(n_words)).tolist()
        tokens = [self.words[min(i, len(self.words) - 1)] for i in picks]
        lengths = rng.integers(8, 36, size=n_words // 8 + 1).tolist()
        out, start = [], 0
        for length in lengths:
            if start >= n_words:
                break
            part = tokens[start:start + length]
            start += length
            out.append(" ".join([part[0].capitalize(), *part[1:]]) + ".")
        return out


def paragraphs(rng: np.random.Generator, sentences: list[str]) -> list[str]:
    """Sentences grouped into paragraphs of 1 to 4 (news paragraphs are short)."""
    sizes = rng.integers(1, 5, size=len(sentences)).tolist()
    out, start = [], 0
    for size in sizes:
        if start >= len(sentences):
            break
        out.append(" ".join(sentences[start:start + size]))
        start += size
    return out


# ------------------------------------------------------------------------------------------
# Multi-News


def multinews_row(rng: np.random.Generator, words: Words, paragraph_break: str) -> dict:
    """One row of the hub's Multi-News: ``document`` (each document followed by ``|||||``, its
    paragraphs separated by ``paragraph_break``) and ``summary`` (``– `` first)."""
    counts = np.fromiter(MULTINEWS_DOCS.values(), float)
    n_docs = list(MULTINEWS_DOCS)[int(rng.choice(len(counts), p=counts / counts.sum()))]
    # log-normal lengths: median 1,850 words, mean about 2,100, a long tail as news has
    total = int(np.clip(rng.lognormal(math.log(MULTINEWS_SOURCE_WORDS) - 0.125, 0.5), 150,
                        20_000))
    shares = rng.dirichlet([2.0] * n_docs)
    documents = [paragraphs(rng, words.sentences(rng, max(20, int(total * share))))
                 for share in shares]
    n_summary = int(np.clip(rng.normal(MULTINEWS_SUMMARY_WORDS, 70), 60, 700))
    document = "".join(paragraph_break.join(doc) + " ||||| " for doc in documents).rstrip()
    return {"document": document, "summary": "– " + " ".join(words.sentences(rng, n_summary))}


def write_multinews(path: Path, target_bytes: int, seed: int, paragraph_break: str) -> dict:
    """``train.jsonl`` of at least ``target_bytes``, written one line at a time."""
    words = Words(seed)
    rng = np.random.default_rng([seed, 1])
    written = examples = 0
    started = time.perf_counter()
    step = max(target_bytes // 10, 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.partial")
    with open(temp, "wb", buffering=1 << 20) as f:
        while written < target_bytes:
            line = (json.dumps(multinews_row(rng, words, PARAGRAPH_BREAKS[paragraph_break]),
                               ensure_ascii=False) + "\n").encode("utf-8")
            f.write(line)
            before, written, examples = written, written + len(line), examples + 1
            if before // step != written // step:
                print(f"  multinews: {written / MIB:,.0f} of {target_bytes / MIB:,.0f} MiB, "
                      f"{examples:,} examples", flush=True)
    temp.rename(path)
    return {"file": str(path), "bytes": written, "examples": examples,
            "bytes_per_example": round(written / examples),
            "generate_s": round(time.perf_counter() - started, 1)}


# ------------------------------------------------------------------------------------------
# hiersumm


def train_hiersumm_model(path: Path, words: Words, seed: int, size: int) -> None:
    """A unigram sentencepiece model with hiersumm's pieces as user-defined symbols (as its
    ``spm9998_3.model`` has them), trained on the made-up text."""
    import io

    import sentencepiece as spm

    rng = np.random.default_rng([seed, 2])
    text = words.sentences(rng, 400_000)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(text), model_writer=model, vocab_size=size, model_type="unigram",
        hard_vocab_limit=False, user_defined_symbols=list(HIERSUMM_PIECES),
        character_coverage=1.0, input_sentence_size=0, shuffle_input_sentence=False,
        num_threads=os.cpu_count() or 1, minloglevel=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(model.getvalue())


def hiersumm_record(rng: np.random.Generator, words: Words, sp, special: dict) -> dict:
    """One example as hiersumm's loader reads it (src/abstractive/data_loader.py): ``src`` the
    ids of each ranked paragraph, ``tgt`` ``[<S>] + sentences joined by <Q> + [</S>]``,
    ``tgt_str`` the sentences joined by `` <Q> ``."""
    n_paragraphs = int(min(HIERSUMM_PARAGRAPHS, rng.integers(20, 64)))
    texts = [" ".join(words.sentences(rng, int(n)))
             for n in rng.integers(20, 101, size=n_paragraphs)]
    summary = words.sentences(rng, int(np.clip(rng.normal(140, 50), 30, 400)))
    ids = sp.encode(summary)
    tgt = [special["<S>"]] + sum([s + [special["<Q>"]] for s in ids], [])[:-1] + \
        [special["</S>"]]
    return {"src": sp.encode(texts), "tgt": tgt, "tgt_str": " <Q> ".join(summary)}


def write_hiersumm_shard(path: Path, model: Path, words: Words, seed: int, index: int,
                         target_bytes: int, bytes_per_example: float) -> dict:
    """``WIKI.train.K.pt``: a ``torch.save``d list of about ``target_bytes`` on disk (the one
    file generated whole: a .pt file is one pickle)."""
    import sentencepiece as spm
    import torch

    sp = spm.SentencePieceProcessor(model_file=str(model))
    special = {p: sp.piece_to_id(p) for p in HIERSUMM_PIECES}
    rng = np.random.default_rng([seed, 3, index])
    n = max(1, round(target_bytes / bytes_per_example))
    started = time.perf_counter()
    records = [hiersumm_record(rng, words, sp, special) for _ in range(n)]
    ids = sum(len(r["tgt"]) + sum(len(p) for p in r["src"]) for r in records)
    temp = path.with_name(f".{path.name}.partial")
    torch.save(records, temp)
    temp.rename(path)
    del records
    return {"file": str(path), "bytes": path.stat().st_size, "examples": n, "ids": ids,
            "generate_s": round(time.perf_counter() - started, 1)}


def hiersumm_bytes_per_example(model: Path, words: Words, seed: int) -> float:
    """Bytes on disk an example takes, from the pickle of a sample (``torch.save`` stores the
    pickle uncompressed in its zip file)."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(model))
    special = {p: sp.piece_to_id(p) for p in HIERSUMM_PIECES}
    rng = np.random.default_rng([seed, 4])
    sample = [hiersumm_record(rng, words, sp, special) for _ in range(200)]
    return len(pickle.dumps(sample, protocol=2)) / len(sample)


def make_hiersumm(work: Path, args: argparse.Namespace) -> dict:
    """The model, the shards (``shards/``), and one folder per run of links to them:
    ``floor`` (one tiny shard), ``equal`` (the equal shards), ``with-large`` (those and the
    large one last)."""
    folder = work / "hiersumm"
    model = folder / "spm.model"
    words = Words(args.seed)
    if not model.exists():
        train_hiersumm_model(model, words, args.seed, args.hiersumm_vocab_size)
    per_example = hiersumm_bytes_per_example(model, words, args.seed)
    sizes = {f"WIKI.train.{k}.pt": args.hiersumm_shard_mib * MIB
             for k in range(args.hiersumm_shards)}
    large = f"WIKI.train.{args.hiersumm_shards}.pt"
    sizes[large] = args.hiersumm_shard_mib * args.hiersumm_large_factor * MIB
    sizes["floor/WIKI.train.0.pt"] = 0  # one example: the import's fixed memory
    shards = {}
    for index, (name, size) in enumerate(sizes.items()):
        path = folder / "shards" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists():
            shards[name] = write_hiersumm_shard(path, model, words, args.seed, index, size,
                                                per_example)
            print(f"  hiersumm: {name} {shards[name]['bytes'] / MIB:,.1f} MiB, "
                  f"{shards[name]['examples']:,} examples", flush=True)
        else:
            shards[name] = {"file": str(path), "bytes": path.stat().st_size, "reused": True}
    runs = {"floor": ["floor/WIKI.train.0.pt"],
            "equal": [f"WIKI.train.{k}.pt" for k in range(args.hiersumm_shards)]}
    runs["with-large"] = runs["equal"] + [large]
    for run, names in runs.items():
        shutil.rmtree(folder / run, ignore_errors=True)
        (folder / run).mkdir(parents=True)
        for name in names:
            (folder / run / Path(name).name).symlink_to(folder / "shards" / name)
    return {"model": str(model), "bytes_per_example_estimate": round(per_example),
            "shards": shards, "runs": {run: str(folder / run) for run in runs},
            "run_shards": runs, "largest": large, "equal_shard": "WIKI.train.0.pt"}


# The reference: a .pt shard loaded alone as the import loads it, and what that takes.
LOAD_CHILD = textwrap.dedent("""
    import json, sys, time
    import torch  # noqa: F401 - the import's own baseline has torch loaded too
    from wikisum.formats import torchfiles

    def status(field):  # VmHWM, not ru_maxrss: Linux carries the parent's RSS at fork into it
        with open("/proc/self/status") as f:
            return next(int(l.split()[1]) * 1024 for l in f if l.startswith(field + ":"))

    base = status("VmRSS")
    started = time.perf_counter()
    records = torchfiles.load_records(sys.argv[1])
    seconds = time.perf_counter() - started
    held = status("VmRSS")
    peak = status("VmHWM")
    print(json.dumps({"baseline_bytes": base, "held_bytes": held, "peak_bytes": peak,
                      "examples": len(records), "load_s": seconds}))
""")


def load_alone(path: str) -> dict:
    done = subprocess.run([sys.executable, "-c", LOAD_CHILD, path], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"torch.load of {path} failed:\n{done.stderr[-3000:]}")
    r = json.loads(done.stdout.strip().splitlines()[-1])
    return {"file": path, "disk_mib": os.path.getsize(path) / MIB,
            "baseline_mib": r["baseline_bytes"] / MIB, "held_mib": r["held_bytes"] / MIB,
            "peak_mib": r["peak_bytes"] / MIB,
            "loaded_mib": (r["held_bytes"] - r["baseline_bytes"]) / MIB,
            "loaded_peak_mib": (r["peak_bytes"] - r["baseline_bytes"]) / MIB,
            "examples": r["examples"], "load_s": round(r["load_s"], 2)}


# ------------------------------------------------------------------------------------------
# A process tree's memory


def _pss(pid: int) -> int:
    """Proportional set size in bytes (shared pages divided among their processes)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


class TreeMemory(threading.Thread):
    """Samples a process tree every ``interval_s``: summed VmRSS, summed Pss, the parent's
    VmRSS; peaks per phase (``phase`` is set from outside as the command reports progress),
    the highest VmHWM seen per process, and a timeline."""

    def __init__(self, pid: int, interval_s: float, phase: str):
        super().__init__(daemon=True)
        self.pid, self.interval_s, self.phase = pid, interval_s, phase
        self.started = time.perf_counter()
        self.peaks: dict[str, dict[str, int]] = {}
        self.hwm: dict[int, int] = {}
        self.timeline: list[tuple[float, int, int, int, int, float]] = []
        self.max_processes = 0
        self._done = threading.Event()

    def run(self) -> None:
        while not self._done.is_set():
            self.sample()
            self._done.wait(self.interval_s)

    def sample(self) -> None:
        pids, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            pids.append(pid)
            todo.extend(machine.process_children(pid))
        tree_rss = tree_pss = parent_rss = 0
        for pid in pids:
            rss, hwm = machine.rss_and_hwm(pid)
            if rss == 0:
                continue
            tree_rss += rss
            tree_pss += _pss(pid)
            self.hwm[pid] = max(hwm, self.hwm.get(pid, 0))
            if pid == self.pid:
                parent_rss = rss
        if tree_rss == 0:
            return
        peak = self.peaks.setdefault(self.phase, {"tree_rss": 0, "tree_pss": 0, "parent_rss": 0,
                                                  "processes": 0})
        peak["tree_rss"] = max(peak["tree_rss"], tree_rss)
        peak["tree_pss"] = max(peak["tree_pss"], tree_pss)
        peak["parent_rss"] = max(peak["parent_rss"], parent_rss)
        peak["processes"] = max(peak["processes"], len(pids))
        self.max_processes = max(self.max_processes, len(pids))
        self.timeline.append((time.perf_counter() - self.started, tree_rss, tree_pss,
                              parent_rss, len(pids), os.getloadavg()[0]))

    def stop(self) -> None:
        self._done.set()
        self.join()

    def timeline_mib(self, bucket_s: float) -> list[list[float]]:
        """The timeline, the highest sample of every ``bucket_s`` seconds, in MiB."""
        out: dict[int, list[float]] = {}
        for t, rss, pss, parent, n, load in self.timeline:
            row = [round(t, 1), round(rss / MIB), round(pss / MIB), round(parent / MIB), n,
                   round(load, 2)]
            key = int(t // bucket_s)
            if key not in out or row[1] > out[key][1]:
                out[key] = row
        return list(out.values())


def run_import(argv: list[str], log_path: Path, interval_s: float, trains_vocab: bool) -> dict:
    """Runs ``argv``, a ``wikisum -v import``, and measures its tree; its output goes to
    ``log_path``, each line with the seconds since the start."""
    events: dict[str, float] = {}
    with open(log_path, "w", encoding="utf-8") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        monitor = TreeMemory(proc.pid, interval_s, "vocabulary" if trains_vocab else "import")
        monitor.started = start
        monitor.start()

        def read() -> None:
            for raw in proc.stdout:
                t = time.perf_counter() - start
                line = raw.decode("utf-8", "replace").rstrip("\n")
                log.write(f"{t:9.1f}  {line}\n")
                log.flush()
                if SAMPLED.search(line):
                    events.setdefault("vocab_sampled_s", t)
                elif TRAINED.search(line) and trains_vocab:
                    events.setdefault("vocab_trained_s", t)
                    monitor.phase = "import"
                elif CLOSED.search(line):
                    events.setdefault("import_closed_s", t)

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        # wait4, not proc.wait(): its rusage covers the child and every descendant it reaped
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        monitor.stop()
        reader.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = "\n".join(log_path.read_text(errors="replace").splitlines()[-30:])
        raise RuntimeError(f"exit status {proc.returncode}: {' '.join(argv)}\n{tail}")
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "events": events,
            "monitor": monitor}


def import_figures(name: str, argv: list[str], out: Path, input_bytes: int, work: Path,
                   interval_s: float, trains_vocab: bool) -> dict:
    """One measured import: its figures, its output's size, and what dataset.json counted."""
    shutil.rmtree(out, ignore_errors=True)
    print(f"\n{name}: {' '.join(argv)}", flush=True)
    done = run_import(argv, work / f"log-{name}.txt", interval_s, trains_vocab)
    monitor, events, wall = done["monitor"], done["events"], done["wall_s"]
    info = json.loads((out / "dataset.json").read_text())
    stage = info["stages"]["import"]
    out_bytes = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    vocab_end = events.get("vocab_trained_s", 0.0)
    import_s = (events.get("import_closed_s", wall)) - vocab_end
    peaks = {phase: {k: (v / MIB if k != "processes" else v) for k, v in p.items()}
             for phase, p in monitor.peaks.items()}
    result = {
        "command": argv, "examples_in": stage["in"], "examples_kept": stage["kept"],
        "dropped": stage["dropped"], "input_mib": input_bytes / MIB,
        "wall_s": round(wall, 1), "cpu_s": round(done["cpu_s"], 1),
        "examples_per_s": stage["in"] / wall, "input_mb_per_s": input_bytes / 1e6 / wall,
        "examples_per_cpu_s": stage["in"] / done["cpu_s"] if done["cpu_s"] else None,
        "mean_loadavg_1m": round(statistics.fmean(row[5] for row in monitor.timeline), 2)
        if monitor.timeline else None,
        "peak_tree_rss_mib": max(p["tree_rss"] for p in peaks.values()),
        "peak_tree_pss_mib": max(p["tree_pss"] for p in peaks.values()),
        "peak_parent_rss_mib": max(p["parent_rss"] for p in peaks.values()),
        "parent_hwm_mib": monitor.hwm.get(monitor.pid, 0) / MIB,
        "max_worker_hwm_mib": max((h for pid, h in monitor.hwm.items() if pid != monitor.pid),
                                  default=0) / MIB,
        "max_processes": monitor.max_processes, "samples": len(monitor.timeline),
        "peaks_by_phase_mib": peaks,
        "import_pass_s": round(import_s, 1),
        "import_pass_examples_per_s": stage["in"] / import_s if import_s > 0 else None,
        "output_mib": out_bytes / MIB, "events_s": {k: round(v, 1) for k, v in events.items()},
        "timeline_mib": {"columns": ["s", "tree_rss", "tree_pss", "parent_rss", "processes",
                                     "loadavg_1m"],
                         "rows": monitor.timeline_mib(max(1.0, wall / 400))},
    }
    if trains_vocab and "vocab_trained_s" in events:
        result["vocab_pass_s"] = round(events["vocab_trained_s"], 1)
        if "vocab_sampled_s" in events:
            result["vocab_sample_s"] = round(events["vocab_sampled_s"], 1)
            result["vocab_train_s"] = round(events["vocab_trained_s"]
                                            - events["vocab_sampled_s"], 1)
    print(f"{name}: {stage['in']:,} examples in {wall:,.1f} s ({result['examples_per_s']:.1f}/s,"
          f" {result['input_mb_per_s']:.2f} MB/s); peak tree RSS "
          f"{result['peak_tree_rss_mib']:,.0f} MiB (Pss {result['peak_tree_pss_mib']:,.0f}), "
          f"parent {result['peak_parent_rss_mib']:,.0f} MiB", flush=True)
    return result


# ------------------------------------------------------------------------------------------
# The runs


def wikisum_command(*words: str) -> list[str]:
    if WIKISUM.exists():
        return [str(WIKISUM), "-v", *words]
    return [sys.executable, "-m", "wikisum.workflows.cli", "-v", *words]


def bench_multinews(args: argparse.Namespace, work: Path) -> dict:
    path = work / "multinews" / "train.jsonl"
    generated = reuse(work / "multinews" / "generated.json",
                      {"mib": args.multinews_mib, "seed": args.seed,
                       "paragraph_break": args.paragraph_break}, path)
    if generated is None:
        print(f"generating {args.multinews_mib:,} MiB of Multi-News JSON Lines in {path}",
              flush=True)
        generated = write_multinews(path, args.multinews_mib * MIB, args.seed,
                                    args.paragraph_break)
        remember(work / "multinews" / "generated.json",
                 {"mib": args.multinews_mib, "seed": args.seed,
                  "paragraph_break": args.paragraph_break}, generated)
    print(f"multinews: {generated['examples']:,} examples, {generated['bytes'] / MIB:,.1f} MiB, "
          f"{generated['bytes_per_example']:,} bytes each", flush=True)
    out = work / "out-multinews"
    common = ["--workers", str(args.workers)]
    if args.vocab_size:
        common += ["--vocab-size", str(args.vocab_size)]
    if args.vocab_texts:
        common += ["--vocab-texts", str(args.vocab_texts)]
    if args.limit:
        common += ["--limit", str(args.limit)]
    if args.extractors:
        common += ["--extractors", args.extractors]
    runs = {}
    runs["vocab-trained"] = import_figures(
        "multinews-vocab-trained",
        wikisum_command("import", "multinews", str(path), "--out", str(out), *common),
        out, generated["bytes"], work, args.interval, trains_vocab=True)
    if args.multinews_given_vocab:
        model = work / "multinews" / "vocab.model"
        shutil.copy(out / "vocab.model", model)
        runs["vocab-given"] = import_figures(
            "multinews-vocab-given",
            wikisum_command("import", "multinews", str(path), "--out", str(out), "--vocab",
                            str(model), *common),
            out, generated["bytes"], work, args.interval, trains_vocab=False)
    shutil.rmtree(out, ignore_errors=True)
    return {"generated": generated, "runs": runs}


def bench_hiersumm(args: argparse.Namespace, work: Path) -> dict:
    print(f"generating hiersumm shards in {work / 'hiersumm'}: {args.hiersumm_shards} of "
          f"{args.hiersumm_shard_mib} MiB and one of "
          f"{args.hiersumm_shard_mib * args.hiersumm_large_factor} MiB", flush=True)
    made = make_hiersumm(work, args)
    shards = work / "hiersumm" / "shards"
    reference = {"equal": load_alone(str(shards / made["equal_shard"])),
                 "largest": load_alone(str(shards / made["largest"]))}
    for what, r in reference.items():
        print(f"reference {what}: {Path(r['file']).name} {r['disk_mib']:,.1f} MiB on disk, "
              f"{r['loaded_mib']:,.0f} MiB loaded (peak {r['loaded_peak_mib']:,.0f} MiB above "
              f"a baseline of {r['baseline_mib']:,.0f} MiB), {r['load_s']} s", flush=True)
    out = work / "out-hiersumm"
    runs = {}
    for run in ("floor", "equal", "with-large"):
        folder = Path(made["runs"][run])
        input_bytes = sum(p.stat().st_size for p in folder.iterdir())
        runs[run] = import_figures(
            f"hiersumm-{run}",
            wikisum_command("import", "hiersumm", str(folder), "--source-vocab",
                            made["model"], "--out", str(out), "--workers", str(args.workers)),
            out, input_bytes, work, args.interval, trains_vocab=False)
        runs[run]["largest_shard_mib"] = max(
            (shards / name).stat().st_size for name in made["run_shards"][run]) / MIB
    shutil.rmtree(out, ignore_errors=True)
    return {"generated": made, "reference": reference, "runs": runs}


def reuse(record: Path, params: dict, path: Path) -> dict | None:
    """What a kept scratch folder's earlier generation wrote, where it had these options."""
    try:
        saved = json.loads(record.read_text())
    except (OSError, ValueError):
        return None
    if saved.get("params") != params or not path.exists() or \
            path.stat().st_size != saved["result"]["bytes"]:
        return None
    return dict(saved["result"], reused=True)


def remember(record: Path, params: dict, result: dict) -> None:
    record.write_text(json.dumps({"params": params, "result": result}) + "\n")


# ------------------------------------------------------------------------------------------
# Targets and the table


def targets(results: dict) -> list[dict]:
    out = []
    if "multinews" in results:
        run = results["multinews"]["runs"]["vocab-trained"]
        gib = run["input_mib"] / 1024
        out.append({"target": f"Multi-News {gib:.2f} GiB: peak tree RSS under 1 GB (954 MiB)",
                    "value": run["peak_tree_rss_mib"], "unit": "MiB",
                    "pass": run["peak_tree_rss_mib"] * MIB < TARGET_MULTINEWS_BYTES})
    if "hiersumm" in results:
        h = results["hiersumm"]
        floor = h["runs"]["floor"]["peak_tree_rss_mib"]
        for run, ref in (("equal", "equal"), ("with-large", "largest")):
            if run not in h["runs"]:
                continue
            loaded = h["reference"][ref]["loaded_peak_mib"]
            above = h["runs"][run]["peak_tree_rss_mib"] - floor
            out.append({"target": f"hiersumm {run}: peak above the floor <= "
                                  f"{TARGET_SHARD_RATIO} x the largest shard loaded alone "
                                  f"({loaded:,.0f} MiB)",
                        "value": above / loaded, "unit": "x",
                        "pass": above <= TARGET_SHARD_RATIO * loaded})
    return out


def print_table(results: dict, checks: list[dict]) -> None:
    header = (f"{'run':28s} {'examples':>9s} {'in MiB':>8s} {'wall s':>8s} {'ex/s':>6s} "
              f"{'MB/s':>5s} {'tree RSS':>8s} {'tree Pss':>8s} {'parent':>7s} {'procs':>5s}")
    print("\n" + header)
    print("-" * len(header))
    rows = []
    for fmt in ("multinews", "hiersumm"):
        for name, r in results.get(fmt, {}).get("runs", {}).items():
            rows.append((f"{fmt} {name}", r))
    for name, r in rows:
        print(f"{name:28s} {r['examples_in']:9,d} {r['input_mib']:8,.1f} {r['wall_s']:8,.1f} "
              f"{r['examples_per_s']:6.1f} {r['input_mb_per_s']:5.2f} "
              f"{r['peak_tree_rss_mib']:8,.0f} {r['peak_tree_pss_mib']:8,.0f} "
              f"{r['peak_parent_rss_mib']:7,.0f} {r['max_processes']:5d}")
    print("\nmemory in MiB: tree RSS, the summed VmRSS of the import and its workers (sampled); "
          "tree Pss,\nthe same with shared pages counted once; parent, the import's own VmRSS.")
    for name, r in rows:
        phases = ", ".join(f"{phase} {p['tree_rss']:,.0f} (parent {p['parent_rss']:,.0f})"
                           for phase, p in r["peaks_by_phase_mib"].items())
        line = f"  {name}: peaks by phase: {phases}"
        if "vocab_pass_s" in r:
            line += (f"; vocabulary pass {r['vocab_pass_s']:,.0f} s (sampling "
                     f"{r.get('vocab_sample_s', float('nan')):,.0f} s, training "
                     f"{r.get('vocab_train_s', float('nan')):,.0f} s)")
        if r.get("import_pass_examples_per_s"):
            line += (f"; import pass {r['import_pass_s']:,.0f} s, "
                     f"{r['import_pass_examples_per_s']:.1f} examples/s")
        line += (f"; {r['cpu_s']:,.0f} CPU-s, {r['examples_per_cpu_s'] or 0:.1f} examples per "
                 f"CPU-s, mean load {r['mean_loadavg_1m']}")
        print(line)
    if "hiersumm" in results:
        h = results["hiersumm"]
        for what, ref in h["reference"].items():
            print(f"  hiersumm reference ({what}): {Path(ref['file']).name}, "
                  f"{ref['disk_mib']:,.1f} MiB on disk, {ref['loaded_mib']:,.0f} MiB held "
                  f"loaded ({ref['loaded_peak_mib']:,.0f} MiB at the peak of torch.load)")
        floor = h["runs"]["floor"]["peak_tree_rss_mib"]
        for name, r in h["runs"].items():
            print(f"  hiersumm {name}: largest shard {r['largest_shard_mib']:,.1f} MiB on disk; "
                  f"peak tree {r['peak_tree_rss_mib']:,.0f} MiB, "
                  f"{r['peak_tree_rss_mib'] - floor:,.0f} MiB above the floor")
    print()
    for t in checks:
        print(f"  {'PASS' if t['pass'] else 'MISS'}  {t['target']}: {t['value']:,.2f} "
              f"{t['unit']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, default=Path("/tmp/wikisum-bench-import"),
                        help="scratch folder for the sources and outputs (default: %(default)s)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the scratch folder (a rerun reuses its sources)")
    parser.add_argument("--formats", default="multinews,hiersumm",
                        help="what to measure, comma-separated (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="sources' seed (default: 0)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="the import's --workers (default: the cores, %(default)s)")
    parser.add_argument("--interval", type=float, default=0.2,
                        help="seconds between memory samples (default: %(default)s)")
    parser.add_argument("--multinews-mib", type=int, default=2048,
                        help="MiB of Multi-News JSON Lines to generate (default: %(default)s)")
    parser.add_argument("--paragraph-break", choices=tuple(PARAGRAPH_BREAKS), default="newline",
                        help="between a document's paragraphs: the hub's newlines or the "
                             "release's NEWLINE_CHAR (default: %(default)s)")
    parser.add_argument("--vocab-size", type=int,
                        help="the import's --vocab-size (default: the command's)")
    parser.add_argument("--vocab-texts", type=int,
                        help="the import's --vocab-texts (default: the command's)")
    parser.add_argument("--limit", type=int, help="the import's --limit (a quick look)")
    parser.add_argument("--extractors", help="the import's --extractors (default: all; the "
                                             "ranking is most of the time, not of the memory)")
    parser.add_argument("--multinews-given-vocab", action="store_true",
                        help="import Multi-News again with the vocabulary of the first run "
                             "given (--vocab): the import pass without the vocabulary pass")
    parser.add_argument("--hiersumm-shards", type=int, default=8,
                        help="hiersumm shards of --hiersumm-shard-mib (default: %(default)s)")
    parser.add_argument("--hiersumm-shard-mib", type=int, default=100,
                        help="MiB on disk of each (default: %(default)s)")
    parser.add_argument("--hiersumm-large-factor", type=int, default=2,
                        help="the last shard is this many times as large (default: "
                             "%(default)s)")
    parser.add_argument("--hiersumm-vocab-size", type=int, default=9998,
                        help="pieces of the hiersumm sentencepiece model, at most "
                             "(default: %(default)s, as spm9998_3.model)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="RESULTS.json",
                        help="results file (default: bench/results/import_formats.json)")
    args = options.parse(parser, argv)
    chosen = [f.strip() for f in args.formats.split(",") if f.strip()]
    unknown = set(chosen) - {"multinews", "hiersumm"}
    if unknown:
        parser.error(f"--formats: unknown {', '.join(sorted(unknown))}")
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    facts = machine.describe(cores_used=args.workers)
    facts["cpus"] = os.cpu_count()
    facts["memory_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
                                / 2**30, 1)
    facts["loadavg_start"] = os.getloadavg()
    if facts["loadavg_start"][0] > 0.5:
        print(f"warning: load average {facts['loadavg_start'][0]:.2f} before the runs; "
              "something else is using the CPU", flush=True)
    started = time.time()
    results: dict = {}
    try:
        if "multinews" in chosen:
            results["multinews"] = bench_multinews(args, work)
        if "hiersumm" in chosen:
            results["hiersumm"] = bench_hiersumm(args, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    facts["loadavg_end"] = os.getloadavg()
    checks = targets(results)
    print_table(results, checks)
    machine.write_results(args.out, {
        "command": machine.command_line(argv),
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "machine": facts, "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "minutes": round((time.time() - started) / 60, 1),
        "self_peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "targets": checks, "results": results})
    return 0 if all(t["pass"] for t in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
