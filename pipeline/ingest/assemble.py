"""Per article: its references filtered (:func:`wikisum.pipeline.references.attach`: its own
Wikipedia page, references in another language, clones, paragraphs repeated across its
references) and its row (schema ``ARTICLES``) assembled, keyed by shard."""

from __future__ import annotations

from collections import Counter

import apache_beam as beam

from wikisum.core.accounting import IN, KEPT
from wikisum.core.progress import WorkerProgress
from wikisum.core.records import ARTICLE_PARAGRAPHS, LINKS, PAGES, DeadLetter, split_of, stable_hash
from wikisum.pipeline.beamio import DEAD, TALLY, Tallying, dead
from wikisum.pipeline.ingest.config import AttachConfig
from wikisum.pipeline.references import attach


class AssembleArticles(Tallying):
    """CoGroupByKey(article id) -> one row per article: self pages, references in another
    language, clones and paragraphs repeated across the article's references removed."""

    def __init__(self, config: AttachConfig, num_shards: int, stage: str = PAGES):
        self.config = config
        self.num_shards = num_shards
        self.stage = stage  # where an article's outcome is tallied: its dump page, or record

    def setup(self):
        self.progress = WorkerProgress("ingest", "articles")

    def finish_bundle(self):
        self.progress.flush()
        yield from super().finish_bundle()

    def process(self, item):
        article_id, grouped = item
        articles = sorted(grouped["article"], key=lambda a: (a.source_file, a.title))
        found = list(grouped["found"])
        search_listed = sum(grouped["search_listed"])
        if not articles:
            # Links come only from parsed articles, so this group holds nothing to account for.
            return
        self.progress.update()
        article = articles[0]
        for twin in articles[1:]:
            self.count(self.stage, "duplicate_id")
            yield dead(DeadLetter(twin.source_file, str(twin.id), twin.url, self.stage,
                                  "duplicate_id", f"same id as {article.title!r}"))
        listed = len(article.citation_urls) + search_listed
        if listed == 0:
            self.count(self.stage, "no_references")
            yield dead(DeadLetter(article.source_file, str(article.id), article.url, self.stage,
                                  "no_references", ""))
            return
        kept, dropped, paragraphs = attach(article, found, self.config)
        if paragraphs:
            self.count(ARTICLE_PARAGRAPHS, IN, sum(paragraphs.values()))
            for outcome, n in paragraphs.items():
                self.count(ARTICLE_PARAGRAPHS, outcome, n)
        links_per_url = Counter(ref.url for _, ref in found)
        for url, reason, detail in dropped:
            self.count(LINKS, reason, links_per_url[url])
            yield dead(DeadLetter(article.source_file, str(article.id), url, LINKS, reason,
                                  detail))
        self.count(LINKS, KEPT, sum(links_per_url[a.url] for a in kept))
        if not kept:
            self.count(self.stage, "no_references_found")
            yield dead(DeadLetter(article.source_file, str(article.id), article.url, self.stage,
                                  "no_references_found", f"{listed} listed"))
            return
        self.count(self.stage, KEPT)
        found_sources = Counter(link.source for link, _ in found)
        row = {
            "id": article.id,
            "title": article.title,
            "url": article.url,
            "split": article.split or split_of(article.title),
            "lead": article.lead,
            "sections": [{"title": s.title, "level": s.level, "text": s.text}
                         for s in article.sections],
            "citations_listed": len(article.citation_urls),
            "citations_found": found_sources["citation"],
            "search_listed": search_listed,
            # tensor2tensor's unlabelled lists count as search results (docs/data.md)
            "search_found": found_sources["search"] + found_sources["listed"],
            "clones_removed": sum(1 for _, r, _ in dropped if r == "clone"),
            "self_removed": sum(1 for _, r, _ in dropped if r == "self"),
            "other_language_removed": sum(1 for _, r, _ in dropped if r == "wrong_language"),
            "duplicate_references_removed": sum(1 for _, r, _ in dropped
                                                if r == "duplicate_reference"),
            "duplicate_paragraphs_removed": paragraphs["duplicate"]
            + paragraphs["near_duplicate"],
            "references": [{"url": a.url, "source": a.source, "sources": list(a.sources),
                            "capture_date": a.reference.capture_date,
                            "source_file": a.reference.source_file,
                            "language": a.reference.language,
                            "language_confidence": a.reference.language_confidence,
                            "paragraphs": list(a.reference.paragraphs)} for a in kept],
        }
        yield stable_hash(str(article.id)) % self.num_shards, row


class FilterReferences(beam.PTransform):
    """Articles, the references found for them and their search counts -> one row per article
    (schema ``ARTICLES``), keyed by shard, filtered by `attach` (`AttachConfig`)."""

    def __init__(self, config: AttachConfig, num_shards: int, stage: str = PAGES):
        super().__init__()
        self.config, self.num_shards, self.stage = config, num_shards, stage

    def expand(self, inputs):
        articles, found, search_listed = inputs
        rows = ({"article": articles | "ArticleById" >> beam.Map(lambda a: (a.id, a)),
                 "found": found, "search_listed": search_listed}
                | "GroupByArticle" >> beam.CoGroupByKey()
                | "AssembleArticles" >> beam.ParDo(AssembleArticles(
                    self.config, self.num_shards, self.stage)).with_outputs(
                        DEAD, TALLY, main="rows"))
        return {"main": rows.rows, DEAD: rows[DEAD], TALLY: rows[TALLY]}
