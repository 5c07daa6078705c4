"""Every extractor and the clone filters on extreme paragraphs, in bounded time and memory.

One child process makes the inputs one at a time and runs every subject (each registered
extractor, the clone filter, the near-duplicate filter) on each in a process of its own (forked,
so the input is made once) under the subject's bound: its seconds of CPU time, measured, with a
wall-time limit of ``WALL_SLACK`` times as many (an interval timer kills it; the machine may be
shared), and an address-space limit (RLIMIT_AS) of the subject's megabytes beyond what the
process held when it started. ``BOUNDS`` states them; each is at least twice what the subject
needed on a loaded two-core machine, on the worst of these inputs.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pytest

MB = 1 << 20
TITLE = "The bridge over the river"
LEAD = ("The bridge over the river was built in 1900 by the people of the town. It is the "
        "oldest bridge in the region and a famous landmark.")
SENTENCE = "The bridge over the river was built in 1900 by the people of the town."


def letters(count: int) -> str:
    rng = np.random.default_rng(0)
    return rng.integers(ord("a"), ord("z") + 1, size=count, dtype=np.uint8).tobytes().decode()


def word(i: int) -> str:
    """A distinct word of letters for each ``i`` (bijective base 26)."""
    out = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        out = chr(ord("a") + r) + out
    return out


def cjk(size: int) -> str:
    rng = np.random.default_rng(0)
    return rng.integers(0x4E00, 0x9FA5, size=size // 3).astype("<u4").tobytes().decode(
        "utf-32-le")


# name -> the paragraphs, as the extractors receive them (normalised, filtered).
INPUTS = {
    "one 5 MB paragraph without spaces": lambda: [letters(5 * MB)],
    "one paragraph of 5 MB of one character": lambda: ["a" * (5 * MB)],
    # ICU's segmentation makes it 700,000 words: the most words in one paragraph.
    "one 2 MB paragraph of CJK without spaces": lambda: [cjk(2 * MB)],
    "100,000 one-word paragraphs, all words distinct": lambda: [word(i) for i in range(100_000)],
    "100,000 one-word paragraphs of 50 words": lambda: [word(i % 50) for i in range(100_000)],
    "20,000 identical paragraphs": lambda: [SENTENCE] * 20_000,
    "20,000 two-word paragraphs sharing a word": lambda: [f"bridge {word(i)}"
                                                          for i in range(20_000)],
}


@dataclass(frozen=True)
class Bound:
    seconds: float
    megabytes: int


# Per subject, on every input above: the most CPU time and address space (beyond the process's
# own) it may take.
BOUNDS = {
    "identity": Bound(5, 100),
    "tfidf": Bound(10, 600),
    "textrank": Bound(20, 1000),
    "sumbasic": Bound(30, 600),
    "cheating": Bound(15, 900),
    "learned": Bound(40, 1200),
    "clone filter": Bound(20, 600),
    "near-duplicate filter": Bound(20, 400),
}


# The wall-time limit, in CPU-time bounds: other processes may share the machine.
WALL_SLACK = 3


def learned_model():
    """A learned extractor of 200 trees of depth 3 (a fitted one's shape), made without
    fitting: the scoring's cost is the point, not its quality."""
    from wikisum.extractors import learned, trees

    n = len(learned.FEATURES)
    tree = {"leaf": [False, False, False] + [True] * 4, "feature": [0, 3, 4, 0, 0, 0, 0],
            "threshold": [0.5, 0.3, 2.0, 0.0, 0.0, 0.0, 0.0],
            "missing_left": [True] * 7, "left": [1, 3, 5, 0, 0, 0, 0],
            "right": [2, 4, 6, 0, 0, 0, 0], "value": [0.0, 0.0, 0.0, 0.1, 0.2, 0.3, 0.4]}
    model = trees.from_dict({"kind": trees.KIND, "baseline": 0.0, "n_features": n,
                             "trees": [dict(tree, feature=[(t + f) % n for f in tree["feature"]])
                                       for t in range(200)]})
    return learned.Learned(model)


def run_subject(subject: str, paragraphs: list[str]) -> str:
    """Runs ``subject`` on ``paragraphs``; a word on what it found."""
    from wikisum import extractors
    from wikisum.pipeline import clones, dedup

    if subject == "clone filter":
        document = "\n".join(paragraphs)
        return str([clones.clone_recall(LEAD, document, measure)
                    for measure in clones.CLONE_MEASURES])
    if subject == "near-duplicate filter":
        drops = dedup.duplicate_paragraphs([paragraphs])[0]
        return f"{sum(d is not None for d in drops)} dropped"
    ranker = learned_model() if subject == "learned" else extractors.get(subject)
    order = ranker.rank(TITLE, paragraphs, target=LEAD, sources=["search"] * len(paragraphs))
    assert sorted(order) == list(range(len(paragraphs))), "not an order of the paragraphs"
    return f"first {order[:3]}"


def address_space(field: str) -> int:
    """This process's address space in bytes: ``field`` of /proc/self/status (its size now,
    "VmSize:", or its peak, "VmPeak:")."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) * 1024
    raise OSError(f"no {field} in /proc/self/status")


def in_child() -> None:
    """Makes each input in turn and runs every subject on it, each forked under its bound;
    prints {input: {subject: {"seconds" (CPU), "wall", "megabytes" (peak address space beyond
    the start), "failed", "outcome"}}} as JSON."""
    from wikisum.core.text import words

    words(cjk(300))  # ICU's data loaded before the forks
    learned_model()
    print(json.dumps({name: run_all(INPUTS[name]()) for name in INPUTS}))


def run_all(paragraphs: list[str]) -> dict:
    found = {}
    for subject, bound in BOUNDS.items():
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # the subject's own process
            os.close(read)
            start_size = address_space("VmSize:")
            limit = start_size + bound.megabytes * MB
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            signal.setitimer(signal.ITIMER_REAL, bound.seconds * WALL_SLACK)
            start = time.perf_counter()
            failed = True
            try:
                outcome = run_subject(subject, paragraphs)
                failed = False
            except MemoryError:
                outcome = f"MemoryError: over {bound.megabytes} MB"
            except BaseException as exc:  # noqa: BLE001 - reported to the test
                outcome = f"{type(exc).__name__}: {exc}"[:300]
            wall = time.perf_counter() - start
            used = resource.getrusage(resource.RUSAGE_SELF)
            os.write(write, json.dumps({
                "seconds": used.ru_utime + used.ru_stime, "wall": wall,
                "megabytes": (address_space("VmPeak:") - start_size) / MB, "failed": failed,
                "outcome": outcome}).encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as f:
            report = f.read()
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            why = (f"killed past {bound.seconds * WALL_SLACK} s" if sig == signal.SIGALRM
                   else f"killed by signal {sig}")
            found[subject] = {"seconds": None, "failed": True, "outcome": why}
        else:
            found[subject] = json.loads(report)
    return found


CHILD = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("extreme_paragraphs", sys.argv[1])
module = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
module.in_child()
"""


@cache
def measured() -> dict:
    limit = len(INPUTS) * WALL_SLACK * sum(b.seconds for b in BOUNDS.values()) + 60
    done = subprocess.run([sys.executable, "-c", CHILD, __file__], capture_output=True,
                          text=True, timeout=limit, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc/self/status")
@pytest.mark.parametrize("subject", list(BOUNDS))
@pytest.mark.parametrize("name", list(INPUTS))
def test_every_subject_ends_within_its_bound(name, subject):
    got = measured()[name][subject]
    bound = BOUNDS[subject]
    assert not got["failed"], f"{subject} on {name}: {got['outcome']}"
    assert got["seconds"] <= bound.seconds, f"{subject} on {name}: {got}"


def test_a_textrank_over_its_pair_budget_leaves_out_the_most_widely_held_words(caplog):
    """The bound on the graph: 30 paragraphs that all hold "bridge" and "river" make up to 900
    pairs; with room for 200, both words are left out (said in a warning), and the paragraphs
    rank as they would with those two words held by none of the others (their tokens still
    count in the lengths)."""
    from wikisum.extractors.textrank import TextRank

    paragraphs = [f"bridge river {word(i)} {word(i + 1)}" for i in range(30)]
    with caplog.at_level("WARNING", logger="wikisum.extractors"):
        bounded = TextRank(max_pairs=200).rank(TITLE, paragraphs)
    assert "the 2 words held by most paragraphs" in caplog.text
    unshared = [f"{word(1000 + 2 * i)} {word(1001 + 2 * i)} {word(i)} {word(i + 1)}"
                for i in range(30)]
    assert bounded == TextRank().rank(TITLE, unshared)
    assert TextRank().rank(TITLE, paragraphs) == TextRank(max_pairs=900).rank(TITLE, paragraphs)
    assert bounded != TextRank().rank(TITLE, paragraphs)


@pytest.mark.parametrize("copies", [2, 3, 50])
def test_copies_of_a_paragraph_rank_as_the_whole_graph_would(copies):
    """Copies are one node standing for all of them: the scores are those of the graph of every
    copy (built here pair by pair), to the rounding of the scores."""
    import networkx as nx

    from wikisum.extractors import textrank

    paragraphs = (["cat dog eel", "cat gnu", "yak zebu"] + ["cat dog fox"] * copies
                  + ["dog eel owl", "cat gnu"])
    weights = textrank.similarity_matrix(paragraphs)
    graph = nx.from_scipy_sparse_array(weights)
    rank = nx.pagerank(graph, alpha=textrank.DAMPING, weight="weight",
                       tol=textrank.TOLERANCE, max_iter=textrank.MAX_ITERATIONS)
    whole = np.round([rank[i] for i in range(len(paragraphs))], textrank.DECIMALS)
    assert np.allclose(textrank.TextRank().scores(TITLE, paragraphs), whole, atol=1e-11)
    assert textrank.TextRank().rank(TITLE, paragraphs) == [
        int(i) for i in np.argsort(-whole, kind="stable")]
