"""Words, content words and sentences in every script (wikisum.core.text over
wikisum.core.language)."""

import pytest
from scripts import NO_SENTENCE_MARK, SAMPLES

from wikisum.core import language
from wikisum.core.text import content_words, sentences, words


def test_english_words_are_what_they_were():
    assert words("snake_case don't well-known U.S. 3.5 café") == [
        "snake", "case", "don", "t", "well", "known", "u", "s", "3", "5", "café"]


def test_scripts_without_spaces_are_segmented_into_words():
    assert words("東京都は日本の首都であり、関東地方に位置する。") == [
        "東京", "都", "は", "日本", "の", "首都", "で", "あり",
        "関東", "地方", "に", "位置", "する"]
    assert words("北京是中华人民共和国的首都") == [
        "北京", "是", "中华", "人民", "共和国", "的", "首都"]
    assert words("ภาษาไทยเป็นภาษาราชการ") == ["ภาษา", "ไทย", "เป็น", "ภาษา", "ราชการ"]
    # a character beyond the Basic Multilingual Plane keeps the offsets right
    assert "".join(words("𠮷野家で食べた")) == "𠮷野家で食べた"


def test_marks_in_either_order_give_the_same_words_in_a_segmented_script():
    # Burmese with its asat stored before the dot below (the reverse of the canonical order)
    assert words("ခွင\u103a\u1037") == words("ခွင\u1037\u103a")


def test_marks_and_joiners_stay_inside_words():
    assert words("हिन्दी भारत की राजभाषा है।") == ["हिन्दी", "भारत", "की", "राजभाषा", "है"]
    assert words("می‌خواهم") == ["می\u200cخواهم"]  # Persian's zero-width non-joiner
    assert words("ශ්‍රී ලංකා") == ["ශ්\u200dරී", "ලංකා"]  # Sinhala's zero-width joiner


@pytest.mark.parametrize(("lang", "first", "second"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_every_script_gives_words_and_its_two_sentences(lang, first, second):
    text = first + ("\n\n" if lang in NO_SENTENCE_MARK else " ") + second
    assert sentences(text) == [first.strip(), second.strip()]
    found = words(text)
    assert found and all(w == w.lower() for w in found)
    # nothing but separators is lost: every letter of the text is in some word
    letters = [ch for ch in text.lower() if ch.isalpha()]
    assert sorted(letters) == sorted(ch for w in found for ch in w if ch.isalpha())


def test_sentences_after_stops_of_other_scripts():
    assert sentences("東京は首都。大阪は都市です！") == ["東京は首都。", "大阪は都市です！"]
    assert sentences("यह एक है। वह दो है॥") == ["यह एक है।", "वह दो है॥"]
    assert sentences("هل هذا نص؟ نعم. هذا آخر.") == ["هل هذا نص؟", "نعم.", "هذا آخر."]
    # English keeps its rules: a lower-case letter after a period does not start a sentence
    assert sentences("It was 3 p.m. when Dr. Who came. e.g. this.") == [
        "It was 3 p.m. when Dr. Who came. e.g. this."]


def test_content_words_of_syllabic_scripts_keep_two_character_words():
    assert content_words("東京都は日本の首都である。", "ja") == ["東京", "日本", "首都"]
    assert content_words("北京是中华人民共和国的首都。", "zh") == [
        "北京", "中华", "人民", "共和国", "首都"]
    assert content_words("서울은 대한민국의 수도이다", "ko") == ["서울은", "대한민국의", "수도이다"]


def test_snowball_stemmers_by_language_tag():
    assert language.stemmer_name("pt-BR") == "portuguese"
    assert language.stemmer_name("nb") == "norwegian"
    assert language.stemmer_name("ja") is None
    assert language.stemmer_name(None) is None
    assert language.stemmer("ru")(["столицы", "города"]) == ["столиц", "город"]
