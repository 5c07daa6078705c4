"""SumBasic over the article's paragraphs (Nenkova & Vanderwende 2005).

SumBasic picks sentences one at a time by word frequency (Nenkova & Vanderwende, steps 1-5):

1. p(w) = n_w / N: each content word's probability over all the article's paragraphs;
2. weight(s) = the mean of p(w) over the content-word tokens of sentence s;
3. among the sentences that contain the currently most probable word, pick the one with the
   highest weight;
4. square p(w) for every distinct word w of the picked sentence, so that its words count less
   for the next pick (the paper's redundancy update);
5. repeat from 2.

"The most probable word" is taken among the words of sentences not yet picked (a word whose
sentences are all picked can no longer lead to a pick); when several words share the top
probability, a sentence containing any of them is a candidate. Equal weights are broken by
position (the earlier sentence).

Paragraphs are ranked by the step at which their first sentence is picked. Picking stops as soon
as every paragraph has had a sentence picked, since later picks cannot change that order.
Paragraphs without a single content word are never picked: they come last, in their original
order.

Content words are ``wikisum.core.text.content_words`` (English): ``words`` tokens that are
neither English function words (``wikisum.core.stopwords``), nor made only of digits, nor a
single character. The last are mostly the debris of splitting at apostrophes ("Britain's" ->
"britain", "s"), which would otherwise be among the most probable "words" of any English text.
No stemming (sumy's default too).

Probabilities are floats: a word squared ten times or so underflows to 0, after which sentences
made only of such words weigh 0, tie, and are picked in position order (as in sumy).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from wikisum.core.text import content_words, sentences
from wikisum.extractors.base import count_matrix


class SumBasic:
    name = "sumbasic"

    def rank(self, title: str, paragraphs: Sequence[str], target: str | None = None,
             sources: Sequence[str] | None = None) -> list[int]:
        texts: list[str] = []
        owner: list[int] = []  # the paragraph of each sentence
        for i, paragraph in enumerate(paragraphs):
            split = sentences(paragraph)
            texts.extend(split)
            owner.extend([i] * len(split))
        counts = count_matrix(texts, content_words).astype(float)  # (S, V) in sentence order
        picked = _first_picks(counts, np.asarray(owner, dtype=np.int64), len(paragraphs))
        never = np.ones(len(paragraphs), dtype=bool)
        never[picked] = False
        return picked + [int(i) for i in np.flatnonzero(never)]


def _first_picks(counts, owner: np.ndarray, n_paragraphs: int) -> list[int]:
    """Paragraphs in the order SumBasic first picks one of their sentences.

    The picks are made in rounds, one round per value of the top probability. A round computes
    the weights of its candidates at once (``weights``) and puts them in a heap. Since squaring
    only lowers probabilities (p <= 1), a weight in the heap is an upper bound of the current
    one, so the heap's best entry is the next pick as soon as none of its words has changed since
    its weight was computed; otherwise it is re-weighed and pushed back, or dropped if it no
    longer holds a word of top probability. No word can rise to the top probability, so the round
    ends when its heap is empty. This picks exactly what recomputing every weight at every step
    would, ties included ((-weight, sentence index) orders the heap), at a cost per pick that
    depends on the picked and re-weighed sentences only, not on the whole matrix.

    Work over many sentences or words is vectorised; the bookkeeping of one sentence at a time
    (a dozen words) reads and writes Python lists, which costs less than numpy calls on arrays
    that small.

    Args:
        counts: (S, V) csr content-word counts of the sentences, in input order.
        owner: (S,) the paragraph of each sentence.
        n_paragraphs: The number of paragraphs.
    """
    if counts.nnz == 0:
        return []
    counts = counts.tocsr()
    counts.sort_indices()  # each row's words in vocabulary order, whatever the input order
    by_word = counts.tocsc()
    by_word.sort_indices()  # each column's sentences in ascending order
    lengths = np.asarray(counts.sum(axis=1)).ravel()  # (S,) content tokens per sentence
    prob = np.asarray(counts.sum(axis=0)).ravel() / counts.sum()  # (V,) step 1
    unpicked = lengths > 0  # (S,)
    alive = np.diff(by_word.indptr) > 0  # (V,) words that are in an unpicked sentence
    to_cover = len(np.unique(owner[unpicked]))

    indptr = counts.indptr.tolist()
    flat = counts.indices.tolist()
    words_of = [flat[indptr[s]:indptr[s + 1]] for s in range(len(indptr) - 1)]  # distinct
    prob_of = prob.tolist()  # a copy of `prob` for reading one word at a time
    unpicked_with = np.diff(by_word.indptr).tolist()  # per word, unpicked sentences with it
    changed_at = [-1] * len(prob_of)  # per word, the pick that last squared its p
    owner_of = owner.tolist()
    covered = [False] * n_paragraphs
    order: list[int] = []
    picks = 0

    def weights(rows: np.ndarray) -> np.ndarray:
        # Step 2 for `rows`: (counts[rows] @ prob) / lengths[rows], on the raw csr arrays.
        # `np.add.reduceat` sums each row in the same order whether it is given one row or
        # many, so a weight does not depend on which batch computed it.
        entries = _spans(counts.indptr, rows)
        sizes = counts.indptr[rows + 1] - counts.indptr[rows]
        totals = np.add.reduceat(counts.data[entries] * prob[counts.indices[entries]],
                                 np.cumsum(sizes) - sizes)
        return totals / lengths[rows]

    def weight(row: int) -> float:
        # `weights` of one row, without the gathering; the same sum, so the same value.
        start, stop = indptr[row], indptr[row + 1]
        total = np.add.reduceat(counts.data[start:stop] * prob[counts.indices[start:stop]], [0])
        return float(total[0] / lengths[row])

    while len(order) < to_cover:
        # A new round: the unpicked sentences that contain a word of the top probability.
        live_prob = np.where(alive, prob, -np.inf)
        top = float(live_prob.max())
        top_words = np.flatnonzero(live_prob == top)
        is_candidate = np.zeros_like(unpicked)
        is_candidate[by_word.indices[_spans(by_word.indptr, top_words)]] = True
        candidates = np.flatnonzero(is_candidate & unpicked)
        # A live word is in an unpicked sentence: without one, `alive` is wrong, and the loop
        # would never end.
        assert candidates.size, "SumBasic: no sentence holds the top word"
        # Entries (-weight, sentence, the pick count when weighed): the best weight first, then
        # the earlier sentence.
        heap = [(-w, s, picks) for w, s in
                zip(weights(candidates).tolist(), candidates.tolist(), strict=True)]
        heapq.heapify(heap)
        while heap and len(order) < to_cover:
            _, best, weighed_at = heapq.heappop(heap)
            row = words_of[best]
            if max([changed_at[w] for w in row]) >= weighed_at:  # a stale weight
                if max([prob_of[w] for w in row]) == top:
                    heapq.heappush(heap, (-weight(best), best, picks))
                continue
            unpicked[best] = False  # step 3
            columns = counts.indices[indptr[best]:indptr[best + 1]]
            squared = prob[columns] ** 2  # step 4
            prob[columns] = squared
            for w, p in zip(row, squared.tolist(), strict=True):
                prob_of[w] = p
                changed_at[w] = picks
                unpicked_with[w] -= 1
                if unpicked_with[w] == 0:
                    alive[w] = False
            picks += 1
            paragraph = owner_of[best]
            if not covered[paragraph]:
                covered[paragraph] = True
                order.append(paragraph)
    return order


def _spans(indptr: np.ndarray, majors: np.ndarray) -> np.ndarray:
    """The positions of the stored entries of rows (csr) or columns (csc) ``majors``, in order."""
    starts = indptr[majors]
    sizes = indptr[majors + 1] - starts
    # Position k of the result is starts[j] + (k - first position of j) for the j it falls in.
    offsets = np.cumsum(sizes) - sizes
    return np.repeat(starts - offsets, sizes) + np.arange(sizes.sum())
