import pytest

from wikisum.pipeline.clones import is_clone, is_self_page, lead_recall


def test_lead_recall_counts_distinct_lead_words_found_in_document():
    # lead words {the, cat, sat, on, mat}; the document has cat and mat
    assert lead_recall("The cat sat on the mat.", "A cat and a mat.") == pytest.approx(2 / 5)


def test_lead_recall_ignores_case_and_punctuation():
    assert lead_recall("Bodmin, Town!", "bodmin town") == 1.0


def test_lead_recall_of_empty_lead_or_document():
    assert lead_recall("", "anything at all") == 0.0
    assert lead_recall("... !", "anything at all") == 0.0
    assert lead_recall("word", "") == 0.0


def test_is_clone_threshold_is_strict():
    lead = "alpha beta gamma delta"
    assert not is_clone(lead, "alpha beta")  # recall 0.5 is not above 0.5
    assert is_clone(lead, "alpha beta gamma")  # 0.75
    assert is_clone(lead, "alpha beta", threshold=0.4)
    assert not is_clone(lead, "alpha beta gamma delta", threshold=1.0)


@pytest.mark.parametrize(
    ("url", "title", "expected"),
    [
        ("https://en.wikipedia.org/wiki/Bodmin", "Bodmin", True),
        ("https://de.m.wikipedia.org/wiki/Bodmin", "Bodmin", True),
        ("https://en.wikipedia.org/wiki/bodmin", "Bodmin", True),
        ("https://en.wikipedia.org/wiki/Bodmin_Moor", "Bodmin Moor", True),
        ("https://en.wikipedia.org/wiki/Bodmin%20Moor", "bodmin_Moor", True),
        ("https://en.wikipedia.org/wiki/Caf%C3%A9", "café", True),
        ("https://en.wikipedia.org/w/index.php?title=Bodmin&action=history", "Bodmin", True),
        ("https://en.wikipedia.org/wiki/BODMIN", "Bodmin", False),
        ("https://en.wikipedia.org/wiki/Bodmin_Moor", "Bodmin", False),
        ("https://example.com/wiki/Bodmin", "Bodmin", False),
        ("https://en.wikipedia.org/wiki/Bodmin", "", False),
    ],
)
def test_is_self_page(url, title, expected):
    assert is_self_page(url, title) is expected
