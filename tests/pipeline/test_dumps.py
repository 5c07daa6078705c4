"""Wikipedia dumps streamed page by page: namespaces, redirects, UTF-16, truncation."""

from __future__ import annotations

import bz2
import io
import subprocess
import sys

import pytest
from builders import DUMP

from wikisum.pipeline.articles import page_to_article
from wikisum.pipeline.dumps import DumpError, iter_pages


def test_dump_pages_stream_in_order_with_namespace_and_redirect():
    pages = list(iter_pages(io.BytesIO(DUMP.encode("utf-8"))))
    assert [(p.page_id, p.title, p.ns, p.redirect, p.position) for p in pages] == [
        (1, "Alpha", 0, None, 0), (2, "Beta", 0, "Alpha", 1), (3, "Talk:Alpha", 1, None, 2)]
    assert pages[0].text == "'''Alpha''' is a letter."


def test_dump_in_utf16_with_bom_reads_like_utf8():
    text = DUMP.replace("Alpha", "Ålpha")
    pages = list(iter_pages(io.BytesIO(text.encode("utf-16"))))
    assert [p.title for p in pages] == ["Ålpha", "Beta", "Talk:Ålpha"]


def test_truncated_dump_yields_pages_before_the_error():
    cut = DUMP.encode()[: DUMP.index("<page><title>Talk")]
    reader = iter_pages(io.BytesIO(cut + b"<page><title>Broken</ti"))
    assert [p.title for p in [next(reader), next(reader)]] == ["Alpha", "Beta"]
    with pytest.raises(DumpError) as err:
        next(reader)
    assert err.value.pages_read == 2


def test_a_page_over_the_limit_comes_without_its_text_and_the_rest_is_read():
    big = DUMP.replace("'''Alpha''' is a letter.", "x" * 5000)
    pages = list(iter_pages(io.BytesIO(big.encode()), max_text_bytes=1000))
    assert [(p.title, p.too_large, len(p.text)) for p in pages] == [
        ("Alpha", True, 0), ("Beta", False, len("#REDIRECT [[Alpha]]")), ("Talk:Alpha", False, 4)]
    assert page_to_article(pages[0], "f") == "too_large"


# A child process reads a dump holding one page of 200 MB of text under a 400 MB address-space
# limit: with the page's text kept, it could not.
HUGE_PAGE = """
import gzip, io, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))
from wikisum.pipeline.dumps import iter_pages
head = b"<mediawiki><page><title>Huge</title><ns>0</ns><id>1</id><revision><text>"
tail = b"</text></revision></page><page><title>Next</title><ns>0</ns><id>2</id><revision>"
tail += b"<text>small</text></revision></page></mediawiki>"
buf = io.BytesIO()
with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=1) as z:
    z.write(head)
    block = b"a" * (1 << 20)
    for _ in range(200):
        z.write(block)
    z.write(tail)
buf.seek(0)
pages = [(p.title, p.too_large, len(p.text)) for p in iter_pages(gzip.GzipFile(fileobj=buf))]
print(pages)
sys.exit(0 if pages == [("Huge", True, 0), ("Next", False, 5)] else 1)
"""


def test_memory_is_bounded_by_the_limit_not_by_the_page():
    done = subprocess.run([sys.executable, "-c", HUGE_PAGE], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


# Real dumps in ../shared/data (skipped when that folder is absent).


@pytest.mark.shared_data
def test_real_dumps_parse_utf16_included(shared_data):
    dumps = shared_data / "wikipedia" / "dumps"
    en = list(iter_pages(bz2.open(dumps / "enwiki-table-markup.xml.bz2")))
    bg = list(iter_pages(bz2.open(next(dumps.glob("bgwiki-*.xml.bz2")))))
    assert len(en) == 5 and all(p.ns == 0 and p.text for p in en)
    assert [p.title for p in bg][0] == "Григориански календар"
    assert [p.ns for p in bg] == [0, 4, 4]
    articles = [page_to_article(p, "en") for p in en]
    assert all(not isinstance(a, str) and a.lead for a in articles)
    assert page_to_article(bg[1], "bg", lang="bg") == "non_article_namespace"
