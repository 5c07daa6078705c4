"""Streaming reader of MediaWiki XML dumps (pages-articles).

The dump is parsed incrementally with expat, a chunk at a time, and every finished ``<page>`` is
yielded and released, so memory stays flat whatever the dump's size; a page's text is kept only
up to ``max_text_bytes`` (a longer page comes with ``too_large`` and no text), so one huge page
cannot take the memory either. Expat takes the encoding from the byte-order mark or the XML
declaration, so UTF-16 dumps read as UTF-8 ones do. Decompression (bz2, gzip, xz) is the caller's:
Beam's ``FileSystems.open`` does it from the file extension.

Hostile markup is bounded as well, each a :class:`DumpError` that stops the file (the pages
before it are yielded):

- expat hands over a tag (its attributes), a comment or a processing instruction only whole, so
  it is fed :data:`FEED_BYTES` at a time and one that grows past :data:`MAX_MARKUP_BYTES`
  unparsed (``markup_too_large``) stops the file before it is held;
- elements nested deeper than :data:`MAX_DEPTH` (``too_deep``); the reader's state is a few
  depths, so each event costs the same at any depth;
- a DOCTYPE (``doctype``): dumps have none, and its entity declarations are the way to make a
  small file expand.

Only MediaWiki's elements count: those of an export namespace
(``http://www.mediawiki.org/xml/export-0.10/``, any version) or of none. An element of another
namespace is skipped with everything inside it, so it can neither start a page nor give one its
text.

The ``<siteinfo>`` before the pages names the wiki (``<dbname>``: ``jawiki``) and its namespaces
in the wiki's language; :class:`SiteInfo` keeps both, with the root's ``xml:lang``, and
:func:`read_siteinfo` reads them from the head of a dump without reading its pages.
:func:`dbname_language` maps a dbname to the wiki's language code.

A page's ``<ns>`` exists from export-0.6 on. In a page without one, the namespace is the one
whose name (from ``<siteinfo><namespaces>``) is the title's prefix before a colon, else 0; a
dump without that list has namespace 0 only when its root says an export version below 0.6
(its ``version`` attribute or its namespace URI). Anywhere else a missing ``<ns>`` is garbled.
"""

from __future__ import annotations

import lzma
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import BinaryIO
from xml.parsers import expat

CHUNK_BYTES = 1 << 20  # read from the stream at a time
FEED_BYTES = 64 << 10  # handed to expat at a time, and the markup limit checked
MAX_MARKUP_BYTES = 1 << 20  # one tag, comment or PI; a dump's longest is a <redirect> (~300 B)
DEFAULT_MAX_TEXT_BYTES = 8 * 1024 * 1024  # Wikipedia's largest articles are about 1.5 MB
FIELD_CHARS = 4096  # title, ns, id, namespace name: longer values are cut (never that long)
# A page's text comes in pieces (expat's 8 KB buffer, the feed's slices, or elements inside
# <text>), each an object of its own: a text in more than one piece per this many bytes of the
# limit (and at least 64) is cut up to take memory, and the page is too_large. Real pages
# come in about one piece per 8 KB.
BYTES_PER_PIECE = 256
MAX_DEPTH = 1000  # real dumps nest 5 deep (mediawiki/page/revision/contributor/username)
MAX_PAGE_ID = 2**63 - 1  # the ids are int64 in every table written
MEDIAWIKI_NAMESPACE = "http://www.mediawiki.org/xml/export-"  # then the version: 0.10/, 0.11/
FIRST_NS_VERSION = (0, 6)  # the export version that adds <ns> to every page
MAX_NAMESPACES = 1000  # names kept from <siteinfo>; a wiki has a few dozen
HEAD_BYTES = 1 << 20  # read_siteinfo reads at most this; a <siteinfo> is a few KB
_SEPARATOR = "\x01"  # expat's separator of namespace and local name: never in either
_XML_LANG = "http://www.w3.org/XML/1998/namespace" + _SEPARATOR + "lang"  # the root's xml:lang
_ID = re.compile(r"[0-9]+")  # ASCII digits only: int() also takes "1_0", " +1", "١"
_NS = re.compile(r"-?[0-9]+")
_VERSION = re.compile(r"([0-9]{1,9})\.([0-9]{1,9})")

# Why a page's id or namespace is unusable (the page is dropped with it as its reason).
BAD_ID = "bad_id"
BAD_NS = "bad_ns"


# Wikipedias whose dbname (less "wiki", "_" as "-") is not their language's code: Meta-Wiki's
# "Special language codes" (meta.wikimedia.org/wiki/Special_language_codes). "simple" is English;
# "als" is ISO 639-3 Tosk Albanian but the wiki is Alemannic (gsw); "zh-min-nan" is Min Nan in
# Latin script, not a variety of Chinese here. zh_yuewiki -> "zh-yue" (BCP 47's extended form
# of "yue") and nowiki -> "no" (Norwegian; its content language is Bokmål, "nb") follow the
# general rule: the primary subtag then names the script's segmenter and function words
# (Chinese) and the identifier's class ("no"), and the code is the wiki's host name.
_DBNAME_LANGUAGES = {
    "simple": "en",
    "be_x_old": "be-tarask",
    "als": "gsw",
    "bat_smg": "sgs",
    "fiu_vro": "vro",
    "roa_rup": "rup",
    "zh_classical": "lzh",
    "zh_min_nan": "nan",
}
# The dbname suffixes of Wikimedia's language editions: Wikipedia's, then its sister projects'.
_PROJECT_SUFFIXES = ("wiki", "wiktionary", "wikibooks", "wikinews", "wikiquote", "wikisource",
                     "wikiversity", "wikivoyage")
# What a language code looks like: a 2-3 letter primary subtag, then subtags ("be-tarask",
# "zh-min-nan"). Multilingual wikis' dbnames (commonswiki, metawiki, wikidatawiki,
# specieswiki) are not language codes and give no language.
_LANGUAGE_CODE = re.compile(r"[a-z]{2,3}(?:-[a-z0-9]{1,8})*")


def dbname_language(dbname: str | None) -> str | None:
    """The language code of a wiki from its dbname: ``jawiki`` -> "ja", ``zh_yuewiki`` ->
    "zh-yue", ``simplewiki`` -> "en", ``be_x_oldwiki`` -> "be-tarask"; None for a dbname that
    names no language edition (``commonswiki``, ``wikidatawiki``, "")."""
    name = (dbname or "").strip().lower()
    for suffix in _PROJECT_SUFFIXES:
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[:-len(suffix)]
            break
    else:
        return None
    code = _DBNAME_LANGUAGES.get(name, name.replace("_", "-"))
    return code if _LANGUAGE_CODE.fullmatch(code) else None


@dataclass(frozen=True)
class SiteInfo:
    """What a dump says of its wiki before the pages: ``<siteinfo>``'s ``<dbname>`` and
    namespace names (key, name; in the wiki's language: ``(14, "Категорія")``), and the root
    element's ``xml:lang`` (MediaWiki writes the wiki's content language there)."""

    dbname: str | None = None
    namespaces: tuple[tuple[int, str], ...] = ()
    xml_lang: str | None = None

    @property
    def language(self) -> str | None:
        """The wiki's language code: from the dbname (:func:`dbname_language`), else from
        ``xml:lang``; None when neither gives one."""
        found = dbname_language(self.dbname)
        if found is None and self.xml_lang:
            code = self.xml_lang.strip().lower().replace("_", "-")
            found = code if _LANGUAGE_CODE.fullmatch(code) else None
        return found

    def names(self, key: int) -> tuple[str, ...]:
        """The names the dump lists for namespace ``key``."""
        return tuple(name for number, name in self.namespaces if number == key)


@dataclass(frozen=True)
class RawPage:
    """One ``<page>`` of a dump, before any wikitext parsing."""

    page_id: int  # -1 when the <id> is unusable (``problem`` says so)
    title: str
    ns: int  # -1 when the <ns> is unusable; without one (before export-0.6), from the title
    redirect: str | None  # the <redirect title=...> element's target, if any
    text: str
    position: int  # 0-based index of the page in its file
    too_large: bool = False  # the text was over the limit: not kept
    problem: str = ""  # BAD_ID or BAD_NS: the page is never an article
    detail: str = ""  # what is wrong with the value, which is cut to 100 characters


class DumpError(ValueError):
    """The dump stopped being readable; ``pages_read`` pages came before the error, ``reason``
    says why (``corrupt_file``, or the limit crossed: ``too_deep``, ``markup_too_large``,
    ``doctype``)."""

    def __init__(self, message: str, pages_read: int, reason: str = "corrupt_file"):
        super().__init__(message)
        self.pages_read = pages_read
        self.reason = reason


class _Refused(Exception):
    """Raised from an expat callback to stop the parse at a limit."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason


def _mediawiki(name: str) -> str | None:
    """The local name of a MediaWiki element (export namespace or none), else None."""
    uri, sep, local = name.rpartition(_SEPARATOR)
    if not sep or uri.startswith(MEDIAWIKI_NAMESPACE):
        return local
    return None


class _PageCollector:
    """Expat callbacks that build one page at a time, its text bounded.

    The state is depths, not the element path, so that every event costs O(1): ``depth`` of the
    current element, and the depth of the open ``<page>``, of its ``<revision>``, of the field
    whose characters are being kept, of a foreign element being skipped, and of the open
    ``<siteinfo>`` and its ``<namespaces>`` (0: none).
    """

    def __init__(self, max_text_bytes: int):
        self.max_text_bytes = max_text_bytes
        self.max_pieces = max(64, max_text_bytes // BYTES_PER_PIECE)
        self.pages: list[RawPage] = []
        self.position = 0
        self.depth = 0
        self.page = self.revision = self.skip = 0
        self.field: str | None = None
        self.field_depth = 0
        self.siteinfo = self.namespaces = 0
        # The root's export versions (attribute, namespace URI); None for an unreadable one.
        self.versions: list[tuple[int, int] | None] = []
        # <siteinfo> namespace name -> its key (None: garbled or given two keys), when listed.
        self.namespace_keys: dict[str, int | None] | None = None
        self.too_many_namespaces = False
        self.namespace_key: str | None = None
        self.dbname: str | None = None
        self.xml_lang: str | None = None
        # Called with the SiteInfo when </siteinfo> closes.
        self.on_siteinfo: Callable[[SiteInfo], None] | None = None
        self._reset()

    def _reset(self) -> None:
        # title, ns, id (outside a page: a <siteinfo> namespace name) -> parts of its first element
        self.fields: dict[str, list[str]] = {}
        self.field_chars: dict[str, int] = {}
        self.field_count: dict[str, int] = {}  # elements of each: a second id or ns is garbled
        self.cut: set[str] = set()  # fields longer than FIELD_CHARS
        self.redirect: str | None = None
        self.text: list[str] = []
        self.text_bytes = 0
        self.too_large = False

    def start(self, name: str, attrs: dict) -> None:
        self.depth += 1
        depth = self.depth
        if depth > MAX_DEPTH:
            raise _Refused(f"elements nested deeper than {MAX_DEPTH}", "too_deep")
        if self.skip:
            return
        local = _mediawiki(name)
        if local is None:
            self.skip = depth  # a foreign element: skipped with all it holds
            return
        if not self.page:
            if local == "page":
                self.page = depth
                self._reset()
            elif depth == 1:
                self._root(name, attrs)
            elif depth == 2 and local == "siteinfo":
                self.siteinfo = depth
            elif self.siteinfo and depth == self.siteinfo + 1 and local == "dbname":
                self.field, self.field_depth = "dbname", depth
                self.fields["dbname"], self.field_chars["dbname"] = [], 0
            elif self.siteinfo and depth == self.siteinfo + 1 and local == "namespaces":
                self.namespaces = depth
                if self.namespace_keys is None:
                    self.namespace_keys = {}
            elif self.namespaces and depth == self.namespaces + 1 and local == "namespace":
                self.field, self.field_depth = "namespace", depth
                self.fields["namespace"], self.field_chars["namespace"] = [], 0
                self.cut.discard("namespace")
                self.namespace_key = attrs.get("key")
            return
        if depth == self.page + 1:
            if local in ("title", "ns", "id"):
                count = self.field_count[local] = self.field_count.get(local, 0) + 1
                if count == 1:
                    self.field, self.field_depth = local, depth
                    self.fields[local], self.field_chars[local] = [], 0
            elif local == "redirect":
                self.redirect = attrs.get("title") or ""
            elif local == "revision":
                self.revision = depth
        elif self.revision and depth == self.revision + 1 and local == "text":
            # pages-articles holds one revision; with several (a history dump), keep the last.
            self.field, self.field_depth = "text", depth
            self.text, self.text_bytes, self.too_large = [], 0, False

    def end(self, name: str) -> None:
        depth = self.depth
        self.depth -= 1
        if self.skip:
            if depth == self.skip:
                self.skip = 0
            return
        if depth == self.field_depth:
            if self.field == "namespace":
                self._add_namespace()
            elif self.field == "dbname":
                self.dbname = "".join(self.fields.pop("dbname", [])).strip() or None
            self.field, self.field_depth = None, 0
        elif depth == self.namespaces:
            self.namespaces = 0
        elif depth == self.siteinfo:
            self.siteinfo = 0
            if self.on_siteinfo is not None:
                self.on_siteinfo(self.site())
        elif depth == self.revision:
            self.revision = 0
        elif depth == self.page:
            self.page = 0
            self.pages.append(self._finish())
            self.position += 1
            self._reset()

    def chars(self, data: str) -> None:
        field = self.field
        if field is None or self.depth != self.field_depth:
            return
        if field == "text":
            if self.too_large:
                return
            self.text_bytes += len(data.encode("utf-8"))
            if self.text_bytes > self.max_text_bytes or len(self.text) >= self.max_pieces:
                self.too_large, self.text = True, []
            else:
                self.text.append(data)
            return
        room = FIELD_CHARS - self.field_chars[field]
        if len(data) > room:
            self.cut.add(field)
            data = data[:room]
        if data:
            self.fields[field].append(data)
            self.field_chars[field] += len(data)

    def _root(self, name: str, attrs: dict) -> None:
        """Note the export versions the root element states."""
        uri, sep, _ = name.rpartition(_SEPARATOR)
        self.xml_lang = attrs.get(_XML_LANG)
        stated = [attrs["version"]] if "version" in attrs else []
        if sep and uri.startswith(MEDIAWIKI_NAMESPACE):
            stated.append(uri[len(MEDIAWIKI_NAMESPACE):].rstrip("/"))
        for text in stated:
            match = _VERSION.fullmatch(text.strip())
            self.versions.append((int(match[1]), int(match[2])) if match else None)

    def site(self) -> SiteInfo:
        """What the dump has said of its wiki so far."""
        keys = self.namespace_keys or {}
        return SiteInfo(self.dbname, tuple((key, name) for name, key in keys.items()
                                           if key is not None), self.xml_lang)

    def _add_namespace(self) -> None:
        """Record a ``<siteinfo>`` namespace's name and key (the main namespace has no name)."""
        keys = self.namespace_keys
        name = "".join(self.fields.pop("namespace", [])).strip()
        if keys is None or not name or "namespace" in self.cut:
            return  # a name over FIELD_CHARS cannot prefix a title, which is cut there too
        key = self.namespace_key.strip() if self.namespace_key is not None else ""
        number = int(key) if _NS.fullmatch(key) else None
        if name in keys:
            if keys[name] != number:
                keys[name] = None  # two keys for one name: neither is trusted
        elif len(keys) < MAX_NAMESPACES:
            keys[name] = number
        else:
            self.too_many_namespaces = True

    def _namespace_from_title(self, title: str) -> tuple[int, str | None]:
        """The namespace of a page without ``<ns>``, or -1 and why there is none."""
        if self.versions and not all(v is not None and v < FIRST_NS_VERSION
                                     for v in self.versions):
            return -1, "missing (the export version has one in every page)"
        keys = self.namespace_keys
        if keys is None:
            if self.versions:  # all below 0.6, without a namespace list
                return 0, None
            return -1, "missing (and neither an export version nor a namespace list)"
        if self.too_many_namespaces:
            return -1, f"missing (and over {MAX_NAMESPACES} namespaces listed)"
        prefix, colon, _ = title.partition(":")  # a namespace's name holds no colon
        if not colon or prefix not in keys:
            return 0, None
        number = keys[prefix]
        if number is None:
            return -1, f"missing (and the listed key of namespace {prefix[:100]!r} is garbled)"
        return number, None

    def _finish(self) -> RawPage:
        values = {k: "".join(v) for k, v in self.fields.items()}
        page_id, id_problem = _checked(values.get("id"), self.field_count.get("id", 0),
                                       "id" in self.cut, _ID, MAX_PAGE_ID)
        if "ns" in self.field_count:
            ns, ns_problem = _checked(values.get("ns"), self.field_count["ns"],
                                      "ns" in self.cut, _NS, None)
        else:
            ns, ns_problem = self._namespace_from_title(values.get("title", ""))
        problem, detail = ((BAD_ID, f"<id> {id_problem}") if id_problem is not None
                           else (BAD_NS, f"<ns> {ns_problem}") if ns_problem is not None
                           else ("", ""))
        return RawPage(page_id, values.get("title", ""), ns, self.redirect, "".join(self.text),
                       self.position, self.too_large, problem, detail)


def _checked(value: str | None, elements: int, cut: bool, pattern: re.Pattern,
             most: int | None) -> tuple[int, str | None]:
    """An integer field's value, or -1 and what is wrong with it: missing, given twice, cut,
    not a plain decimal integer, or over ``most``."""
    if value is None:
        return -1, "missing"
    if elements > 1:
        return -1, f"given {elements} times"
    text = value.strip()
    if cut or not pattern.fullmatch(text):
        return -1, repr(text[:100])
    number = int(text)
    if most is not None and number > most:
        return -1, f"{text[:100]} is over {most}"
    return number, None


def _no_doctype(*_) -> None:
    raise _Refused("a DOCTYPE declaration (dumps have none)", "doctype")


def _parser(pages: _PageCollector):
    parser = expat.ParserCreate(namespace_separator=_SEPARATOR)
    parser.buffer_text = True
    parser.StartElementHandler = pages.start
    parser.EndElementHandler = pages.end
    parser.CharacterDataHandler = pages.chars
    parser.StartDoctypeDeclHandler = _no_doctype
    if hasattr(parser, "SetReparseDeferralEnabled"):
        # expat >= 2.6 would wait for a partial token to double before parsing it again, without
        # an event position meanwhile; the feeds are small, so parse every one.
        parser.SetReparseDeferralEnabled(False)
    return parser


def read_siteinfo(stream: BinaryIO, max_bytes: int = HEAD_BYTES) -> SiteInfo | None:
    """The :class:`SiteInfo` of a dump, read from its head: up to the end of ``<siteinfo>``,
    the first ``<page>`` or ``max_bytes``, whichever comes first. None when the head holds
    neither a ``<siteinfo>`` nor an ``xml:lang`` (or is not a dump); never raises for what
    the stream holds."""
    pages = _PageCollector(0)
    found: list[SiteInfo] = []
    pages.on_siteinfo = found.append
    parser = _parser(pages)
    read = 0
    try:
        while read < max_bytes and not found and not pages.page and not pages.position:
            chunk = stream.read(min(FEED_BYTES, max_bytes - read))
            if not chunk:
                break
            read += len(chunk)
            parser.Parse(chunk, False)
    except (_Refused, expat.ExpatError, EOFError, OSError, ValueError, lzma.LZMAError,
            zlib.error):
        pass  # what was read before the error still counts
    if found:
        return found[0]
    return pages.site() if pages.xml_lang or pages.dbname else None


def iter_pages(stream: BinaryIO, max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES,
               on_siteinfo: Callable[[SiteInfo], None] | None = None) -> Iterator[RawPage]:
    """Yield every page of a dump in file order.

    Args:
        stream: the (decompressed) dump.
        max_text_bytes: a page whose wikitext is longer (in UTF-8 bytes) comes with
            ``too_large`` set and no text; memory is bounded by this, not by the page.
        on_siteinfo: called with the dump's :class:`SiteInfo` when its ``<siteinfo>`` ends
            (before any page is yielded); never for a dump without one.

    Raises:
        DumpError: at the first point where the XML is malformed, the file ends early or a
            limit is crossed; pages before it have been yielded.
    """
    pages = _PageCollector(max_text_bytes)
    pages.on_siteinfo = on_siteinfo
    parser = _parser(pages)
    fed = parsed = 0  # bytes handed to expat; where its unparsed rest starts
    try:
        while True:
            chunk = stream.read(CHUNK_BYTES)
            view = memoryview(chunk)
            for at in range(0, len(chunk), FEED_BYTES):
                piece = view[at:at + FEED_BYTES]
                parser.Parse(piece, False)
                fed += len(piece)
                # What expat holds unparsed is the token whose end it has not seen: character
                # data is handed over as it comes, so only markup can grow this. The index is
                # -1 while expat has no event position (after it moved its buffer, before it
                # parsed again); the unparsed rest then starts where it last did.
                index = parser.CurrentByteIndex
                if index >= 0:
                    parsed = index
                if fed - parsed > MAX_MARKUP_BYTES:
                    raise _Refused(f"a tag, comment or processing instruction over "
                                   f"{MAX_MARKUP_BYTES} bytes at byte {parsed}",
                                   "markup_too_large")
            if not chunk:
                parser.Parse(b"", True)
            yield from pages.pages
            pages.pages.clear()
            if not chunk:
                return
    except _Refused as exc:
        yield from pages.pages  # the pages finished before the limit
        raise DumpError(f"{exc} after {pages.position} pages", pages.position,
                        exc.reason) from None
    except expat.ExpatError as exc:
        yield from pages.pages  # the pages finished before the error
        raise DumpError(f"malformed XML after {pages.position} pages: {exc}",
                        pages.position) from exc
    except EOFError as exc:  # a compressed stream that ends early
        raise DumpError(f"unexpected end of file after {pages.position} pages: {exc}",
                        pages.position) from exc
    except (OSError, lzma.LZMAError, zlib.error) as exc:  # corrupt compressed data
        raise DumpError(f"unreadable data after {pages.position} pages: {exc}",
                        pages.position) from exc
