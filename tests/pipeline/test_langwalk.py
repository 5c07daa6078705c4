"""The vectorised feature walk gives py3langid's own answers, bit for bit."""

from __future__ import annotations

import gzip
import random
from array import array

import numpy as np
import pytest
from py3langid.langid import MODEL_FILE, LanguageIdentifier

from wikisum.pipeline import language, langwalk


@pytest.fixture(scope="module")
def plain() -> LanguageIdentifier:
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@pytest.fixture(scope="module")
def fast():
    return language._get_identifier()


def random_texts(seed: int, count: int) -> list:
    rng = random.Random(seed)
    alphabet = ("abcdefghijklmnopqrstuvwxyz ABCDEFG.,;:!?'\"\n\t0123456789" "éèàüößçñ"
                "日本語の文章中文汉字한국어" "русскийязык" "ελληνικά" "العربية" "עברית" "हिन्दी"
                "\u200b\u2028\x00")
    texts: list = ["", " ", "a", "ab", "abcde", "abcdef", "abcdefg", "A" * 40, "1234567890"]
    for _ in range(count):
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 1500))))
    for _ in range(count // 4):  # raw bytes, invalid UTF-8 included
        texts.append(bytes(rng.randrange(256) for _ in range(rng.randint(0, 400))))
    return texts


def test_the_identifier_in_use_is_the_vectorised_one(fast):
    assert type(fast).__name__ == "VectorisedIdentifier"


def test_answers_and_rankings_equal_py3langids_on_random_texts(plain, fast):
    texts = random_texts(0, 400)
    for text in texts:
        assert fast.classify(text) == plain.classify(text), repr(text)[:80]
    for text in texts[:40]:
        assert fast.rank(text) == plain.rank(text)


def test_the_counts_equal_py3langids_walk_in_first_occurrence_order(plain, fast):
    from py3langid.langid import visit_counts

    for text in random_texts(1, 60):
        data = plain._encode(text)
        expected = visit_counts(plain.tk_nextmove, plain._rowbase, plain.tk_output, data)
        found = fast._walk.counts(data)
        if expected is None:
            assert found is None
            continue
        features, counts = found
        assert features.tolist() == list(expected.keys())
        assert counts.tolist() == list(expected.values())


def test_the_walk_equals_a_sequential_walk_on_a_hand_made_automaton():
    # Patterns "ab" and "b" over the bytes a/b: states 0 root, 1 "a", 2 "ab", 3 "b".
    # Features: 0 for "ab" (state 2), 1 for "b" (states 2 and 3 end with "b": state 3's own).
    class Toy:
        tk_nextmove = array("I", [0] * (4 * 256))
        _rowbase = [0, 256, 512, 768]
        tk_output = [-1, -1, 0, 1]

    a, b = ord("a"), ord("b")
    for state in range(4):
        Toy.tk_nextmove[Toy._rowbase[state] + a] = 1
        Toy.tk_nextmove[Toy._rowbase[state] + b] = 2 if state == 1 else 3
    walk = langwalk.FeatureWalk(Toy)
    assert walk.depth == 2  # found by breadth-first search: not a known py3langid model
    data = b"abbaabxab"
    state, expected = 0, []
    for byte in data:
        state = Toy.tk_nextmove[Toy._rowbase[state] + byte]
        expected.append(state)
    assert walk.states(data).tolist() == expected == [1, 2, 3, 1, 1, 2, 0, 1, 2]
    features, counts = walk.counts(data)
    assert features.tolist() == [0, 1] and counts.tolist() == [3, 1]
    assert walk.counts(b"aaa") is None


def test_the_known_depth_is_the_shipped_models(fast):
    walk = fast._walk
    found = langwalk.trie_depth(walk.nextmove, walk.rowbase)
    assert found == walk.depth
    known = langwalk.shipped_model_depth()
    assert known is None or known == found


def test_an_identifier_of_another_layout_keeps_py3langids_walk(plain):
    class Other:
        tk_nextmove = [0, 1]  # a list, not the array this walk reads
    assert not langwalk.supported(Other())
    assert langwalk.supported(plain)
    unprepared = langwalk.vectorised(LanguageIdentifier).from_model_file(MODEL_FILE,
                                                                        norm_probs=True)
    assert unprepared.classify("Das ist ein deutscher Satz über Sprache und Wörter.") == \
        plain.classify("Das ist ein deutscher Satz über Sprache und Wörter.")


def test_a_language_subset_keeps_the_float32_table_in_step(plain):
    fast = langwalk.vectorised(LanguageIdentifier).from_model_file(
        MODEL_FILE, norm_probs=True).prepare()
    other = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    fast.set_languages(["de", "nl", "en"])
    other.set_languages(["de", "nl", "en"])
    for text in ["Het is een mooie dag vandaag.", "Es ist ein schöner Tag heute.",
                 "It is a fine day today."]:
        assert fast.classify(text) == other.classify(text)
    assert fast._table32.shape == (fast.nb_ptc.shape[0], 3)
    assert np.array_equal(fast._table32, fast.nb_ptc.astype(np.float32))


@pytest.mark.shared_data
def test_answers_equal_py3langids_on_the_real_pages(shared_data, plain, fast):
    from wikisum.pipeline import webtext

    pages = sorted((shared_data / "extraction" / "pages").glob("*.html.gz"))
    assert len(pages) >= 800
    for path in pages:
        html, _ = webtext.decode_body(gzip.decompress(path.read_bytes()), None)
        sample = html[:language.DEFAULT_MAX_CHARS * 4]
        for text in (sample, sample[:language.DEFAULT_MAX_CHARS]):
            assert fast.classify(text) == plain.classify(text), path.name
