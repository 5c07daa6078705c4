"""ROUGE in any language: the one scorer that the report, ``evaluate``, ``--compare``, human
evaluation and the article scores use.

English is rouge-score's own tokenizer (lower-cased ASCII letters and digits, Porter's stemmer
on tokens longer than three characters), so English figures equal rouge-score's bit for bit and
stay comparable with published ones. Every other language is scored on the project's words
(:func:`wikisum.core.text.words`: every script's letters, digits and marks, punctuation and
symbols removed by Unicode category, Chinese, Japanese, Thai, Lao, Khmer and Burmese segmented by
ICU), with the language's Snowball stemmer on tokens longer than three characters where Snowball
has one. This is the scheme of XL-Sum's multilingual ROUGE (Hasan et al. 2021), carried to every
script ICU knows.

What cannot be scored well is reported, never scored silently as zero:
:func:`coverage_warnings` counts the texts that the English tokenizer would mostly discard (text
in another script scored as English), the texts of a script written without spaces that no
segmenter splits, and the languages without a stemmer.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rouge_score import rouge_scorer, tokenizers

from wikisum.core import language
from wikisum.core.text import words

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")

# Tokens no longer than this are not stemmed, as rouge-score does for English.
_MIN_STEM_CHARS = 4

# A text the English tokenizer keeps under this share of the letters of is "mostly discarded".
MOSTLY_DISCARDED = 0.5
# A token this long in a script written without spaces was not segmented: no word is that long.
_UNSEGMENTED_CHARS = 24
_ASCII_ALNUM = re.compile(r"[a-z0-9]")
# Languages whose words do not inflect (or whose segmenter already splits inflections off): no
# stemmer is wanted, so none missing is reported.
_UNINFLECTED = frozenset({"zh", "yue", "wuu", "gan", "hak", "nan", "cdo", "lzh", "ja", "th",
                          "lo", "km", "my", "vi"})


def is_english(lang: str | None) -> bool:
    """Whether ``lang`` is scored with rouge-score's English tokenizer: English, and a record
    whose language is not known (as every predictions file before languages were recorded)."""
    return language.primary_subtag(lang) in (None, "en", "eng", "simple")


class WordTokenizer(tokenizers.Tokenizer):
    """rouge-score's tokenizer interface over :func:`wikisum.core.text.words` and the
    language's Snowball stemmer (tokens of four characters or more)."""

    def __init__(self, lang: str | None) -> None:
        self.lang = lang
        self._stem = language.stemmer(lang)

    def tokenize(self, text: str) -> list[str]:
        tokens = words(text)
        if self._stem is None or not tokens:
            return tokens
        long = [i for i, token in enumerate(tokens) if len(token) >= _MIN_STEM_CHARS]
        for i, stem in zip(long, self._stem([tokens[i] for i in long]), strict=True):
            tokens[i] = stem
        return tokens


@functools.lru_cache(maxsize=64)
def tokenizer(lang: str | None) -> tokenizers.Tokenizer:
    """The tokenizer that ROUGE uses for ``lang`` (see the module's docstring)."""
    if is_english(lang):
        return tokenizers.DefaultTokenizer(use_stemmer=True)
    return WordTokenizer(lang)


@functools.lru_cache(maxsize=64)
def scorer(lang: str | None, rouge_types: tuple[str, ...] = ROUGE_TYPES
           ) -> rouge_scorer.RougeScorer:
    """A rouge-score scorer of ``rouge_types`` for ``lang``; English is rouge-score's default
    scorer with stemming."""
    if is_english(lang):
        return rouge_scorer.RougeScorer(list(rouge_types), use_stemmer=True)
    return rouge_scorer.RougeScorer(list(rouge_types), tokenizer=tokenizer(lang))


def score(reference: str, prediction: str, lang: str | None,
          rouge_types: tuple[str, ...] = ROUGE_TYPES) -> dict[str, dict[str, float]]:
    """ROUGE of one prediction against its reference: ``{type: {"f", "p", "r"}}``."""
    scores = scorer(lang, rouge_types).score(reference, prediction)
    return {name: {"f": s.fmeasure, "p": s.precision, "r": s.recall}
            for name, s in scores.items()}


def english_share(text: str) -> float:
    """The share of ``text``'s letters and digits that rouge-score's English tokenizer keeps
    (1.0 for a text without any)."""
    lowered = text.lower()
    total = sum(1 for ch in lowered if ch.isalnum())
    if not total:
        return 1.0
    return len(_ASCII_ALNUM.findall(lowered)) / total


def unsegmented(text: str) -> bool:
    """Whether ``text`` holds a word-sized run that no segmenter split: a token of 24 or more
    characters without case (so not a Latin, Cyrillic or Greek compound): a script written
    without spaces that ICU has no dictionary for (Javanese, Balinese, Tai Tham, ...)."""
    return any(len(token) >= _UNSEGMENTED_CHARS
               and not any(ch.islower() or ch.isdigit() for ch in token)
               for token in words(text))


@dataclass
class Coverage:
    """What ROUGE could not score as it should, over some texts: counts to warn with."""

    texts: int = 0
    english_discarded: int = 0  # scored as English, mostly not ASCII letters
    unsegmented: int = 0
    unstemmed: Counter = field(default_factory=Counter)  # language -> texts without a stemmer

    def add(self, text: str, lang: str | None) -> None:
        self.texts += 1
        if not text.strip():
            return
        if is_english(lang):
            if english_share(text) < MOSTLY_DISCARDED:
                self.english_discarded += 1
            return
        if unsegmented(text):
            self.unsegmented += 1
        if language.stemmer_name(lang) is None \
                and language.primary_subtag(lang) not in _UNINFLECTED:
            self.unstemmed[lang] += 1

    def warnings(self) -> list[str]:
        """One line per kind of problem found, with its count; none when all is well."""
        out = []
        if self.english_discarded:
            out.append(
                f"{self.english_discarded} of {self.texts} texts were scored as English but are "
                f"mostly in another script: rouge-score's English tokenizer keeps only a-z and "
                f"0-9, so they score near 0; pass --lang CODE (or record each prediction's "
                f"\"lang\") to score them in their language")
        if self.unsegmented:
            out.append(
                f"{self.unsegmented} of {self.texts} texts hold runs of a script written "
                f"without spaces that no segmenter splits: they are scored on whole runs")
        for lang, n in sorted(self.unstemmed.items(), key=lambda item: str(item[0])):
            out.append(f"{n} of {self.texts} texts are in {lang!r}, which has no Snowball "
                       f"stemmer: scored on unstemmed words")
        return out


def coverage_warnings(texts: Iterable[str], langs: Sequence[str | None] | str | None
                      ) -> list[str]:
    """:meth:`Coverage.warnings` of ``texts``, each in its language (one language for all when
    ``langs`` is a string or None)."""
    coverage = Coverage()
    for i, text in enumerate(texts):
        coverage.add(text, langs if langs is None or isinstance(langs, str) else langs[i])
    return coverage.warnings()
