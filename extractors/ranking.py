"""One article's paragraphs tokenised once and ranked by every extractor on every corpus: the
pure function under ``wikisum rank`` (a Beam job) and ``wikisum import`` (a streaming loop),
so that a dataset built here and one imported from elsewhere hold the same rankings.

A corpus is a subset of an article's paragraphs, named by where the paragraphs came from:
``citations`` (the article's cited pages), ``search`` (its web search results) and ``combined``
(all of them). A dataset whose paragraphs are not labelled so (an imported dataset's documents,
tensor2tensor's URL lists without a dump to tell citations from search results) has the one
corpus ``combined``; its dataset.json says what that corpus holds.
"""

from __future__ import annotations

from collections.abc import Sequence

from wikisum.core import articlelayout
from wikisum.core.inputs import CORPORA

_CORPUS_SOURCE = {"citations": "citation", "search": "search"}


def corpus_indices(paragraphs: list[dict], corpus: str) -> list[int]:
    """Indices of the paragraphs that belong to ``corpus``."""
    if corpus == "combined":
        return list(range(len(paragraphs)))
    source = _CORPUS_SOURCE[corpus]
    return [i for i, p in enumerate(paragraphs) if source in p["sources"]]


def primary_source(sources: Sequence[str]) -> str:
    """The one source the learned extractor reads: a cited paragraph is a citation."""
    return "citation" if "citation" in sources else "search"


def rank_paragraphs(title: str, lead: str, paragraphs: list[dict], rankers: dict,
                    corpora: Sequence[str] = CORPORA) -> list[dict]:
    """Every ranker's order of ``paragraphs`` (dicts with ``text`` and ``sources``) on every
    corpus, as indices into ``paragraphs`` (schema ``RANKING``). ``title`` is the query of the
    title-based extractors (tf-idf)."""
    texts = [p["text"] for p in paragraphs]
    rankings = []
    for corpus in corpora:
        index = corpus_indices(paragraphs, corpus)
        sub_texts = [texts[i] for i in index]
        sub_sources = [primary_source(paragraphs[i]["sources"]) for i in index]
        for name, ranker in rankers.items():
            order = ranker.rank(title, sub_texts, target=lead, sources=sub_sources)
            rankings.append({"extractor": name, "corpus": corpus,
                             "order": [index[i] for i in order]})
    return rankings


def rank_article(row: dict, sp, rankers: dict, corpora: Sequence[str] = CORPORA,
                 query: str | None = None, targets: Sequence[str] = ("lead",)) -> dict:
    """One ingest row (schema ``ARTICLES``) -> one training row (schema ``RANKED``): the title,
    the lead and every paragraph tokenised once with ``sp``, and every ranking. ``query``
    replaces the title as the title-based extractors' query (a dataset without titles). With
    ``"article"`` in ``targets`` the whole article is a target too (``article_ids``,
    ``section_boundaries``: :mod:`wikisum.core.articlelayout`)."""
    paragraphs = [{"text": text, "reference": r, "sources": list(ref["sources"])}
                  for r, ref in enumerate(row["references"]) for text in ref["paragraphs"]]
    texts = [p["text"] for p in paragraphs]
    ids = sp.encode(texts) if texts else []
    for p, p_ids in zip(paragraphs, ids, strict=True):
        p["ids"] = p_ids
    rankings = rank_paragraphs(row["title"] if query is None else query, row["lead"],
                               paragraphs, rankers, corpora)
    out = {
        "id": row["id"],
        "title": row["title"],
        "split": row["split"],
        "title_ids": sp.encode(row["title"]),
        "lead": row["lead"],
        "lead_ids": sp.encode(row["lead"]),
        "reference_urls": [ref["url"] for ref in row["references"]],
        "paragraphs": paragraphs,
        "rankings": rankings,
    }
    if "article" in targets:
        sections = articlelayout.article_sections(row["lead"], row.get("sections") or [])
        out["article_ids"], out["section_boundaries"] = articlelayout.encode_article(sections, sp)
    return out
