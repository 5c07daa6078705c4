"""Typed records passed between the stages of ``wikisum ingest``.

One frozen dataclass per stage's record; a stage makes a new record (``dataclasses.replace``)
rather than changing one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Section:
    """A headed section: its plain-text title, heading level (2 for `==`) and plain-text body."""

    title: str
    level: int
    text: str


# Stages of the accounting in summary.json and the dead letters.
PAGES = "pages"  # dump pages -> articles
RECORDS = "records"  # WARC/WET records -> cleaned references
CAPTURES = "captures"  # cleaned references -> one per URL, referenced by some article
LINKS = "links"  # (article, URL) pairs listed -> references attached to the article
PARAGRAPHS = "paragraphs"  # paragraphs extracted -> paragraphs kept
# paragraphs of an article's attached references -> written (repeats across them dropped)
ARTICLE_PARAGRAPHS = "article_paragraphs"
SEARCH = "search_results"  # lines of the search-results file -> lines matched to an article


@dataclass(frozen=True)
class Article:
    id: int
    title: str
    url: str
    lead: str
    sections: tuple[Section, ...]
    citation_urls: tuple[str, ...]  # normalised, in order of first citation
    source_file: str
    split: str = ""  # "": by the title (split_of); tensor2tensor's files: their shard's split


@dataclass(frozen=True)
class Reference:
    """A cleaned capture: the prose paragraphs of one URL."""

    url: str  # normalised; the join key
    source_file: str
    offset: int
    record_id: str
    capture_date: str
    container: str  # warc | wet
    paragraphs: tuple[str, ...]
    language: str = "und"  # wikisum.pipeline.language code of the kept text
    language_confidence: float = 0.0

    def text(self) -> str:
        return "\n".join(self.paragraphs)


@dataclass(frozen=True)
class Link:
    """An article's claim on a URL: cited (``citation``) or found by search (``search``)."""

    article_id: int
    source: str
    rank: int  # position among the article's citations / search results


@dataclass(frozen=True)
class DeadLetter:
    input_file: str
    record: str  # record id, byte offset or page id: whatever finds the record again
    url: str
    stage: str
    reason: str
    error: str = ""


def stable_hash(text: str) -> int:
    """A hash that is the same on every machine and run (unlike ``hash``)."""
    return int.from_bytes(hashlib.sha1(text.encode("utf-8")).digest()[:8], "big")


def split_of(title: str) -> str:
    """train/dev/test, 80/10/10, by a stable hash of the title."""
    bucket = stable_hash(title) % 100
    return "train" if bucket < 80 else "dev" if bucket < 90 else "test"
