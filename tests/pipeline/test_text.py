from wikisum.core.text import sentences, words


def test_words_are_lowercased_letter_digit_runs():
    text = "Don't stop—the well-known café's 2nd_floor, ÉTÉ 42!"
    assert words(text) == [
        "don", "t", "stop", "the", "well", "known", "café", "s", "2nd", "floor", "été", "42",
    ]


def test_words_of_text_without_letters_or_digits():
    assert words("") == []
    assert words(" -- ... __ !? ") == []


def test_sentences_respect_abbreviations_initials_and_quotes():
    text = (
        'Dr. Smith arrived at 5 p.m. on Monday. He left, e.g. after lunch! Did he return? '
        '"Yes," said J. R. Tolkien. It cost $3.50 in 1999. The end'
    )
    assert sentences(text) == [
        "Dr. Smith arrived at 5 p.m. on Monday.",
        "He left, e.g. after lunch!",
        "Did he return?",
        '"Yes," said J. R. Tolkien.',
        "It cost $3.50 in 1999.",
        "The end",
    ]


def test_sentences_split_after_closing_quote_and_before_digit():
    assert sentences('He said "Stop." Then he left. 2019 was good.') == [
        'He said "Stop."',
        "Then he left.",
        "2019 was good.",
    ]


def test_sentences_keep_dotted_abbreviation_but_split_after_etc():
    assert sentences("He joined the U.S. Army in 1990. He bought apples, pears, etc. The rest") == [
        "He joined the U.S. Army in 1990.",
        "He bought apples, pears, etc.",
        "The rest",
    ]


def test_sentences_do_not_split_before_lowercase():
    assert sentences("The value is approx. three. and more") == [
        "The value is approx. three. and more"
    ]


def test_blank_line_ends_a_sentence_and_whitespace_is_collapsed():
    text = "First line without period\n\n  Second   paragraph.\nNext one.  \n\n\n"
    assert sentences(text) == ["First line without period", "Second paragraph.", "Next one."]


def test_sentences_of_empty_text():
    assert sentences("") == []
    assert sentences(" \n\n ") == []
