"""What a page or a query becomes before BM25 sees it: the same analysis for both, in the
index's one language.

A term is a word of :func:`wikisum.core.text.words` (any script; ICU splits the scripts written
without spaces), lowercased, that is not a function word of the language
(:mod:`wikisum.core.stopwords`, where the language has a list), stemmed by the language's
Snowball stemmer where Snowball has one (for English Snowball's own, Porter2, as bm25s and most
search engines stem it; ROUGE keeps Porter's). Digits stay terms: a year or a number in a title
("2008 British motorcycle Grand Prix") is often what finds its pages. A "word" longer than
:data:`MAX_TERM_CHARS` (a run of letters with no space: a base64 blob, a URL's path) is no term.
"""

from __future__ import annotations

from wikisum.core.language import stemmer
from wikisum.core.stopwords import FUNCTION_WORDS, language_key
from wikisum.core.text import words

MAX_TERM_CHARS = 64
ENGLISH_STEMMER = "english"


class Analyzer:
    """Text -> BM25 terms for one language (``lang``: a Wikipedia language code)."""

    def __init__(self, lang: str):
        self.lang = lang
        key = language_key(lang)
        self.stop = FUNCTION_WORDS[key] if key else frozenset()
        self.stem = stemmer(lang, english=ENGLISH_STEMMER)

    def terms(self, text: str) -> list[str]:
        stop = self.stop
        kept = [w for w in words(text) if w not in stop and len(w) <= MAX_TERM_CHARS]
        return self.stem(kept) if self.stem is not None and kept else kept
