"""Pure checks before any request: URL schemes and validity, and the addresses a host may
resolve to (never private, loopback or metadata addresses unless allowed)."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from urllib.parse import urlsplit

from wikisum.pipeline.crawl.records import FAILED, FETCHED, REFUSED, Stop
from wikisum.pipeline.urls import normalize_url

SCHEMES = {"http": 80, "https": 443}

# Addresses never fetched, whatever --allow-private says: cloud instance metadata services
# (AWS, GCP, Azure, OpenStack share 169.254.169.254; AWS's IPv6 one), and addresses no server
# listens on.
METADATA_ADDRESSES = frozenset({ipaddress.ip_address("169.254.169.254"),
                                ipaddress.ip_address("fd00:ec2::254")})

# IPv6 prefixes whose addresses carry an IPv4 address that a translator, tunnel or dual stack
# may deliver the packet to (the other embeddings are read by ipaddress: 6to4, Teredo, mapped).
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")  # deprecated, RFC 4291 2.5.5.1
_IPV4_TRANSLATED = ipaddress.ip_network("::ffff:0:0:0/96")  # SIIT, RFC 2765
_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # well-known prefix, RFC 6052
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # local-use prefix, RFC 8215
# Pure wrappers: an address in one of these means its last 32 bits as an IPv4 address and
# nothing else, so its scope (loopback, private, global, ...) is that address's, whatever the
# IPv6 ranges say (Python calls ``::ffff:8.8.8.8`` reserved, depending on its version). The
# local-use NAT64 prefix is not one (where the IPv4 address sits is unknown, and the prefix
# itself is not globally reachable), nor are 6to4 and Teredo (tunnels with IPv6 addresses).
_PURE_WRAPPERS = (ipaddress.ip_network("::ffff:0:0/96"), _IPV4_TRANSLATED, _IPV4_COMPATIBLE,
                  _NAT64)
# Where RFC 6052 puts the IPv4 address behind a prefix of each length the local-use prefix
# may be extended to: (first bit, number of bits) pieces, skipping bits 64-71 (the "u" octet).
_RFC6052_PIECES = {48: ((48, 16), (72, 16)), 56: ((56, 8), (72, 24)), 64: ((72, 32),),
                   96: ((96, 32),)}


def _bits(value: int, first: int, count: int) -> int:
    """``count`` bits of a 128-bit ``value`` from bit ``first`` (0: the most significant)."""
    return (value >> (128 - first - count)) & ((1 << count) - 1)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 address carries: IPv4-mapped ``::ffff:0:0/96``,
    IPv4-translated ``::ffff:0:0:0/96``, IPv4-compatible ``::/96`` (but ``::`` and ``::1``),
    NAT64 ``64:ff9b::/96`` and the local-use ``64:ff9b:1::/48`` (at each position RFC 6052
    allows, since the prefix length in use is unknown), 6to4 ``2002::/16`` (bits 16-47) and
    Teredo ``2001::/32`` (its server, bits 32-63, and its client, the last 32 bits inverted).
    A connection to such an address may reach that IPv4 host, so it is judged as each of them.
    """
    value = int(ip)
    found = []
    if ip.ipv4_mapped is not None:
        found.append(ip.ipv4_mapped)
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    if (ip in _IPV4_TRANSLATED or ip in _NAT64
            or (ip in _IPV4_COMPATIBLE and value > 1)):
        found.append(ipaddress.IPv4Address(value & 0xFFFFFFFF))
    if ip in _NAT64_LOCAL:
        # The prefix length in use is unknown, so every position is read; a reading of
        # 0.0.0.0 is the zero padding of a longer prefix, not a destination, unless all are.
        read = []
        for pieces in _RFC6052_PIECES.values():
            v4 = 0
            for first, count in pieces:
                v4 = (v4 << count) | _bits(value, first, count)
            read.append(ipaddress.IPv4Address(v4))
        found.extend([a for a in read if int(a)] or read[:1])
    return list(dict.fromkeys(found))


def wrapped_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address a pure wrapper stands for (mapped, translated, compatible but ``::``
    and ``::1``, NAT64 ``64:ff9b::/96``), or None for any other IPv6 address."""
    if int(ip) > 1 and any(ip in net for net in _PURE_WRAPPERS):
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def check_url(raw: str) -> tuple[str, str]:
    """An input URL -> (key, refusal): the normalised URL and "", or the stripped input and why
    it cannot be crawled: ``scheme`` (a scheme other than http/https) or ``invalid_url``."""
    text = raw.strip()
    try:
        scheme = urlsplit(text).scheme.lower()
    except ValueError:
        return text, "invalid_url"
    if scheme and scheme not in SCHEMES:
        return text, "scheme"
    url = normalize_url(text) if scheme else None
    if url is None:
        return text, "invalid_url"
    return url, ""


def header_url(value: str) -> str:
    """A URL from a response header (``Location``) as its sender wrote it. HTTP clients read
    header bytes as Latin-1, but a server that puts a raw non-ASCII URL there sends UTF-8
    (``Location: /путь``), as browsers read it: bytes that are UTF-8 are decoded as such, any
    other value is kept as it came."""
    value = value.strip()
    if value.isascii():
        return value
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value


def host_of(url: str) -> str:
    """The politeness key of a normalised URL: its host name, without port."""
    return urlsplit(url).hostname or ""


def origin_of(url: str) -> str:
    """scheme://host[:port], the scope of one robots.txt (RFC 9309)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def address_refusal(address: str, allow_private: bool = False) -> str | None:
    """Why a resolved address may not be fetched, or None when it may.

    Cloud metadata, unspecified and multicast addresses are always refused; loopback, private,
    link-local, reserved and other non-global ranges (shared 100.64/10, documentation, ...)
    are refused unless ``allow_private``. An IPv6 address that carries IPv4 addresses
    (:func:`embedded_ipv4`: mapped, compatible, NAT64, 6to4, Teredo, ...) is refused when any
    of them or itself is metadata, unspecified or multicast. For the other refusals a pure
    wrapper (:func:`wrapped_ipv4`) is judged as its IPv4 address only, so ``::ffff:8.8.8.8``
    is 8.8.8.8; any other such address as each IPv4 address it carries and as itself.
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone ("fe80::1%eth0")
    except ValueError:
        return "unparsable"
    # The embedded IPv4 addresses first: "::ffff:127.0.0.1" is loopback, not IPv6-reserved.
    judged = [*embedded_ipv4(ip), ip] if ip.version == 6 else [ip]
    if any(a in METADATA_ADDRESSES for a in judged):
        return "cloud_metadata"
    for name in ("unspecified", "multicast"):
        if any(getattr(a, f"is_{name}") for a in judged):
            return name
    if allow_private:
        return None
    wrapped = wrapped_ipv4(ip) if ip.version == 6 else None
    for a in judged if wrapped is None else [wrapped]:
        for name in ("loopback", "link_local", "reserved", "private"):
            if getattr(a, f"is_{name}"):
                return name
        if not a.is_global:
            return "not_global"
    return None


def resolve_host(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to, in the resolver's order (no duplicates)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(info[4][0] for info in infos))


def checked_addresses(host: str, port: int, allow_private: bool,
                      resolve: Callable[[str, int], list[str]] = resolve_host) -> list[str]:
    """The addresses to connect to. Every address the name resolves to must pass
    ``address_refusal``: a name that resolves to one private address among public ones is
    refused whole (fail closed).

    Raises:
        Stop: refused(address), or failed(dns) when the name does not resolve.
    """
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError) as exc:
        raise Stop(FAILED, "dns", f"{host}: {exc}") from None
    if not addresses:
        raise Stop(FAILED, "dns", f"{host}: no address")
    for address in addresses:
        why = address_refusal(address, allow_private)
        if why:
            raise Stop(REFUSED, "address", f"{host} resolves to {address} ({why})")
    return addresses


def is_done(outcome: str, status: int) -> bool:
    """Does a logged outcome settle its URL, so that a resumed run skips it?

    Fetched and refused URLs are done (a refusal is final: to try refused URLs again, say with
    --allow-private, crawl into a new --out), and so are 4xx failures, which a retry would not
    change, except 408 and 429 ("try later"). Timeouts, connection errors, 5xx, redirect
    trouble and robots.txt outages are tried again.
    """
    if outcome in (FETCHED, REFUSED):
        return True
    if outcome == FAILED:
        return 400 <= status < 500 and status not in (408, 429)
    return False
