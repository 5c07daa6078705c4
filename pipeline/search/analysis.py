"""What a page or a query becomes before BM25 sees it: the same analysis for both, in the
index's one language.

A term is a word of :func:`wikisum.core.text.words` (any script; ICU splits the scripts written
without spaces), lowercased and stemmed by the language's Snowball stemmer where Snowball has one
(for English Snowball's own, Porter2, as bm25s and most search engines stem it; ROUGE keeps
Porter's). Digits stay terms: a year or a number in a title ("2008 British motorcycle Grand
Prix") is often what finds its pages. A single letter is no term (an initial, the "s" of
"Heart's"), except in the scripts where one character is a word (Chinese, Japanese, Thai, ...);
nor is a "word" longer than :data:`MAX_TERM_CHARS` (a base64 blob, a URL's path).

Pages keep their function words; a query drops those of the language (where wikisum has a list,
:mod:`wikisum.core.stopwords`) unless nothing else is left: "The Who" and "It" are titles too,
and their pages are found by the words they have. Measured on real pages (``bench/search.py``):
recall at 1 and 10 at least bm25s's with its own English analysis.
"""

from __future__ import annotations

from wikisum.core.language import needs_dictionary, stemmer
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

    def _words(self, text: str) -> list[str]:
        return [w for w in words(text) if 1 < len(w) <= MAX_TERM_CHARS
                or (len(w) == 1 and (w.isdigit() or needs_dictionary(w)))]

    def _stemmed(self, kept: list[str]) -> list[str]:
        return self.stem(kept) if self.stem is not None and kept else kept

    def terms(self, text: str) -> list[str]:
        """A page's terms, every word it has."""
        return self._stemmed(self._words(text))

    def query_terms(self, text: str) -> list[str]:
        """A query's terms: its words but the language's function words, or all of them where
        it has no other."""
        found = self._words(text)
        return self._stemmed([w for w in found if w not in self.stop] or found)
