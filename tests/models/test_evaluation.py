"""ROUGE, 75-byte recall, redundancy, perplexity and the evaluate summary, on golden values."""

from __future__ import annotations

import math

import pytest
from rouge_score import rouge_scorer

from wikisum.core.articlelayout import ArticleSection as S
from wikisum.core.articlelayout import t2t_text
from wikisum.generation import evaluation
from wikisum.generation.evaluation import (
    duc_recall,
    format_table,
    perplexity,
    redundancy,
    rouge,
    rouge_per_example,
    score_predictions,
    truncate_bytes,
)

PREDICTIONS = [
    "The quick brown foxes were jumping over lazy dogs.",
    "Paris is the capital and largest city of France.",
    "a completely unrelated sentence",
]
REFERENCES = [
    "A quick brown fox jumps over the lazy dog.",
    "Paris is the capital of France, and its largest city.",
    "Zurich is a city in Switzerland.",
]


def test_rouge_equals_rouge_score_with_stemming():
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    direct = [scorer.score(r, p) for p, r in zip(PREDICTIONS, REFERENCES, strict=True)]
    got = rouge(PREDICTIONS, REFERENCES)
    assert set(got) == {"rouge1", "rouge2", "rougeL"}
    for name in got:
        for part, attr in (("f", "fmeasure"), ("p", "precision"), ("r", "recall")):
            want = sum(getattr(d[name], attr) for d in direct) / len(direct)
            assert got[name][part] == pytest.approx(want), (name, part)
    per = rouge_per_example(PREDICTIONS, REFERENCES)
    assert per[1]["rouge2"]["r"] == pytest.approx(direct[1]["rouge2"].recall)


def test_rouge_golden_values():
    # Stemming: "running cats" matches "run cat". Precision is over the prediction's tokens.
    got = rouge_per_example(["running cats", "a b c d"], ["run cat", "a b"])
    assert got[0]["rouge1"]["f"] == pytest.approx(1.0)
    assert (got[1]["rouge1"]["p"], got[1]["rouge1"]["r"]) == pytest.approx((0.5, 1.0))
    # ROUGE-L is one LCS over the whole text, newlines ignored (not "rougeLsum", which would
    # match each line separately and give 1.0 here).
    swapped = rouge(["x y\nz w"], ["z w\nx y"])
    assert swapped["rougeL"]["f"] == pytest.approx(0.5)


def test_rouge_rejects_mismatched_inputs():
    with pytest.raises(ValueError, match="2 predictions but 1 references"):
        rouge(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="no predictions"):
        rouge([], [])


def test_truncate_bytes_never_splits_a_character():
    assert truncate_bytes("a" * 80, 75) == "a" * 75
    assert truncate_bytes("é" * 40, 75) == "é" * 37  # 2-byte characters: 74 bytes
    assert truncate_bytes("a" + "日" * 30, 75) == "a" + "日" * 24  # 73 bytes; a 25th needs 76
    assert truncate_bytes("日" * 30, 75) == "日" * 25  # exactly 75 bytes
    assert truncate_bytes("short", 75) == "short"


SURROGATES = [  # (name, text, limit, the prefix kept)
    ("a surrogate after the limit", "abc\udcffdef", 3, "abc"),
    ("a surrogate the limit splits", "ab\udcffcd", 4, "ab"),
    ("a surrogate inside the limit", "a\ud800b", 5, "a\ud800b"),
    ("a surrogate ending the limit", "a\ud800bc", 4, "a\ud800"),
    ("a surrogate beside a multi-byte character", "é\udcffé", 5, "é\udcff"),
]


@pytest.mark.parametrize(("text", "limit", "kept"), [c[1:] for c in SURROGATES],
                         ids=[c[0] for c in SURROGATES])
def test_truncate_bytes_keeps_a_lone_surrogate_as_three_bytes(text, limit, kept):
    assert truncate_bytes(text, limit) == kept


def test_duc_recall_scores_only_the_first_75_bytes():
    reference = "the cat sat on the mat"
    prediction = "cat sat " + "x" * 70 + " mat"  # "mat" starts after byte 75
    got = duc_recall([prediction], [reference])
    assert got["rouge1"] == pytest.approx(2 / 6)  # cat, sat of 6 reference tokens
    assert rouge([prediction], [reference])["rouge1"]["r"] == pytest.approx(3 / 6)
    # A multi-byte character straddling byte 75 is dropped, not scored as a broken token.
    accented = "cat sat " + "x" * 66 + "é mat"  # é is bytes 75-76
    assert truncate_bytes(accented, 75).endswith("x")
    assert duc_recall([accented], [reference])["rouge1"] == pytest.approx(2 / 6)


def test_redundancy_golden_values():
    outputs = ["The cat saw the cat and the Cat.", "A dog barked.", "Rain, rain, RAIN! 42 42 storm"]
    got = redundancy(outputs)
    # 1: cat saw cat cat -> 2 repeats ("the", "and" are function words); 2: none; 3: rain x3
    # -> 2 (the number 42 is not a content word).
    assert got == {"share_repeating": pytest.approx(2 / 3),
                   "repeated_tokens_per_output": pytest.approx(4 / 3)}
    assert redundancy(["the the end"]) == {"share_repeating": 0.0,
                                           "repeated_tokens_per_output": 0.0}
    assert redundancy(["unk storm unk"]) == {"share_repeating": 1.0,
                                             "repeated_tokens_per_output": 1.0}
    assert redundancy(["unk storm unk"], ignore={"unk"})["repeated_tokens_per_output"] == 0.0
    # the language's function words: in German only "hund" repeats; in English "der" too
    assert redundancy(["der Hund und der Hund"], lang="de")["repeated_tokens_per_output"] == 1.0
    assert redundancy(["der Hund und der Hund"])["repeated_tokens_per_output"] == 2.0
    assert redundancy([""]) == {"share_repeating": 0.0, "repeated_tokens_per_output": 0.0}


def test_perplexity():
    assert perplexity(10 * math.log(2.0), 10) == pytest.approx(2.0)
    assert perplexity(0.0, 5) == 1.0
    assert perplexity(1e6, 1) == math.inf
    with pytest.raises(ValueError, match="positive token count"):
        perplexity(1.0, 0)


def records():
    return [
        {"id": 1, "prediction": PREDICTIONS[0], "reference": REFERENCES[0],
         "reference_nll": 3 * math.log(2.0), "reference_tokens": 3},  # per token: ppl 2
        {"id": 2, "prediction": PREDICTIONS[1], "reference": REFERENCES[1],
         "reference_nll": math.log(8.0), "reference_tokens": 1},  # ppl 8
        {"id": 3, "prediction": PREDICTIONS[2], "reference": REFERENCES[2]},  # no NLL
    ]


def test_score_predictions():
    got = score_predictions(records())
    assert got["examples"] == 3
    assert got["rouge"] == rouge(PREDICTIONS, REFERENCES)
    assert got["duc_recall_75b"] == duc_recall(PREDICTIONS, REFERENCES)
    assert got["redundancy"] == redundancy(PREDICTIONS)
    # Corpus-level: exp(6 ln 2 / 4 tokens) = 2 ** 1.5, not the mean of 2 and 8.
    assert got["perplexity"] == pytest.approx(2 ** 1.5)
    assert (got["perplexity_examples"], got["perplexity_tokens"]) == (2, 4)
    assert got["prediction_words"] == pytest.approx((9 + 9 + 4) / 3)
    without = score_predictions([{k: v for k, v in r.items() if "nll" not in k} for r in records()])
    assert without["perplexity"] is None


def test_score_predictions_names_the_bad_record():
    bad = records()
    del bad[1]["reference"]
    with pytest.raises(ValueError, match=r"record 1 \(id 2\) lacks reference"):
        score_predictions(bad)
    with pytest.raises(ValueError, match="no prediction records"):
        score_predictions([])


def test_format_table():
    metrics = score_predictions(records())
    table = format_table(metrics)
    lines = table.splitlines()
    rouge_l = next(line for line in lines if line.startswith("ROUGE-L "))
    assert f"{100 * metrics['rouge']['rougeL']['f']:.2f}" in rouge_l
    assert any(line.startswith("perplexity") and "2.828" in line for line in lines)
    repeating = next(line for line in lines if line.startswith("outputs repeating"))
    assert repeating.endswith("0.0%")  # none of the three outputs repeats a content word
    assert len(lines) < 20


def test_per_example_scores_average_to_the_summary():
    scores = evaluation.per_example_scores(records())
    assert {key for key, _, _ in evaluation.SCORES} == set(scores)
    metrics = score_predictions(records())
    assert sum(scores["rouge.rouge2.f"]) / 3 == pytest.approx(metrics["rouge"]["rouge2"]["f"])
    assert sum(scores["duc_recall_75b.rougeL"]) / 3 == pytest.approx(
        metrics["duc_recall_75b"]["rougeL"])
    assert scores["empty_predictions"] == [0.0, 0.0, 0.0]


def test_score_predictions_with_bootstrap_puts_an_interval_beside_every_score():
    metrics = score_predictions(records(), bootstrap=200, seed=1)
    ci = metrics["intervals"]
    for name in ("rouge1", "rouge2", "rougeL"):
        for part in ("f", "p", "r"):
            low, high = ci["rouge"][name][part]
            assert low <= metrics["rouge"][name][part] <= high
        low, high = ci["duc_recall_75b"][name]
        assert low <= metrics["duc_recall_75b"][name] <= high
    low, high = ci["perplexity"]
    # Between the examples' own perplexities, 2 and 8.
    assert 2.0 - 1e-9 <= low <= metrics["perplexity"] <= high <= 8.0 + 1e-9
    assert metrics["bootstrap"]["resamples"] == 200
    assert score_predictions(records(), bootstrap=200, seed=1) == metrics  # deterministic
    assert "intervals" not in score_predictions(records())
    table = format_table(metrics)
    rouge_l = next(line for line in table.splitlines() if line.startswith("ROUGE-L "))
    f_low, f_high = ci["rouge"]["rougeL"]["f"]
    assert f"[{100 * f_low:.2f}, {100 * f_high:.2f}]" in rouge_l
    assert "95% interval" in table.splitlines()[0]


# Whole articles: records with prediction_sections / reference_sections beside the text.

def article_record(i, predicted, reference, cut=0, **extra):
    record = {"id": i, "title": f"Article {i}", "target": "article",
              "prediction": t2t_text(predicted), "reference": t2t_text(reference),
              "prediction_sections": [{"title": s.title, "text": s.text} for s in predicted],
              "reference_sections": [{"title": s.title, "text": s.text} for s in reference],
              "reference_nll": 2 * math.log(3.0), "reference_tokens": 2, **extra}
    if cut is not None:
        record["reference_cut"] = cut
    return record


def test_rouge_lsum_matches_sentences_in_any_order_where_rouge_l_does_not():
    predicted = [S("", "The cat sat. A dog ran.")]
    reference = [S("", "A dog ran. The cat sat.")]
    assert evaluation.summary_lines(predicted) == "The cat sat.\nA dog ran."
    # ROUGE-L: one LCS over "the cat sat a dog ran" and "a dog ran the cat sat": 3 of 6.
    # ROUGE-Lsum: each reference sentence finds its own match among the lines: 6 of 6.
    metrics = score_predictions([article_record(1, predicted, reference)])
    assert metrics["rouge"]["rougeL"]["f"] == pytest.approx(0.5)
    assert metrics["article"]["rougeLsum"] == {"f": pytest.approx(1.0), "p": pytest.approx(1.0),
                                               "r": pytest.approx(1.0)}


def test_summary_lines_put_each_heading_on_a_line_before_its_sentences():
    sections = [S("", "Bodmin is a town. It is old."), S("Early  history", "Monks came."),
                S("Empty", "")]
    assert evaluation.summary_lines(sections) == (
        "Bodmin is a town.\nIt is old.\nEarly history\nMonks came.\nEmpty")
    # A heading line counts: the same text under another heading loses its title's token.
    got = evaluation.rouge_lsum([S("", "Monks came.")], [S("", ""), S("History", "Monks came.")])
    assert (got["p"], got["r"]) == pytest.approx((1.0, 2 / 3))


def pair_article():
    predicted = [S("", "old stone bridge"), S("Career", "worked at sea"),
                 S("Legacy", "famous painter")]
    reference = [S("", "old stone bridge"), S("career", "worked on land"),
                 S("Awards", "famous painter")]
    return predicted, reference


def test_per_section_rouge_scores_only_the_matched_headings():
    predicted, reference = pair_article()
    means, matched = evaluation.section_rouge(predicted, reference)
    # pairs: the leads (identical) and Career/career (1 of 3 words); Legacy and Awards hold
    # the same words but their headings differ, so they are not scored.
    assert matched == 2
    assert means["rouge1"]["f"] == pytest.approx((1 + 1 / 3) / 2)
    assert means["rouge2"]["f"] == pytest.approx((1 + 0) / 2)
    assert evaluation.section_rouge([], reference) == (
        {name: {"f": 0.0, "p": 0.0, "r": 0.0} for name in evaluation.ROUGE_TYPES}, 0)


def article_records():
    predicted, reference = pair_article()
    return [
        article_record(1, predicted, reference, cut=12),
        # one predicted heading, none in the reference; the section repeats the lead
        article_record(2, [S("", "the river flows north"), S("Course", "the river flows north")],
                       [S("", "a river")], cut=0),
    ]


def test_score_predictions_of_articles_adds_structure_and_per_section_means():
    metrics = score_predictions(article_records())
    article = metrics["article"]
    # heading P/R/F1: 1/2 each for the first; 0 for the second (a heading, none to find)
    assert article["structure"] == {
        "heading_precision": pytest.approx(0.25), "heading_recall": pytest.approx(0.25),
        "heading_f1": pytest.approx(0.25), "sections": pytest.approx((3 + 2) / 2),
        "reference_sections": pytest.approx((3 + 1) / 2),
        "repeated_sections": pytest.approx((0 + 1) / 2)}
    assert article["per_section"]["matched"] == pytest.approx((2 + 1) / 2)
    # second article's only pair, its leads: "the river flows north" against "a river"
    assert article["per_section"]["rouge1"]["r"] == pytest.approx(((1 + 1 / 3) / 2 + 1 / 2) / 2)
    assert (article["references_cut"], article["reference_cut_tokens"],
            article["reference_cut_recorded"]) == (1, 12, 2)
    assert metrics["perplexity"] == pytest.approx(3.0)  # over the article targets, as before
    scores = evaluation.per_example_scores(article_records())
    assert set(scores) == {k for k, _, _ in evaluation.SCORES + evaluation.ARTICLE_SCORES}
    assert scores["article.structure.heading_f1"] == [pytest.approx(0.5), 0.0]

    table = format_table(score_predictions(article_records(), bootstrap=50))
    lines = table.splitlines()
    lsum = next(line for line in lines if line.startswith("ROUGE-Lsum "))
    assert f"{100 * article['rougeLsum']['f']:.2f}" in lsum
    assert any(line.startswith("ROUGE-2 per section") for line in lines)
    heading_f1 = next(line for line in lines if line.startswith("heading F1"))
    assert "25.0% [" in heading_f1
    assert lines[-1] == "perplexity over targets cut to the run's max_target_tokens: 1 of 2 cut"
    unstated = article_records()
    del unstated[1]["reference_cut"]
    assert format_table(score_predictions(unstated)).splitlines()[-1].endswith(
        "1 of 1 cut (not recorded for 1 more)")


def test_lead_metrics_have_no_article_part():
    metrics = score_predictions(records())
    assert set(metrics) == {"examples", "languages", "rouge_warnings", "rouge", "duc_recall_75b",
                            "redundancy",
                            "prediction_words", "reference_words", "empty_predictions",
                            "perplexity", "perplexity_examples", "perplexity_tokens"}
    table = format_table(score_predictions(records(), bootstrap=20))
    assert "Lsum" not in table and "section" not in table and "cut" not in table


def test_a_mix_of_leads_and_articles_is_refused():
    mixed = records() + article_records()[:1]
    with pytest.raises(ValueError, match=r"1 prediction records are whole articles .* and 3 "
                                         r"are leads \(the first: id 1\).* apart"):
        score_predictions(mixed)
    no_reference = article_records()
    del no_reference[0]["reference_sections"]
    with pytest.raises(ValueError, match="id 1 is a whole article but has no reference_sections"):
        score_predictions(no_reference)
    says_article = [dict(records()[0], target="article")]
    with pytest.raises(ValueError, match="whole article but has no prediction_sections"):
        score_predictions(says_article)
    bad_section = article_records()
    bad_section[1]["prediction_sections"][1] = {"title": "Course"}
    with pytest.raises(ValueError, match="id 2: prediction_sections: section 1 is not"):
        score_predictions(bad_section)
    with pytest.raises(ValueError, match="reference_cut is -1"):
        score_predictions([article_records()[0] | {"reference_cut": -1}])
    with pytest.raises(ValueError, match="A holds leads and B whole articles"):
        evaluation.compare(records()[:2], article_records(), bootstrap=10)


def test_compare_articles_tests_the_article_scores():
    a = article_records()
    predicted, reference = pair_article()
    b = [article_record(1, reference, reference, cut=12), a[1]]  # B's first is the reference
    result = evaluation.compare(a, b, bootstrap=50)
    diffs = result["differences"]
    assert {k for k, _, _ in evaluation.ARTICLE_COMPARED} <= set(diffs)
    assert "article.structure.reference_sections" not in diffs
    # heading F1: 0.5 -> 1 on the first, 0 -> 0 on the second: +0.25
    assert diffs["article.structure.heading_f1"]["diff"] == pytest.approx(0.25)
    assert diffs["article.per_section.matched"]["diff"] == pytest.approx(0.5)
    assert diffs["article.rougeLsum.f"]["verdict"].startswith(("B above A", "no clear"))
    table = evaluation.format_comparison(result)
    assert "heading F1 (%)" in table and "ROUGE-Lsum F1" in table
    assert table.splitlines()[-1] == ("B: perplexity over targets cut to the run's "
                                      "max_target_tokens: 1 of 2 cut")
