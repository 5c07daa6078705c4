"""bench/languages.py: the text it measures on, the pairs it compares on, and its two runs."""

from __future__ import annotations

import json
import random
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import languages  # noqa: E402
from wikisum.core.text import words  # noqa: E402

DECLARATION = """Title of the declaration

    Article 1
    All human beings are born free and equal in dignity and rights.
    They are endowed with reason and conscience.

    第一条
    人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。

    Too short here.
"""


def test_the_declaration_is_cut_into_its_articles_without_headings():
    units = languages.udhr_units(DECLARATION)
    assert units == [
        "All human beings are born free and equal in dignity and rights.\n"
        "They are endowed with reason and conscience.",
        "人人生而自由，在尊严和权利上一律平等。他们赋有理性和良心，并应以兄弟关系的精神相对待。",
    ]


def test_chunks_reach_the_size_asked_for_and_say_when_text_was_repeated():
    text = " ".join(f"word{i}" for i in range(400))  # about 3,300 bytes, one paragraph
    got, repeated = languages.chunks([text], chunk_bytes=500, total_bytes=2000)
    assert not repeated and sum(len(c.encode()) for c in got) >= 2000
    assert all(len(c.encode()) <= 500 for c in got)
    assert words(" ".join(got)) == words(text)[:len(words(" ".join(got)))]  # cut at spaces
    got, repeated = languages.chunks([text], chunk_bytes=500, total_bytes=10_000)
    assert repeated and sum(len(c.encode()) for c in got) >= 10_000
    # a script without spaces is cut inside its run, never inside a character
    han = "北京是中华人民共和国的首都" * 40
    assert "".join(languages.cut(han, 100)) == han


def test_the_english_variants_keep_the_words_and_the_shifted_copy_keeps_them_too():
    real = "The “naïve” café’s owner – a well-known man – said: it’s 10 km."
    ascii_text = languages.to_ascii(real)
    typographic = languages.to_typographic(real)
    assert ascii_text.isascii() and not typographic.isascii()
    assert words(typographic) == words(ascii_text)
    assert sorted(words(languages.shifted(ascii_text))) == sorted(words(ascii_text))
    assert words(languages.shifted(ascii_text)) != words(ascii_text)


def test_pairs_take_the_kinds_in_turn_in_a_script_without_sentence_marks():
    leads = ["กรุงเทพมหานครเป็นเมืองหลวง ของประเทศไทย มีประชากรมาก",
             "เมืองนี้ตั้งอยู่ริมแม่น้ำ เจ้าพระยา และมีวัดมากมาย"]
    pairs = languages.make_pairs(leads, 8, seed=0, max_chars=600)
    kinds = [kind for _, _, kind in pairs]
    assert all(kinds.count(kind) == 2 for kind in languages.KINDS)
    assert len({kind for ref, _, kind in pairs if ref == leads[0]}) == 4  # every kind
    for ref, prediction, kind in pairs:
        assert ref in leads and prediction
        if kind == "neighbour":
            assert prediction != ref and prediction in leads
        if kind == "drop":
            assert set(words(prediction)) < set(words(ref))
        if kind == "shuffle":
            assert sorted(words(prediction)) == sorted(words(ref))
    assert languages.make_pairs(leads[:1], 8, seed=0, max_chars=600) == []


def test_predictions_are_the_same_for_the_same_seed():
    leads = ["One sentence here. Another one there. A third one.", "Other text. And more."]
    assert languages.make_pairs(leads, 6, 1, 600) == languages.make_pairs(leads, 6, 1, 600)
    three = "One thing here. Two things there. Three things last."
    assert languages.predict(three, "Other.", "drop", random.Random(0)) == \
        "One thing here. Three things last."


def test_agreement_in_points():
    got = languages.agreement([0.5, 0.6, 0.7], [0.5, 0.62, 0.75])
    assert got["mean_abs_diff"] == pytest.approx((0 + 2 + 5) / 3)
    assert got["within_1"] == pytest.approx(1 / 3)
    assert got["pearson"] == pytest.approx(0.99973, abs=1e-5)
    assert languages.agreement([0.5, 0.5], [0.4, 0.6])["pearson"] is None


def test_speed_runs_on_the_sample_sentences_where_no_text_is_found(tmp_path, capsys):
    out = tmp_path / "speed.json"
    assert languages.main(["speed", "--only", "en,ja,th", "--mb", "0.004", "--rouge-mb",
                           "0.002", "--chunk-bytes", "400", "--repeat", "1",
                           "--shared", str(tmp_path / "none"), "--out", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [row["lang"] for row in rows] == ["en", "en", "ja", "th"]
    assert all(row["repeated"] and row["source"].startswith("tests/core/scripts.py")
               for row in rows)
    english = rows[0]
    assert english["same_as_before"] == {"words": True, "rouge": True}
    assert english["non_ascii_chunks"] == 0
    assert all(v > 0 for row in rows for v in row["mb_s"].values())
    assert "| Japanese | tests/core/scripts.py's two sentences, repeated |" \
        in capsys.readouterr().out


def _fake_xlsum(folder: Path) -> None:
    """A stand-in for XL-Sum's package: its interface, every text one token a character."""
    package = folder / "rouge_score"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "stemmers.py").write_text("class NLTKStemmer: pass\n")
    (package / "tokenization_wrapper.py").write_text(
        "def tokenize(text, stemmer, tokenizer):\n    return [c for c in text if c.isalpha()]\n")
    (package / "rouge_scorer.py").write_text(textwrap.dedent("""\
        from types import SimpleNamespace
        class MultiTokenizer: pass
        class RougeScorer:
            def __init__(self, types, use_stemmer, lang):
                if lang == "klingon":
                    raise ValueError("no such language")
                self._stemmer = SimpleNamespace(stemmer=None)
                self._tokenizer = SimpleNamespace(tokenizer=None)
                self.types = types
            def score(self, ref, pred):
                f = 1.0 if ref == pred else 0.25
                return {t: SimpleNamespace(fmeasure=f) for t in self.types}
        """))


def test_xlsum_scores_come_back_from_its_own_python(tmp_path, monkeypatch):
    _fake_xlsum(tmp_path)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    jobs = {"ru": {"lang": "russian", "pairs": [["Да.", "Да."], ["Да.", "Нет."]]},
            "xx": {"lang": "klingon", "pairs": [["a", "b"]]}}
    got = languages.run_xlsum(sys.executable, jobs, None, timeout_s=60)
    assert [s["rouge1"] for s in got["ru"]["scores"]] == [1.0, 0.25]
    assert got["ru"]["tokens"][1] == [["Д", "а"], ["Н", "е", "т"]]
    assert got["xx"] == {"error": "ValueError: no such language"}


def test_a_python_without_xlsum_is_refused_with_a_clear_error(tmp_path):
    # the project's own rouge_score is Google's, without XL-Sum's multilingual tokenizer
    with pytest.raises(SystemExit, match="not XL-Sum's multilingual_rouge_scoring"):
        languages.run_xlsum(sys.executable, {}, None, timeout_s=60)
