"""A loopback stand-in for Common Crawl's servers, over a sample folder: the URL index server
(``/collinfo.json``, ``/CRAWL-index?url=...&output=json``, answered from the sample's CDXJ) and
the data server (any file under the folder, with HTTP Range). Tests and benchmarks run
``wikisum cc-fetch`` against it without a network; ``faults`` makes it misbehave as the real
ones sometimes do (503 "slow down", a slow answer, a wrong or cut range, Range ignored).
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from wikisum.pipeline.ccfetch.surt import surt_key
from wikisum.pipeline.sample.ccindex import read_cdxj

_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


@dataclass
class Fault:
    """Misbehaviour for requests whose path (or index query URL) contains ``match``:
    ``mode`` is one of status (answer ``status``), slow (sleep ``seconds`` first),
    wrong_range (serve the range shifted by ``shift`` bytes), short_range (cut the range by
    ``shift`` bytes), ignore_range (200 and the whole file); ``times``: how many requests it
    hits (0: every one)."""

    match: str
    mode: str
    status: int = 503
    seconds: float = 0.0
    shift: int = 1
    times: int = 0
    hits: int = 0


class CommonCrawlServer:
    """Serves ``root`` (a folder written by ``wikisum sample``) on 127.0.0.1, in a thread."""

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        self.faults: list[Fault] = []
        self.requests: Counter = Counter()  # "index" | "data" | "other"
        self.bytes_served = 0
        self.lock = threading.Lock()
        self.index: dict[str, dict[str, list[dict]]] = {}
        for cdxj in sorted(self.root.glob("cc-index/collections/*/indexes/*.cdxj")):
            crawl = cdxj.parts[-3]
            lines = self.index.setdefault(crawl, {})
            for key, stamp, fields in read_cdxj(cdxj):
                lines.setdefault(key, []).append({"urlkey": key, "timestamp": stamp, **fields})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True
        self.server.block_on_close = False
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def __enter__(self) -> CommonCrawlServer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def fault(self, target: str) -> Fault | None:
        with self.lock:
            for f in self.faults:
                if f.match in target and (not f.times or f.hits < f.times):
                    f.hits += 1
                    return f
        return None

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive, as the real servers
            disable_nagle_algorithm = True  # headers and body go out at once (no 40 ms stall)

            def log_message(self, *args):
                pass

            def send(self, status: int, body: bytes, ctype: str = "application/json",
                     headers: tuple = ()):
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)
                with server.lock:
                    server.bytes_served += len(body)

            def do_GET(self):
                parts = urlsplit(self.path)
                query = parse_qs(parts.query)
                target = unquote(self.path)
                fault = server.fault(target)
                if fault is not None and fault.mode == "slow":
                    time.sleep(fault.seconds)
                if fault is not None and fault.mode == "status":
                    self.send(fault.status, b'{"error": "injected"}')
                    return
                if parts.path == "/collinfo.json":
                    with server.lock:
                        server.requests["other"] += 1
                    self.send(200, json.dumps([
                        {"id": c, "name": f"Sample crawl {c}",
                         "cdx-api": f"{server.base}/{c}-index"}
                        for c in sorted(server.index)]).encode())
                elif parts.path.endswith("-index") and parts.path[1:-6] in server.index:
                    with server.lock:
                        server.requests["index"] += 1
                    self.index(server.index[parts.path[1:-6]], query)
                else:
                    with server.lock:
                        server.requests["data"] += 1
                    self.data(parts.path, fault)

            def index(self, lines, query):
                url = query.get("url", [""])[0]
                if "showNumPages" in query:
                    self.send(200, b'{"pages": 1, "pageSize": 5, "blocks": 1}')
                    return
                found = lines.get(surt_key(url) or "", [])
                if not found:
                    self.send(404, json.dumps({"error": f"No Captures found for: {url}"})
                              .encode())
                    return
                body = "".join(json.dumps(r, sort_keys=True) + "\n" for r in found)
                self.send(200, body.encode(), "text/x-ndjson")

            def data(self, path, fault):
                file = (server.root / unquote(path).lstrip("/")).resolve()
                if server.root not in file.parents or not file.is_file():
                    self.send(404, b"not found", "text/plain")
                    return
                data = file.read_bytes()
                m = _RANGE.fullmatch(self.headers.get("Range", "").strip())
                if m is None or (fault is not None and fault.mode == "ignore_range"):
                    self.send(200, data, "application/octet-stream")
                    return
                first = int(m.group(1))
                last = min(int(m.group(2)) if m.group(2) else len(data) - 1, len(data) - 1)
                if first >= len(data):
                    self.send(416, b"", "text/plain",
                              (("Content-Range", f"bytes */{len(data)}"),))
                    return
                body = data[first:last + 1]
                if fault is not None and fault.mode == "wrong_range":
                    body = data[first + fault.shift:last + 1 + fault.shift]
                elif fault is not None and fault.mode == "short_range":
                    body = body[:-fault.shift]
                self.send(206, body, "application/octet-stream",
                          (("Content-Range", f"bytes {first}-{last}/{len(data)}"),))

        return Handler
