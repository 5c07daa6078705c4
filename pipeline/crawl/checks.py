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
    are refused unless ``allow_private``. IPv4 addresses embedded in IPv6 ones (mapped
    ``::ffff:a.b.c.d``, 6to4 ``2002::/16``) are judged as the IPv4 address.
    """
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone ("fe80::1%eth0")
    except ValueError:
        return "unparsable"
    if ip.version == 6:
        embedded = ip.ipv4_mapped or ip.sixtofour
        if embedded is not None:
            ip = embedded
    if ip in METADATA_ADDRESSES:
        return "cloud_metadata"
    if ip.is_unspecified:
        return "unspecified"
    if ip.is_multicast:
        return "multicast"
    if allow_private:
        return None
    for name in ("loopback", "link_local", "reserved", "private"):
        if getattr(ip, f"is_{name}"):
            return name
    if not ip.is_global:
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
