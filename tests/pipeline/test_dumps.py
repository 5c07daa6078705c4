"""Wikipedia dumps streamed page by page: namespaces, redirects, UTF-16, truncation."""

from __future__ import annotations

import io

import pytest
from builders import DUMP

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
