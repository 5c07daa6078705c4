import random

from wikisum.extractors.identity import Identity


def test_keeps_the_original_order_whatever_the_text():
    paragraphs = ["Zebra.", "Aardvark aardvark aardvark.", "", "The title word: Bodmin."]
    assert Identity().rank("Bodmin", paragraphs, target="Aardvark.", sources=["search"] * 4) == [
        0, 1, 2, 3]


def test_empty_and_one_paragraph():
    assert Identity().rank("Bodmin", []) == []
    assert Identity().rank("Bodmin", ["Only one."]) == [0]


def test_a_shuffled_input_is_ranked_in_its_new_order():
    paragraphs = [f"Paragraph {i} about Bodmin." for i in range(8)]
    rng = random.Random(0)
    for _ in range(5):
        perm = list(range(8))
        rng.shuffle(perm)
        order = Identity().rank("Bodmin", [paragraphs[i] for i in perm])
        assert [perm[i] for i in order] == perm
