"""Option values and inputs/outputs are checked before any work (workflows/checks.py)."""

from __future__ import annotations

import argparse

import pytest

from wikisum.workflows import checks, cli


@pytest.mark.parametrize("argv,message", [
    (["ingest", "--wiki", "w", "--out", "o", "--page-timeout", "0"],
     "--page-timeout: must be a finite number in (0, 3600], got 0"),
    (["ingest", "--wiki", "w", "--out", "o", "--page-timeout", "-1"], "--page-timeout"),
    (["ingest", "--wiki", "w", "--out", "o", "--page-timeout", "nan"], "got nan"),
    (["ingest", "--wiki", "w", "--out", "o", "--max-page-bytes", "0"],
     "--max-page-bytes: must be at least 1, got 0"),
    (["ingest", "--wiki", "w", "--out", "o", "--max-page-bytes", "-1"], "got -1"),
    (["ingest", "--wiki", "w", "--out", "o", "--clone-threshold", "1.5"],
     "--clone-threshold: must be a finite number in [0, 1]"),
    (["decode", "--run", "r", "--out", "p", "--alpha", "nan"],
     "--alpha: must be a finite number in [0, 10], got nan"),
    (["decode", "--run", "r", "--out", "p", "--beam", "0"], "--beam: must be at least 1"),
    (["crawl", "--urls", "u", "--out", "o", "--timeout", "inf"], "--timeout: must be a finite"),
    (["crawl", "--urls", "u", "--out", "o", "--delay", "inf"], "--delay: must be a finite"),
    (["crawl", "--urls", "u", "--out", "o", "--retries", "x"], "--retries: not an integer"),
    (["train", "--out", "r", "--device", "bogus"], "--device: unknown device 'bogus'"),
    (["rank", "--data", "i", "--vocab", "v", "--out", "o", "--shards", "0"],
     "--shards: must be between 1 and 100000, got 0"),
    (["human-eval", "make", "--preds", "a=p", "--out", "o", "--sample", "0"],
     "--sample: must be at least 1, got 0"),
    (["human-eval", "make", "--preds", "a=p", "--out", "o", "--seed", "-1"],
     "--seed: must be at least 0, got -1"),
    (["human-eval", "make", "--preds", "p.jsonl", "--out", "o"],
     "--preds: 'p.jsonl' is not NAME=PREDS.jsonl"),
    (["human-eval", "make", "--preds", "a=p", "--out", "o", "--kind", "best"],
     "--kind: invalid choice: 'best'"),
    (["human-eval", "make", "--preds", "a=p", "--out", "o", "--pairs", "a,b"],
     "--pairs: 'a' is not A:B"),
])
def test_bad_values_are_usage_errors_with_the_valid_range(argv, message, capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(argv)
    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("text", ["cuda", "cuda:1", "cpu", "auto", "mps"])
def test_devices(text):
    assert checks.device(text) == text


def test_number_and_count_bounds():
    assert checks.number(0, 1)("1") == 1.0 and checks.number(0, 1)("0") == 0.0
    with pytest.raises(argparse.ArgumentTypeError):
        checks.number(0, 1, low_open=True)("0")
    assert checks.count(0)("0") == 0


def test_an_output_that_is_a_file_is_refused_before_any_work(tmp_path, sample_corpus):
    sample, _ = sample_corpus
    out = tmp_path / "a-file"
    out.write_text("not a directory")
    with pytest.raises(SystemExit, match="--out .* is a file, not a directory"):
        cli.main(["ingest", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
                  "--out", str(out)])
    for argv in (["rank", "--data", "i", "--vocab", "v", "--out", str(out)],
                 ["report", "--data", "d", "--out", str(out)],
                 ["crawl", "--urls", "u", "--out", str(out)]):
        with pytest.raises(SystemExit, match="is a file, not a directory"):
            cli.main(argv)


def test_an_unwritable_output_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(checks.os, "access", lambda path, mode: False)
    with pytest.raises(SystemExit, match="is not writable"):
        checks.output_dir(str(tmp_path / "new" / "out"), "ingest")


def test_an_input_that_is_a_directory_is_refused(tmp_path, sample_corpus):
    sample, _ = sample_corpus
    with pytest.raises(SystemExit, match=r"--wiki .* is a directory; give its files"):
        cli.main(["ingest", "--wiki", str(sample), "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit, match=r"--warc .* is a directory"):
        cli.main(["ingest", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
                  "--warc", str(sample / "warc"), "--out", str(tmp_path / "o")])
    with pytest.raises(SystemExit, match="--warc: no input file matches"):
        cli.main(["ingest", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
                  "--warc", str(sample / "nope-*.warc.gz"), "--out", str(tmp_path / "o")])


def test_an_unknown_reference_language_is_refused(tmp_path, sample_corpus):
    sample, _ = sample_corpus
    argv = ["ingest", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
            "--out", str(tmp_path / "out"), "--reference-lang", "german"]
    with pytest.raises(SystemExit, match="--reference-lang 'german' is not a language"):
        cli.main(argv)
