import random

import numpy as np

from wikisum.core.text import content_words, sentences
from wikisum.extractors.base import count_matrix
from wikisum.extractors.sumbasic import SumBasic

# Sentences s0..s4 of five paragraphs (p2 has no content word, p3 has two sentences):
FRUIT = [
    "Banana bread and apple jam.",  # p0 = s0: banana bread apple jam
    "Apple strudel with cream.",  # p1 = s1: apple strudel cream
    "It is.",  # p2: stop words only
    "And so it was. Banana split.",  # p3: (no content words), s2: banana split
    "Apple pie.",  # p4 = s3: apple pie
]
# 11 content tokens: p(apple) = 3/11, p(banana) = 2/11, the other six words 1/11.
# Step 1, top word apple (3/11); candidates s0, s1, s3:
#   s0 = (2 + 1 + 3 + 1) / 44 = 0.159, s1 = (3 + 1 + 1) / 33 = 0.152, s3 = (3 + 1) / 22 = 0.182
#   -> s3, p4. Squared: apple 9/121, pie 1/121.
# Step 2, top word banana (22/121); candidates s0, s2:
#   s0 = (22 + 11 + 9 + 11) / 484 = 0.110, s2 = (22 + 11) / 242 = 0.136  -> s2, p3.
#   Squared: banana 4/121, split 1/121.
# Step 3, top words strudel, cream, bread, jam (11/121); candidates s0, s1:
#   s0 = (4 + 11 + 9 + 11) / 484 = 0.072, s1 = (9 + 11 + 11) / 363 = 0.085  -> s1, p1.
# Step 4: s0, p0. p2 is never picked and comes last.
# Without the squaring, step 2 would pick s0 (apple still on top): [4, 0, 1, 3, 2].
FRUIT_ORDER = [4, 3, 1, 0, 2]


def test_golden_order_worked_by_hand():
    assert SumBasic().rank("Fruit", FRUIT) == FRUIT_ORDER


def test_only_sentences_with_the_top_word_compete():
    # p(mango) = 3/11 leads; the mango sentences weigh (3 + 1 + 1) / 33 = 0.152 each, less than
    # "Papaya papaya." (2/11 = 0.182), which has no mango and so waits until mango is squared
    # (9/121 < 22/121). The mango tie goes to the earlier sentence, and after papaya, s1 and s2
    # tie again at (9 + 11 + 11) / 363.
    paragraphs = ["Mango lassi sugar.", "Mango chutney vinegar.", "Mango pulp seeds.",
                  "Papaya papaya."]
    assert SumBasic().rank("Fruit", paragraphs) == [0, 3, 1, 2]


def test_content_words_drop_function_words_and_single_characters():
    assert content_words("The cat's toy is in the box, isn't it?") == ["cat", "toy", "box"]


def test_paragraphs_without_content_words_come_last_in_original_order():
    paragraphs = ["It is.", "Apple pie.", "", "So it was.", "Apple tart and apple pie."]
    # p(apple) = 3/6 leads; "Apple tart and apple pie." weighs (3+1+3+2)/24, "Apple pie." (3+2)/12.
    assert SumBasic().rank("Fruit", paragraphs) == [1, 4, 0, 2, 3]


def test_empty_and_one_paragraph():
    assert SumBasic().rank("Fruit", []) == []
    assert SumBasic().rank("Fruit", ["Apple pie. Apple tart."]) == [0]
    assert SumBasic().rank("Fruit", ["It is."]) == [0]
    assert SumBasic().rank("Fruit", ["It is.", "", "So it was."]) == [0, 1, 2]


def test_a_shuffled_input_gives_the_same_ranking(assert_permutation_equivariant):
    paragraphs = [
        "Rain fell on the town. The river rose quickly.",
        "The river flooded the town and the farms.",
        "Farmers moved cattle to higher ground before the river peaked.",
        "Rain rain rain, said the forecast.",
        "The town hall opened as a shelter.",
        "Nothing.",
    ]
    # No step breaks a tie by position, which a shuffle would change.
    assert _recompute_every_step(paragraphs)[1] is False
    assert_permutation_equivariant(SumBasic(), "Flood", paragraphs)


def _recompute_every_step(paragraphs):
    """SumBasic as the paper states it: every weight recomputed at every step.

    Returns the order and whether any step had to break a tie between candidates by position.
    """
    texts, owner = [], []
    for i, paragraph in enumerate(paragraphs):
        for sentence in sentences(paragraph):
            texts.append(sentence)
            owner.append(i)
    counts = count_matrix(texts, content_words).toarray().astype(float)  # (S, V)
    order, tied = [], False
    if counts.size:
        prob = counts.sum(axis=0) / counts.sum()
        lengths = counts.sum(axis=1)
        unpicked = lengths > 0
        while unpicked.any():
            live = (counts[unpicked] > 0).any(axis=0)
            top = prob[live].max()
            candidates = np.flatnonzero(unpicked & (counts[:, live & (prob == top)] > 0).any(1))
            # Summed like the extractor (np.add.reduceat over each row's words in vocabulary
            # order), so that both see the same floating-point weights.
            weights = [np.add.reduceat((counts[s] * prob)[counts[s] > 0], [0])[0] / lengths[s]
                       for s in candidates]
            best = candidates[int(np.argmax(weights))]
            tied = tied or weights.count(max(weights)) > 1
            unpicked[best] = False
            prob[counts[best] > 0] **= 2
            if owner[best] not in order:
                order.append(owner[best])
    return order + [i for i in range(len(paragraphs)) if i not in order], tied


def test_picks_what_recomputing_every_weight_would_ties_included():
    vocabulary = "alder birch cedar elm fir hazel larch maple oak pine rowan yew".split()
    rng = random.Random(0)
    for _ in range(150):
        paragraphs = []
        for _ in range(rng.randint(1, 7)):
            used = vocabulary[: rng.randint(2, len(vocabulary))]
            paragraphs.append(" ".join(
                " ".join(rng.choice(used) for _ in range(rng.randint(0, 6))).capitalize() + "."
                for _ in range(rng.randint(1, 3))))
        expected, _ = _recompute_every_step(paragraphs)
        assert SumBasic().rank("Trees", paragraphs) == expected, paragraphs
