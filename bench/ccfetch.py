"""Index lookup and ranged fetch rates of ``wikisum cc-fetch`` on a loopback stand-in for Common
Crawl's servers (:class:`wikisum.pipeline.sample.ccserver.CommonCrawlServer`) over a generated
sample (``wikisum sample``: WARC files, a CDXJ index, the columnar Parquet table, urls.txt).

What it measures:

* **Lookup, the pure functions.** Every distinct SURT key of urls.txt looked up once (the job's
  first round; redirect targets are a later round and not counted):
  - API: ``CdxApi.lookup`` through a ``Client`` with no rate limit, one thread and
    ``--threads`` threads (the job runs up to 8 queries in flight per batch);
  - columnar: ``row_groups`` over the sample's table, ``RowGroupIndex``, ``find`` per key,
    ``read_row_group`` per group with its keys; the row groups read out of all (pruning),
    also for 1 % and 10 % of the keys.
* **Columnar scan at Common Crawl's row-group size**: the sample's table is tiny (16 rows a
  group), so a synthetic table of ``--scan-rows`` rows (the sample's rows repeated under new
  keys, sorted, ``--scan-row-group`` rows a group) is searched for ``--scan-share`` of its keys
  (90M URLs over a crawl of about 3 billion captures is 3 %): rows scanned per second of one
  core, the figure a full-crawl join scales from.
* **Fetch, the pure functions.** ``Fetcher.fetch_all`` over the captures the API lookup chose
  (one ranged GET, the record checks and the WARC write each), at each ``--concurrency``;
  and the bare ``Client.get`` of the same ranges, to separate the HTTP cost from the checks.
* **The whole job** (``wikisum cc-fetch`` as the command line runs it, a child process each,
  Beam's DirectRunner): ``--lookup-only`` with each source, the full fetch with each source,
  and a 10-URL lookup-only job for Beam's fixed cost. Timed inside the child from just before
  ``cli.main`` to its end (imports left out), with ``--index-rate 1000`` (the option's
  maximum).

The server runs in a child process of its own, so that the client's figures are not shared
with it on the same interpreter lock. Its handler runs with ``TCP_NODELAY`` (Python's
``StreamRequestHandler.disable_nagle_algorithm``, which the stand-in now sets itself): without
it a response's headers and body go out in two writes, and Nagle's algorithm with the client's
delayed ACK holds the body about 40 ms, which caps one connection at about 23 requests/s.
``--as-written N`` times N lookups and N fetches with it turned off, to show it.

Run by hand, never by CI (about 1.5 minutes on 2 cores)::

    .venv/bin/python bench/ccfetch.py                      # 600 articles, about 4,100 URLs
    .venv/bin/python bench/ccfetch.py --articles 120 --skip-jobs   # a smoke run

It prints the figures and writes them, the machine and the command line to
``bench/results/ccfetch.json`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import platform
import random
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import options  # noqa: E402
from machine import cpu_model  # noqa: E402

DEFAULT_OUT = ROOT / "bench" / "results" / "ccfetch.json"
TABLE_GLOB = "cc-index/table/cc-main/warc/*/*/*.parquet"

# The stand-in server in a process of its own: prints its base URL, then answers "stats" on
# stdin with its request counts and the bytes it served; ends at EOF.
SERVER_CHILD = textwrap.dedent("""
    import json, sys
    from wikisum.pipeline.sample.ccserver import CommonCrawlServer
    server = CommonCrawlServer(sys.argv[1])
    server.server.RequestHandlerClass.disable_nagle_algorithm = sys.argv[2] == "1"
    print(server.base, flush=True)
    for line in sys.stdin:
        if line.strip() == "stats":
            with server.lock:
                stats = {"requests": dict(server.requests), "bytes": server.bytes_served}
            print(json.dumps(stats), flush=True)
    server.close()
""")

# One `wikisum cc-fetch` run, timed from after the imports to the end of the job.
JOB_CHILD = textwrap.dedent("""
    import sys, time
    t0 = time.perf_counter()
    from wikisum.workflows import cli
    t1 = time.perf_counter()
    rc = cli.main(sys.argv[1:])
    t2 = time.perf_counter()
    print("BENCH_TIMES", t1 - t0, t2 - t1, flush=True)
    sys.exit(rc)
""")


class Server:
    """The loopback server in a child process (``nodelay``: the handler sets TCP_NODELAY)."""

    def __init__(self, root: str, nodelay: bool = True):
        self.proc = subprocess.Popen([sys.executable, "-c", SERVER_CHILD, root,
                                      "1" if nodelay else "0"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=str(ROOT.parent))
        self.base = self.proc.stdout.readline().strip()
        if not self.base.startswith("http://"):
            self.close()
            raise SystemExit(f"the loopback server did not start: {self.base!r}")

    def stats(self) -> dict:
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ------------------------------------------------------------------------------------------
# The sample


def make_sample(work: Path, articles: int, seed: int) -> dict:
    from wikisum.pipeline.sample import corpus

    src = work / f"sample-{articles}-{seed}"
    manifest = src / "manifest.json"
    if not manifest.exists() or not (src / "urls.txt").exists():
        print(f"generating the sample: {articles} articles, seed {seed} -> {src}", flush=True)
        shutil.rmtree(src, ignore_errors=True)
        corpus.write_sample(src, articles=articles, seed=seed)
    lines = [u.strip() for u in (src / "urls.txt").read_text(encoding="utf-8").splitlines()
             if u.strip() and not u.startswith("#")]
    warcs = sorted(src.glob("warc/*.warc.gz"))
    tables = sorted(glob.glob(str(src / TABLE_GLOB)))
    return {"dir": str(src), "articles": articles, "seed": seed, "url_lines": len(lines),
            "lines": lines, "warc_files": len(warcs),
            "warc_mb": round(sum(p.stat().st_size for p in warcs) / 1e6, 2),
            "table_files": tables, "crawl": src_crawl(tables)}


def src_crawl(tables: list[str]) -> str:
    from wikisum.pipeline.ccfetch.index import crawl_of
    from wikisum.pipeline.sample.ccindex import CRAWL

    return next((crawl_of(t) for t in tables if crawl_of(t)), CRAWL)


def queries(lines: list[str]) -> list[tuple[str, str]]:
    """(key, URL to query) per distinct key, as the job's Plan and OneQuery steps make them."""
    from wikisum.pipeline.ccfetch.surt import surt_key
    from wikisum.pipeline.urls import normalize_url

    by_key: dict[str, str] = {}
    for line in lines:
        url = normalize_url(line)
        key = surt_key(line) if url else None
        if key is not None:
            by_key[key] = min(by_key.get(key, url), url)
    return sorted(by_key.items())


# ------------------------------------------------------------------------------------------
# Lookup


def api_lookup(base: str, crawl: str, qs: list[tuple[str, str]], threads: int,
               server: Server) -> tuple[dict, dict]:
    from wikisum.pipeline.ccfetch.client import Client, RateLimit
    from wikisum.pipeline.ccfetch.index import CdxApi
    from wikisum.pipeline.ccfetch.records import CcFetchConfig

    c = CcFetchConfig(urls=(), out="")
    client = Client(user_agent=c.user_agent, timeout_s=c.timeout_s, retries=c.retries,
                    backoff_s=c.backoff_s, rate=RateLimit(0))
    api = CdxApi(base, [crawl], "", client)
    before = server.stats()
    started = time.perf_counter()
    if threads <= 1:
        results = [api.lookup(k, u) for k, u in qs]
    else:
        with ThreadPoolExecutor(threads) as pool:
            results = list(pool.map(lambda kv: api.lookup(*kv), qs))
    seconds = time.perf_counter() - started
    after = server.stats()
    requests = after["requests"].get("index", 0) - before["requests"].get("index", 0)
    figures = {"keys": len(qs), "threads": threads, "seconds": round(seconds, 3),
               "keys_per_s": round(len(qs) / seconds, 1), "requests": requests,
               "response_bytes": after["bytes"] - before["bytes"],
               "errors": sum(1 for r in results if r.error),
               "keys_with_captures": sum(1 for r in results if r.captures)}
    return figures, dict(zip((k for k, _ in qs), results, strict=True))


def column_bytes(group, names: set[str]) -> int:
    """Compressed bytes of the named columns' chunks in one row group (footer metadata)."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(group.path).metadata.row_group(group.index)
    return sum(meta.column(i).total_compressed_size for i in range(meta.num_columns)
               if meta.column(i).path_in_schema in names)


def columnar_lookup(files: list[str], crawl: str, keys: list[str], shares: list[float],
                    seed: int) -> tuple[dict, dict]:
    """The row-group join of the columnar index, as the job's ColumnarLookup does it, timed
    per step; with the row groups read for ``shares`` of the keys (pruning)."""
    import pyarrow.parquet as pq

    from wikisum.pipeline.ccfetch import index

    started = time.perf_counter()
    groups = [g for f in files for g in index.row_groups(f, [crawl])]
    t_groups = time.perf_counter()
    rgi = index.RowGroupIndex(groups)
    wanted: dict[index.RowGroup, list[str]] = defaultdict(list)
    for key in keys:
        for g in rgi.find(key):
            wanted[g].append(key)
    t_assign = time.perf_counter()
    found: dict[str, list] = defaultdict(list)
    bad = 0
    for g, ks in wanted.items():
        for capture in index.read_row_group(g, ks):
            if isinstance(capture, index.BadIndexLine):
                bad += 1
            else:
                found[capture.urlkey].append(capture)
    t_read = time.perf_counter()
    seconds = t_read - started
    needed = set(index.COLUMNS) | {"crawl"}
    all_columns = {c for f in files for c in pq.ParquetFile(f).schema_arrow.names}
    read_bytes = sum(column_bytes(g, needed) for g in wanted)
    table_bytes = sum(column_bytes(g, all_columns) for g in groups)
    rng = random.Random(seed)
    pruning = []
    for share in shares:
        subset = rng.sample(keys, max(1, round(share * len(keys))))
        hit = {g for k in subset for g in rgi.find(k)}
        pruning.append({"share": share, "keys": len(subset), "row_groups_read": len(hit),
                        "rows_read": sum(g.rows for g in hit)})
    figures = {"keys": len(keys), "files": len(files), "seconds": round(seconds, 4),
               "keys_per_s": round(len(keys) / seconds, 1),
               "seconds_row_groups": round(t_groups - started, 4),
               "seconds_assign": round(t_assign - t_groups, 4),
               "seconds_read": round(t_read - t_assign, 4),
               "ms_per_row_group_read": round(1000 * (t_read - t_assign) / max(1, len(wanted)),
                                              3),
               "row_groups": len(groups), "row_groups_read": len(wanted),
               "rows": sum(g.rows for g in groups), "rows_read": sum(g.rows for g in wanted),
               "table_bytes": table_bytes, "needed_column_bytes_read": read_bytes,
               "keys_with_captures": len(found), "bad_rows": bad, "pruning": pruning}
    return figures, found


def synthetic_scan(files: list[str], crawl: str, rows: int, group_rows: int, share: float,
                   work: Path, seed: int) -> dict:
    """The join's scan on a table with Common Crawl-sized row groups: the sample's rows
    repeated, each under a new key (``KEY~TOKEN``, the URL ``URL#TOKEN``, a random 12-hex-digit
    token), with a random offset and digest so that the file does not compress far better
    than a real one; sorted by key, zstd, statistics on the key."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from wikisum.pipeline.ccfetch import index

    base = pa.concat_tables([pq.read_table(f) for f in files])
    table = pa.concat_tables([base] * math.ceil(rows / base.num_rows)).slice(0, rows)
    rng = np.random.default_rng(seed)
    token = pa.array([f"{x:012x}" for x in rng.integers(0, 2**48, rows).tolist()])
    digest = pa.array([f"{x:032x}" for x in rng.integers(0, 2**63, rows).tolist()])
    changes = {
        "url_surtkey": pc.binary_join_element_wise(table["url_surtkey"], token, "~"),
        "url": pc.binary_join_element_wise(table["url"], token, "#"),
        "content_digest": digest,
        "warc_record_offset": pa.array(rng.integers(0, 2**30, rows, dtype=np.int32)),
    }
    for name, column in changes.items():
        table = table.set_column(table.schema.get_field_index(name), name, column)
    table = table.sort_by("url_surtkey")
    out = work / "scan" / f"crawl={crawl}" / "subset=warc"
    out.mkdir(parents=True, exist_ok=True)
    path = str(out / "part-00000.parquet")
    pq.write_table(table, path, row_group_size=group_rows, compression="zstd",
                   write_statistics=["url_surtkey"])
    keys = table.column("url_surtkey").to_pylist()
    del table, changes
    wanted = random.Random(seed).sample(keys, max(1, round(share * len(keys))))
    started = time.perf_counter()
    groups = index.row_groups(path, [crawl])
    rgi = index.RowGroupIndex(groups)
    by_group: dict = defaultdict(list)
    for k in wanted:
        for g in rgi.find(k):
            by_group[g].append(k)
    found = 0
    for g, ks in by_group.items():
        found += sum(1 for c in index.read_row_group(g, ks)
                     if not isinstance(c, index.BadIndexLine))
    seconds = time.perf_counter() - started
    needed = set(index.COLUMNS) | {"crawl"}
    read_bytes = sum(column_bytes(g, needed) for g in by_group)
    all_bytes = sum(column_bytes(g, set(base.schema.names)) for g in groups)
    return {"rows": rows, "row_group_rows": group_rows, "row_groups": len(groups),
            "row_groups_read": len(by_group), "wanted_keys": len(wanted),
            "captures_found": found, "seconds": round(seconds, 3),
            "rows_scanned_per_s": round(sum(g.rows for g in by_group) / seconds),
            "wanted_keys_per_s": round(len(wanted) / seconds),
            "file_mb": round(os.path.getsize(path) / 1e6, 2),
            "file_bytes_per_row": round(os.path.getsize(path) / rows, 1),
            "needed_column_mb_read": round(read_bytes / 1e6, 2),
            "needed_column_share": round(read_bytes / all_bytes, 3) if all_bytes else None,
            "needed_mb_per_s": round(read_bytes / 1e6 / seconds, 1)}


# ------------------------------------------------------------------------------------------
# Fetch


def resolved_pages(qs: list[tuple[str, str]], results: dict, crawl: str) -> list:
    """The captures to fetch: the chosen capture of every key whose choice is a page (redirect
    choices would be looked up again in the job's next round; they are left out here)."""
    from wikisum.pipeline.ccfetch.captures import choose
    from wikisum.pipeline.ccfetch.fetch import Resolved
    from wikisum.pipeline.ccfetch.surt import surt_key

    out = []
    for key, url in qs:
        choice = choose(list(results[key].captures), [crawl], "", surt_key)
        if choice.capture is not None and not choice.is_redirect:
            out.append(Resolved(url, key, (choice.capture,)))
    out.sort(key=lambda r: (r.page.filename, r.page.offset, r.url))  # as FetchGroup does
    return out


def fetch(base: str, resolved: list, concurrency: int, work: Path, server: Server) -> dict:
    from wikisum.pipeline.ccfetch.client import Client
    from wikisum.pipeline.ccfetch.fetch import Fetcher
    from wikisum.pipeline.ccfetch.records import CcFetchConfig
    from wikisum.pipeline.crawl.writer import WarcSink

    c = CcFetchConfig(urls=(), out="", data_url=base, per_host_concurrency=concurrency)
    client = Client(user_agent=c.user_agent, timeout_s=c.timeout_s, retries=c.retries,
                    backoff_s=c.backoff_s)
    out = tempfile.mkdtemp(prefix="warc-", dir=work)
    sink = WarcSink(out, "bench", f"c{concurrency}", c.warc_part_bytes, {}, job="ccfetch")
    fetcher = Fetcher(c, client, sink)
    before = server.stats()
    started = time.perf_counter()
    try:
        outcomes = fetcher.fetch_all(resolved)
    finally:
        sink.close()
    seconds = time.perf_counter() - started
    after = server.stats()
    written = sum(os.path.getsize(p) for p in sink.files)
    shutil.rmtree(out, ignore_errors=True)
    kinds = Counter(f"{o.outcome}:{o.reason}" for o in outcomes)
    fetched = sum(o.bytes for o in outcomes if o.outcome == "fetched")
    return {"concurrency": concurrency, "records": len(resolved), "seconds": round(seconds, 3),
            "records_per_s": round(len(resolved) / seconds, 1),
            "record_mb": round(fetched / 1e6, 3), "mb_per_s": round(fetched / 1e6 / seconds, 2),
            "mean_record_bytes": round(fetched / max(1, kinds["fetched:ok"])),
            "requests": after["requests"].get("data", 0) - before["requests"].get("data", 0),
            "warc_mb_written": round(written / 1e6, 3), "outcomes": dict(sorted(kinds.items()))}


def bare_gets(base: str, resolved: list, concurrency: int) -> dict:
    """The same ranged GETs with ``Client.get`` only: no checks, nothing written."""
    from wikisum.pipeline.ccfetch.client import Client
    from wikisum.pipeline.ccfetch.records import CcFetchConfig

    c = CcFetchConfig(urls=(), out="")
    client = Client(user_agent=c.user_agent, timeout_s=c.timeout_s, retries=c.retries,
                    backoff_s=c.backoff_s)

    def one(r) -> int:
        p = r.page
        resp = client.get(f"{base}/{p.filename}",
                          {"Range": f"bytes={p.offset}-{p.offset + p.length - 1}"},
                          max_bytes=p.length + 65536, ok=(200, 206))
        return len(resp.body)

    started = time.perf_counter()
    if concurrency <= 1:
        sizes = [one(r) for r in resolved]
    else:
        with ThreadPoolExecutor(concurrency) as pool:
            sizes = list(pool.map(one, resolved))
    seconds = time.perf_counter() - started
    return {"concurrency": concurrency, "requests": len(resolved),
            "seconds": round(seconds, 3), "requests_per_s": round(len(resolved) / seconds, 1),
            "mb_per_s": round(sum(sizes) / 1e6 / seconds, 2)}


# ------------------------------------------------------------------------------------------
# The whole job


def run_job(name: str, sample: dict, base: str, urls: str, source: str, lookup_only: bool,
            work: Path) -> dict:
    out = work / f"job-{name}"
    shutil.rmtree(out, ignore_errors=True)
    argv = ["cc-fetch", "--urls", urls, "--crawl", sample["crawl"], "--out", str(out),
            "--index-url", base, "--data-url", base, "--index-rate", "1000"]
    if source == "columnar":
        argv += ["--source", "columnar", "--columnar-index",
                 str(Path(sample["dir"]) / TABLE_GLOB)]
    if lookup_only:
        argv.append("--lookup-only")
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", JOB_CHILD, *argv], capture_output=True,
                          text=True, check=False, cwd=str(ROOT.parent))
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"job {name} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    times = next(line.split()[1:] for line in done.stdout.splitlines()
                 if line.startswith("BENCH_TIMES"))
    summary = json.loads((out / "summary.json").read_text())
    urls = summary["stages"]["urls"]["in"]
    seconds = float(times[1])
    shutil.rmtree(out, ignore_errors=True)
    return {"name": name, "source": source, "lookup_only": lookup_only,
            "urls": urls, "seconds": round(seconds, 2),
            "process_seconds": round(wall, 2), "import_seconds": round(float(times[0]), 2),
            "urls_per_s": round(urls / seconds, 1),
            "outcomes": summary["outcomes"], "bytes_fetched": summary["bytes_fetched"],
            "mb_per_s": round(summary["bytes_fetched"] / 1e6 / seconds, 3),
            "balanced": summary["balanced"]}


# ------------------------------------------------------------------------------------------


def machine_info() -> dict:
    import apache_beam
    import pyarrow

    return {"cpu": cpu_model(), "cpus": os.cpu_count(),
            "usable_cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else None, "python": platform.python_version(), "platform": platform.platform(),
            "apache_beam": apache_beam.__version__, "pyarrow": pyarrow.__version__,
            "loadavg_start": list(os.getloadavg())}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--articles", type=int, default=600,
                        help="articles of the generated sample (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="sample seed (default: 0)")
    parser.add_argument("--work", default=None,
                        help="folder for the sample and the job outputs, kept (default: a "
                             "temporary folder, removed)")
    parser.add_argument("--threads", type=int, default=8,
                        help="API lookups in flight, as the job's batches (default: "
                             "%(default)s)")
    parser.add_argument("--concurrency", default="1,4",
                        help="fetch concurrencies, comma-separated (default: %(default)s)")
    parser.add_argument("--as-written", type=int, default=150, metavar="N",
                        help="lookups and fetches timed against the server as written "
                             "(Nagle on); 0: skip (default: %(default)s)")
    parser.add_argument("--scan-rows", type=int, default=2_000_000,
                        help="rows of the synthetic table; 0: skip (default: %(default)s)")
    parser.add_argument("--scan-row-group", type=int, default=250_000,
                        help="rows a row group of it (default: %(default)s)")
    parser.add_argument("--scan-share", type=float, default=0.03,
                        help="share of its keys looked up (default: %(default)s)")
    parser.add_argument("--skip-jobs", action="store_true", help="no Beam job runs")
    parser.add_argument("--out", default=str(DEFAULT_OUT),
                        help="results file (default: bench/results/ccfetch.json)")
    args = options.parse(parser, argv)
    concurrencies = [int(x) for x in str(args.concurrency).split(",") if x.strip()]
    if args.work:
        Path(args.work).mkdir(parents=True, exist_ok=True)
        work = Path(args.work)
        return bench(args, work, concurrencies)
    with tempfile.TemporaryDirectory(prefix="wikisum-ccfetch-bench-") as tmp:
        return bench(args, Path(tmp), concurrencies)


def bench(args: argparse.Namespace, work: Path, concurrencies: list[int]) -> int:
    machine = machine_info()
    if machine["loadavg_start"][0] > 0.5:
        print(f"warning: load average {machine['loadavg_start'][0]:.2f} before the runs; "
              "the timings share the machine", flush=True)
    sample = make_sample(work, args.articles, args.seed)
    crawl = sample["crawl"]
    qs = queries(sample["lines"])
    keys = [k for k, _ in qs]
    print(f"sample: {sample['url_lines']} URL lines, {len(qs)} distinct keys, "
          f"{sample['warc_files']} WARC files ({sample['warc_mb']} MB), crawl {crawl}",
          flush=True)
    report: dict = {"command": sys.argv, "machine": machine,
                    "sample": {k: v for k, v in sample.items() if k not in ("lines",)},
                    "distinct_keys": len(qs)}

    with Server(sample["dir"]) as server:
        api = {}
        for threads in sorted({1, args.threads}):
            api[str(threads)], results = api_lookup(server.base, crawl, qs, threads, server)
            a = api[str(threads)]
            print(f"lookup  API, {threads} thread(s): {a['keys']} keys in {a['seconds']:.2f} s"
                  f" = {a['keys_per_s']:,.0f} keys/s ({a['requests']} requests, "
                  f"{a['keys_with_captures']} with captures, {a['errors']} errors)", flush=True)
        col, found = columnar_lookup(sample["table_files"], crawl, keys, [0.01, 0.1], args.seed)
        print(f"lookup  columnar: {col['keys']} keys in {col['seconds']:.3f} s = "
              f"{col['keys_per_s']:,.0f} keys/s; row groups read {col['row_groups_read']} of "
              f"{col['row_groups']} ({col['ms_per_row_group_read']:.2f} ms each); "
              f"{col['keys_with_captures']} keys with captures", flush=True)
        for p in col["pruning"]:
            print(f"        {100 * p['share']:g} % of the keys ({p['keys']}): "
                  f"{p['row_groups_read']} of {col['row_groups']} row groups", flush=True)
        agree = set(found) == {k for k, r in results.items() if r.captures}
        report["lookup"] = {"api": api, "columnar": col, "sources_agree": agree}
        if not agree:
            print("WARNING: the two sources found captures for different keys", flush=True)

        resolved = resolved_pages(qs, results, crawl)
        fetches, bare = [], []
        for conc in concurrencies:
            f = fetch(server.base, resolved, conc, work, server)
            fetches.append(f)
            print(f"fetch   Fetcher, concurrency {conc}: {f['records']} records "
                  f"({f['record_mb']:.2f} MB) in {f['seconds']:.2f} s = "
                  f"{f['records_per_s']:,.0f} records/s, {f['mb_per_s']:.2f} MB/s; "
                  f"{f['outcomes']}", flush=True)
            b = bare_gets(server.base, resolved, conc)
            bare.append(b)
            print(f"        bare Client.get, concurrency {conc}: {b['requests_per_s']:,.0f} "
                  f"requests/s, {b['mb_per_s']:.2f} MB/s", flush=True)
        report["fetch"] = {"fetcher": fetches, "bare_get": bare,
                           "resolved": len(resolved)}

        if not args.skip_jobs:
            urls = str(Path(sample["dir"]) / "urls.txt")
            tiny = work / "urls-10.txt"
            tiny.write_text("".join(u + "\n" for u in sample["lines"][:10]), encoding="utf-8")
            jobs = [run_job("api-lookup-only-10", sample, server.base, str(tiny), "api",
                            True, work)]
            for source in ("api", "columnar"):
                for lookup_only in (True, False):
                    name = f"{source}-{'lookup-only' if lookup_only else 'fetch'}"
                    jobs.append(run_job(name, sample, server.base, urls, source, lookup_only,
                                        work))
            for j in jobs:
                print(f"job     {j['name']}: {j['urls']} URLs in {j['seconds']:.1f} s = "
                      f"{j['urls_per_s']:,.0f} URLs/s; {j['bytes_fetched'] / 1e6:.2f} MB "
                      f"fetched; outcomes {j['outcomes']}"
                      f"{'' if j['balanced'] else '  NOT BALANCED'}", flush=True)
            report["jobs"] = jobs

    if args.as_written > 0:
        n = args.as_written
        with Server(sample["dir"], nodelay=False) as slow:
            a, _ = api_lookup(slow.base, crawl, qs[:n], 1, slow)
            f = fetch(slow.base, resolved[:n], 1, work, slow)
        report["as_written"] = {"api_1_thread": a, "fetch_1": f}
        print(f"as written (Nagle on): API 1 thread {a['keys_per_s']:,.1f} keys/s; fetch "
              f"concurrency 1 {f['records_per_s']:,.1f} records/s ({n} each)", flush=True)

    if args.scan_rows > 0:
        s = synthetic_scan(sample["table_files"], crawl, args.scan_rows, args.scan_row_group,
                           args.scan_share, work, args.seed)
        report["synthetic_scan"] = s
        print(f"scan    synthetic table, {s['rows']:,} rows in {s['row_groups']} row groups of "
              f"{s['row_group_rows']:,}: {s['wanted_keys']:,} keys, {s['row_groups_read']} "
              f"groups read in {s['seconds']:.2f} s = {s['rows_scanned_per_s']:,} rows/s, "
              f"{s['needed_mb_per_s']} MB/s of needed columns; {s['file_bytes_per_row']} "
              f"bytes/row", flush=True)

    machine["loadavg_end"] = list(os.getloadavg())
    report["when"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(f"load average {machine['loadavg_start'][0]:.2f} -> "
          f"{machine['loadavg_end'][0]:.2f}; results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
