"""``wikisum report``: the numbers against rouge-score, their properties, and the documents."""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter

import numpy as np
import pyarrow.parquet as pq
import pytest
from rouge_score import rouge_scorer

from wikisum.core import loader, vocab
from wikisum.pipeline import (
    report,
    report_bootstrap,
    report_compare,
    report_recommend,
    report_render,
    report_scores,
    report_stats,
)
from wikisum.workflows import cli

LENGTHS = [20, 100, 500, 2000]


@pytest.fixture(scope="module")
def reported(built_sample, tmp_path_factory):
    out_dir, _ = built_sample
    out = tmp_path_factory.mktemp("report")
    status = cli.main(["report", "--data", str(out_dir / "data"), "--out", str(out),
                       "--lengths", ",".join(map(str, LENGTHS)), "--bootstrap", "200"])
    assert status == 0
    return out, json.loads((out / "metrics.json").read_text()), out_dir


def test_writes_the_three_outputs_with_every_section(reported):
    out, metrics, out_dir = reported
    html = (out / "report.html").read_text()
    md = (out / "report.md").read_text()
    assert html.count("data:image/png;base64,") == 2  # both plots embedded: self-contained
    assert "src=\"figures/" not in html
    for title in ("What to pick", "1. Extractive-only ROUGE", "2. Input recall vs L",
                  "3. Dataset statistics", "4. The learned extractor",
                  "5. Articles side by side", "About this report"):
        assert title in html and title in md
    # every section has its table (none fell back to an explanation)
    assert "were not found" not in md and "ranked without the learned" not in md
    # wide tables: extractor rows, corpus columns
    corpora = " | ".join(metrics["corpora"])
    assert md.count(f"| extractor | {corpora} |") == 4  # ROUGE-L, differences, ROUGE-1, ROUGE-2
    # the per-article view: the lead beside every extractor's top-ranked paragraphs
    views = metrics["article_views"]
    assert len(views) == report_scores.VIEW_ARTICLES
    for view in views:
        assert view["lead"] and view["title"] in html
        assert set(view["top"]) == set(metrics["extractors"])
        for ext in metrics["extractors"]:
            assert 1 <= len(view["top"][ext]["combined"]) <= report_scores.VIEW_PARAGRAPHS
    # provenance: version, date, data path, options
    prov = metrics["provenance"]
    assert prov["wikisum_version"] and prov["created"][:2] == "20"
    assert prov["data"] == str(out_dir / "data")
    assert prov["options"]["lengths"] == LENGTHS and prov["options"]["bootstrap"] == 200
    assert prov["wikisum_version"] in md and prov["data"] in md
    assert (out / "figures" / "extractive_rouge.png").read_bytes()[:4] == b"\x89PNG"
    assert metrics["articles"] == len((out / "per_article.jsonl").read_text().splitlines())
    stats = metrics["dataset_statistics"]
    assert stats["totals"]["articles"] == metrics["articles"]
    assert all(stats["words"][name] is not None for name in report_stats.STAT_NAMES)
    assert 0 < stats["citation_coverage"] <= 1
    assert set(metrics["learned_comparison"]) == {"learned", "tfidf", "cheating"}
    assert metrics["recommendation"]["best_extractor"] != "cheating"
    assert metrics["recommendation"]["text"]


def test_rouge_equals_rouge_score_called_directly(reported):
    _, metrics, out_dir = reported
    scorer = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True)
    rows = {r["id"]: r for r in loader.Dataset(str(out_dir / "data")).rows("dev")}
    checked = 0
    for article in metrics["per_article"][:4]:
        row = rows[article["id"]]
        n = len(row["lead"].split())
        for ext in ("tfidf", "cheating"):
            for corpus in ("citations", "combined"):
                words = " ".join(loader.ranked_texts(row, ext, corpus)).split()[:n]
                expected = scorer.score(row["lead"], " ".join(words))
                for t in ("rouge1", "rouge2", "rougeL"):
                    got = article["rouge"][ext][corpus][t]
                    assert got == pytest.approx(expected[t].fmeasure, abs=1e-12)
                    checked += 1
    assert checked == 4 * 2 * 2 * 3


def test_recall_at_l_equals_rouge_score_on_the_decoded_input(reported):
    _, metrics, out_dir = reported
    data = loader.Dataset(str(out_dir / "data"))
    sp = vocab.load(str(out_dir / "vocab.model"))
    scorer = rouge_scorer.RougeScorer(["rouge1"], use_stemmer=True)
    sep = data.special_ids["title_sep"]
    rows = {r["id"]: r for r in data.rows("dev")}
    article = metrics["per_article"][0]
    row = rows[article["id"]]
    for ext in ("identity", "textrank"):
        for k, length in enumerate(LENGTHS):
            ids = loader.build_input(row, ext, "combined", length, sep)
            # the separator is not text: decode the title and the paragraphs around it
            text = sp.decode(ids[:ids.index(sep)]) + " " + sp.decode(ids[ids.index(sep) + 1:])
            expected = scorer.score(row["lead"], text)["rouge1"].recall
            assert article["recall"][ext]["combined"][k] == pytest.approx(expected, abs=1e-12)


def test_recall_curve_is_monotone_in_l(reported):
    _, metrics, _ = reported
    for article in metrics["per_article"]:
        for by_corpus in article["recall"].values():
            for curve in by_corpus.values():
                assert all(a <= b for a, b in zip(curve, curve[1:], strict=False))
    for by_corpus in metrics["input_recall"].values():
        for curve in by_corpus.values():
            means = [p["mean"] for p in curve]
            assert means == sorted(means)
            assert all(p["low"] <= p["mean"] <= p["high"] for p in curve)


def test_cheating_extractor_is_the_ceiling_on_the_sample(reported):
    """The cheating extractor ranks by bigram recall of the lead (the paper's definition), so
    ROUGE-2 is what it maximises: there it is never below an unsupervised extractor. The learned
    ranker is trained to imitate it and may tie it. On ROUGE-1 and ROUGE-L it ranks whole
    paragraphs, not their order or length, and on 60 synthetic articles it is not
    *significantly* below any other: its interval reaches every other mean."""
    _, metrics, _ = reported
    rouge = metrics["extractive_rouge"]
    for corpus in metrics["corpora"]:
        cheat = rouge["cheating"][corpus]
        for ext in metrics["extractors"]:
            other = rouge[ext][corpus]
            if ext == "learned":
                assert cheat["rouge2"]["high"] >= other["rouge2"]["mean"], (ext, corpus)
            else:
                assert cheat["rouge2"]["mean"] >= other["rouge2"]["mean"], (ext, corpus)
            for t in ("rouge1", "rougeL"):
                assert cheat[t]["high"] >= other[t]["mean"], (ext, corpus, t)
        # and it is well above the floor (identity: the original order)
        for t in ("rouge1", "rouge2", "rougeL"):
            assert cheat[t]["mean"] > rouge["identity"][corpus][t]["mean"]


def test_report_on_a_dataset_with_one_article(built_sample, tmp_path):
    out_dir, _ = built_sample
    data = tmp_path / "data"
    shutil.copytree(out_dir / "data", data)
    info = json.loads((data / "dataset.json").read_text())
    dev = sorted(data.glob("dev-*.parquet"))
    table = next(pq.read_table(p) for p in dev if pq.read_metadata(p).num_rows)
    for path in dev:
        path.unlink()
    # The set dataset.json records (num_shards): one article in the first shard, none in the
    # second.
    pq.write_table(table.slice(0, 1), data / "dev-00000-of-00002.parquet")
    pq.write_table(table.slice(0, 0), data / "dev-00001-of-00002.parquet")
    info["rows"]["dev"] = 1
    (data / "dataset.json").write_text(json.dumps(info))
    shutil.copy(out_dir / "vocab.model", tmp_path / "vocab.model")
    out = tmp_path / "report"
    assert cli.main(["report", "--data", str(data), "--out", str(out), "--bootstrap", "50"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["articles"] == 1
    ci = metrics["extractive_rouge"]["tfidf"]["combined"]["rougeL"]
    assert ci["low"] == ci["mean"] == ci["high"]  # one article: every resample is the same
    assert "Only 1 articles were scored" in (out / "report.md").read_text()
    assert (out / "report.html").stat().st_size > 10_000


@pytest.mark.parametrize("case,message", [
    ("missing", "does not exist"),
    ("empty", "dataset.json"),
    ("ingest", "dataset.json"),
])
def test_clear_error_on_an_empty_or_wrong_directory(built_sample, tmp_path, capsys, case,
                                                    message):
    (tmp_path / "empty").mkdir()
    target = {"missing": tmp_path / "nope", "empty": tmp_path / "empty",
              "ingest": built_sample[0] / "ingest"}[case]
    with pytest.raises(SystemExit) as exc:
        cli.main(["report", "--data", str(target), "--out", str(tmp_path / "r")])
    assert "wikisum report:" in str(exc.value) and message in str(exc.value)


def test_bad_lengths_are_rejected(built_sample, tmp_path, capsys):
    with pytest.raises(SystemExit):
        cli.main(["report", "--data", str(built_sample[0] / "data"), "--out", str(tmp_path),
                  "--lengths", "100,abc"])
    assert "--lengths" in capsys.readouterr().err


# ------------------------------------------------------------------------- pure functions


def test_recall_curve_golden():
    lead = Counter({"a": 2, "b": 1, "c": 1})
    pieces_ids = [[1, 2], [3, 4, 5], [6]]
    pieces = [Counter({"a": 1}), Counter({"b": 1, "a": 1, "z": 1}), Counter({"c": 1})]

    words = {1: "a", 2: "q", 3: "b", 4: "a", 5: "z", 6: "c"}

    def decode(ids):  # only the piece an L cuts is decoded
        return " ".join(words[i] for i in ids)

    curve = report_scores.recall_curve(lead, pieces, [1, 2, 3, 5, 6, 100], pieces_ids, decode,
                                       str.split)
    # L=1: "a" of piece 1 cut; L=3: piece 1 + "b" of piece 2; L=5: pieces 1-2; L=6: all
    assert curve == [0.25, 0.25, 0.5, 0.75, 1.0, 1.0]


def test_cut_to_words_keeps_the_first_n_words_across_paragraphs():
    assert report_scores.cut_to_words(["a b c", "d e", "f"], 4) == "a b c\nd"
    assert report_scores.cut_to_words(["a b"], 0) == ""
    assert report_scores.cut_to_words([], 3) == ""


def _combine(fn, items):
    acc = fn.create_accumulator()
    for item in items:
        acc = fn.add_input(acc, item)
    return acc


def test_bootstrap_is_deterministic_mergeable_and_covers_the_mean():
    rng = np.random.default_rng(0)
    values = rng.normal(0.3, 0.1, 400)
    items = [(i, {"m": float(v)}) for i, v in enumerate(values)]
    fn = report_bootstrap.BootstrapMeans(samples=500, seed=1)
    whole = fn.extract_output(_combine(fn, items))["m"]
    merged = fn.extract_output(fn.merge_accumulators(
        [_combine(fn, items[:100]), _combine(fn, items[100:])]))["m"]
    assert whole["mean"] == pytest.approx(values.mean())
    assert merged == pytest.approx(whole)
    assert whole["low"] < whole["mean"] < whole["high"]
    # the interval is about +-1.96 standard errors wide
    se = values.std() / np.sqrt(len(values))
    assert (whole["high"] - whole["low"]) / (2 * 1.96 * se) == pytest.approx(1.0, abs=0.2)
    small = fn.extract_output(_combine(fn, items[:25]))["m"]
    assert small["high"] - small["low"] > whole["high"] - whole["low"]


def test_plateau_length_and_recommendation():
    def curve(values):
        return [{"length": n, "mean": v, "low": v, "high": v}
                for n, v in zip([100, 500, 1000, 2000], values, strict=True)]

    assert report_recommend.plateau_length(curve([0.2, 0.5, 0.595, 0.6])) == 1000
    assert report_recommend.plateau_length(curve([0.2, 0.3, 0.4, 0.5])) == 2000
    assert report_recommend.plateau_length(curve([0.6, 0.6, 0.6, 0.6])) == 100

    def score(mean, half=0.01):
        return {"mean": mean, "low": mean - half, "high": mean + half}

    metrics = {"extractors": ["tfidf", "identity", "cheating"], "corpora": ["combined"],
               "articles": 100, "split": "dev", "lengths": [100, 500, 1000, 2000],
               "extractive_rouge": {e: {"combined": {"rougeL": score(v)}} for e, v in
                                    [("tfidf", 0.3), ("identity", 0.2), ("cheating", 0.5)]},
               "input_recall": {e: {"combined": curve([0.2, 0.5, 0.595, 0.6])}
                                for e in ("tfidf", "identity", "cheating")}}
    rec = report_recommend.recommend(metrics)
    assert rec["best_extractor"] == "tfidf"  # cheating reads the target: never recommended
    entry = rec["per_corpus"]["combined"]
    # without bootstrap replicates there is no paired test: nothing is called clear
    assert not entry["clear_winner"] and entry["runner_up"] == "identity"
    assert entry["plateau_length"] == 1000 and entry["ceiling_rougeL"] == 0.5
    assert rec["input_length"] == 1000
    assert "tfidf" in rec["text"][0]


# ------------------------------------------------------- paired decisions, recall, ceiling, compare


def _synthetic(rouge: dict, recall: dict, lengths=(100, 1000), samples=400, drops=None):
    """metrics.json as the job assembles it, from per-article values: ``rouge[(ext, corpus)]``
    ROUGE-L per article (ROUGE-1/2 the same), ``recall[(ext, corpus)]`` recall per article at
    every L."""
    extractors = list(dict.fromkeys(e for e, _ in rouge))
    corpora = list(dict.fromkeys(c for _, c in rouge))
    n = len(next(iter(rouge.values())))
    items = []
    for i in range(n):
        values = {}
        for (e, c), v in rouge.items():
            for t in report_scores.ROUGE_TYPES:
                values[f"rouge|{e}|{c}|{t}"] = float(v[i])
            for length in lengths:
                values[f"recall|{e}|{c}|{length}"] = float(recall[(e, c)][i])
        items.append((f"a{i}", values))
    fn = report_bootstrap.BootstrapMeans(samples=samples, seed=0, keep_replicates=True)
    means = fn.extract_output(_combine(fn, items))
    replicates = {k: m.pop("replicates") for k, m in means.items()}
    config = report.ReportConfig("data", "out", lengths=tuple(lengths), bootstrap=samples)
    info = {"extractors": extractors, "corpora": corpora, "rows": {"dev": n}}
    per_article = [{"id": i, "rouge": {}, "recall": {}} for i, _ in items]
    totals = {"articles": n, "citations_listed": 10, "citations_found": 8}
    return report.assemble(config, info, means, {"lead_words": {p: 1 for p in
                                                                report_stats.PERCENTILES}},
                           totals, per_article, drops, replicates=replicates)


def test_clearly_ahead_is_decided_by_the_paired_differences():
    """Articles differ a lot in difficulty; tfidf beats textrank by 1 point on every article.
    The two means' intervals overlap, but the paired difference is clearly above 0."""
    rng = np.random.default_rng(3)
    n = 150
    difficulty = rng.normal(0.3, 0.08, n)
    rouge = {("tfidf", "combined"): difficulty + 0.01 + rng.normal(0, 0.003, n),
             ("textrank", "combined"): difficulty,
             ("identity", "combined"): difficulty - 0.01 + rng.normal(0, 0.2, n)}
    recall = {key: np.full(n, 0.5) for key in rouge}
    metrics = _synthetic(rouge, recall)
    rl = {e: metrics["extractive_rouge"][e]["combined"]["rougeL"] for e, _ in rouge}
    assert rl["tfidf"]["low"] < rl["textrank"]["high"]  # the intervals overlap
    entry = metrics["recommendation"]["per_corpus"]["combined"]
    assert entry["best"] == "tfidf" and entry["runner_up"] == "textrank"
    d = entry["ahead_of"]["textrank"]
    assert d["clear"] and 0.008 < d["low"] < d["mean"] < d["high"] < 0.012
    # identity: noisy per-article differences of 2 points on average are not clear on 150
    assert not entry["ahead_of"]["identity"]["clear"]
    assert not entry["clear_winner"]
    assert any("not clearly ahead of identity" in line for line in
               metrics["recommendation"]["text"])
    # the same comparison without pairing (independent articles) is not clear
    shuffled = dict(rouge)
    shuffled[("textrank", "combined")] = rng.permutation(difficulty)
    unpaired = _synthetic(shuffled, recall)
    assert not unpaired["recommendation"]["per_corpus"]["combined"]["ahead_of"]["textrank"][
        "clear"]


def test_paired_difference_of_identical_metrics_is_zero_and_not_clear():
    rep = [0.1, 0.2, None, 0.3]
    d = report_bootstrap.paired_difference({"mean": 0.2, "n": 50}, {"mean": 0.2, "n": 50},
                                           rep, rep)
    assert d == {"mean": 0.0, "low": 0.0, "high": 0.0, "clear": False}
    one = report_bootstrap.paired_difference({"mean": 0.3, "n": 1}, {"mean": 0.2, "n": 1},
                                             [0.3], [0.2])
    assert not one["clear"]  # one article decides nothing


def _two_corpora(search_recall: float, combined_recall: float, n=120, seed=0):
    """search has the higher ROUGE-L (tfidf 25 against 23); the recall of each corpus's input is
    given."""
    rng = np.random.default_rng(seed)
    base = rng.normal(0.0, 0.05, n)
    rouge = {("tfidf", "search"): 0.25 + base, ("identity", "search"): 0.20 + base,
             ("tfidf", "combined"): 0.23 + base, ("identity", "combined"): 0.19 + base}
    noise = rng.normal(0, 0.05, n)
    recall = {("tfidf", "search"): search_recall + noise,
              ("identity", "search"): search_recall + noise,
              ("tfidf", "combined"): combined_recall + noise + rng.normal(0, 0.01, n),
              ("identity", "combined"): combined_recall + noise}
    return _synthetic(rouge, recall)


def test_recommendation_weighs_input_recall():
    # combined holds clearly more of the lead (59.9 against 53.2): it wins over search's ROUGE-L
    rec = _two_corpora(0.532, 0.599)["recommendation"]
    assert rec["rouge_best_corpus"] == "search"
    assert rec["recall_top"] == "combined" and rec["recall_differences"]["search"]["clear"]
    assert rec["best_corpus"] == "combined" and rec["best_extractor"] == "tfidf"
    assert rec["text"][0].startswith("Use tfidf on the combined corpus")
    assert "The search corpus has the higher extractive ROUGE-L" in rec["text"][1]
    assert "holds clearly less of the lead" in rec["text"][1]
    # the same recall (up to noise): the ROUGE-L decides
    rec = _two_corpora(0.55, 0.551)["recommendation"]
    assert not rec["recall_differences"].get("search", rec["recall_differences"].get(
        "combined"))["clear"]
    assert rec["best_corpus"] == "search"


def test_cheating_is_called_the_ceiling_only_where_nothing_scores_above_it():
    n = 40
    rng = np.random.default_rng(1)
    base = rng.normal(0, 0.02, n)
    rouge = {("tfidf", "citations"): 0.23 + base, ("cheating", "citations"): 0.22 + base,
             ("learned", "citations"): 0.20 + base,
             ("tfidf", "combined"): 0.23 + base, ("cheating", "combined"): 0.25 + base,
             ("learned", "combined"): 0.20 + base}
    metrics = _synthetic(rouge, {k: np.full(n, 0.5) for k in rouge})
    rec = metrics["recommendation"]
    assert "ceiling_rougeL" not in rec["per_corpus"]["citations"]
    assert rec["per_corpus"]["citations"]["above_cheating"] == ["tfidf"]
    assert rec["per_corpus"]["combined"]["ceiling_rougeL"] == pytest.approx(0.25 + base.mean())
    citations = next(line for line in rec["text"] if line.startswith("citations:"))
    combined = next(line for line in rec["text"] if line.startswith("combined:"))
    assert "ceiling is" not in citations and "no ceiling here" in citations
    assert "the cheating ceiling is 25.0" in combined
    assert "best tfidf" in citations  # cheating is never the pick


def test_compare_two_builds():
    n = 60
    rng = np.random.default_rng(2)
    base = rng.normal(0.5, 0.05, n)
    rouge = {("tfidf", "combined"): base * 0.5, ("identity", "combined"): base * 0.4}
    drops_a = {"links": {"in": 100, "clone": 4, "self": 2}}
    drops_b = {"links": {"in": 120, "clone": 9, "self": 2}, "pages": {"in": 50, "redirect": 3}}
    a = _synthetic(rouge, {k: base for k in rouge}, drops=drops_a)
    b = _synthetic(rouge, {("tfidf", "combined"): base + 0.06,
                           ("identity", "combined"): base + 0.001 * rng.normal(size=n)},
                   lengths=(100, 1000, 2000), drops=drops_b)
    comp = report_compare.compare(a, b)
    assert comp["lengths"] == [100, 1000] and comp["only_in_b"]["lengths"] == [2000]
    up = comp["input_recall"]["tfidf"]["combined"][1]
    assert up["length"] == 1000 and up["difference"] == pytest.approx(0.06) and up["clear"]
    assert not comp["input_recall"]["identity"]["combined"][0]["clear"]
    assert comp["counts"]["articles scored"] == (n, n)
    assert comp["ingest_drops"]["links"]["clone"] == (4, 9)
    assert comp["ingest_drops"]["pages"]["redirect"] == (0, 3)
    md = report_render.compare_markdown(comp)
    assert re.search(r"\| tfidf \| [\d.]+ -> [\d.]+ \(\+6\.0\*\) \|", md)
    assert "| links | clone | 4 | 9 | +5 |" in md and "| links | self |" not in md
    assert "only in B: lengths 2000" in md
    assert "<table>" in report_render.compare_html(comp)


def test_compare_command_reports_each_build_and_writes_the_comparison(reported, tmp_path):
    report_dir, metrics, out_dir = reported
    out = tmp_path / "cmp"
    assert cli.main(["report", "--compare", str(report_dir), str(out_dir), "--out", str(out),
                     "--lengths", ",".join(map(str, LENGTHS)), "--bootstrap", "50"]) == 0
    comp = json.loads((out / "compare.json").read_text())
    # A is a report (read as is); B a build, reported into OUT/b
    assert (out / "b" / "metrics.json").exists() and not (out / "a").exists()
    same = comp["input_recall"]["tfidf"]["combined"]
    assert all(d["difference"] == pytest.approx(0, abs=1e-12) for d in same)
    assert comp["counts"]["articles scored"] == [metrics["articles"]] * 2
    assert "Two builds compared" in (out / "compare.html").read_text()
    (tmp_path / "other").mkdir()
    with pytest.raises(SystemExit, match="not a build"):
        cli.main(["report", "--compare", str(tmp_path / "other"), str(out_dir), "--out",
                  str(out)])
    with pytest.raises(SystemExit, match="not both"):
        cli.main(["report", "--compare", str(report_dir), str(out_dir), "--data",
                  str(out_dir / "data"), "--out", str(out)])


def test_report_renders_in_a_browser(reported, browser, tmp_path):
    """The report opened in headless Chromium (the shared ``browser`` fixture: a skip where
    there is none, a failure in CI): every figure loads, no table is wider than the page, the
    per-article view sets the lead beside the extractors, nothing is fetched from elsewhere and
    no script fails; a screenshot is taken."""
    out, metrics, _ = reported
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requests, errors = [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("pageerror", lambda e: errors.append(str(e)))
    uri = (out / "report.html").as_uri()
    try:
        page.goto(uri)
        images = page.eval_on_selector_all("img", "els => els.map(e => e.naturalWidth)")
        body = page.evaluate("document.body.getBoundingClientRect().width")
        widest = page.evaluate("Math.max(...[...document.querySelectorAll('.scroll')]"
                               ".map(e => e.getBoundingClientRect().width))")
        lead = page.eval_on_selector(".article .lead", "e => e.getBoundingClientRect().toJSON()")
        ext = page.eval_on_selector(".article .ext", "e => e.getBoundingClientRect().toJSON()")
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    finally:
        page.close()
    assert len(images) == 2 and all(w > 0 for w in images)
    assert widest <= body + 1
    assert lead["right"] <= ext["left"] and abs(lead["top"] - ext["top"]) < 5  # side by side
    assert (tmp_path / "report.png").read_bytes()[:4] == b"\x89PNG"
    assert [u for u in requests if not u.startswith("data:")] == [uri]  # figures are inline
    assert errors == []


def test_table_2_counts_the_whole_article_and_its_sections():
    row = {"lead": "one two three", "references": [
        {"sources": ["citation"], "paragraphs": ["a b", "c"]},
        {"sources": ["search", "citation"], "paragraphs": ["d e f g"]}],
        "sections": [{"title": "Early life", "level": 2, "text": "four five"},
                     {"title": "See also", "level": 2, "text": ""}]}
    values, totals = report_stats.article_stats(row)
    got = dict((n, v) for n, v in values if n in ("lead_words", "article_words", "sections"))
    # 3 lead words + (2 + 2) + (2 + 0) heading and text words; 2 sections after the lead
    assert got == {"lead_words": 3, "article_words": 9, "sections": 2}
    assert sorted(v for n, v in values if n == "citation_words") == [3, 4]
    assert totals["articles"] == 1



INTERVALS = [  # (name, (low, mean, high) of each bar's bootstrap)
    ("the low bound above the mean", [(0.31, 0.30, 0.35)]),
    ("the high bound below the mean", [(0.25, 0.30, 0.29)]),
    ("both bounds on the wrong side", [(0.32, 0.30, 0.28)]),
    ("a zero-width interval", [(0.30, 0.30, 0.30)]),
]


@pytest.mark.parametrize("intervals", [c[1] for c in INTERVALS], ids=[c[0] for c in INTERVALS])
def test_a_bootstrap_bound_beyond_the_mean_draws_an_empty_bar(intervals):
    from wikisum.pipeline import report_plots

    cell = {rtype: {"low": low, "mean": mean, "high": high}
            for rtype in ("rouge1", "rouge2", "rougeL") for low, mean, high in intervals}
    metrics = {"extractors": ["tfidf"], "corpora": ["combined"],
               "rouge_types": ["rouge1", "rouge2", "rougeL"],
               "extractive_rouge": {"tfidf": {"combined": cell}}, "articles": 3,
               "split": "test"}
    assert report_plots.rouge_figure(metrics)  # draws, where yerr < 0 raised
    below, above = report_plots.error_bars([cell["rouge1"]])
    assert min(below + above) >= 0
