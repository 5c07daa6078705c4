"""bench/languages.py: the language layer per script: its speed, and its ROUGE against XL-Sum's.

Two measurements, chosen by the first argument:

  speed   MB/s of ``wikisum.core.text.words`` and of ROUGE (``wikisum.core.rouge.score``, a
          text against itself and against a shifted copy of itself) for each script, on text
          cut into chunks of about --chunk-bytes (the size of a lead or a reference page's
          paragraph run; ROUGE-L's cost grows with the square of a chunk's tokens). English is
          also run the way it ran before the language layer: ``words`` as the plain
          ``[^\\W_]+`` pattern (commit 897c70a's parent) and ROUGE as rouge-score's own
          ``RougeScorer``; the ratios are the medians of the rounds' ratios.
  xlsum   ROUGE-1/2/L F1 of ``wikisum.core.rouge`` against XL-Sum's multilingual ROUGE
          (csebuetnlp/xl-sum, ``multilingual_rouge_scoring``) on (reference, prediction) pairs
          made from real text, a prediction being its reference with sentences dropped or
          shuffled, a neighbouring text, or half of each. XL-Sum's scorer is never imported
          here: it runs in a subprocess with the Python given by --xlsum (a virtual environment
          where XL-Sum's package is installed as ``rouge_score``), the pairs sent as JSON.

Text, per language, the first found of: the truncated real dumps in
../shared/data/wikipedia/multilingual (Japanese, Ukrainian, Vietnamese: articles' leads and
sections), the real English article wikitexts in ../shared/data/wikipedia/wikitext (English),
the Universal Declaration of Human Rights in that language (NLTK's ``udhr2`` corpus in
--nltk-data: ``python -m nltk.downloader -d DIR udhr2 stopwords``), or the sample sentences of
tests/core/scripts.py. Text shorter than --mb is repeated to that size; the output says so.
Run by hand:

    .venv/bin/python bench/languages.py speed --nltk-data DIR
    .venv/bin/python bench/languages.py xlsum --xlsum /tmp/xlsum-venv/bin/python \\
        --nltk-data DIR

(docs/languages.md, "Measured", says how that environment is made and quotes the figures.)
"""

from __future__ import annotations

import argparse
import collections
import json
import lzma
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
import unicodedata
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")

# The speed rows: (label, language, variant). "ascii" folds typographic punctuation and
# accents to ASCII, "typographic" writes ASCII quotes, apostrophes and spaced hyphens as
# typographic ones; both keep the words.
SCRIPTS = [
    ("English, ASCII", "en", "ascii"),
    ("English, typographic", "en", "typographic"),
    ("Latin, diacritics (vi)", "vi", None),
    ("Latin, diacritics (de)", "de", None),
    ("Cyrillic (ru)", "ru", None),
    ("Cyrillic (uk)", "uk", None),
    ("Greek", "el", None),
    ("Armenian", "hy", None),
    ("Georgian", "ka", None),
    ("Hebrew", "he", None),
    ("Arabic", "ar", None),
    ("Arabic, Persian", "fa", None),
    ("Devanagari (hi)", "hi", None),
    ("Bengali", "bn", None),
    ("Tamil", "ta", None),
    ("Ethiopic (am)", "am", None),
    ("Chinese (simplified)", "zh", None),
    ("Japanese", "ja", None),
    ("Korean", "ko", None),
    ("Thai", "th", None),
    ("Lao", "lo", None),
    ("Khmer", "km", None),
    ("Burmese", "my", None),
]

# Each language's text in NLTK's udhr2 corpus (file names are ISO 639-3 codes).
UDHR = {
    "en": "eng", "de": "deu", "fr": "fra", "es": "spa", "it": "ita", "pt": "por_PT",
    "pl": "pol", "tr": "tur", "vi": "vie", "ru": "rus", "uk": "ukr", "el": "ell_monotonic",
    "hy": "hye", "ka": "kat", "he": "heb", "ar": "arb", "fa": "pes_1", "ur": "urd",
    "hi": "hin", "bn": "ben", "ta": "tam", "am": "amh", "zh": "cmn_hans", "ja": "jpn",
    "ko": "kor", "th": "tha", "lo": "lao", "km": "khm", "my": "mya",
}
DUMPS = {"ja": "jawiki", "uk": "ukwiki", "vi": "viwiki"}

# XL-Sum's language names (its stemmers and segmenters are chosen by them). A name it has no
# stemmer or segmenter for is scored with its default tokenizer alone, unstemmed.
XLSUM_NAMES = {
    "en": "english", "de": "german", "fr": "french", "es": "spanish", "it": "italian",
    "pt": "portuguese", "ru": "russian", "uk": "ukrainian", "ar": "arabic", "fa": "persian",
    "hi": "hindi", "zh": "chinese", "ja": "japanese", "th": "thai", "my": "burmese",
    "vi": "vietnamese", "ko": "korean", "el": "greek", "he": "hebrew", "bn": "bengali",
    "tr": "turkish",
}
# Bengali and Turkish: XL-Sum's stemmers for them install from git repositories only.
XLSUM_LANGS = ("en", "de", "fr", "es", "it", "pt", "ru", "uk", "ar", "fa", "hi", "zh", "ja",
               "th", "my", "vi", "ko", "el", "he")
KINDS = ("drop", "shuffle", "neighbour", "half-and-half")

# Run in XL-Sum's environment: scores and tokens of each language's pairs, written as JSON to
# the file named by argv[1]. XL-Sum's Snowball stemmers leave NLTK's stopwords unstemmed
# (ignore_stopwords=True); where NLTK's stopwords are not installed they stem every word, and
# the output says so.
XLSUM_DRIVER = r"""
import json, sys, warnings
warnings.simplefilter("ignore")
from rouge_score import rouge_scorer
if not hasattr(rouge_scorer, "MultiTokenizer"):
    sys.exit("this rouge_score is not XL-Sum's multilingual_rouge_scoring")
from rouge_score import stemmers, tokenization_wrapper
job = json.load(sys.stdin)
out = {}
for key, spec in job.items():
    types = ["rouge1", "rouge2", "rougeL"]
    stopwords = True
    try:
        try:
            scorer = rouge_scorer.RougeScorer(types, use_stemmer=True, lang=spec["lang"])
        except LookupError:
            stopwords = False
            scorer = rouge_scorer.RougeScorer(
                types, use_stemmer=True, lang=spec["lang"],
                callable_stemmer=stemmers.NLTKStemmer(spec["lang"], ignore_stopwords=False))
        result = {"scores": [], "tokens": [], "stopwords_unstemmed": stopwords,
                  "stemmer": type(scorer._stemmer.stemmer).__name__
                  if scorer._stemmer.stemmer else None,
                  "segmenter": type(scorer._tokenizer.tokenizer).__name__
                  if scorer._tokenizer.tokenizer else None}
        for ref, pred in spec["pairs"]:
            scores = scorer.score(ref, pred)
            result["scores"].append({k: v.fmeasure for k, v in scores.items()})
            result["tokens"].append([tokenization_wrapper.tokenize(t, scorer._stemmer,
                                                                   scorer._tokenizer)
                                     for t in (ref, pred)])
    except Exception as error:
        result = {"error": f"{type(error).__name__}: {error}"}
    out[key] = result
with open(sys.argv[1], "w", encoding="utf-8") as f:
    json.dump(out, f, ensure_ascii=False)
"""


# ---------------------------------------------------------------------------------------------
# Text


def dump_articles(path: Path, lang: str, max_bytes: int, max_articles: int
                  ) -> list[tuple[str, str]]:
    """(lead, whole text) of a dump's articles, in file order, until ``max_bytes`` of text
    or ``max_articles`` articles."""
    from wikisum.pipeline import dumps
    from wikisum.pipeline.wikitext import parse_article

    out, size = [], 0
    try:
        for page in dumps.iter_pages(lzma.open(path)):
            if page.ns != 0 or page.redirect is not None or not page.text:
                continue
            article = parse_article(page.title, page.text, lang)
            if article.is_redirect or article.is_disambiguation or len(article.lead) < 100:
                continue
            body = "\n\n".join([article.lead, *(s.text for s in article.sections if s.text)])
            out.append((article.lead, body))
            size += len(body.encode())
            if size >= max_bytes or len(out) >= max_articles:
                break
    except (dumps.DumpError, EOFError, lzma.LZMAError):
        pass  # the file is cut mid-page: the pages before the cut are read
    return out


def english_articles(folder: Path, max_bytes: int, max_articles: int
                     ) -> list[tuple[str, str]]:
    """(lead, whole text) of the English articles among the real wikitexts."""
    from wikisum.pipeline import language
    from wikisum.pipeline.wikitext import parse_article

    out, size = [], 0
    for path in sorted(folder.glob("*.txt")):
        article = parse_article(path.stem.replace("-", " "), path.read_text(encoding="utf-8"))
        if article.is_redirect or len(article.lead) < 100 \
                or language.identify(article.lead).code != "en":
            continue
        body = "\n\n".join([article.lead, *(s.text for s in article.sections if s.text)])
        out.append((article.lead, body))
        size += len(body.encode())
        if size >= max_bytes or len(out) >= max_articles:
            break
    return out


def udhr_units(text: str) -> list[str]:
    """The declaration's blocks (preamble, articles) without their headings: blocks are
    separated by blank lines, a block's first line of at most three words ("Article 1",
    "第一条", "제 1 조") is its heading, and a block of fewer than eight words is left out."""
    from wikisum.core.text import words

    units = []
    for block in re.split(r"\n\s*\n", text):
        lines = [" ".join(line.split()) for line in block.splitlines() if line.strip()]
        if len(lines) > 1 and len(words(lines[0])) <= 3:
            lines = lines[1:]
        body = "\n".join(lines)
        if len(words(body)) >= 8:
            units.append(body)
    return units


def read_udhr(nltk_data: Path | None, lang: str) -> str | None:
    """The declaration in ``lang`` from an NLTK data folder (zipped or unpacked), or None."""
    code = UDHR.get(lang)
    if nltk_data is None or code is None:
        return None
    folder = nltk_data / "corpora" / "udhr2"
    if (folder / f"{code}.txt").is_file():
        return (folder / f"{code}.txt").read_text(encoding="utf-8")
    archive = nltk_data / "corpora" / "udhr2.zip"
    if archive.is_file():
        with zipfile.ZipFile(archive) as z:
            try:
                return z.read(f"udhr2/{code}.txt").decode("utf-8")
            except KeyError:
                return None
    return None


def sample_units(lang: str) -> list[str]:
    """tests/core/scripts.py's two sentences in ``lang`` as one text, or []."""
    sys.path.insert(0, str(ROOT / "tests" / "core"))
    from scripts import NO_SENTENCE_MARK, SAMPLES

    return [first + ("\n\n" if code in NO_SENTENCE_MARK else " ") + second
            for code, first, second in SAMPLES if code == lang]


def corpus(lang: str, nltk_data: Path | None, shared: Path, max_bytes: int,
           max_articles: int = 10**6) -> tuple[list[str], list[str], str]:
    """(documents, leads, where they come from) for ``lang``: a real dump's or the English
    wikitexts' articles (until ``max_bytes`` of text or ``max_articles`` articles), the
    declaration or the sample sentences, the first found."""
    if lang in DUMPS:
        path = shared / "wikipedia" / "multilingual" / f"{DUMPS[lang]}-truncated-100k.xml.xz"
        if path.is_file():
            articles = dump_articles(path, lang, max_bytes, max_articles)
            return [a[1] for a in articles], [a[0] for a in articles], \
                f"{path.name} (real, {len(articles)} articles)"
    if lang == "en" and (shared / "wikipedia" / "wikitext" / "articles").is_dir():
        articles = english_articles(shared / "wikipedia" / "wikitext" / "articles", max_bytes,
                                    max_articles)
        return [a[1] for a in articles], [a[0] for a in articles], \
            f"wikipedia/wikitext (real, {len(articles)} English articles)"
    udhr = read_udhr(nltk_data, lang)
    if udhr is not None:
        units = udhr_units(udhr)
        return units, units, f"udhr2/{UDHR[lang]}.txt (real, {len(units)} blocks)"
    units = sample_units(lang)
    return units, units, "tests/core/scripts.py's two sentences"


_TYPOGRAPHIC = str.maketrans({"‘": "'", "’": "'", "‚": "'", "“": '"', "”": '"', "„": '"',
                              "–": "-", "—": "-", "…": "...", "\u00a0": " ", "\u2009": " "})


def to_ascii(text: str) -> str:
    """``text`` with typographic punctuation written in ASCII and accents dropped."""
    folded = unicodedata.normalize("NFKD", text.translate(_TYPOGRAPHIC))
    return folded.encode("ascii", "ignore").decode("ascii")


def to_typographic(text: str) -> str:
    """ASCII ``text`` with typographic apostrophes, quotes and dashes."""
    text = re.sub(r"(?<=\w)'", "’", to_ascii(text))
    text = re.sub(r'"(?=\w)', "“", text)
    return text.replace('"', "”").replace(" - ", " – ").replace("'", "‘")


def cut(text: str, max_bytes: int) -> list[str]:
    """``text`` in pieces of at most about ``max_bytes`` UTF-8 bytes, cut at whitespace where
    there is some."""
    pieces = []
    while len(text.encode()) > max_bytes:
        limit = len(text.encode()[:max_bytes].decode("utf-8", "ignore"))
        space = text.rfind(" ", limit // 2, limit)
        at = space if space > 0 else limit
        pieces.append(text[:at])
        text = text[at:].lstrip()
    if text.strip():
        pieces.append(text)
    return pieces


def chunks(documents: list[str], chunk_bytes: int, total_bytes: int) -> tuple[list[str], bool]:
    """Paragraphs of ``documents`` gathered into chunks of at most ``chunk_bytes`` bytes (a
    longer paragraph cut at whitespace), to ``total_bytes`` in all, the documents repeated where
    they hold less (True then)."""
    paragraphs = [piece for document in documents for paragraph in document.split("\n")
                  for piece in cut(paragraph.strip(), chunk_bytes)]
    if not paragraphs:
        raise ValueError("no text")
    out, current, current_bytes, size, repeated, i = [], [], 0, 0, False, 0
    while size < total_bytes:
        if i == len(paragraphs):
            i, repeated = 0, True
        paragraph = paragraphs[i]
        i += 1
        if current and current_bytes + len(paragraph.encode()) + 1 > chunk_bytes:
            out.append("\n".join(current))
            size += len(out[-1].encode())
            current, current_bytes = [], 0
        current.append(paragraph)
        current_bytes += len(paragraph.encode()) + 1
    return out, repeated


def shifted(text: str) -> str:
    """``text`` rotated at the whitespace nearest its middle (at its middle where there is
    none): the same words, its halves swapped."""
    middle = len(text) // 2
    space = text.find(" ", middle)
    at = space if 0 < space < len(text) - 1 else middle
    return text[at:].strip() + " " + text[:at].strip()


# ---------------------------------------------------------------------------------------------
# Speed


def words_before(text: str) -> list[str]:
    """``core.text.words`` before the language layer (commit 897c70a's parent)."""
    return _WORD_BEFORE.findall(text.lower())


_WORD_BEFORE = re.compile(r"[^\W_]+")


def time_calls(function, items) -> float:
    start = time.perf_counter()
    for item in items:
        function(item)
    return time.perf_counter() - start


def measure_speed(args) -> dict:
    from rouge_score import rouge_scorer

    from wikisum.core import rouge
    from wikisum.core.text import words

    wanted = [row for row in SCRIPTS if not args.only or row[1] in args.only
              or row[0] in args.only]
    rows = []
    for label, lang, variant in wanted:
        documents, _, source = corpus(lang, args.nltk_data, args.shared, int(args.mb * 1e6))
        if variant == "ascii":
            documents = [to_ascii(d) for d in documents]
        elif variant == "typographic":
            documents = [to_typographic(d) for d in documents]
        text_chunks, repeated = chunks(documents, args.chunk_bytes, int(args.mb * 1e6))
        rouge_chunks = text_chunks[:max(1, math.ceil(len(text_chunks) * args.rouge_mb / args.mb))]
        rows.append({
            "script": label, "lang": lang, "source": source, "repeated": repeated,
            "chunks": len(text_chunks), "bytes": sum(len(c.encode()) for c in text_chunks),
            "rouge_chunks": len(rouge_chunks),
            "rouge_bytes": sum(len(c.encode()) for c in rouge_chunks),
            "non_ascii_chunks": sum(not c.isascii() for c in text_chunks),
            "tokens": sum(len(words(c)) for c in text_chunks),
            "_chunks": text_chunks, "_rouge": [(c, shifted(c)) for c in rouge_chunks],
        })
        print(f"  {label}: {source}{', repeated' if repeated else ''}: {len(text_chunks)} "
              f"chunks, {rows[-1]['bytes'] / 1e6:.2f} MB", flush=True)

    scorer_before = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
    for row in rows:  # warm up: patterns, ICU, stemmers
        for c in row["_chunks"][:3]:
            words(c)
        for ref, pred in row["_rouge"][:2]:
            rouge.score(ref, pred, row["lang"])
    timings = collections.defaultdict(list)
    for r in range(args.repeat):
        for row in rows:
            key, lang, pairs = row["script"], row["lang"], row["_rouge"]
            timings[key, "words"].append(time_calls(words, row["_chunks"]))
            timings[key, "rouge_self"].append(time_calls(
                lambda pair, lang=lang: rouge.score(pair[0], pair[0], lang), pairs))
            timings[key, "rouge_shifted"].append(time_calls(
                lambda pair, lang=lang: rouge.score(pair[0], pair[1], lang), pairs))
            if lang == "en":
                timings[key, "words_before"].append(time_calls(words_before, row["_chunks"]))
                timings[key, "rouge_shifted_before"].append(time_calls(
                    lambda pair: scorer_before.score(pair[0], pair[1]), pairs))
        print(f"  round {r + 1}/{args.repeat} done", flush=True)

    for row in rows:
        key = row["script"]
        seconds = {name: statistics.median(timings[key, name]) for name in
                   ("words", "rouge_self", "rouge_shifted", "words_before",
                    "rouge_shifted_before") if timings[key, name]}
        row["seconds"] = seconds
        row["mb_s"] = {name: (row["rouge_bytes"] if name.startswith("rouge") else row["bytes"])
                       / 1e6 / s for name, s in seconds.items()}
        if row["lang"] == "en":
            row["ratios"] = {
                "words_vs_before": statistics.median(
                    a / b for a, b in zip(timings[key, "words"], timings[key, "words_before"],
                                          strict=True)),
                "rouge_vs_rouge_score": statistics.median(
                    a / b for a, b in zip(timings[key, "rouge_shifted"],
                                          timings[key, "rouge_shifted_before"], strict=True)),
            }
            row["same_as_before"] = {
                "words": all(words(c) == words_before(c) for c in row["_chunks"]),
                "rouge": all(rouge.score(a, b, "en") == {
                    name: {"f": s.fmeasure, "p": s.precision, "r": s.recall}
                    for name, s in scorer_before.score(a, b).items()} for a, b in row["_rouge"]),
            }
        del row["_chunks"], row["_rouge"]
    return {"rows": rows}


def print_speed(result: dict, args) -> None:
    print(f"\nMB/s, median of {args.repeat} rounds; words over {args.mb:g} MB, ROUGE over "
          f"{args.rouge_mb:g} MB, chunks of at most {args.chunk_bytes} bytes")
    print("| script | text | tokens/KB | words MB/s | ROUGE self MB/s | ROUGE shifted MB/s |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for row in result["rows"]:
        source = row["source"] + (", repeated" if row["repeated"] else "")
        m = row["mb_s"]
        print(f"| {row['script']} | {source} | {row['tokens'] / row['bytes'] * 1000:.0f} | "
              f"{m['words']:.2f} | {m['rouge_self']:.3f} | {m['rouge_shifted']:.3f} |")
    for row in result["rows"]:
        if "ratios" not in row:
            continue
        m, ratios, same = row["mb_s"], row["ratios"], row["same_as_before"]
        print(f"\n{row['script']} ({row['non_ascii_chunks']} of {row['chunks']} chunks not "
              f"ASCII): words {m['words']:.2f} MB/s, before {m['words_before']:.2f} MB/s, "
              f"time ratio now/before {ratios['words_vs_before']:.3f}, same words: "
              f"{same['words']}; ROUGE {m['rouge_shifted']:.3f} MB/s, rouge-score's "
              f"RougeScorer {m['rouge_shifted_before']:.3f} MB/s, time ratio "
              f"{ratios['rouge_vs_rouge_score']:.3f}, same scores: {same['rouge']}")


# ---------------------------------------------------------------------------------------------
# Agreement with XL-Sum


def pieces(text: str) -> list[str]:
    """``text``'s sentences; its whitespace-separated runs where it is one sentence; its halves
    where it is one run."""
    from wikisum.core.text import sentences

    found = sentences(text)
    if len(found) < 2:
        found = text.split()
    if len(found) < 2:
        found = [text[:len(text) // 2], text[len(text) // 2:]]
    return found


def reference(text: str, max_chars: int) -> str:
    """``text``'s first sentences up to about ``max_chars`` characters (at least one)."""
    from wikisum.core.text import sentences

    out: list[str] = []
    for sentence in sentences(text):
        if out and sum(len(s) + 1 for s in out) + len(sentence) > max_chars:
            break
        out.append(sentence)
    return " ".join(out)[:max_chars * 2] if out else text[:max_chars]


def predict(ref: str, neighbour: str, kind: str, rng: random.Random) -> str:
    """A prediction for ``ref``: every other piece dropped, pieces shuffled, the neighbouring
    reference, or the first half of ``ref``'s pieces followed by the neighbour's second half."""
    own = pieces(ref)
    joiner = "" if not any(ch.isspace() for ch in ref) else " "
    if kind == "drop":
        return joiner.join(own[::2])
    if kind == "shuffle":
        order = own[:]
        rng.shuffle(order)
        return joiner.join(order)
    if kind == "neighbour":
        return neighbour
    other = pieces(neighbour)
    return joiner.join(own[:len(own) // 2 or 1] + other[len(other) // 2:])


def make_pairs(leads: list[str], count: int, seed: int, max_chars: int
               ) -> list[tuple[str, str, str]]:
    """``count`` (reference, prediction, kind) pairs over ``leads``, the kinds taken in turn."""
    refs = [reference(lead, max_chars) for lead in leads if lead.strip()]
    refs = [r for r in refs if r.strip()]
    if len(refs) < 2:
        return []
    rng = random.Random(seed)
    out = []
    for i in range(count):
        ref, neighbour = refs[i % len(refs)], refs[(i + 1) % len(refs)]
        kind = KINDS[(i + i // len(refs)) % len(KINDS)]
        out.append((ref, predict(ref, neighbour, kind, rng), kind))
    return out


def run_xlsum(python: str, jobs: dict, nltk_data: Path | None, timeout_s: float) -> dict:
    """XL-Sum's scores and tokens of ``jobs`` ({key: {"lang": name, "pairs": [...]}}),
    computed by ``python`` in a subprocess."""
    env = dict(os.environ)
    if nltk_data is not None:
        env["NLTK_DATA"] = str(nltk_data)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "scores.json"
        done = subprocess.run([python, "-c", XLSUM_DRIVER, str(out)], input=json.dumps(jobs),
                              text=True, capture_output=True, env=env, timeout=timeout_s,
                              cwd=tmp, check=False)
        if done.returncode != 0 or not out.is_file():
            raise SystemExit(f"XL-Sum's scorer failed ({python}, exit {done.returncode}): "
                             f"{done.stderr.strip()[-2000:]}")
        return json.loads(out.read_text(encoding="utf-8"))


def agreement(ours: list[float], theirs: list[float]) -> dict:
    """Mean absolute difference and share within 1 point (scores in points, 0-100), Pearson's
    r (None where either side is constant)."""
    a = [100 * x for x in ours]
    b = [100 * x for x in theirs]
    diffs = [abs(x - y) for x, y in zip(a, b, strict=True)]
    try:
        r = statistics.correlation(a, b)
    except statistics.StatisticsError:
        r = None
    return {"mean_ours": statistics.fmean(a), "mean_xlsum": statistics.fmean(b),
            "mean_abs_diff": statistics.fmean(diffs), "pearson": r,
            "within_1": sum(d <= 1.0 for d in diffs) / len(diffs)}


def token_differences(ours: list[list[str]], theirs: list[list[str]], top: int) -> dict:
    """How the two tokenizations of the same texts differ: texts tokenized alike, token counts,
    and the tokens found by one side only, most frequent first."""
    only_ours, only_theirs = collections.Counter(), collections.Counter()
    same = 0
    for a, b in zip(ours, theirs, strict=True):
        same += a == b
        only_ours.update(collections.Counter(a) - collections.Counter(b))
        only_theirs.update(collections.Counter(b) - collections.Counter(a))
    return {"texts": len(ours), "same_tokens": same,
            "tokens_ours": sum(map(len, ours)), "tokens_xlsum": sum(map(len, theirs)),
            "only_ours": only_ours.most_common(top), "only_xlsum": only_theirs.most_common(top)}


def measure_xlsum(args) -> dict:
    from wikisum.core import rouge

    jobs, made = {}, {}
    for lang in args.langs:
        _, leads, source = corpus(lang, args.nltk_data, args.shared, 10**9, args.pairs)
        pairs = make_pairs(leads, args.pairs, args.seed, args.max_chars)
        if not pairs:
            print(f"  {lang}: no text, skipped", flush=True)
            continue
        made[lang] = (pairs, source)
        jobs[lang] = {"lang": XLSUM_NAMES.get(lang, lang), "pairs": [p[:2] for p in pairs]}
        print(f"  {lang}: {len(pairs)} pairs from {source}", flush=True)
    start = time.perf_counter()
    theirs = run_xlsum(args.xlsum, jobs, args.nltk_data, args.timeout)
    print(f"  XL-Sum's scorer: {time.perf_counter() - start:.1f} s", flush=True)
    languages = {}
    for lang, (pairs, source) in made.items():
        result = theirs[lang]
        entry = {"source": source, "pairs": len(pairs), "xlsum_lang": jobs[lang]["lang"],
                 "kinds": dict(collections.Counter(p[2] for p in pairs))}
        if "error" in result:
            entry["error"] = result["error"]
            languages[lang] = entry
            continue
        our_scores = [rouge.score(ref, pred, lang) for ref, pred, _ in pairs]
        tokenize = rouge.tokenizer(lang).tokenize
        entry.update({
            "xlsum_stemmer": result["stemmer"], "xlsum_segmenter": result["segmenter"],
            "xlsum_stopwords_unstemmed": result["stopwords_unstemmed"],
            "agreement": {name: agreement([s[name]["f"] for s in our_scores],
                                          [s[name] for s in result["scores"]])
                          for name in ROUGE_TYPES},
            "tokens": token_differences(
                [tokenize(t) for ref, pred, _ in pairs for t in (ref, pred)],
                [t for pair in result["tokens"] for t in pair], args.top),
        })
        languages[lang] = entry
    return {"languages": languages}


def print_xlsum(result: dict) -> None:
    print("\nROUGE F1 in points (0-100): wikisum.core.rouge against XL-Sum's multilingual ROUGE")
    print("| lang | text | XL-Sum's stemmer, segmenter | ROUGE | mean ours | mean XL-Sum | "
          "mean abs diff | Pearson r | within 1 point |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for lang, entry in result["languages"].items():
        if "error" in entry:
            print(f"| {lang} | {entry['source']} | error: {entry['error']} | | | | | | |")
            continue
        tools = f"{entry['xlsum_stemmer'] or 'none'}, {entry['xlsum_segmenter'] or 'none'}"
        if entry["xlsum_stemmer"] and not entry["xlsum_stopwords_unstemmed"]:
            tools += " (stopwords stemmed: NLTK's list not found)"
        for name in ROUGE_TYPES:
            a = entry["agreement"][name]
            r = "n/a" if a["pearson"] is None else f"{a['pearson']:.3f}"
            print(f"| {lang} | {entry['source']} | {tools} | {name} | {a['mean_ours']:.1f} | "
                  f"{a['mean_xlsum']:.1f} | {a['mean_abs_diff']:.2f} | {r} | "
                  f"{a['within_1']:.0%} |")
    print("\nTokens (references and predictions): texts tokenized alike, token counts, and the "
          "tokens only one side finds (count)")
    for lang, entry in result["languages"].items():
        if "tokens" not in entry:
            continue
        t = entry["tokens"]
        print(f"{lang}: {t['same_tokens']} of {t['texts']} texts alike; {t['tokens_ours']} "
              f"tokens ours, {t['tokens_xlsum']} XL-Sum's")
        print("  only ours:   " + ", ".join(f"{w} ({n})" for w, n in t["only_ours"]))
        print("  only XL-Sum: " + ", ".join(f"{w} ({n})" for w, n in t["only_xlsum"]))


# ---------------------------------------------------------------------------------------------


def machine_facts() -> dict:
    from bench import machine

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                                capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        commit = ""
    return {"commit": commit, "nproc": os.cpu_count(), **machine.describe()}


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from bench import machine, options

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("what", choices=("speed", "xlsum"),
                        help="speed per script, or agreement with XL-Sum's ROUGE")
    parser.add_argument("--nltk-data", type=Path, metavar="DIR",
                        help="an NLTK data folder with the udhr2 corpus (text in the "
                             "languages without shared data) and stopwords (XL-Sum's "
                             "stemmers use them)")
    parser.add_argument("--shared", type=Path, default=SHARED, metavar="DIR",
                        help="the shared real data (skipped where absent)")
    parser.add_argument("--only", type=lambda s: [x.strip() for x in s.split(",") if x],
                        metavar="LANG,...", help="speed: only these languages (or labels)")
    parser.add_argument("--mb", type=float, default=1.0, help="speed: MB of text per script "
                        "for words")
    parser.add_argument("--rouge-mb", type=float, default=0.25,
                        help="speed: MB of it scored by ROUGE (the first chunks)")
    parser.add_argument("--chunk-bytes", type=int, default=2000,
                        help="speed: bytes of text per call, at most")
    parser.add_argument("--repeat", type=int, default=3, help="speed: rounds")
    parser.add_argument("--xlsum", metavar="PYTHON",
                        help="xlsum: the Python of an environment where XL-Sum's "
                             "multilingual_rouge_scoring is installed (as rouge_score)")
    parser.add_argument("--langs", type=lambda s: [x.strip() for x in s.split(",") if x],
                        default=list(XLSUM_LANGS), metavar="LANG,...",
                        help="xlsum: languages compared")
    parser.add_argument("--pairs", type=int, default=50, help="xlsum: pairs per language")
    parser.add_argument("--max-chars", type=int, default=600,
                        help="xlsum: a reference's length, about (its first sentences)")
    parser.add_argument("--seed", type=int, default=0, help="xlsum: shuffling seed")
    parser.add_argument("--top", type=int, default=8,
                        help="xlsum: tokens listed that only one side finds")
    parser.add_argument("--timeout", type=float, default=1800.0,
                        help="xlsum: seconds XL-Sum's scorer may take")
    parser.add_argument("--out", type=Path, metavar="RESULTS.json",
                        help="results file (default bench/results/languages-WHAT.json)")
    args = options.parse(parser, argv)
    if args.what == "xlsum" and not args.xlsum:
        parser.error("xlsum needs --xlsum PYTHON (an environment with XL-Sum's scorer)")
    if min(args.mb, args.rouge_mb) <= 0 or args.chunk_bytes < 100 or args.repeat < 1 \
            or args.pairs < 1:
        parser.error("--mb and --rouge-mb must be positive, --chunk-bytes at least 100, "
                     "--repeat and --pairs at least 1")
    if args.rouge_mb > args.mb:
        parser.error("--rouge-mb is part of --mb: at most --mb")
    out = args.out or ROOT / "bench" / "results" / f"languages-{args.what}.json"

    facts = machine_facts()
    print(f"commit {facts['commit']}, {facts['nproc']} CPUs ({facts['cpu']}), "
          f"Python {facts['python']}", flush=True)
    results = {"bench": f"languages-{args.what}", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
               "command": machine.command_line(argv), "machine": facts,
               "options": {k: str(v) if isinstance(v, Path) else v
                           for k, v in vars(args).items() if k not in ("config", "show_config")}}
    results["load_average_before"] = os.getloadavg()
    if args.what == "speed":
        results.update(measure_speed(args))
        print_speed(results, args)
    else:
        results.update(measure_xlsum(args))
        print_xlsum(results)
    results["load_average_after"] = os.getloadavg()
    print("\nload average (1, 5, 15 min) before: "
          + ", ".join(f"{x:.2f}" for x in results["load_average_before"])
          + "; after: " + ", ".join(f"{x:.2f}" for x in results["load_average_after"]))
    machine.write_results(out, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
