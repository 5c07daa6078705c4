"""Throughput and memory of the ``wikisum ingest`` Beam job on a generated corpus.

What it measures (the figures the ingest issue asks for):

* **Beam, 1 worker, against a plain loop.** The plain loop reads every WARC/WET file with warcio
  and cleans every page record with trafilatura, one page after the other in one process. It
  calls the job's own functions for this (``wikisum.pipeline.warcs.iter_records`` and
  ``wikisum.pipeline.references.clean_captures``, in the job's batches, i.e. warcio + charset
  decoding + trafilatura + the paragraph filter + language identification), so both sides clean
  every page the same way.
  The loop does *only* that: the Beam job also parses the dump, matches search results, joins,
  removes clones and writes Parquet, so the comparison is strict for Beam. The loop times the
  dump parsing separately (``iter_pages`` + ``page_to_article``) to show how much of the job's
  extra work that is, and a bare variant (warcio + trafilatura on the 2xx HTML pages under the
  job's size limit; no charset detection, no paragraph filter, no per-page timeout thread) shows
  the cost of the cleaning.
  Targets: Beam's pages/s with one worker >= 0.55 x the bare loop's on the generated corpus,
  and >= 0.8 x per core on real pages (``--only real``); its fixed cost <= 4 s. The ratio to the
  plain loop is informative: Beam's floor alone barely reaches 0.8 of it.
* **Beam, 2 workers against 1.** Both with ``--direct_running_mode multi_processing``, so that
  only the worker count differs. One worker is also run in Beam's default ``in_memory`` mode
  (the SDK harness in the job's own process), which is the figure used against the loop.
  Target: 2 workers >= 1.6 x the pages/s of 1 worker (0.8 per core).
* **Peak memory against the number of input files.** The same WARC records are rewritten into
  few and into many files (records are gzip members, so the files are cut at record boundaries
  and the bytes copied unchanged), and the one-worker job runs on each. Target: the peak with
  many files is at most 1.1 x the peak with few (10 % for measurement noise).

Informative figures next to the targets: the loop with the dump parsing added, and Beam's fixed
cost (the same job on a 1-article corpus) with the rate past it, which tells whether a miss comes
from a per-page cost or from a start-up cost that a larger input would amortise. Beam's floor
(``--only loop,floor``; with ``beam-1-in_memory`` too for the job's seconds past it) is the
least a Beam job can do with the same pages, run on the job's runner and timed as the job is:
Beam imported, the files read and cleaned in one step with the loop's own function, nothing
else. Its ratio to the loop bounds what any Beam job that cleans these pages can reach, and the
job's seconds past it are its own work (dump, search results, joins, clones, de-duplication,
Parquet).

Pages are the records that can hold a page (WARC ``response`` and ``resource``, WET
``conversion``); ``request``, ``warcinfo`` and the like are read but not counted. Pages per
second = pages / seconds of the job, measured inside the child process from just before
``wikisum ingest`` starts to its end, so interpreter start-up and imports are left out (the wall
time of the whole process is reported too). Per core = pages/s divided by the number of workers.

Every run is a separate child process, so that its memory is its own. Peak memory is the peak
of the summed resident set (RSS) of the child and all its descendants, sampled from /proc every
50 ms (Beam's ``multi_processing`` workers are child processes); the exact high-water mark of the
largest single process (its ``VmHWM``) is reported next to it. CPU seconds are those of the
whole process tree (``wait4``), start-up included.

Run by hand, never by CI (a full run takes a few minutes), after ``make setup``::

    .venv/bin/python bench/ingest.py                 # 1,000 articles, about 6,900 pages
    .venv/bin/python bench/ingest.py --quick         # a small corpus, a smoke run
    .venv/bin/python bench/ingest.py --repeat 3 --work /tmp/wikisum-bench   # figures to keep

It prints a table with PASS/MISS per target and writes every figure, the machine and the
command line to ``bench/results/ingest.json`` (``--out`` to change). Timings depend on the
machine and on whatever else runs on it: the load average before and after is recorded.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "bench" / "results" / "ingest.json"
PAGE_TYPES = ("response", "resource", "conversion")
MIN_PAGES = 2000  # the issue asks for a corpus of at least this many reference pages

TARGET_VS_BARE = 0.55
TARGET_FIXED_S = 4.0
TARGET_REAL_VS_BARE = 0.8
TARGET_SCALING = 1.6
TARGET_MEMORY_GROWTH = 1.1

SHARED_PAGES = ROOT.parent / "shared" / "data" / "extraction" / "pages"
# The runs, by the names --only takes ("files" is both file-count runs).
RUN_NAMES = ("loop", "loop-bare", "beam-1-in_memory", "beam-1-multi_processing",
             "beam-2-multi_processing", "files", "fixed", "floor", "real")

# The child process that runs a Beam job: `wikisum ingest` exactly as the command line runs it,
# timed from after the imports to the end of the job.
INGEST_CHILD = """\
import json, os, sys, time
t0 = time.perf_counter()
from wikisum.workflows import cli
t1, c1 = time.perf_counter(), time.process_time()
if os.environ.get("BENCH_STAGES"):
    from bench.stages import profile_call
    rc, profile, _ = profile_call(cli.main, sys.argv[1:])
    print("BENCH_STAGES " + json.dumps(profile), flush=True)
else:
    rc = cli.main(sys.argv[1:])
t2, c2 = time.perf_counter(), time.process_time()
print("BENCH_TIMES", t1 - t0, t2 - t1, c2 - c1, flush=True)
sys.exit(rc)
"""


# ------------------------------------------------------------------------------------------
# Child processes and their memory


class TreeMemory(threading.Thread):
    """Samples the summed RSS of a process and its descendants until stopped, and keeps the
    highest VmHWM seen of each (exact for a process, unlike the sum, which is sampled)."""

    def __init__(self, pid: int, interval_s: float = 0.05):
        super().__init__(daemon=True)
        self.pid, self.interval_s = pid, interval_s
        self.peak_bytes = 0
        self.hwm_bytes: dict[int, int] = {}
        self.max_processes = 0
        self.samples = 0
        self._done = threading.Event()

    def run(self) -> None:
        from bench.machine import process_children, rss_and_hwm

        while not self._done.is_set():
            pids, todo = [], [self.pid]
            while todo:
                pid = todo.pop()
                pids.append(pid)
                todo.extend(process_children(pid))
            total = 0
            for pid in pids:
                rss, hwm = rss_and_hwm(pid)
                total += rss
                self.hwm_bytes[pid] = max(hwm, self.hwm_bytes.get(pid, 0))
            self.peak_bytes = max(self.peak_bytes, total)
            self.max_processes = max(self.max_processes, len(pids))
            self.samples += 1
            self._done.wait(self.interval_s)

    def stop(self) -> None:
        self._done.set()
        self.join()


def run_child(argv: list[str], log_path: Path, extra_env: dict | None = None) -> dict:
    """Run ``argv`` with the project on its path; wall time, CPU time and memory of its tree."""
    env = {**os.environ, **(extra_env or {})}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    with open(log_path, "wb") as log:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        monitor = TreeMemory(proc.pid)
        monitor.start()
        # wait4, not proc.wait(): its rusage covers the child and every descendant it reaped.
        # (Its ru_maxrss is not used: Linux carries the parent's RSS at fork over into it.)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        monitor.stop()
        proc.returncode = os.waitstatus_to_exitcode(status)
    output = log_path.read_text(errors="replace")
    if proc.returncode != 0:
        tail = "\n".join(output.splitlines()[-30:])
        raise RuntimeError(f"exit status {proc.returncode}: {shlex.join(argv[:3])} ...\n{tail}")
    return {
        "wall_s": wall,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_tree_rss_mib": monitor.peak_bytes / 2**20,
        "max_single_rss_mib": max(monitor.hwm_bytes.values(), default=0) / 2**20,
        "max_processes": monitor.max_processes,
        "memory_samples": monitor.samples,
        "output": output,
    }


# ------------------------------------------------------------------------------------------
# The plain loop (run in a child: `bench/ingest.py _loop ...`)


def read_and_clean(path: str, config) -> tuple[int, int, int]:
    """What the job's ReadAndCleanRecords does to one file, without Beam: its records read with
    ``iter_records``, its pages cleaned with ``clean_captures`` in the job's batches. Returns
    (records, pages, pages kept). The plain loop and Beam's floor both call it."""
    from wikisum.pipeline.references import CaptureBatches, clean_captures
    from wikisum.pipeline.warcs import Capture, iter_records

    def clean(batch: list) -> int:
        return sum(getattr(c, "reference", None) is not None
                   for c in clean_captures(batch, config))

    records = pages = kept = 0
    with open(path, "rb") as f:
        batches = CaptureBatches()
        for rec in iter_records(f, path, max_bytes=config.max_page_bytes):
            records += 1
            if isinstance(rec, Capture):
                pages += 1
                kept += sum(clean(batch) for batch in batches.add(rec))
        kept += clean(batches.rest())
    return records, pages, kept


def floor_child(files: list[str]) -> int:
    """Beam's floor: the least a Beam job can do with the corpus's pages, run as the job runs
    (wikisum's local runner, 1 worker, in_memory): the file names spread over the workers, each
    file read and cleaned in one step (`read_and_clean`, as the loop does), the counts summed.
    No dump, no search results, no joins, no clone filter, no de-duplication, no Parquet.
    Timed like the job (INGEST_CHILD): ``wikisum.workflows.cli`` imported first, which does not
    import Beam, then the clock from before Beam's import to the end. Prints one JSON line."""
    from wikisum.workflows import cli  # noqa: F401 (what the job's child imports untimed)

    start, cpu = time.perf_counter(), time.process_time()
    import apache_beam as beam
    from apache_beam.metrics.metric import MetricsFilter
    from apache_beam.options.pipeline_options import PipelineOptions

    from wikisum.pipeline.beamio import LocalRunner
    from wikisum.pipeline.ingest.config import CleanConfig

    config = CleanConfig()

    class ReadAndClean(beam.DoFn):
        def __init__(self) -> None:
            self.counters = {name: beam.metrics.Metrics.counter("floor", name)
                             for name in ("records", "pages", "kept")}

        def process(self, path: str):
            for name, n in zip(("records", "pages", "kept"), read_and_clean(path, config),
                               strict=True):
                self.counters[name].inc(n)
            yield path

    imported = time.perf_counter()
    options = PipelineOptions(["--direct_num_workers", "1", "--direct_running_mode",
                               "in_memory"])
    pipeline = beam.Pipeline(runner=LocalRunner(), options=options)
    _ = (pipeline | beam.Create(files) | beam.Reshuffle() | beam.ParDo(ReadAndClean()))
    result = pipeline.run()
    result.wait_until_finish()
    counts = {r.key.metric.name: r.committed
              for r in result.metrics().query(MetricsFilter().with_namespace("floor"))["counters"]}
    print("BENCH_FLOOR " + json.dumps({
        "job_s": time.perf_counter() - start, "import_s": imported - start,
        "job_cpu_s": time.process_time() - cpu, "records": counts.get("records", 0),
        "pages": counts.get("pages", 0), "kept": counts.get("kept", 0)}), flush=True)
    return 0


def loop_child(args: list[str]) -> int:
    """warcio + trafilatura over every page, one after the other; prints one JSON line."""
    import bz2

    from warcio.archiveiterator import ArchiveIterator

    from wikisum.core.records import Article
    from wikisum.pipeline import references, warcs  # noqa: F401 (read_and_clean's, not timed)
    from wikisum.pipeline.articles import page_to_article
    from wikisum.pipeline.dumps import iter_pages
    from wikisum.pipeline.ingest.config import CleanConfig
    from wikisum.pipeline.webtext import extract_main_text

    variant, dump, files = args[0], args[1], args[2:]
    config = CleanConfig()
    result: dict = {"variant": variant}
    start, cpu = time.perf_counter(), time.process_time()
    pages = kept = records = 0
    if variant == "clean":
        for path in files:
            counts = read_and_clean(path, config)
            records, pages, kept = records + counts[0], pages + counts[1], kept + counts[2]
    else:
        # The bare minimum: warcio, then trafilatura on every HTML page with a 2xx status, with
        # the job's size limit (one generated page is 6 MB, which alone takes over a second).
        for path in files:
            with open(path, "rb") as f:
                for rec in ArchiveIterator(f, arc2warc=True):
                    records += 1
                    if rec.rec_type not in PAGE_TYPES:
                        continue
                    pages += 1
                    body = rec.content_stream().read(config.max_page_bytes + 1)
                    headers = rec.http_headers or rec.rec_headers
                    status = rec.http_headers.get_statuscode() if rec.http_headers else "200"
                    if len(body) > config.max_page_bytes or not status.startswith("2"):
                        continue
                    text = body.decode("utf-8", "replace")
                    if "html" in (headers.get_header("Content-Type") or ""):
                        url = rec.rec_headers.get_header("WARC-Target-URI")
                        text = extract_main_text(text, url, timeout_s=None)
                    kept += bool(text.strip())
    result.update(loop_s=time.perf_counter() - start, loop_cpu_s=time.process_time() - cpu,
                  records=records, pages=pages, kept=kept)
    if variant == "clean":
        start, cpu = time.perf_counter(), time.process_time()
        n = articles = 0
        with bz2.open(dump, "rb") as f:
            for page in iter_pages(f):
                n += 1
                articles += isinstance(page_to_article(page, dump), Article)
        result.update(dump_s=time.perf_counter() - start, dump_cpu_s=time.process_time() - cpu,
                      dump_pages=n, dump_articles=articles)
    print("BENCH_LOOP " + json.dumps(result), flush=True)
    return 0


def marked_json(output: str, marker: str) -> dict:
    """The JSON a child printed on its line starting with ``marker`` and a space."""
    line = next(x for x in output.splitlines() if x.startswith(marker + " "))
    return json.loads(line[len(marker) + 1:])


def run_loop(variant: str, corpus: dict, log_path: Path) -> dict:
    argv = [sys.executable, str(Path(__file__).resolve()), "_loop", variant, corpus["dump"],
            *corpus["warc"], *corpus["wet"]]
    child = run_child(argv, log_path)
    inner = marked_json(child.pop("output"), "BENCH_LOOP")
    return {"kind": "loop", "variant": variant, "command": shlex.join(argv[:5]) + " ...",
            **child, **inner}


def run_floor(corpus: dict, log_path: Path) -> dict:
    argv = [sys.executable, str(Path(__file__).resolve()), "_floor", *corpus["warc"],
            *corpus["wet"]]
    child = run_child(argv, log_path)
    inner = marked_json(child.pop("output"), "BENCH_FLOOR")
    return {"kind": "floor", "command": shlex.join(argv[:3]) + " ...", **child, **inner}


# ------------------------------------------------------------------------------------------
# Beam runs


def run_beam(name: str, corpus: dict, warc_glob: str, beam_args: list[str], work: Path,
             stages: bool = False) -> dict:
    out = work / f"out-{name}"
    wet = ["--wet", corpus["wet_glob"]] if corpus["wet"] else []
    job_args = ["ingest", "--wiki", corpus["dump"], "--warc", warc_glob, *wet,
                "--search-results", corpus["search"], "--out", str(out), *beam_args]
    argv = [sys.executable, "-c", INGEST_CHILD, *job_args]
    child = run_child(argv, work / f"log-{name}.txt", {"BENCH_STAGES": "1"} if stages else None)
    output = child.pop("output")
    times = next(x for x in output.splitlines() if x.startswith("BENCH_TIMES"))
    import_s, job_s, job_cpu_s = (float(x) for x in times.split()[1:])
    if stages:
        child["stages"] = marked_json(output, "BENCH_STAGES")
    summary = json.loads((out / "summary.json").read_text())
    records = summary["stages"]["records"]
    not_pages = sum(n for k, n in records["dropped"].items() if k.startswith("not_a_page:"))
    return {
        "kind": "beam", "name": name, "beam_args": beam_args,
        "command": shlex.join([sys.executable, "-m", "wikisum.workflows.cli", *job_args]),
        "import_s": import_s, "job_s": job_s, "job_cpu_s": job_cpu_s, **child,
        "job_records": records["in"], "job_pages": records["in"] - not_pages,
        "job_kept": records["kept"], "job_balanced": summary["balanced"],
        "job_articles_kept": summary["stages"]["pages"]["kept"],
    }


# ------------------------------------------------------------------------------------------
# Corpus


def record_types(paths: list[str]) -> Counter:
    from warcio.archiveiterator import ArchiveIterator

    counts: Counter = Counter()
    for path in paths:
        with open(path, "rb") as f:
            for rec in ArchiveIterator(f, arc2warc=True):
                counts[rec.rec_type] += 1
    return counts


def make_corpus(work: Path, name: str, articles: int, seed: int) -> dict:
    from wikisum.pipeline.sample import corpus as sample

    src = work / name
    manifest_path = src / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else None
    if manifest is None or (manifest["articles_requested"], manifest["seed"]) != (articles, seed):
        print(f"generating the corpus: {articles} articles, seed {seed} -> {src}", flush=True)
        manifest = sample.write_sample(src, articles=articles, seed=seed)
    warc = sorted(str(p) for p in (src / "warc").glob("*.warc.gz"))
    wet = sorted(str(p) for p in (src / "wet").glob("*.warc.wet.gz"))
    types = record_types(warc + wet)
    return {
        "dir": str(src), "articles": articles, "seed": seed,
        "dump": str(src / sample.DUMP_NAME), "search": str(src / sample.SEARCH_NAME),
        "warc": warc, "wet": wet,
        "wet_glob": str(src / "wet" / "*.warc.wet.gz"),
        "warc_files": len(warc), "wet_files": len(wet),
        "records": sum(types.values()), "records_by_type": dict(sorted(types.items())),
        "pages": sum(types[t] for t in PAGE_TYPES),
        "manifest_documents": manifest["counts"]["documents"],
    }


def real_pages(pages_dir: Path) -> list[bytes]:
    """The shared extraction set's pages (``NAME.html.gz``), in name order, as their bytes."""
    import gzip

    return [gzip.decompress(p.read_bytes()) for p in sorted(pages_dir.glob("*.html.gz"))]


def make_real_corpus(work: Path, corpus: dict, pages_dir: Path) -> dict:
    """The sample's WARC files with every 2xx HTML response's body replaced by a real page of
    ``pages_dir`` (in turn: each page serves several cited URLs), so that the whole job, its
    dump, search results and joins included, runs on real pages. Other records (requests,
    redirects, errors, resources, the truncated one) are copied byte for byte; the WET file is
    left out (it holds text, not pages)."""
    import io

    from warcio.archiveiterator import ArchiveIterator
    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    pages = real_pages(pages_dir)
    if not pages:
        raise SystemExit(f"no *.html.gz pages in {pages_dir}")
    dest = work / "corpus-real"
    stamp = {"source": corpus["dir"], "articles": corpus["articles"], "seed": corpus["seed"],
             "pages_dir": str(pages_dir), "real_pages": len(pages)}
    manifest_path = dest / "manifest.json"
    if not (manifest_path.exists() and json.loads(manifest_path.read_text()) == stamp):
        print(f"writing the real-pages corpus: {len(pages)} pages from {pages_dir} -> {dest}",
              flush=True)
        (dest / "warc").mkdir(parents=True, exist_ok=True)
        for old in (dest / "warc").glob("*.warc.gz"):  # of another sample: not this one's
            old.unlink()
        used = 0
        for path in corpus["warc"]:
            data = Path(path).read_bytes()
            out = io.BytesIO()
            writer = WARCWriter(out, gzip=True)
            for offset, length in record_ranges(path):
                member = data[offset:offset + length]
                rec = None
                if _complete_member(member):
                    rec = next(iter(ArchiveIterator(io.BytesIO(member))), None)
                status = rec.http_headers.get_statuscode() if rec and rec.http_headers else ""
                ctype = (rec.http_headers.get_header("Content-Type") or "") if status else ""
                if rec is None or rec.rec_type != "response" or not status.startswith("2") \
                        or "html" not in ctype:
                    out.write(member)
                    continue
                body = pages[used % len(pages)]
                used += 1
                headers = StatusAndHeaders(rec.http_headers.statusline, [
                    (k, v) for k, v in rec.http_headers.headers
                    if k.lower() not in ("content-type", "content-length")] + [
                    ("Content-Type", "text/html"), ("Content-Length", str(len(body)))],
                    protocol=rec.http_headers.protocol)
                new = writer.create_warc_record(
                    rec.rec_headers.get_header("WARC-Target-URI"), "response",
                    payload=io.BytesIO(body), http_headers=headers)
                for name in ("WARC-Record-ID", "WARC-Date"):
                    new.rec_headers.replace_header(name, rec.rec_headers.get_header(name))
                writer.write_record(new)
            (dest / "warc" / Path(path).name).write_bytes(out.getvalue())
        manifest_path.write_text(json.dumps(stamp, indent=1) + "\n")
    warc = sorted(str(p) for p in (dest / "warc").glob("*.warc.gz"))
    types = record_types(warc)
    return {
        "dir": str(dest), "articles": corpus["articles"], "seed": corpus["seed"],
        "dump": corpus["dump"], "search": corpus["search"], "warc": warc, "wet": [],
        "wet_glob": "", "warc_files": len(warc), "wet_files": 0,
        "records": sum(types.values()), "records_by_type": dict(sorted(types.items())),
        "pages": sum(types[t] for t in PAGE_TYPES), "real_pages": len(pages),
        "pages_dir": str(pages_dir),
    }


def record_ranges(path: str) -> list[tuple[int, int]]:
    """(offset, length) of every record of a gzip-per-record WARC file, checked to tile it."""
    from warcio.archiveiterator import ArchiveIterator

    ranges = []
    with open(path, "rb") as f:
        it = ArchiveIterator(f)
        for _ in it:
            it.read_to_end()
            ranges.append((it.get_record_offset(), it.get_record_length()))
    end = 0
    for offset, length in ranges:
        if offset != end:
            raise ValueError(f"{path}: records do not tile the file at offset {offset}")
        end = offset + length
    if end != os.path.getsize(path):
        raise ValueError(f"{path}: {os.path.getsize(path) - end} bytes after the last record")
    return ranges


def _complete_member(data: bytes) -> bool:
    inflate = zlib.decompressobj(31)
    try:
        inflate.decompress(data)
    except zlib.error:
        return False
    return inflate.eof


def split_warcs(paths: list[str], n_files: int, dest: Path) -> list[str]:
    """The records of ``paths`` cut into ``n_files`` files of near-equal record counts; each
    record's gzip member is copied byte for byte, in order. A member cut short (a truncated
    record at the end of its file: the sample has one) would swallow the records after it, so
    it ends a file here too."""
    complete, cut = [], []
    for path in paths:
        data = Path(path).read_bytes()
        for offset, length in record_ranges(path):
            piece = data[offset:offset + length]
            (complete if _complete_member(piece) else cut).append(piece)
    if len(cut) > n_files:
        raise ValueError(f"{len(cut)} truncated records cannot end {n_files} files")
    dest.mkdir(parents=True, exist_ok=True)
    for old in dest.glob("*.warc.gz"):
        old.unlink()
    out = []
    for i in range(n_files):
        chunk = complete[i * len(complete) // n_files:(i + 1) * len(complete) // n_files]
        if i >= n_files - len(cut):
            chunk.append(cut[i - (n_files - len(cut))])
        name = dest / f"split-{i:05d}.warc.gz"
        name.write_bytes(b"".join(chunk))
        out.append(str(name))
    return out


# ------------------------------------------------------------------------------------------
# Report


def machine_info() -> dict:
    import apache_beam
    import trafilatura
    import warcio

    from bench.machine import cpu_model

    cpu = cpu_model()
    return {
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "cpu": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "apache_beam": apache_beam.__version__,
        "trafilatura": trafilatura.__version__,
        "warcio": getattr(warcio, "__version__", None) or _dist_version("warcio"),
        "loadavg_start": list(os.getloadavg()),
    }


def _dist_version(name: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(name)
    except PackageNotFoundError:
        return None


def median_run(runs: list[dict]) -> dict:
    """One figure per setting from repeated runs: median times, highest memory."""
    merged = dict(runs[0])
    for key in ("wall_s", "cpu_s", "job_s", "job_cpu_s", "import_s", "loop_s", "loop_cpu_s",
                "dump_s"):
        if key in merged:
            merged[key] = statistics.median(r[key] for r in runs)
    for key in ("peak_tree_rss_mib", "max_single_rss_mib"):
        merged[key] = max(r[key] for r in runs)
    merged["repeats"] = len(runs)
    if len(runs) > 1:
        merged["all"] = [{k: r.get(k) for k in ("wall_s", "job_s", "loop_s", "peak_tree_rss_mib")
                          if k in r} for r in runs]
    return merged


def seconds_of(run: dict) -> float:
    """A run's measured seconds: the loop's own, or the job's inside its process."""
    return run["loop_s"] if run["kind"] == "loop" else run["job_s"]


def verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "_loop":
        return loop_child(argv[1:])
    if argv and argv[0] == "_floor":
        return floor_child(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, help="work directory (default: a temporary one, "
                        "removed afterwards); the corpus in it is reused if it matches")
    parser.add_argument("--articles", type=int, help="articles to generate (default: 1000, "
                        "or 40 with --quick)")
    parser.add_argument("--seed", type=int, default=0, help="corpus seed (default: 0)")
    parser.add_argument("--quick", action="store_true",
                        help="a small corpus (about 300 pages): a smoke run, not figures")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="run every setting N times; medians of times, highest memory")
    parser.add_argument("--few-files", type=int, default=4, metavar="N",
                        help="WARC files of the few-files memory run (default: 4)")
    parser.add_argument("--many-files", type=int, default=32, metavar="N",
                        help="WARC files of the many-files memory run (default: 32)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, metavar="RESULTS.json",
                        help="results file (default: bench/results/ingest.json)")
    parser.add_argument("--only", default=None, metavar="RUN,...",
                        help="only these runs (of: " + ", ".join(RUN_NAMES) + "); the "
                             "figures and targets that need another run are left out")
    parser.add_argument("--profile", action="store_true",
                        help="also run the one-worker job under the stage sampler "
                             "(bench/stages.py) and print where its time goes")
    parser.add_argument("--profile-real", action="store_true",
                        help="the same for the one-worker job on the real pages")
    parser.add_argument("--real-pages", type=Path, default=SHARED_PAGES, metavar="DIR",
                        help="real pages (NAME.html.gz) put into the sample's WARC records "
                             "for the real-pages runs (default: ../shared/data/extraction/"
                             "pages, skipped where it is absent)")
    parser.add_argument("--no-real-pages", action="store_true",
                        help="leave out the real-pages runs")
    sys.path.insert(0, str(ROOT))
    from bench import options

    args = options.parse(parser, argv)
    if args.articles is None:
        args.articles = 40 if args.quick else 1000
    tmp = None
    if args.work is None:
        tmp = tempfile.TemporaryDirectory(prefix="wikisum-bench-")
        args.work = Path(tmp.name)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    try:
        return bench(args, work)
    finally:
        if tmp is not None:
            tmp.cleanup()


def bench(args: argparse.Namespace, work: Path) -> int:
    only = set(RUN_NAMES) if args.only is None else set(args.only.split(","))
    unknown = only - set(RUN_NAMES)
    if unknown:
        raise SystemExit(f"--only: unknown run {', '.join(sorted(unknown))}; choose from "
                         + ", ".join(RUN_NAMES))
    real_dir = None if args.no_real_pages else args.real_pages
    if ("real" in only or args.profile_real) and real_dir is not None \
            and not real_dir.is_dir():
        print(f"note: {real_dir} is absent: no real-pages runs", flush=True)
        real_dir = None
    machine = machine_info()
    corpus = make_corpus(work, "corpus", args.articles, args.seed)
    tiny = make_corpus(work, "corpus-tiny", 1, args.seed)
    real = (make_real_corpus(work, corpus, real_dir)
            if ("real" in only or args.profile_real) and real_dir is not None else None)
    pages = corpus["pages"]
    print(f"corpus: {pages} reference pages ({corpus['records']} records) in "
          f"{corpus['warc_files']} WARC + {corpus['wet_files']} WET files, "
          f"{args.articles} articles", flush=True)
    if pages < MIN_PAGES and not args.quick:
        print(f"warning: fewer than {MIN_PAGES} pages; raise --articles", flush=True)
    if machine["loadavg_start"][0] > 0.5:
        print(f"warning: load average {machine['loadavg_start'][0]:.2f} before the runs; "
              "something else is using the CPU", flush=True)

    warcs = {corpus["warc_files"]: str(Path(corpus["dir"]) / "warc" / "*.warc.gz")}
    if "files" in only:
        for n in (args.few_files, args.many_files):
            paths = split_warcs(corpus["warc"], n, work / f"warc-{n}")
            if record_types(paths + corpus["wet"]) != Counter(corpus["records_by_type"]):
                raise RuntimeError(f"the {n}-file split does not hold the same records")
            warcs[n] = str(work / f"warc-{n}" / "*.warc.gz")

    def beam(name: str, workers: int, mode: str, n_warc: int = corpus["warc_files"],
             on: dict = corpus, stages: bool = False):
        glob = warcs[n_warc] if on is corpus else str(Path(on["dir"]) / "warc" / "*.warc.gz")
        return (name, on, workers, n_warc + on["wet_files"], lambda: run_beam(
            name, on, glob, ["--direct_num_workers", str(workers),
                             "--direct_running_mode", mode], work, stages))

    files = corpus["warc_files"] + corpus["wet_files"]
    settings = []
    if "loop" in only:
        settings.append(("loop", corpus, 1, files,
                         lambda: run_loop("clean", corpus, work / "log-loop.txt")))
    if "loop-bare" in only:
        settings.append(("loop-bare", corpus, 1, files,
                         lambda: run_loop("bare", corpus, work / "log-loop-bare.txt")))
    for name, workers, mode in (("beam-1-in_memory", 1, "in_memory"),
                                ("beam-1-multi_processing", 1, "multi_processing"),
                                ("beam-2-multi_processing", 2, "multi_processing")):
        if name in only:
            settings.append(beam(name, workers, mode))
    if "files" in only:
        settings.append(beam(f"beam-1-in_memory-{args.few_files}-files", 1, "in_memory",
                             args.few_files))
        settings.append(beam(f"beam-1-in_memory-{args.many_files}-files", 1, "in_memory",
                             args.many_files))
    if "fixed" in only:
        settings.append(beam("beam-1-in_memory-1-article", 1, "in_memory", on=tiny))
    if "floor" in only:
        settings.append(("beam-floor", corpus, 1, files,
                         lambda: run_floor(corpus, work / "log-beam-floor.txt")))
    if real is not None and "real" in only:
        settings.append(("real-loop-bare", real, 1, real["warc_files"],
                         lambda: run_loop("bare", real, work / "log-real-loop-bare.txt")))
        settings.append(beam("real-beam-1-in_memory", 1, "in_memory", real["warc_files"],
                             on=real))
    if args.profile:
        settings.append(beam("beam-1-in_memory-profiled", 1, "in_memory", stages=True))
    if args.profile_real and real is not None:
        settings.append(beam("real-beam-1-in_memory-profiled", 1, "in_memory",
                             real["warc_files"], on=real, stages=True))

    # Repeats run in rounds, every setting once a round, so that a machine that speeds up or
    # slows down during the runs moves every setting alike (the ratios pair runs of a round).
    rounds = max(args.repeat, 1)
    made: dict[str, list[dict]] = {name: [] for name, *_ in settings}
    for i in range(rounds):
        # every other round in the reverse order: no setting always runs just after another
        for name, *_, fn in (settings if i % 2 == 0 else settings[::-1]):
            if name.endswith("-profiled") and i:
                continue
            print(f"running {name}" + (f" (round {i + 1}/{rounds})" if rounds > 1 else "")
                  + " ...", flush=True)
            made[name].append(fn())
            last = made[name][-1]
            print(f"  {seconds_of(last):.1f} s, "
                  f"peak {last['peak_tree_rss_mib']:.0f} MiB", flush=True)
    runs: dict[str, dict] = {}
    for name, on, workers, n_files, _ in settings:
        run = median_run(made[name])
        seconds = seconds_of(run)
        cpu = run["loop_cpu_s"] if run["kind"] == "loop" else run["cpu_s"]
        run.update(corpus_pages=on["pages"], seconds=seconds, workers=workers,
                   input_files=n_files, pages_per_s=on["pages"] / seconds,
                   pages_per_s_per_core=on["pages"] / seconds / workers,
                   pages_per_cpu_s=on["pages"] / cpu,
                   rounds_s=[seconds_of(r) for r in made[name]])
        if run["kind"] == "beam" and "multi_processing" not in run["beam_args"]:
            # (a multi_processing job's work is in its worker processes, not in job_cpu_s)
            run["rounds_idle_s"] = [r["job_s"] - r["job_cpu_s"] for r in made[name]]
        runs[name] = run
        if rounds > 1:
            print(f"{name}: median {seconds:.1f} s, {run['pages_per_s']:.1f} pages/s, "
                  f"peak {run['peak_tree_rss_mib']:.0f} MiB", flush=True)

    # Cross-checks: every run saw the pages of its corpus, and kept the ones the loop kept.
    loop = runs.get("loop")
    checks = {name: runs[name]["pages"] == runs[name]["corpus_pages"]
              for name in ("loop", "loop-bare", "real-loop-bare", "beam-floor") if name in runs}
    if loop is not None and "beam-floor" in runs:
        checks["beam-floor"] = checks["beam-floor"] and runs["beam-floor"]["kept"] == loop["kept"]
    for name, run in runs.items():
        if run["kind"] == "beam":
            checks[name] = run["job_pages"] == run["corpus_pages"] and run["job_balanced"]
            if loop is not None and run["corpus_pages"] == pages and not name.startswith("real"):
                checks[name] = checks[name] and run["job_kept"] == loop["kept"]

    figures, targets = figures_and_targets(runs, args, pages, tiny)
    stages = {name[:-len("-profiled")]: run["stages"] for name, run in runs.items()
              if name.endswith("-profiled")}
    machine["loadavg_end"] = list(os.getloadavg())
    report(runs, figures, targets, checks, corpus, tiny, machine)
    for name, profile in stages.items():
        stage_table(name, profile, runs[name + "-profiled"])
    if args.quick:
        print("  (--quick: a smoke run; on so small a corpus the figures are not measurements)")
    results = {
        "bench": "ingest",
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "command": shlex.join([sys.executable, *sys.argv]),
        "quick": args.quick,
        "repeat": args.repeat,
        "machine": machine,
        "corpus": {k: v for k, v in corpus.items() if k not in ("warc", "wet")},
        "corpus_1_article": {k: v for k, v in tiny.items() if k not in ("warc", "wet")},
        "corpus_real_pages": ({k: v for k, v in real.items() if k not in ("warc", "wet")}
                              if real else None),
        "stages": stages,
        "method": {
            "pages": "WARC response/resource and WET conversion records",
            "seconds": "loop: the read+clean loop inside its process; beam: wikisum ingest "
                       "inside its process from cli.main, Beam's import included (wall_s is "
                       "the whole process)",
            "peak_tree_rss_mib": "peak of the summed RSS of the process tree, /proc every 50 ms",
            "max_single_rss_mib": "the highest VmHWM of any one process of the tree",
            "cpu_s": "user + system CPU of the process tree (wait4), start-up included",
            "job_cpu_s": "beam: the CPU seconds of the job's process (all its threads) over "
                         "job_s; rounds_idle_s: job_s - job_cpu_s of each round, where the "
                         "job's workers run in that process",
            "loop": "wikisum.pipeline.warcs.iter_records + "
                    "wikisum.pipeline.references.clean_captures in the job's batches (warcio + "
                    "decoding + trafilatura + paragraph filter + language); the dump is parsed "
                    "after it and timed apart (dump_s)",
            "loop-bare": "warcio + trafilatura per HTML page with a 2xx status, under the size "
                         "limit; nothing else",
            "beam_fixed_s": "the job on a 1-article corpus: its cost whatever the input size",
            "real": "the sample's WARC files with every 2xx HTML response body replaced by a "
                    "page of the shared extraction set, in turn; no WET file",
            "stages": "bench/stages.py: every thread's stack sampled every 10 ms in a separate "
                      "run, busy samples put in the first stage whose rule matches",
            "marginal": "(pages - pages of the 1-article corpus) / (job_s - beam_fixed_s)",
            "beam-floor": "Beam imported, then the loop's read + clean of each file in one "
                          "DoFn on the job's runner (1 worker, in_memory), counts summed; "
                          "timed from before Beam's import to the end",
        },
        "runs": runs,
        "figures": figures,
        "targets": targets,
        "checks": checks,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nwrote {args.out}")
    return 0 if all(checks.values()) else 1


def figures_and_targets(runs: dict, args: argparse.Namespace, pages: int,
                        tiny: dict) -> tuple[dict, list]:
    """The ratios and the targets that the runs made allow (``--only`` may leave some out)."""
    figures: dict = {}
    targets: list = []

    def target(what: str, value: float, goal: float, at_least: bool = True) -> None:
        targets.append({"target": what, "value": value, "goal": goal,
                        "pass": value >= goal if at_least else value <= goal})

    def per_round(name: str, run: dict, base: dict) -> float:
        """``run``'s pages/s over ``base``'s, both one worker on one corpus: the median of the
        rounds' ratios (each round ran both once, close in time), kept with the rounds'."""
        ratios = [b / r for r, b in zip(run["rounds_s"], base["rounds_s"], strict=True)]
        figures[name + "_rounds"] = ratios
        return statistics.median(ratios)

    one = runs.get("beam-1-in_memory")
    loop, bare = runs.get("loop"), runs.get("loop-bare")
    if one and loop:
        figures["beam1_in_memory_vs_loop"] = per_round("beam1_in_memory_vs_loop", one, loop)
        figures["beam1_in_memory_vs_loop_with_dump"] = (
            (loop["loop_s"] + loop["dump_s"]) / one["job_s"])
    if one and bare:
        figures["beam1_in_memory_vs_bare"] = per_round("beam1_in_memory_vs_bare", one, bare)
        target(f"Beam 1 worker (in_memory) >= {TARGET_VS_BARE} x bare loop "
               "(warcio + trafilatura)", figures["beam1_in_memory_vs_bare"], TARGET_VS_BARE)
    floor = runs.get("beam-floor")
    if floor and loop:
        # The seconds the job takes past Beam's floor (reading and cleaning the same pages)
        # are its own work: the dump, search results, joins, clones, de-duplication, Parquet.
        figures["beam_floor_vs_loop"] = per_round("beam_floor_vs_loop", floor, loop)
        figures["beam_floor_s"] = floor["job_s"]
        if one:
            figures["beam1_in_memory_past_floor_s"] = statistics.median(
                [j - f for j, f in zip(one["rounds_s"], floor["rounds_s"], strict=True)])
    if one:
        # Seconds of the job in which its process did no work (a thread of it waiting on
        # nothing of its own: the end of a bundle, say); negative where its threads overlap.
        figures["beam1_in_memory_idle_s"] = statistics.median(one["rounds_idle_s"])
    fixed = runs.get("beam-1-in_memory-1-article")
    if fixed:
        figures["beam_fixed_s"] = fixed["job_s"]
        target(f"fixed cost (the job on 1 article) <= {TARGET_FIXED_S:.0f} s", fixed["job_s"],
               TARGET_FIXED_S, at_least=False)
    if fixed and one:
        figures["beam1_in_memory_marginal_pages_per_s"] = (
            (pages - tiny["pages"]) / max(one["job_s"] - fixed["job_s"], 1e-9))
        if loop:
            figures["beam1_in_memory_marginal_vs_loop"] = (
                figures["beam1_in_memory_marginal_pages_per_s"] / loop["pages_per_s"])
        if bare:
            figures["beam1_in_memory_marginal_vs_bare"] = (
                figures["beam1_in_memory_marginal_pages_per_s"] / bare["pages_per_s"])
    real_one, real_bare = runs.get("real-beam-1-in_memory"), runs.get("real-loop-bare")
    if real_one and real_bare:
        figures["real_beam1_vs_bare_per_core"] = per_round("real_beam1_vs_bare_per_core",
                                                           real_one, real_bare)
        target(f"real pages: Beam 1 worker >= {TARGET_REAL_VS_BARE} x bare loop per core",
               figures["real_beam1_vs_bare_per_core"], TARGET_REAL_VS_BARE)
    one_mp, two_mp = runs.get("beam-1-multi_processing"), runs.get("beam-2-multi_processing")
    if one_mp and two_mp:
        figures["beam2_vs_beam1_multi_processing"] = (two_mp["pages_per_s"]
                                                      / one_mp["pages_per_s"])
        target(f"Beam 2 workers >= {TARGET_SCALING} x 1 worker (multi_processing)",
               figures["beam2_vs_beam1_multi_processing"], TARGET_SCALING)
    if one_mp and loop:
        figures["beam1_multi_processing_vs_loop"] = one_mp["pages_per_s"] / loop["pages_per_s"]
    few = runs.get(f"beam-1-in_memory-{args.few_files}-files")
    many = runs.get(f"beam-1-in_memory-{args.many_files}-files")
    if few and many:
        figures["memory_many_vs_few_files"] = (many["peak_tree_rss_mib"]
                                               / few["peak_tree_rss_mib"])
        target(f"peak memory, {args.many_files} vs {args.few_files} WARC files "
               f"<= {TARGET_MEMORY_GROWTH} x", figures["memory_many_vs_few_files"],
               TARGET_MEMORY_GROWTH, at_least=False)
    return figures, targets


def stage_table(name: str, stages: dict, run: dict) -> None:
    """Print the per-stage CPU seconds of a profiled run (bench/stages.py): the job's hot
    functions timed exactly, the rest of the process's CPU split by sampling."""
    from bench.stages import split_stages

    cpu = stages["window_cpu_s"]
    split = stages["split"] = split_stages(stages, cpu)
    print(f"\nwhere {name}'s time goes (CPU seconds by stage; a {run['job_s']:.1f} s run, "
          f"{cpu:.1f} CPU seconds from its start to its end, the sampler's "
          f"{stages['sampler_cpu_s']:.1f} among them):")
    for stage, seconds in split.items():
        how = "timed" if stage in stages["timed"] else "sampled"
        print(f"  {stage:45s} {seconds:7.1f} s  {100 * seconds / cpu:5.1f} %  {how}")
    beam_stages = stages.get("beam_stages") or {}
    if beam_stages:
        print(f"\n{name}'s Beam stages: the CPU seconds of the thread running each stage's work "
              "while it reads its input (trafilatura, in the cleaning's helper thread, and the "
              "steps' finish_bundle not in them), the elements and encoded MB it read; the 12 "
              "largest, by their read step:")
        for step, entry in list(beam_stages.items())[:12]:
            print(f"  {step[-60:]:60s} {entry['cpu_s']:6.2f} s {entry['elements']:8d} "
                  f"{entry['bytes'] / 1e6:7.1f} MB")


def report(runs: dict, figures: dict, targets: list, checks: dict, corpus: dict, tiny: dict,
           machine: dict) -> None:
    print(f"\nwikisum ingest benchmark: {corpus['pages']} pages, {machine['nproc']} CPUs "
          f"({machine['cpu'] or 'unknown CPU'}), Python {machine['python']}, "
          f"Beam {machine['apache_beam']}; load {machine['loadavg_start'][0]:.2f} -> "
          f"{machine['loadavg_end'][0]:.2f}")
    header = (f"{'run':30s} {'pages':>5s} {'files':>5s} {'seconds':>8s} {'wall':>6s} "
              f"{'pages/s':>8s} {'/core':>6s} {'/cpu-s':>6s} {'peak MiB':>8s} {'1-proc':>6s} "
              f"{'procs':>5s}")
    print(header)
    print("-" * len(header))
    for name, r in runs.items():
        print(f"{name:30s} {r['corpus_pages']:5d} {r['input_files']:5d} {r['seconds']:8.1f} "
              f"{r['wall_s']:6.1f} {r['pages_per_s']:8.1f} {r['pages_per_s_per_core']:6.1f} "
              f"{r['pages_per_cpu_s']:6.1f} {r['peak_tree_rss_mib']:8.0f} "
              f"{r['max_single_rss_mib']:6.0f} {r['max_processes']:5d}")
    loop = runs.get("loop")
    print("""
seconds   the work inside the process: beam, `wikisum ingest` from its first line (Beam's
          import included); loop, the read + clean loop only. wall: the whole process.
          pages/s = pages / seconds.
/core     pages/s per worker; /cpu-s: pages per CPU second of the process tree (loop: of the
          loop; beam: start-up included).
peak MiB  peak summed RSS of the process tree (sampled); 1-proc: the largest one process's VmHWM.
The loop cleans with the job's own iter_records + clean_captures; the Beam job also parses the
dump, matches search results, joins, removes clones and writes Parquet. loop-bare: warcio +
trafilatura. beam-floor: Beam imported, the loop's read + clean in one step on the job's
runner, nothing else. real-*: the sample's WARC records holding the shared real pages.""")
    if loop:
        print(f"Parsing the dump ({loop['dump_pages']} pages) took the loop {loop['dump_s']:.1f} s "
              "more.")
    print()
    info = []
    if "beam1_in_memory_vs_loop" in figures:
        info.append(("Beam 1 worker (in_memory) vs loop",
                     f"{figures['beam1_in_memory_vs_loop']:.2f} x"))
    if "beam1_multi_processing_vs_loop" in figures:
        info.append(("Beam 1 worker (multi_processing) vs loop",
                     f"{figures['beam1_multi_processing_vs_loop']:.2f} x"))
    if "beam1_in_memory_vs_loop_with_dump" in figures:
        info.append(("Beam 1 worker (in_memory) vs loop + dump parsing",
                     f"{figures['beam1_in_memory_vs_loop_with_dump']:.2f} x"))
    if "beam1_in_memory_marginal_pages_per_s" in figures:
        past = f"{figures['beam1_in_memory_marginal_pages_per_s']:.1f} pages/s"
        for key, what in (("beam1_in_memory_marginal_vs_loop", "loop"),
                          ("beam1_in_memory_marginal_vs_bare", "bare loop")):
            if key in figures:
                past += f" = {figures[key]:.2f} x {what}"
        info.append(("Beam 1 worker (in_memory) past its fixed cost", past))
    if "beam1_in_memory_idle_s" in figures:
        info.append(("Beam 1 worker (in_memory): seconds less CPU seconds",
                     f"{figures['beam1_in_memory_idle_s']:.2f} s"))
    if "beam_floor_vs_loop" in figures:
        info.append(("Beam's floor (read + clean in one step) vs loop",
                     f"{figures['beam_floor_vs_loop']:.2f} x"))
        if "beam1_in_memory_past_floor_s" in figures:
            info.append(("Beam 1 worker (in_memory): seconds past the floor",
                         f"{figures['beam1_in_memory_past_floor_s']:.1f} s"))
    if info:
        print("informative:")
    for what, value in info:
        print(f"  {what:55s} {value}")
    print()
    for t in targets:
        print(f"  {verdict(t['pass'])}  {t['target']}: {t['value']:.2f}")
    bad = [k for k, ok in checks.items() if not ok]
    print("  checks: " + ("every run read the pages of its corpus and kept what the loop kept"
                          if not bad else "FAILED for " + ", ".join(bad)))

if __name__ == "__main__":
    sys.exit(main())
