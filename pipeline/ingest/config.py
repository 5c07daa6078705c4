"""The ingest job's settings and the names its command reads, light: no Beam, pyarrow or
trafilatura at import, so that ``wikisum ingest --help`` shows these defaults without them.

    IngestConfig  the job's options: its inputs, --out, the shards, the language, and
    CleanConfig   a capture -> a reference (wikisum.pipeline.references.clean_capture)
    AttachConfig  an article's references: clones, language, repeats (references.attach)
    DedupConfig   what counts as a repeated paragraph (wikisum.pipeline.dedup)

The defaults of the clone filter are those of ``wikisum.pipeline.clones`` and the dump's page
limit that of ``wikisum.pipeline.dumps`` (both light too).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from wikisum.core.accounting import KEPT
from wikisum.core.paragraphs import DEFAULT_MIN_WORDS
from wikisum.pipeline.clones import DEFAULT_CLONE_MEASURE, DEFAULT_CLONE_THRESHOLD
from wikisum.pipeline.dumps import DEFAULT_MAX_TEXT_BYTES
from wikisum.pipeline.language import DEFAULT_MIN_CONFIDENCE

DEFAULT_SHARDS = 8  # article shards
DEFAULT_MAX_PAGE_BYTES = 2 * 1024 * 1024  # a larger capture is dropped as too_large

# The URLs no capture served, by how the article lists them, and the file each is written to.
MISSING_CITATION = "missing_citation"
MISSING_SEARCH = "missing_search"
MISSING_FILES = {MISSING_CITATION: "missing_urls.txt", MISSING_SEARCH: "missing_search_urls.txt"}
# Outcomes of the pages stage for a page that was an article (the others: not an article).
ARTICLE_OUTCOMES = (KEPT, "duplicate_title", "duplicate_id", "no_references",
                    "no_references_found")


@dataclass(frozen=True)
class DedupConfig:
    """What counts as a near duplicate.

    The defaults come from bench/dedup.py on 884 real pages (bench/results/dedup.json). With
    word trigrams and 0.6, a dropped paragraph shares at least 60 % of its trigrams with a kept
    one; 80 % of syndicated copies of paragraphs of 10+ words are dropped (all with a byline
    added, 74-84 % of those with 1 to 3 words edited), and the 7 paragraphs that
    matched another page are all agency stories or a press release run by two sites. Under 10
    words one edited word changes most trigrams (21 % of such copies reach 0.6), while templated
    short lines ("Why was the computer cold?") make a third of the matches inside a page, so
    short paragraphs are matched exactly only. Candidates are confirmed exactly, so `num_perm`
    trades speed against LSH recall only: with 64, LSH missed none of the 11,354 near duplicates
    that brute force found.

    Attributes:
        threshold: The least Jaccard similarity of two paragraphs' shingle sets that makes the
            later one a near duplicate.
        shingle: Words per shingle; a paragraph shorter than that is one shingle.
        num_perm: MinHash permutations: the signature length that LSH bands are cut from.
        min_words: Paragraphs with fewer words take part only in exact matching.
        near: Whether near duplicates are looked for at all; False matches exactly only.
    """

    threshold: float = 0.6
    shingle: int = 3
    num_perm: int = 64
    min_words: int = 10
    near: bool = True

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0:
            raise ValueError(f"threshold must be in (0, 1], got {self.threshold}")
        if self.shingle < 1 or self.min_words < 1:
            raise ValueError("shingle and min_words must be positive")
        if self.num_perm < 2:
            raise ValueError(f"num_perm must be at least 2, got {self.num_perm}")


# The longest time limit of one page's extraction (--page-timeout's bound).
MAX_TIMEOUT_S = 3600.0


@dataclass(frozen=True)
class CleanConfig:
    """How a capture becomes a reference: its size limit, the time allowed for extracting its
    text, the fewest words a paragraph of it keeps, and whether its language is identified
    (only where a reference language is wanted: about a fifth of a page's cleaning otherwise;
    without it a reference's language is "und")."""

    max_page_bytes: int = DEFAULT_MAX_PAGE_BYTES
    timeout_s: float = 20.0  # for extracting one page's text
    min_words: int = DEFAULT_MIN_WORDS
    identify_language: bool = True

    def __post_init__(self) -> None:
        if not 0 < self.timeout_s <= MAX_TIMEOUT_S:
            raise ValueError(f"timeout_s must be in (0, {MAX_TIMEOUT_S}], got {self.timeout_s}")


@dataclass(frozen=True)
class AttachConfig:
    """Which references an article keeps, and which of their paragraphs.

    Attributes:
        clone_threshold: A reference recalling more than this share of the lead's words is a
            clone (paper, section 2.1).
        clone_measure: ``unigram`` (the paper's: all the lead's distinct words) or ``content``
            (function words of ``article_lang`` left out; `wikisum.pipeline.clones`).
        article_lang: The article's language (the lead's function words); None: unknown.
        lang: The language references must be in: one identified with confidence as another
            is dropped as ``wrong_language``; None means ``article_lang``; "" or "any" keeps
            every language.
        min_language_confidence: The least confidence of that identification.
        dedup: The rule for paragraphs repeated across the article's references (the first by
            citation order is kept); None keeps repeats.
    """

    clone_threshold: float = DEFAULT_CLONE_THRESHOLD
    clone_measure: str = DEFAULT_CLONE_MEASURE
    article_lang: str | None = None
    lang: str | None = None
    min_language_confidence: float = DEFAULT_MIN_CONFIDENCE
    dedup: DedupConfig | None = DedupConfig()

    @property
    def wants_language(self) -> bool:
        """Whether references are kept or dropped by their language (``lang``, else
        ``article_lang``, set and not "any")."""
        wanted = (self.article_lang or "") if self.lang is None else self.lang
        return wanted.strip().lower() not in ("", "any")


def _default_buffer_bytes() -> int:
    from wikisum.core.shards import DEFAULT_BUFFER_BYTES  # pyarrow: not when --help is shown

    return DEFAULT_BUFFER_BYTES


@dataclass(frozen=True)
class IngestConfig:
    """The job's own options (Beam's pipeline options are separate)."""

    wiki: tuple[str, ...]
    out: str
    warc: tuple[str, ...] = ()
    wet: tuple[str, ...] = ()
    search_results: str | None = None
    num_shards: int = DEFAULT_SHARDS
    lang: str = "en"
    clean: CleanConfig = CleanConfig()
    attach: AttachConfig = AttachConfig()  # article_lang unset: the dump's `lang`
    max_article_bytes: int = DEFAULT_MAX_TEXT_BYTES  # a longer dump page is a dead letter
    # rows a shard writer holds in memory (core.shards.DEFAULT_BUFFER_BYTES)
    buffer_bytes: int = field(default_factory=_default_buffer_bytes)
    # tensor2tensor's released files (wikisum.pipeline.ingest.t2t): the authors' articles
    # (wiki_content TFRecords) instead of the dump's, and their reference URL lists (wiki_urls
    # JSON) instead of the dump's citations and the search results
    t2t_content: tuple[str, ...] = ()
    t2t_urls: tuple[str, ...] = ()

    def corpora(self) -> tuple[str, ...]:
        """The corpora the output's paragraphs can be split into: without a dump to tell the
        authors' listed citations from their search results, only ``combined``."""
        from wikisum.core.inputs import CORPORA

        return ("combined",) if self.t2t_urls and not self.wiki else CORPORA

    def __post_init__(self) -> None:
        if self.attach.article_lang is None:  # the articles are in the dump's language
            object.__setattr__(self, "attach", replace(self.attach, article_lang=self.lang))
