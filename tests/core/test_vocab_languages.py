"""The vocabulary suits the language's script: sentencepiece's character coverage (0.9995 for a
rich character set, 1.0 for the others), byte fallback so that no letter becomes <unk>, and the
language taken from --lang, the ingest output, or the text."""

from __future__ import annotations

import json
import random

import pyarrow as pa
import pytest

from wikisum.core import shards, vocab
from wikisum.workflows import cli

WORDS = ["river", "stone", "north", "city", "house", "green", "small", "light", "bridge",
         "valley", "market", "tower"]


def corpus(seed: int = 0, n: int = 400, rare: str = "") -> list[str]:
    """English-like lines; ``rare`` appears once, in the first line (far under 0.05% of the
    characters)."""
    rng = random.Random(seed)
    lines = [" ".join(rng.choice(WORDS) for _ in range(12)) for _ in range(n)]
    lines[0] += f" {rare}" if rare else ""
    return lines


@pytest.mark.parametrize("lang", ["ja", "zh", "zh-yue", "zh_TW", "ZH-Hant", "ko", "yue", "wuu",
                                  "lzh", "ii"])
def test_chinese_japanese_korean_and_yi_have_a_rich_character_set(lang):
    assert vocab.has_rich_character_set(lang)
    assert vocab.trainer_settings([], lang=lang).character_coverage == 0.9995


@pytest.mark.parametrize("lang", ["en", "ru", "uk", "ar", "fa", "hi", "th", "vi", "ka", "am",
                                  "he", "zh-min-nan"])
def test_other_languages_cover_every_character(lang):
    assert not vocab.has_rich_character_set(lang)
    assert vocab.trainer_settings([], lang=lang).character_coverage == 1.0


def test_without_a_language_the_texts_script_decides():
    japanese = ["東京都は日本の首都であり、関東地方に位置する。人口は約1400万人。"] * 3
    chinese = ["北京是中华人民共和国的首都，也是全国的政治中心。"]
    korean = ["서울특별시는 대한민국의 수도이다."]
    russian = ["Москва — столица России, город федерального значения."]
    thai = ["กรุงเทพมหานครเป็นเมืองหลวงของประเทศไทย"]
    assert vocab.has_rich_character_set(None, japanese)
    assert vocab.has_rich_character_set(None, chinese)
    assert vocab.has_rich_character_set(None, korean)
    assert not vocab.has_rich_character_set(None, russian)
    assert not vocab.has_rich_character_set(None, thai)
    assert not vocab.has_rich_character_set(None, [])
    # a Japanese corpus that quotes some English stays Japanese; English quoting a name does not
    assert vocab.has_rich_character_set(None, japanese + ["The Tokyo Metropolis"])
    assert not vocab.has_rich_character_set(None, corpus(n=20) + ["東京"])
    # an explicit language wins over the text; "und" is none
    assert vocab.trainer_settings(japanese, lang="en").character_coverage == 1.0
    assert vocab.trainer_settings(japanese, lang="und") == vocab.TrainerSettings(0.9995, True,
                                                                                 None)


def test_byte_fallback_from_the_size_unless_told():
    assert vocab.trainer_settings([], 32000).byte_fallback
    assert vocab.trainer_settings([], vocab.BYTE_FALLBACK_MIN_SIZE).byte_fallback
    assert not vocab.trainer_settings([], vocab.BYTE_FALLBACK_MIN_SIZE - 1).byte_fallback
    assert not vocab.trainer_settings([], 32000, byte_fallback=False).byte_fallback
    assert vocab.trainer_settings([], 400, byte_fallback=True).byte_fallback


def test_a_rare_letter_of_the_sample_is_a_piece_at_full_coverage(tmp_path):
    texts = corpus(rare="Я")
    vocab.train_vocab(texts, str(tmp_path / "full.model"), 200, lang="en")
    vocab.train_vocab(texts, str(tmp_path / "rich.model"), 200, lang="ja")
    full, rich = (vocab.load(str(tmp_path / name)) for name in ("full.model", "rich.model"))
    assert full.unk_id() not in full.encode("Я river")
    assert full.decode(full.encode("Я river")) == "Я river"
    # 0.9995 leaves a letter this rare out, as the vocabulary did for every language before
    assert rich.unk_id() in rich.encode("Я river")


def test_byte_fallback_spells_unseen_letters_as_bytes(tmp_path):
    path = tmp_path / "bytes.model"
    ids = vocab.train_vocab(corpus(), str(path), 400, byte_fallback=True)
    sp = vocab.load(str(path))
    text = "董 Я हिन्दी river ไทย"  # not one of these letters is in the training text
    encoded = sp.encode(text)
    assert sp.unk_id() not in encoded
    assert sp.decode(encoded) == text
    assert sum(sp.is_byte(i) for i in range(sp.get_piece_size())) == 256
    # the special ids and separators are where every model expects them
    assert (ids.pad, ids.unk, ids.bos, ids.eos, ids.title_sep, ids.sep) == (0, 1, 2, 3, 4, 5)
    without = tmp_path / "plain.model"
    vocab.train_vocab(corpus(), str(without), 400, byte_fallback=False)
    plain = vocab.load(str(without))
    assert plain.unk_id() in plain.encode(text)
    assert not any(plain.is_byte(i) for i in range(plain.get_piece_size()))


def test_a_vocabulary_too_small_for_its_characters_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="cannot train a vocabulary of 100 pieces.*byte "
                                         "fallback on"):
        vocab.train_vocab(corpus(), str(tmp_path / "v.model"), 100, byte_fallback=True)
    assert not (tmp_path / "v.model").exists()


def write_ingest(folder, texts: list[str], summary: dict) -> str:
    """A finished ingest output: one article shard (the columns the vocabulary reads) and
    summary.json."""
    (folder / "articles").mkdir(parents=True)
    rows = [{"split": "train", "lead": text, "references": [{"paragraphs": [text]}]}
            for text in texts]
    schema = pa.schema([("split", pa.string()), ("lead", pa.string()),
                        ("references", pa.list_(pa.struct([("paragraphs",
                                                             pa.list_(pa.string()))])))])
    shards.write_table(str(folder / "articles" / "articles-00000-of-00001.parquet"), rows,
                       schema)
    (folder / "summary.json").write_text(json.dumps({"shards": {"articles": 1}, **summary}))
    return str(folder)


@pytest.mark.parametrize(("summary", "expected"), [
    ({"language": "uk"}, "uk"), ({"options": {"lang": "ja"}}, "ja"),
    ({"language": "und", "options": {"lang": "vi"}}, "vi"), ({"options": {}}, None), ({}, None),
])
def test_the_ingest_outputs_language(tmp_path, summary, expected):
    assert vocab.ingest_language(write_ingest(tmp_path, ["a b"], summary)) == expected


def test_the_ingest_language_of_a_folder_without_one_is_none(tmp_path):
    assert vocab.ingest_language(str(tmp_path)) is None
    (tmp_path / "summary.json").write_text("{not json")
    assert vocab.ingest_language(str(tmp_path)) is None


def test_wikisum_vocab_takes_the_ingest_outputs_language_and_lang_overrides_it(tmp_path, capsys):
    texts = corpus(rare="Я")
    ingest = write_ingest(tmp_path / "ingest", texts, {"options": {"lang": "ja"}})
    rich, full = tmp_path / "rich.model", tmp_path / "full.model"
    assert cli.main(["vocab", "--data", ingest, "--out", str(rich), "--vocab-size", "200"]) == 0
    assert cli.main(["vocab", "--data", ingest, "--out", str(full), "--vocab-size", "200",
                     "--lang", "en"]) == 0
    ja, en = vocab.load(str(rich)), vocab.load(str(full))
    assert ja.unk_id() in ja.encode("Я")  # Japanese: 0.9995 leaves the one Я out
    assert en.unk_id() not in en.encode("Я")  # --lang en: every character is a piece
    fallback = tmp_path / "bytes.model"
    assert cli.main(["vocab", "--data", ingest, "--out", str(fallback), "--vocab-size", "400",
                     "--byte-fallback"]) == 0
    sp = vocab.load(str(fallback))
    assert sp.unk_id() not in sp.encode("董") and sp.decode(sp.encode("董")) == "董"


def test_wikisum_vocab_says_when_the_size_cannot_hold_the_byte_pieces(tmp_path, capsys):
    ingest = write_ingest(tmp_path / "ingest", corpus(), {})
    with pytest.raises(SystemExit, match="wikisum vocab: sentencepiece cannot train"):
        cli.main(["vocab", "--data", ingest, "--out", str(tmp_path / "v.model"),
                  "--vocab-size", "100", "--byte-fallback"])
