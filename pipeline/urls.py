"""URL normalisation (the join key between citations and crawled pages) and Wikipedia URLs."""

from __future__ import annotations

import encodings.idna
import functools
import re
import unicodedata
from urllib.parse import parse_qs, unquote, unquote_to_bytes, urlsplit, urlunsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}

# RFC 3986 section 2.3: escapes of these characters are equivalent to the characters themselves.
_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

# Characters left as they are in a path or query: unreserved, the RFC 3986 gen-delims and
# sub-delims that may appear there, and "%" (handled separately). Anything else (space, quotes,
# `<>{}|\^` and backticks, non-ASCII) is percent-encoded as UTF-8, as browsers do before sending.
_KEEP = frozenset(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~:/?[]@!$&'()*+,;="
)

# `en.wikipedia.org`, `de.m.wikipedia.org`, `zh-classical.wikipedia.org`, `simple.wikipedia.org`.
_WIKIPEDIA_HOST = re.compile(r"([a-z][a-z0-9-]*)(?:\.m)?\.wikipedia\.org")

# What urlsplit removes from anywhere in a URL (WHATWG's URL parser does the same).
_SPLIT_DROPS = {ord("\t"): None, ord("\n"): None, ord("\r"): None}

# The first path segment of a language variant's article path ("/zh-cn/Title", "/sr-el/Title",
# "/kk-latn/Title", "/ike-cans/Title"): a language tag with at least one subtag. The edition's
# own code alone ("/zh/Title") is accepted too, where the edition's code is known.
_VARIANT_SEGMENT = re.compile(r"[a-z]{2,3}(?:-[a-z0-9]{2,8})+")

# Subdomains of wikipedia.org that are not language editions.
_NOT_LANGUAGES = frozenset({"www", "m", "meta", "commons", "species", "incubator"})


def normalize_url(url: str) -> str | None:
    """Normalises an http(s) URL into the key used to join citations with crawled pages.

    The scheme and host are lowercased, a non-ASCII host is IDNA-encoded, the host's trailing dot,
    the default port, any user info and the fragment are dropped, an empty path becomes "/", dot
    segments are removed, and percent-encoding is made canonical: escapes of unreserved
    characters are decoded, other escapes are uppercased, and non-ASCII or unsafe characters are
    encoded as UTF-8. The query is kept in its original order. The result is idempotent.

    So a URL of any script has one key however it is written: ``http://пример.укр/путь``,
    ``http://ПРИМЕР.УКР/%d0%bf%d1%83%d1%82%d1%8c`` and
    ``http://xn--e1afmkfd.xn--j1amh/%D0%BF%D1%83%D1%82%D1%8C`` are all the last. The host's
    labels that are not ASCII become punycode A-labels (IDNA 2008 with UTS #46 mapping, as
    browsers resolve them: :func:`_idn_host`; a host given percent-encoded is read as UTF-8
    first); a host no IDNA processing accepts makes the URL invalid (None). An escape that is
    not UTF-8 (``%E9``, Latin-1's "é") names other bytes than ``é`` and stays as it is, and a
    "%" not followed by two hex digits is itself encoded (``%25``): neither is an error.

    http and https stay distinct: they are separate captures in a crawl and may serve different
    content, and the join must be exact on the normalised string; equating them is a matching
    policy that belongs to the caller, not to the key.

    Returns:
        The normalised URL, or None for anything that is not an http(s) URL with a host.
    """
    url = url.strip()
    if url.startswith("<") and url.endswith(">"):
        url = url[1:-1].strip()
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        return None
    host = _normalize_host(parts.netloc)
    if host is None:
        return None
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        host = f"{host}:{port}"
    path = _remove_dot_segments(_normalize_escapes(parts.path)) or "/"
    query = _normalize_escapes(parts.query)
    return urlunsplit((scheme, host, path, query, ""))


def _normalize_host(netloc: str) -> str | None:
    host = netloc.rpartition("@")[2]
    if host.startswith("["):
        # IPv6 literal: keep the brackets, drop any port after them.
        end = host.find("]")
        return host[: end + 1].lower() if end > 1 else None
    host = host.partition(":")[0]
    if host.isascii():
        host = host.lower().rstrip(".")
        if "%" in host:
            # A percent-encoded host is read as its UTF-8 text (as browsers read it) only where
            # that text is an internationalised name; an encoded ASCII name stays refused.
            decoded = _percent_decoded(host)
            if decoded is None or decoded.isascii():
                return None
            return _idn_host(decoded)
        if not host or any(ch.isspace() or ch in _FORBIDDEN_HOST for ch in host):
            return None
        return host
    return _idn_host(host)


# Characters that make a host invalid here (":" and "@" are split off before; "[" and "]"
# belong to an IPv6 literal only, which is read apart).
_FORBIDDEN_HOST = frozenset("/\\%<>\"'[]")

# The label separators UTS #46 maps to ".": full stop, ideographic, full-width and half-width
# ideographic full stops.
_LABEL_DOTS = re.compile("[.\u3002\uff0e\uff61]")


def _percent_decoded(host: str) -> str | None:
    try:
        return unquote_to_bytes(host).decode("utf-8")
    except UnicodeDecodeError:
        return None


@functools.lru_cache(maxsize=1 << 14)
def _idn_host(host: str) -> str | None:
    """A host name that holds non-ASCII characters, as DNS and every crawler see it: each
    label that is not ASCII as its punycode A-label ("xn--..."), the ASCII labels lowercased;
    None for a name that no IDNA processing accepts (an over-long label, a forbidden
    character, a label that maps to two), which callers count as a bad URL. Empty labels are
    kept as they are in an ASCII name ("a..b").

    A label goes through the ``idna`` package (IDNA 2008 with UTS #46 mapping,
    non-transitional: the WHATWG URL Standard's "domain to ASCII", which current browsers and
    registries follow, so "faß.de" is "xn--fa-hia.de" and not "fass.de"; its Unicode tables
    are current, where Python's own codec knows Unicode 3.2 only). Python's ``encodings.idna``
    (IDNA 2003) is the fallback for the labels IDNA 2008 refuses but browsers still resolve
    through UTS #46's wider set: symbols and emoji ("☃.net" is "xn--n3h.net").
    """
    labels = _LABEL_DOTS.split(host)
    while labels and labels[-1] == "":  # the trailing dot of a fully qualified name
        labels.pop()
    out = []
    for label in labels:
        if label.isascii():
            out.append(label.lower())
            continue
        encoded = _idn_label(label)
        if encoded is None:
            return None
        out.append(encoded)
    result = ".".join(out)
    if not result or any(ch.isspace() or ch in _FORBIDDEN_HOST or not ch.isprintable()
                         for ch in result):
        return None
    return result


def _idn_label(label: str) -> str | None:
    """One label's A-label, or None. A label whose mapping holds a full stop (IDNA 2003 maps
    "⒈" to "1.") is refused: it would be two labels, and not the same name written again."""
    import idna  # only for hosts that are not ASCII: the command line's imports stay light

    try:
        encoded = idna.encode(label, uts46=True, transitional=False,
                              std3_rules=False).decode("ascii").lower()
    except (idna.IDNAError, UnicodeError, ValueError):
        try:
            encoded = encodings.idna.ToASCII(label).decode("ascii").lower()
        except UnicodeError:
            return None
    return None if "." in encoded else encoded


# A component that needs no change (only characters of _KEEP, no escape), and the runs of one
# that do: an escape, a lone "%", or characters to percent-encode.
_KEEP_CLASS = "".join(re.escape(ch) for ch in sorted(_KEEP))
_PLAIN = re.compile(f"[{_KEEP_CLASS}]*")
_TO_FIX = re.compile(f"%[0-9A-Fa-f]{{2}}|%|[^{_KEEP_CLASS}%]+")


def _fixed(match: re.Match[str]) -> str:
    text = match.group()
    if text[0] == "%":
        if len(text) == 1:
            return "%25"
        byte = int(text[1:], 16)
        return chr(byte) if byte in _UNRESERVED else text.upper()
    return "".join(f"%{b:02X}" for b in text.encode("utf-8", "surrogatepass"))


def _normalize_escapes(component: str) -> str:
    """Escapes of unreserved characters decoded, other escapes uppercased, a lone "%" and
    characters outside _KEEP percent-encoded (UTF-8); by regular expressions, not a loop over
    the characters (every URL of a crawl goes through it)."""
    if _PLAIN.fullmatch(component):
        return component
    return _TO_FIX.sub(_fixed, component)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, on an already escape-normalised path."""
    if "." not in path:
        return path
    segments = path.split("/")
    output: list[str] = []
    for segment in segments[1:] if path.startswith("/") else segments:
        if segment == "..":
            if output:
                output.pop()
        elif segment != ".":
            output.append(segment)
    if segments[-1] in (".", ".."):
        # "/a/b/.." names the directory "/a/", so keep its trailing slash.
        output.append("")
    prefix = "/" if path.startswith("/") else ""
    return prefix + "/".join(output)


def normalize_title(title: str) -> str:
    """A Wikipedia page title as MediaWiki stores it.

    Underscores become spaces, runs of whitespace collapse, and the first letter is uppercased
    (all Wikipedia language editions capitalise the first letter of titles).
    """
    title = " ".join(title.replace("_", " ").split())
    if not title:
        return title
    first = title[0].upper()
    # "ß".upper() is "SS"; MediaWiki keeps such characters rather than changing the length.
    return (first if len(first) == 1 else title[0]) + title[1:]


def is_text(value: str) -> bool:
    """False for a string no UTF-8 writer takes: JSON's ``\\ud800`` escapes decode to lone
    surrogates, which are not text. A URL or title read from JSON is checked before it flows
    on, so that one such escape is a counted drop rather than an error where it is written."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def wikipedia_title(url: str) -> tuple[str, str] | None:
    """The (language, title) of a Wikipedia article URL, or None for any other URL.

    Recognises desktop and mobile hosts (`en.wikipedia.org`, `ja.m.wikipedia.org`) with paths
    `/wiki/Title`, `/w/index.php?title=Title` and a language variant's `/VARIANT/Title` (the
    editions that convert between scripts or spellings: `zh.wikipedia.org/zh-cn/`, `/zh-tw/`,
    `/zh-hans/`, `sr.wikipedia.org/sr-el/`, `kk.wikipedia.org/kk-latn/`); the title is
    percent-decoded as UTF-8, put in Unicode's composed form (NFC, as MediaWiki stores titles)
    and normalised with `normalize_title`.
    """
    # Every Wikipedia host holds the word (urlsplit drops tabs and line breaks, so they are
    # dropped here too): most URLs stop here.
    if "wikipedia" not in url.lower().translate(_SPLIT_DROPS):
        return None
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https", ""):
        return None
    host = (parts.hostname or "").rstrip(".")
    match = _WIKIPEDIA_HOST.fullmatch(host)
    if match is None or match.group(1) in _NOT_LANGUAGES:
        return None
    edition, path = match.group(1), parts.path
    if path.startswith("/wiki/"):
        raw_title = unquote(path[len("/wiki/") :])
    elif path == "/w/index.php":
        raw_title = parse_qs(parts.query).get("title", [""])[0]
    else:
        segment, slash, rest = path[1:].partition("/")
        segment = segment.lower()
        if not (slash and (segment == edition or _VARIANT_SEGMENT.fullmatch(segment))):
            return None
        raw_title = unquote(rest)
    title = normalize_title(unicodedata.normalize("NFC", raw_title))
    return (edition, title) if title else None
