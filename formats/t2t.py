"""tensor2tensor's released WikiSum support files (``gs://tensor2tensor-data/wikisum/``), read
without TensorFlow, exactly as tensor2tensor's own code reads them (file paths below are in
github.com/tensorflow/tensor2tensor, ``tensor2tensor/data_generators/wikisum/``).

``wiki_content/wiki_content.tfrecords-NNNNN-of-01000``
    TFRecords of ``tf.train.Example`` with bytes features ``url`` and ``title`` (one value
    each) and the parallel lists ``section_titles`` / ``section_texts``; section 0 is the lead,
    and its title is never used (``wikisum.py``: ``_wiki_articles``, ``_encode_wiki_sections``).
    Shards are by a hash of the article's title (``README.md``). -> :func:`iter_wiki_content`.

``wiki_urls/wiki_urls.json-NNNNN-of-01000``
    One JSON object per shard, ``{wiki_url: {"refs": [ref_url, ...]}}``; ``"refs"`` is the only
    key tensor2tensor reads (``wikisum.py``: ``_wiki_urls_for_shard``, ``produce_examples``;
    ``get_references_web_single_group.py``: ``get_urls_per_shard``). Nothing tells an
    article's citations from its search results: ``README.md`` says the inputs are the cited
    references and the top 10 search results for the title, about 40 URLs an article, and
    these lists are the only URLs any of the code reads. -> :func:`iter_wiki_urls`.

``commoncrawl_metadata/<WET file name>.metadata.json``
    Per WET file of the CC-MAIN-2017-39 crawl, ``{ref_url: [shard_id, ...]}``: the URLs of
    that file that some article lists, and the shards (of wiki_urls / wiki_content, 0-999)
    holding those articles (``wikisum.py``: ``extract_references_from_wets``). The file name
    is the WET file's base name plus ``.metadata.json``; the WET file's path in the crawl has a
    segment folder that the name does not give, so it comes from the crawl's ``wet.paths.gz``
    listing. -> :func:`plan`.

URLs are joined as tensor2tensor joins them: exact strings. A WET record's
``WARC-Target-URI`` is looked up in the metadata as is (``extract_references_from_wets``), and
an article's ``refs`` are looked up in the fetched contents as is (``produce_examples``).
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import BinaryIO, NamedTuple

from wikisum.formats.jsonstream import ObjectMembers
from wikisum.formats.tfexample import ExampleError, parse_example
from wikisum.formats.tfrecord import MAX_RECORD_BYTES, BadRecord, decompressed, iter_records

SUPPORT_DIR = "gs://tensor2tensor-data/wikisum"
WIKI_CONTENT_FILE = "wiki_content.tfrecords-%05d-of-01000"
WIKI_URLS_FILE = "wiki_urls.json-%05d-of-01000"
METADATA_SUFFIX = ".metadata.json"  # utils.py: METADTA_SUFFIX (sic)
NUM_SHARDS = 1000  # utils.py: NUM_SHARDS
CRAWL = "CC-MAIN-2017-39"  # utils.py: WET_PATHS_BY_DATE["0917"]
WET_PATHS = f"crawl-data/{CRAWL}/wet.paths.gz"  # the listing of the crawl's WET file paths
# tensor2tensor keeps no heading levels: every section is a top-level `== heading ==`
# (wikisum.py: _format_title writes " == %s == " for each).
SECTION_LEVEL = 2
MAX_WIKI_URLS_ENTRY_BYTES = 4 * 1024 * 1024  # one article's entry in a wiki_urls shard
MAX_METADATA_BYTES = 64 * 1024 * 1024  # one commoncrawl_metadata file, read whole

_SHARDED_NAME = re.compile(r"-(\d{5})-of-(\d{5})$")


@dataclass(frozen=True)
class Problem:
    """Something in a support file that was not read: the file, where (a byte offset, or -1
    for the whole file), why (a short reason, to count), what, and the URL concerned if any.
    ``count`` is how many items it stands for (URLs dropped from one article's list)."""

    source: str
    offset: int
    reason: str
    detail: str
    key: str = ""
    count: int = 1


# -- shards and splits -------------------------------------------------------------------------


def shard_id_of(file_name: str) -> int:
    """The shard id in a name ending ``-NNNNN-of-NNNNN`` (``wiki_content.tfrecords-00042-of-01000``
    -> 42), as ``wikisum.py``'s ``_shard_id_for_file`` reads it."""
    match = _SHARDED_NAME.search(file_name)
    if match is None:
        raise ValueError(f"{file_name!r} does not end in -NNNNN-of-NNNNN")
    return int(match.group(1))


def split_of_shard(shard_id: int) -> str:
    """The split (train / dev / test) tensor2tensor puts a shard's articles in: dev for shards
    0-99, test for 100-199, train for 200-999, so 80/10/10 by a hash of the title.

    ``WikisumBase.out_filepaths`` (``wikisum.py``) lists 800 train, 100 dev and 100 test output
    files and sorts them, which orders them dev, test, train; ``produce_examples.py`` hands task
    ``k`` input shard ``k`` and output file ``k`` (``utils.shard`` of both lists over the 1,000
    tasks the README launches). With fewer tasks a task's examples are dealt round-robin over
    its files, which can mix splits. (``validate_data.py``'s ``filename_to_task_id`` assumes
    the unsorted order train, dev, test, which contradicts this.)
    """
    if not 0 <= shard_id < NUM_SHARDS:
        raise ValueError(f"shard id {shard_id} is not in 0..{NUM_SHARDS - 1}")
    return "dev" if shard_id < 100 else "test" if shard_id < 200 else "train"


# -- wiki_content ------------------------------------------------------------------------------


def _texts(features: Mapping[str, list], name: str) -> list[str]:
    """A bytes feature's values decoded as UTF-8, strictly: tensor2tensor decodes them with
    ``text_encoder.to_unicode`` (``.decode("utf-8")``, errors raised), so a byte that is not
    UTF-8 is an error here too, never silently replaced."""
    if name not in features:
        raise ValueError(f"missing feature {name!r}")
    values = features[name]
    if not all(isinstance(v, (bytes, bytearray)) for v in values):
        raise ValueError(f"feature {name!r} holds numbers, not a bytes list")
    out = []
    for i, value in enumerate(values):
        try:
            out.append(bytes(value).decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise UnicodeDecodeError(exc.encoding, exc.object, exc.start, exc.end,
                                     f"{exc.reason} (feature {name!r}, value {i})") from None
    return out


def _one_text(features: Mapping[str, list], name: str) -> str:
    values = _texts(features, name)
    if len(values) != 1:
        # tensor2tensor takes the first value; more than one would mean a different format.
        raise ValueError(f"feature {name!r} has {len(values)} values, not 1")
    return values[0]


def wiki_content_article(features: Mapping[str, list]) -> dict:
    """The article of a parsed wiki_content Example (:func:`wikisum.formats.tfexample.
    parse_example`): ``{"url", "title", "lead", "sections": [{"title", "level", "text"}]}``.

    The lead is section 0's text (its title is unused, as in tensor2tensor); the other
    sections keep their order, each at level :data:`SECTION_LEVEL`. An article with no
    sections has an empty lead: the format allows it, and tensor2tensor drops it later for a
    short lead (``produce_examples``), so the caller decides.

    Raises:
        UnicodeDecodeError: a value is not UTF-8 (a ValueError, naming the feature).
        ValueError: a feature is missing, holds numbers, ``url`` or ``title`` does not hold
            exactly one value, or the section lists differ in length (tensor2tensor's ``zip``
            would silently drop the extra ones).
    """
    url = _one_text(features, "url")
    title = _one_text(features, "title")
    titles = _texts(features, "section_titles")
    texts = _texts(features, "section_texts")
    if len(titles) != len(texts):
        raise ValueError(f"{len(titles)} section titles but {len(texts)} section texts")
    return {
        "url": url,
        "title": title,
        "lead": texts[0] if texts else "",
        "sections": [{"title": t, "level": SECTION_LEVEL, "text": x}
                     for t, x in zip(titles[1:], texts[1:], strict=True)],
    }


@dataclass(frozen=True)
class ContentArticle:
    """An article read from a wiki_content shard, with the file and record offset it came
    from."""

    source: str
    offset: int
    article: dict


def iter_wiki_content(stream: BinaryIO, source: str, *,
                      max_record_bytes: int = MAX_RECORD_BYTES
                      ) -> Iterator[ContentArticle | Problem]:
    """The articles of one wiki_content shard, in file order, or a :class:`Problem` for each
    record that could not be read (a TFRecord reason from :mod:`wikisum.formats.tfrecord`,
    ``bad_example``, ``bad_encoding`` or ``bad_article``); never raises on bad input.

    Args:
        stream: the open shard, a binary file (GZIP-compressed or not).
        source: its name, for the problems.
        max_record_bytes: the longest record read.
    """
    for item in iter_records(decompressed(stream), max_record_bytes=max_record_bytes,
                             source=source):
        if isinstance(item, BadRecord):
            yield Problem(source, item.offset, item.reason, item.detail)
            continue
        try:
            article = wiki_content_article(parse_example(item.data))
        except ExampleError as exc:
            yield Problem(source, item.offset, "bad_example", str(exc))
        except UnicodeDecodeError as exc:
            yield Problem(source, item.offset, "bad_encoding", str(exc))
        except ValueError as exc:
            yield Problem(source, item.offset, "bad_article", str(exc))
        else:
            yield ContentArticle(source, item.offset, article)


# -- wiki_urls ---------------------------------------------------------------------------------


class WikiRefs(NamedTuple):
    """One article's entry in a wiki_urls shard: its Wikipedia URL and its ``refs``, in order
    (string URLs only)."""

    wiki_url: str
    refs: list[str]


def iter_wiki_urls(stream: BinaryIO, source: str, *,
                   max_bytes: int = MAX_WIKI_URLS_ENTRY_BYTES) -> Iterator[WikiRefs | Problem]:
    """The entries of one wiki_urls shard, in file order, each a :class:`WikiRefs`, or a
    :class:`Problem`; never raises on bad input.

    A shard is one JSON object of some 90,000 articles (several MB), which tensor2tensor reads
    whole with ``json.loads``. Here it is streamed
    (:class:`wikisum.formats.jsonstream.ObjectMembers`): one entry at a time is parsed, so
    memory holds one entry, at most ``max_bytes`` of JSON text (characters: bytes for the ASCII
    that ``json.dumps`` writes); a longer entry is skipped without being held (``too_large``).

    Problems (``reason``), each for one entry: ``no_refs`` (the entry is not an object with
    ``"refs"``), ``refs_not_a_list``, ``ref_not_a_string`` (those URLs dropped, the entry
    kept; ``count`` of them), ``duplicate_wiki_url`` (the later entry dropped, where
    ``json.loads`` would keep the later one), ``too_large``, ``bad_json`` (an entry that is not
    JSON; its neighbours are still read); and, ending the shard, ``not_an_object``,
    ``bad_json`` (the object's own syntax, or a file cut short) and ``bad_encoding``. Keys other
    than ``"refs"`` are ignored, as tensor2tensor ignores them.
    """
    seen: set[str] = set()
    for event in ObjectMembers(stream, max_bytes).events():
        if event[0] == "error":
            _, offset, reason, detail = event
            yield Problem(source, offset, reason, detail)
            continue
        if event[0] == "too_large":
            _, offset, key, chars = event
            yield Problem(source, offset, "too_large",
                          f"entry longer than {max_bytes} characters ({chars} read)", key)
            continue
        if event[0] == "bad_member":
            _, offset, key, detail = event
            yield Problem(source, offset, "bad_json", f"entry skipped: {detail}", key)
            continue
        _, offset, wiki_url, entry = event
        if wiki_url in seen:
            yield Problem(source, offset, "duplicate_wiki_url", "a second entry for this URL",
                          wiki_url)
            continue
        seen.add(wiki_url)
        if not isinstance(entry, dict) or "refs" not in entry:
            yield Problem(source, offset, "no_refs", f"entry is {_shape(entry)}", wiki_url)
            continue
        refs = entry["refs"]
        if not isinstance(refs, list):
            yield Problem(source, offset, "refs_not_a_list", f"refs is {_shape(refs)}",
                          wiki_url)
            continue
        good = [r for r in refs if isinstance(r, str)]
        if len(good) < len(refs):
            yield Problem(source, offset, "ref_not_a_string",
                          f"{len(refs) - len(good)} of {len(refs)} refs are not strings",
                          wiki_url, len(refs) - len(good))
        yield WikiRefs(wiki_url, good)


def _shape(value: object) -> str:
    if isinstance(value, dict):
        return f"an object with keys {sorted(value)[:10]}"
    return f"a {type(value).__name__}"


# -- commoncrawl_metadata ------------------------------------------------------------------------


def wet_name_of(metadata_file_name: str) -> str:
    """The WET file's base name of a metadata file (its name without ``.metadata.json``): the
    inverse of ``os.path.basename(wet_file) + METADTA_SUFFIX`` in ``wikisum.py``'s
    ``extract_references_from_wets``. ``CC-MAIN-...-00000.warc.wet.gz.metadata.json`` ->
    ``CC-MAIN-...-00000.warc.wet.gz``."""
    name = posixpath.basename(metadata_file_name.rstrip("/"))
    if not name.endswith(METADATA_SUFFIX) or name == METADATA_SUFFIX:
        raise ValueError(f"{metadata_file_name!r} is not named <WET file>{METADATA_SUFFIX}")
    return name[:-len(METADATA_SUFFIX)]


def wet_paths_by_name(lines: Iterable[str | bytes]) -> dict[str, str]:
    """WET base name -> path in the crawl (``crawl-data/CC-MAIN-2017-39/segments/<segment>/
    wet/<name>``), from the lines of the crawl's ``wet.paths.gz`` (decompressed). The segment
    folder is not part of a WET file's name, so this listing is the only way from a metadata
    file to its WET file; tensor2tensor downloads ``https://commoncrawl.s3.amazonaws.com/`` +
    each line (``utils.py``: ``wet_download_urls``).

    Raises:
        ValueError: two paths share a base name.
    """
    paths: dict[str, str] = {}
    for line in lines:
        path = (line.decode("utf-8") if isinstance(line, bytes) else line).strip()
        if not path:
            continue
        name = posixpath.basename(path)
        if paths.setdefault(name, path) != path:
            raise ValueError(f"two WET paths named {name!r}: {paths[name]!r} and {path!r}")
    return paths


def wet_path_of(metadata_file_name: str, wet_paths: Mapping[str, str]) -> str:
    """The crawl path of the WET file a metadata file describes, given
    :func:`wet_paths_by_name` of the crawl's listing.

    Raises:
        KeyError: the WET file is not in the listing (a different crawl's listing?).
    """
    name = wet_name_of(metadata_file_name)
    try:
        return wet_paths[name]
    except KeyError:
        raise KeyError(f"{name!r} is not in the WET paths listing ({CRAWL}'s is needed)") \
            from None


@dataclass(frozen=True)
class PlanRow:
    """A WET file worth reading: its name and crawl path ("" when no listing was given or the
    listing lacks it), the metadata file that named it, how many wanted URLs it holds, and how
    many URLs (with at least one shard) its metadata lists in all."""

    wet_name: str
    wet_path: str
    metadata: str
    wanted: int
    total: int


@dataclass(frozen=True)
class Plan:
    """Which WET files hold the wanted URLs (rows sorted by WET name, only those holding one or
    more), which wanted URLs no metadata file lists (sorted), and what could not be read."""

    rows: tuple[PlanRow, ...]
    not_found: tuple[str, ...]
    problems: tuple[Problem, ...]


def read_metadata(stream: BinaryIO, source: str, *, max_bytes: int = MAX_METADATA_BYTES
                  ) -> tuple[dict[str, list[int]], list[Problem]]:
    """One metadata file: {ref URL: shard ids} with only well-formed entries (a list of shard
    ids in 0..999; an empty list is kept: tensor2tensor skips the URL, ``if not shard_ids``),
    and the problems: ``too_large`` / ``bad_encoding`` / ``bad_json`` / ``not_an_object`` for
    the whole file (offset -1), ``bad_shard_ids`` per entry."""
    data = stream.read(max_bytes + 1)
    if len(data) > max_bytes:
        return {}, [Problem(source, -1, "too_large", f"longer than {max_bytes} bytes")]
    try:
        obj = json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return {}, [Problem(source, -1, "bad_encoding", str(exc))]
    except json.JSONDecodeError as exc:
        return {}, [Problem(source, -1, "bad_json", str(exc))]
    if not isinstance(obj, dict):
        return {}, [Problem(source, -1, "not_an_object", f"the file holds {_shape(obj)}")]
    entries, problems = {}, []
    for url, shard_ids in obj.items():
        if isinstance(shard_ids, list) and all(
                isinstance(s, int) and not isinstance(s, bool) and 0 <= s < NUM_SHARDS
                for s in shard_ids):
            entries[url] = shard_ids
        else:
            problems.append(Problem(source, -1, "bad_shard_ids",
                                    f"shard ids are {str(shard_ids)[:200]}", url))
    return entries, problems


def plan(metadata: Iterable[str | tuple[str, BinaryIO]],
         wanted_urls: set[str] | None = None, shard_ids: set[int] | None = None, *,
         wet_paths: Mapping[str, str] | None = None,
         key: Callable[[str], str | None] | None = None,
         max_bytes: int = MAX_METADATA_BYTES) -> Plan:
    """Which WET files of the crawl to read to get the wanted URLs, from the metadata files.

    A URL of a metadata file is wanted when it is in ``wanted_urls`` (every URL when None) and
    one of its shard ids is in ``shard_ids`` (any when None); ``not_found`` are the wanted
    URLs wanted in no file. tensor2tensor matches exact strings; ``key`` (for instance
    ``wikisum.pipeline.urls.normalize_url``) is applied to both sides instead when given, a URL
    it maps to None matching nothing.

    Args:
        metadata: metadata files, each a path or URL (opened through :mod:`wikisum.core.files`)
            or a (file name, open binary stream) pair.
        wanted_urls: the URLs to find, e.g. the ``refs`` of the wiki_urls shards to build.
        shard_ids: the wiki_urls / wiki_content shards to build.
        wet_paths: :func:`wet_paths_by_name` of the crawl's listing, to fill ``wet_path``.
        key: the matching key of a URL.
        max_bytes: the largest metadata file read.
    """
    wanted = None
    if wanted_urls is not None:
        wanted = {k for k in map(key, wanted_urls) if k is not None} if key else set(wanted_urls)
    found: set[str] = set()
    rows, problems = [], []
    for item in metadata:
        name, stream = (item, None) if isinstance(item, str) else item
        try:
            wet_name = wet_name_of(name)
        except ValueError as exc:
            problems.append(Problem(name, -1, "bad_name", str(exc)))
            continue
        if stream is None:
            from wikisum.core import files

            with files.open_read(name) as f:
                entries, bad = read_metadata(f, name, max_bytes=max_bytes)
        else:
            entries, bad = read_metadata(stream, name, max_bytes=max_bytes)
        problems.extend(bad)
        total = hits = 0
        for url, shards in entries.items():
            if not shards:
                continue
            total += 1
            k = key(url) if key else url
            if k is None or (wanted is not None and k not in wanted):
                continue
            if shard_ids is not None and shard_ids.isdisjoint(shards):
                continue
            hits += 1
            found.add(k)
        wet_path = ""
        if wet_paths is not None:
            wet_path = wet_paths.get(wet_name, "")
            if not wet_path:
                problems.append(Problem(name, -1, "not_in_listing",
                                        f"{wet_name!r} is not in the WET paths listing"))
        if hits:
            rows.append(PlanRow(wet_name, wet_path, name, hits, total))
    rows.sort(key=lambda r: r.wet_name)
    not_found = tuple(sorted(wanted - found)) if wanted is not None else ()
    return Plan(tuple(rows), not_found, tuple(problems))
