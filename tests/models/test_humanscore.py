"""`human-eval score`'s statistics (wikisum.generation.humanscore): planted answers with
hand-worked means, intervals and tests, the same numbers against scipy, Krippendorff's alpha
against published and hand-worked values, the checks of the answer files, and the report."""

from __future__ import annotations

import itertools
import json
import math
import os
import random
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from wikisum.core.htmlpage import escape, policy
from wikisum.generation import humanscore as hs
from wikisum.generation import humanscore_report as report
from wikisum.generation import humanstats as st

ROOT = Path(__file__).resolve().parents[2]
DIMS = ["grammaticality", "non_redundancy", "referential_clarity", "focus", "structure_coherence"]
PAGE = "0123456789abcdef0123456789abcdef"
T_0975_5 = 2.5705818366147395  # t(0.975, 5 df), as printed in t tables: 2.571


def make_key(folder: Path, systems=("t-dmca", "tfidf"), quality=None, preference=None,
             rouge=None, page_id=PAGE, kind="both") -> str:
    """A key.json in the shared format. ``quality``: [(item, example, system)];
    ``preference``: [(item, example, a, b)]; ``rouge``: {example: {system: ROUGE-L}}."""
    quality = quality or []
    preference = preference or []
    key = {"format": "wikisum-human-eval-key", "version": 1, "page_id": page_id, "kind": kind,
           "seed": 0, "sample": 3, "systems": {s: f"{s}.jsonl" for s in systems},
           "dimensions": DIMS,
           "examples": sorted({q[1] for q in quality} | {p[1] for p in preference}),
           "quality_items": [{"item": i, "example": e, "system": s} for i, e, s in quality],
           "preference_items": [{"item": i, "example": e, "a": a, "b": b}
                                for i, e, a, b in preference],
           "rouge_l": {json.dumps(e): scores for e, scores in (rouge or {}).items()}}
    path = folder / "key.json"
    path.write_text(json.dumps(key), encoding="utf-8")
    return str(path)


def write_answers(folder: Path, name: str, annotator: str, quality=None, preference=None,
                  page_id=PAGE, exported="2024-05-01T10:00:00Z", **extra) -> str:
    data = {"format": "wikisum-human-eval-answers", "version": 1, "page_id": page_id,
            "annotator": annotator, "exported": exported, "quality": quality or {},
            "preference": preference or {}, **extra}
    path = folder / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


def rate(value: int, **override) -> dict:
    """All five questions rated ``value``, except those overridden."""
    return {d: override.get(d, value) for d in DIMS}


# The planted evaluation: two systems, three examples, two annotators.
QUALITY = [("q-d1", 1, "t-dmca"), ("q-d2", 2, "t-dmca"), ("q-d3", 3, "t-dmca"),
           ("q-f1", 1, "tfidf"), ("q-f2", 2, "tfidf"), ("q-f3", 3, "tfidf")]
PREFERENCE = [("p-1", 1, "t-dmca", "tfidf"), ("p-2", 2, "tfidf", "t-dmca"),
              ("p-3", 3, "t-dmca", "tfidf")]
ROUGE = {1: {"t-dmca": 0.40, "tfidf": 0.20}, 2: {"t-dmca": 0.35, "tfidf": 0.30},
         3: {"t-dmca": 0.10, "tfidf": 0.30}}
ANN1_Q = {"q-d1": 5, "q-d2": 4, "q-d3": 5, "q-f1": 2, "q-f2": 3, "q-f3": 2}
ANN2_Q = {"q-d1": 4, "q-d2": 4, "q-d3": 3, "q-f1": 2, "q-f2": 1, "q-f3": 3}
ANN1_P = {"p-1": "A", "p-2": "B", "p-3": "none"}  # t-dmca, t-dmca, tie
ANN2_P = {"p-1": "A", "p-2": "B", "p-3": "A"}  # t-dmca, t-dmca, t-dmca (lower ROUGE-L)


@pytest.fixture
def planted(tmp_path):
    key = make_key(tmp_path, quality=QUALITY, preference=PREFERENCE, rouge=ROUGE)
    a = write_answers(tmp_path, "ann1.json", "Ann",
                      {i: rate(v) for i, v in ANN1_Q.items()}, ANN1_P)
    b = write_answers(tmp_path, "ann2.json", "Bob",
                      {i: rate(v) for i, v in ANN2_Q.items()}, ANN2_P)
    return key, [a, b]


# ---------------------------------------------------------------------------------- Table 5


def test_quality_means_intervals_and_welch_by_hand(planted):
    key, answers = planted
    result = hs.score_answers(answers, key)
    assert result["against"] == "t-dmca"  # the key's first system
    dmca = result["quality"]["systems"]["t-dmca"]["grammaticality"]
    tfidf = result["quality"]["systems"]["tfidf"]["grammaticality"]
    # t-dmca pooled: 5 4 5 4 4 3 -> mean 25/6; squared deviations sum 17/6, s^2 = 17/30
    assert dmca["n"] == 6 and dmca["items"] == 3
    assert dmca["mean"] == pytest.approx(25 / 6)
    assert dmca["sd"] == pytest.approx(math.sqrt(17 / 30))
    half = T_0975_5 * math.sqrt(17 / 30) / math.sqrt(6)  # = 0.790
    assert (dmca["low"], dmca["high"]) == pytest.approx((25 / 6 - half, 25 / 6 + half))
    assert half == pytest.approx(0.78999, abs=1e-5)
    # tfidf pooled: 2 3 2 2 1 3 -> mean 13/6, s^2 = 17/30 too
    assert tfidf["mean"] == pytest.approx(13 / 6)
    # Welch, tfidf against t-dmca: difference -2, se^2 = 2 * (17/30) / 6 = 17/90,
    # df = (2a)^2 / (2 a^2 / 5) = 10 with equal variances and sizes
    w = result["quality"]["welch"]["tfidf"]["grammaticality"]
    assert w["difference"] == pytest.approx(-2.0)
    assert w["t"] == pytest.approx(-2 / math.sqrt(17 / 90))
    assert w["df"] == pytest.approx(10.0)
    assert w["p"] == pytest.approx(2 * stats.t.sf(2 / math.sqrt(17 / 90), 10))
    assert w["p"] == pytest.approx(0.000977, abs=2e-6)  # below 0.001: the paper's mark
    assert w["stars"] == "**"
    assert "t-dmca" not in result["quality"]["welch"]  # not tested against itself
    scipy_result = stats.ttest_ind([2, 3, 2, 2, 1, 3], [5, 4, 5, 4, 4, 3], equal_var=False)
    assert w["t"] == pytest.approx(scipy_result.statistic)
    assert w["p"] == pytest.approx(scipy_result.pvalue)


def test_against_picks_the_reference_system(planted):
    key, answers = planted
    result = hs.score_answers(answers, key, against="tfidf")
    w = result["quality"]["welch"]["t-dmca"]["focus"]
    assert w["against"] == "tfidf" and w["difference"] == pytest.approx(2.0)
    with pytest.raises(hs.HumanEvalError, match=r"'seq2seq' is not a system of the key "
                                                r"\(t-dmca, tfidf\)"):
        hs.score_answers(answers, key, against="seq2seq")


def test_welch_matches_scipy_and_a_hand_worked_case():
    # x: mean 4, s^2 = 1; y: mean 1.5, s^2 = 1/3. se^2 = 1/3 + 1/12 = 5/12, t = 2.5 / sqrt(5/12)
    # = sqrt(15); df = (5/12)^2 / ((1/3)^2 / 2 + (1/12)^2 / 3) = 3 exactly. With 3 df the t
    # distribution has a closed form: P(|T| > t) = 1 - (2/pi)(u / (1 + u^2) + atan(u)),
    # u = t / sqrt(3) = sqrt(5).
    w = st.welch([3, 4, 5], [1, 1, 2, 2])
    assert w["t"] == pytest.approx(math.sqrt(15)) and w["df"] == pytest.approx(3.0)
    u = math.sqrt(5)
    assert w["p"] == pytest.approx(1 - (2 / math.pi) * (u / (1 + u * u) + math.atan(u)))
    assert w["p"] == pytest.approx(0.030466, abs=1e-6) and w["stars"] == "*"
    rng = np.random.default_rng(0)
    for n1, n2 in ((5, 9), (30, 12), (2, 2)):
        x, y = rng.integers(1, 6, n1), rng.normal(3, 2, n2)
        ours, ref = st.welch(list(x), list(y)), stats.ttest_ind(x, y, equal_var=False)
        assert ours["t"] == pytest.approx(ref.statistic)
        assert ours["df"] == pytest.approx(ref.df)
        assert ours["p"] == pytest.approx(ref.pvalue)


def test_welch_and_intervals_where_undefined():
    assert st.welch([3], [1, 2])["reason"] == "needs two or more ratings on each side (has 1 and 2)"
    constant = st.welch([4, 4, 4], [2, 2])
    assert constant["t"] is None and constant["difference"] == 2 and "same" in constant["reason"]
    assert st.mean_interval([]) == {"mean": None, "sd": None, "n": 0, "low": None, "high": None}
    assert st.mean_interval([3])["low"] is None
    assert st.mean_interval([3, 3]) == {"mean": 3.0, "sd": 0.0, "n": 2, "low": 3.0, "high": 3.0}


# ---------------------------------------------------------------------------------- Table 6


def test_preference_counts_map_sides_through_the_key(planted):
    key, answers = planted
    result = hs.score_answers(answers, key)
    (pair,) = result["preference"]["pairs"]
    # p-2 shows tfidf on the left: "B" there is t-dmca. Ann: t-dmca, t-dmca, tie;
    # Bob: t-dmca, t-dmca, t-dmca -> 5 / 0 / 1; sign test 2 * (1/2)^5 = 0.0625
    assert pair["pair"] == "t-dmca vs tfidf"
    assert (pair["prefer_x"], pair["prefer_y"], pair["no_preference"], pair["n"]) == (5, 0, 1, 5)
    assert pair["p"] == pytest.approx(0.0625)


def test_sign_test_matches_binomtest_and_hand_worked_cases():
    assert st.sign_test(1, 6) == pytest.approx(2 * (1 + 6) / 64)  # 0.21875
    assert st.sign_test(0, 8) == pytest.approx(2 / 256)
    assert st.sign_test(3, 6) == 1.0 and st.sign_test(0, 0) is None
    for n in range(1, 21):
        for k in range(n + 1):
            assert st.sign_test(k, n) == pytest.approx(stats.binomtest(k, n, 0.5).pvalue)


def test_pairs_are_unordered_and_in_key_order(tmp_path):
    prefs = [("p-1", 1, "c", "a"), ("p-2", 1, "a", "c"), ("p-3", 1, "b", "a")]
    key = make_key(tmp_path, systems=("a", "b", "c"), preference=prefs, kind="preference")
    ans = write_answers(tmp_path, "x.json", "X", preference={"p-1": "A", "p-2": "A",
                                                            "p-3": "none"})
    result = hs.score_answers([ans], key)
    rows = {r["pair"]: r for r in result["preference"]["pairs"]}
    assert list(rows) == ["a vs c", "a vs b"]  # in the order of the key's items
    assert (rows["a vs c"]["prefer_x"], rows["a vs c"]["prefer_y"]) == (1, 1)
    assert rows["a vs b"]["n"] == 0 and rows["a vs b"]["p"] is None
    assert rows["a vs b"]["no_preference"] == 1
    assert result["quality"] is None and result["agreement"]["quality"] is None


# ---------------------------------------------------------------------------------- agreement


def _units(rows):
    """Krippendorff's reliability data (annotators x items, None = not answered) as units."""
    return [[row[j] for row in rows if row[j] is not None] for j in range(len(rows[0]))]


def test_alpha_matches_krippendorff_2011():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section E: four
    # observers, twelve units, values 1-5 with missing data. Published: nominal 0.743,
    # ordinal 0.815 (interval 0.849, ratio 0.797).
    n = None
    data = [[1, 2, 3, 3, 2, 1, 4, 1, 2, n, n, n],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, n, 3],
            [n, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, n],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, n]]
    units = _units(data)
    assert round(st.krippendorff_alpha(units, "nominal")["alpha"], 3) == 0.743
    ordinal = st.krippendorff_alpha(units, "ordinal", values=hs.SCALE)
    assert round(ordinal["alpha"], 3) == 0.815
    assert ordinal["items"] == 11 and ordinal["values"] == 40  # unit 12 has one value


def test_alpha_matches_wikipedias_example():
    # Wikipedia, "Krippendorff's alpha", "A computational example": three coders, fifteen
    # units; nominal alpha = 0.691 (exactly 56/81).
    n = None
    data = [[n, n, n, n, n, 3, 4, 1, 2, 1, 1, 3, 3, n, 3],
            [1, n, 2, 1, 3, 3, 4, 3, n, n, n, n, n, n, n],
            [n, n, 2, 1, 3, 4, 4, n, 2, 1, 1, 3, 3, n, 4]]
    assert st.krippendorff_alpha(_units(data), "nominal")["alpha"] == pytest.approx(56 / 81)


def test_alpha_by_hand_from_the_coincidence_matrix():
    # Units (1,1), (2,3), (3,3): o11 = 2, o23 = o32 = 1, o33 = 2; n1 = 2, n2 = 1, n3 = 3, n = 6.
    units = [[1, 1], [2, 3], [3, 3]]
    o = st.coincidences(units, [1, 2, 3])
    assert o.tolist() == [[2, 0, 0], [0, 0, 1], [0, 1, 2]]
    # ordinal delta^2: d12 = (3 - 1.5)^2 = 2.25, d23 = (4 - 2)^2 = 4, d13 = (6 - 2.5)^2 = 12.25
    # observed sum o*d = 2 * 4 = 8; expected sum n_c n_k d = 2 * (2*1*2.25 + 1*3*4 + 2*3*12.25)
    # = 180; alpha = 1 - 5 * 8 / 180 = 7/9
    assert st.krippendorff_alpha(units, "ordinal")["alpha"] == pytest.approx(7 / 9)
    # nominal: observed 2, expected 2 * (2 + 3 + 6) = 22; alpha = 1 - 5 * 2 / 22 = 6/11
    assert st.krippendorff_alpha(units, "nominal")["alpha"] == pytest.approx(6 / 11)


def test_alpha_is_none_with_a_reason():
    lonely = st.krippendorff_alpha([[3], [4]], "ordinal")
    assert lonely["alpha"] is None and "two or more annotators" in lonely["reason"]
    same = st.krippendorff_alpha([[4, 4], [4, 4, 4]], "ordinal")
    assert same["alpha"] is None and "same value" in same["reason"]
    assert st.krippendorff_alpha([[1, 1], [2, 2]], "nominal")["alpha"] == 1.0


def _pairwise_alpha(units, delta):
    """Alpha as 1 - D_o / D_e over pairs of values (Krippendorff 2011, section A), without
    the coincidence matrix: an independent check."""
    units = [u for u in units if len(u) >= 2]
    values = [v for u in units for v in u]
    n = len(values)
    d_o = sum(delta(a, b) / (len(u) - 1) for u in units
              for i, a in enumerate(u) for j, b in enumerate(u) if i != j) / n
    d_e = sum(delta(a, b) for i, a in enumerate(values) for j, b in enumerate(values)
              if i != j) / (n * (n - 1))
    return 1 - d_o / d_e


def test_planted_agreement(planted):
    key, answers = planted
    result = hs.score_answers(answers, key)
    # Preference units p-1 (A, A), p-2 (B, B), p-3 (none, A): n_A = 3, n_B = 2, n_none = 1;
    # observed 2, expected 2 * (3*2 + 3*1 + 2*1) = 22; alpha = 1 - 5 * 2 / 22 = 6/11
    pref = result["agreement"]["preference"]
    assert pref["alpha"] == pytest.approx(6 / 11)
    assert (pref["items"], pref["values"], pref["annotators"]) == (3, 6, 2)
    units = [[ANN1_Q[i], ANN2_Q[i]] for i in ANN1_Q]
    values = [v for u in units for v in u]
    n_g = {g: values.count(g) for g in hs.SCALE}

    def ordinal(a, b):
        lo, hi = min(a, b), max(a, b)
        return (sum(n_g[g] for g in range(lo, hi + 1)) - (n_g[a] + n_g[b]) / 2) ** 2

    for d in DIMS:
        entry = result["agreement"]["quality"][d]
        assert entry["metric"] == "ordinal" and entry["items"] == 6
        assert entry["alpha"] == pytest.approx(_pairwise_alpha(units, ordinal))


# ---------------------------------------------------------------------------------- ROUGE-L


def test_preference_against_rouge_l(planted):
    key, answers = planted
    c = hs.score_answers(answers, key)["rouge_correlation"]
    # judgments with a preference: x = ROUGE-L(a) - ROUGE-L(b), y = +1 (a) / -1 (b)
    x = [0.2, -0.05, 0.2, -0.05, -0.2]
    y = [1, -1, 1, -1, 1]
    assert (c["n"], c["ties_excluded"]) == (5, 1)
    assert (c["higher_rouge_preferred"], c["lower_rouge_preferred"]) == (4, 1)
    assert c["share"] == pytest.approx(0.8) and c["share_p"] == pytest.approx(0.375)
    ref = stats.pointbiserialr(y, x)
    assert c["r"] == pytest.approx(ref.statistic) and c["p"] == pytest.approx(ref.pvalue)


def test_point_biserial_matches_scipy_and_says_when_undefined():
    rng = np.random.default_rng(1)
    y = rng.choice([-1.0, 1.0], 40)
    x = 0.1 * y + rng.normal(0, 0.2, 40)
    ours, ref = st.point_biserial(list(x), list(y)), stats.pointbiserialr(y, x)
    assert ours["r"] == pytest.approx(ref.statistic) and ours["p"] == pytest.approx(ref.pvalue)
    assert "all equal" in st.point_biserial([0.1, 0.1, 0.1], [1, -1, 1])["reason"]
    assert "same side" in st.point_biserial([0.1, 0.2, 0.3], [1, 1, 1])["reason"]
    assert st.point_biserial([0.1, 0.2], [1, -1])["r"] is None


def test_judgments_without_rouge_l_are_left_out_of_the_correlation_only(tmp_path):
    key = make_key(tmp_path, preference=PREFERENCE, rouge={1: ROUGE[1]}, kind="preference")
    ans = write_answers(tmp_path, "a.json", "Ann", preference=ANN2_P)
    result = hs.score_answers([ans], key)
    assert result["rouge_correlation"]["n"] == 1
    assert result["skipped"]["no_rouge_l"]["count"] == 2
    assert result["preference"]["pairs"][0]["n"] == 3


# ---------------------------------------------------------------------------------- reading


def test_answers_from_another_page_are_refused(planted, tmp_path):
    key, _ = planted
    other = write_answers(tmp_path, "other.json", "Eve", page_id="f" * 32)
    with pytest.raises(hs.HumanEvalError) as error:
        hs.score_answers([other], key)
    message = str(error.value)
    assert other in message and "f" * 32 in message and PAGE in message
    assert "another page" in message


@pytest.mark.parametrize("content, complaint", [
    ("{not json", "is not valid JSON"),
    ("[1, 2]", "is not a JSON object but list"),
    ('{"format": "something-else", "version": 1}', "is not a wikisum human-eval answers file"),
    ('{"format": "wikisum-human-eval-answers", "version": 7}', "has version 7"),
    (json.dumps({"format": "wikisum-human-eval-answers", "version": 1, "page_id": PAGE,
                 "annotator": "  "}), "has no annotator name"),
    (json.dumps({"format": "wikisum-human-eval-answers", "version": 1, "page_id": PAGE,
                 "annotator": "Ann", "quality": []}), "'quality' is not a JSON object"),
    (json.dumps({"format": "wikisum-human-eval-answers", "version": 1, "page_id": PAGE,
                 "annotator": "Ann", "quality": {"q-d1": 5}}),
     "the quality answer to 'q-d1' is not a JSON object"),
    ('{"format": "wikisum-human-eval-answers", "format": "x"}', "repeated key(s) 'format'"),
])
def test_malformed_files_are_errors_naming_the_file(planted, tmp_path, content, complaint):
    key, _ = planted
    path = tmp_path / "bad.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(hs.HumanEvalError) as error:
        hs.score_answers([str(path)], key)
    assert str(path) in str(error.value) and complaint in str(error.value)


def test_missing_file_and_bad_key_are_errors(planted, tmp_path):
    key, answers = planted
    with pytest.raises(hs.HumanEvalError, match="cannot read answers file"):
        hs.score_answers([str(tmp_path / "nope.json")], key)
    with pytest.raises(hs.HumanEvalError, match="no answer files"):
        hs.score_answers([], key)
    bad_key = tmp_path / "sub"
    bad_key.mkdir()
    broken = make_key(bad_key, quality=[("q-1", 1, "seq2seq")])
    with pytest.raises(hs.HumanEvalError, match=r"quality_items\[0\] is not an item of a system"):
        hs.score_answers(answers, broken)


def test_unknown_items_and_out_of_range_values_are_counted_and_skipped(planted, tmp_path):
    key, _ = planted
    quality = {"q-d1": rate(5, focus=6, grammaticality=0), "q-d2": rate(4, non_redundancy="4"),
               "q-d3": {**rate(3, structure_coherence=3.0), "fluency": 4},
               "q-f1": rate(2, referential_clarity=True), "q-zzz": rate(3)}
    preference = {"p-1": "A", "p-2": "C", "p-3": None, "p-zzz": "B"}
    ans = write_answers(tmp_path, "messy.json", "Ann", quality, preference)
    result = hs.score_answers([ans], key)
    skipped = result["skipped"]
    assert skipped["unknown_item"]["count"] == 2  # q-zzz, p-zzz
    assert set(skipped["unknown_item"]["examples"]) == {"q-zzz", "p-zzz"}
    # 6, 0, "4", 3.0, True, "C", None
    assert skipped["out_of_range"]["count"] == 7
    assert skipped["out_of_range"]["files"] == {ans: 7}
    assert skipped["unknown_dimension"]["count"] == 1  # fluency
    # every quality item with a rating skipped is now incomplete: q-d1 (2 missing), q-d2,
    # q-d3, q-f1 (1 each)
    assert skipped["incomplete_item"]["count"] == 4 and skipped["incomplete_item"]["missing"] == 5
    systems = result["quality"]["systems"]
    assert systems["t-dmca"]["focus"]["n"] == 2 and systems["t-dmca"]["grammaticality"]["n"] == 2
    assert systems["t-dmca"]["referential_clarity"]["n"] == 3
    assert result["preference"]["pairs"][0]["n"] == 1
    assert result["annotators"][0]["quality_ratings"] == 4 * 5 - 5
    for reason in skipped:
        assert reason in report.to_markdown(result)


def test_incomplete_items_use_the_questions_answered(planted, tmp_path):
    key, _ = planted
    ans = write_answers(tmp_path, "part.json", "Ann",
                        {"q-d1": {"grammaticality": 5, "focus": 3}, "q-d2": rate(4)})
    result = hs.score_answers([ans], key)
    dmca = result["quality"]["systems"]["t-dmca"]
    assert dmca["grammaticality"]["mean"] == pytest.approx(4.5) and dmca["focus"]["n"] == 2
    assert dmca["non_redundancy"]["n"] == 1 and dmca["non_redundancy"]["mean"] == 4
    entry = result["skipped"]["incomplete_item"]
    assert entry["count"] == 1 and entry["missing"] == 3 and entry["examples"] == ["q-d1"]
    assert "are used" in entry["text"]


def test_a_second_file_of_an_annotator_keeps_the_latest_export(planted, tmp_path):
    key, _ = planted
    newer = write_answers(tmp_path, "ann-new.json", "Ann", {"q-d1": rate(5)},
                          exported="2024-05-02T09:00:00+02:00")
    older = write_answers(tmp_path, "ann-old.json", " Ann ", {"q-d1": rate(1), "q-zzz": rate(1)},
                          exported="2024-05-01T23:00:00Z")
    result = hs.score_answers([newer, older], key)
    assert [a["file"] for a in result["annotators"]] == [newer]
    assert result["quality"]["systems"]["t-dmca"]["focus"]["mean"] == 5
    dup = result["skipped"]["duplicate_annotator"]
    assert dup["count"] == 1 and dup["files"] == {older: 1}
    assert "unknown_item" not in result["skipped"]  # the skipped file counts nothing else
    # without readable times the later file on the command line wins
    first = write_answers(tmp_path, "one.json", "Bo", {"q-d1": rate(2)}, exported="soon")
    second = write_answers(tmp_path, "two.json", "Bo", {"q-d1": rate(3)}, exported="soon")
    again = hs.score_answers([first, second], key)
    assert again["annotators"][0]["file"] == second
    assert again["quality"]["systems"]["t-dmca"]["focus"]["mean"] == 3


def test_one_annotator_gives_no_alpha(planted):
    key, answers = planted
    result = hs.score_answers(answers[:1], key)
    entry = result["agreement"]["quality"]["focus"]
    assert entry["alpha"] is None and "two or more annotators" in entry["reason"]
    assert "two or more annotators" in report.to_markdown(result)


# ---------------------------------------------------------------------------------- report


def realistic(folder: Path, annotators: int = 3, examples: int = 12, seed: int = 0):
    """A generated evaluation like a real one: three systems, every example rated for each,
    every pair compared, each annotator answering most items, better systems rated higher."""
    rng = random.Random(seed)
    systems = ["t-dmca", "tfidf", "seq2seq"]
    level = {"t-dmca": 4.0, "tfidf": 3.3, "seq2seq": 2.4}
    quality, preference, rouge = [], [], {}
    for e in range(examples):
        rouge[e] = {s: round(0.1 * level[s] + rng.uniform(-0.1, 0.1), 3) for s in systems}
        for s in systems:
            quality.append((f"q-{e}-{s}", e, s))
        for a, b in itertools.combinations(systems, 2):
            left, right = (a, b) if rng.random() < 0.5 else (b, a)
            preference.append((f"p-{e}-{a}-{b}", e, left, right))
    key = make_key(folder, systems=systems, quality=quality, preference=preference, rouge=rouge)
    paths = []
    for k in range(annotators):
        q = {item: {d: max(1, min(5, round(rng.gauss(level[s], 0.8)))) for d in DIMS}
             for item, _, s in quality if rng.random() < 0.9}
        p = {}
        for item, e, a, b in preference:
            gap = rouge[e][a] - rouge[e][b]
            p[item] = "none" if abs(gap) < 0.02 else ("A" if gap + rng.gauss(0, 0.05) > 0
                                                       else "B")
        paths.append(write_answers(folder, f"annotator{k + 1}.json", f"annotator {k + 1}", q, p))
    return key, paths


def test_report_files_and_summary(tmp_path):
    key, answers = realistic(tmp_path)
    result = hs.score_answers(answers, key)
    paths = hs.write_report(result, str(tmp_path / "out"))
    assert set(paths) == {"html", "markdown", "json"}
    assert json.loads(Path(paths["json"]).read_text()) == result
    md = Path(paths["markdown"]).read_text()
    assert "## Linguistic quality (Table 5)" in md and "| t-dmca vs tfidf |" in md
    assert "Welch's two-sample t-test" in md and "Krippendorff's alpha" in md
    summary = hs.format_summary(result)
    lines = summary.splitlines()
    row = next(line for line in lines if line.startswith("seq2seq"))
    mean = result["quality"]["systems"]["seq2seq"]["grammaticality"]["mean"]
    assert f"{mean:.2f}" in row and "**" in row  # far below t-dmca
    assert any("t-dmca vs tfidf:" in line for line in lines)


def test_report_escapes_every_string(tmp_path):
    evil = "<script>alert(1)</script>"
    key = make_key(tmp_path, systems=(evil, "b<img src=x onerror=alert(2)>"),
                   quality=[("q-1", 1, evil)], kind="quality")
    ans = write_answers(tmp_path, "a.json", "<b>Ann</b>", {"q-1": rate(4)})
    html = report.to_html(hs.score_answers([ans], key))
    assert evil not in html and "<img" not in html and "<b>Ann" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "&lt;b&gt;Ann" in html
    assert escape(policy(css=report.CSS)) in html  # script-src 'none': no script on this page
    md = report.to_markdown(hs.score_answers([ans], key))
    assert "<script" not in md and "<img" not in md and "<b>" not in md
    assert "&lt;script>alert(1)&lt;/script>" in md


def test_markdown_escapes_the_significance_marks(planted):
    key, answers = planted
    md = report.to_markdown(hs.score_answers(answers, key))
    assert "| tfidf | 2.17 [1.38, 2.96]\\*\\* |" in md  # not bold: the marks stay visible


def test_report_renders_in_a_browser(browser, tmp_path, monkeypatch):
    """The report in headless Chromium: every table visible, nothing requested besides the
    file, no console error (a CSP violation is one). With UPDATE_DOCS_SCREENSHOTS=1 it also
    writes docs/human-eval-scores.png."""
    monkeypatch.chdir(tmp_path)  # file names in the report as a user types them
    key, answers = realistic(Path("."))
    result = hs.score_answers(answers, key)
    html = Path(hs.write_report(result, "scores")["html"]).resolve()
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    requests, messages = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: messages.append((m.type, m.text)))
    page.on("pageerror", lambda e: messages.append(("pageerror", str(e))))
    page.goto(html.as_uri())
    tables = page.locator("table")
    assert tables.count() == 6  # Table 5, Welch, Table 6, alpha, ROUGE-L, annotators
    assert all(tables.nth(i).is_visible() for i in range(tables.count()))
    assert tables.nth(0).locator("tbody tr td").first.inner_text() == "t-dmca"
    assert tables.nth(2).locator("tbody tr td").first.inner_text() == "t-dmca vs tfidf"
    # the stylesheet applied (a refused one leaves the browser's default: no borders)
    border = page.eval_on_selector("td", "e => getComputedStyle(e).borderTopStyle")
    assert border == "solid"
    assert page.locator("h1").inner_text() == "Human evaluation scores"
    screenshot = tmp_path / "scores.png"
    page.screenshot(path=str(screenshot))
    if os.environ.get("UPDATE_DOCS_SCREENSHOTS"):
        page.screenshot(path=str(ROOT / "docs" / "human-eval-scores.png"))
    page.close()
    assert requests == [html.as_uri()]
    # Chromium notes that a <meta> policy cannot set frame-ancestors (core.htmlpage.policy
    # names it for static hosts that copy the meta into a header); any other error, a refused
    # style or script above all, fails.
    errors = [m for m in messages if m[0] in ("error", "pageerror")
              and "'frame-ancestors' is ignored when delivered via a <meta>" not in m[1]]
    assert not errors, errors
    assert screenshot.read_bytes()[:4] == b"\x89PNG"
