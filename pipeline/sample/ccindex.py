"""The sample's captures as a Common Crawl URL index, written beside its WARC files:

- ``cc-index/collections/CRAWL/indexes/cdx-00000.cdxj``: the index server's lines (``urlkey
  timestamp {json}``, sorted), which :mod:`wikisum.pipeline.sample.ccserver` serves as the
  CDX API;
- ``cc-index/table/cc-main/warc/crawl=CRAWL/subset=warc/part-00000.parquet``: the columnar
  table (Common Crawl's column names and types, sorted by key, small row groups so that a
  lookup reads only some of them);
- ``urls.txt``: every URL the articles cite or list as search results, as written there.

Offsets and lengths are read back from the WARC files, as Common Crawl's indexer does, so the
index is true to the bytes; ``filename`` is relative to the sample's folder (the data URL).
The sample's cut record is listed with the length its file has left, as an index built
before a file was damaged would list it: cc-fetch must fail it (``truncated``), not write it.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from warcio.archiveiterator import ArchiveIterator

from wikisum.core import schemas
from wikisum.pipeline.ccfetch.surt import surt_key

CRAWL = "CC-MAIN-2019-22"  # the crawl the sample's captures (June 2019) pretend to be from
CDXJ = "cc-index/collections/{crawl}/indexes/cdx-00000.cdxj"
TABLE = "cc-index/table/cc-main/warc/crawl={crawl}/subset=warc/part-00000.parquet"
URLS = "urls.txt"
ROW_GROUP_ROWS = 16


def index_rows(root: Path, names: list[str], crawl: str = CRAWL) -> list[dict]:
    """One CDX-style row per response or resource record of the WARC files ``names``."""
    rows = []
    for name in names:
        with open(root / name, "rb") as f:
            records = ArchiveIterator(f)
            try:
                for rec in records:
                    if rec.rec_type not in ("response", "resource"):
                        continue
                    url = rec.rec_headers.get_header("WARC-Target-URI")
                    date = rec.rec_headers.get_header("WARC-Date")
                    if rec.rec_type == "response" and rec.http_headers is not None:
                        status = int(rec.http_headers.get_statuscode())
                        mime = rec.http_headers.get_header("Content-Type") or ""
                        location = rec.http_headers.get_header("Location") or ""
                    else:
                        status, location = 200, ""
                        mime = rec.rec_headers.get_header("Content-Type") or ""
                    rec.content_stream().read()
                    rows.append({
                        "urlkey": surt_key(url), "timestamp": date.replace("-", "")
                        .replace(":", "").replace("T", "").replace("Z", ""),
                        "url": url, "mime": mime.split(";")[0].strip(),
                        "status": str(status),
                        "digest": (rec.rec_headers.get_header("WARC-Payload-Digest") or "")
                        .removeprefix("sha1:"),
                        "length": str(records.get_record_length()),
                        "offset": str(records.get_record_offset()),
                        "filename": name, **({"redirect": location} if location else {})})
            except Exception:  # the sample's cut record ends its file: nothing after it
                pass
    rows.sort(key=lambda r: (r["urlkey"], r["timestamp"], r["filename"], int(r["offset"])))
    return rows


def columnar_rows(rows: list[dict], crawl: str) -> list[dict]:
    out = []
    for r in rows:
        url = r["url"]
        out.append({
            "url_surtkey": r["urlkey"], "url": url,
            "url_host_name": url.split("/")[2].split(":")[0].lower(),
            "url_protocol": url.split(":", 1)[0],
            "fetch_time": datetime.strptime(r["timestamp"], "%Y%m%d%H%M%S")
            .replace(tzinfo=timezone.utc),
            "fetch_status": int(r["status"]), "fetch_redirect": r.get("redirect"),
            "content_digest": r["digest"], "content_mime_type": r["mime"],
            "content_mime_detected": r["mime"], "warc_filename": r["filename"],
            "warc_record_offset": int(r["offset"]), "warc_record_length": int(r["length"]),
            "crawl": crawl, "subset": "warc"})
    return out


def write_index(root: str | Path, warc_names: list[str], urls: list[str],
                crawl: str = CRAWL) -> dict:
    """Write the index files and the URL list into ``root``; returns their paths (relative)."""
    root = Path(root)
    rows = index_rows(root, warc_names, crawl)
    cdxj = root / CDXJ.format(crawl=crawl)
    cdxj.parent.mkdir(parents=True, exist_ok=True)
    cdxj.write_text("".join(
        f"{r['urlkey']} {r['timestamp']} "
        f"{json.dumps({k: v for k, v in r.items() if k != 'urlkey'}, sort_keys=True)}\n"
        for r in rows), encoding="utf-8")
    table = root / TABLE.format(crawl=crawl)
    table.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(columnar_rows(rows, crawl),
                                        schema=schemas.CC_COLUMNAR_INDEX),
                   table, row_group_size=ROW_GROUP_ROWS, compression="zstd",
                   write_statistics=["url_surtkey"])
    (root / URLS).write_text("".join(u + "\n" for u in urls), encoding="utf-8")
    return {"crawl": crawl, "cdxj": str(cdxj.relative_to(root)),
            "columnar": str(table.relative_to(root)), "urls": URLS, "captures": len(rows)}


def read_cdxj(path: str | Path) -> list[tuple[str, str, dict]]:
    """(urlkey, timestamp, fields) of every line of a CDXJ file."""
    out = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        key, stamp, fields = line.split(" ", 2)
        out.append((key, stamp, json.loads(fields)))
    return out


STANDIN_WARC = "crawl-data/standin/standin-00000.warc.gz"


def write_standin(root: str | Path, pages: list[tuple[str, bytes]], crawl: str = CRAWL,
                  date: str = "2019-06-01T00:00:00Z") -> dict:
    """A stand-in Common Crawl holding ``pages`` (URL, HTML bytes): one WARC file of 200
    text/html responses and its index (:func:`write_index`), served as Common Crawl by
    :class:`wikisum.pipeline.sample.ccserver.CommonCrawlServer`. For URLs the sample does not
    hold, e.g. the citations of a real dump, when the real index cannot be reached."""
    import io

    from warcio.statusandheaders import StatusAndHeaders
    from warcio.warcwriter import WARCWriter

    root = Path(root)
    buf = io.BytesIO()
    writer = WARCWriter(buf, gzip=True)
    for url, body in pages:
        headers = StatusAndHeaders("200 OK", [("Content-Type", "text/html; charset=utf-8"),
                                              ("Content-Length", str(len(body)))],
                                   protocol="HTTP/1.1")
        record = writer.create_warc_record(url, "response", payload=io.BytesIO(body),
                                           http_headers=headers)
        record.rec_headers.replace_header("WARC-Date", date)
        writer.write_record(record)
    path = root / STANDIN_WARC
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(buf.getvalue())
    return write_index(root, [STANDIN_WARC], [url for url, _ in pages], crawl)
