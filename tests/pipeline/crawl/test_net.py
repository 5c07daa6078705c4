"""One pinned HTTP exchange: deadlines, the checked address with the original host, TLS."""

from __future__ import annotations

import shutil
import ssl
import subprocess
import time

import pytest
from crawlsite import (
    MAX_BYTES,
    UA,
    Site,
    config,
    page_html,
)

from wikisum.pipeline.crawl.fetch import Crawler
from wikisum.pipeline.crawl.net import FetchError, http_get


@pytest.mark.parametrize("path", ["/drip", "/drip-headers"])
def test_dripping_server_cannot_hold_a_request_past_the_deadline(site, path):
    start = time.monotonic()
    with pytest.raises(FetchError) as err:
        http_get(site.url(path), "127.0.0.1", user_agent=UA, timeout_s=0.4, deadline_s=0.8,
                 max_bytes=MAX_BYTES)
    assert err.value.reason == "timeout" and err.value.retryable
    assert time.monotonic() - start < 2.0


def test_connection_goes_to_the_checked_address_with_the_original_host(site):
    """No second lookup: a name only our resolver knows reaches the server, Host intact."""
    seen = []

    def resolve(host, port):
        seen.append(host)
        return ["127.0.0.1"]

    outcome = Crawler(config(), resolve=resolve).fetch(f"http://site.test:{site.port}/page/b")
    assert (outcome.outcome, outcome.status) == ("fetched", 200)
    assert f"site.test:{site.port}" in site.hosts
    assert seen == ["site.test", "site.test"]  # robots.txt, then the page


@pytest.fixture(scope="module")
def tls_site(tmp_path_factory):
    """The same site over TLS, with a self-signed certificate for the name site.test."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    key, cert = folder / "key.pem", folder / "cert.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "1", "-subj", "/CN=site.test", "-addext",
                    "subjectAltName=DNS:site.test"], check=True, capture_output=True)
    s = Site()
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(cert), str(key))
    s.server.socket = context.wrap_socket(s.server.socket, server_side=True)
    yield s
    s.close()


def test_https_sends_the_name_for_sni_and_verifies_certificates(tls_site):
    url = f"https://site.test:{tls_site.port}/page/a"
    resolve = lambda host, port: ["127.0.0.1"]  # noqa: E731
    untrusted = Crawler(config(), resolve=resolve).fetch(url)
    assert (untrusted.outcome, untrusted.reason) == ("failed", "tls")
    assert "CERTIFICATE_VERIFY_FAILED" in untrusted.error
    outcome = Crawler(config(verify_tls=False), resolve=resolve).fetch(url)
    assert (outcome.outcome, outcome.status, outcome.bytes) == ("fetched", 200,
                                                                len(page_html("a")))
    assert f"site.test:{tls_site.port}" in tls_site.hosts
