"""The vectorised feature walk gives py3langid's own answers, bit for bit."""

from __future__ import annotations

import gzip
import random
from array import array

import numpy as np
import pytest
from py3langid.langid import MODEL_FILE, LanguageIdentifier

from wikisum.pipeline import language, langwalk


@pytest.fixture(scope="module")
def plain() -> LanguageIdentifier:
    return LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)


@pytest.fixture(scope="module")
def fast():
    return language._get_identifier()


def random_texts(seed: int, count: int) -> list:
    rng = random.Random(seed)
    alphabet = ("abcdefghijklmnopqrstuvwxyz ABCDEFG.,;:!?'\"\n\t0123456789" "éèàüößçñ"
                "日本語の文章中文汉字한국어" "русскийязык" "ελληνικά" "العربية" "עברית" "हिन्दी"
                "\u200b\u2028\x00")
    texts: list = ["", " ", "a", "ab", "abcde", "abcdef", "abcdefg", "A" * 40, "1234567890"]
    for _ in range(count):
        texts.append("".join(rng.choice(alphabet) for _ in range(rng.randint(0, 1500))))
    for _ in range(count // 4):  # raw bytes, invalid UTF-8 included
        texts.append(bytes(rng.randrange(256) for _ in range(rng.randint(0, 400))))
    return texts


def test_the_identifier_in_use_is_the_vectorised_one(fast):
    assert type(fast).__name__ == "VectorisedIdentifier"


def test_answers_and_rankings_equal_py3langids_on_random_texts(plain, fast):
    texts = random_texts(0, 400)
    for text in texts:
        assert fast.classify(text) == plain.classify(text), repr(text)[:80]
    for text in texts[:40]:
        assert fast.rank(text) == plain.rank(text)


def test_the_counts_equal_py3langids_walk_in_first_occurrence_order(plain, fast):
    from py3langid.langid import visit_counts

    for text in random_texts(1, 60):
        data = plain._encode(text)
        expected = visit_counts(plain.tk_nextmove, plain._rowbase, plain.tk_output, data)
        found = fast._walk.counts(data)
        if expected is None:
            assert found is None
            continue
        features, counts = found
        assert features.tolist() == list(expected.keys())
        assert counts.tolist() == list(expected.values())


def test_the_walk_equals_a_sequential_walk_on_a_hand_made_automaton():
    # Patterns "ab" and "b" over the bytes a/b: states 0 root, 1 "a", 2 "ab", 3 "b".
    # Features: 0 for "ab" (state 2), 1 for "b" (states 2 and 3 end with "b": state 3's own).
    class Toy:
        tk_nextmove = array("I", [0] * (4 * 256))
        _rowbase = [0, 256, 512, 768]
        tk_output = [-1, -1, 0, 1]

    a, b = ord("a"), ord("b")
    for state in range(4):
        Toy.tk_nextmove[Toy._rowbase[state] + a] = 1
        Toy.tk_nextmove[Toy._rowbase[state] + b] = 2 if state == 1 else 3
    walk = langwalk.FeatureWalk(Toy)
    assert walk.depth == 2  # found by breadth-first search: not a known py3langid model
    data = b"abbaabxab"
    state, expected = 0, []
    for byte in data:
        state = Toy.tk_nextmove[Toy._rowbase[state] + byte]
        expected.append(state)
    assert walk.states(data).tolist() == expected == [1, 2, 3, 1, 1, 2, 0, 1, 2]
    features, counts = walk.counts(data)
    assert features.tolist() == [0, 1] and counts.tolist() == [3, 1]
    assert walk.counts(b"aaa") is None


def test_the_known_depth_is_the_shipped_models(fast):
    walk = fast._walk
    found = langwalk.trie_depth(walk.nextmove, walk.rowbase)
    assert found == walk.depth
    known = langwalk.shipped_model_depth()
    assert known is None or known == found


def test_an_identifier_of_another_layout_keeps_py3langids_walk(plain):
    class Other:
        tk_nextmove = [0, 1]  # a list, not the array this walk reads
    assert not langwalk.supported(Other())
    assert langwalk.supported(plain)
    unprepared = langwalk.vectorised(LanguageIdentifier).from_model_file(MODEL_FILE,
                                                                        norm_probs=True)
    assert unprepared.classify("Das ist ein deutscher Satz über Sprache und Wörter.") == \
        plain.classify("Das ist ein deutscher Satz über Sprache und Wörter.")


def test_a_language_subset_keeps_the_float32_table_in_step(plain):
    fast = langwalk.vectorised(LanguageIdentifier).from_model_file(
        MODEL_FILE, norm_probs=True).prepare()
    other = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
    fast.set_languages(["de", "nl", "en"])
    other.set_languages(["de", "nl", "en"])
    for text in ["Het is een mooie dag vandaag.", "Es ist ein schöner Tag heute.",
                 "It is a fine day today."]:
        assert fast.classify(text) == other.classify(text)
    assert fast._table32.shape == (fast.nb_ptc.shape[0], 3)
    assert np.array_equal(fast._table32, fast.nb_ptc.astype(np.float32))


@pytest.mark.shared_data
def test_answers_equal_py3langids_on_the_real_pages(shared_data, plain, fast):
    from wikisum.pipeline import webtext

    pages = sorted((shared_data / "extraction" / "pages").glob("*.html.gz"))
    assert len(pages) >= 800
    batch: list[str] = []
    for path in pages:
        html, _ = webtext.decode_body(gzip.decompress(path.read_bytes()), None)
        sample = html[:language.DEFAULT_MAX_CHARS * 4]
        for text in (sample, sample[:language.DEFAULT_MAX_CHARS]):
            assert fast.classify(text) == plain.classify(text), path.name
        batch.append(sample[:language.DEFAULT_MAX_CHARS])
    for start in range(0, len(batch), 32):  # as the cleaning walks a batch of pages
        texts = batch[start:start + 32]
        assert fast.classify_many(texts) == [plain.classify(t) for t in texts]


# --- the unpacked model, cached ---------------------------------------------------------------

def _vectorised():
    return langwalk.vectorised(LanguageIdentifier)


def _model():
    return language._model_path(MODEL_FILE)


def test_a_model_from_the_cache_gives_the_same_answers_and_is_not_unpacked(tmp_path, fast,
                                                                            monkeypatch):
    written = langwalk.load(_vectorised(), _model(), langwalk.shipped_model_depth(), tmp_path)
    [entry] = (tmp_path / "language-model").iterdir()
    assert entry.name == langwalk.model_key(_model())
    assert sorted(p.name for p in entry.iterdir()) == [
        "model.json", "nextmove.npy", "output.npy", "pc.npy", "ptc32.npy", "row.npy"]

    def unpacked(*args, **kwargs):
        raise AssertionError("the model was unpacked although it is cached")

    monkeypatch.setattr(LanguageIdentifier, "from_model_file", classmethod(unpacked))
    cached = langwalk.load(_vectorised(), _model(), langwalk.shipped_model_depth(), tmp_path)
    assert type(cached).__name__ == "VectorisedIdentifier" and langwalk.supported(cached)
    assert cached.labels == fast.labels
    for text in random_texts(11, 120):
        assert cached.classify(text) == fast.classify(text) == written.classify(text)
        assert cached.rank(text)[:5] == fast.rank(text)[:5]


def test_no_cache_folder_means_nothing_written(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    for off in ("off", "OFF", "", "  "):
        monkeypatch.setenv(langwalk.CACHE_ENV, off)
        assert langwalk.cache_dir() is None
    langwalk.load(_vectorised(), _model(), langwalk.shipped_model_depth(), None)
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv(langwalk.CACHE_ENV, str(tmp_path / "mine"))
    assert langwalk.cache_dir() == tmp_path / "mine"
    monkeypatch.delenv(langwalk.CACHE_ENV)
    assert langwalk.cache_dir() == tmp_path / ".cache" / "wikisum"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert langwalk.cache_dir() == tmp_path / "xdg" / "wikisum"


def test_a_damaged_entry_is_unpacked_again_and_rewritten(tmp_path, fast, caplog):
    langwalk.load(_vectorised(), _model(), langwalk.shipped_model_depth(), tmp_path)
    [entry] = (tmp_path / "language-model").iterdir()
    table = entry / "ptc32.npy"
    table.write_bytes(table.read_bytes()[:1000])  # cut short, as a full disk would leave it
    with caplog.at_level("WARNING", logger="wikisum.language"):
        again = langwalk.load(_vectorised(), _model(), langwalk.shipped_model_depth(), tmp_path)
    assert "unreadable" in caplog.text
    assert again.classify("Der Hund läuft schnell über die grüne Wiese") == fast.classify(
        "Der Hund läuft schnell über die grüne Wiese")
    assert table.stat().st_size > 50_000_000  # written whole again


def test_one_entry_is_kept_whoever_writes_it_and_others_are_removed(tmp_path):
    models = tmp_path / "language-model"
    stale = models / "py3langid-0.3.0-0123456789abcdef0123"
    stale.mkdir(parents=True)
    (stale / "ptc32.npy").write_bytes(b"old")
    first = langwalk.load(_vectorised(), _model(), langwalk.shipped_model_depth(), tmp_path)
    entry = models / langwalk.model_key(_model())
    langwalk._write_cache(first, entry)  # a second process finishing the same entry later
    assert [p.name for p in models.iterdir()] == [entry.name]  # no stale or temporary folder


def test_an_unwritable_cache_loads_the_model_all_the_same(tmp_path, fast):
    blocked = tmp_path / "file"
    blocked.write_text("a file where the cache folder would be")
    loaded = langwalk.load(_vectorised(), _model(), langwalk.shipped_model_depth(), blocked)
    assert loaded.classify("The quick brown fox jumps over the lazy dog again and again") == (
        fast.classify("The quick brown fox jumps over the lazy dog again and again"))


# --- texts walked together ----------------------------------------------------------------------

def test_the_shipped_model_has_a_reset_byte(fast):
    walk = fast._walk
    assert walk.reset == 0xFF
    assert not walk.nextmove[walk.rowbase + walk.reset].any() and walk.output[0] < 0


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_texts_walked_together_count_as_each_alone(fast, seed):
    walk = fast._walk
    texts = [t if isinstance(t, bytes) else fast._encode(t) for t in random_texts(seed, 60)]
    texts = [t for t in texts if walk.reset not in t]
    rng = random.Random(seed)
    for size in (1, 2, 7, len(texts)):
        batch = rng.sample(texts, size)
        for one, together in zip(map(walk.counts, batch), walk.counts_many(batch), strict=True):
            if one is None:
                assert together is None
            else:
                assert np.array_equal(one[0], together[0])
                assert np.array_equal(one[1], together[1])
    assert walk.counts_many([]) == [] and walk.counts_many([b""]) == [None]


def test_a_text_holding_the_reset_byte_is_walked_alone(fast):
    walk = fast._walk
    texts = [b"plain english words here", bytes([walk.reset]) + b"abc def", b""]
    got = walk.counts_many(texts)
    for one, together in zip(map(walk.counts, texts), got, strict=True):
        assert (one is None and together is None) or all(
            np.array_equal(a, b) for a, b in zip(one, together, strict=True))


@pytest.mark.parametrize("seed", [4, 5])
def test_classify_many_answers_as_classify_bit_for_bit(plain, fast, seed):
    texts = [t for t in random_texts(seed, 80) if isinstance(t, str)]
    assert fast.classify_many(texts) == [plain.classify(t) for t in texts]
    assert fast.classify_many([]) == []


def test_identify_many_answers_as_identify(fast):
    texts = ["", "short", "Der Hund läuft schnell über die grüne Wiese und bellt laut.",
             "The quick brown fox jumps over the lazy dog, again and again and again.",
             "1234 5678 9012 3456", "日本語の文章がここにあります。もっと長い文章を書きます。"] + [
        t for t in random_texts(9, 40) if isinstance(t, str)]
    assert language.identify_many(texts) == [language.identify(t) for t in texts]
    assert language.identify_many(texts, max_chars=50, min_letters=5) == [
        language.identify(t, max_chars=50, min_letters=5) for t in texts]


def test_a_cache_folder_that_cannot_be_looked_into_loads_the_model_without_it(
        tmp_path, fast, monkeypatch, caplog):
    from pathlib import Path

    def refused(self):
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "is_dir", refused)
    with caplog.at_level("WARNING", logger="wikisum.language"):
        loaded = langwalk.load(_vectorised(), _model(), langwalk.shipped_model_depth(), tmp_path)
    assert "cannot be used" in caplog.text
    text = "The quick brown fox jumps over the lazy dog again and again"
    assert loaded.classify(text) == fast.classify(text)


def test_an_entry_whose_arrays_do_not_fit_together_is_rebuilt(tmp_path, fast, caplog):
    langwalk.load(_vectorised(), _model(), langwalk.shipped_model_depth(), tmp_path)
    [entry] = (tmp_path / "language-model").iterdir()
    row = np.load(entry / "row.npy")
    np.save(entry / "row.npy", np.full_like(row, row.max() + 1000))  # rows past the table
    with caplog.at_level("WARNING", logger="wikisum.language"):
        again = langwalk.load(_vectorised(), _model(), langwalk.shipped_model_depth(), tmp_path)
    assert "unreadable" in caplog.text
    assert np.array_equal(np.load(entry / "row.npy"), row)
    assert again.classify("Der Hund läuft über die Wiese") == fast.classify(
        "Der Hund läuft über die Wiese")


def test_a_temporary_entry_left_by_a_killed_writer_is_removed_once_old(tmp_path):
    import os

    models = tmp_path / "language-model"
    old, fresh = models / ".py3langid-x.aaaa.tmp", models / ".py3langid-x.bbbb.tmp"
    for folder in (old, fresh):
        folder.mkdir(parents=True)
        (folder / "ptc32.npy").write_bytes(b"half")
    os.utime(old, (0, 0))
    langwalk.load(_vectorised(), _model(), langwalk.shipped_model_depth(), tmp_path)
    assert not old.exists() and fresh.exists()  # a writer may still be at work in the fresh one


def test_no_home_to_resolve_means_no_cache(monkeypatch):
    monkeypatch.delenv(langwalk.CACHE_ENV, raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(langwalk.os.path, "expanduser", lambda path: path)
    assert langwalk.cache_dir() is None


def test_another_py3langid_release_is_scored_by_its_own_classify(plain, monkeypatch):
    other = langwalk.load(_vectorised(), _model(), langwalk.shipped_model_depth(), None)
    monkeypatch.setattr(langwalk, "KNOWN_DEPTHS", {})  # a release the tests never checked
    other.prepare(langwalk.shipped_model_depth())

    def copied_decide(*args):
        raise AssertionError("the copy of py3langid 0.4's scoring was used")

    monkeypatch.setattr(type(other), "_normalised", copied_decide)
    texts = [t for t in random_texts(21, 20) if isinstance(t, str)]
    assert other.classify_many(texts) == [plain.classify(t) for t in texts]
