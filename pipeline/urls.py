"""URL normalisation (the join key between citations and crawled pages) and Wikipedia URLs."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, unquote, urlsplit, urlunsplit

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

# Subdomains of wikipedia.org that are not language editions.
_NOT_LANGUAGES = frozenset({"www", "m", "meta", "commons", "species", "incubator"})


def normalize_url(url: str) -> str | None:
    """Normalises an http(s) URL into the key used to join citations with crawled pages.

    The scheme and host are lowercased, a non-ASCII host is IDNA-encoded, the host's trailing dot,
    the default port, any user info and the fragment are dropped, an empty path becomes "/", dot
    segments are removed, and percent-encoding is made canonical: escapes of unreserved
    characters are decoded, other escapes are uppercased, and non-ASCII or unsafe characters are
    encoded as UTF-8. The query is kept in its original order. The result is idempotent.

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
    host = host.partition(":")[0].lower().rstrip(".")
    if not host or any(ch.isspace() or ch in "/\\%<>\"'" for ch in host):
        return None
    if not host.isascii():
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError:
            # Not valid IDNA (e.g. an over-long label); the lowercased Unicode host is still a
            # usable key, and both sides of the join go through this same function.
            pass
    return host


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

    Recognises desktop and mobile hosts (`en.wikipedia.org`, `en.m.wikipedia.org`) with paths
    `/wiki/Title` or `/w/index.php?title=Title`; the title is percent-decoded and normalised with
    `normalize_title`.
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
    if parts.path.startswith("/wiki/"):
        raw_title = unquote(parts.path[len("/wiki/") :])
    elif parts.path == "/w/index.php":
        raw_title = parse_qs(parts.query).get("title", [""])[0]
    else:
        return None
    title = normalize_title(raw_title)
    return (match.group(1), title) if title else None
