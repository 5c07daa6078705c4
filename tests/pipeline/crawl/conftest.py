"""Fixtures of the crawl tests: one local web site per test module."""

import pytest
from crawlsite import Site


@pytest.fixture(scope="module")
def site():
    s = Site()
    yield s
    s.close()
