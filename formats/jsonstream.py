"""A top-level JSON object read one member at a time, or a top-level JSON array one element at a
time, in bounded memory: the reader of tensor2tensor's wiki_urls shards
(:func:`wikisum.formats.t2t.iter_wiki_urls`), one object of some 90,000 members a shard, keyed by
URL (so its reports call a member's key its URL), and of GraphSum's files, one array of examples
each (:func:`wikisum.formats.sources.json_records`).
"""

from __future__ import annotations

import codecs
import json
import re
from collections.abc import Iterator
from json.decoder import scanstring
from typing import BinaryIO

_WS = re.compile(r"[ \t\n\r]*")
_STOP_OUTSIDE = re.compile(r'["\[\]{},]')
_STOP_IN_STRING = re.compile(r'["\\]')


class ObjectMembers:
    """The members of a top-level JSON object, one at a time, from a binary UTF-8 stream.

    Each member's extent is found first by a scan of its strings and brackets (a regex search,
    linear), then only that text is parsed: memory holds one member, at most ``max_chars`` of
    JSON text, plus a chunk; a longer member is skipped by the same scan without being held, and
    a malformed one costs that member only.

    :meth:`events` yields ("member", offset, key, value), ("bad_member", offset, key, detail),
    ("too_large", offset, key, chars), and finally ("error", offset, reason, detail) where the
    stream is not one well-formed object; offsets are in bytes.
    """

    errors = "strict"  # how bytes that are not UTF-8 are decoded

    def __init__(self, stream: BinaryIO, max_chars: int, chunk: int = 1 << 16):
        self.stream = stream
        self.max_chars = max_chars
        self.chunk = chunk
        self.decoder = codecs.getincrementaldecoder("utf-8")(self.errors)
        self.json = json.JSONDecoder()
        self.text = ""
        self.pos = 0  # index in text of the next unread character
        self.offset = 0  # byte offset of text[pos] in the stream
        self.eof = False
        self.read_bytes = 0
        self.bad_byte: int | None = None  # offset of the first byte that is not UTF-8

    def _more(self, at_least: int = 0) -> None:
        """Reads at least a chunk more, dropping what was read. Text that is not UTF-8 ends the
        stream at its first bad byte, so the entries before it are still read."""
        data = self.stream.read(max(self.chunk, at_least))
        if not data:
            self.eof = True
        try:
            text = self.decoder.decode(data, final=self.eof)
        except UnicodeDecodeError as exc:
            # exc.object is the bytes held from the last chunk followed by this one.
            text = exc.object[:exc.start].decode("utf-8")
            self.bad_byte = self.read_bytes - (len(exc.object) - len(data)) + exc.start
            self.eof = True
        self.read_bytes += len(data)
        self.text = self.text[self.pos:] + text
        self.pos = 0

    def _advance(self, to: int) -> None:
        self.offset += len(self.text[self.pos:to].encode("utf-8", "surrogateescape"))
        self.pos = to

    def _next_char(self) -> str | None:
        """The next character that is not whitespace (whitespace is consumed), None at the end."""
        while True:
            self._advance(_WS.match(self.text, self.pos).end())
            if self.pos < len(self.text):
                return self.text[self.pos]
            if self.eof:
                return None
            self._more()

    @staticmethod
    def _scan(text: str, i: int, state: list) -> tuple[int, bool]:
        """Scans ``text`` from ``i`` for a ``,``, ``}`` or ``]`` outside strings and at bracket
        depth 0, carrying (depth, in string, after a backslash) in ``state`` across chunks;
        returns (its index, True), or (len(text), False)."""
        depth, in_string, escaped = state
        end = len(text)
        found = False
        while i < end:
            if escaped:
                escaped, i = False, i + 1
            elif in_string:
                match = _STOP_IN_STRING.search(text, i)
                if match is None:
                    i = end
                elif text[match.start()] == "\\":
                    escaped, i = True, match.start() + 1
                else:
                    in_string, i = False, match.start() + 1
            else:
                match = _STOP_OUTSIDE.search(text, i)
                if match is None:
                    i = end
                    break
                i = match.start()
                char = text[i]
                if char == '"':
                    in_string = True
                elif char in "[{":
                    depth += 1
                elif depth == 0:
                    found = True
                    break
                elif char in "]}":
                    depth -= 1
                i += 1
        state[:] = [depth, in_string, escaped]
        return i, found

    def _member_end(self) -> tuple[str, int, str]:
        """("end", index of the member's terminator, ""), ("eof", 0, "") when the stream ends
        first, or ("long", characters scanned, its URL) once the member is longer than the
        limit, then skipped."""
        state, scanned = [0, False, False], 0
        while True:
            i, found = self._scan(self.text, self.pos + scanned, state)
            if found:
                return "end", i, ""
            scanned = i - self.pos
            if scanned > self.max_chars:
                key = _key_prefix(self.text[self.pos:])
                self._advance(self.pos + scanned)  # `state` is the scan's state there
                self._skip_rest(state)
                return "long", scanned, key
            if self.eof:
                return "eof", 0, ""
            self._more(scanned)  # at least doubles the buffer: linear in the member

    def _skip_rest(self, state: list) -> None:
        """Consumes the member at ``pos`` up to its terminator (left unread) or the end."""
        while True:
            i, found = self._scan(self.text, self.pos, state)
            self._advance(i)
            if found or self.eof:
                return
            self._more()

    def _parse(self, text: str) -> tuple[str, object]:
        """(key, value) of one member's text; raises ValueError (json.JSONDecodeError)."""
        if not text.startswith('"'):
            raise ValueError("expected a quoted URL")
        key, i = scanstring(text, 1)
        i = _WS.match(text, i).end()
        if not text.startswith(":", i):
            raise ValueError(f"expected ':' after the URL at character {i}")
        value, i = self.json.raw_decode(text, _WS.match(text, i + 1).end())
        if _WS.match(text, i).end() != len(text):
            raise ValueError(f"extra data after the value at character {i}")
        return key, value

    def events(self) -> Iterator[tuple]:
        """The events of :meth:`_events`; where the text stopped at a byte that is not UTF-8,
        the error that ends them is that."""
        for event in self._events():
            if event[0] == "error" and self.bad_byte is not None:
                break
            yield event
        if self.bad_byte is not None:
            yield ("error", self.bad_byte, "bad_encoding",
                   f"byte {self.bad_byte} is not UTF-8; the rest of the file is not read")

    def _events(self) -> Iterator[tuple]:
        if self._next_char() != "{":
            yield ("error", self.offset, "not_an_object", "the file is not one JSON object")
            return
        self._advance(self.pos + 1)
        char = self._next_char()
        while char != "}":
            if char is None:
                yield ("error", self.offset, "bad_json", "the file ends inside the object")
                return
            start = self.offset
            outcome, at, key = self._member_end()
            if outcome == "eof":
                # A file cut short: its last entry may still be whole.
                try:
                    key, value = self._parse(self.text[self.pos:].rstrip(" \t\n\r"))
                except (ValueError, RecursionError):
                    yield ("error", start, "bad_json", "the file ends inside an entry")
                    return
                self._advance(len(self.text))
                yield ("member", start, key, value)
                yield ("error", self.offset, "bad_json", "the file ends inside the object")
                return
            if outcome == "long":
                yield ("too_large", start, key, at)
            else:
                text = self.text[self.pos:at]
                self._advance(at)
                try:
                    key, value = self._parse(text)
                except (ValueError, RecursionError) as exc:
                    yield ("bad_member", start, _key_prefix(text), str(exc))
                else:
                    yield ("member", start, key, value)
            char = self._next_char()
            if char == ",":
                self._advance(self.pos + 1)
                char = self._next_char()
            elif char != "}":
                yield ("error", self.offset, "bad_json", "expected ',' or '}' after an entry")
                return
        self._advance(self.pos + 1)
        if self._next_char() is not None:
            yield ("error", self.offset, "bad_json", "data after the object's closing brace")


# A byte that is not UTF-8, as the surrogate escape decoding makes it.
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


class ArrayElements(ObjectMembers):
    """The elements of a top-level JSON array, one at a time, from a binary UTF-8 stream, in the
    memory :class:`ObjectMembers` holds: one element, at most ``max_chars`` characters of JSON
    text, plus a chunk. Each element's extent is found by the same scan, which counts brackets
    without recursing, so an element nested 100,000 deep costs that element only; so does one
    holding bytes that are not UTF-8 (decoded as surrogate escapes, then reported).

    :meth:`elements` yields ("element", offset, value), ("bad_element", offset, reason, detail)
    with reason ``bad_json``, ``too_deep`` or ``bad_encoding``, ("too_large", offset, chars),
    and finally ("error", offset, detail) where the stream is not one well-formed array (a file
    cut short: the rest cannot be read); offsets are in bytes.
    """

    errors = "surrogateescape"

    def _element(self, offset: int, text: str) -> tuple:
        bad = _ESCAPED_BYTE.search(text)
        if bad is not None:
            at = offset + len(text[:bad.start()].encode("utf-8", "surrogateescape"))
            return ("bad_element", offset, "bad_encoding", f"byte {at:,} is not UTF-8")
        try:
            return ("element", offset, json.loads(text))
        except RecursionError:
            return ("bad_element", offset, "too_deep", "nested deeper than the JSON parser's "
                    "recursion limit")
        except ValueError as exc:
            return ("bad_element", offset, "bad_json", str(exc))

    def elements(self) -> Iterator[tuple]:
        if self._next_char() == "\ufeff":  # a byte-order mark opening the file
            self._advance(self.pos + 1)
        if self._next_char() != "[":
            yield ("error", self.offset, "the file does not start a JSON array")
            return
        self._advance(self.pos + 1)
        char = self._next_char()
        if char == "]":
            self._advance(self.pos + 1)
            if self._next_char() is not None:
                yield ("error", self.offset, "data after the array's closing bracket")
            return
        while True:
            if char is None:
                yield ("error", self.offset, "the file ends inside the array")
                return
            start = self.offset
            outcome, at, _ = self._member_end()
            if outcome == "eof":
                yield ("error", start, "the file ends inside this element")
                return
            if outcome == "long":
                yield ("too_large", start, at)
            else:
                text = self.text[self.pos:at]
                self._advance(at)
                yield self._element(start, text)
            char = self._next_char()
            if char == ",":
                self._advance(self.pos + 1)
                char = self._next_char()
            elif char == "]":
                self._advance(self.pos + 1)
                if self._next_char() is not None:
                    yield ("error", self.offset, "data after the array's closing bracket")
                return
            else:
                yield ("error", self.offset, "expected ',' or ']' after an element")
                return


def _key_prefix(text: str) -> str:
    """The URL a member's text starts with, if it can be read, for a report."""
    try:
        return scanstring(text, 1)[0][:500] if text.startswith('"') else ""
    except ValueError:
        return ""
