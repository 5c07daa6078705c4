"""What ``wikisum report`` measures on one article (pure functions, wrapped by the job's DoFn).

* **extractive ROUGE** (paper, Figure 2): for every extractor x corpus, the ranked paragraphs cut
  to the length of the lead in words, scored against the lead with rouge-score's ROUGE-1, ROUGE-2
  and ROUGE-L F1, Porter stemming on. ROUGE-L is rouge-score's ``rougeL``: the longest common
  subsequence of the two texts taken as one token sequence each. That is what tensor2tensor's
  ``rouge_l_fscore`` (the paper's metric) computes; ``rougeLsum`` would instead match sentence by
  sentence and reward an extract that has the right sentences in the wrong order.
* **input recall vs L** (paper, Table 1's statistic): ROUGE-1 recall of the lead by the first L
  subword tokens of the model input (title, then paragraphs in rank order), computed as
  rouge-score computes it (its tokenizer and stemmer, clipped unigram counts) from per-paragraph
  counts, so every L costs one partial paragraph, not a re-tokenisation of the prefix.
* **the per-article view**: the lead beside each extractor's top-ranked paragraphs.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from wikisum.core import loader
from wikisum.core import rouge as multilingual
from wikisum.core.text import words

ROUGE_TYPES = multilingual.ROUGE_TYPES


@dataclass
class Scorers:
    """The dataset language's ROUGE scorer and tokenizer (:mod:`wikisum.core.rouge`), built
    once per worker and language."""

    rouge: object = field(default=None)
    tokenizer: object = field(default=None)
    lang: str | None = None

    @classmethod
    def create(cls, lang: str | None = None) -> Scorers:
        return cls(multilingual.scorer(lang), multilingual.tokenizer(lang), lang)


def split_words(text: str, lang: str | None = None) -> list[str]:
    """The words the report counts and cuts by: whitespace-separated words for English (as the
    paper counts them), the language's words (:func:`wikisum.core.text.words`) otherwise, so
    that text without spaces between words is counted in words, not in runs."""
    return text.split() if multilingual.is_english(lang) else words(text)


def cut_to_words(texts: list[str], n_words: int, lang: str | None = None) -> str:
    """The first ``n_words`` words (:func:`split_words`) of ``texts``, paragraphs kept apart;
    outside English the words are joined by spaces, as ROUGE's tokenizer splits them again."""
    out, left = [], n_words
    for text in texts:
        if left <= 0:
            break
        found = split_words(text, lang)
        out.append(" ".join(found[:left]))
        left -= len(found)
    return "\n".join(out)


def recall_curve(lead_counts: Counter, prefix_counts: list[Counter], lengths: list[int],
                 prefix_ids: list[list[int]], decode, tokenize) -> list[float]:
    """ROUGE-1 recall of the lead by the first L ids of a sequence of pieces, for each L.

    Args:
        lead_counts: unigram counts of the lead (rouge-score tokens).
        prefix_counts: unigram counts of each piece of the input, in input order.
        lengths: the Ls, ascending.
        prefix_ids: the token ids of each piece (their lengths place the L cuts).
        decode: ids -> text, for the one piece an L cuts in two.
        tokenize: text -> rouge-score tokens.
    """
    total = sum(lead_counts.values())
    if total == 0:
        return [0.0 for _ in lengths]
    out = []
    have: Counter = Counter()
    used = piece = 0  # tokens taken so far; index of the next whole piece
    for length in lengths:
        while piece < len(prefix_ids) and used + len(prefix_ids[piece]) <= length:
            have.update(prefix_counts[piece])
            used += len(prefix_ids[piece])
            piece += 1
        counts = have
        if piece < len(prefix_ids) and used < length:
            counts = have + Counter(tokenize(decode(prefix_ids[piece][:length - used])))
        overlap = sum(min(n, counts[w]) for w, n in lead_counts.items())
        out.append(overlap / total)
    return out


def article_metrics(row: dict, extractors: list[str], corpora: list[str], lengths: list[int],
                    scorers: Scorers, decode) -> dict:
    """Every per-article number of the report: ``{"id", "title", "rouge", "recall"}``.

    ``rouge[extractor][corpus][type]`` is an F1; ``recall[extractor][corpus]`` a list aligned
    with ``lengths``.
    """
    tokenize = scorers.tokenizer.tokenize
    lead = row["lead"]
    # the extractive summary is cut to the lead's length
    lead_words = len(split_words(lead, scorers.lang))
    lead_counts = Counter(tokenize(lead))
    paragraph_counts = [Counter(tokenize(p["text"])) for p in row["paragraphs"]]
    title_counts = Counter(tokenize(row["title"]))
    rouge: dict = {}
    recall: dict = {}
    for extractor in extractors:
        rouge[extractor], recall[extractor] = {}, {}
        for corpus in corpora:
            order = loader.ranking(row, extractor, corpus)
            summary = cut_to_words([row["paragraphs"][i]["text"] for i in order], lead_words,
                                   scorers.lang)
            scores = scorers.rouge.score(lead, summary)
            rouge[extractor][corpus] = {t: scores[t].fmeasure for t in ROUGE_TYPES}
            # The model input: title, <t> (no words), then paragraphs in rank order.
            pieces_ids = [list(row["title_ids"]) + [0]] + [row["paragraphs"][i]["ids"]
                                                          for i in order]
            pieces_counts = [title_counts] + [paragraph_counts[i] for i in order]
            recall[extractor][corpus] = recall_curve(lead_counts, pieces_counts, lengths,
                                                     pieces_ids, decode, tokenize)
    return {"id": row["id"], "title": row["title"], "rouge": rouge, "recall": recall}


VIEW_ARTICLES = 3  # articles shown in the report's per-article view
VIEW_PARAGRAPHS = 3  # top-ranked paragraphs shown per extractor
VIEW_WORDS = 60  # words shown of each paragraph


def article_view(row: dict, extractors: list[str], corpora: list[str],
                 paragraphs: int = VIEW_PARAGRAPHS, words: int = VIEW_WORDS) -> dict:
    """One article for the per-article view: its lead, and for every extractor x corpus the
    first ``paragraphs`` paragraphs of its ranking (cut to ``words`` words, "..." marking a
    cut), each with the URL of the reference it came from."""
    urls = row.get("reference_urls") or []

    def shown(i):
        p = row["paragraphs"][i]
        text = p["text"].split()
        ref = p.get("reference")
        return {"text": " ".join(text[:words]) + (" ..." if len(text) > words else ""),
                "url": urls[ref] if ref is not None and 0 <= ref < len(urls) else None}

    return {"id": row["id"], "title": row["title"], "lead": row["lead"],
            "top": {e: {c: [shown(i) for i in loader.ranking(row, e, c)[:paragraphs]]
                        for c in corpora} for e in extractors}}


def flat_values(metrics: dict, lengths: list[int]) -> dict[str, float]:
    """Per-article metrics as ``{"rouge|ext|corpus|type": v, "recall|ext|corpus|L": v}``."""
    out = {}
    for ext, by_corpus in metrics["rouge"].items():
        for corpus, scores in by_corpus.items():
            for t, v in scores.items():
                out[f"rouge|{ext}|{corpus}|{t}"] = v
    for ext, by_corpus in metrics["recall"].items():
        for corpus, curve in by_corpus.items():
            for length, v in zip(lengths, curve, strict=True):
                out[f"recall|{ext}|{corpus}|{length}"] = v
    return out
