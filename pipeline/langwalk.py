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

import errno
import hashlib
import json
import logging
import math
import os
import shutil
import stat
import time
import uuid
import zlib
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
#
# An entry is ``CACHE/language-model/KEY/``: the arrays as .npy files and ``model.json``, which
# records the entry's key and, per array, its type, shape and CRC-32 as unpacked. A load maps
# each array and checks all three, so a flipped byte, an array of another entry or of another
# file of this one, or a file cut short is found before any answer is given (the CRC-32 of the
# 97 MB costs about 0.1 s a load: about as much again as mapping them). The checksums guard
# against damage and mix-ups, not against someone who may write the cache (who could write
# model.json too). Below the cache folder nothing is reached through a link: every name is
# opened relative to its folder without following links, and only regular files are read.

CACHE_ENV = "WIKISUM_CACHE_DIR"
# The cached model's arrays (an array's .npy file is mapped, not read) and what describes them.
_ARRAYS = ("ptc32", "pc", "nextmove", "row", "output")
_META = "model.json"
_MODELS = "language-model"
_MAX_META_BYTES = 1 << 20  # model.json is about 1 KB
# A temporary entry older than this was left by a killed writer (a write takes about a second).
_STALE_SECONDS = 3600
# Folders opened by descriptor, names within them opened without following links: where the
# platform cannot, there is no cache.
_SAFE_OPEN = (os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")
              and hasattr(os, "O_DIRECTORY"))
# How a folder below the cache folder is opened: a link there is not followed.
_DIRECTORY = (os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0)
              | os.O_CLOEXEC)


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
CACHE_FORMAT = 2


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
    renamed, so a reader never sees half an entry and two writers leave one. Whatever the cache
    holds, the answers are those of the unpacked model: an entry that does not check (its
    arrays' types, shapes and checksums as recorded when it was written; a link, or a file that
    is not a regular one, in its place) is unpacked again and rewritten; a cache that cannot be
    used (a file or a link where its folder would be, a folder that cannot be written, a full
    disk) is bypassed, the model loading as it would without a cache. Either is said in one
    warning. Entries of other model files are removed when one is written.
    """
    if not _SAFE_OPEN:
        cache = None
    models, problem, written = None, None, False
    if cache:
        try:
            models = _open_models(Path(cache))
        except OSError as exc:
            problem = _reason(exc)
    try:
        if models is not None:
            key = model_key(model_file)
            try:
                found = _from_cache(identifier_class, models, key)
            except Exception as exc:  # noqa: BLE001 - any damage: the entry is rebuilt
                found = None
                problem = f"its entry {key} is unreadable ({_reason(exc)})"
                if not _remove(models, key):
                    problem += "; it cannot be removed"
                    os.close(models)
                    models = None
            if found is not None:
                return found.prepare(depth)
        identifier = identifier_class.from_model_file(model_file, norm_probs=True)
        if supported(identifier):
            identifier.prepare(depth)
            if models is not None:
                try:
                    _write_entry(identifier, models, key)
                    written = True
                except OSError as exc:
                    problem = "; ".join(filter(None, [problem, "the unpacked model cannot be "
                                                      f"written ({_reason(exc)})"]))
    finally:
        if models is not None:
            os.close(models)
    if problem and written:
        log.warning("the language model cache at %s: %s; the model was unpacked and cached "
                    "again", cache, problem)
    elif problem:
        log.warning("the language model cache at %s cannot be used (%s); the model is unpacked "
                    "in every process instead (about 0.7 s): repair or remove the folder, or "
                    "set %s=off", cache, problem, CACHE_ENV)
    return identifier


def _reason(exc: BaseException) -> str:
    """An error's cause in words, without its traceback."""
    if isinstance(exc, OSError) and exc.strerror:
        where = f": {exc.filename}" if exc.filename is not None else ""
        return f"{exc.strerror}{where}"
    return str(exc) or type(exc).__name__


def _open_models(root: Path) -> int:
    """A descriptor of ``root/language-model``, both made where missing. Raises OSError where
    either is not a folder (a file, or a link at ``language-model``: not followed)."""
    if not root.is_dir():
        root.mkdir(parents=True, exist_ok=True)  # a file there: FileExistsError
    top = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            os.mkdir(_MODELS, dir_fd=top)
        except FileExistsError:
            pass
        try:
            return os.open(_MODELS, _DIRECTORY, dir_fd=top)
        except OSError as exc:
            if stat.S_ISLNK(os.stat(_MODELS, dir_fd=top, follow_symlinks=False).st_mode):
                raise OSError(exc.errno, "a link, not followed, where wikisum keeps its "
                              "folder (remove it)", str(root / _MODELS)) from None
            raise OSError(exc.errno, exc.strerror, str(root / _MODELS)) from None
    finally:
        os.close(top)



def _open_regular(folder: int, name: str):
    """The regular file ``name`` in ``folder`` (a descriptor), opened for reading without
    following a link (nor waiting on a pipe). Raises ValueError for anything else there."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=folder)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ValueError(f"{name} is a link (not followed)") from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError(f"{name} is not a regular file")
    return os.fdopen(fd, "rb")


def _mapped(folder: int, name: str, recorded: dict) -> np.ndarray:
    """The array of .npy file ``name``, mapped, once its type, shape, size and CRC-32 are the
    ones ``recorded`` when the entry was written."""
    with _open_regular(folder, name) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise ValueError(f"{name} is of .npy version {version}")
        if (fortran or dtype.hasobject or dtype.str != recorded["dtype"]
                or list(shape) != recorded["shape"]):
            raise ValueError(f"{name} holds {dtype.str} {list(shape)} where the entry records "
                             f"{recorded['dtype']} {recorded['shape']}")
        offset = f.tell()
        size = os.fstat(f.fileno()).st_size
        expected = offset + dtype.itemsize * math.prod(shape)
        if size != expected:
            raise ValueError(f"{name} is {size} bytes where its header makes {expected}")
        values = np.memmap(f, dtype=dtype, mode="r", offset=offset, shape=tuple(shape))
    if zlib.crc32(values) != recorded["crc32"]:
        raise ValueError(f"{name} is not the array unpacked there (its CRC-32 differs from "
                         "the one recorded)")
    return values


def _from_cache(identifier_class, models: int, key: str):
    """The identifier of entry ``key`` in folder ``models`` (a descriptor), or None where there
    is none. Raises where the entry does not check."""
    try:
        entry = os.open(key, _DIRECTORY, dir_fd=models)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            raise ValueError("the entry is not a folder (a link is not followed)") from None
        raise
    try:
        with _open_regular(entry, _META) as f:
            meta = json.loads(f.read(_MAX_META_BYTES + 1).decode("utf-8"))
        if not isinstance(meta, dict) or meta.get("key") != key:
            raise ValueError(f"{_META} is not this entry's (its key is another)")
        arrays = {name: _mapped(entry, f"{name}.npy", meta["arrays"][name]) for name in _ARRAYS}
    finally:
        os.close(entry)
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
    """Writes ``identifier``'s entry ``folder`` (``CACHE/language-model/KEY``)."""
    models = _open_models(folder.parent.parent)
    try:
        _write_entry(identifier, models, folder.name)
    finally:
        os.close(models)


def _write_entry(identifier, models: int, key: str) -> None:
    """Writes entry ``key`` into folder ``models`` (a descriptor): whole, under a temporary
    name, then renamed; another writer's entry of that key, finished first, is kept. Removes
    the entries of other keys and temporary ones left by killed writers."""
    unsigned = {2: np.uint16, 4: np.uint32, 8: np.uint64}
    arrays = {
        "ptc32": identifier._table32,
        "pc": np.asarray(identifier.nb_pc),
        "nextmove": np.frombuffer(identifier.tk_nextmove,
                                  dtype=unsigned[identifier.tk_nextmove.itemsize]),
        "row": np.frombuffer(identifier.tk_row, dtype=unsigned[identifier.tk_row.itemsize]),
        "output": np.asarray(identifier.tk_output, dtype=np.int64),
    }
    temporary = f".{key}.{uuid.uuid4().hex[:12]}.tmp"
    os.mkdir(temporary, dir_fd=models)
    try:
        folder = os.open(temporary, _DIRECTORY, dir_fd=models)
        try:
            recorded = {}
            for name, values in arrays.items():
                values = np.ascontiguousarray(values)
                recorded[name] = {"dtype": values.dtype.str, "shape": list(values.shape),
                                  "crc32": zlib.crc32(values)}
                _write_synced(folder, f"{name}.npy",
                              lambda f, values=values: np.save(f, values, allow_pickle=False))
            meta = json.dumps({"key": key, "classes": list(identifier.nb_classes),
                               "nextmove": identifier.tk_nextmove.typecode,
                               "row": identifier.tk_row.typecode,
                               "arrays": recorded}).encode("utf-8")
            _write_synced(folder, _META, lambda f: f.write(meta))
        finally:
            os.close(folder)
        try:
            os.rename(temporary, key, src_dir_fd=models, dst_dir_fd=models)
        except OSError:
            if not _is_folder(models, key):
                raise
            # Another process wrote the same entry first: theirs is kept.
    finally:
        _remove(models, temporary)
    now = time.time()
    for name in os.listdir(models):
        if name.startswith("py3langid-") and name != key:
            _remove(models, name)
        elif name.startswith(".py3langid-") and name.endswith(".tmp"):
            try:
                stale = now - os.stat(name, dir_fd=models,
                                      follow_symlinks=False).st_mtime > _STALE_SECONDS
            except OSError:
                continue
            if stale:
                _remove(models, name)


def _is_folder(folder: int, name: str) -> bool:
    try:
        return stat.S_ISDIR(os.stat(name, dir_fd=folder, follow_symlinks=False).st_mode)
    except OSError:
        return False


def _remove(folder: int, name: str) -> bool:
    """Removes ``name`` from ``folder`` (a descriptor): a folder with what it holds, a link
    itself (never what it points to). Whether nothing is left there."""
    try:
        if _is_folder(folder, name):
            shutil.rmtree(name, dir_fd=folder, ignore_errors=True)
        else:
            os.unlink(name, dir_fd=folder)
    except FileNotFoundError:
        return True
    except OSError:
        pass
    try:
        os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return True
    except OSError:
        pass
    return False


def _write_synced(folder: int, name: str, write) -> None:
    """File ``name`` in ``folder`` (a descriptor), new, written whole and flushed to disk, so
    that a crash after the entry's rename never leaves it empty under its final name."""
    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o644, dir_fd=folder)
    with os.fdopen(fd, "wb") as f:
        write(f)
        f.flush()
        os.fsync(f.fileno())
