"""Common Crawl's index key ("urlkey") of a URL, in SURT form.

A SURT (Sort-friendly URI Reordering Transform) key writes a URL's host with its labels reversed
and joined by commas, then ``)`` and the path and query: ``https://www.Example.com/a/?b=2&a=1``
becomes ``com,example)/a?a=1&b=2``. Common Crawl sorts its CDX index by this key, so a lookup has
to compute it exactly as the index did. The key is also a canonical form: URLs that differ only in
scheme (``http``/``https``), a ``www.`` prefix, a trailing slash, a default port, letter case,
percent-encoding or the order of query parameters share one key, so matching citations by it finds
a capture whichever of those variants Common Crawl happened to crawl.

The canonicalisation is that of the Internet Archive ``surt`` package's default, ``surt.surt(url)``
(its GoogleURLCanonicalizer followed by its IAURLCanonicalizer, without the scheme), which Common
Crawl's indexer calls; the comments below point out where that behaviour is surprising.
"""

from __future__ import annotations

import re
import struct

# What `surt` treats as a scheme. A URL without one gets `http://` from `surt`; here such text is
# not an http(s) URL at all.
_SCHEME = re.compile(rb"([A-Za-z][A-Za-z0-9+.-]*):")

# `http://https://order.1and1.com` is read as `https://order.1and1.com` (only lower-case schemes).
_REPEATED_SCHEMES = re.compile(rb"(https?://)+")

# The RFC 2396 (appendix B) split of what follows the scheme: authority, path, query, fragment.
_AFTER_SCHEME = re.compile(rb"(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#.*)?", re.DOTALL)

# Tabs and line breaks are deleted anywhere; spaces only at the ends.
_DELETED = re.compile(rb"[\t\n\r]")
_STRIPPED = b" \t\n\r\x0b\x0c"

_ESCAPE = re.compile(rb"%([0-9A-Fa-f]{2})")

# Bytes written as themselves when re-escaping: printable ASCII except "#" and "%".
_PRINTABLE_KEPT = frozenset(range(0x21, 0x7F)) - {ord("#"), ord("%")}

# Hosts that the system resolver would read as a numeric IPv4 address (see `_numeric_ipv4`).
_DECIMAL_IP = re.compile(rb"[1-9][0-9]*(?:\.[0-9]+){0,3}")
_OCTAL_IP = re.compile(rb"0[0-7]*(?:\.[0-7]+){0,3}")

_WWW_PREFIX = re.compile(r"www[0-9]*\.")

_DEFAULT_PORTS = {b"http": 80, b"https": 443}

# ASP.NET cookieless session ids in the path: `/(S(24 chars))/page.aspx`, `/(24 chars)/page.aspx`.
_PATH_SESSION_IDS = (
    re.compile(r"(.*/)\((?:[a-z]\([0-9a-z]{24}\))+\)/([^?]+\.aspx.*)", re.IGNORECASE),
    re.compile(r"(.*/)\([0-9a-z]{24}\)/([^?]+\.aspx.*)", re.IGNORECASE),
)

# Session ids in the query. Each pattern keeps what precedes the id and what follows its `&`.
# The `sid=` pattern also matches a parameter whose name merely ends in `sid` (`xsid=...`), and
# then leaves the rest of that name glued to the next parameter; `surt` does the same.
_QUERY_SESSION_IDS = tuple(
    re.compile(r"(.*)" + session_id + r"(?:&(.*))?", re.IGNORECASE)
    for session_id in (
        r"jsessionid=[0-9a-z]{32}",
        r"phpsessid=[0-9a-z]{32}",
        r"sid=[0-9a-z]{32}",
        r"aspsessionid[a-z]{8}=[a-z]{24}",
        r"cfid=[^&]+&cftoken=[^&]+",
    )
)


def surt_key(url: str) -> str | None:
    """Common Crawl's index key (SURT, no scheme) of an http(s) URL, or None when the text is not
    an http(s) URL with a host.

    Args:
        url: The URL as cited or crawled; it may carry surrounding whitespace, a fragment, user
            info, non-ASCII characters or percent-escapes.

    Returns:
        The key, e.g. ``org,archive)/goo?a=1&a=2&b`` for ``http://www.archive.org/goo/?a=2&b&a=1``;
        None for other schemes, text without a scheme, an empty host or an invalid port.
    """
    try:
        raw = url.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates
        return None
    raw = _DELETED.sub(b"", raw.strip(_STRIPPED))
    raw = _REPEATED_SCHEMES.sub(lambda m: m.group(1), raw, count=1)
    scheme_match = _SCHEME.match(raw)
    if scheme_match is None:
        return None
    scheme = scheme_match.group(1)
    default_port = _DEFAULT_PORTS.get(scheme.lower())
    if default_port is None:
        return None

    netloc, path, query = _AFTER_SCHEME.fullmatch(raw, scheme_match.end()).groups()
    # `host:` without a port number is read as `host`.
    authority = _split_authority((netloc or b"").rstrip(b":"))
    if authority is None:
        return None
    host, port = authority
    if not host and path and scheme.startswith(b"http"):
        # `http:////www.vikings.com`: the host is taken from the path. Whatever that segment
        # holds (user info, a port) stays part of the host, and the check is case-sensitive.
        host, _, rest = path.lstrip(b"/").partition(b"/")
        path = b"/" + rest
    if not host:
        return None

    # Lower-cased again after escaping, so the hex digits of escapes in the host are lower case.
    host_text = _canonical_host(host).lower()
    if not host_text:
        return None
    www = _WWW_PREFIX.match(host_text)
    if www:
        host_text = host_text[www.end():]
    # IPv4 addresses are reversed too (`254,1,168,192)/`): `surt` keeps them in order only when
    # asked to, and Common Crawl does not ask.
    surt_host = ",".join(reversed(host_text.split(".")))
    if port is not None and port != default_port:
        surt_host += f":{port}"

    path_text = _escape(_normalize_path(_unescape(path or b"")))
    path_text = _strip_path_session_ids(path_text.lower())
    if len(path_text) > 1 and path_text.endswith("/"):
        path_text = path_text[:-1]

    key = f"{surt_host}){path_text}"
    if query:
        query_text = _strip_query_session_ids(_escape(_unescape(query))).lower()
        if query_text:
            key += "?" + _sort_query(query_text)
    return key


def _split_authority(netloc: bytes) -> tuple[bytes, int | None] | None:
    """Host and port of an authority as `urllib.parse` reads them, or None when the port is not a
    number from 0 to 65535 (where `surt` raises).

    User info is dropped, IPv6 brackets removed (the address is kept as the host), and port 0
    counts as no port, as in `surt`.
    """
    hostinfo = netloc.rpartition(b"@")[2]
    _, bracket, bracketed = hostinfo.partition(b"[")
    if bracket:
        host, _, after = bracketed.partition(b"]")
        port_text = after.partition(b":")[2]
    else:
        host, _, port_text = hostinfo.partition(b":")
    if not port_text:
        return host, None
    if not re.fullmatch(rb"[0-9]+", port_text) or int(port_text) > 65535:
        return None
    return host, int(port_text) or None


def _unescape(text: bytes) -> bytes:
    """Decodes percent-escapes until none is left, so `%2525` and `%25` both become `%`."""
    while True:
        decoded = _ESCAPE.sub(lambda m: bytes((int(m.group(1), 16),)), text)
        if decoded == text:
            return text
        text = decoded


def _escape(raw: bytes) -> str:
    """Percent-escapes (upper-case hex) controls, space, `#`, `%` and non-ASCII bytes only."""
    return "".join(chr(b) if b in _PRINTABLE_KEPT else f"%{b:02X}" for b in raw)


def _canonical_host(host: bytes) -> str:
    """The host unescaped, IDNA-encoded when non-ASCII, with empty labels at the ends trimmed, then
    either a numeric IPv4 form written as a dotted quad or the name lower-cased and escaped (with
    upper-case hex); a `www.` prefix is left in place."""
    host = _unescape(host)
    if not host.isascii():
        try:
            # Invalid UTF-8 is dropped for the IDNA attempt; if IDNA fails the original bytes
            # are kept and percent-escaped instead.
            host = host.decode("utf-8", "ignore").encode("idna")
        except ValueError:
            pass
    # A single pass, as in `surt`: `a...b` becomes `a..b`, not `a.b`.
    host = host.replace(b"..", b".").strip(b".")
    ip = _numeric_ipv4(host)
    if ip is not None:
        return ip
    return _escape(host.lower())


def _numeric_ipv4(host: bytes) -> str | None:
    """The dotted quad of a host given as an IPv4 number, else None.

    `surt` turns an all-digit host into an address modulo 2**32 (`http://3279880203/` is
    195.127.0.11) and hands other numeric-looking hosts (`10.0.258`, `017.0.0.1`) to the system
    resolver, which reads them as `inet_aton` does: one to four parts, each decimal, or octal when
    it starts with 0, the last part filling the remaining bytes. Those rules are applied here
    directly; a host they reject (`1.2.3.256`) stays a name.
    """
    if re.fullmatch(rb"[0-9]+", host):
        return _dotted(int(host) & 0xFFFFFFFF)
    if not (_DECIMAL_IP.fullmatch(host) or _OCTAL_IP.fullmatch(host)):
        return None
    values = []
    for part in host.split(b"."):
        if len(part) > 1 and part.startswith(b"0"):
            if not re.fullmatch(rb"[0-7]+", part):
                return None
            values.append(int(part, 8))
        else:
            values.append(int(part))
    *leading, last = values
    if any(value > 0xFF for value in leading) or last >= 1 << (8 * (4 - len(leading))):
        return None
    number = last
    for index, value in enumerate(leading):
        number |= value << (24 - 8 * index)
    return _dotted(number)


def _dotted(number: int) -> str:
    return ".".join(str(b) for b in struct.pack(">L", number))


def _normalize_path(path: bytes) -> bytes:
    """Resolves `.` and `..` segments and collapses repeated slashes, keeping a trailing slash.

    As in `surt`, a `..` with nothing left to remove is kept, and a `..` after an empty segment
    (`/a//../b`) removes only that empty segment.
    """
    if not path:
        return b"/"
    kept: list[bytes] = []
    for segment in path.split(b"/")[1:]:
        if segment == b".":
            continue
        if segment == b".." and kept:
            kept.pop()
        else:
            kept.append(segment)
    if not kept:
        return b"/"
    return b"/" + b"".join(segment + b"/" for segment in kept[:-1] if segment) + kept[-1]


def _strip_path_session_ids(path: str) -> str:
    for pattern in _PATH_SESSION_IDS:
        match = pattern.fullmatch(path)
        if match:
            path = match.group(1) + match.group(2)
    return path


def _strip_query_session_ids(query: str) -> str:
    for pattern in _QUERY_SESSION_IDS:
        match = pattern.fullmatch(query)
        if match:
            query = match.group(1) + (match.group(2) or "")
    return query


def _sort_query(query: str) -> str:
    """Parameters sorted by (name, value) pairs, not as whole strings: `a=1` sorts before `a-b`
    although `-` sorts before `=`. `a` and `a=` stay distinct; empty parameters are kept, so
    `a=1&` becomes `&a=1`."""
    pairs = sorted(tuple(parameter.split("=", 1)) for parameter in query.split("&"))
    return "&".join("=".join(pair) for pair in pairs)
