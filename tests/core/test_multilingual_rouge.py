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


# ------------------------------------------------------------------------------------------
# ROUGE-L's longest common subsequence, bit-parallel: rouge-score's figures, in linear time.


def _random_pair(seed: int, alphabet: int, longest: int) -> tuple[list[int], list[int]]:
    import random

    rng = random.Random(seed)
    return ([rng.randrange(alphabet) for _ in range(rng.randint(0, longest))],
            [rng.randrange(alphabet) for _ in range(rng.randint(0, longest))])


LCS_FAMILIES = [  # (name, alphabet size, longest sequence, pairs drawn)
    ("two symbols, short", 2, 12, 400),
    ("two symbols, long (many carries)", 2, 300, 40),
    ("few symbols, long", 4, 400, 40),
    ("many symbols, long", 50, 500, 40),
    ("longer than a machine word either way", 3, 130, 200),
]


@pytest.mark.parametrize(("alphabet", "longest", "pairs"), [c[1:] for c in LCS_FAMILIES],
                         ids=[c[0] for c in LCS_FAMILIES])
def test_lcs_length_equals_rouge_scores_table(alphabet, longest, pairs):
    for seed in range(pairs):
        a, b = _random_pair(seed, alphabet, longest)
        want = rouge_scorer._lcs_table(a, b)[-1][-1] if a and b else 0
        assert rouge.lcs_length(a, b) == want, (seed, a, b)
        assert rouge.lcs_length(b, a) == want


LCS_EDGES = [  # (name, a, b, the LCS length)
    ("both empty", [], [], 0),
    ("one empty", [], ["x"], 0),
    ("identical", list("abcabc"), list("abcabc"), 6),
    ("disjoint", list("abc"), list("xyz"), 0),
    ("reversed", list("abcd"), list("dcba"), 1),
    ("one inside a long other", list("ace"), list("abcde" * 100), 3),
]


@pytest.mark.parametrize(("a", "b", "length"), [c[1:] for c in LCS_EDGES],
                         ids=[c[0] for c in LCS_EDGES])
def test_lcs_length_of_edge_cases(a, b, length):
    assert rouge.lcs_length(a, b) == rouge.lcs_length(b, a) == length


SCORED = [  # (name, language, words drawn from, the longest reference and prediction)
    ("English with stems and digits", "en",
     "the cat sat on mats running runs dogs dog houses a of 12 über".split(), 60, 300),
    ("English, one side often empty", "en", ["the", "cat", "--"], 3, 5),
    ("Russian words", "ru", "кошка сидела на ковре кошки собака".split(), 40, 200),
]


@pytest.mark.parametrize(("lang", "vocabulary", "reference_words", "prediction_words"),
                         [c[1:] for c in SCORED], ids=[c[0] for c in SCORED])
def test_scores_equal_rouge_scores_own_scorer(lang, vocabulary, reference_words,
                                              prediction_words):
    import random

    rng = random.Random(0)
    types = ("rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum")
    theirs = rouge_scorer.RougeScorer(list(types), tokenizer=rouge.tokenizer(lang))
    ours = rouge.scorer(lang, types)
    for _ in range(200):
        reference = " ".join(rng.choice(vocabulary)
                             for _ in range(rng.randint(0, reference_words)))
        prediction = " ".join(rng.choice(vocabulary)
                              for _ in range(rng.randint(0, prediction_words)))
        assert ours.score(reference, prediction) == theirs.score(reference, prediction)


LONG_SCRIPT = """
import random, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, ({limit} << 20, {limit} << 20))
from wikisum.core import rouge
rng = random.Random(0)
vocabulary = [f"w{{i}}ord" for i in range(5000)]
prediction = " ".join(rng.choice(vocabulary) for _ in range({words}))
reference = " ".join(rng.choice(vocabulary) for _ in range(200))
start = time.perf_counter()
scores = rouge.score(reference, prediction, "en")
print(round(time.perf_counter() - start, 2), scores["rougeL"]["r"])
"""


def test_a_long_prediction_is_scored_in_bounded_time_and_memory():
    # a million words against 200: a table of LCS lengths would hold 200 million cells
    # (minutes, and GBs beyond the limit); the bit-parallel LCS scores it in seconds
    import subprocess
    import sys

    script = LONG_SCRIPT.format(limit=1024, words=1_000_000)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=90, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    seconds, recall = done.stdout.split()
    assert float(seconds) < 30 and 0 < float(recall) <= 1
