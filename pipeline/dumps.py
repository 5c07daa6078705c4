"""Streaming reader of MediaWiki XML dumps (pages-articles).

The dump is parsed incrementally with expat, a chunk at a time, and every finished ``<page>`` is
yielded and released, so memory stays flat whatever the dump's size; a page's text is kept only
up to ``max_text_bytes`` (a longer page comes with ``too_large`` and no text), so one huge page
cannot take the memory either. Expat takes the encoding from the byte-order mark or the XML
declaration, so UTF-16 dumps read as UTF-8 ones do. Decompression (bz2, gzip) is the caller's:
Beam's ``FileSystems.open`` does it from the file extension.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO
from xml.parsers import expat

CHUNK_BYTES = 1 << 20
DEFAULT_MAX_TEXT_BYTES = 8 * 1024 * 1024  # Wikipedia's largest articles are about 1.5 MB
FIELD_CHARS = 4096  # title, ns, id: longer values are cut (they are never that long)


@dataclass(frozen=True)
class RawPage:
    """One ``<page>`` of a dump, before any wikitext parsing."""

    page_id: int
    title: str
    ns: int
    redirect: str | None  # the <redirect title=...> element's target, if any
    text: str
    position: int  # 0-based index of the page in its file
    too_large: bool = False  # the text was over the limit: not kept


class DumpError(ValueError):
    """The dump stopped being well-formed XML; ``pages_read`` pages came before the error."""

    def __init__(self, message: str, pages_read: int):
        super().__init__(message)
        self.pages_read = pages_read


def _local(tag: str) -> str:
    # A prefixed tag (mw:page) or a namespaced one ({uri}page): compare local names only, since
    # export schema versions differ between dumps.
    return tag.rsplit("}", 1)[-1].rsplit(":", 1)[-1]


class _PageCollector:
    """Expat callbacks that build one page at a time, its text bounded."""

    def __init__(self, max_text_bytes: int):
        self.max_text_bytes = max_text_bytes
        self.pages: list[RawPage] = []
        self.path: list[str] = []
        self.position = 0
        self._reset()

    def _reset(self) -> None:
        self.fields: dict[str, list[str]] = {}
        self.redirect: str | None = None
        self.text: list[str] = []
        self.text_bytes = 0
        self.too_large = False

    def start(self, name: str, attrs: dict) -> None:
        name = _local(name)
        self.path.append(name)
        if name == "page":
            self._reset()
        elif name == "redirect" and "page" in self.path:
            self.redirect = attrs.get("title") or ""
        elif name == "text" and "revision" in self.path:
            # pages-articles holds one revision; with several (a history dump), keep the last.
            self.text, self.text_bytes, self.too_large = [], 0, False

    def end(self, name: str) -> None:
        name = _local(name)
        self.path.pop()
        if name == "page":
            f = {k: "".join(v) for k, v in self.fields.items()}
            self.pages.append(RawPage(_int(f.get("id")), f.get("title", ""), _int(f.get("ns")),
                                      self.redirect, "".join(self.text), self.position,
                                      self.too_large))
            self.position += 1
            self._reset()

    def chars(self, data: str) -> None:
        if len(self.path) < 2 or "page" not in self.path:
            return
        name, parent = self.path[-1], self.path[-2]
        if name == "text" and parent == "revision":
            if self.too_large:
                return
            self.text_bytes += len(data.encode("utf-8"))
            if self.text_bytes > self.max_text_bytes:
                self.too_large, self.text = True, []
            else:
                self.text.append(data)
        elif parent == "page" and name in ("title", "ns", "id"):
            kept = self.fields.setdefault(name, [])
            if sum(map(len, kept)) < FIELD_CHARS:
                kept.append(data)


def iter_pages(stream: BinaryIO, max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES
               ) -> Iterator[RawPage]:
    """Yield every page of a dump in file order.

    Args:
        stream: the (decompressed) dump.
        max_text_bytes: a page whose wikitext is longer (in UTF-8 bytes) comes with
            ``too_large`` set and no text; memory is bounded by this, not by the page.

    Raises:
        DumpError: at the first point where the XML is malformed or the file ends early; pages
            before it have been yielded.
    """
    pages = _PageCollector(max_text_bytes)
    parser = expat.ParserCreate()
    parser.buffer_text = True
    parser.StartElementHandler = pages.start
    parser.EndElementHandler = pages.end
    parser.CharacterDataHandler = pages.chars
    try:
        while True:
            chunk = stream.read(CHUNK_BYTES)
            parser.Parse(chunk, not chunk)
            yield from pages.pages
            pages.pages.clear()
            if not chunk:
                return
    except expat.ExpatError as exc:
        yield from pages.pages  # the pages finished before the error
        raise DumpError(f"malformed XML after {pages.position} pages: {exc}",
                        pages.position) from exc
    except EOFError as exc:  # a compressed stream that ends early
        raise DumpError(f"unexpected end of file after {pages.position} pages: {exc}",
                        pages.position) from exc
    except OSError as exc:  # corrupt compressed data
        raise DumpError(f"unreadable data after {pages.position} pages: {exc}",
                        pages.position) from exc


def _int(text: str | None) -> int:
    try:
        return int((text or "").strip())
    except ValueError:
        return 0
