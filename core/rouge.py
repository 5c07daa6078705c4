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

from nltk.stem import porter
from rouge_score import rouge_scorer, scoring, tokenizers
from rouge_score import tokenize as rouge_tokenize

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
        return EnglishTokenizer()
    return WordTokenizer(lang)


class EnglishTokenizer(tokenizers.Tokenizer):
    """rouge-score's English tokenizer with Porter's stemmer (``DefaultTokenizer(use_stemmer=
    True)``), each distinct word stemmed once: the same tokens, without stemming a long text's
    repeated words again and again."""

    def __init__(self) -> None:
        self._stemmer = _CachedStemmer(porter.PorterStemmer())

    def tokenize(self, text: str) -> list[str]:
        return rouge_tokenize.tokenize(text, self._stemmer)


class _CachedStemmer:
    """A stemmer's ``stem``, remembered for the words it has seen (a bounded number)."""

    def __init__(self, stemmer) -> None:
        self.stem = functools.lru_cache(maxsize=1 << 16)(stemmer.stem)


class Scorer:
    """ROUGE-N and ROUGE-L as rouge-score computes them (the same tokens, counts and
    formulas, so the same figures), with the longest common subsequence found bit-parallel
    (:func:`lcs_length`): a long text is scored in time linear in its length. Any other type
    (``rougeLsum``) is rouge-score's own."""

    def __init__(self, rouge_types: Sequence[str], tokenizer: tokenizers.Tokenizer) -> None:
        self.rouge_types = tuple(rouge_types)
        self.tokenizer = tokenizer
        others = [t for t in self.rouge_types if not _ours(t)]
        self._others = (rouge_scorer.RougeScorer(others, tokenizer=tokenizer)
                        if others else None)

    def score(self, target: str, prediction: str) -> dict[str, scoring.Score]:
        """``{type: Score(precision, recall, fmeasure)}`` of ``prediction`` against
        ``target``, as ``rouge_scorer.RougeScorer.score`` returns."""
        reference_tokens = self.tokenizer.tokenize(target)
        predicted_tokens = self.tokenizer.tokenize(prediction)
        others = self._others.score(target, prediction) if self._others else {}
        scores = {}
        for name in self.rouge_types:
            if name == "rougeL":
                scores[name] = _lcs_score(reference_tokens, predicted_tokens)
            elif _ours(name):
                scores[name] = _ngram_score(reference_tokens, predicted_tokens, int(name[5:]))
            else:
                scores[name] = others[name]
        return scores


def _ours(rouge_type: str) -> bool:
    return rouge_type == "rougeL" or re.fullmatch(r"rouge[1-9]", rouge_type) is not None


def _ngram_score(target: Sequence[str], prediction: Sequence[str], n: int) -> scoring.Score:
    """ROUGE-N: clipped n-gram overlap over each side's n-gram count (rouge-score's)."""
    reference_grams = Counter(zip(*(target[i:] for i in range(n)), strict=False))
    predicted_grams = Counter(zip(*(prediction[i:] for i in range(n)), strict=False))
    overlap = sum((reference_grams & predicted_grams).values())
    precision = overlap / max(sum(predicted_grams.values()), 1)
    recall = overlap / max(sum(reference_grams.values()), 1)
    return scoring.Score(precision=precision, recall=recall,
                         fmeasure=scoring.fmeasure(precision, recall))


def _lcs_score(target: Sequence[str], prediction: Sequence[str]) -> scoring.Score:
    """ROUGE-L: the longest common subsequence over each side's length (rouge-score's)."""
    if not target or not prediction:
        return scoring.Score(precision=0, recall=0, fmeasure=0)
    common = lcs_length(target, prediction)
    precision, recall = common / len(prediction), common / len(target)
    return scoring.Score(precision=precision, recall=recall,
                         fmeasure=scoring.fmeasure(precision, recall))


def lcs_length(a: Sequence, b: Sequence) -> int:
    """The length of the longest common subsequence of ``a`` and ``b``, exactly, by the
    bit-parallel algorithm of Allison and Dix (1986) in Hyyrö's form: the shorter sequence's
    positions are the bits of a Python int, and each item of the longer one updates them in a
    few integer operations: O(len(longer) x len(shorter) / word size) time, O(len(shorter) +
    distinct items) memory."""
    if len(a) > len(b):
        a, b = b, a
    if not a:
        return 0
    matches: dict = {}
    for i, item in enumerate(a):
        matches[item] = matches.get(item, 0) | (1 << i)
    full = (1 << len(a)) - 1
    row = full  # bit i set: the LCS so far does not grow by matching a[i]
    for item in b:
        hit = row & matches.get(item, 0)
        if hit:
            row = ((row + hit) | (row - hit)) & full
    return len(a) - row.bit_count()


@functools.lru_cache(maxsize=64)
def scorer(lang: str | None, rouge_types: tuple[str, ...] = ROUGE_TYPES) -> Scorer:
    """A scorer of ``rouge_types`` for ``lang`` (:class:`Scorer`: rouge-score's figures);
    English is rouge-score's default tokenizer with stemming."""
    return Scorer(rouge_types, tokenizer(lang))


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
