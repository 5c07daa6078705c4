"""``wikisum cc-plan``: which WET files of CC-MAIN-2017-39 hold the references, from
tensor2tensor's commoncrawl_metadata files."""

from __future__ import annotations

import argparse
import json

from wikisum.core import progress
from wikisum.workflows import checks

COMMAND = "cc-plan"
HELP = "tensor2tensor's commoncrawl_metadata -> the CC-MAIN-2017-39 WET files to download"
# A WET file of the 2016-2018 crawls is about 150 MB: Common Crawl's announcements list 4.54
# TiB in 30,374 WET files for September 2016 (157 MB each) and 7.87 TiB in 56,320 for
# September 2018 (150 MB each). Used where the files cannot be measured (--wet-root).
ESTIMATED_WET_BYTES = 150 * 1000 * 1000
DESCRIPTION = """\
The authors of WikiSum released, for each WET file of Common Crawl's CC-MAIN-2017-39 crawl, the
reference URLs it holds and the shards of the articles that cite them
(gs://tensor2tensor-data/wikisum/commoncrawl_metadata/<WET file>.metadata.json). This turns
them into the list of WET files to read, so that a user downloads (or points `ingest --wet` at)
only those: every file holding a wanted URL, with how many, and its size.

Wanted URLs: those of --urls (URL lists, one a line, or tensor2tensor's wiki_urls.json-*
shards) or, without --urls, every URL the metadata lists; --shards keeps the URLs of those
article shards only (tensor2tensor's shard ids, 0-999: dev 0-99, test 100-199, train
200-999). URLs are matched as tensor2tensor matches them, exact strings (--match normalized:
after wikisum's URL normalisation).

The metadata names WET files by base name; their path in the crawl (a segment folder) comes
from the crawl's listing, --wet-paths (crawl-data/CC-MAIN-2017-39/wet.paths.gz). Sizes are
measured under --wet-root where the files are (a mirror, a bucket); else estimated at
{estimate} MB a file (Common Crawl's 2016 and 2018 figures).

Outputs in --out:
  wet_paths.txt      the WET files to read, one path a line (download, or ingest --wet)
  plan.tsv           wet_path, wanted URLs, URLs its metadata lists, bytes, metadata file
  not_found.txt      wanted URLs that no metadata file lists
  plan.json          totals, the settings, and the metadata entries that could not be read
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(COMMAND, help=HELP, description=DESCRIPTION.format(
        estimate=ESTIMATED_WET_BYTES // 1_000_000),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--t2t-metadata", required=True, action="append", metavar="GLOB",
                   help="commoncrawl_metadata files (*.metadata.json; repeatable)")
    p.add_argument("--urls", action="append", default=[], metavar="FILE",
                   help="the wanted URLs: lists, one a line, or wiki_urls.json-* shards "
                        "(repeatable; default: every URL of the metadata)")
    p.add_argument("--shards", metavar="IDS",
                   help="tensor2tensor shard ids whose URLs are wanted, e.g. 0-99,150 "
                        "(default: all)")
    p.add_argument("--wet-paths", metavar="FILE",
                   help="the crawl's WET listing (wet.paths or wet.paths.gz), for full paths")
    p.add_argument("--wet-root", metavar="DIR",
                   help="where the crawl's files are (a mirror), to measure their sizes")
    p.add_argument("--match", choices=("exact", "normalized"), default="exact",
                   help="how URLs are compared (default: %(default)s, as tensor2tensor)")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.set_defaults(func=run)


def parse_shards(text: str | None) -> set[int] | None:
    """``0-99,150`` -> {0, ..., 99, 150}; None for None."""
    if text is None:
        return None
    ids: set[int] = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        low, dash, high = part.partition("-")
        try:
            first, last = int(low), int(high if dash else low)
        except ValueError:
            raise SystemExit(f"wikisum cc-plan: --shards {text!r}: expected ids or ranges "
                             "such as 0-99,150") from None
        if not 0 <= first <= last <= 999:
            raise SystemExit(f"wikisum cc-plan: --shards {part!r}: ids are 0 to 999")
        ids.update(range(first, last + 1))
    return ids


def wanted_urls(paths: list[str]) -> set[str]:
    from wikisum.core import files
    from wikisum.pipeline import beamio

    urls: set[str] = set()
    for pattern in paths:
        for path in files.match(pattern) or [pattern]:
            urls.update(beamio.list_urls(path))
    return urls


def wet_listing(path: str) -> dict[str, str]:
    import gzip

    from wikisum.core import files
    from wikisum.formats import t2t

    data = files.read_bytes(path)
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return t2t.wet_paths_by_name(data.splitlines())


def sizes(rows, root: str | None) -> list[tuple[int, bool]]:
    """(bytes, measured) per row: the file's size under ``root`` where it is there, else the
    estimate."""
    import os

    from wikisum.core import files

    out = []
    for row in rows:
        size = None
        if root:
            path = files.join(root, row.wet_path or row.wet_name)
            try:
                if "://" in path:
                    import fsspec

                    size = fsspec.core.url_to_fs(path)[0].size(path)
                elif os.path.exists(path):
                    size = os.path.getsize(path)
            except (OSError, ValueError):
                size = None
        out.append((size, True) if size is not None else (ESTIMATED_WET_BYTES, False))
    return out


def run(args: argparse.Namespace) -> int:
    from wikisum.core import files, shards
    from wikisum.formats import t2t
    from wikisum.pipeline.urls import normalize_url

    checks.output_dir(args.out, COMMAND)
    checks.input_files(args.t2t_metadata, "--t2t-metadata", COMMAND)
    checks.input_files(args.urls, "--urls", COMMAND)
    if args.wet_paths:
        checks.input_path(args.wet_paths, "--wet-paths", COMMAND)
    if args.wet_root:
        checks.input_path(args.wet_root, "--wet-root", COMMAND, kind="dir")
    shard_ids = parse_shards(args.shards)
    metadata = sorted({p for pattern in args.t2t_metadata for p in files.match(pattern)})
    wanted = wanted_urls(args.urls) if args.urls else None
    listing = wet_listing(args.wet_paths) if args.wet_paths else None
    with progress.Progress("cc-plan", total=len(metadata), unit="metadata files") as bar:
        def counted():
            for path in metadata:
                yield path
                bar.update()

        result = t2t.plan(counted(), wanted, shard_ids, wet_paths=listing,
                          key=normalize_url if args.match == "normalized" else None)
    measured = sizes(result.rows, args.wet_root)
    lines = ["wet_path\twanted_urls\tlisted_urls\tbytes\tmetadata"]
    for row, (size, _) in zip(result.rows, measured, strict=True):
        lines.append(f"{row.wet_path or row.wet_name}\t{row.wanted}\t{row.total}\t{size}\t"
                     f"{row.metadata}")
    shards.write_text(files.join(args.out, "plan.tsv"), "\n".join(lines) + "\n")
    shards.write_text(files.join(args.out, "wet_paths.txt"),
                      "".join(f"{r.wet_path or r.wet_name}\n" for r in result.rows))
    shards.write_text(files.join(args.out, "not_found.txt"),
                      "".join(f"{u}\n" for u in result.not_found))
    total_bytes = sum(size for size, _ in measured)
    summary = {
        "metadata_files": len(metadata), "wet_files": len(result.rows),
        "wanted_urls": None if wanted is None else len(wanted),
        "found_urls": sum(r.wanted for r in result.rows),
        "not_found_urls": len(result.not_found),
        "bytes": total_bytes, "bytes_measured": sum(1 for _, m in measured if m),
        "bytes_estimated_per_file": ESTIMATED_WET_BYTES,
        "full_paths": listing is not None,
        "settings": {"shards": args.shards, "match": args.match, "urls": args.urls},
        "problems": [{"file": p.source, "reason": p.reason, "detail": p.detail, "url": p.key}
                     for p in result.problems],
    }
    shards.write_text(files.join(args.out, "plan.json"), json.dumps(summary, indent=1) + "\n")
    print(format_summary(summary, args.out))
    return 0


def format_summary(summary: dict, out: str) -> str:
    found = f"{summary['found_urls']:,} wanted URLs"
    if summary["wanted_urls"] is not None:
        found += f" of {summary['wanted_urls']:,} ({summary['not_found_urls']:,} in no file)"
    size = summary["bytes"] / 1e9
    how = ("measured" if summary["bytes_measured"] == summary["wet_files"] else
           f"{summary['bytes_measured']} measured, the rest at "
           f"{summary['bytes_estimated_per_file'] // 1_000_000} MB")
    lines = [f"cc-plan: {summary['wet_files']:,} WET files of {summary['metadata_files']:,} "
             f"hold {found}; {size:,.1f} GB to read ({how}) -> {out}/wet_paths.txt"]
    if not summary["full_paths"]:
        lines.append("  WET files are named without their segment folder: give --wet-paths "
                     "(crawl-data/CC-MAIN-2017-39/wet.paths.gz) for paths to download")
    if summary["problems"]:
        lines.append(f"  {len(summary['problems'])} metadata entries could not be read "
                     f"(listed in {out}/plan.json)")
    return "\n".join(lines)


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (core.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
