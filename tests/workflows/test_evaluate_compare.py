"""`wikisum evaluate`: bootstrap intervals, the few-examples warning and `--compare A B`, on
synthetic predictions files."""

from __future__ import annotations

import json
import random

import pytest

from wikisum.core.articlelayout import ArticleSection as S
from wikisum.core.articlelayout import t2t_text
from wikisum.workflows import cli

WORDS = "the cat sat on a mat dog ran far away big red house tree river stone".split()


def write_systems(tmp_path, n=120, seed=0):
    """A: random words; B: half of the reference then random words (clearly better ROUGE)."""
    rng = random.Random(seed)
    a, b = [], []
    for i in range(n):
        reference = " ".join(rng.choices(WORDS, k=10))
        a.append({"id": f"ex{i}", "prediction": " ".join(rng.choices(WORDS, k=8)),
                  "reference": reference, "reference_nll": 4.0 + rng.random(),
                  "reference_tokens": 3})
        b.append({"id": f"ex{i}", "prediction": " ".join(reference.split()[:5]
                                                         + rng.choices(WORDS, k=3)),
                  "reference": reference})
    return a, b


def save(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def test_evaluate_stores_and_prints_an_interval_for_every_score(tmp_path, capsys):
    a, _ = write_systems(tmp_path)
    preds = save(tmp_path / "a.jsonl", a)
    assert cli.main(["evaluate", "--preds", preds, "--bootstrap", "300", "--seed", "2"]) == 0
    out, err = capsys.readouterr()
    metrics = json.loads((tmp_path / "a.metrics.json").read_text())
    low, high = metrics["intervals"]["rouge"]["rouge1"]["f"]
    assert low < metrics["rouge"]["rouge1"]["f"] < high
    low, high = metrics["intervals"]["perplexity"]
    assert low < metrics["perplexity"] < high
    assert metrics["bootstrap"] == {"resamples": 300, "level": 0.95, "seed": 2,
                                    "method": "percentile bootstrap over examples"}
    assert f"[{100 * metrics['intervals']['rouge']['rouge1']['f'][0]:.2f}," in out
    assert metrics["warnings"] == [] and "warning" not in err  # 120 examples
    # Same seed, same numbers.
    again = tmp_path / "again.json"
    assert cli.main(["evaluate", "--preds", preds, "--bootstrap", "300", "--seed", "2",
                     "--out", str(again)]) == 0
    assert json.loads(again.read_text())["intervals"] == metrics["intervals"]


def test_evaluate_warns_when_few_examples_are_scored(tmp_path, capsys):
    a, _ = write_systems(tmp_path, n=20)
    assert cli.main(["evaluate", "--preds", save(tmp_path / "a.jsonl", a)]) == 0
    err = capsys.readouterr().err
    assert "warning: only 20 examples scored (fewer than 100)" in err
    metrics = json.loads((tmp_path / "a.metrics.json").read_text())
    assert "only 20 examples" in metrics["warnings"][0]


def test_bootstrap_zero_leaves_intervals_out(tmp_path, capsys):
    a, _ = write_systems(tmp_path, n=10)
    assert cli.main(["evaluate", "--preds", save(tmp_path / "a.jsonl", a),
                     "--bootstrap", "0"]) == 0
    assert "intervals" not in json.loads((tmp_path / "a.metrics.json").read_text())
    assert "interval" not in capsys.readouterr().out


def test_compare_finds_the_better_system_and_pairs_by_id(tmp_path, capsys):
    a, b = write_systems(tmp_path)
    random.Random(1).shuffle(b)  # pairing is by id, not by line
    path_a, path_b = save(tmp_path / "a.jsonl", a), save(tmp_path / "b.jsonl", b)
    assert cli.main(["evaluate", "--compare", path_a, path_b, "--bootstrap", "500"]) == 0
    out = capsys.readouterr().out
    result = json.loads((tmp_path / "b.compare.json").read_text())
    rouge2 = result["differences"]["rouge.rouge2.f"]
    assert rouge2["diff"] > 0.2 and rouge2["low"] > 0 and rouge2["p_value"] < 0.01
    assert rouge2["diff"] == pytest.approx(result["b"]["rouge"]["rouge2"]["f"]
                                           - result["a"]["rouge"]["rouge2"]["f"])
    assert rouge2["verdict"].startswith("B above A: +")
    line = next(x for x in out.splitlines() if x.startswith("ROUGE-2 F1"))
    assert rouge2["verdict"] in line
    assert "reference_words" not in result["differences"]
    assert result["test"]["resamples"] == 500 and "sign flips" in result["test"]["p_value"]
    assert result["a"]["perplexity"] is not None and result["b"]["perplexity"] is None


def test_a_system_against_itself_shows_no_difference(tmp_path, capsys):
    a, _ = write_systems(tmp_path)
    path_a = save(tmp_path / "a.jsonl", a)
    path_b = save(tmp_path / "same.jsonl", list(reversed(a)))
    out_json = tmp_path / "cmp.json"
    assert cli.main(["evaluate", "--compare", path_a, path_b, "--out", str(out_json)]) == 0
    result = json.loads(out_json.read_text())
    for entry in result["differences"].values():
        assert (entry["diff"], entry["p_value"]) == (0.0, 1.0)
        assert entry["verdict"].startswith("no clear difference: +0.00")
    assert "no clear difference" in capsys.readouterr().out


def test_compare_refuses_files_of_different_examples(tmp_path):
    a, b = write_systems(tmp_path, n=10)
    path_a = save(tmp_path / "a.jsonl", a)
    path_b = save(tmp_path / "b.jsonl", b[:7] + [dict(b[7], id="other")])
    with pytest.raises(SystemExit, match=r"do not hold the same examples: 3 id\(s\) only in "
                                         r".*a\.jsonl .*1 id\(s\) only in .*decode the same"):
        cli.main(["evaluate", "--compare", path_a, path_b])


def test_compare_refuses_repeated_ids_and_no_resamples(tmp_path):
    a, b = write_systems(tmp_path, n=5)
    path_a = save(tmp_path / "a.jsonl", a)
    path_b = save(tmp_path / "b.jsonl", b + [b[0]])
    with pytest.raises(SystemExit, match=r"b\.jsonl: id \"ex0\" occurs more than once"):
        cli.main(["evaluate", "--compare", path_a, path_b])
    with pytest.raises(SystemExit, match="--compare needs --bootstrap of at least 1"):
        cli.main(["evaluate", "--compare", path_a, save(tmp_path / "c.jsonl", b),
                  "--bootstrap", "0"])


def test_compare_warns_about_differing_references(tmp_path, capsys):
    a, b = write_systems(tmp_path, n=30)
    b[0] = dict(b[0], reference="a different reference")
    assert cli.main(["evaluate", "--compare", save(tmp_path / "a.jsonl", a),
                     save(tmp_path / "b.jsonl", b), "--bootstrap", "100"]) == 0
    err = capsys.readouterr().err
    assert "1 of 30 examples have a different reference" in err
    assert "only 30 examples scored" in err


HEADINGS = ["History", "Geography", "Economy", "Culture", "Transport", "Sport"]


def article_systems(n=40, seed=0):
    """Whole articles. A: random headings and words; B: the reference's headings, half of each
    section's words."""
    rng = random.Random(seed)

    def record(i, predicted, reference):
        return {"id": f"ex{i}", "title": f"Place {i}", "target": "article",
                "prediction": t2t_text(predicted), "reference": t2t_text(reference),
                "prediction_sections": [{"title": s.title, "text": s.text} for s in predicted],
                "reference_sections": [{"title": s.title, "text": s.text} for s in reference],
                "reference_nll": 4.0, "reference_tokens": 2, "reference_cut": 5 * (i % 4 == 0)}

    a, b = [], []
    for i in range(n):
        titles = ["", *rng.sample(HEADINGS, 3)]
        reference = [S(t, " ".join(rng.choices(WORDS, k=8))) for t in titles]
        a.append(record(i, [S(t, " ".join(rng.choices(WORDS, k=6)))
                            for t in ["", *rng.sample(HEADINGS, 2)]], reference))
        b.append(record(i, [S(s.title, " ".join(s.text.split()[:4])) for s in reference],
                        reference))
    return a, b


def test_compare_articles_gives_verdicts_on_the_article_scores(tmp_path, capsys):
    a, b = article_systems()
    path_a, path_b = save(tmp_path / "a.jsonl", a), save(tmp_path / "b.jsonl", b)
    assert cli.main(["evaluate", "--compare", path_a, path_b, "--bootstrap", "200"]) == 0
    out = capsys.readouterr().out
    result = json.loads((tmp_path / "b.compare.json").read_text())
    differences = result["differences"]
    for key in ("article.rougeLsum.f", "article.per_section.rouge1.f",
                "article.structure.heading_f1", "article.per_section.matched"):
        assert differences[key]["verdict"].startswith("B above A: +"), key
        assert differences[key]["verdict"] in out
    # B's headings are the reference's: recall 1 for every article
    assert result["b"]["article"]["structure"]["heading_recall"] == 1.0
    assert result["b"]["article"]["references_cut"] == 10  # ids 0, 4, ..., 36
    assert "B: perplexity over targets cut to the run's max_target_tokens: 10 of 40 cut" in out


def test_evaluate_articles_prints_the_article_rows(tmp_path, capsys):
    _, b = article_systems(n=8)
    assert cli.main(["evaluate", "--preds", save(tmp_path / "b.jsonl", b),
                     "--bootstrap", "0"]) == 0
    out = capsys.readouterr().out
    metrics = json.loads((tmp_path / "b.metrics.json").read_text())
    assert metrics["article"]["structure"]["heading_f1"] == 1.0
    assert "heading F1" in out and "ROUGE-Lsum" in out
    assert ("perplexity over targets cut to the run's max_target_tokens: 2 of 8 cut"
            in out.splitlines())


def test_compare_refuses_leads_against_articles(tmp_path):
    leads, _ = write_systems(tmp_path, n=5)
    articles, _ = article_systems(n=5)
    with pytest.raises(SystemExit, match="A holds leads and B whole articles"):
        cli.main(["evaluate", "--compare", save(tmp_path / "a.jsonl", leads),
                  save(tmp_path / "b.jsonl", articles)])
    with pytest.raises(SystemExit, match="4 are leads"):
        cli.main(["evaluate", "--preds", save(tmp_path / "mix.jsonl", articles[:1] + leads[1:])])
