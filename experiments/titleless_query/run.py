"""Which query tf-idf should rank a titleless example's paragraphs by, on data whose title is known.

``wikisum import`` reads datasets without titles (Multi-News). tf-idf ranks paragraphs by their
similarity to a query, normally the article's title; for a titleless example
``formats.importing.query_of`` used the first sentence of the first document instead; after
this experiment it uses ``centroid``. Here every
article of a built dataset is ranked again, its titles hidden, under each candidate query, and
scored as the report scores an input: recall of the lead by the first L subword tokens of the
ranked paragraphs (rouge-score's ROUGE-1, ROUGE-2 and ROUGE-L recall, Porter stemming on). The
title is left out of the input, as an imported titleless example's input has none, so every row
is scored on the same paragraphs.

The tf-idf queries (``QUERIES``), for an article whose references are its documents, in order:

* ``title``: the real title, the upper reference;
* ``import``: what import used, the first sentence of the first document (each one its paragraphs
  joined by newlines, as a Multi-News document reaches it): the first sentence of the first
  document. A first paragraph without final punctuation (a headline) runs on into the next;
* ``first_paragraph_sentence``: the first sentence of the first paragraph alone;
* ``longest_document_sentence``: the first sentence of the longest document (in words);
* ``first_paragraph``: the whole first paragraph of the first document;
* ``empty``: no query; every score is 0 and the order is the original one (identity);
* ``centroid``: the 10 most frequent content words (``core.text.content_words``) over all the
  article's paragraphs, ties in order of first appearance; ``centroid_5`` and ``centroid_20``
  the same with 5 and 20 words;
* ``import_content_words``: import's sentence without its function words (tf-idf counts every
  word of the query, "the" and "of" included).

Beside them the extractors that need no title: ``identity``, ``textrank``, ``sumbasic``, and the
``cheating`` oracle (it reads the lead) as the ceiling.

Means over articles with 95% bootstrap intervals (percentile, 10,000 resamples of the articles,
seed 0); every row is resampled with the same draws, so the differences to ``import`` and to
``title`` are paired (the interval of the replicate differences).

Data:

* ``sample``: the bundled sample corpus (``wikisum sample --articles 300 --seed 0``) built with
  ``wikisum build`` at its defaults, every split, the ``combined`` corpus; L counts the build's
  subword tokens (the ids stored with each paragraph). ``--build DIR`` reuses (or keeps) the
  build; without it the corpus is generated and built in a temporary folder (about a minute).
  The sample is generated text about fictional places and people: its relevant paragraphs name
  the article's subject, so the title is a stronger query there than it may be on real news.
* ``wikipedia`` (when ``../shared/data/wikipedia/wikitext`` is there): a real-text proxy. Each
  of the real articles is parsed with ``pipeline.wikitext``; its body's level-2 sections (their
  subsections folded in; reference lists, links and galleries left out) are the documents, their
  paragraphs filtered as ingest filters a page's, and the lead is the target. The title is the
  file name with its dashes and underscores read as spaces. L counts words here (no vocabulary
  was trained on this text).

Run by hand from the repository root, never by CI::

    .venv/bin/python experiments/titleless_query/run.py
    .venv/bin/python experiments/titleless_query/run.py --build /tmp/tq/build   # kept, reused

It prints the tables and writes them, every per-article query and the machine to
``experiments/titleless_query/results/titleless_query.json`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

from machine import command_line, describe, write_results  # noqa: E402

from wikisum import extractors  # noqa: E402
from wikisum.core import vocab  # noqa: E402
from wikisum.core.loader import Dataset  # noqa: E402
from wikisum.core.paragraphs import filter_paragraphs, split_paragraphs  # noqa: E402
from wikisum.core.text import content_words, sentences, words  # noqa: E402

DEFAULT_OUT = ROOT / "experiments" / "results" / "titleless_query.json"
DEFAULT_WIKITEXT = ROOT.parent / "shared" / "data" / "wikipedia" / "wikitext"
SAMPLE_ARTICLES = 300
SAMPLE_SEED = 0
LENGTHS = (100, 500)
ROUGE_TYPES = ("rougeL", "rouge1", "rouge2")
BOOTSTRAP = 10_000
SEED = 0
CORPUS = "combined"
TITLE_FREE = ("identity", "textrank", "sumbasic", "cheating")
# The query import uses now, and the reference every query is compared with.
CURRENT, UPPER = "import", "title"
# Wikipedia sections that are not prose about the subject.
SKIPPED_SECTIONS = frozenset({
    "references", "notes", "sources", "bibliography", "citations", "works cited", "footnotes",
    "notes and references", "references and notes", "literature cited", "external links",
    "see also", "further reading", "gallery", "discography", "filmography", "works",
    "publications",
})
MIN_DOCUMENTS = 2
MIN_PARAGRAPHS = 4


@dataclass(frozen=True)
class Article:
    """One article as a titleless example would hold it, and what is known about it."""

    id: str
    title: str
    lead: str
    documents: tuple[tuple[str, ...], ...]  # paragraphs per document, documents in order
    ids: tuple[tuple[int, ...], ...] | None = None  # per paragraph, its subword ids; None:
    # L counts whitespace words
    stored: dict | None = None  # extractor -> the dataset's own order on CORPUS

    @property
    def texts(self) -> list[str]:
        return [p for doc in self.documents for p in doc]


# --- Queries ------------------------------------------------------------------------------------

def first_sentence(text: str) -> str:
    found = sentences(text)
    return found[0] if found else ""


def import_query(article: Article) -> str:
    """What ``wikisum import`` used before this experiment: the first sentence of the first
    document (each document its paragraphs joined by newlines, as a Multi-News document reaches
    it), the title hidden. Import now uses ``centroid`` (``query_of``)."""
    return first_sentence("\n".join(article.documents[0])) if article.documents else ""


def longest_document_sentence(article: Article) -> str:
    longest = max(article.documents, key=lambda d: sum(len(p.split()) for p in d))
    return first_sentence("\n".join(longest))


def centroid(article: Article, k: int) -> str:
    """The k most frequent content words over all paragraphs; ties by first appearance."""
    counts = Counter(w for p in article.texts for w in content_words(p))
    return " ".join(w for w, _ in counts.most_common(k))


QUERIES: dict[str, Callable[[Article], str]] = {
    "title": lambda a: a.title,
    "import": import_query,
    "first_paragraph_sentence": lambda a: first_sentence(a.documents[0][0]),
    "longest_document_sentence": longest_document_sentence,
    "first_paragraph": lambda a: a.documents[0][0],
    "empty": lambda a: "",
    "centroid": lambda a: centroid(a, 10),
    "centroid_5": lambda a: centroid(a, 5),
    "centroid_20": lambda a: centroid(a, 20),
    "import_content_words": lambda a: " ".join(content_words(import_query(a))),
}


def rankings(article: Article, rankers: dict) -> tuple[dict[str, list[int]], dict[str, str]]:
    """Every row's order of the article's paragraphs, and the query of each tf-idf row."""
    texts = article.texts
    queries = {name: make(article) for name, make in QUERIES.items()}
    orders = {name: rankers["tfidf"].rank(q, texts) for name, q in queries.items()}
    for name in TITLE_FREE:
        orders[name] = rankers[name].rank("", texts, target=article.lead)
    return orders, queries


# --- Scores -------------------------------------------------------------------------------------

class Recall:
    """Recall of the lead by the first L tokens of a ranking, cached by the text scored (most
    rows of an article share their first paragraphs)."""

    def __init__(self, sp=None):
        from rouge_score import rouge_scorer

        self.scorer = rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)
        self.sp = sp
        self.cache: dict[tuple[str, str], dict[str, float]] = {}

    def prefix(self, article: Article, order: list[int], length: int) -> str:
        """The ranked paragraphs' first ``length`` tokens as text, paragraphs on their own
        lines: subword ids decoded, or whitespace words where the article has no ids."""
        texts, out, left = article.texts, [], length
        for i in order:
            if left <= 0:
                break
            if article.ids is None:
                piece = texts[i].split()[:left]
                out.append(" ".join(piece))
            else:
                piece = article.ids[i][:left]
                out.append(texts[i] if len(piece) == len(article.ids[i])
                           else self.sp.decode(list(piece)))
            left -= len(piece)
        return "\n".join(out)

    def __call__(self, article: Article, order: list[int], length: int) -> dict[str, float]:
        text = self.prefix(article, order, length)
        key = (article.id, text)
        if key not in self.cache:
            scores = self.scorer.score(article.lead, text)
            self.cache[key] = {t: scores[t].recall for t in ROUGE_TYPES}
        return self.cache[key]


def metric_keys() -> list[str]:
    return [f"{t}@{length}" for t in ROUGE_TYPES for length in LENGTHS]


def score_articles(articles: list[Article], sp=None) -> tuple[dict, list[dict], dict]:
    """Per row and metric, the per-article values (aligned with ``articles``); the per-article
    queries; and checks (how often rows agree)."""
    rankers = {name: extractors.get(name) for name in ("tfidf", *TITLE_FREE)}
    recall = Recall(sp)
    values: dict[str, dict[str, list[float]]] = {}
    per_article, checks = [], Counter()
    for article in articles:
        orders, queries = rankings(article, rankers)
        scored: dict[str, dict[str, float]] = {}
        for name, order in orders.items():
            row = values.setdefault(name, {k: [] for k in metric_keys()})
            scored[name] = {}
            for length in LENGTHS:
                for t, v in recall(article, order, length).items():
                    row[f"{t}@{length}"].append(v)
                    scored[name][f"{t}@{length}"] = round(v, 4)
        checks["articles"] += 1
        checks["empty_equals_identity"] += orders["empty"] == orders["identity"]
        checks["import_differs_from_first_paragraph_sentence"] += \
            queries["import"] != queries["first_paragraph_sentence"]
        for name in QUERIES:
            checks[f"top_paragraph_as_title:{name}"] += orders[name][0] == orders["title"][0]
            checks[f"query_has_a_title_word:{name}"] += \
                bool(set(words(article.title)) & set(words(queries[name])))
        if article.stored is not None:
            checks["stored_tfidf_equals_title_query"] += orders["title"] == article.stored["tfidf"]
            for name in TITLE_FREE:
                checks[f"stored_{name}_equals_recomputed"] += orders[name] == article.stored[name]
        per_article.append({"id": article.id, "title": article.title,
                            "paragraphs": len(article.texts), "documents": len(article.documents),
                            "queries": {k: queries[k] for k in QUERIES if k != "title"},
                            "recall": scored})
    return values, per_article, dict(checks)


def bootstrap(values: dict, n: int) -> dict:
    """Means with 95% intervals, and paired differences to CURRENT and UPPER."""
    rng = np.random.default_rng(SEED)
    draws = rng.integers(0, n, size=(BOOTSTRAP, n))
    replicates = {name: {k: np.asarray(v)[draws].mean(axis=1) for k, v in row.items()}
                  for name, row in values.items()}

    def summary(mean: float, reps: np.ndarray) -> dict:
        low, high = np.percentile(reps, [2.5, 97.5])
        return {"mean": round(float(mean), 4), "low": round(float(low), 4),
                "high": round(float(high), 4)}

    out = {}
    for name, row in values.items():
        out[name] = {}
        for k, v in row.items():
            cell = summary(np.mean(v), replicates[name][k])
            for other in (CURRENT, UPPER):
                diff = np.mean(v) - np.mean(values[other][k])
                cell[f"minus_{other}"] = summary(diff, replicates[name][k]
                                                 - replicates[other][k])
            out[name][k] = cell
    return out


# --- Data ---------------------------------------------------------------------------------------

def ensure_build(folder: Path) -> Path:
    """The training shards of the sample's build in ``folder``: ``folder`` itself where it is a
    build, else ``folder/build``, generated (``folder/sample``) and built first if absent."""
    for data in (folder / "data", folder / "build" / "data"):
        if (data / "dataset.json").exists():
            return data
    sample = folder / "sample"
    cli = [sys.executable, "-m", "wikisum.workflows.cli"]
    subprocess.run([*cli, "sample", "--articles", str(SAMPLE_ARTICLES), "--seed",
                    str(SAMPLE_SEED), "--out", str(sample), "-q"], check=True)
    subprocess.run([*cli, "build", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
                    "--warc", str(sample / "warc" / "*.warc.gz"),
                    "--wet", str(sample / "wet" / "*.warc.wet.gz"),
                    "--search-results", str(sample / "search_results.jsonl"),
                    "--out", str(folder / "build"), "-q"], check=True)
    return folder / "build" / "data"


def sample_articles(data: Path) -> tuple[list[Article], object]:
    """Every article of every split, its paragraphs grouped into its references."""
    dataset = Dataset(str(data))
    sp = vocab.load(dataset.info["vocab"])
    articles = []
    for split in dataset.splits():
        for row in dataset.rows(split):
            paragraphs = row["paragraphs"]
            if not paragraphs:
                continue
            groups: dict[int, list[int]] = {}
            for i, p in enumerate(paragraphs):
                groups.setdefault(p["reference"], []).append(i)
            order = [i for ref in groups.values() for i in ref]
            if order != list(range(len(paragraphs))):
                raise ValueError(f"article {row['id']}: paragraphs not in reference order")
            stored = {e["extractor"]: e["order"] for e in row["rankings"]
                      if e["corpus"] == CORPUS}
            articles.append(Article(
                id=f"{split}:{row['id']}", title=row["title"], lead=row["lead"],
                documents=tuple(tuple(paragraphs[i]["text"] for i in ref)
                                for ref in groups.values()),
                ids=tuple(tuple(p["ids"]) for p in paragraphs), stored=stored))
    return articles, sp


def wikipedia_articles(folder: Path) -> tuple[list[Article], Counter]:
    """The real articles' body sections as documents and their leads as targets."""
    from wikisum.pipeline import language
    from wikisum.pipeline.wikitext import parse_article

    kept, dropped = [], Counter()
    for path in sorted((folder / "articles").glob("*.txt")):
        title = " ".join(path.stem.replace("_", " ").replace("-", " ").split())
        parsed = parse_article(title, path.read_text(encoding="utf-8"))
        if parsed.is_redirect or not parsed.lead.strip():
            dropped["redirect_or_no_lead"] += 1
            continue
        if language.identify(parsed.lead + "\n" + " ".join(s.text for s in parsed.sections)
                             ).code != "en":
            dropped["not_english"] += 1
            continue
        documents: list[list[str]] = []
        skipping = False
        for section in parsed.sections:
            if section.level <= 2:
                skipping = section.title.lower() in SKIPPED_SECTIONS
                if not skipping:
                    documents.append([])
            if skipping or not documents:
                continue
            documents[-1].extend(filter_paragraphs(split_paragraphs(section.text))[0])
        documents = [d for d in documents if d]
        if len(documents) < MIN_DOCUMENTS or sum(map(len, documents)) < MIN_PARAGRAPHS:
            dropped["too_few_sections_or_paragraphs"] += 1
            continue
        kept.append(Article(id=path.name, title=title, lead=parsed.lead,
                            documents=tuple(tuple(d) for d in documents)))
    return kept, dropped


# --- Driver -------------------------------------------------------------------------------------

ROWS = [*QUERIES, *TITLE_FREE]
LABELS = {
    "title": "(a) tf-idf, real title",
    "import": "(b) tf-idf, 1st sentence of 1st document (import now)",
    "first_paragraph_sentence": "(b') tf-idf, 1st sentence of 1st paragraph",
    "longest_document_sentence": "(c) tf-idf, 1st sentence of longest document",
    "first_paragraph": "(d) tf-idf, whole 1st paragraph",
    "empty": "(e) tf-idf, empty query",
    "centroid": "(f) tf-idf, 10 most frequent content words",
    "centroid_5": "(f5) tf-idf, 5 most frequent content words",
    "centroid_20": "(f20) tf-idf, 20 most frequent content words",
    "import_content_words": "(b-) tf-idf, (b) without function words",
    "identity": "identity",
    "textrank": "textrank",
    "sumbasic": "sumbasic",
    "cheating": "cheating (reads the lead; ceiling)",
}


def cell(c: dict) -> str:
    return f"{c['mean']:.3f} [{c['low']:.3f}, {c['high']:.3f}]"


def diff_cell(c: dict) -> str:
    return f"{c['mean']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"


def print_tables(name: str, n: int, stats: dict, unit: str) -> None:
    width = max(map(len, LABELS.values()))
    for types in (("rougeL",), ("rouge1", "rouge2")):
        keys = [f"{t}@{length}" for t in types for length in LENGTHS]
        print(f"\n{name}: recall of the lead by the first L {unit} of the ranked paragraphs, "
              f"mean [95% bootstrap interval], {n} articles")
        print(f"{'':{width}} " + " ".join(f"{k:>24}" for k in keys))
        for row in ROWS:
            print(f"{LABELS[row]:{width}} " + " ".join(f"{cell(stats[row][k]):>24}"
                                                     for k in keys))
    keys = [f"rougeL@{length}" for length in LENGTHS]
    print(f"\n{name}: paired differences in ROUGE-L recall, mean [95% interval]")
    print(f"{'':{width}} " + " ".join(f"{'- ' + o + ' @' + k.split('@')[1]:>26}"
                                      for o in (CURRENT, UPPER) for k in keys))
    for row in ROWS:
        print(f"{LABELS[row]:{width}} " + " ".join(
            f"{diff_cell(stats[row][k]['minus_' + o]):>26}" for o in (CURRENT, UPPER)
            for k in keys))


def evaluate(name: str, articles: list[Article], sp, unit: str) -> dict:
    start = time.perf_counter()
    values, per_article, checks = score_articles(articles, sp)
    stats = bootstrap(values, len(articles))
    print_tables(name, len(articles), stats, unit)
    print(f"\n{name}: checks {json.dumps(checks)}  ({time.perf_counter() - start:.0f} s)")
    return {"articles": len(articles), "unit": unit, "metrics": stats, "checks": checks,
            "per_article": per_article}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", type=Path, default=None,
                        help="folder of the sample's build: reused where it holds one, else "
                             "generated and built there and kept (default: a temporary folder)")
    parser.add_argument("--wikitext", type=Path, default=DEFAULT_WIKITEXT,
                        help="the real articles (skipped when absent; default: %(default)s)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)

    result = {"command": command_line(argv), "machine": describe(1),
              "sample": {"articles": SAMPLE_ARTICLES, "seed": SAMPLE_SEED, "corpus": CORPUS},
              "lengths": list(LENGTHS), "bootstrap": {"samples": BOOTSTRAP, "seed": SEED},
              "rows": LABELS}
    with tempfile.TemporaryDirectory(prefix="titleless-query-") as scratch:
        data = ensure_build(args.build or Path(scratch))
        articles, sp = sample_articles(data)
        result["sample"]["build"] = str(data) if args.build else "(temporary)"
        result["sample"].update(evaluate("sample", articles, sp, "subword tokens"))

    if (args.wikitext / "articles").is_dir():
        articles, dropped = wikipedia_articles(args.wikitext)
        print(f"\nwikipedia: {len(articles)} articles kept, dropped {dict(dropped)}")
        result["wikipedia"] = {"dropped": dict(dropped),
                               **evaluate("wikipedia", articles, None, "words")}
    write_results(args.out, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
