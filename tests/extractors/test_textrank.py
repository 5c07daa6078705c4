import numpy as np
import pytest

from wikisum.extractors.textrank import TextRank, similarity_matrix

# Four paragraphs; "cat dog eel" and "cat dog fox" share {cat, dog}, both share {cat} with
# "cat gnu", and "yak zebu" shares nothing.
ANIMALS = ["yak zebu", "cat gnu", "cat dog eel", "cat dog fox"]
# Edge weights, |shared| / (log|p| + log|q|):
#   eel-fox: 2 / (log 3 + log 3) = 0.910239
#   eel-gnu = fox-gnu: 1 / (log 3 + log 2) = 0.558111
# PageRank, damping d = 0.85, n = 4. "yak zebu" is dangling: its mass goes to every node evenly,
# so its own score is x = (1 - d)/4 + d * x/4, x = 0.0375 / 0.7875 = 1/21 = 0.047619.
# eel and fox are symmetric (score a), gnu has score c:
#   from eel: to fox 0.910239 / 1.468350 = 0.619906, to gnu 0.380094; from gnu: 0.5 to each.
#   a = 0.0375 + 0.85 * (0.619906 a + 0.5 c + x/4)
#   c = 0.0375 + 0.85 * (2 * 0.380094 a + x/4)
#   => a = 0.341915, c = 0.268551 (and x + c + 2a = 1).
ANIMAL_SCORES = [1 / 21, 0.268551, 0.341915, 0.341915]


def test_edge_weights_worked_by_hand():
    weights = similarity_matrix(ANIMALS).toarray()
    w_eel_fox = 2 / (np.log(3) + np.log(3))
    w_gnu = 1 / (np.log(3) + np.log(2))
    assert weights == pytest.approx(np.array([
        [0, 0, 0, 0],
        [0, 0, w_gnu, w_gnu],
        [0, w_gnu, 0, w_eel_fox],
        [0, w_gnu, w_eel_fox, 0],
    ]))
    assert w_eel_fox == pytest.approx(0.910239, abs=1e-6)


def test_overlap_counts_distinct_words_and_lengths_count_tokens():
    # "cat cat dog" has 3 tokens and shares {cat} with "cat fox": 1 / (log 3 + log 2).
    weights = similarity_matrix(["cat cat dog", "cat fox"]).toarray()
    assert weights[0, 1] == pytest.approx(1 / (np.log(3) + np.log(2)))


def test_pagerank_scores_worked_by_hand():
    scores = TextRank().scores("Animals", ANIMALS)
    assert scores == pytest.approx(ANIMAL_SCORES, abs=1e-6)


def test_ranks_by_pagerank_with_ties_in_original_order():
    # eel and fox tie (a symmetric pair): eel, the earlier one, comes first.
    assert TextRank().rank("Animals", ANIMALS) == [2, 3, 1, 0]
    assert TextRank().rank("Animals", ["cat dog fox", "yak zebu", "cat dog eel"]) == [0, 2, 1]


def test_isolated_paragraphs_get_the_teleport_mass_and_keep_their_order():
    paragraphs = ["yak", "cat dog", "", "zebu gnu", "cat dog"]
    # n = 5, d = 0.85; three isolated (dangling) nodes of score x spread their mass evenly, the
    # pair joined by one edge has score y each:
    #   x = 0.15/5 + 0.85 * 3x/5          => x = 0.03 / 0.49 = 3/49
    #   y = 0.15/5 + 0.85 * (3x/5 + y)    => y = (0.03 + 0.51 x) / 0.15 = 20/49
    scores = TextRank().scores("Animals", paragraphs)
    assert scores == pytest.approx([3 / 49, 20 / 49, 3 / 49, 3 / 49, 20 / 49], abs=1e-9)
    assert TextRank().rank("Animals", paragraphs) == [1, 4, 0, 2, 3]


def test_one_word_paragraphs_do_not_divide_by_zero():
    # log 1 + log 1 = 0: the weight is the overlap itself, 1, as in sumy.
    assert similarity_matrix(["fox", "fox"]).toarray() == pytest.approx(np.array([[0, 1], [1, 0]]))
    scores = TextRank().scores("", ["fox", "", "fox", "fox fox"])
    assert np.all(np.isfinite(scores))
    assert scores.sum() == pytest.approx(1.0)


def test_empty_and_one_paragraph():
    assert TextRank().rank("Animals", []) == []
    assert TextRank().scores("Animals", []).shape == (0,)
    assert TextRank().rank("Animals", ["cat dog"]) == [0]
    assert TextRank().scores("Animals", ["cat dog"]) == pytest.approx([1.0])


def test_a_shuffled_input_gives_the_same_ranking(assert_permutation_equivariant):
    paragraphs = [
        "The fox ran across the field at dawn.",
        "A fox and a dog met in the field.",
        "The dog slept all day.",
        "Rain fell on the field and the farm.",
        "The farm kept a dog, two cats and a fox.",
        "Cats sleep.",
        "Nothing in common here.",
    ]
    scores = TextRank().scores("Fox", paragraphs)
    assert len(set(scores)) == len(paragraphs)  # no ties
    assert_permutation_equivariant(TextRank(), "Fox", paragraphs)
