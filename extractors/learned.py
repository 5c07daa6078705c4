"""A learned extractor: the paper's stated future work.

A scikit-learn regressor predicts each paragraph's cheating score (bigram recall of the lead,
``wikisum.extractors.cheating``) from features that need no target: tf-idf and TextRank scores,
position, length, overlap with the title, source. Trained on the train split, saved next to the
data, and used to rank like any other extractor.

The saved model is JSON (:data:`FORMAT`): the fitted trees as arrays
(:mod:`wikisum.extractors.trees`), which score exactly as the regressor did. Such a file travels
with datasets and exports, so it holds data only: a pickle (the format before) could run code
when loaded, and is refused unread.
"""

from __future__ import annotations

import heapq
import json
import logging
import math
from collections.abc import Iterable, Sequence

import numpy as np

from wikisum.core import files
from wikisum.core.records import stable_hash
from wikisum.core.text import words
from wikisum.extractors import LEARNED_MAX_ARTICLES as DEFAULT_MAX_ARTICLES  # --help reads it
from wikisum.extractors import trees

log = logging.getLogger("wikisum.learned")

FORMAT = "wikisum-learned-extractor"
FORMAT_VERSION = 2  # 1 was a pickle, no longer read
FILE_NAME = "learned.json"  # beside a dataset's shards (`wikisum rank --train-learned`)
MAX_BYTES = 16 * 1024 * 1024  # a fitted model is about 1 MB
RETRAIN = "retrain it with `wikisum rank --train-learned`"
FEATURES = (
    "tfidf",  # the paper's tf-idf score with the title as query
    "tfidf_rank",  # its rank among the article's paragraphs, as a fraction
    "textrank",  # PageRank score x number of paragraphs (mean 1)
    "position",  # index / (n - 1): references come in citation order, then search rank
    "log_words",
    "title_overlap",  # share of the title's distinct words in the paragraph
    "citation",  # 1 cited, 0 search result, 0.5 unknown
    "digit_share",  # share of tokens with a digit: facts (dates, counts) are in the lead
    "capital_share",  # share of capitalised tokens: names are in the lead
    "log_paragraphs",  # article-level: how many paragraphs compete
)


def features(title: str, paragraphs: Sequence[str],
             sources: Sequence[str] | None = None) -> np.ndarray:
    """(n, len(FEATURES)) features of an article's paragraphs."""
    from wikisum import extractors

    n = len(paragraphs)
    if n == 0:
        return np.zeros((0, len(FEATURES)))
    tfidf = np.asarray(extractors.get("tfidf").scores(title, paragraphs), dtype=float)
    textrank = np.asarray(extractors.get("textrank").scores(title, paragraphs), dtype=float)
    order = np.argsort(-tfidf, kind="stable")
    tfidf_rank = np.empty(n)
    tfidf_rank[order] = np.arange(n) / max(1, n - 1)
    title_words = set(words(title))
    out = np.zeros((n, len(FEATURES)))
    for i, paragraph in enumerate(paragraphs):
        tokens = paragraph.split()
        toks = words(paragraph)
        source = sources[i] if sources is not None else None
        out[i] = (
            tfidf[i],
            tfidf_rank[i],
            textrank[i] * n,
            i / max(1, n - 1),
            math.log1p(len(toks)),
            len(title_words & set(toks)) / len(title_words) if title_words else 0.0,
            1.0 if source == "citation" else 0.0 if source == "search" else 0.5,
            sum(any(c.isdigit() for c in t) for t in tokens) / max(1, len(tokens)),
            sum(t[:1].isupper() for t in tokens) / max(1, len(tokens)),
            math.log(n),
        )
    return out


class Learned:
    name = "learned"

    def __init__(self, model: trees.Trees, feature_names: Sequence[str] = FEATURES,
                 info: dict | None = None):
        if tuple(feature_names) != FEATURES:
            raise ValueError(f"model was trained on features {tuple(feature_names)}, this "
                             f"version computes {FEATURES}: {RETRAIN}")
        if model.n_features != len(FEATURES):
            raise ValueError(f"model reads {model.n_features} features, not {len(FEATURES)}")
        self.model = model
        self.info = info or {}

    def scores(self, title: str, paragraphs: Sequence[str], target: str | None = None,
               sources: Sequence[str] | None = None) -> np.ndarray:
        if not paragraphs:
            return np.zeros(0)
        return self.model.predict(features(title, paragraphs, sources))

    def rank(self, title: str, paragraphs: Sequence[str], target: str | None = None,
             sources: Sequence[str] | None = None) -> list[int]:
        scores = self.scores(title, paragraphs, sources=sources)
        return [int(i) for i in np.argsort(-scores, kind="stable")]

    def to_dict(self) -> dict:
        return {"format": FORMAT, "format_version": FORMAT_VERSION, "features": list(FEATURES),
                "info": self.info, "model": self.model.to_dict()}

    def save(self, path: str) -> None:
        """Write the model as JSON (:data:`FORMAT`) to ``path``."""
        blob = json.dumps(self.to_dict(), separators=(",", ":")).encode("utf-8")
        with files.open_write(path) as f:
            f.write(blob)


def looks_pickled(blob: bytes) -> bool:
    """A pickle of protocol 2 or later starts with the PROTO opcode (0x80); JSON never does."""
    return blob[:1] == b"\x80"


def _constant(name: str) -> float:
    """JSON's non-standard constants: a threshold may be infinite (a split on missing values),
    nothing is NaN."""
    if name == "NaN":
        raise ValueError("NaN is not a value a model holds")
    return float(name)


def load(path: str) -> Learned:
    """A model saved by ``Learned.save``, checked; nothing in the file is run.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: it is not a saved learned extractor: a pickle (the format before JSON,
            refused unread), another format, or a file that does not check.
    """
    try:
        with files.open_read(path) as f:
            blob = f.read(MAX_BYTES + 1)
    except (FileNotFoundError, OSError) as exc:
        raise FileNotFoundError(f"learned extractor model {path} not found (train one with "
                                "`wikisum rank --train-learned`)") from exc
    pickled = (f"{path} is a pickled learned extractor (the format of wikisum before its JSON "
               "models): a pickle can run code when loaded, so it is not read; "
               f"{RETRAIN} (it writes {FILE_NAME}), and re-export a model trained on it with "
               "`wikisum export`")
    if looks_pickled(blob):
        raise ValueError(pickled)
    if len(blob) > MAX_BYTES:
        raise ValueError(f"{path} is over {MAX_BYTES // 2**20} MiB: not a learned extractor "
                         "model (one is about 1 MB)")
    try:
        saved = json.loads(blob.decode("utf-8"), parse_constant=_constant)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        if path.endswith((".pkl", ".pickle")):  # a pickle of protocol 0 or 1
            raise ValueError(pickled) from None
        raise ValueError(f"{path} is not a learned extractor model (JSON): {exc}") from None
    if not isinstance(saved, dict) or saved.get("format") != FORMAT:
        raise ValueError(f"{path} is not a learned extractor model (no \"format\": "
                         f"\"{FORMAT}\")")
    if saved.get("format_version") != FORMAT_VERSION:
        raise ValueError(f"{path}: model format version {saved.get('format_version')!r}, this "
                         f"wikisum reads {FORMAT_VERSION}: {RETRAIN}")
    names = saved.get("features")
    info = saved.get("info")
    if not isinstance(names, list) or not isinstance(info, dict | None):
        raise ValueError(f"{path}: \"features\" is not a list or \"info\" not an object")
    try:
        model = trees.from_dict(saved.get("model"))
    except (ValueError, OverflowError, TypeError) as exc:  # a conversion it did not foresee
        raise ValueError(f"{path}: the model does not check: {exc}") from None
    return Learned(model, names, info)


def train(articles: Iterable[dict], max_articles: int = DEFAULT_MAX_ARTICLES,
          seed: int = 0) -> Learned:
    """Fit on train articles (ingest rows: title, lead, references).

    A deterministic sample of at most ``max_articles`` articles (smallest stable hash of the
    title) is used, and features are computed only for articles that can still enter it, so
    memory and time stay bounded on a full dump.
    """
    from wikisum import extractors

    cheating = extractors.get("cheating")
    heap: list[tuple] = []  # (-hash, title, tie-breaker, X, y)
    for n, row in enumerate(articles):
        key = -stable_hash(row["title"])
        if len(heap) >= max_articles and key <= heap[0][0]:
            continue
        texts = [p for ref in row["references"] for p in ref["paragraphs"]]
        if not texts:
            continue
        sources = [ref["source"] for ref in row["references"] for _ in ref["paragraphs"]]
        x = features(row["title"], texts, sources)
        y = np.asarray(cheating.scores(row["title"], texts, row["lead"]), dtype=float)
        item = (key, row["title"], n, x, y)
        if len(heap) < max_articles:
            heapq.heappush(heap, item)
        else:
            heapq.heapreplace(heap, item)
    if not heap:
        raise ValueError("no training article with paragraphs: cannot fit the learned extractor")
    heap.sort(key=lambda item: (item[1], item[2]))
    x = np.vstack([item[3] for item in heap])
    y = np.concatenate([item[4] for item in heap])
    from sklearn.ensemble import HistGradientBoostingRegressor

    model = HistGradientBoostingRegressor(max_iter=200, learning_rate=0.1, random_state=seed)
    model.fit(x, y)
    log.info("learned extractor: fitted on %d paragraphs of %d articles", len(y), len(heap))
    return Learned(trees.from_sklearn(model), FEATURES,
                   {"articles": len(heap), "paragraphs": int(len(y))})
