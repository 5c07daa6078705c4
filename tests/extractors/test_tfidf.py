import math

import numpy as np
import pytest

from wikisum.extractors.tfidf import TfIdf

# Title "Red Fox": the query words are {red, fox}; N_d = 4 paragraphs.
FOXES = [
    "The red fox and the red hen.",  # red: 2, fox: 1
    "A grey wolf.",  # neither
    "Fox hunting with a red coat, fox.",  # red: 1, fox: 2
    "Red wine.",  # red: 1
]
# N_d,red = 3 (paragraphs 0, 2, 3): idf(red) = log(4/3) = 0.287682
# N_d,fox = 2 (paragraphs 0, 2):    idf(fox) = log(4/2) = 0.693147
# score(0) = 2 * 0.287682 + 1 * 0.693147 = 1.268511
# score(1) = 0
# score(2) = 1 * 0.287682 + 2 * 0.693147 = 1.673976
# score(3) = 1 * 0.287682                = 0.287682
FOX_SCORES = [1.268511, 0.0, 1.673976, 0.287682]


def test_scores_are_the_papers_formula_worked_by_hand():
    scores = TfIdf().scores("Red Fox", FOXES)
    assert scores == pytest.approx(FOX_SCORES, abs=1e-6)
    assert scores[0] == pytest.approx(2 * math.log(4 / 3) + math.log(2))


def test_ranks_by_score():
    assert TfIdf().rank("Red Fox", FOXES) == [2, 0, 3, 1]


def test_repeated_and_unseen_title_words_change_nothing():
    # A query word counts once however often the title repeats it, and a word that no paragraph
    # contains (N_dw = 0) contributes 0 instead of dividing by zero.
    scores = TfIdf().scores("Red fox, the RED fox of Zanzibar", FOXES)
    # "the" is in paragraph 0 only: N_dw = 1, so paragraph 0 gains 2 * log(4/1).
    assert scores == pytest.approx(
        [FOX_SCORES[0] + 2 * math.log(4), 0.0, FOX_SCORES[2], FOX_SCORES[3]], abs=1e-6)


def test_a_word_in_every_paragraph_scores_zero():
    scores = TfIdf().scores("Fox", ["Fox.", "A fox, a fox.", "Fox fox fox."])
    assert scores == pytest.approx([0.0, 0.0, 0.0])
    assert TfIdf().rank("Fox", ["Fox.", "A fox, a fox.", "Fox fox fox."]) == [0, 1, 2]


def test_ties_keep_their_original_order():
    # idf(fox) = log(4/2): scores [0, 0.693, 0, 0.693].
    paragraphs = ["A wolf.", "A fox.", "Another wolf.", "Another fox."]
    assert TfIdf().rank("fox", paragraphs) == [1, 3, 0, 2]


def test_title_without_words_gives_the_original_order():
    assert TfIdf().scores("--", FOXES) == pytest.approx([0.0] * 4)
    assert TfIdf().rank("--", FOXES) == [0, 1, 2, 3]


def test_empty_and_one_paragraph():
    assert TfIdf().rank("Red Fox", []) == []
    assert TfIdf().scores("Red Fox", []).shape == (0,)
    assert TfIdf().rank("Red Fox", ["The red fox."]) == [0]
    assert TfIdf().scores("Red Fox", ["The red fox."]) == pytest.approx([0.0])  # log(1/1)


def test_a_shuffled_input_gives_the_same_ranking(assert_permutation_equivariant):
    paragraphs = FOXES + ["Red red red.", "Fox fox fox red.", "A fox."]
    assert len(set(np.round(TfIdf().scores("Red Fox", paragraphs), 9))) == 7  # no ties
    assert_permutation_equivariant(TfIdf(), "Red Fox", paragraphs)
