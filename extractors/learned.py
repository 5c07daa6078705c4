"""A learned extractor: the paper's stated future work.

A scikit-learn regressor predicts each paragraph's cheating score (bigram recall of the lead,
``wikisum.extractors.cheating``) from features that need no target: tf-idf and TextRank scores,
position, length, overlap with the title, source. Trained on the train split, saved next to the
data, and used to rank like any other extractor.
"""

from __future__ import annotations

import heapq
import logging
import math
import pickle
from collections.abc import Iterable, Sequence

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor

from wikisum.core import files
from wikisum.core.records import stable_hash
from wikisum.core.text import words
from wikisum.extractors import LEARNED_MAX_ARTICLES as DEFAULT_MAX_ARTICLES  # --help reads it

log = logging.getLogger("wikisum.learned")

FORMAT = 1
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

    def __init__(self, model, feature_names: Sequence[str] = FEATURES, info: dict | None = None):
        if tuple(feature_names) != FEATURES:
            raise ValueError(f"model was trained on features {tuple(feature_names)}, this "
                             f"version computes {FEATURES}: retrain it (wikisum rank "
                             "--train-learned)")
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

    def save(self, path: str) -> None:
        blob = pickle.dumps({"format": FORMAT, "features": FEATURES, "model": self.model,
                             "info": self.info})
        with files.open_write(path) as f:
            f.write(blob)


def load(path: str) -> Learned:
    """A model saved by ``Learned.save`` (a pickle: load only files you wrote yourself)."""
    try:
        with files.open_read(path) as f:
            saved = pickle.loads(f.read())
    except (FileNotFoundError, OSError) as exc:
        raise FileNotFoundError(f"learned extractor model {path} not found (train one with "
                                "`wikisum rank --train-learned`)") from exc
    if saved.get("format") != FORMAT:
        raise ValueError(f"{path}: model format {saved.get('format')}, expected {FORMAT}")
    return Learned(saved["model"], saved["features"], saved.get("info"))


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
    model = HistGradientBoostingRegressor(max_iter=200, learning_rate=0.1, random_state=seed)
    model.fit(x, y)
    log.info("learned extractor: fitted on %d paragraphs of %d articles", len(y), len(heap))
    return Learned(model, FEATURES, {"articles": len(heap), "paragraphs": int(len(y))})
