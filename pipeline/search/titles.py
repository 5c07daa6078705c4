"""The titles a search is run for, and the query each one becomes.

Titles come from a text file (one a line), from a Wikipedia dump (its articles: main namespace,
no redirects) or from a finished ingest output (its articles' titles). Every title is checked
before it is asked for (:func:`title_problem`): one that cannot be a Wikipedia title is a
counted drop, never a query.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator

# A Wikipedia title is at most 255 bytes of UTF-8; a line of a titles file may be longer, up to
# this many characters, before it is refused as too_long (it is no title, and a query made of
# it would cost a search API a request for nothing).
MAX_TITLE_CHARS = 1000
# A titles file's line longer than this many bytes is read past without being held whole.
MAX_LINE_BYTES = 64 * 1024
UTF8_BOM = b"\xef\xbb\xbf"

QUERY_MODES = ("title", "no-disambiguation")
DEFAULT_QUERY = "title"

# "Mercury (planet)" -> "Mercury": MediaWiki's disambiguation suffix, a parenthesis closing the
# title.
_DISAMBIGUATION = re.compile(r"\s*\([^()]*\)\s*$")


def title_problem(title: str) -> str | None:
    """Why ``title`` is not searched (a drop reason), or None: ``empty_title`` (nothing but
    whitespace), ``title_too_long`` (over :data:`MAX_TITLE_CHARS` characters),
    ``control_characters`` (C0/C1 controls, which no Wikipedia title holds) or
    ``not_text`` (a lone surrogate)."""
    if not title.replace("_", " ").strip():  # "___" is an empty query
        return "empty_title"
    if len(title) > MAX_TITLE_CHARS:
        return "title_too_long"
    if any(unicodedata.category(c) == "Cc" for c in title):
        return "control_characters"
    try:
        title.encode("utf-8")
    except UnicodeEncodeError:
        return "not_text"
    return None


def query_for(title: str, mode: str = DEFAULT_QUERY) -> str:
    """The query a title is searched with: the title as the paper used it, underscores read as
    spaces (``title``), or without a closing disambiguation in parentheses
    (``no-disambiguation``: "Mercury (planet)" -> "Mercury")."""
    if mode not in QUERY_MODES:
        raise ValueError(f"query mode must be one of {', '.join(QUERY_MODES)}, got {mode!r}")
    query = " ".join(title.replace("_", " ").split())
    if mode == "no-disambiguation":
        stripped = _DISAMBIGUATION.sub("", query)
        query = stripped or query
    return query


def decompressed(f, path: str):
    """A titles file opened raw, read through the decompressor its name calls for (``.gz``,
    ``.bz2``, ``.xz``), so that it reads a line at a time in bounded memory either way."""
    import bz2
    import gzip
    import lzma

    for suffix, opener in ((".gz", lambda: gzip.GzipFile(fileobj=f)),
                           (".bz2", lambda: bz2.BZ2File(f)), (".xz", lambda: lzma.LZMAFile(f))):
        if path.endswith(suffix):
            return opener()
    return f


def file_lines(f, max_bytes: int = MAX_LINE_BYTES
               ) -> Iterator[tuple[int, str | None, str | None]]:
    """(line number, text, None) of a binary titles file, one title a line; a line longer than
    ``max_bytes`` comes as (number, None, "line_too_long"), read past a chunk at a time so that
    memory stays bounded whatever the file holds, and one that is not UTF-8 as (number, None,
    "bad_encoding"). Blank lines are skipped; a UTF-8 byte order mark opening the file is no
    part of its first title."""
    number = 0
    while True:
        try:
            line = f.readline(max_bytes + 1)
        except (OSError, EOFError, ValueError) as exc:  # a damaged compressed file
            raise ValueError(f"the titles file stops being readable after line {number}: "
                             f"{exc}") from exc
        if not line:
            return
        number += 1
        if number == 1 and line.startswith(UTF8_BOM):
            line = line[len(UTF8_BOM):]
        if len(line) > max_bytes and not line.endswith(b"\n"):
            while True:
                chunk = f.readline(1 << 20)  # a damaged stream raises as above
                if not chunk or chunk.endswith(b"\n"):
                    break
            yield number, None, "line_too_long"
            continue
        try:
            text = line.decode("utf-8").rstrip("\r\n")
        except UnicodeDecodeError:
            yield number, None, "bad_encoding"
            continue
        if text.strip():
            yield number, text, None


def dump_titles(f) -> Iterator[str]:
    """The titles of a dump's articles (main namespace, not redirects), in file order; a dump
    that stops being readable ends the titles where it stops (:class:`DumpError` raised after
    them)."""
    from wikisum.pipeline.dumps import iter_pages

    for page in iter_pages(f, max_text_bytes=0):
        if page.ns == 0 and page.redirect is None and not page.problem:
            yield page.title
