"""How well ``wikisum.pipeline.language`` names the language of real pages, and what it costs.

Ground truth is weak: the 884 real pages of trafilatura's evaluation set
(``../shared/data/extraction``, mostly German and English, some Spanish, French, Polish) and
the language each declares in ``<html lang="..">`` (primary subtag, lowercased), where it
declares one. Declarations are often wrong (a CMS's default ``en`` on a German page), so every
disagreement is listed for a human to judge. Each page's text is what ingest would look at:
``webtext.decode_body`` then ``webtext.extract_main_text`` (no time limit), in a process pool.

What it measures:

* **Document level, by ``max_chars``** (``--max-chars``; 0 is the whole text), with the
  default ``min_letters``: agreement of ``identify`` with the declared language (overall and
  per frequent label), the share that agrees with the whole text's answer, the undetermined
  share, the confidence of agreements and of disagreements (percentiles and a histogram),
  texts per CPU second on one core (the identifier warm, BLAS held to one thread), and the
  wrong-language calls below at the default ``min_confidence``. For three samples:
  ``start``, ``identify``'s own (the first ``max_chars`` characters); ``spread``, 4 windows
  spread evenly over the text, joined and classified as one text; ``spread_mean``, the same
  windows classified one by one, their probabilities averaged.
* **Document level, by ``min_letters``** (``--min-letters``) at the default ``max_chars``.
* **Wrong-language calls, by ``min_confidence``** (``--min-confidence``): on "clean" pages
  (the declaration and the whole text's answer agree), the share of English pages called
  wrong-language for "en" (it should be zero) and the share of German, Polish, French and
  Spanish pages that are (it should be all).
* **Short texts**: windows of 1 to 40 consecutive words from clean pages, binned by their
  letters, identified with ``min_letters=0``: the share called right, and the share that
  ``is_wrong_language`` would call wrong for the page's own language at each
  ``min_confidence`` (false alarms), and for "en" on the non-English pages (catches). The
  false alarms are listed, those at or above the default ``min_confidence`` apart from those
  below it, to tell a passage really in another language (an English quote in a German
  article) from the identifier's own mistakes. Also a few English headings one by one. This is
  what ``min_letters`` and ``min_confidence`` rest on.
* **Disagreements** at the defaults: every page whose answer differs from its declaration.

Run by hand, never by CI (about 40 seconds on 2 cores)::

    .venv/bin/python experiments/language/run.py
    .venv/bin/python experiments/language/run.py --limit 100      # a smoke run

It prints the figures and writes them, the machine and the command line to
``experiments/results/language.json`` (``--out`` to change).
"""

from __future__ import annotations

import os

# One core means one BLAS thread too (the identifier's scoring is a matrix product).
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import gzip  # noqa: E402
import json  # noqa: E402
import re  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from collections import Counter, defaultdict  # noqa: E402
from concurrent.futures import ProcessPoolExecutor  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from machine import command_line, describe, write_results  # noqa: E402

from wikisum.pipeline import language  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data" / "extraction"
DEFAULT_OUT = ROOT / "experiments" / "results" / "language.json"

# `<html ... lang="de-DE">` (or xml:lang); pages may hold several <html> tags in conditional
# comments, the first one with a lang attribute counts.
_HTML_TAG = re.compile(r"<html\b[^>]*>", re.IGNORECASE)
_LANG_ATTR = re.compile(r"""(?:^|[\s:])lang\s*=\s*["']?([^"'\s>]*)""", re.IGNORECASE)
_PRIMARY = re.compile(r"[a-z]{2,3}")

# Labels reported one by one: those with at least this many pages.
MIN_LABEL_PAGES = 10
# Languages whose clean pages serve as clearly-not-English pages.
FOREIGN = ("de", "pl", "fr", "es")
# Word-window lengths for the short-text test, and windows taken per page and length.
WINDOW_WORDS = (1, 2, 3, 4, 5, 6, 8, 10, 12, 16, 20, 30, 40)
WINDOWS_PER_PAGE = 6
# Windows of the spread samples compared with identify()'s.
WINDOWS = 4
EXAMPLES = 30
SAMPLES = ("start", "spread", "spread_mean")
LETTER_BINS = (0, 10, 15, 20, 30, 40, 60, 100, 200)
CONFIDENCE_EDGES = (0.5, 0.7, 0.8, 0.9, 0.95, 0.99)
PERCENTILES = (0, 1, 5, 10, 25, 50)
HEADINGS = (
    "Early life and career",
    "Awards and nominations",
    "Personal life",
    "External links",
    "Privacy Policy",
    "Contact us",
    "Results of the 2014 election",
    "Share this article on Facebook",
    "The history of the town",
    "Click here to subscribe to our newsletter",
)


# --- Pages --------------------------------------------------------------------------------------

def declared_language(html: str) -> str | None:
    """The primary subtag of the page's <html lang>, lowercased; None if absent or malformed."""
    for tag in _HTML_TAG.finditer(html, 0, 200_000):
        match = _LANG_ATTR.search(tag.group(0))
        if match:
            primary = re.split(r"[-_]", match.group(1).strip().lower(), maxsplit=1)[0]
            return primary if _PRIMARY.fullmatch(primary) else None
    return None


def extract(task: tuple[str, Path]) -> dict:
    """One page through ingest's path: its declared language and main text."""
    from wikisum.pipeline import webtext

    url, path = task
    body = gzip.decompress(path.read_bytes())
    try:
        html, _encoding = webtext.decode_body(body, None)
        text = webtext.extract_main_text(html, url, timeout_s=None)
    except (webtext.DecodeError, webtext.ExtractionError):
        html, text = "", ""
    return {"file": path.name.removesuffix(".gz"), "url": url,
            "label": declared_language(html), "text": text}


def load(data: Path, limit: int | None, jobs: int) -> list[dict]:
    entries = json.loads((data / "evaldata.json").read_text(encoding="utf-8"))
    tasks = []
    for url, entry in sorted(entries.items(), key=lambda item: item[1]["file"]):
        path = data / "pages" / (entry["file"] + ".gz")
        if path.exists():
            tasks.append((url, path))
        if limit and len(tasks) >= limit:
            break
    with ProcessPoolExecutor(jobs) as pool:
        return list(pool.map(extract, tasks, chunksize=8))


# --- Figures ------------------------------------------------------------------------------------

def percentiles(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    ordered = sorted(values)
    return {f"p{p}": round(ordered[min(len(ordered) - 1, len(ordered) * p // 100)], 4)
            for p in PERCENTILES}


def histogram(values: list[float]) -> dict[str, int]:
    """Counts in [0, 0.5), [0.5, 0.7), ..., [0.99, 1]."""
    edges = (0.0, *CONFIDENCE_EDGES, 1.01)
    return {f"{lo:g}-{hi if hi <= 1 else 1:g}": sum(1 for v in values if lo <= v < hi)
            for lo, hi in zip(edges, edges[1:], strict=False)}


def _windows(text: str, max_chars: int) -> list[str]:
    """At most `max_chars` characters as WINDOWS windows spread evenly over the text."""
    if len(text) <= max_chars:
        return [text]
    width = max_chars // WINDOWS
    step = (len(text) - width) // (WINDOWS - 1)
    return [text[i * step:i * step + width] for i in range(WINDOWS)]


def identify_spread(text: str, *, max_chars: int, min_letters: int,
                    mean: bool = False) -> language.Language:
    """The alternatives to identify()'s sample: windows joined by newlines and classified as
    one text, or (`mean`) classified one by one and their probabilities averaged."""
    windows = _windows(text, max_chars)
    if sum(sum(map(str.isalpha, w)) for w in windows) < max(min_letters, 1):
        return language.Language(language.UNDETERMINED, 0.0)
    identifier = language._get_identifier()
    if mean:
        total: Counter = Counter()
        for window in windows:
            total.update(dict(identifier.rank(window)))
        code, confidence = max(total.items(), key=lambda item: item[1])
        confidence /= len(windows)
    else:
        code, confidence = identifier.classify("\n".join(windows))
    if code == "zxx":
        return language.Language(language.UNDETERMINED, 0.0)
    return language.Language(code, min(1.0, float(confidence)))


def run_identify(pages: list[dict], *, max_chars: int, min_letters: int,
                 sample: str = "start") -> tuple[list[language.Language], float]:
    """identify() (or an alternative sample) on every page, and the CPU seconds it took (this
    process, one thread)."""
    texts = [p["text"] for p in pages]
    limit = max_chars or max(len(t) for t in texts) + 1
    start = time.process_time()
    if sample == "start":
        found = [language.identify(t, max_chars=limit, min_letters=min_letters) for t in texts]
    else:
        found = [identify_spread(t, max_chars=limit, min_letters=min_letters,
                                 mean=sample == "spread_mean") for t in texts]
    return found, time.process_time() - start


def document_figures(pages: list[dict], found: list[language.Language],
                     whole: list[language.Language], labels: list[str]) -> dict:
    agree, disagree = [], []
    per_label: dict[str, Counter] = defaultdict(Counter)
    for page, lang in zip(pages, found, strict=True):
        if page["label"] is None:
            continue
        ok = lang.code == page["label"]
        (agree if ok else disagree).append(lang.confidence)
        per_label[page["label"]]["pages"] += 1
        per_label[page["label"]]["agree"] += ok
        per_label[page["label"]]["undetermined"] += lang.code == language.UNDETERMINED
    labelled = len(agree) + len(disagree)
    return {
        "agreement": round(len(agree) / labelled, 4) if labelled else None,
        "agree": len(agree),
        "labelled": labelled,
        "per_label": {label: {"pages": c["pages"], "agreement": round(c["agree"] / c["pages"], 4),
                              "undetermined": c["undetermined"]}
                      for label, c in sorted(per_label.items()) if label in labels},
        "same_as_whole_text": round(sum(a.code == b.code for a, b in zip(found, whole,
                                                                         strict=True))
                                    / len(pages), 4),
        "undetermined_share": round(sum(f.code == language.UNDETERMINED for f in found)
                                    / len(pages), 4),
        "confidence_agree": percentiles(agree),
        "confidence_disagree": percentiles(disagree),
        "histogram_agree": histogram(agree),
        "histogram_disagree": histogram(disagree),
    }


def wrong_language_figures(pages: list[dict], found: list[language.Language],
                           whole: list[language.Language], thresholds: list[float]) -> dict:
    """On clean pages: English ones called wrong for "en", and foreign ones caught for "en"."""
    clean = [(p["label"], f) for p, f, w in zip(pages, found, whole, strict=True)
             if p["label"] and p["label"] == w.code]
    english = [f for label, f in clean if label == "en"]
    foreign = [f for label, f in clean if label in FOREIGN]
    result = {"clean_pages": len(clean), "english_pages": len(english),
              "foreign_pages": len(foreign), "by_min_confidence": {}}
    for t in thresholds:
        result["by_min_confidence"][str(t)] = {
            "english_wrong_for_en": sum(language.is_wrong_language(f, "en", min_confidence=t)
                                        for f in english),
            "foreign_caught_for_en": round(
                sum(language.is_wrong_language(f, "en", min_confidence=t) for f in foreign)
                / max(1, len(foreign)), 4),
            "clean_wrong_for_own_label": sum(
                language.is_wrong_language(f, label, min_confidence=t) for label, f in clean),
        }
    return result


def letter_bin(letters: int) -> str:
    lower = max(b for b in LETTER_BINS if b <= letters)
    upper = next((b for b in LETTER_BINS if b > letters), None)
    return f"{lower}-{upper - 1}" if upper else f"{lower}+"


def short_text_figures(pages: list[dict], whole: list[language.Language],
                       thresholds: list[float]) -> tuple[dict, list[dict]]:
    """Word windows of clean pages, by letters: right, false alarms, catches for "en"; and the
    false alarms at the lowest min_confidence, for a human to judge."""
    tallies: dict[str, Counter] = defaultdict(Counter)
    alarms = []
    for page, w in zip(pages, whole, strict=True):
        label = page["label"]
        if not label or label != w.code or label not in ("en", *FOREIGN):
            continue
        words = page["text"].split()
        for n in WINDOW_WORDS:
            for i in range(min(WINDOWS_PER_PAGE, len(words) // n)):
                window = " ".join(words[i * n:(i + 1) * n])
                letters = sum(map(str.isalpha, window))
                if letters == 0:
                    continue
                found = language.identify(window, min_letters=0)
                tally = tallies[letter_bin(letters)]
                group = "en" if label == "en" else "foreign"
                tally[f"{group}_windows"] += 1
                tally[f"{group}_right"] += found.code == label
                tally[f"{group}_undetermined"] += found.code == language.UNDETERMINED
                if language.is_wrong_language(found, label, min_confidence=min(thresholds)):
                    alarms.append({"file": page["file"], "declared": label, "found": found.code,
                                   "confidence": round(found.confidence, 4),
                                   "letters": letters, "text": window})
                for t in thresholds:
                    tally[f"{group}_wrong_own_{t}"] += language.is_wrong_language(
                        found, label, min_confidence=t)
                    if group == "foreign":
                        tally[f"foreign_caught_en_{t}"] += language.is_wrong_language(
                            found, "en", min_confidence=t)
    result = {}
    for name in sorted(tallies, key=lambda b: int(b.split("-")[0].rstrip("+"))):
        c = tallies[name]
        row = {}
        for group in ("en", "foreign"):
            n = c[f"{group}_windows"]
            row[group] = {
                "windows": n,
                "right": round(c[f"{group}_right"] / n, 4) if n else None,
                "undetermined": round(c[f"{group}_undetermined"] / n, 4) if n else None,
                "false_wrong_language": {str(t): round(c[f"{group}_wrong_own_{t}"] / n, 4)
                                         if n else None for t in thresholds},
            }
        n = c["foreign_windows"]
        row["foreign"]["caught_for_en"] = {str(t): round(c[f"foreign_caught_en_{t}"] / n, 4)
                                           if n else None for t in thresholds}
        result[name] = row
    return result, alarms


def few_a_page(items: list[dict], per_page: int = 2) -> list[dict]:
    """The first EXAMPLES items, at most `per_page` from any one page."""
    shown: Counter = Counter()
    out = []
    for item in items:
        if shown[item["file"]] < per_page and len(out) < EXAMPLES:
            shown[item["file"]] += 1
            out.append(item)
    return out


# --- Driver -------------------------------------------------------------------------------------

def _ints(value: str) -> list[int]:
    return [int(v) for v in value.split(",")]


def _floats(value: str) -> list[float]:
    return [float(v) for v in value.split(",")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA,
                        help="the evaluation set: evaldata.json and pages/ (default: %(default)s)")
    parser.add_argument("--limit", type=int, default=None, help="the first N pages only")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="extraction processes (default: the CPU count)")
    parser.add_argument("--max-chars", type=_ints,
                        default=[250, 500, 1000, 1500, 2000, 3000, 4000, 0],
                        help="comma-separated; 0 is the whole text (default: %(default)s)")
    parser.add_argument("--min-letters", type=_ints, default=[0, 10, 20, 40, 80, 160],
                        help="comma-separated (default: %(default)s)")
    parser.add_argument("--min-confidence", type=_floats,
                        default=[0.5, 0.7, 0.8, 0.9, 0.95, 0.99],
                        help="comma-separated (default: %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    if not (args.data / "evaldata.json").exists():
        parser.error(f"no evaluation set at {args.data} (evaldata.json and pages/)")

    start = time.perf_counter()
    pages = load(args.data, args.limit, args.jobs)
    extract_s = time.perf_counter() - start
    label_counts = Counter(p["label"] for p in pages)
    labels = sorted(k for k, n in label_counts.items() if k and n >= MIN_LABEL_PAGES)
    print(f"language: {len(pages)} pages extracted in {extract_s:.0f} s ({args.jobs} workers); "
          f"declared: {dict(label_counts.most_common())}", flush=True)

    language.identify("warm the identifier up")
    defaults = {"max_chars": language.DEFAULT_MAX_CHARS,
                "min_letters": language.DEFAULT_MIN_LETTERS,
                "min_confidence": language.DEFAULT_MIN_CONFIDENCE}
    whole, _ = run_identify(pages, max_chars=0, min_letters=language.DEFAULT_MIN_LETTERS)

    by_max_chars = {}
    t = defaults["min_confidence"]
    print(f"\nby max_chars (min_letters={defaults['min_letters']}): agreement with <html lang> "
          f"over labelled pages, same answer as the whole text, undetermined share, texts per "
          f"CPU second on one core, clean English pages called wrong for 'en' and clean "
          f"foreign pages caught for 'en' (min_confidence {t}), agreement per label")
    print(f"{'sample':11} {'max':>6} {'agree':>7} {'=whole':>7} {'und':>6} {'texts/s':>8} "
          f"{'en FA':>6} {'caught':>7}   " + " ".join(f"{label:>6}" for label in labels))
    for max_chars in args.max_chars:
        for sample in SAMPLES:
            if sample != "start" and max_chars == 0:
                continue
            found, cpu = run_identify(pages, max_chars=max_chars,
                                      min_letters=defaults["min_letters"], sample=sample)
            figures = document_figures(pages, found, whole, labels)
            figures["texts_per_cpu_second"] = round(len(pages) / cpu, 1)
            alarms = wrong_language_figures(pages, found, whole, [t])["by_min_confidence"][str(t)]
            figures["english_wrong_for_en"] = alarms["english_wrong_for_en"]
            figures["foreign_caught_for_en"] = alarms["foreign_caught_for_en"]
            by_max_chars.setdefault(sample, {})[str(max_chars or "whole")] = figures
            print(f"{sample:11} {max_chars or 'whole':>6} {figures['agreement']:7.4f} "
                  f"{figures['same_as_whole_text']:7.4f} {figures['undetermined_share']:6.3f} "
                  f"{figures['texts_per_cpu_second']:8.0f} "
                  f"{figures['english_wrong_for_en']:6} {figures['foreign_caught_for_en']:7.4f}   "
                  + " ".join(f"{figures['per_label'][label]['agreement']:6.3f}"
                             for label in labels))

    default_found, _ = run_identify(pages, max_chars=defaults["max_chars"],
                                    min_letters=defaults["min_letters"])
    d = document_figures(pages, default_found, whole, labels)
    print("\nconfidence at the defaults, agreements:", json.dumps(d["confidence_agree"]),
          json.dumps(d["histogram_agree"]))
    print("confidence at the defaults, disagreements:", json.dumps(d["confidence_disagree"]),
          json.dumps(d["histogram_disagree"]))

    by_min_letters = {}
    print(f"\nby min_letters (max_chars={defaults['max_chars']}):")
    for min_letters in args.min_letters:
        found, _ = run_identify(pages, max_chars=defaults["max_chars"], min_letters=min_letters)
        figures = document_figures(pages, found, whole, labels)
        by_min_letters[str(min_letters)] = {k: figures[k] for k in
                                            ("agreement", "agree", "undetermined_share")}
        print(f"  {min_letters:4}: agreement {figures['agreement']:.4f}, undetermined "
              f"{figures['undetermined_share']:.4f}")

    wrong = wrong_language_figures(pages, default_found, whole, args.min_confidence)
    print(f"\nwrong-language calls on clean pages ({wrong['english_pages']} English, "
          f"{wrong['foreign_pages']} German/Polish/French/Spanish):")
    for t, row in wrong["by_min_confidence"].items():
        print(f"  min_confidence {t:>5}: English wrong for 'en' {row['english_wrong_for_en']}, "
              f"foreign caught for 'en' {row['foreign_caught_for_en']:.4f}, "
              f"any clean page wrong for its own label {row['clean_wrong_for_own_label']}")

    short, alarms = short_text_figures(pages, whole, args.min_confidence)
    shown = [t for t in args.min_confidence if t in (0.5, 0.8, 0.9, 0.95)] or args.min_confidence
    print("\nshort texts (word windows of clean pages, min_letters=0), by letters:")
    print(f"{'letters':>8} {'en n':>6} {'right':>6} "
          + " ".join(f"{'FA@' + str(t):>8}" for t in shown)
          + f" {'for n':>7} {'right':>6} " + " ".join(f"{'FA@' + str(t):>8}" for t in shown)
          + " " + " ".join(f"{'catch@' + str(t):>10}" for t in shown))
    for name, row in short.items():
        en, fo = row["en"], row["foreign"]
        print(f"{name:>8} {en['windows']:6} {en['right'] or 0:6.3f} "
              + " ".join(f"{en['false_wrong_language'][str(t)] or 0:8.4f}" for t in shown)
              + f" {fo['windows']:7} {fo['right'] or 0:6.3f} "
              + " ".join(f"{fo['false_wrong_language'][str(t)] or 0:8.4f}" for t in shown)
              + " " + " ".join(f"{fo['caught_for_en'][str(t)] or 0:10.4f}" for t in shown))

    # The false alarms at and below the default threshold, a few a page: at the default they
    # should be passages really in another language (an English quote in a German article).
    t = defaults["min_confidence"]
    above = [a for a in alarms if a["confidence"] >= t]
    below = [a for a in alarms if a["confidence"] < t]
    for title, items in ((f">= {t}", above), (f"{min(args.min_confidence)} to {t}", below)):
        print(f"\nshort-text false alarms at confidence {title}: {len(items)}, "
              f"{dict(Counter(a['declared'] + '->' + a['found'] for a in items).most_common(8))}")
        for item in few_a_page(items):
            print(f"  {item['declared']}->{item['found']} {item['confidence']:.3f} "
                  f"{item['letters']:3} letters {item['file'][:32]:32} {item['text'][:60]!r}")

    headings = []
    print("\nEnglish headings (raw = min_letters 0):")
    for heading in HEADINGS:
        raw = language.identify(heading, min_letters=0)
        used = language.identify(heading)
        row = {"text": heading, "letters": sum(map(str.isalpha, heading)),
               "raw": [raw.code, round(raw.confidence, 4)],
               "default": [used.code, round(used.confidence, 4)],
               "wrong_for_en_raw": language.is_wrong_language(raw, "en"),
               "wrong_for_en": language.is_wrong_language(used, "en")}
        headings.append(row)
        print(f"  {heading!r:45} {row['letters']:3} letters  raw {raw.code}:{raw.confidence:.3f}"
              f"  default {used.code}:{used.confidence:.3f}  wrong for en: {row['wrong_for_en']}")

    disagreements = []
    for page, found, w in zip(pages, default_found, whole, strict=True):
        if page["label"] and found.code != page["label"]:
            disagreements.append({
                "file": page["file"], "url": page["url"], "declared": page["label"],
                "found": found.code, "confidence": round(found.confidence, 4),
                "whole_text": w.code, "chars": len(page["text"]),
                "wrong_for_declared": language.is_wrong_language(found, page["label"]),
                "start": " ".join(page["text"][:160].split()),
            })
    confusion = Counter(f"{d['declared']}->{d['found']}" for d in disagreements)
    print(f"\ndisagreements at the defaults ({len(disagreements)}): "
          f"{dict(confusion.most_common())}")
    for item in disagreements:
        print(f"  {item['declared']}->{item['found']} {item['confidence']:.3f} "
              f"{item['file'][:50]:50} {item['start'][:90]!r}")

    result = {
        "command": command_line(argv),
        "machine": describe(args.jobs),
        "pages": len(pages),
        "declared": dict(label_counts.most_common()),
        "defaults": defaults,
        "extract_wall_s": round(extract_s, 1),
        "by_max_chars": by_max_chars,
        "by_min_letters": by_min_letters,
        "wrong_language": wrong,
        "short_texts": short,
        "short_text_false_alarms": {"at_default": above, "below_default": below},
        "headings": headings,
        "confusion": dict(confusion.most_common()),
        "disagreements": disagreements,
    }
    write_results(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
