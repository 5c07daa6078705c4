"""Exact and near-duplicate paragraphs across an article's references
(``wikisum.pipeline.dedup``) on real pages: throughput, and what the near-duplicate rule's
parameters (shingle size, Jaccard threshold, ``num_perm``, ``min_words``) catch and wrongly catch.

Pages: ``../shared/data/extraction`` (884 real pages of trafilatura's evaluation set, mostly
German and English news, blogs, shops and institutional pages), cut into paragraphs as ingest
does (``webtext.decode_body``, ``extract_main_text``, ``split_paragraphs``), those of at least 5
words kept. The extraction runs in ``--jobs`` processes and is not timed.

Syndicated copies are made the way news sites change an agency story, one edit each:
``punct_case`` (quotes, dashes, a comma, the case of some words), ``byline`` (a "BERLIN (dpa) -"
prefix or "(AFP)" suffix), ``substitute``, ``insert`` and ``delete`` (1 to 3 words),
``sentence_added`` (a sentence from another page appended), ``sentence_cut`` (the first or last
sentence dropped; paragraphs of two or more sentences), and ``mixed`` (a byline, punctuation
and case, 1 or 2 words substituted and one inserted or deleted).

What it measures:

* **Throughput**: paragraphs/s of ``duplicate_paragraphs`` on one core, for articles of 20, 100
  and 500 references drawn from the pages (``--articles`` each, seeded), a quarter of each
  article's references being syndicated copies of an earlier one (every paragraph edited);
  the best of ``--repeats`` runs. The same for other ``num_perm``, and for the same rule built on
  datasketch (``MinHash.bulk`` over the shingles as bytes, ``MinHashLSH`` with the same bands,
  the same exact-Jaccard confirmation); the signatures alone (the module's numpy MinHash
  against ``MinHash.bulk``); and the decisions that differ from brute force (below).
* **LSH misses**: decisions that differ from a brute-force reference (exact Jaccard against every
  kept paragraph, found through an inverted index of shingles), on the throughput's articles
  and on all pages plus syndicated copies of ``--copies`` of them, for each ``num_perm``.
* **Detection**: ``--sample`` real paragraphs, each copied with every edit: the share of copies
  whose shingle-set Jaccard with the original reaches each threshold, per shingle size, edit and
  length (words); and the share that ``duplicate_paragraphs`` with the defaults drops.
* **False positives**: each paragraph's most similar earlier paragraph of another page (exact
  Jaccard): how many paragraphs reach each threshold, per shingle size and ``min_words``, and,
  with the defaults, the pairs themselves, to inspect (a repeat across sites, such as an agency
  story or a cookie notice, is a fair hit). The same within one page: a page's paragraphs share
  its topic and templates ("please call 0800 ..." with another number), the hardest negatives.
* **Real repeats**: all pages as one article (file-name order) through ``find_duplicates`` with
  the defaults: exact and near duplicates of a paragraph of the same page or of an earlier
  page (same site or another), with the cross-page ones listed.

Run by hand, never by CI (about 3 minutes on 2 cores)::

    .venv/bin/python experiments/dedup/run.py
    .venv/bin/python experiments/dedup/run.py --articles 1 --repeats 1 --sample 300   # a smoke run

It prints the figures and writes them, the machine and the command line to
``experiments/results/dedup.json`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
import time
from collections import Counter, defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from functools import partial
from pathlib import Path
from urllib.parse import urlsplit

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import options  # noqa: E402
from machine import command_line, describe, write_results  # noqa: E402

from wikisum.core.text import sentences, words  # noqa: E402
from wikisum.pipeline import dedup  # noqa: E402
from wikisum.pipeline.ingest.config import DedupConfig  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "extraction"
DEFAULT_OUT = ROOT / "experiments" / "results" / "dedup.json"
# Paragraphs shorter than this are left out of the pages (headings, buttons, captions).
PAGE_MIN_WORDS = 5
SIZES = (20, 100, 500)
SHINGLES = (2, 3, 4, 5)
THRESHOLDS = (0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
NUM_PERMS = (32, 64, 128, 256)
MIN_WORDS = (5, 8, 10, 15)
LENGTHS = ((5, 10), (10, 15), (15, 20), (20, 40), (40, 80), (80, 10**9))
EDITS = ("punct_case", "byline", "substitute", "insert", "delete", "sentence_added",
         "sentence_cut", "mixed")
BYLINES = ("BERLIN (dpa) - ", "(dpa) ", "PARIS (AFP) — ", "WASHINGTON (AP) — ",
           "LONDON (Reuters) - ", "Von Anna Müller, dpa: ", "By Jane Doe, Associated Press: ",
           "(SDA) ", "MADRID, 12 may (EFE).- ")
SUFFIXES = (" (dpa)", " (AFP)", " (Reuters)", " /AP", " – Mit Material von dpa.")


# --- Pages --------------------------------------------------------------------------------------

def page_paragraphs(task: tuple[str, str, bytes]) -> tuple[str, str, list[str]]:
    """A page's paragraphs of at least `PAGE_MIN_WORDS` words: (url, file, paragraphs)."""
    from wikisum.core import paragraphs
    from wikisum.pipeline import webtext

    url, name, body = task
    try:
        html, _encoding = webtext.decode_body(body, None)
        text = webtext.extract_main_text(html, url, timeout_s=None)
    except (webtext.DecodeError, webtext.ExtractionError):
        text = ""
    return url, name, [p for p in paragraphs.split_paragraphs(text)
                       if len(words(p)) >= PAGE_MIN_WORDS]


def load_pages(data: Path, jobs: int) -> list[tuple[str, str, list[str]]]:
    entries = json.loads((data / "evaldata.json").read_text(encoding="utf-8"))
    tasks = []
    for url, entry in sorted(entries.items(), key=lambda item: item[1]["file"]):
        path = data / "pages" / (entry["file"] + ".gz")
        if path.exists():
            tasks.append((url, entry["file"], gzip.decompress(path.read_bytes())))
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(page_paragraphs, tasks, chunksize=8))


def site(key: str) -> str:
    """The site of an evaluation-set key: a URL's host, or for the keys that are no URL
    ("hard::nationnews.com-schools.html") the first two labels of the name."""
    host = urlsplit(key).hostname
    if host:
        return host.removeprefix("www.")
    return ".".join(key.removeprefix("hard::").split("-")[0].split(".")[:2])


# --- Syndicated copies --------------------------------------------------------------------------

def _substitute(rng: random.Random, tokens: list[str], vocab: list[str], n: int) -> list[str]:
    tokens = list(tokens)
    for _ in range(n):
        tokens[rng.randrange(len(tokens))] = rng.choice(vocab)
    return tokens


def _insert(rng: random.Random, tokens: list[str], vocab: list[str], n: int) -> list[str]:
    tokens = list(tokens)
    for _ in range(n):
        tokens.insert(rng.randrange(len(tokens) + 1), rng.choice(vocab))
    return tokens


def _delete(rng: random.Random, tokens: list[str], n: int) -> list[str]:
    tokens = list(tokens)
    for _ in range(min(n, len(tokens) - 1)):
        del tokens[rng.randrange(len(tokens))]
    return tokens


def _punct_case(rng: random.Random, text: str) -> str:
    for old, new in (("„", '"'), ("“", '"'), ("”", '"'), ("’", "'"), (" – ", " - ")):
        text = text.replace(old, new)
    tokens = text.replace(",", "", 1).split()
    for _ in range(max(1, len(tokens) // 10)):
        i = rng.randrange(len(tokens))
        tokens[i] = tokens[i].upper() if rng.random() < 0.3 else tokens[i].lower()
    return ("  " if rng.random() < 0.5 else " ").join(tokens)


def syndicate(rng: random.Random, text: str, edit: str, vocab: list[str],
              other: str) -> str | None:
    """A syndicated copy of `text` made with one edit; None where the edit does not apply.
    `vocab` gives inserted and substituted words, `other` an added sentence."""
    tokens = text.split()
    few = rng.randint(1, 3)
    if edit == "punct_case":
        return _punct_case(rng, text)
    if edit == "byline":
        return rng.choice(BYLINES) + text if rng.random() < 0.7 else text + rng.choice(SUFFIXES)
    if edit == "substitute":
        return " ".join(_substitute(rng, tokens, vocab, few))
    if edit == "insert":
        return " ".join(_insert(rng, tokens, vocab, few))
    if edit == "delete":
        return " ".join(_delete(rng, tokens, few))
    if edit == "sentence_added":
        return text + " " + sentences(other)[0]
    if edit == "sentence_cut":
        parts = sentences(text)
        if len(parts) < 2:
            return None
        return " ".join(parts[:-1] if rng.random() < 0.5 else parts[1:])
    if edit == "mixed":
        tokens = (rng.choice(BYLINES) + _punct_case(rng, text)).split()
        tokens = _substitute(rng, tokens, vocab, rng.randint(1, 2))
        tokens = (_insert(rng, tokens, vocab, 1) if rng.random() < 0.5
                  else _delete(rng, tokens, 1))
        return " ".join(tokens)
    raise ValueError(edit)


def syndicated_reference(rng: random.Random, paragraphs: list[str], vocab: list[str],
                         others: list[str]) -> list[str]:
    """A copy of a whole reference, every paragraph with a random edit."""
    copy = []
    for paragraph in paragraphs:
        edited = syndicate(rng, paragraph, rng.choice(EDITS), vocab, rng.choice(others))
        copy.append(edited if edited is not None else paragraph)
    return copy


def make_article(rng: random.Random, pages: list[list[str]], size: int, vocab: list[str],
                 others: list[str]) -> list[list[str]]:
    """`size` references: pages drawn at random, a quarter replaced by syndicated copies of an
    earlier reference of the article."""
    article = [list(p) for p in rng.sample(pages, size - size // 4)]
    for _ in range(size // 4):
        source = rng.randrange(len(article))
        article.insert(rng.randint(source + 1, len(article)),
                       syndicated_reference(rng, article[source], vocab, others))
    return article


# --- Jaccard, brute force and datasketch ------------------------------------------------------

def shingle_set(tokens: list[str], k: int) -> set[tuple[str, ...]]:
    if len(tokens) < k:
        return {tuple(tokens)}
    return {tuple(tokens[i:i + k]) for i in range(len(tokens) - k + 1)}


def jaccard(a: set, b: set) -> float:
    common = len(a & b)
    return common / (len(a) + len(b) - common)


def brute_force(references: list[list[str]], config: DedupConfig) -> list[list]:
    """The rule of `duplicate_paragraphs` without LSH: every kept paragraph sharing a shingle is
    compared (an inverted index of shingles finds them)."""
    kept_texts: set[str] = set()
    holders: dict[tuple, list[int]] = defaultdict(list)
    kept_sets: list[set] = []
    result = []
    for reference in references:
        out = []
        for paragraph in reference:
            tokens = words(paragraph)
            norm = " ".join(tokens)
            if norm in kept_texts:
                out.append(dedup.EXACT)
                continue
            if len(tokens) >= config.min_words:
                shingles = shingle_set(tokens, config.shingle)
                common = Counter(j for s in shingles for j in holders.get(s, ()))
                if any(c / (len(shingles) + len(kept_sets[j]) - c) >= config.threshold
                       for j, c in common.items()):
                    out.append(dedup.NEAR)
                    continue
                for s in shingles:
                    holders[s].append(len(kept_sets))
                kept_sets.append(shingles)
            kept_texts.add(norm)
            out.append(None)
        result.append(out)
    return result


def datasketch_duplicates(references: list[list[str]],
                          config: DedupConfig) -> list[list]:
    """The rule of `duplicate_paragraphs` built on datasketch: MinHash.bulk over each distinct
    long paragraph's shingles (as bytes, sha1), MinHashLSH with the module's bands, the same
    exact-Jaccard confirmation."""
    from datasketch import MinHash, MinHashLSH

    rows, bands = dedup._lsh_bands(config.threshold, config.num_perm)
    k = config.shingle
    tokenised = [[words(p) for p in reference] for reference in references]
    shingles: dict[str, list[bytes]] = {}
    for reference in tokenised:
        for tokens in reference:
            norm = " ".join(tokens)
            if len(tokens) >= config.min_words and norm not in shingles:
                shingles[norm] = [" ".join(tokens[i:i + k]).encode()
                                  for i in range(max(len(tokens) - k + 1, 1))]
    texts = list(shingles)
    row_of = {norm: i for i, norm in enumerate(texts)}
    signatures = MinHash.bulk([shingles[t] for t in texts], num_perm=config.num_perm, seed=1)
    index = MinHashLSH(num_perm=config.num_perm, params=(bands, rows))
    sets: dict[int, frozenset] = {}
    kept: set[str] = set()
    result = []
    for reference in tokenised:
        out = []
        for tokens in reference:
            norm = " ".join(tokens)
            if norm in kept:
                out.append(dedup.EXACT)
                continue
            row = row_of.get(norm)
            if row is not None:
                mine = sets.setdefault(row, frozenset(shingles[norm]))
                if any(jaccard(mine, sets[other]) >= config.threshold
                       for other in sorted(index.query(signatures[row]))):
                    out.append(dedup.NEAR)
                    continue
                index.insert(row, signatures[row], check_duplication=False)
            kept.add(norm)
            out.append(None)
        result.append(out)
    return result


def signatures_numpy(paragraphs: list[list[str]], config: DedupConfig) -> None:
    shingles, ends = dedup._shingle_hashes(paragraphs, config.shingle)
    dedup._minhash(shingles, ends - np.diff(ends, prepend=0), config.num_perm)


def signatures_datasketch(shingles: list[list[bytes]], config: DedupConfig) -> None:
    from datasketch import MinHash

    MinHash.bulk(shingles, num_perm=config.num_perm, seed=1)


def differences(a: list[list], b: list[list]) -> int:
    return sum(x != y for ra, rb in zip(a, b, strict=True) for x, y in zip(ra, rb, strict=True))


def best_time(function, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        function()
        best = min(best, time.process_time() - start)
    return best


# --- Measurements -------------------------------------------------------------------------------

def throughput(pages: list[list[str]], vocab: list[str], others: list[str], config,
               args) -> dict:
    rng = random.Random(args.seed)
    result: dict = {}
    for size in SIZES:
        articles = [make_article(rng, pages, size, vocab, others) for _ in range(args.articles)]
        n = sum(len(ref) for a in articles for ref in a)
        entry = {"articles": len(articles), "paragraphs": n, "paragraphs_per_s": {},
                 "dropped": dict(Counter(r for a in articles
                                         for ref in dedup.duplicate_paragraphs(a, config)
                                         for r in ref if r))}
        reference = [brute_force(a, config) for a in articles]
        entry["brute_force_near"] = sum(r == dedup.NEAR for b in reference for ref in b
                                        for r in ref)
        entry["lsh_misses"] = {}
        for num_perm in NUM_PERMS:
            c = replace(config, num_perm=num_perm)
            seconds = sum(best_time(lambda a=a, c=c: dedup.duplicate_paragraphs(a, c),
                                    args.repeats) for a in articles)
            entry["paragraphs_per_s"][f"numpy_{num_perm}"] = round(n / seconds)
            entry["lsh_misses"][f"numpy_{num_perm}"] = sum(
                differences(b, dedup.duplicate_paragraphs(a, c))
                for a, b in zip(articles, reference, strict=True))
        seconds = sum(best_time(lambda a=a: datasketch_duplicates(a, config), args.repeats)
                      for a in articles)
        entry["paragraphs_per_s"][f"datasketch_{config.num_perm}"] = round(n / seconds)
        # Signatures alone: the MinHash of every distinct paragraph of 10+ words.
        long_texts = [list(t) for t in dict.fromkeys(
            tuple(words(p)) for a in articles for ref in a for p in ref)
            if len(t) >= config.min_words]
        as_bytes = [[" ".join(t[i:i + config.shingle]).encode()
                     for i in range(max(len(t) - config.shingle + 1, 1))] for t in long_texts]
        entry["signatures"] = len(long_texts)
        entry["signatures_per_s"] = {
            f"numpy_{config.num_perm}": round(len(long_texts) / best_time(
                partial(signatures_numpy, long_texts, config), args.repeats)),
            f"datasketch_{config.num_perm}": round(len(long_texts) / best_time(
                partial(signatures_datasketch, as_bytes, config), args.repeats))}
        entry["lsh_misses"][f"datasketch_{config.num_perm}"] = sum(
            differences(b, datasketch_duplicates(a, config))
            for a, b in zip(articles, reference, strict=True))
        result[str(size)] = entry
        print(f"  {size:4} references: {n:6} paragraphs, paragraphs/s "
              + ", ".join(f"{k} {v:,}" for k, v in entry["paragraphs_per_s"].items())
              + f"; decisions differing from brute force ({entry['brute_force_near']} near) "
              + ", ".join(f"{k} {v}" for k, v in entry["lsh_misses"].items())
              + "; signatures/s "
              + ", ".join(f"{k} {v:,}" for k, v in entry["signatures_per_s"].items()),
              flush=True)
    return result


def lsh_misses(pages: list[list[str]], vocab: list[str], others: list[str], config,
               args) -> dict:
    rng = random.Random(args.seed + 1)
    article = [list(p) for p in pages] + [syndicated_reference(rng, p, vocab, others)
                                          for p in rng.sample(pages, args.copies)]
    reference = brute_force(article, config)
    counts = Counter(r for ref in reference for r in ref)
    result = {"paragraphs": sum(map(len, article)), "brute_force": {
        "kept": counts[None], "exact": counts[dedup.EXACT], "near": counts[dedup.NEAR]},
        "differences": {}}
    for num_perm in NUM_PERMS:
        c = replace(config, num_perm=num_perm)
        result["differences"][str(num_perm)] = {
            "bands": list(dedup._lsh_bands(c.threshold, num_perm)),
            "decisions_differing": differences(reference, dedup.duplicate_paragraphs(article, c))}
    print(f"  all pages + {args.copies} syndicated copies, {result['paragraphs']} paragraphs, "
          f"brute force {result['brute_force']}; decisions differing per num_perm: "
          + ", ".join(f"{k}: {v['decisions_differing']}"
                      for k, v in result["differences"].items()), flush=True)
    return result


def bucket(n: int) -> str:
    for lo, hi in LENGTHS:
        if lo <= n < hi:
            return f"{lo}-{hi - 1}" if hi < 10**9 else f"{lo}+"
    return f"<{LENGTHS[0][0]}"


def detection(paragraphs: list[str], vocab: list[str], config, args) -> dict:
    rng = random.Random(args.seed + 2)
    eligible = [p for p in paragraphs if len(words(p)) >= LENGTHS[0][0]]
    sample = rng.sample(eligible, min(args.sample, len(eligible)))
    pairs = []  # (edit, words of the original, original, copy)
    for paragraph in sample:
        for edit in EDITS:
            copy = syndicate(rng, paragraph, edit, vocab, rng.choice(paragraphs))
            if copy is not None:
                pairs.append((edit, len(words(paragraph)), paragraph, copy))
    # share[k][threshold][group]: copies reaching the threshold, per edit (>= min_words),
    # per length (all edits but punct_case, which leaves the words unchanged).
    share: dict = {}
    for k in SHINGLES:
        sims = [(edit, n, jaccard(shingle_set(words(a), k), shingle_set(words(b), k)))
                for edit, n, a, b in pairs]
        share[str(k)] = {}
        for t in THRESHOLDS:
            groups: dict[str, list[bool]] = defaultdict(list)
            for edit, n, j in sims:
                if n >= config.min_words:
                    groups[edit].append(j >= t)
                    groups["all_edits"].append(j >= t)
                if edit != "punct_case":
                    groups[f"words_{bucket(n)}"].append(j >= t)
            share[str(k)][str(t)] = {g: round(sum(v) / len(v), 3) for g, v in groups.items()}
    # What duplicate_paragraphs drops, with the defaults.
    dropped: dict[str, list[bool]] = defaultdict(list)
    for edit, n, a, b in pairs:
        reason = dedup.duplicate_paragraphs([[a], [b]], config)[1][0]
        group = edit if n >= config.min_words else f"{edit}_under_min_words"
        dropped[group].append(reason is not None)
        if n >= config.min_words:
            dropped["all_edits"].append(reason is not None)
    module = {g: round(sum(v) / len(v), 3) for g, v in sorted(dropped.items())}
    print(f"  {len(sample)} paragraphs, {len(pairs)} copies; duplicate_paragraphs drops "
          + ", ".join(f"{g} {v:.3f}" for g, v in module.items() if "under" not in g), flush=True)
    print("  copies reaching the threshold (>= min_words, all edits) per shingle size:")
    for k in SHINGLES:
        print(f"    k={k}: " + "  ".join(f"{t}: {share[str(k)][str(t)]['all_edits']:.3f}"
                                         for t in THRESHOLDS))
    return {"paragraphs": len(sample), "copies": len(pairs), "share_reaching": share,
            "dropped_by_module": module}


def best_earlier(pages: list[tuple[str, str, list[str]]], k: int, same_page: bool
                 ) -> list[tuple[int, float, tuple[int, int] | None, tuple[int, int]]]:
    """For each distinct paragraph of 5+ words (first occurrence), its most similar earlier
    paragraph on another page (or, with `same_page`, on its own page): (words, Jaccard, where
    the match is, where it is), positions as (page, paragraph)."""
    holders: dict[tuple, list[int]] = defaultdict(list)
    sets: list[set] = []
    where: list[tuple[int, int]] = []
    seen: set[str] = set()
    result = []
    for page, (_url, _name, paragraphs) in enumerate(pages):
        if same_page:
            holders, sets, where, seen = defaultdict(list), [], [], set()
        for i, paragraph in enumerate(paragraphs):
            tokens = words(paragraph)
            norm = " ".join(tokens)
            if norm in seen or len(tokens) < min(MIN_WORDS):
                continue
            seen.add(norm)
            mine = shingle_set(tokens, k)
            common = Counter(j for s in mine for j in holders.get(s, ()))
            best, match = 0.0, None
            for j, c in common.items():
                if same_page or where[j][0] != page:
                    similarity = c / (len(mine) + len(sets[j]) - c)
                    if similarity > best:
                        best, match = similarity, where[j]
            result.append((len(tokens), best, match, (page, i)))
            for s in mine:
                holders[s].append(len(sets))
            sets.append(mine)
            where.append((page, i))
    return result


def false_positives(pages, config, args) -> dict:
    result: dict = {}
    for scope in ("other_page", "same_page"):
        result[scope] = {"counts": {}}
        for k in SHINGLES:
            matches = best_earlier(pages, k, same_page=scope == "same_page")
            result[scope]["counts"][str(k)] = {
                str(mw): {str(t): sum(1 for n, j, _m, _w in matches if n >= mw and j >= t)
                          for t in THRESHOLDS} for mw in MIN_WORDS}
            if k == config.shingle:
                result[scope]["paragraphs"] = len(matches)
                pairs = sorted((m for m in matches
                                if m[0] >= config.min_words and m[1] >= min(THRESHOLDS)),
                               key=lambda m: m[3])
                result[scope]["pairs"] = [
                    {"jaccard": round(j, 3), "words": n,
                     "site": site(pages[w[0]][0]), "text": pages[w[0]][2][w[1]][:300],
                     "earlier_site": site(pages[m[0]][0]),
                     "earlier_text": pages[m[0]][2][m[1]][:300]}
                    for n, j, m, w in pairs]
        row = result[scope]["counts"][str(config.shingle)][str(config.min_words)]
        print(f"  {scope}: of {result[scope]['paragraphs']} distinct paragraphs, those whose "
              f"best earlier match reaches the threshold (k={config.shingle}, "
              f"min_words={config.min_words}): "
              + "  ".join(f"{t}: {v}" for t, v in row.items()), flush=True)
    return result


def real_repeats(pages, config) -> dict:
    article = [paragraphs for _url, _name, paragraphs in pages]
    start = time.process_time()
    found = dedup.find_duplicates(article, config)
    seconds = time.process_time() - start
    counts: Counter = Counter()
    listed = []
    for r, reference in enumerate(found):
        for p, duplicate in enumerate(reference):
            if duplicate is None:
                continue
            if duplicate.reference == r:
                scope = "same_page"
            elif site(pages[duplicate.reference][0]) == site(pages[r][0]):
                scope = "earlier_page_same_site"
            else:
                scope = "earlier_page_other_site"
            counts[f"{duplicate.reason}:{scope}"] += 1
            if scope != "same_page":
                listed.append({"reason": duplicate.reason,
                               "jaccard": round(duplicate.similarity, 3),
                               "site": site(pages[r][0]), "text": article[r][p][:300],
                               "earlier_site": site(pages[duplicate.reference][0]),
                               "earlier_text":
                                   article[duplicate.reference][duplicate.paragraph][:300]})
    n = sum(map(len, article))
    print(f"  all {len(article)} pages as one article, {n} paragraphs "
          f"({n / seconds:,.0f}/s): " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())),
          flush=True)
    return {"pages": len(article), "paragraphs": n, "counts": dict(sorted(counts.items())),
            "cross_page": listed}


def machine_info() -> dict:
    import datasketch
    import numpy

    return {**describe(), "cpus": os.cpu_count(), "numpy": numpy.__version__,
            "datasketch": datasketch.__version__, "loadavg_start": list(os.getloadavg())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="the evaluation set: evaldata.json and pages/ (default: %(default)s)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="processes for the extraction (default: the CPU count)")
    parser.add_argument("--articles", type=int, default=5,
                        help="articles per size for the throughput (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3,
                        help="timed runs per article, the best counts (default: %(default)s)")
    parser.add_argument("--copies", type=int, default=300,
                        help="syndicated page copies for the LSH misses (default: %(default)s)")
    parser.add_argument("--sample", type=int, default=2000,
                        help="paragraphs copied for the detection (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="seed (default: 0)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = options.parse(parser, argv)
    if not (args.data / "evaldata.json").exists():
        parser.error(f"no evaluation set at {args.data} (evaldata.json and pages/)")

    machine = machine_info()
    if machine["loadavg_start"][0] > 0.5:
        print(f"warning: load average {machine['loadavg_start'][0]:.2f} before the runs; "
              "the timings share the machine", flush=True)
    config = DedupConfig()
    print(f"defaults: {config}", flush=True)
    start = time.perf_counter()
    pages = load_pages(args.data, args.jobs)
    paragraphs = [p for _url, _name, ps in pages for p in ps]
    vocab = sorted({w for p in paragraphs for w in p.split()})
    page_lists = [ps for _url, _name, ps in pages if ps]
    print(f"{len(pages)} pages, {len(paragraphs)} paragraphs "
          f"({time.perf_counter() - start:.0f} s to extract)", flush=True)

    print("throughput (one core, CPU time):", flush=True)
    speed = throughput(page_lists, vocab, paragraphs, config, args)
    print("LSH misses against brute force:", flush=True)
    misses = lsh_misses(page_lists, vocab, paragraphs, config, args)
    print("detection of syndicated copies:", flush=True)
    detected = detection(paragraphs, vocab, config, args)
    print("false positives, best earlier match:", flush=True)
    wrong = false_positives(pages, config, args)
    print("real repeats:", flush=True)
    repeats = real_repeats(pages, config)

    machine["loadavg_end"] = list(os.getloadavg())
    result = {
        "command": command_line(argv),
        "machine": machine,
        "defaults": vars(config),
        "pages": len(pages), "paragraphs": len(paragraphs),
        "throughput": speed, "lsh_misses": misses, "detection": detected,
        "false_positives": wrong, "real_repeats": repeats,
        "wall_s": round(time.perf_counter() - start, 1),
    }
    write_results(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
