import pytest

from wikisum.extractors.cheating import Cheating, bigrams

LEAD = "The quick brown fox jumps over the lazy dog."
# The lead's 8 distinct bigrams: the quick, quick brown, brown fox, fox jumps, jumps over,
# over the, the lazy, lazy dog.
PARAGRAPHS = [
    "A lazy dog sleeps.",  # a lazy, lazy dog, dog sleeps: {lazy dog} -> 1/8
    "The quick brown fox jumps over the lazy dog.",  # the lead itself -> 8/8
    "Brown fox, quick brown fox!",  # {brown fox, quick brown}, brown fox counted once -> 2/8
    "Dog lazy the over.",  # the lead's words, none of its bigrams -> 0
]


def test_bigram_recall_worked_by_hand():
    assert Cheating().scores("Fox", PARAGRAPHS, LEAD) == pytest.approx([0.125, 1.0, 0.25, 0.0])
    assert Cheating().rank("Fox", PARAGRAPHS, target=LEAD) == [1, 2, 0, 3]


def test_a_paragraph_copied_from_the_lead_comes_first():
    lead = ("Bodmin is a town and civil parish in Cornwall, England. It was formerly the county "
            "town of Cornwall.")
    paragraphs = [
        "Bodmin Moor lies to the north east of the town.",
        "The town is in Cornwall, England, near the moor.",
        "Bodmin Jail was built in 1779.",
        "Bodmin is a town and civil parish in Cornwall, England.",
        "Cornwall is a county in England.",
    ]
    assert Cheating().rank("Bodmin", paragraphs, target=lead)[0] == 3


def test_lead_bigrams_are_distinct():
    # "new york new york": {new york, york new}; the paragraph has one of the two.
    assert Cheating().scores("NY", ["New York."], "New York, New York") == pytest.approx([0.5])
    assert bigrams("New York, New York") == ["new york", "york new", "new york"]


def test_ties_keep_their_original_order():
    paragraphs = ["Nothing.", "The lazy dog.", "Something else.", "A lazy dog."]
    assert Cheating().rank("Fox", paragraphs, target=LEAD) == [1, 3, 0, 2]


def test_a_lead_without_bigrams_scores_every_paragraph_zero():
    assert Cheating().scores("Fox", PARAGRAPHS, "Fox.") == pytest.approx([0.0] * 4)
    assert Cheating().rank("Fox", PARAGRAPHS, target="") == [0, 1, 2, 3]


def test_the_target_is_required():
    with pytest.raises(ValueError, match="target"):
        Cheating().rank("Fox", PARAGRAPHS)
    with pytest.raises(ValueError, match="target"):
        Cheating().scores("Fox", PARAGRAPHS)


def test_empty_and_one_paragraph():
    assert Cheating().rank("Fox", [], target=LEAD) == []
    assert Cheating().scores("Fox", [], LEAD).shape == (0,)
    assert Cheating().rank("Fox", ["The lazy dog."], target=LEAD) == [0]


def test_a_shuffled_input_gives_the_same_ranking(assert_permutation_equivariant):
    paragraphs = [
        "The quick brown fox.",  # 3/8
        "Jumps over the lazy dog.",  # 4/8
        "A fox jumps.",  # 1/8
        "The quick brown fox jumps over.",  # 5/8
        "Brown fox jumps.",  # 2/8
        "Cats.",  # 0
    ]
    scores = Cheating().scores("Fox", paragraphs, LEAD)
    assert scores == pytest.approx([3 / 8, 4 / 8, 1 / 8, 5 / 8, 2 / 8, 0.0])
    assert_permutation_equivariant(Cheating(), "Fox", paragraphs, target=LEAD)
