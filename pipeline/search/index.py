"""A search index on disk: BM25 shards built with tantivy, and the record that makes them one
index.

``INDEX/`` holds::

    shards/RUN/shard-SSSSS-of-NNNNN/
                                   one tantivy index per shard (pages assigned by a hash of
                                   their URL, so each shard is a sample of the whole)
    dead_letters/                  every page the job dropped, with its reason (Parquet)
    index.json                     written last: the format version, the analysis, every
                                   shard's documents and files (bytes, SHA-256), the job's counts

A folder without ``index.json`` is a killed or running job's output and is refused by name; so
is a shard whose files differ from what ``index.json`` records (a file missing, cut short or
changed), and an index of another format version.

Why tantivy (measured in ``bench/search.py``, docs/search.md): the writer works in a heap of a
set size and flushes a segment to disk each time it fills, so the memory a shard's build takes
stops growing once the heap is full, whatever the shard's size (bm25s builds its matrix from
every document's tokens held at once: its memory grows with the shard); a shard is searched
memory-mapped, so it need not fit in memory either; and its top-k search skips documents that
cannot make the top (block-max WAND).

Scores of different shards are merged as they are (each shard's own document frequencies, as
Elasticsearch does by default): with pages spread by a hash, every shard's statistics estimate
the whole index's.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass

from wikisum.core import files
from wikisum.core.language import stemmer_name
from wikisum.pipeline.search.analysis import Analyzer

FORMAT = "wikisum-search-index"
VERSION = 1
RECORD = "index.json"
SHARDS = "shards"
TERMS, URL = "terms", "url"
# The writer's memory: tantivy flushes a segment to disk when its arena is full.
WRITER_HEAP_BYTES = 64 * 1024 * 1024
_LOCKS = (".tantivy-meta.lock", ".tantivy-writer.lock")
_CHUNK = 1 << 20


class BadIndex(ValueError):
    """An index that cannot be used: not finished, damaged, or of another version. The
    message names the folder or file and says what to do."""


def shard_name(index: int, total: int) -> str:
    return f"shard-{index:05d}-of-{total:05d}"


def schema():
    import tantivy

    builder = tantivy.SchemaBuilder()
    # The analysed terms, joined by spaces (the analysis is ours, the same for pages and
    # queries: tantivy only splits them again at the spaces).
    builder.add_text_field(TERMS, stored=False, tokenizer_name="whitespace", index_option="freq")
    builder.add_text_field(URL, stored=True, tokenizer_name="raw", index_option="basic")
    return builder.build()


def engine_version() -> str:
    import tantivy

    return str(getattr(tantivy, "__version__", "unknown"))


def build_shard(folder: str, pages: Iterable[tuple[str, list[str]]],
                heap_bytes: int = WRITER_HEAP_BYTES) -> int:
    """A tantivy index of ``pages`` ((url, terms)) in the empty local ``folder``; the number of
    documents. Memory stays within ``heap_bytes`` plus one page."""
    import tantivy

    index = tantivy.Index(schema(), path=folder)
    writer = index.writer(heap_size=heap_bytes, num_threads=1)
    n = 0
    for url, terms in pages:
        writer.add_document(tantivy.Document(**{TERMS: " ".join(terms), URL: url}))
        n += 1
    writer.commit()
    writer.wait_merging_threads()
    return n


def shard_files(folder: str) -> list[str]:
    """The files of a built shard that make the index (tantivy's lock files left out)."""
    return sorted(name for name in os.listdir(folder)
                  if name not in _LOCKS and os.path.isfile(os.path.join(folder, name)))


def file_digest(path: str) -> tuple[int, str]:
    """(bytes, SHA-256 hex) of a file at a path or URL."""
    digest = hashlib.sha256()
    size = 0
    with files.open_read(path) as f:
        while chunk := f.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


# ------------------------------------------------------------------------------------------
# Reading


@dataclass(frozen=True)
class Hit:
    score: float
    url: str


def read_record(path: str) -> dict:
    """``index.json`` of a finished index at ``path``, checked for its format and version.

    Raises:
        BadIndex: no index.json (a job killed or still running), one that does not parse,
            or another format or version.
    """
    record = files.join(path, RECORD)
    rerun = f"rerun `wikisum search-index ... --out {path}`"
    if not files.exists(record):
        raise BadIndex(f"{path} is not a finished search index ({RECORD} is written last and "
                          f"is missing: the job did not run there, was killed, or is still "
                          f"running); {rerun}")
    try:
        with files.open_read(record) as f:
            data = json.loads(f.read().decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise BadIndex(f"{record} does not parse ({exc}); {rerun}") from exc
    index = data.get("index") if isinstance(data, dict) else None
    if not isinstance(index, dict) or index.get("format") != FORMAT:
        raise BadIndex(f"{record} is not a wikisum search index's record; {rerun}")
    version = index.get("version")
    if type(version) is not int or version != VERSION:
        raise BadIndex(f"{path} is a search index of format version {version!r}; "
                       f"this wikisum reads version {VERSION}; {rerun}")
    problem = record_problem(index)
    if problem:
        raise BadIndex(f"{record} is damaged: {problem}; {rerun}")
    from wikisum.pipeline.search.analysis import ENGLISH_STEMMER

    here = stemmer_name(index["lang"], ENGLISH_STEMMER)
    if index.get("stemmer") != here:
        raise BadIndex(f"{path} was analysed with the stemmer {index.get('stemmer')!r}, which "
                       f"this machine gives as {here!r} for {index['lang']!r}: its queries "
                       f"would not meet its terms; {rerun} here")
    return data


def record_problem(index: dict) -> str | None:
    """What is wrong with the shape of index.json's ``index``, or None: a run, a language and
    shards named in order, each with its files (meta.json among them) and their bytes and
    SHA-256."""
    if not isinstance(index.get("run"), str) or not index["run"] or "/" in index["run"]:
        return "no run folder named"
    if not isinstance(index.get("lang"), str) or not index["lang"]:
        return "no language"
    shards = index.get("shards")
    if not isinstance(shards, list) or not shards:
        return "no shards listed"
    for i, entry in enumerate(shards):
        if not isinstance(entry, dict) or entry.get("name") != shard_name(i, len(shards)):
            return f"shard {i} is not named {shard_name(i, len(shards))}"
        listed = entry.get("files")
        if not isinstance(listed, dict) or "meta.json" not in listed:
            return f"shard {entry['name']} lists no index files"
        for name, want in listed.items():
            if (not isinstance(name, str) or "/" in name or name in ("", ".", "..")
                    or not isinstance(want, dict) or type(want.get("bytes")) is not int
                    or not isinstance(want.get("sha256"), str)):
                return (f"shard {entry['name']}: file entry {name!r} is not a name with bytes "
                        "and SHA-256")
    return None


class Shard:
    """One shard opened for search: its files checked against index.json (and copied to a
    local folder first when the index is not local)."""

    def __init__(self, index_path: str, run: str, entry: dict):
        import tantivy

        self.name = entry["name"]
        folder = files.join(index_path, SHARDS, run, self.name)
        self._local = None
        if "://" in folder:
            self._local = tempfile.mkdtemp(prefix="wikisum-shard-")
            folder = self._copy(folder, entry)
        verify_shard(folder, entry, index_path)
        self.schema = schema()
        try:
            index = tantivy.Index.open(folder)
            index.reload()
        except (ValueError, OSError) as exc:
            raise BadIndex(f"{index_path}: shard {self.name} does not open ({exc}); rebuild "
                              "the index with `wikisum search-index`") from exc
        self.searcher = index.searcher()

    def _copy(self, folder: str, entry: dict) -> str:
        for name in entry["files"]:
            with files.open_read(files.join(folder, name)) as src, \
                    open(os.path.join(self._local, name), "wb") as dst:
                shutil.copyfileobj(src, dst, _CHUNK)
        return self._local

    def search(self, terms: list[str], k: int) -> list[Hit]:
        import tantivy

        distinct = list(dict.fromkeys(terms))
        if not distinct or self.searcher.num_docs == 0:
            return []
        query = tantivy.Query.boolean_query(
            [(tantivy.Occur.Should, tantivy.Query.term_query(self.schema, TERMS, t))
             for t in distinct])
        found = self.searcher.search(query, k).hits
        return [Hit(score, self.searcher.doc(address)[URL][0]) for score, address in found]

    def close(self) -> None:
        self.searcher = None
        if self._local is not None:
            shutil.rmtree(self._local, ignore_errors=True)


def verify_shard(folder: str, entry: dict, index_path: str) -> None:
    """Every file index.json records for the shard is there with its bytes and SHA-256.

    Raises:
        BadIndex: naming the shard, the file and what differs.
    """
    for name, want in sorted(entry["files"].items()):
        path = os.path.join(folder, name)
        problem = None
        if not os.path.isfile(path):
            problem = "is missing"
        else:
            size, digest = file_digest(path)
            if size != want.get("bytes"):
                problem = f"is {size} bytes where {RECORD} records {want.get('bytes')}"
            elif digest != want.get("sha256"):
                problem = f"differs from what {RECORD} records (SHA-256)"
        if problem:
            raise BadIndex(f"{index_path}: shard {entry['name']} is damaged: {name} {problem}; "
                              "rebuild the index with `wikisum search-index`")


def merge_hits(lists: Iterable[list[Hit]], k: int) -> list[Hit]:
    """The top ``k`` of several shards' hits: by score, then URL (so ties rank the same on every
    run); a URL found twice keeps its best score."""
    best: dict[str, float] = {}
    for hits in lists:
        for hit in hits:
            if hit.url not in best or hit.score > best[hit.url]:
                best[hit.url] = hit.score
    ranked = sorted(best.items(), key=lambda item: (-item[1], item[0]))
    return [Hit(score, url) for url, score in ranked[:k]]


class SearchIndex:
    """A finished index opened for search in this process: ``search(terms, k)`` asks every
    shard and merges their answers (:func:`merge_hits`)."""

    def __init__(self, path: str):
        self.path = path
        self.record = read_record(path)
        self.info = self.record["index"]
        self.analyzer = Analyzer(self.info["lang"])
        self.shards = [Shard(path, self.info["run"], entry) for entry in self.info["shards"]]

    def search(self, terms: list[str], k: int) -> list[Hit]:
        return merge_hits((shard.search(terms, k) for shard in self.shards), k)

    def close(self) -> None:
        for shard in self.shards:
            shard.close()
