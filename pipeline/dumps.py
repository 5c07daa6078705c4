"""Streaming reader of MediaWiki XML dumps (pages-articles).

The dump is parsed incrementally with ``xml.etree.ElementTree.iterparse`` and every finished
``<page>`` is released at once, so memory stays flat whatever the dump's size. The parser (expat)
takes the encoding from the byte-order mark or the XML declaration, so UTF-16 dumps read as
UTF-8 ones do. Decompression (bz2, gzip) is the caller's: Beam's ``FileSystems.open`` does it from
the file extension.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO


@dataclass(frozen=True)
class RawPage:
    """One ``<page>`` of a dump, before any wikitext parsing."""

    page_id: int
    title: str
    ns: int
    redirect: str | None  # the <redirect title=...> element's target, if any
    text: str
    position: int  # 0-based index of the page in its file


class DumpError(ValueError):
    """The dump stopped being well-formed XML; ``pages_read`` pages came before the error."""

    def __init__(self, message: str, pages_read: int):
        super().__init__(message)
        self.pages_read = pages_read


def _local(tag: str) -> str:
    # Tags carry the export schema's namespace ({http://www.mediawiki.org/xml/export-0.10/}page);
    # versions differ between dumps, so compare local names only.
    return tag.rsplit("}", 1)[-1]


def iter_pages(stream: BinaryIO) -> Iterator[RawPage]:
    """Yield every page of a dump in file order.

    Raises:
        DumpError: at the first point where the XML is malformed or the file ends early; pages
            before it have been yielded.
    """
    position = 0
    root = None
    try:
        for event, elem in ET.iterparse(stream, events=("start", "end")):
            if root is None:
                root = elem
            if event != "end" or _local(elem.tag) != "page":
                continue
            yield _page(elem, position)
            position += 1
            # Drop the finished page and every earlier sibling: the root would otherwise keep
            # an (empty) element per page, which adds up to gigabytes on a full dump.
            root.clear()
    except ET.ParseError as exc:
        raise DumpError(f"malformed XML after {position} pages: {exc}", position) from exc
    except EOFError as exc:  # a compressed stream that ends early
        raise DumpError(f"unexpected end of file after {position} pages: {exc}", position) from exc
    except OSError as exc:  # corrupt compressed data
        raise DumpError(f"unreadable data after {position} pages: {exc}", position) from exc


def _page(elem: ET.Element, position: int) -> RawPage:
    title, ns, page_id, redirect, text = "", 0, 0, None, ""
    for child in elem:
        name = _local(child.tag)
        if name == "title":
            title = child.text or ""
        elif name == "ns":
            ns = _int(child.text)
        elif name == "id":
            page_id = _int(child.text)
        elif name == "redirect":
            redirect = child.get("title") or ""
        elif name == "revision":
            # pages-articles holds one revision; with several (a history dump), keep the last.
            for field in child:
                if _local(field.tag) == "text":
                    text = field.text or ""
    return RawPage(page_id, title, ns, redirect, text, position)


def _int(text: str | None) -> int:
    try:
        return int((text or "").strip())
    except ValueError:
        return 0
