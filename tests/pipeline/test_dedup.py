from __future__ import annotations

import gzip
import json
import os
import random
import subprocess
import sys

import pytest

from wikisum.core.text import words
from wikisum.pipeline.dedup import EXACT, NEAR, Duplicate, duplicate_paragraphs, find_duplicates
from wikisum.pipeline.ingest.config import DedupConfig

# 40 distinct words: a paragraph long enough for near-duplicate matching.
BASE = ("The committee met on Tuesday to discuss the new budget for the regional hospital, "
        "which has struggled with rising costs since the pandemic began; members agreed that "
        "further savings were needed before winter but could not settle on where exactly to "
        "cut").split()


def text(tokens: list[str]) -> str:
    return " ".join(tokens)


def replaced(tokens: list[str], positions: range, prefix: str) -> list[str]:
    return [f"{prefix}{i}" if i in positions else t for i, t in enumerate(tokens)]


def shingle_jaccard(a: str, b: str, k: int = 3) -> float:
    x, y = words(a), words(b)
    sa = {tuple(x[i:i + k]) for i in range(len(x) - k + 1)}
    sb = {tuple(y[i:i + k]) for i in range(len(y) - k + 1)}
    return len(sa & sb) / len(sa | sb)


def test_default_config():
    assert DedupConfig() == DedupConfig(threshold=0.6, shingle=3, num_perm=64, min_words=10,
                                        near=True)


@pytest.mark.parametrize("bad", [dict(threshold=0.0), dict(threshold=1.5), dict(shingle=0),
                                 dict(min_words=0), dict(num_perm=1)])
def test_config_is_checked(bad):
    with pytest.raises(ValueError):
        DedupConfig(**bad)


def test_first_occurrence_in_citation_order_is_kept():
    a = text(BASE)
    b = text(replaced(BASE, range(20, 22), "other"))
    assert duplicate_paragraphs([[a], [b]]) == [[None], [NEAR]]
    assert duplicate_paragraphs([[b], [a]]) == [[None], [NEAR]]
    found = find_duplicates([["Unrelated words in a short line.", a], [b]])
    assert found[1][0] == Duplicate(NEAR, 0, 1, pytest.approx(shingle_jaccard(a, b)))


def test_exact_after_normalisation():
    a = text(BASE) + "."
    variants = [
        a.upper(),                                   # case
        a.replace(",", "").replace(";", " -- "),     # punctuation
        "  " + a.replace(" ", "\n\t  ") + "  ",      # whitespace
        "„" + a.replace("committee", "Committee") + "“",
    ]
    result = find_duplicates([[a], variants])
    assert result[0] == [None]
    assert result[1] == [Duplicate(EXACT, 0, 0, 1.0)] * len(variants)


def test_exact_applies_to_short_paragraphs():
    assert duplicate_paragraphs([["Read more!"], ["READ MORE"], ["read more."]]) == [
        [None], [EXACT], [EXACT]]


def test_near_duplicate_with_a_few_words_changed():
    a = text(BASE)
    edits = {
        "substituted": replaced(BASE, range(10, 12), "new"),
        "inserted": BASE[:15] + ["reportedly", "again"] + BASE[15:],
        "deleted": BASE[:5] + BASE[7:],
        "byline": ["BERLIN", "(dpa)", "-"] + BASE,
    }
    for name, tokens in edits.items():
        b = text(tokens)
        assert shingle_jaccard(a, b) >= DedupConfig().threshold, name
        assert duplicate_paragraphs([[a], [b]]) == [[None], [NEAR]], name


def test_near_matching_can_be_turned_off():
    a = text(BASE)
    b = text(replaced(BASE, range(10, 12), "new"))
    assert duplicate_paragraphs([[a], [b, a.upper()]], DedupConfig(near=False)) == [
        [None], [None, EXACT]]


def test_distinct_paragraphs_are_kept():
    a = text(BASE)
    half = text(replaced(BASE, range(0, 20), "other"))  # half of the words replaced
    assert shingle_jaccard(a, half) < DedupConfig().threshold
    other = ("Heavy rain flooded several streets in the old town overnight, and the fire "
             "brigade pumped water out of dozens of cellars until the early morning hours.")
    assert duplicate_paragraphs([[a, other], [half]]) == [[None, None], [None]]


def test_threshold_decides():
    a = text(BASE)
    b = text(replaced(BASE, range(10, 14), "new"))
    similarity = shingle_jaccard(a, b)
    assert duplicate_paragraphs([[a], [b]], DedupConfig(threshold=similarity)) == [[None], [NEAR]]
    assert duplicate_paragraphs([[a], [b]], DedupConfig(threshold=similarity + 0.01)) == [
        [None], [None]]


def test_short_paragraphs_take_part_in_exact_matching_only():
    short = "The council approved the plan on Monday evening."  # 8 words
    edited = "The council approved the new plan on Monday evening."
    assert duplicate_paragraphs([[short], [edited]]) == [[None], [None]]
    assert duplicate_paragraphs([[short], [edited]], DedupConfig(threshold=0.4, min_words=5)) == [
        [None], [NEAR]]
    # A long paragraph is never a near duplicate of a short one, nor the other way round.
    long = text(BASE[:9])
    assert duplicate_paragraphs([[long], [text(BASE[:10])]]) == [[None], [None]]


def test_paragraphs_shorter_than_a_shingle():
    config = DedupConfig(shingle=5, min_words=2)
    assert duplicate_paragraphs([["alpha beta gamma", "alpha beta delta", "Alpha, beta gamma!"]],
                                config) == [[None, None, EXACT]]


def test_repeats_inside_one_reference():
    a = text(BASE)
    b = text(replaced(BASE, range(30, 31), "x"))
    assert duplicate_paragraphs([[a, "Something else entirely here.", a.upper(), b]]) == [
        [None, None, EXACT, NEAR]]


def test_compared_with_kept_paragraphs_only():
    a = text(BASE)
    b = text(replaced(BASE, range(0, 6), "x"))      # near a
    c = text(replaced(replaced(BASE, range(0, 6), "x"), range(34, 40), "y"))  # near b, not a
    assert shingle_jaccard(b, c) >= 0.6 > shingle_jaccard(a, c)
    assert duplicate_paragraphs([[a], [b], [c]]) == [[None], [NEAR], [None]]
    # Without a, b is kept and c repeats it.
    assert duplicate_paragraphs([[b], [c]]) == [[None], [NEAR]]


def test_the_most_similar_kept_paragraph_is_named():
    a = text(BASE)
    b = text(replaced(BASE, range(0, 11), "x"))  # kept: too far from a
    c = text(replaced(BASE, range(0, 5), "x"))   # near both, nearer a
    assert shingle_jaccard(a, b) < 0.6 <= shingle_jaccard(c, b) < shingle_jaccard(c, a)
    found = find_duplicates([[b, a], [c]])
    assert found[0] == [None, None]
    assert found[1][0] == Duplicate(NEAR, 0, 1, pytest.approx(shingle_jaccard(c, a)))


def test_empty_input():
    assert duplicate_paragraphs([]) == []
    assert duplicate_paragraphs([[], []]) == [[], []]
    assert duplicate_paragraphs([[], ["One short line."], []]) == [[], [None], []]
    assert duplicate_paragraphs([["", "..."]]) == [[None, EXACT]]  # no words: the same text


def brute_force(references, config):
    """The rule without LSH: each long paragraph against every kept one."""
    k, kept_texts, kept_sets, result = config.shingle, set(), [], []
    for reference in references:
        out = []
        for paragraph in reference:
            tokens = words(paragraph)
            norm = " ".join(tokens)
            if norm in kept_texts:
                out.append(EXACT)
                continue
            if len(tokens) >= config.min_words:
                mine = {tuple(tokens[i:i + k]) for i in range(len(tokens) - k + 1)}
                if any(len(mine & s) / len(mine | s) >= config.threshold for s in kept_sets):
                    out.append(NEAR)
                    continue
                kept_sets.append(mine)
            kept_texts.add(norm)
            out.append(None)
        result.append(out)
    return result


def generated_article(seed: int = 0, references: int = 40) -> list[list[str]]:
    """References of random sentences, many of them edited copies of earlier paragraphs."""
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(300)]
    pool: list[list[str]] = []
    article = []
    for _ in range(references):
        reference = []
        for _ in range(rng.randint(3, 12)):
            if pool and rng.random() < 0.4:
                tokens = list(rng.choice(pool))
                for _ in range(rng.choice((0, 1, 1, 2, 3, 5, 8))):
                    tokens[rng.randrange(len(tokens))] = rng.choice(vocabulary)
            else:
                tokens = [rng.choice(vocabulary) for _ in range(rng.randint(4, 60))]
            pool.append(tokens)
            reference.append(text(tokens))
        article.append(reference)
    return article


@pytest.mark.parametrize("config", [DedupConfig(), DedupConfig(threshold=0.8, num_perm=128),
                                    DedupConfig(threshold=0.5, shingle=2, min_words=5)])
def test_lsh_finds_what_brute_force_finds(config):
    article = generated_article()
    expected = brute_force(article, config)
    assert sum(r == NEAR for ref in expected for r in ref) >= 15
    assert duplicate_paragraphs(article, config) == expected


def test_same_result_in_another_process_with_another_hash_seed():
    article = generated_article(seed=1, references=15)
    code = ("import json, sys; from wikisum.pipeline.dedup import find_duplicates; "
            "print(json.dumps([[d and [d.reason, d.reference, d.paragraph, d.similarity] "
            "for d in ref] for ref in find_duplicates(json.load(sys.stdin))]))")
    outputs = []
    for seed in ("0", "12345"):
        done = subprocess.run([sys.executable, "-c", code], input=json.dumps(article),
                              capture_output=True, text=True, check=True,
                              env={**os.environ, "PYTHONHASHSEED": seed})
        outputs.append(json.loads(done.stdout))
    here = [[d and [d.reason, d.reference, d.paragraph, d.similarity] for d in ref]
            for ref in find_duplicates(article)]
    assert outputs[0] == outputs[1] == here
    assert any(d and d[0] == NEAR for ref in here for d in ref)


# --- Real pages ---------------------------------------------------------------------------------

def real_paragraphs(shared_data, name: str) -> list[str]:
    """A real page's paragraphs of 5+ words, by the project's extraction path."""
    from wikisum.core import paragraphs
    from wikisum.pipeline import webtext

    data = shared_data / "extraction"
    urls = {entry["file"]: url for url, entry in
            json.loads((data / "evaldata.json").read_text(encoding="utf-8")).items()}
    body = gzip.decompress((data / "pages" / f"{name}.gz").read_bytes())
    html, _encoding = webtext.decode_body(body, None)
    text_ = webtext.extract_main_text(html, urls[name], timeout_s=None)
    return [p for p in paragraphs.split_paragraphs(text_) if len(words(p)) >= 5]


def syndicated(paragraphs: list[str]) -> tuple[list[str], list[str]]:
    """A copy as a news site would run it, and the reason each paragraph should get: paragraphs
    of 20+ words edited in turn (a byline; a word replaced; a word cut and an agency suffix;
    case and punctuation only), shorter ones copied verbatim."""
    copy, expected = [], []
    for i, paragraph in enumerate(paragraphs):
        tokens = paragraph.split()
        middle = len(tokens) // 2
        if len(words(paragraph)) < 20 or i % 4 == 3:
            edited = paragraph.lower().replace(",", " ,").rstrip(".") if len(
                words(paragraph)) >= 20 else paragraph
            copy.append(edited)
            expected.append(EXACT)
        elif i % 4 == 0:
            copy.append("BERLIN (dpa) - " + paragraph)
            expected.append(NEAR)
        elif i % 4 == 1:
            copy.append(" ".join(tokens[:middle] + ["reportedly"] + tokens[middle + 1:]))
            expected.append(NEAR)
        else:
            copy.append(" ".join(tokens[:middle] + tokens[middle + 1:]) + " (AFP)")
            expected.append(NEAR)
    return copy, expected


@pytest.mark.shared_data
def test_real_syndicated_copy_is_dropped_and_other_pages_kept(shared_data):
    names = ["haitiantimes.com-family.html", "battery-news.de.ultium-cells.html",
             "searchlight.vc-dimond.html", "backen.de.maulwurfkuchen.html"]
    pages = [real_paragraphs(shared_data, name) for name in names]
    assert all(len(p) >= 3 for p in pages)
    # Distinct pages: nothing is dropped.
    assert duplicate_paragraphs(pages) == [[None] * len(p) for p in pages]

    copy, expected = syndicated(pages[0])
    assert expected.count(NEAR) >= 3
    article = [pages[0], pages[1], pages[2], copy, pages[3]]
    result = duplicate_paragraphs(article)
    assert result[3] == expected
    for i in (0, 1, 2, 4):
        assert result[i] == [None] * len(article[i])
    # The copy first: the original's paragraphs are the ones dropped.
    reordered = duplicate_paragraphs([copy, pages[1], pages[0]])
    assert reordered[0] == [None] * len(copy)
    assert reordered[2] == expected


@pytest.mark.shared_data
def test_real_agency_story_on_two_sites(shared_data):
    # The same EFE story about President Boric, run by two Chilean sites with light edits.
    first = real_paragraphs(shared_data, "24horas.cl-segundo.html")
    second = real_paragraphs(shared_data, "cooperativa.cl-presidente.html")
    found = find_duplicates([first, second])
    assert found[0] == [None] * len(first)
    by_start = {p[:30]: d for p, d in zip(second, found[1], strict=True)}
    near = by_start["Diversas encuestas apuntan hac"]
    assert near.reason == NEAR and near.similarity < 1.0
    assert first[near.paragraph].startswith("Diversas encuestas")
    assert by_start["En este contexto, Boric retorn"].reason == EXACT
    dropped = [d for d in found[1] if d is not None]
    assert len(dropped) >= 4
    assert sum(d is None for d in found[1]) >= 4  # what only one site wrote is kept
