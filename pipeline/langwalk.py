"""py3langid's identifier with its per-byte feature walk done by numpy: the same model, the
same answers, about twice as fast a text.

py3langid finds a text's features (byte n-grams) by walking an Aho-Corasick automaton one
byte at a time in Python (``visit_counts``), about 0.35 ms for the 1,000 characters that
:func:`wikisum.pipeline.language.identify` looks at, and scores them against a float16 table
that numpy widens to float32 on every call (another 0.15 ms). Both are most of the
identification's cost, which is paid once for every page a crawl holds.

The walk needs no loop: in such an automaton the state after byte i is the longest suffix of
the text so far that is a node of the pattern trie, and no node is deeper than the longest
pattern (``depth``, 6 bytes for py3langid 0.4's model). So the state after byte i is the state
reached from the root by the ``depth`` bytes ending at i, and every position's state is found
at once by ``depth`` gathers over all positions. The features are counted in the order of
their first occurrence, as py3langid's ``Counter`` holds them, and the table is widened to
float32 once (57 MiB), so the scores are bit-for-bit py3langid's (tests compare both on random
and real texts).

py3langid ships its model compressed with LZMA: unpacking it takes about 0.6 s of CPU in every
process that identifies a language (each local job, each worker process). :func:`load` keeps
the unpacked arrays in the user's cache folder (:func:`cache_dir`, about 100 MB) and maps them
from there on later loads (a few hundredths of a second; processes on one machine share the
mapped pages).
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import shutil
import time
import uuid
from array import array
from pathlib import Path

import numpy as np

log = logging.getLogger("wikisum.language")


def trie_depth(nextmove: np.ndarray, rowbase: np.ndarray) -> int:
    """The deepest node of the automaton: breadth-first distance from the root (state 0).

    A node's parent reaches it in one step and every other state that reaches it is at least
    as deep as the parent, so breadth-first distance is the node's depth in the trie.
    """
    seen = np.zeros(len(rowbase), dtype=bool)
    seen[0] = True
    frontier, depth = np.array([0]), 0
    letters = np.arange(256, dtype=np.int64)
    reached = np.zeros(len(rowbase), dtype=bool)
    while True:
        reached[:] = False
        reached[nextmove[(rowbase[frontier][:, None] + letters).ravel()]] = True
        reached &= ~seen
        frontier = np.flatnonzero(reached)
        if not len(frontier):
            return depth
        seen[frontier] = True
        depth += 1


# The trie depth of the model each py3langid release ships (checked by the tests against
# trie_depth, which takes about 0.4 s: this would be paid on every worker's start-up).
KNOWN_DEPTHS = {"0.4.0": 6}


def version_of_py3langid() -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("py3langid")
    except PackageNotFoundError:
        return None


def shipped_model_depth() -> int | None:
    """The trie depth of the model the installed py3langid ships, where it is known."""
    return KNOWN_DEPTHS.get(version_of_py3langid())


def supported(identifier) -> bool:
    """Whether ``identifier`` has the structures this walk reads (py3langid 0.4's layout)."""
    try:
        return (identifier.tk_nextmove.typecode in "IL" and len(identifier._rowbase) > 0
                and callable(identifier._raw_score) and identifier.nb_ptc.ndim == 2)
    except AttributeError:
        return False


class FeatureWalk:
    """Feature counts of encoded texts under one identifier's automaton."""

    def __init__(self, identifier, depth: int | None = None):
        """``depth``: the automaton's trie depth where it is known (any larger number gives
        the same counts, more slowly), else found by :func:`trie_depth`."""
        self.nextmove = np.frombuffer(identifier.tk_nextmove,
                                      dtype=np.dtype(f"u{identifier.tk_nextmove.itemsize}"))
        self.rowbase = np.asarray(identifier._rowbase, dtype=np.int64)
        self.output = np.asarray(identifier.tk_output, dtype=np.int64)
        self.depth = depth if depth is not None else trie_depth(self.nextmove, self.rowbase)
        # A byte that sends every state back to the root, which has no feature (0xFF in
        # py3langid 0.4's model: no UTF-8 text holds it): texts joined by it are walked at once.
        self.features = int(self.output.max()) + 1
        self.reset = next((b for b in (0xFF, 0xFE, 0xC0, 0xC1, 0x00)
                           if self.output[0] < 0
                           and not self.nextmove[self.rowbase + b].any()), None)

    def states(self, data: bytes) -> np.ndarray:
        """(len(data),) the automaton's state after each byte."""
        k, nm, rb = self.depth, self.nextmove, self.rowbase
        head, state = [], 0
        for letter in data[:k - 1]:  # the first bytes have fewer than `depth` before them
            state = int(nm[rb[state] + letter])
            head.append(state)
        if len(data) < k:
            return np.asarray(head, dtype=np.int64)
        tail = self._walked(np.frombuffer(data, dtype=np.uint8).astype(np.int64))
        return np.concatenate([np.asarray(head, dtype=np.int64), tail.astype(np.int64)])

    def _walked(self, b: np.ndarray) -> np.ndarray:
        """The state after each byte of ``b`` from its ``depth``-th on: the state reached from
        the root by the ``depth`` bytes ending there, all positions at once."""
        k, nm, rb = self.depth, self.nextmove, self.rowbase
        n = len(b) - k + 1
        state = np.zeros(n, dtype=nm.dtype)
        for j in range(k):
            state = nm[rb[state] + b[j:j + n]]
        return state

    def counts(self, data: bytes) -> tuple[np.ndarray, np.ndarray] | None:
        """(features, counts) in the order of first occurrence, or None without a feature."""
        found = self.output[self.states(data)]
        found = found[found >= 0]
        if not len(found):
            return None
        features, first, counts = np.unique(found, return_index=True, return_counts=True)
        order = np.argsort(first, kind="stable")
        return features[order], counts[order]

    def counts_many(self, texts: list[bytes]) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """:meth:`counts` of each text, the texts walked together: joined by the reset byte
        (and led by ``depth - 1`` of them, so that every position has ``depth`` bytes behind
        it), the walk and the counting are a few array operations for all of them instead of
        for each (about 3 times faster a text at 1,000 characters). Texts holding the reset
        byte, or a walk without one, are counted one by one."""
        if self.reset is None or any(self.reset in t for t in texts):
            return [self.counts(t) for t in texts]
        k = self.depth
        sep = bytes([self.reset])
        joined = sep * (k - 1) + sep.join(texts)
        starts = np.cumsum([k - 1] + [len(t) + 1 for t in texts[:-1]])
        # state[i] is the state after byte i + k - 1 of the joined bytes.
        state = self._walked(np.frombuffer(joined, dtype=np.uint8).astype(np.int64))
        found = self.output[state]
        at = np.flatnonzero(found >= 0)
        out: list[tuple[np.ndarray, np.ndarray] | None] = [None] * len(texts)
        if not len(at):
            return out
        which = np.searchsorted(starts, at + (k - 1), side="right") - 1
        width = self.features
        keys, first, counts = np.unique(which * width + found[at], return_index=True,
                                        return_counts=True)
        order = np.argsort(first, kind="stable")  # texts in turn, each in first occurrence
        keys, counts = keys[order], counts[order]
        text_of = keys // width
        bounds = np.searchsorted(text_of, np.arange(len(texts) + 1))
        for i in range(len(texts)):
            lo, hi = bounds[i], bounds[i + 1]
            if hi > lo:
                out[i] = keys[lo:hi] - i * width, counts[lo:hi]
        return out


def vectorised(identifier_class):
    """A subclass of py3langid's ``LanguageIdentifier`` whose raw scores come from
    :class:`FeatureWalk` and a float32 table (call ``prepare`` once after loading)."""

    from py3langid.langid import RAW_FLOOR

    class VectorisedIdentifier(identifier_class):
        __slots__ = ("_walk", "_table32", "_own_decide")

        def prepare(self, depth: int | None = None) -> VectorisedIdentifier:
            """Build the walk (``depth`` as :class:`FeatureWalk` takes it)."""
            self._walk = FeatureWalk(self, depth)
            self._table32 = np.asarray(self.nb_ptc, dtype=np.float32)
            # classify_many scores as py3langid's _decide and classify do, copied from the
            # releases the tests hold it to; another release's texts go through its classify.
            self._own_decide = version_of_py3langid() in KNOWN_DEPTHS
            return self

        def set_languages(self, langs=None):
            super().set_languages(langs)
            self._table32 = np.asarray(self.nb_ptc, dtype=np.float32)

        def _raw_score(self, text):
            walk = getattr(self, "_walk", None)  # unset: not prepared, py3langid's own walk
            return self._scored(text, None if walk is None else walk.counts(text))

        def _scored(self, text, found):
            if found is None:  # (also a text without a feature: py3langid's answer for it)
                return super()._raw_score(text)
            features, counts = found
            return np.log1p(counts.astype(np.float32)) @ self._table32[features] + self.nb_pc

        def classify_many(self, texts: list) -> list[tuple[str, float]]:
            """``classify`` of each text, their features found by one walk
            (:meth:`FeatureWalk.counts_many`); each answer is the one ``classify`` gives."""
            walk = getattr(self, "_walk", None)
            if walk is None or not texts or not getattr(self, "_own_decide", False):
                return [self.classify(text) for text in texts]
            encoded = [self._encode(text) for text in texts]
            return [self._answer(self._normalised(data, self._scored(data, found)))
                    for data, found in zip(encoded, walk.counts_many(encoded), strict=True)]

        # py3langid 0.4's _decide after its raw scores, and its classify after _decide (the
        # tests hold classify_many to classify's answers, bit for bit).
        def _normalised(self, data: bytes, scores):
            if self._norm_probs:
                scores *= 1.0 / math.sqrt(len(data) or 1)
                np.exp(scores - scores.max(), out=scores)
                scores /= scores.sum()
            for i, j in self._alias_pairs:
                if self._norm_probs:
                    scores[i] += scores[j]
                    scores[j] = 0.0
                else:
                    scores[i] = max(scores[i], scores[j])
                    scores[j] = RAW_FLOOR
            return scores

        def _answer(self, scores) -> tuple[str, float]:
            i = int(scores.argmax())
            conf = float(scores[i])
            if self.min_confidence is not None and conf < self.min_confidence:
                return "und", conf
            return self.nb_classes[i], conf

    return VectorisedIdentifier


# ------------------------------------------------------------------------------------------
# The unpacked model, cached

CACHE_ENV = "WIKISUM_CACHE_DIR"
# The cached model's arrays (an array's .npy file is mapped, not read) and what describes them.
_ARRAYS = ("ptc32", "pc", "nextmove", "row", "output")
_META = "model.json"


def cache_dir() -> Path | None:
    """The folder where wikisum keeps what it can always rebuild: ``$WIKISUM_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/wikisum``, else ``~/.cache/wikisum``; None (no cache) when
    ``WIKISUM_CACHE_DIR`` is ``off`` or empty."""
    given = os.environ.get(CACHE_ENV)
    if given is not None:
        given = given.strip()
        return None if not given or given.lower() == "off" else Path(given).expanduser()
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.path.expanduser("~")
        if home.startswith("~"):  # no home to resolve: no cache, not one in the working folder
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "wikisum"


# The layout of an entry; a change to it makes new entries, and the old ones are removed.
CACHE_FORMAT = 1


def model_key(model_file: Path) -> str:
    """The cache entry of a model file: py3langid's version, the file's digest and the
    entry's layout."""
    digest = hashlib.sha256(Path(model_file).read_bytes()).hexdigest()[:20]
    return f"py3langid-{version_of_py3langid()}-{digest}-v{CACHE_FORMAT}"


def load(identifier_class, model_file, depth: int | None = None,
         cache: Path | None = None):
    """py3langid's identifier of ``model_file`` (``norm_probs``) as ``vectorised(...)`` class
    ``identifier_class``, prepared where its layout allows (:func:`supported`).

    With a ``cache`` folder, the unpacked arrays are read from (mapped) or written to
    ``cache/language-model/KEY`` (:func:`model_key`): written whole under a temporary name and
    renamed, so a reader never sees half an entry and two writers leave one. An entry that
    cannot be read is rebuilt; one that cannot be written is not kept (the model loads as it
    would without a cache); entries of other model files are removed when one is written.
    """
    folder = None
    try:
        if cache:
            folder = Path(cache) / "language-model" / model_key(model_file)
            found = folder.is_dir()
        else:
            found = False
    except OSError as exc:  # a folder that cannot be looked into: no cache
        log.warning("the language model cache at %s cannot be used (%s); unpacking the model",
                    cache, exc)
        folder, found = None, False
    if found:
        try:
            return _from_cache(identifier_class, folder).prepare(depth)
        except Exception as exc:  # noqa: BLE001 - any damage: the entry is rebuilt
            log.warning("the cached language model at %s is unreadable (%s); unpacking the "
                        "model again", folder, exc)
            shutil.rmtree(folder, ignore_errors=True)
    identifier = identifier_class.from_model_file(model_file, norm_probs=True)
    if not supported(identifier):
        return identifier
    identifier.prepare(depth)
    if folder is not None:
        try:
            _write_cache(identifier, folder)
        except OSError as exc:
            log.debug("the language model is not cached at %s: %s", folder, exc)
    return identifier


def _from_cache(identifier_class, folder: Path):
    meta = json.loads((folder / _META).read_text(encoding="utf-8"))
    arrays = {name: np.load(folder / f"{name}.npy", mmap_mode="r", allow_pickle=False)
              for name in _ARRAYS}
    nextmove, row = array(meta["nextmove"]), array(meta["row"])
    nextmove.frombytes(memoryview(np.ascontiguousarray(arrays["nextmove"])).cast("B"))
    row.frombytes(memoryview(np.ascontiguousarray(arrays["row"])).cast("B"))
    ptc, pc, out = arrays["ptc32"], arrays["pc"], arrays["output"]
    if ptc.dtype != np.float32 or ptc.ndim != 2 or ptc.shape[1] != len(meta["classes"]):
        raise ValueError(f"table of shape {ptc.shape} and type {ptc.dtype}")
    # What a torn or zero-filled file would break: every index into another array in range.
    rows = len(nextmove) // 256
    if (len(nextmove) % 256 or len(out) != len(row) or not len(row)
            or int(np.asarray(arrays["row"]).max()) >= rows
            or pc.shape != (ptc.shape[1],) or int(out.max()) >= ptc.shape[0]
            or int(np.asarray(arrays["nextmove"]).max()) >= len(row)):
        raise ValueError("arrays of sizes that do not fit together")
    # The float32 table stands for py3langid's float16 one: widening is exact, and numpy
    # scores a float16 table in float32 anyway, so every score is the same.
    return identifier_class(ptc, np.array(pc), list(meta["classes"]), nextmove, out.tolist(),
                            norm_probs=True, tk_row=row)


def _write_cache(identifier, folder: Path) -> None:
    folder.parent.mkdir(parents=True, exist_ok=True)
    temporary = folder.with_name(f".{folder.name}.{uuid.uuid4().hex[:12]}.tmp")
    temporary.mkdir()
    try:
        unsigned = {2: np.uint16, 4: np.uint32, 8: np.uint64}
        arrays = {
            "ptc32": identifier._table32,
            "pc": np.asarray(identifier.nb_pc),
            "nextmove": np.frombuffer(identifier.tk_nextmove,
                                      dtype=unsigned[identifier.tk_nextmove.itemsize]),
            "row": np.frombuffer(identifier.tk_row, dtype=unsigned[identifier.tk_row.itemsize]),
            "output": np.asarray(identifier.tk_output, dtype=np.int64),
        }
        for name, values in arrays.items():
            _write_synced(temporary / f"{name}.npy",
                          lambda f, values=values: np.save(f, values, allow_pickle=False))
        meta = json.dumps({"classes": list(identifier.nb_classes),
                           "nextmove": identifier.tk_nextmove.typecode,
                           "row": identifier.tk_row.typecode}).encode("utf-8")
        _write_synced(temporary / _META, lambda f: f.write(meta))
        try:
            os.rename(temporary, folder)
        except OSError:
            if not folder.is_dir():
                raise
            # Another process wrote the same entry first: theirs is kept.
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
    for other in folder.parent.glob("py3langid-*"):
        if other != folder and other.is_dir():
            shutil.rmtree(other, ignore_errors=True)
    # What a writer killed before its rename left (an hour is far longer than a write).
    for left in folder.parent.glob(".py3langid-*.tmp"):
        try:
            if time.time() - left.stat().st_mtime > 3600:
                shutil.rmtree(left, ignore_errors=True)
        except OSError:
            pass


def _write_synced(path: Path, write) -> None:
    """A file written whole and flushed to disk, so that a crash after the entry's rename
    never leaves it empty under its final name."""
    with open(path, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
