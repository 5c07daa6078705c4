"""Pure checks of the crawl: addresses, URLs, which outcomes are settled (sizes: the options'
parser, tests/workflows/test_option_names.py)."""

from __future__ import annotations

import ipaddress

import pytest

from wikisum.pipeline.crawl.checks import (
    address_refusal,
    check_url,
    checked_addresses,
    embedded_ipv4,
    is_done,
)
from wikisum.pipeline.crawl.records import Stop
from wikisum.workflows import cli


@pytest.mark.parametrize("address,why", [
    ("10.1.2.3", "private"), ("172.16.0.1", "private"), ("172.31.255.254", "private"),
    ("192.168.1.1", "private"), ("127.0.0.1", "loopback"), ("127.8.9.10", "loopback"),
    ("::1", "loopback"), ("fe80::1", "link_local"), ("fe80::1%eth0", "link_local"),
    ("169.254.10.10", "link_local"), ("169.254.169.254", "cloud_metadata"),
    ("fd00:ec2::254", "cloud_metadata"), ("224.0.0.1", "multicast"), ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"), ("::", "unspecified"), ("fc00::5", "private"),
    ("::ffff:127.0.0.1", "loopback"), ("::ffff:10.0.0.1", "private"),
    ("2002:7f00:1::", "loopback"), ("100.64.0.1", "not_global"), ("240.0.0.1", "reserved"),
    ("8.8.8.8", None), ("93.184.216.34", None), ("172.32.0.1", None),
    ("2606:4700:4700::1111", None), ("not an address", "unparsable"),
])
def test_address_refusal(address, why):
    assert address_refusal(address) == why


@pytest.mark.parametrize("address,why", [
    ("127.0.0.1", None), ("10.0.0.1", None), ("fe80::1", None), ("192.168.0.1", None),
    ("169.254.169.254", "cloud_metadata"), ("fd00:ec2::254", "cloud_metadata"),
    ("224.0.0.1", "multicast"), ("0.0.0.0", "unspecified"), ("8.8.8.8", None),
])
def test_allow_private_still_refuses_metadata_multicast_unspecified(address, why):
    assert address_refusal(address, allow_private=True) == why


def test_a_name_with_any_private_address_is_refused_whole():
    table = {"mixed.test": ["93.184.216.34", "10.0.0.7"], "public.test": ["93.184.216.34"]}

    def resolve(host, port):
        if host not in table:
            raise OSError("Name or service not known")
        return table[host]

    assert checked_addresses("public.test", 80, False, resolve) == ["93.184.216.34"]
    with pytest.raises(Stop) as stop:
        checked_addresses("mixed.test", 80, False, resolve)
    assert (stop.value.outcome, stop.value.reason) == ("refused", "address")
    assert "10.0.0.7 (private)" in stop.value.error
    with pytest.raises(Stop) as stop:
        checked_addresses("nowhere.test", 80, False, resolve)
    assert (stop.value.outcome, stop.value.reason) == ("failed", "dns")


@pytest.mark.parametrize("raw,expected", [
    ("http://Example.com/a#x", ("http://example.com/a", "")),
    ("  https://example.com  ", ("https://example.com/", "")),
    ("ftp://example.com/file", ("ftp://example.com/file", "scheme")),
    ("mailto:someone@example.org", ("mailto:someone@example.org", "scheme")),
    ("javascript:alert(1)", ("javascript:alert(1)", "scheme")),
    ("file:///etc/passwd", ("file:///etc/passwd", "scheme")),
    ("http://", ("http://", "invalid_url")),
    ("not a url", ("not a url", "invalid_url")),
    ("//example.com/x", ("//example.com/x", "invalid_url")),
    ("http://[::1", ("http://[::1", "invalid_url")),
])
def test_check_url_scheme_and_validity(raw, expected):
    assert check_url(raw) == expected


def test_cli_rejects_a_bad_max_bytes(capsys):
    with pytest.raises(SystemExit):
        cli.main(["crawl", "--urls", "u.txt", "--out", "o", "--max-bytes", "lots"])
    assert "not a size: 'lots'" in capsys.readouterr().err


@pytest.mark.parametrize("outcome,status,done", [
    ("fetched", 200, True), ("refused", 0, True), ("failed", 404, True), ("failed", 410, True),
    ("failed", 429, False), ("failed", 408, False), ("failed", 503, False),
    ("failed", 0, False), ("failed", 302, False), ("skipped", 0, False),
])
def test_is_done(outcome, status, done):
    assert is_done(outcome, status) is done


# 169.254.169.254 (a9fe:a9fe), the cloud metadata address, in every IPv6 spelling that embeds
# an IPv4 address: refused with or without --allow-private (pure function: nothing connects).
METADATA_SPELLINGS = [
    "::ffff:169.254.169.254",  # IPv4-mapped
    "0:0:0:0:0:FFFF:A9FE:A9FE",  # the same, spelled out and upper case
    "::169.254.169.254",  # IPv4-compatible
    "::ffff:0:169.254.169.254",  # IPv4-translated (SIIT)
    "::ffff:0:a9fe:a9fe",  # ... in hex
    "64:ff9b::169.254.169.254",  # NAT64 well-known prefix
    "64:ff9b::a9fe:a9fe%eth0",  # ... with a zone
    "64:ff9b:1::169.254.169.254",  # NAT64 local-use prefix, /96
    "64:ff9b:1:0:a9:fea9:fe00:0",  # ... /64 (RFC 6052: bits 72-103)
    "64:ff9b:1:a9:fe:a9fe::",  # ... /56 (bits 56-63, 72-95)
    "64:ff9b:1:a9fe:a9:fe00::",  # ... /48 (bits 48-63, 72-87)
    "2002:a9fe:a9fe::1",  # 6to4 (bits 16-47)
    "2001:0:a9fe:a9fe::1",  # Teredo server (bits 32-63)
    "2001:0:4136:e378:8000:63bf:5601:5601",  # Teredo client (last 32 bits, inverted)
]


@pytest.mark.parametrize("allow_private", [False, True])
@pytest.mark.parametrize("address", METADATA_SPELLINGS)
def test_metadata_address_is_refused_in_every_ipv6_spelling(address, allow_private):
    assert address_refusal(address, allow_private) == "cloud_metadata"


@pytest.mark.parametrize("address,why,why_allowed", [
    ("::10.0.0.1", "private", None), ("64:ff9b::10.0.0.1", "private", None),
    ("64:ff9b::127.0.0.1", "loopback", None), ("64:ff9b:1::192.168.0.1", "private", None),
    ("2002:c0a8:1::", "private", None), ("2001:0:a00:1::1", "private", None),
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback", None),  # Teredo client 127.0.0.1
    ("64:ff9b::169.254.1.1", "link_local", None),
    ("64:ff9b::224.0.0.1", "multicast", "multicast"), ("::ffff:0.0.0.0", "unspecified",
                                                       "unspecified"),
    ("2002:808:808::1", None, None),  # 6to4 of a public address
    ("::1", "loopback", None), ("::", "unspecified", "unspecified"),
    # Pure wrappers are their IPv4 address, not an IPv6-reserved one: public ones are fetched.
    ("::ffff:8.8.8.8", None, None), ("::ffff:0:8.8.8.8", None, None),
    ("::8.8.8.8", None, None), ("64:ff9b::8.8.8.8", None, None),
    ("::ffff:10.0.0.1", "private", None), ("::ffff:0:10.0.0.1", "private", None),
    ("::ffff:100.64.0.1", "not_global", None), ("::ffff:240.0.0.1", "reserved", None),
    ("::ffff:169.254.169.254", "cloud_metadata", "cloud_metadata"),
    ("::ffff:224.0.0.1", "multicast", "multicast"),
])
def test_embedded_ipv4_addresses_are_judged_as_themselves(address, why, why_allowed):
    assert address_refusal(address) == why
    assert address_refusal(address, allow_private=True) == why_allowed


def test_only_pure_wrappers_take_their_ipv4_address_scope():
    # The local-use NAT64 prefix is not globally reachable (RFC 8215), and a Teredo address is
    # not global, whatever public IPv4 address they carry.
    assert address_refusal("64:ff9b:1::8.8.8.8") is not None
    assert address_refusal("64:ff9b:1::8.8.8.8", allow_private=True) is None
    assert address_refusal("2001:0:4136:e378:8000:63bf:3fff:fdd2") is not None


def test_embedded_ipv4_reads_each_prefix():
    def v4s(address):
        return [str(a) for a in embedded_ipv4(ipaddress.IPv6Address(address))]

    assert v4s("64:ff9b::8.8.8.8") == ["8.8.8.8"]
    assert v4s("::1.2.3.4") == ["1.2.3.4"]
    assert v4s("::1") == [] and v4s("::") == [] and v4s("2606:4700::1111") == []
    assert v4s("2001:0:4136:e378:8000:63bf:3fff:fdd2") == ["65.54.227.120", "192.0.2.45"]
    assert "169.254.169.254" in v4s("64:ff9b:1:a9fe:a9:fe00::")
