"""bench/search.py: the local search index (``wikisum search-index`` + ``wikisum search``)
against bm25s on real web pages: recall, speed, memory per shard, and what a run would cost.

The development set. WikiSum's search results are real web pages found by the titles of the
Wikipedia articles that cite them. With the real pages at hand (../shared/data/extraction: 884
web pages with their URLs, trafilatura's evaluation set) the closest set that can be built
without inventing data is a known-item one: each page's HTML ``<title>``, with the site's name
cut off (the longest part when split on " | ", " - ", " – ", " — ", " :: ", " » "), is a query
as short as a Wikipedia title, and the page itself is the one relevant document. The pages,
with their original bytes, are written as WARC response records (HTTP headers included) into a
temporary folder, and wikisum's own jobs run on them as the command line runs them:
``search-index`` cleans them exactly as ingest does and indexes what survives, ``search`` asks
the titles file and writes results.jsonl, from which recall@1 and recall@10 are counted (a hit:
a result whose ``normalize_url`` is the page's). bm25s gets the same documents: the job's
indexed URLs, each with its text as the same cleaning gives it (``iter_records`` +
``clean_captures`` over the same WARC file, in this process), tokenised by bm25s's own
tokenizer (``bm25s.tokenize(stopwords="en", stemmer=Stemmer("english"))``), indexed with its
default BM25 (Lucene's variant, k1 1.5, b 0.75) and asked the same queries; a bm25s result with
score 0 matched no query term and is not counted as found. A title that two pages share, or
that the search job would refuse, is no query; every indexed page is a document either way.

Two sets, both analysed in English:

  en    the job's default (``--lang en``): pages identified with confidence as another
        language are dropped, as they would be from an English index; what is left is the
        English pages of the extraction set.
  any   ``--reference-lang any``: every page that survives cleaning (mostly German), so that
        each query is one among several times more documents; recall is counted on all its
        queries and on the English ones alone (the en set's queries among the others, as
        distractors).

Each set is indexed with the job's default, 1 shard, and with --shards N (4: with so few pages a
shard's statistics are those of a few dozen pages, so the N-shard recall shows the worst case
of merging scores by per-shard statistics), and searched with ``--query title`` and
``--query no-disambiguation`` (these titles rarely end in a parenthesis: the two should agree).

Speed, in this process, one thread (the library under the jobs): analysis
(``Analyzer("en").terms``) in pages/s; the tantivy build (``index.build_shard``, one writer
thread, ``index.WRITER_HEAP_BYTES``) from analysed pages in pages/s; bm25s's tokenize and index
on the same texts. Queries/s with the title analysed and asked (``SearchIndex.search``, k 10)
of one shard and of N shards merged, and of shards holding the any set copied --speed-copies
times (distinct URLs) to see the cost grow with a shard's documents, beside bm25s's retrieve
(``n_threads=1``, numpy backend, tokenising included) over the same documents, all measured
in turn, round after round. Per core means per CPU second of this process. The wall and
CPU seconds of each whole job are reported too (in a child process, timed from after its
imports; Beam's local runner, one worker: one core).

Memory per shard: the peak resident set (VmHWM) of a child process that builds one shard of
the any set copied K times (--memory-copies), with tantivy at wikisum's writer heap, and with
bm25s (tokenize + index), against the same child's resident set before it starts (interpreter,
libraries and the analysed pages loaded), with the number of segments tantivy wrote (one more
each time its heap filled). Both read copies of the same objects, so the input costs neither
side memory; bm25s's figure is its own structures. bm25s is left out past --bm25s-memory-max
copies, to keep the run short.

bm25s's own figures, one core on BEIR (``PUBLISHED`` below, with their sources): 12 to 1,196
queries/s and 2,972 to 28,002 documents/s indexed, tokenising included. BEIR's documents are
passages of 8 to 120 tokens (MS MARCO's about 39); a cleaned web page here has about 760
terms, so a page costs ten times a passage and more to tokenise and index,
and pages/s here are to be read against docs/s there accordingly. Queries/s go the other way:
they fall with the number of documents (bm25s scores every posting of a query's terms and picks
the top k among every document), and these indexes hold thousands of pages where BEIR's hold
up to millions of passages.

Cost model: core-hours and Dataflow vCPU cost of indexing a Common Crawl "segment set" and of
searching WikiSum's titles, from the measured rates. The assumptions (pages in a crawl, the
share indexed, titles, price per vCPU-hour) are options and are printed beside the figures; the
price is Dataflow's batch vCPU list price as assumed here (memory, disk and shuffle not
included): check your region's.

Run by hand, never by CI (about 7 minutes on 2 cores), after ``make setup``::

    .venv/bin/python bench/search.py
    .venv/bin/python bench/search.py --quick        # the en set only, fewer copies: a smoke run

It prints Markdown tables and writes every figure, the machine and the command line to
``bench/results/search.json`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import gzip
import html
import io
import json
import os
import pickle
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data" / "extraction"
DEFAULT_OUT = ROOT / "bench" / "results" / "search.json"
K = 10

# A page's <title> ends (or starts) with its site's name after one of these.
SITE_SEPARATOR = re.compile(r"\s+(?:\||-|–|—|::|»)\s+")
_TITLE = re.compile(rb"<title\b[^>]*>(.*?)</title\s*>", re.IGNORECASE | re.DOTALL)
_TAG = re.compile(r"<[^>]+>")

# bm25s's own published figures, one core, on BEIR (passages of about 40 to 200 tokens).
PUBLISHED = {
    "bm25s_queries_per_s": {
        "source": "github.com/xhluca/bm25s README.md, 'Throughput (Queries per second)' "
                  "(commit d2ed652): single-threaded, Intel Xeon @ 2.70GHz",
        "range": [12.2, 1196.16],
        "examples": {"msmarco (8.8M passages)": 12.2, "nq (2.7M)": 41.85,
                     "trec-covid (171k)": 85.64, "scifact (5k)": 952.92,
                     "nfcorpus (3.6k)": 1196.16},
    },
    "bm25s_index_docs_per_s": {
        "source": "github.com/xhluca/bm25-benchmarks README.md, 'Indexing time (docs/s)' "
                  "(commit 18ef41d): single core, tokenizing included",
        "range": [2971.96, 28002.4],
        "examples": {"msmarco (39 tokens a passage)": 7480.71,
                     "nq (55 tokens a passage)": 6083.86,
                     "trec-covid (118 tokens a passage)": 4600.14,
                     "quora (8 tokens a question)": 28002.4},
    },
}


# ------------------------------------------------------------------------------------------
# The development set


@dataclass(frozen=True)
class Page:
    url: str  # as evaldata.json gives it (the WARC-Target-URI)
    body: bytes  # the page's original bytes
    title: str | None  # the <title>'s text, the site name cut off


def page_title(body: bytes) -> str | None:
    """The text of a page's <title>, decoded as the cleaning decodes the page, with the site's
    name cut off: the longest part when split on the usual separators."""
    from wikisum.pipeline.webtext import DecodeError, decode_body

    match = _TITLE.search(body)
    if not match:
        return None
    try:
        text, _ = decode_body(match.group(1), "text/html")
    except DecodeError:
        return None
    text = " ".join(html.unescape(_TAG.sub(" ", text)).split())
    # (a separator left at either end, where the site's name is missing, goes too)
    parts = [p.strip(" |»") for p in SITE_SEPARATOR.split(text)]
    parts = [p for p in parts if p]
    return max(parts, key=len) if parts else None


def load_pages(folder: Path) -> list[Page]:
    evaldata = json.loads((folder / "evaldata.json").read_text(encoding="utf-8"))
    pages = []
    for url, entry in evaldata.items():
        path = folder / "pages" / (entry["file"] + ".gz")
        if path.exists():
            body = gzip.decompress(path.read_bytes())
            pages.append(Page(url, body, page_title(body)))
    return pages


def write_warc(pages: list[Page], path: Path) -> None:
    """Every page as a WARC response record: HTTP headers, then the page's original bytes."""
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    with open(path, "wb") as f:
        writer = WARCWriter(f, gzip=True)
        for page in pages:
            headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html"),
                                                  ("Content-Length", str(len(page.body)))],
                                       protocol="HTTP/1.1")
            writer.write_record(writer.create_warc_record(
                page.url, "response", payload=io.BytesIO(page.body), http_headers=headers,
                warc_headers_dict={"WARC-Date": "2020-01-01T00:00:00Z"}))


def clean_warc(path: Path) -> tuple[dict, dict]:
    """The WARC file's pages cleaned as the job cleans them (``iter_records`` and
    ``clean_captures`` in the job's batches): {normalised URL: Reference} (the capture the job
    keeps where a URL has several), and the drop reasons counted."""
    from wikisum.pipeline.ingest.config import CleanConfig
    from wikisum.pipeline.references import CaptureBatches, clean_captures, pick_capture
    from wikisum.pipeline.warcs import Capture, iter_records

    config = CleanConfig()
    found: dict[str, list] = {}
    reasons: Counter = Counter()

    def clean(batch: list) -> None:
        for cleaned in clean_captures(batch, config):
            if isinstance(cleaned, Exception):
                reasons["error"] += 1
            elif cleaned.reference is None:
                reasons[cleaned.reason] += 1
            else:
                reasons["kept"] += 1
                found.setdefault(cleaned.reference.url, []).append(cleaned.reference)

    with open(path, "rb") as f:
        batches = CaptureBatches()
        for record in iter_records(f, str(path), max_bytes=config.max_page_bytes):
            if isinstance(record, Capture):
                for batch in batches.add(record):
                    clean(batch)
        clean(batches.rest())
    return {url: pick_capture(refs)[0] for url, refs in found.items()}, dict(reasons)


def known_items(pages: list[Page], indexed: set[str]) -> tuple[list[tuple[str, str]], dict]:
    """(title, normalised URL) of every indexed page whose title can be a query and is no
    other indexed page's; and how many pages were left out, by why."""
    from wikisum.pipeline.search.titles import title_problem
    from wikisum.pipeline.urls import normalize_title, normalize_url

    by_title: dict[str, list] = {}
    left_out: Counter = Counter()
    for page in pages:
        url = normalize_url(page.url)
        if url not in indexed:
            continue
        if not page.title:
            left_out["no_title"] += 1
        elif title_problem(page.title) is not None:
            left_out[title_problem(page.title)] += 1
        else:
            by_title.setdefault(normalize_title(page.title), []).append((page.title, url))
    items = []
    for entries in by_title.values():
        if len({url for _, url in entries}) > 1:
            left_out["shared_title"] += len(entries)
        else:
            items.append(entries[0])
    return items, dict(left_out)


# ------------------------------------------------------------------------------------------
# The jobs, in child processes

JOB_CHILD = """\
import json, sys, time
t0 = time.perf_counter()
from wikisum.workflows import cli
t1, c1 = time.perf_counter(), time.process_time()
rc = cli.main(sys.argv[1:])
print("BENCH_TIMES " + json.dumps({"import_s": t1 - t0, "job_s": time.perf_counter() - t1,
                                   "job_cpu_s": time.process_time() - c1}), flush=True)
sys.exit(rc)
"""


def run_job(argv: list[str], log: Path) -> dict:
    """``wikisum ARGV`` as the command line runs it, in a child process: its seconds from after
    the imports (``job_s``, ``job_cpu_s``) and the whole process's (``wall_s``, ``cpu_s``)."""
    start = time.perf_counter()
    with open(log, "wb") as out:
        proc = subprocess.Popen([sys.executable, "-c", JOB_CHILD, *argv], cwd=ROOT,
                                stdout=out, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    text = log.read_text(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0:
        tail = "\n".join(text.splitlines()[-30:])
        raise RuntimeError(f"wikisum {argv[0]} failed:\n{tail}")
    times = json.loads(next(line for line in text.splitlines()
                            if line.startswith("BENCH_TIMES "))[len("BENCH_TIMES "):])
    return {**times, "wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime}


def index_urls(path: Path) -> set[str]:
    """Every URL an index holds, read from its shards."""
    import tantivy

    from wikisum.pipeline.search import index as idx

    opened = idx.SearchIndex(str(path))
    try:
        urls = set()
        for shard in opened.shards:
            searcher = shard.searcher
            if searcher.num_docs:
                hits = searcher.search(tantivy.Query.all_query(), searcher.num_docs).hits
                urls.update(searcher.doc(address)[idx.URL][0] for _, address in hits)
        return urls
    finally:
        opened.close()


def recall(ranked: dict[str, list[str]], items: list[tuple[str, str]]) -> dict:
    """Recall at 1 and at K of ``ranked`` ({title: normalised URLs in rank order})."""
    n = len(items)
    at1 = sum(ranked.get(t, [])[:1] == [u] for t, u in items)
    atk = sum(u in ranked.get(t, [])[:K] for t, u in items)
    return {"queries": n, "recall@1": at1 / n if n else None,
            f"recall@{K}": atk / n if n else None, "found@1": at1, f"found@{K}": atk}


def job_ranking(results: Path) -> dict[str, list[str]]:
    from wikisum.pipeline.urls import normalize_url

    ranked = {}
    with open(results, encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            ranked[row["title"]] = [normalize_url(u) for u in row["urls"]]
    return ranked


# ------------------------------------------------------------------------------------------
# bm25s


def bm25s_index(texts: list[str]):
    import bm25s
    import Stemmer

    tokens = bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"),
                            show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(tokens, show_progress=False)
    return retriever


def bm25s_search(retriever, queries: list[str], k: int):
    """(document numbers, scores), one row per query: bm25s's tokenizer and retrieve, one
    thread, numpy backend."""
    import bm25s
    import Stemmer

    tokens = bm25s.tokenize(queries, stopwords="en", stemmer=Stemmer.Stemmer("english"),
                            show_progress=False)
    return retriever.retrieve(tokens, k=k, n_threads=1, backend_selection="numpy",
                              show_progress=False)


def bm25s_ranking(urls: list[str], texts: list[str], queries: dict[str, str]
                  ) -> dict[str, list[str]]:
    """{title: URLs bm25s ranks for its query}, results of score 0 (no term matched) left
    out."""
    retriever = bm25s_index(texts)
    titles = list(queries)
    docs, scores = bm25s_search(retriever, [queries[t] for t in titles], min(K, len(urls)))
    return {t: [urls[d] for d, s in zip(docs[i], scores[i], strict=True) if s > 0]
            for i, t in enumerate(titles)}


# ------------------------------------------------------------------------------------------
# Speed, in this process


def interleaved(fns: dict, rounds: int, min_s: float = 0.0) -> dict:
    """{label: (seconds, CPU seconds, rounds)} of calling every ``fns[label]`` once a round, in
    turn, for ``rounds`` rounds and then until each has run ``min_s`` seconds; the median
    round's pair. Interleaved, so that a machine whose speed drifts slows each alike."""
    walls: dict = {k: [] for k in fns}
    cpus: dict = {k: [] for k in fns}
    while min(len(v) for v in walls.values()) < rounds or min(
            sum(v) for v in walls.values()) < min_s:
        for label, fn in fns.items():
            t, c = time.perf_counter(), time.process_time()
            fn()
            walls[label].append(time.perf_counter() - t)
            cpus[label].append(time.process_time() - c)
    out = {}
    for label, w in walls.items():
        mid = sorted(range(len(w)), key=w.__getitem__)[len(w) // 2]
        out[label] = (w[mid], cpus[label][mid], len(w))
    return out


def write_one_shard_index(folder: Path, pages) -> int:
    """A finished one-shard index of ``pages`` ((url, terms)) laid out as the job lays it out
    (shards/RUN/shard-00000-of-00001 and index.json, files with their bytes and SHA-256), so
    that ``SearchIndex`` opens it as it opens the job's."""
    from wikisum.pipeline.search import index as idx

    name = idx.shard_name(0, 1)
    shard = folder / idx.SHARDS / "bench" / name
    shard.mkdir(parents=True)
    n = idx.build_shard(str(shard), pages)
    entry = {"name": name, "documents": n, "files": {}}
    for file_name in idx.shard_files(str(shard)):
        size, digest = idx.file_digest(str(shard / file_name))
        entry["files"][file_name] = {"bytes": size, "sha256": digest}
    record = {"index": {"format": idx.FORMAT, "version": idx.VERSION, "lang": "en",
                        "run": "bench", "documents": n, "shards": [entry]}}
    (folder / idx.RECORD).write_text(json.dumps(record))
    return n


def measure_speed(docs: list[tuple[str, str]], queries: list[str], indexes: dict,
                  copies: list[int], work: Path, min_s: float, rounds: int) -> dict:
    """pages/s of analysis and of the tantivy build, bm25s's tokenize and index, and queries/s
    of both over the same documents (``docs``: (url, text); ``indexes``: label -> a job's
    index of them). Per core: per CPU second of this process (tantivy's writer hands the
    finished segment to a thread of its own, so its wall seconds are fewer)."""
    import bm25s
    import Stemmer

    from wikisum.pipeline.search import index as idx
    from wikisum.pipeline.search.analysis import Analyzer

    analyzer = Analyzer("en")
    stemmer = Stemmer.Stemmer("english")
    texts = [text for _, text in docs]
    copies_max = max(copies)
    texts_copied = texts * copies_max
    pages = len(docs) * copies_max
    terms: list = []
    tokenized: list = []

    def replicated(c: int):
        return ((f"{url}#copy{i}", t) for i in range(c)
                for (url, _), t in zip(docs, terms, strict=True))

    def analyse():
        terms[:] = [analyzer.terms(t) for t in texts]

    def build():
        folder = tempfile.mkdtemp(dir=work, prefix="build-")
        try:
            idx.build_shard(folder, replicated(copies_max))
        finally:
            shutil.rmtree(folder)

    def tokenize():
        tokenized[:] = [bm25s.tokenize(texts_copied, stopwords="en", stemmer=stemmer,
                                       show_progress=False)]

    def index():
        bm25s.BM25().index(tokenized[0], show_progress=False)

    got = interleaved({"analysis": analyse, "tantivy_build": build, "bm25s_tokenize": tokenize,
                       "bm25s_index": index}, rounds)
    del tokenized[:]
    out: dict = {"documents": len(docs), "text_mb": sum(len(t.encode()) for t in texts) / 1e6,
                 "terms_per_page": statistics.mean(len(t) for t in terms)}
    for label, n in (("analysis", len(docs)), ("tantivy_build", pages),
                     ("bm25s_tokenize", pages), ("bm25s_index", pages)):
        wall, cpu, r = got[label]
        out[label] = {"pages": n, "s": wall, "cpu_s": cpu, "rounds": r,
                      "pages_per_s": n / wall, "pages_per_cpu_s": n / cpu}
    out["analysis_and_build_pages_per_cpu_s"] = 1 / (
        1 / out["analysis"]["pages_per_cpu_s"] + 1 / out["tantivy_build"]["pages_per_cpu_s"])
    out["bm25s_tokenize_and_index_pages_per_cpu_s"] = 1 / (
        1 / out["bm25s_tokenize"]["pages_per_cpu_s"] + 1 / out["bm25s_index"]["pages_per_cpu_s"])

    # Queries: each title analysed (tokenised) and asked, k 10; wikisum one title at a time as
    # the job asks them, bm25s all in one call as its API takes them.
    opened: dict = {}
    fns: dict = {}
    for label, path in indexes.items():
        opened[f"wikisum, {label}"] = idx.SearchIndex(str(path))
    for c in copies:
        folder = work / f"speed-index-{c}x"
        write_one_shard_index(folder, replicated(c))
        opened[f"wikisum, 1 shard, {c}x copies"] = idx.SearchIndex(str(folder))
    for label, searcher in opened.items():
        def ask(searcher=searcher):
            for q in queries:
                searcher.search(searcher.analyzer.terms(q), K)
        fns[label] = ask
    documents = {label: s.info["documents"] for label, s in opened.items()}
    shards = {label: len(s.shards) for label, s in opened.items()}
    for c in copies:
        retriever = bm25s_index(texts * c)
        label = f"bm25s, {c}x copies"
        fns[label] = lambda retriever=retriever: bm25s_search(retriever, queries, K)
        documents[label], shards[label] = len(texts) * c, 1
    try:
        got = interleaved(fns, rounds, min_s)
    finally:
        for searcher in opened.values():
            searcher.close()
    out["queries"] = len(queries)
    out["query_speed"] = {label: {"documents": documents[label], "shards": shards[label],
                                  "s": wall, "cpu_s": cpu, "rounds": r,
                                  "queries_per_s": len(queries) / wall,
                                  "queries_per_cpu_s": len(queries) / cpu}
                          for label, (wall, cpu, r) in got.items()}
    for engine in ("wikisum", "bm25s"):
        out[f"{engine}_query_cost_fit"] = query_cost_fit(
            [(v["documents"], 1 / v["queries_per_cpu_s"]) for k, v in out["query_speed"].items()
             if k.startswith(engine) and "copies" in k])
    return out


def query_cost_fit(points: list[tuple[int, float]]) -> dict | None:
    """The least-squares line through (documents in the shard, CPU seconds a query): seconds a
    query asks of a shard whatever its size, and more for each page in it."""
    if len({x for x, _ in points}) < 2:
        return None
    xs, ys = zip(*points, strict=True)
    mx, my = statistics.mean(xs), statistics.mean(ys)
    slope = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs)
    return {"per_shard_s": my - slope * mx, "per_page_s": slope, "points": points}


# ------------------------------------------------------------------------------------------
# Memory per shard, in child processes

MEMORY_CHILD = textwrap.dedent("""
    import json, os, pickle, shutil, sys, tempfile

    def status():
        found = {}
        with open("/proc/self/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    found[key] = int(value.split()[0]) * 1024
        return found

    engine, data, copies, work = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    if engine == "tantivy":
        from wikisum.pipeline.search import index as idx
    else:
        import bm25s, Stemmer
    with open(data, "rb") as f:
        docs = pickle.load(f)  # (url, text, terms)
    before = status()["VmRSS"]
    if engine == "tantivy":
        folder = tempfile.mkdtemp(dir=work)
        n = idx.build_shard(folder, ((f"{u}#copy{i}", t) for i in range(copies)
                                     for u, _, t in docs), idx.WRITER_HEAP_BYTES)
        names = os.listdir(folder)
        disk = sum(os.path.getsize(os.path.join(folder, x)) for x in names)
        segments = sum(x.endswith(".idx") for x in names)  # flushed by a full heap, merged
        shutil.rmtree(folder)
    else:
        texts = [text for i in range(copies) for _, text, _ in docs]
        tokens = bm25s.tokenize(texts, stopwords="en", stemmer=Stemmer.Stemmer("english"),
                                show_progress=False)
        retriever = bm25s.BM25()
        retriever.index(tokens, show_progress=False)
        n, disk, segments = len(texts), None, None
    print("BENCH_MEMORY " + json.dumps({"documents": n, "before_bytes": before,
                                        "peak_bytes": status()["VmHWM"], "disk_bytes": disk,
                                        "segments": segments}))
""")


def measure_memory(docs: list[tuple[str, str, list[str]]], copies: list[int],
                   bm25s_max: int, work: Path) -> list[dict]:
    """A child process per engine and copies (bm25s up to ``bm25s_max`` copies)."""
    data = work / "memory-docs.pickle"
    with open(data, "wb") as f:
        pickle.dump(docs, f)
    rows = []
    for c in copies:
        for engine in ("tantivy", "bm25s") if c <= bm25s_max else ("tantivy",):
            start = time.perf_counter()
            proc = subprocess.run([sys.executable, "-c", MEMORY_CHILD, engine, str(data),
                                   str(c), str(work)], cwd=ROOT, capture_output=True,
                                  text=True, check=False)
            if proc.returncode != 0:
                raise RuntimeError(f"memory child ({engine}, {c}x) failed:\n"
                                   f"{proc.stderr[-3000:]}")
            line = next(x for x in proc.stdout.splitlines() if x.startswith("BENCH_MEMORY "))
            got = json.loads(line[len("BENCH_MEMORY "):])
            rows.append({"engine": engine, "copies": c, **got,
                         "peak_mib": got["peak_bytes"] / 2**20,
                         "grown_mib": (got["peak_bytes"] - got["before_bytes"]) / 2**20,
                         "wall_s": time.perf_counter() - start})
            print(f"  memory: {engine} {got['documents']} pages: peak "
                  f"{rows[-1]['peak_mib']:.0f} MiB", flush=True)
    data.unlink()
    return rows


# ------------------------------------------------------------------------------------------
# Cost model


def cost_model(args: argparse.Namespace, speed: dict, jobs: dict, set_name: str) -> dict:
    """Core-hours and Dataflow vCPU cost of indexing ``args.crawl_pages * args.share`` pages
    and of searching ``args.titles`` titles, from the measured per-core rates."""
    pages = args.crawl_pages * args.share
    price = args.price_per_vcpu_hour

    def line(what: str, count: float, per_s: float, note: str) -> dict:
        hours = count / per_s / 3600
        return {"what": what, "count": count, "per_core_per_s": per_s, "core_hours": hours,
                "usd": hours * price, "note": note}

    index_job = jobs[f"search-index {set_name} 1 shard"]
    lines = [
        line("index: analysis + tantivy build only", pages,
             speed["analysis_and_build_pages_per_cpu_s"],
             "pages already cleaned: what indexing adds to the cleaning"),
        line("index: the whole search-index job (WARC HTML, cleaning included)", pages,
             index_job["pages_in"] / index_job["job_s"],
             "the job's pages in per second, Beam's local runner with one worker; "
             "trafilatura's extraction is most of it, which WET input skips (not measured)"),
    ]
    one = speed["query_speed"]["wikisum, 1 shard"]
    lines.append(line("search: titles, one shard of the dev set's size", args.titles,
                      one["queries_per_cpu_s"],
                      f"{one['documents']} pages in the index: a floor, not the cost over a "
                      "large index"))
    # A query's cost grows with the pages it is asked of (longer posting lists): the line
    # fitted on the copied shards, extended to the pages indexed in --index-shards shards.
    for engine, how in (
            ("wikisum", "tantivy's block-max WAND skips most blocks of copies, which tie at "
                        "the top score: likely low for distinct pages"),
            ("bm25s", "bm25s scores every posting of the query's terms and selects from every "
                      "page: no skipping, a high reference")):
        fit = speed[f"{engine}_query_cost_fit"]
        if fit is None or fit["per_page_s"] <= 0:  # too few or too small shards to tell
            continue
        per_query_s = fit["per_shard_s"] * args.index_shards + fit["per_page_s"] * pages
        sizes = [x for x, _ in fit["points"]]
        lines.append(line(
            f"search: titles over {pages:,.0f} pages in {args.index_shards} shards, "
            f"{engine}'s growth (extrapolated)", args.titles, 1 / per_query_s,
            f"CPU seconds a query = {fit['per_shard_s'] * 1e6:.0f} us a shard + "
            f"{fit['per_page_s'] * 1e9:.2f} ns a page, fitted on shards of {min(sizes)}-"
            f"{max(sizes)} copied pages; {how}"))
    return {"assumptions": {
        "crawl_pages": args.crawl_pages, "share_indexed": args.share, "pages_indexed": pages,
        "titles": args.titles, "price_per_vcpu_hour_usd": price,
        "price_note": "Dataflow batch worker vCPU price as assumed here; memory, disk and "
                      "shuffle are not included: check your region's prices"},
        "lines": lines}


# ------------------------------------------------------------------------------------------
# The run


def machine_facts() -> dict:
    from bench import machine

    def git(*words: str) -> str:
        try:
            return subprocess.run(["git", *words], cwd=ROOT, capture_output=True, text=True,
                                  check=False).stdout.strip()
        except OSError:
            return ""

    return {"commit": git("rev-parse", "--short", "HEAD"),
            "uncommitted_changes": bool(git("status", "--porcelain")),
            "nproc": os.cpu_count(), **machine.describe()}


def versions() -> dict:
    from importlib.metadata import version

    from wikisum.pipeline.search import index as idx

    return {"tantivy": idx.engine_version(), "bm25s": version("bm25s"),
            "apache_beam": version("apache-beam"), "trafilatura": version("trafilatura")}


def evaluate_set(name: str, args, pages: list[Page], warc: Path, cleaned: dict,
                 work: Path, jobs: dict) -> dict:
    """Index one set with 1 and N shards, search it in both query modes, and bm25s the same
    documents; recall of each."""
    from wikisum.pipeline import language
    from wikisum.pipeline.language import is_wrong_language
    from wikisum.pipeline.search.titles import query_for

    extra = ["--reference-lang", "any"] if name == "any" else []
    shard_counts = [1] if args.quick else [1, args.shards]
    indexes, record = {}, None
    for shards in shard_counts:
        out = work / f"index-{name}-{shards}"
        label = f"search-index {name} {shards} shard" + ("s" if shards > 1 else "")
        print(f"{label} ...", flush=True)
        jobs[label] = run_job(["search-index", "--warc", str(warc), "--out", str(out),
                               "--shards", str(shards), *extra], work / f"{label}.log")
        record = json.loads((out / "index.json").read_text())
        jobs[label].update(pages_in=len(pages), documents=record["index"]["documents"],
                           index_pages=record["stages"]["index_pages"])
        indexes[shards] = out
    indexed = index_urls(indexes[1])
    missing = sorted(indexed - cleaned.keys())
    if missing:
        raise RuntimeError(f"{len(missing)} pages the job indexed were not cleaned here, e.g. "
                           f"{missing[:3]}")
    urls = sorted(indexed)
    texts = [cleaned[u].text() for u in urls]
    items, left_out = known_items(pages, indexed)
    english = {u for u in urls if not is_wrong_language(
        language.Language(cleaned[u].language, cleaned[u].language_confidence), "en")}
    titles = work / f"titles-{name}.txt"
    titles.write_text("".join(t + "\n" for t, _ in items), encoding="utf-8")

    result: dict = {"documents": len(urls), "english_documents": len(english),
                    "queries": len(items), "left_out": left_out, "recall": {}}
    subsets = {"all": items}
    if name == "any":
        subsets["english queries"] = [(t, u) for t, u in items if u in english]
    for mode in ("title", "no-disambiguation"):
        queries = {t: query_for(t, mode) for t, _ in items}
        result.setdefault("queries_changed_by_mode", {})[mode] = sum(
            queries[t] != t for t, _ in items)
        ranked_bm25s = bm25s_ranking(urls, texts, queries)
        for shards, path in indexes.items():
            if mode != "title" and shards != 1:
                continue
            label = f"search {name} {shards} shard{'s' if shards > 1 else ''} {mode}"
            out = work / f"results-{name}-{shards}-{mode}.jsonl"
            print(f"{label} ...", flush=True)
            jobs[label] = run_job(["search", "--index", str(path), "--titles", str(titles),
                                   "--out", str(out), "--k", str(K), "--query", mode],
                                  work / f"{label}.log")
            jobs[label]["titles"] = len(items)
            ranked = job_ranking(out)
            for subset, chosen in subsets.items():
                result["recall"][f"wikisum, {shards} shard{'s' if shards > 1 else ''}, "
                                 f"{mode}, {subset}"] = recall(ranked, chosen)
        for subset, chosen in subsets.items():
            result["recall"][f"bm25s, {mode}, {subset}"] = recall(ranked_bm25s, chosen)
    result["_indexes"] = indexes
    result["_urls"], result["_items"] = urls, items
    return result


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(ROOT))
    from bench import machine, options

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shared", type=Path, default=SHARED, metavar="DIR",
                        help="the extraction set: evaldata.json and pages/ (default: %(default)s)")
    parser.add_argument("--shards", type=int, default=4,
                        help="the N of the N-shard indexes (default: %(default)s)")
    parser.add_argument("--speed-copies", default="1,4,16",
                        help="copies of the any set in the query-speed shards; the largest is "
                             "also the build's (default: %(default)s)")
    parser.add_argument("--memory-copies", default="1,16,64,128",
                        help="copies of the any set in the memory children "
                             "(default: %(default)s)")
    parser.add_argument("--bm25s-memory-max", type=int, default=64,
                        help="bm25s's memory is measured up to this many copies, to keep the "
                             "run short (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds (median kept)")
    parser.add_argument("--min-query-s", type=float, default=2.0,
                        help="seconds each query-speed measurement runs at least")
    parser.add_argument("--crawl-pages", type=float, default=3e9,
                        help="cost model: pages in one Common Crawl crawl (default: %(default)g)")
    parser.add_argument("--share", type=float, default=0.01,
                        help="cost model: the share of the crawl indexed, a 'segment set' "
                             "(default: %(default)g)")
    parser.add_argument("--titles", type=float, default=2.3e6,
                        help="cost model: titles searched, WikiSum's articles "
                             "(default: %(default)g)")
    parser.add_argument("--index-shards", type=int, default=100,
                        help="cost model: shards of the large index (default: %(default)s)")
    parser.add_argument("--price-per-vcpu-hour", type=float, default=0.056,
                        help="cost model: USD per vCPU-hour, an assumption to check "
                             "(default: %(default)s)")
    parser.add_argument("--quick", action="store_true",
                        help="the en set with 1 shard only, few copies: a smoke run")
    parser.add_argument("--work", type=Path, metavar="DIR",
                        help="keep the WARC, indexes and results here (default: a temporary "
                             "folder, removed)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="RESULTS.json")
    args = options.parse(parser, argv)
    ints = lambda s: sorted({int(x) for x in s.split(",") if x.strip()})  # noqa: E731
    speed_copies = [1, 2] if args.quick else ints(args.speed_copies)
    memory_copies = [1, 2] if args.quick else ints(args.memory_copies)
    if not (args.shared / "evaldata.json").exists():
        parser.error(f"no extraction set at {args.shared} (evaldata.json and pages/)")

    facts = machine_facts()
    print(f"commit {facts['commit']}, {facts['nproc']} CPUs ({facts['cpu']}), "
          f"Python {facts['python']}", flush=True)
    results: dict = {"bench": "search", "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                     "command": machine.command_line(argv), "machine": facts,
                     "versions": versions(), "load_average_before": os.getloadavg(),
                     "options": {k: str(v) if isinstance(v, Path) else v
                                 for k, v in vars(args).items()
                                 if k not in ("config", "show_config")}}
    started = time.perf_counter()
    work = args.work or Path(tempfile.mkdtemp(prefix="wikisum-bench-search-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        pages = load_pages(args.shared)
        warc = work / "pages.warc.gz"
        write_warc(pages, warc)
        print(f"{len(pages)} pages written to {warc}; cleaning them here ...", flush=True)
        t = time.perf_counter()
        cleaned, reasons = clean_warc(warc)
        results["dev_set"] = {"pages": len(pages),
                              "pages_with_title": sum(p.title is not None for p in pages),
                              "cleaned_here": reasons, "clean_here_s": time.perf_counter() - t}
        jobs: dict = {}
        sets = {}
        for name in ("en",) if args.quick else ("en", "any"):
            sets[name] = evaluate_set(name, args, pages, warc, cleaned, work, jobs)
        results["jobs"] = jobs
        speed_set = sets["en" if args.quick else "any"]
        docs = [(u, cleaned[u].text()) for u in speed_set["_urls"]]
        queries = [q for q, _ in speed_set["_items"]]
        indexes = {("1 shard" if n == 1 else f"{n} shards"): p
                   for n, p in speed_set["_indexes"].items()}
        print("speed ...", flush=True)
        results["speed"] = {"set": "en" if args.quick else "any", **measure_speed(
            docs, queries, indexes, speed_copies, work, args.min_query_s, args.rounds)}
        print("memory ...", flush=True)
        from wikisum.pipeline.search.analysis import Analyzer

        analyzer = Analyzer("en")
        results["memory"] = measure_memory([(u, t, analyzer.terms(t)) for u, t in docs],
                                           memory_copies, args.bm25s_memory_max, work)
        results["sets"] = {k: {x: y for x, y in v.items() if not x.startswith("_")}
                           for k, v in sets.items()}
        results["cost_model"] = cost_model(args, results["speed"], jobs,
                                           "en" if args.quick else "any")
        results["published"] = PUBLISHED
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    results["seconds"] = time.perf_counter() - started
    results["load_average_after"] = os.getloadavg()
    report(results)
    machine.write_results(args.out, results)
    return 0


def report(r: dict) -> None:
    print(f"\n## wikisum search vs bm25s ({r['machine']['nproc']} CPUs, "
          f"{r['machine']['cpu'] or 'unknown CPU'}; tantivy {r['versions']['tantivy']}, "
          f"bm25s {r['versions']['bm25s']})\n")
    dev = r["dev_set"]
    print(f"{dev['pages']} pages ({dev['pages_with_title']} with a <title>); cleaned: "
          + ", ".join(f"{k} {v}" for k, v in sorted(dev["cleaned_here"].items())))
    for name, s in r["sets"].items():
        print(f"\n### set {name}: {s['documents']} documents ({s['english_documents']} English), "
              f"{s['queries']} queries (left out: "
              + (", ".join(f"{k} {v}" for k, v in s["left_out"].items()) or "none")
              + "; no-disambiguation changes "
              + f"{s['queries_changed_by_mode']['no-disambiguation']})\n")
        print(f"| engine, query mode, queries | queries | recall@1 | recall@{K} |")
        print("|---|---:|---:|---:|")
        for label, v in s["recall"].items():
            print(f"| {label} | {v['queries']} | {v['recall@1']:.3f} | {v[f'recall@{K}']:.3f} |")
    sp = r["speed"]
    print(f"\n### speed, one thread (set {sp['set']}: {sp['documents']} pages, "
          f"{sp['text_mb']:.1f} MB of text, {sp['terms_per_page']:.0f} terms a page)\n")
    print("| what | pages | seconds | pages/s | pages per CPU-s (per core) |")
    print("|---|---:|---:|---:|---:|")
    for key, what in (("analysis", "wikisum analysis"),
                      ("tantivy_build", "tantivy build (1 writer thread)"),
                      ("bm25s_tokenize", "bm25s tokenize"), ("bm25s_index", "bm25s index")):
        v = sp[key]
        print(f"| {what} | {v['pages']} | {v['s']:.2f} | {v['pages_per_s']:.0f} | "
              f"{v['pages_per_cpu_s']:.0f} |")
    print(f"| wikisum analysis + build | | | | {sp['analysis_and_build_pages_per_cpu_s']:.0f} |")
    print(f"| bm25s tokenize + index | | | | "
          f"{sp['bm25s_tokenize_and_index_pages_per_cpu_s']:.0f} |")
    print(f"\n{sp['queries']} queries, k {K}, analysis or tokenising included (bm25s: numpy "
          "backend, 1 thread):\n")
    print("| engine, index | pages | queries/s | queries per CPU-s (per core) |")
    print("|---|---:|---:|---:|")
    for label, v in sp["query_speed"].items():
        print(f"| {label} | {v['documents']} | {v['queries_per_s']:.0f} | "
              f"{v['queries_per_cpu_s']:.0f} |")
    for engine in ("wikisum", "bm25s"):
        fit = sp[f"{engine}_query_cost_fit"]
        if fit:
            print(f"- {engine}: CPU seconds a query = {fit['per_shard_s'] * 1e6:.0f} us + "
                  f"{fit['per_page_s'] * 1e9:.2f} ns a page in the shard (least squares)")
    print("\n### jobs (child process, Beam's local runner, one worker)\n")
    print("| job | pages or titles | job s | CPU s | process wall s |")
    print("|---|---:|---:|---:|---:|")
    for label, v in r["jobs"].items():
        n = v.get("pages_in", v.get("titles"))
        print(f"| {label} | {n} | {v['job_s']:.1f} | {v['job_cpu_s']:.1f} | {v['wall_s']:.1f} |")
    print("\n### memory: one shard, peak resident set of a child process\n")
    print("| engine | pages | peak MiB | grown MiB (peak - before) | segments |")
    print("|---|---:|---:|---:|---:|")
    for m in r["memory"]:
        print(f"| {m['engine']} | {m['documents']} | {m['peak_mib']:.0f} | "
              f"{m['grown_mib']:.0f} | {m['segments'] if m['segments'] is not None else ''} |")
    cm = r["cost_model"]
    a = cm["assumptions"]
    print(f"\n### cost model ({a['pages_indexed']:,.0f} pages = {a['share_indexed']:g} of "
          f"{a['crawl_pages']:,.0f}; {a['titles']:,.0f} titles; "
          f"${a['price_per_vcpu_hour_usd']}/vCPU-hour, {a['price_note']})\n")
    print("| what | per core per s | core-hours | USD |")
    print("|---|---:|---:|---:|")
    for line in cm["lines"]:
        print(f"| {line['what']} | {line['per_core_per_s']:.1f} | {line['core_hours']:,.1f} | "
              f"{line['usd']:,.2f} |")
    for line in cm["lines"]:
        print(f"- {line['what']}: {line['note']}")
    print("\npublished bm25s figures (one core, BEIR passages of 8-120 tokens, where a page "
          f"here keeps {sp['terms_per_page']:.0f} terms): "
          f"{PUBLISHED['bm25s_queries_per_s']['range'][0]:g}-"
          f"{PUBLISHED['bm25s_queries_per_s']['range'][1]:g} queries/s, "
          f"{PUBLISHED['bm25s_index_docs_per_s']['range'][0]:,.0f}-"
          f"{PUBLISHED['bm25s_index_docs_per_s']['range'][1]:,.0f} docs/s indexing")
    print(f"\nwhole run {r['seconds']:.0f} s; load average before "
          f"{r['load_average_before'][0]:.2f}, after {r['load_average_after'][0]:.2f}")


if __name__ == "__main__":
    sys.exit(main())
