import random

import numpy as np
from sklearn.feature_extraction.text import CountVectorizer

from wikisum.core.text import words
from wikisum.extractors.base import count_matrix, order_by_score

TEXTS = [
    "The red fox and the red hen.",
    "",
    "Été à Paris: the fox, the hen, 42 eggs.",
    "...",
    "Red red red.",
]


def test_count_matrix_is_count_vectorizers():
    expected = CountVectorizer(analyzer=words).fit(TEXTS)
    got = count_matrix(TEXTS, words)
    assert got.shape == (5, len(expected.vocabulary_))
    assert (got != expected.transform(TEXTS)).nnz == 0
    assert got.has_canonical_format


def test_count_matrix_with_a_vocabulary_is_count_vectorizers():
    vocabulary = ["red", "hen", "wolf", "red"]  # duplicates kept once, unseen terms kept
    expected = CountVectorizer(analyzer=words, vocabulary=list(dict.fromkeys(vocabulary)))
    got = count_matrix(TEXTS, words, vocabulary=vocabulary)
    assert got.toarray().tolist() == expected.fit_transform(TEXTS).toarray().tolist()
    assert got.toarray().tolist() == [[2, 1, 0], [0, 0, 0], [0, 1, 0], [0, 0, 0], [3, 0, 0]]


def test_count_matrix_of_nothing_has_no_columns():
    assert count_matrix(["", "..."], words).shape == (2, 0)
    assert count_matrix([], words).shape == (0, 0)
    assert count_matrix(TEXTS, words, vocabulary=[]).shape == (5, 0)
    assert count_matrix([], words, vocabulary=["fox"]).shape == (0, 1)


def test_count_matrix_rows_follow_the_texts():
    rng = random.Random(0)
    perm = list(range(len(TEXTS)))
    rng.shuffle(perm)
    original = count_matrix(TEXTS, words).toarray()
    shuffled = count_matrix([TEXTS[i] for i in perm], words).toarray()
    assert np.array_equal(shuffled, original[perm])


def test_order_by_score_is_descending_and_stable():
    assert order_by_score(np.array([0.5, 2.0, 0.5, 3.0, 2.0])) == [3, 1, 4, 0, 2]
    assert order_by_score(np.zeros(0)) == []
