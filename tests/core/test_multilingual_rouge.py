"""The one ROUGE scorer (wikisum.core.rouge): English as rouge-score scores it, every other
script on its own words."""

import pytest
from rouge_score import rouge_scorer
from scripts import NO_SENTENCE_MARK, SAMPLES

from wikisum.core import rouge
from wikisum.core.text import sentences
from wikisum.generation import evaluation


def _text(lang: str, first: str, second: str) -> str:
    return first + ("\n\n" if lang in NO_SENTENCE_MARK else " ") + second


@pytest.mark.parametrize(("lang", "first", "second"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_identical_text_scores_100_in_every_script(lang, first, second):
    text = _text(lang, first, second)
    scores = rouge.score(text, text, lang)
    for name in rouge.ROUGE_TYPES:
        assert scores[name] == {"f": 1.0, "p": 1.0, "r": 1.0}, name


@pytest.mark.parametrize(("lang", "first", "second"), SAMPLES, ids=[s[0] for s in SAMPLES])
def test_the_first_half_has_full_precision_and_the_recall_its_length_says(lang, first, second):
    reference = _text(lang, first, second)
    assert sentences(reference) == [first.strip(), second.strip()]
    tokenize = rouge.tokenizer(lang).tokenize
    scores = rouge.score(reference, first, lang)["rouge1"]
    assert scores["p"] == 1.0
    assert 0.0 < scores["r"] < 1.0
    assert scores["r"] == pytest.approx(len(tokenize(first)) / len(tokenize(reference)))


ENGLISH = [
    ("The cats were sitting on the mats, weren't they?", "A cat sat on the mat."),
    ("Running quickly, the runners ran 10 km in 2019.", "Runners run 10km; the 2019 run."),
    ("Café owners' résumés — naïve? No.", "cafe owner resume naive"),
    ("", "something"),
]


@pytest.mark.parametrize("lang", [None, "en", "en-GB"])
@pytest.mark.parametrize(("reference", "prediction"), ENGLISH)
def test_english_equals_rouge_score_bit_for_bit(lang, reference, prediction):
    ours = rouge.score(reference, prediction, lang, ("rouge1", "rouge2", "rougeL", "rougeLsum"))
    theirs = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"],
                                      use_stemmer=True).score(reference, prediction)
    for name, score in theirs.items():
        assert ours[name] == {"f": score.fmeasure, "p": score.precision, "r": score.recall}


def test_other_languages_keep_every_script_and_stem_with_snowball():
    assert rouge.tokenizer("ru").tokenize("Москва — столица России.") == [
        "москв", "столиц", "росс"]
    # Japanese: ICU's words, no stemmer
    assert rouge.tokenizer("ja").tokenize("東京都は日本の首都。") == [
        "東京", "都", "は", "日本", "の", "首都"]
    # Punctuation and symbols are removed, accents kept, outside English
    assert rouge.tokenizer("fr").tokenize("L'été, à Paris !") == ["l", "été", "à", "paris"]


def test_a_perfect_russian_prediction_scores_100_not_0():
    text = "Москва — столица России и крупнейший по численности населения город страны."
    assert rouge.score(text, text, "ru")["rougeL"]["f"] == 1.0
    assert rouge.score(text, text, "en")["rougeL"]["f"] == 0.0  # why the language matters


def test_text_scored_as_english_in_another_script_is_a_warning_with_counts():
    records = [{"id": i, "prediction": p, "reference": r} for i, (p, r) in enumerate([
        ("Москва — столица", "Москва — столица России."),
        ("東京都は日本の首都", "東京都は日本の首都である。"),
        ("The cat sat.", "The cat sat on the mat."),
    ])]
    metrics = evaluation.score_predictions(records)
    assert metrics["languages"] == {"en": 3}
    (warning,) = metrics["rouge_warnings"]
    assert warning.startswith("2 of 3 texts were scored as English but are mostly in another")
    assert "--lang" in warning
    # Scored in their languages, per record or for all, the same records score above 0
    for i, lang in ((0, "ru"), (1, "ja")):
        records[i]["lang"] = lang
    by_record = evaluation.score_predictions(records)
    assert by_record["rouge_warnings"] == []
    assert by_record["languages"] == {"en": 1, "ja": 1, "ru": 1}
    assert by_record["rouge"]["rouge1"]["p"] == 1.0
    assert evaluation.score_predictions(records[:1], lang="ru")["rouge"]["rouge1"]["p"] == 1.0


def test_a_language_without_a_stemmer_and_an_unsegmented_script_are_said():
    javanese = "ꦲꦏ꧀ꦱꦫꦗꦮꦲꦏ꧀ꦱꦫꦗꦮꦲꦏ꧀ꦱꦫꦗꦮꦲꦏ꧀ꦱꦫꦗꦮꦲꦏ꧀ꦱꦫꦗꦮ"
    warnings = rouge.coverage_warnings(["Kaixo mundua, zer moduz?", javanese, "北京是首都"],
                                       ["ku", "jv", "zh"])
    assert warnings == [
        "1 of 3 texts hold runs of a script written without spaces that no segmenter splits: "
        "they are scored on whole runs",
        "1 of 3 texts are in 'jv', which has no Snowball stemmer: scored on unstemmed words",
        "1 of 3 texts are in 'ku', which has no Snowball stemmer: scored on unstemmed words",
    ]


def test_a_bad_language_in_a_record_is_an_error_naming_it():
    with pytest.raises(ValueError, match="id 7.*not a language tag"):
        evaluation.score_predictions([{"id": 7, "prediction": "a", "reference": "a",
                                       "lang": ["en"]}])
