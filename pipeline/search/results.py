"""The search-results line every route writes, the one ingest reads as ``--search-results``:
``{"title": ..., "urls": [...]}``, with the fields ingest ignores beside them: ``scores`` (the
engine's, one per URL; null where an engine gives ranks only), ``engine`` and ``query``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from wikisum.core.accounting import IN, KEPT
from wikisum.pipeline.search.sites import excluded
from wikisum.pipeline.urls import is_text

# The stage that accounts for the URLs an engine returned: in = written + dropped by reason.
RESULT_URLS = "result_urls"


def result_line(title: str, urls: list[str], scores: list[float | None] | None, engine: str,
                query: str) -> str:
    """One line of a search-results file, newline included. JSON escapes every character
    outside ASCII and every line separator, so a title or URL can never break the line."""
    return json.dumps({"title": title, "urls": list(urls),
                       "scores": list(scores) if scores is not None else [None] * len(urls),
                       "engine": engine, "query": query}, ensure_ascii=True) + "\n"


def summary_path(out: str) -> str:
    """Where a search run's summary goes beside its results file: ``results.jsonl`` ->
    ``results.summary.json`` (any other name gets ``.summary.json`` added)."""
    stem = out[: -len(".jsonl")] if out.endswith(".jsonl") else out
    return stem + ".summary.json"


def partial_path(out: str) -> str:
    """Where a web search that stopped early (a spent quota, a refused key) leaves the results
    it has, so that no reader takes them for whole ones: ``results.jsonl`` ->
    ``results.partial.jsonl``."""
    stem = out[: -len(".jsonl")] if out.endswith(".jsonl") else out
    return stem + ".partial.jsonl"


def kept_results(hits: Iterable[tuple[str, float | None]], k: int, mirrors: tuple[str, ...],
                 count: Callable[[str], None]) -> list[tuple[str, float | None]]:
    """The first ``k`` (url, score) of an engine's answer that may be search results: strings
    that are no http(s) URL or no text (``not_http``), Wikipedia's and the mirrors' pages
    (``wikipedia``, ``mirror``) and the rest after ``k`` (``beyond_k``) are dropped. Each URL is
    told to ``count(outcome)`` twice, as it enters (``IN``) and as it leaves (``KEPT`` or the
    reason): the :data:`RESULT_URLS` stage's accounting."""
    kept = []
    for url, score in hits:
        count(IN)
        if not is_text(url) or not url.strip().lower().startswith(("http://", "https://")):
            reason = "not_http"
        else:
            reason = excluded(url, mirrors)
        if reason is None and len(kept) >= k:
            reason = "beyond_k"
        count(reason or KEPT)
        if reason is None:
            kept.append((url.strip(), score))
    return kept
