"""Whole articles (the paper's section 6) on the built sample, whose build writes article
targets as the demo's does: the loader's views, a title-only T-DMCA trained on articles with
the paper's length policy, its decoded sections, evaluation, export and summarize."""

from __future__ import annotations

import contextlib
import io
import json
import re

import pytest

from wikisum.core import articlelayout, vocab
from wikisum.core.loader import Dataset
from wikisum.workflows import cli

LIMIT = 380  # max_target_tokens of the test run: about half the sample's articles are longer


def lines(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def article_lengths(data, split: str) -> list[int]:
    rows = Dataset(str(data)).rows(split, ["article_ids"])
    return [len(row["article_ids"] or ()) for row in rows]


@pytest.fixture(scope="module")
def article_run(built_sample, tmp_path_factory):
    """A tiny T-DMCA trained on whole articles from the ranked references (L 64) for a few
    epochs, its stderr, and its greedy decode of the test split. (The demo trains the
    title-only model: tests/workflows/test_cli.py runs it.)"""
    data = built_sample[0] / "data"
    run = tmp_path_factory.mktemp("article-run") / "run"
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = cli.main(["train", "--model", "t-dmca", "--preset", "tiny", "--data", str(data),
                           "--out", str(run), "--target", "article", "--max-input-tokens", "64",
                           "--steps", "60", "--batch-tokens", "2400", "--device", "cpu",
                           "warmup_steps=5", "lr=5e-3", "eval_every=30", "checkpoint_every=60",
                           "log_every=30", "dev_examples=4", f"max_target_tokens={LIMIT}"])
    assert status == 0, err.getvalue()
    preds = run / "preds.jsonl"
    assert cli.main(["-q", "decode", "--run", str(run), "--out", str(preds), "--split", "test",
                     "--beam", "1", "--limit", "4", "--max-len", "400"]) == 0
    return data, run, err.getvalue(), preds


def test_the_loader_gives_article_targets_and_title_inputs(built_sample):
    data = Dataset(str(built_sample[0] / "data"))
    sp = vocab.load(str(built_sample[0] / "vocab.model"))
    sep = data.special_ids["title_sep"]
    rows = {r["id"]: r for r in data.rows("dev", ["id", "title_ids", "article_ids", "lead_ids"])}
    ranked = list(data.examples("dev", "tfidf", "combined", 64, target="article"))
    titles = list(data.examples("dev", target="article", inputs="title"))
    assert [e.id for e in ranked] == [e.id for e in titles] == list(rows)
    for r, t in zip(ranked, titles, strict=True):
        row = rows[t.id]
        assert t.inputs == [*row["title_ids"], sep] and r.inputs[:len(t.inputs)] == t.inputs
        assert r.targets == t.targets == list(row["article_ids"])
        assert t.targets[:len(row["lead_ids"])] == list(row["lead_ids"])  # the lead comes first
        assert articlelayout.decode_article(t.targets, sp)[0].text == sp.decode(row["lead_ids"])


def test_a_dataset_without_article_targets_says_how_to_build_one(built_sample, tmp_path):
    info = json.loads((built_sample[0] / "data" / "dataset.json").read_text())
    data = Dataset(str(built_sample[0] / "data"))
    data.info = {**info, "targets": ["lead"]}
    with pytest.raises(ValueError, match=r"no article targets .* --targets lead,article"):
        next(data.examples("dev", "tfidf", "combined", 64, target="article"))
    with pytest.raises(ValueError, match="inputs 'abstract'"):
        next(data.examples("dev", inputs="abstract"))


def test_training_skips_the_long_articles_and_counts_them_as_a_direct_count_does(article_run):
    data, run, err, _ = article_run
    train = [n for n in article_lengths(data, "train") if n]
    over = sum(n > LIMIT for n in train)
    assert 0 < over < len(train)
    stats = json.loads((run / "data_stats.json").read_text())
    assert stats["over_limit"] == {"examples": over, "of": len(train),
                                   "share": round(over / len(train), 6)}
    assert stats["target_tokens"]["max"] <= LIMIT + 1 and stats["target"] == "article"
    line = re.search(r"train: data: article targets from tfidf on combined, L = 64; "
                     r"max_target_tokens "
                     r"380: (\d+) of (\d+) train targets longer \(([\d.]+)%\), skipped in "
                     r"training", err)
    assert line, err
    assert (int(line[1]), int(line[2])) == (over, len(train))
    assert float(line[3]) == round(100 * over / len(train), 1)
    epochs = [e for e in lines(run / "log.jsonl") if e.get("event") == "epoch_end"]
    assert len(epochs) >= 2
    assert all(e["skipped"] == {"long_target": over} and e["examples"] == len(train) - over
               for e in epochs)
    summary = json.loads((run / "summary.json").read_text())
    assert summary["skipped"]["long_target"] >= over * len(epochs)


def test_a_t_dmca_trained_on_articles_writes_sections(article_run):
    data, run, _, preds = article_run
    records = lines(preds)
    assert len(records) == 4
    lengths = dict(zip([row["id"] for row in Dataset(str(data)).rows("test", ["id"])],
                       article_lengths(data, "test"), strict=True))
    for r in records:
        # the reference is scored as training saw it, cut to max_target_tokens, and said so
        n = lengths[r["id"]]
        assert r["target"] == "article"
        assert (r["reference_cut"], r["reference_tokens"]) == (max(0, n - LIMIT),
                                                               min(n, LIMIT) + 1)
        sections = [articlelayout.ArticleSection(**s) for s in r["prediction_sections"]]
        assert r["prediction"] == articlelayout.t2t_text(sections)
        assert [s["title"] for s in r["reference_sections"]][0] == ""
    assert max(len(r["prediction_sections"]) for r in records) >= 2
    view = preds.with_name("preds.articles.md").read_text()
    assert all(f"## {r['title']}" in view for r in records)
    config = json.loads((run / "config.json").read_text())["train_config"]
    assert (config["target"], config["inputs"]) == ("article", "ranked")


def test_evaluate_follows_the_run_and_scores_the_articles_structure(article_run, capsys):
    _, _, _, preds = article_run
    assert cli.main(["evaluate", "--preds", str(preds), "--bootstrap", "10"]) == 0
    out = capsys.readouterr().out
    assert "ROUGE-Lsum" in out and "perplexity over targets cut" in out
    metrics = json.loads(preds.with_name("preds.metrics.json").read_text())
    cut = sum(r["reference_cut"] > 0 for r in lines(preds))
    assert metrics["article"]["references_cut"] == cut
    assert 0 <= metrics["article"]["structure"]["heading_recall"] <= 1


def test_summarize_and_export_keep_the_article_model_whole(article_run, sample_run, tmp_path):
    from wikisum import generation

    _, run, _, _ = article_run
    texts = ["Bodmin is a town in Cornwall.\nIt has a river and a market."]
    article = generation.summarize(str(run), texts, title="Bodmin", beam=1, max_len=120)
    assert isinstance(article, articlelayout.Article) and article.title == "Bodmin"
    assert article.text == articlelayout.t2t_text(article.sections)
    assert article.markdown().startswith("# Bodmin\n")
    lead = generation.summarize(str(run), texts, title="Bodmin", beam=1, max_len=120,
                                target="lead")
    assert lead == article.lead
    exported = tmp_path / "export"
    assert cli.main(["-q", "export", "--run", str(run), "--out", str(exported)]) == 0
    bundle = generation.load_bundle(str(exported))
    assert (bundle.target, bundle.inputs, bundle.max_target_tokens) == ("article", "ranked",
                                                                         LIMIT)
    assert "a whole article" in (exported / "README.md").read_text()
    assert generation.summarize(bundle, texts, title="Bodmin", beam=1, max_len=120) == article
    with pytest.raises(ValueError, match="trained on leads, not whole articles"):
        generation.summarize(str(sample_run), texts, title="Bodmin", target="article")
