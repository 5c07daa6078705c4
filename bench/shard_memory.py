"""Peak memory of writing one shard, against the shard's size: the bounded writer
(``wikisum.core.shards.write_sorted_table``, what every Beam job's ``WriteShards`` runs)
against the writer it replaced (all rows in a list, sorted, one Arrow table, the file's bytes
in memory, then written).

Each measurement is a fresh child process that generates article rows of the ingest schema
(``ARTICLES``: a lead, sections, references with paragraphs; about ``--row-kb`` KiB of text each,
in a shuffled order) one at a time from a generator, as a Dataflow worker receives a large
GroupByKey's values (paged from the shuffle, never all at once), and writes them into one
Parquet file. The child reports its peak resident set (``ru_maxrss``, the kernel's high-water
mark); the same child with no rows written gives the baseline (interpreter, pyarrow, Beam's
FileSystems). Both writers produce the same rows in the same order; the bounded writer's file is
also written twice to check that it is byte-identical.

Run by hand, never by CI::

    .venv/bin/python bench/shard_memory.py --config configs/bench/shard-memory.yaml
    .venv/bin/python bench/shard_memory.py --rows 200,800 --row-kb 64 --quick

It prints a table (rows, shard MiB, peak MiB per writer) and writes every figure to
``bench/results/shard_memory.json`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

import options  # noqa: E402
from machine import cpu_model  # noqa: E402

CHILD = textwrap.dedent("""
    import hashlib, io, json, random, resource, sys, time
    import pyarrow as pa, pyarrow.parquet as pq
    from wikisum.core import schemas, shards

    mode, n_rows, row_kb, buffer_mb, path = sys.argv[1:6]
    n_rows, row_kb, buffer_mb = int(n_rows), int(row_kb), int(buffer_mb)
    words = [hashlib.sha1(str(i).encode()).hexdigest()[:random.Random(i).randint(3, 10)]
             for i in range(5000)]

    def text(rng, n_words):
        return " ".join(rng.choice(words) for _ in range(n_words)) + "."

    def row(i):
        rng = random.Random(i)
        n_refs = rng.randint(4, 12)
        per_ref = max(1, row_kb * 1024 // 7 // n_refs // 60)  # paragraphs of ~60 words
        refs = [{"url": f"http://example.com/{i}/{r}", "source": "citation",
                 "sources": ["citation"], "capture_date": "2017-03-01T00:00:00Z",
                 "source_file": "crawl.warc.gz",
                 "paragraphs": [text(rng, 60) for _ in range(per_ref)]} for r in range(n_refs)]
        return {"id": i, "title": f"Article {i}", "url": f"https://en.wikipedia.org/wiki/{i}",
                "split": "train", "lead": text(rng, 80),
                "sections": [{"title": "History", "level": 2, "text": text(rng, 200)}],
                "citations_listed": n_refs, "citations_found": n_refs, "search_listed": 0,
                "search_found": 0, "clones_removed": 0, "self_removed": 0,
                "references": refs}

    order = list(range(n_rows))
    random.Random(0).shuffle(order)
    rows = (row(i) for i in order)
    started = time.monotonic()
    if mode == "bounded":
        shards.write_sorted_table(rows, path, schemas.ARTICLES, lambda r: r["id"],
                                  buffer_bytes=buffer_mb * 1024 * 1024)
    elif mode == "whole":  # the writer before: the whole shard in memory three times over
        ordered = sorted(rows, key=lambda r: r["id"])
        buf = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(ordered, schema=schemas.ARTICLES), buf,
                       compression="zstd")
        shards.write_bytes(path, buf.getvalue())
    elif mode == "baseline":
        for _ in rows:
            pass
    seconds = time.monotonic() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"peak_mib": peak, "seconds": seconds}))
""")


def measure(mode: str, rows: int, row_kb: int, buffer_mb: int, path: str) -> dict:
    done = subprocess.run([sys.executable, "-c", CHILD, mode, str(rows), str(row_kb),
                           str(buffer_mb), path], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{mode} {rows} rows failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", default="250,1000,4000",
                        help="shard sizes in rows, comma-separated (default: %(default)s)")
    parser.add_argument("--row-kb", type=int, default=200,
                        help="KiB of text per row (default: %(default)s)")
    parser.add_argument("--buffer-mb", type=int, default=256,
                        help="the bounded writer's in-memory buffer (default: %(default)s)")
    parser.add_argument("--quick", action="store_true",
                        help="skip the writer before (it needs the whole shard in memory)")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "shard_memory.json"))
    args = options.parse(parser, argv)
    sizes = [int(x) for x in str(args.rows).split(",") if x.strip()]
    results = []
    with tempfile.TemporaryDirectory(prefix="wikisum-shard-bench-") as work:
        for n in sizes:
            entry = {"rows": n, "baseline": measure("baseline", n, args.row_kb, 0, "")}
            first, second = os.path.join(work, "a.parquet"), os.path.join(work, "b.parquet")
            entry["bounded"] = measure("bounded", n, args.row_kb, args.buffer_mb, first)
            measure("bounded", n, args.row_kb, args.buffer_mb, second)
            entry["shard_mib"] = os.path.getsize(first) / 2**20
            entry["identical_rerun"] = Path(first).read_bytes() == Path(second).read_bytes()
            if not args.quick:
                whole = os.path.join(work, "c.parquet")
                entry["whole"] = measure("whole", n, args.row_kb, 0, whole)
                os.remove(whole)
            results.append(entry)
            line = (f"{n:>7d} rows  shard {entry['shard_mib']:8.1f} MiB  baseline "
                    f"{entry['baseline']['peak_mib']:7.0f} MiB  bounded "
                    f"{entry['bounded']['peak_mib']:7.0f} MiB ({entry['bounded']['seconds']:.1f}"
                    f" s)")
            if "whole" in entry:
                line += (f"  before {entry['whole']['peak_mib']:7.0f} MiB "
                         f"({entry['whole']['seconds']:.1f} s)")
            line += "  rerun identical" if entry["identical_rerun"] else "  RERUN DIFFERS"
            print(line, flush=True)
    report = {"command": sys.argv, "machine": {"cpu": cpu_model(), "cpus": os.cpu_count(),
                                                "python": platform.python_version()},
              "row_kb": args.row_kb, "buffer_mb": args.buffer_mb, "results": results,
              "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(f"results: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
