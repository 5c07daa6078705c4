"""Pure checks of the crawl: addresses, URLs, which outcomes are settled (sizes: the options'
parser, tests/workflows/test_option_names.py)."""

from __future__ import annotations

import pytest

from wikisum.pipeline.crawl.checks import (
    address_refusal,
    check_url,
    checked_addresses,
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
