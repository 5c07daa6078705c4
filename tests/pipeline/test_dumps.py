"""Wikipedia dumps streamed page by page: namespaces, redirects, UTF-16, truncation, and hostile
dumps (garbled ids, foreign XML namespaces, deep nesting, huge markup)."""

from __future__ import annotations

import bz2
import io
import json
import re
import subprocess
import sys
from types import SimpleNamespace
from xml.parsers import expat

import pytest
from builders import DUMP

from wikisum.pipeline import dumps
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


# Garbled values fail closed: a page whose id or namespace is not a plain integer (or whose id
# does not fit the int64 column) is never an article.

def _page(inner: str, title: str = "Alpha") -> str:
    return (f"<page><title>{title}</title>{inner}<revision><text>'''{title}''' is a letter."
            "</text></revision></page>")


@pytest.mark.parametrize("fields,reason", [
    ("<ns>one</ns><id>1</id>", "bad_ns"),
    ("<ns>0x0</ns><id>1</id>", "bad_ns"),
    ("<id>1</id>", "bad_ns"),  # no <ns>
    ("<ns>0</ns><ns>1</ns><id>1</id>", "bad_ns"),
    ("<ns>0</ns><id>99999999999999999999</id>", "bad_id"),
    ("<ns>0</ns><id>9223372036854775808</id>", "bad_id"),  # 2**63
    ("<ns>0</ns><id>-1</id>", "bad_id"),
    ("<ns>0</ns><id>1_0</id>", "bad_id"),  # int() would take these three
    ("<ns>0</ns><id>+1</id>", "bad_id"),
    ("<ns>0</ns><id>\u0661</id>", "bad_id"),
    ("<ns>0</ns>", "bad_id"),  # no <id>
    ("<ns>0</ns><id>1</id><id>2</id>", "bad_id"),
    (f"<ns>0</ns><id>{'0' * 5000}1</id>", "bad_id"),  # cut at FIELD_CHARS
])
def test_a_garbled_id_or_namespace_is_a_drop_reason_never_an_article(fields, reason):
    dump = f"<mediawiki>{_page(fields)}{_page('<ns>0</ns><id>2</id>', 'Next')}</mediawiki>"
    pages = list(iter_pages(io.BytesIO(dump.encode())))
    assert [p.title for p in pages] == ["Alpha", "Next"]
    assert page_to_article(pages[0], "f") == reason
    assert pages[0].problem == reason and pages[0].detail
    assert page_to_article(pages[1], "f").id == 2


def test_ids_up_to_int64_and_negative_namespaces_are_kept():
    dump = (f"<mediawiki>{_page('<ns> 0 </ns><id> 9223372036854775807 </id>')}"
            f"{_page('<ns>-1</ns><id>0</id>', 'Special:X')}</mediawiki>")
    pages = list(iter_pages(io.BytesIO(dump.encode())))
    assert [(p.page_id, p.ns, p.problem) for p in pages] == [(2**63 - 1, 0, ""), (0, -1, "")]


# Only MediaWiki's elements count: an element of another namespace (and all it holds) is skipped.

FOREIGN = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/"
    xmlns:evil="urn:x" xmlns:mw="http://www.mediawiki.org/xml/export-0.10/">
  <evil:page><title>Evil</title><ns>0</ns><id>66</id>
    <revision><text>forged page</text></revision></evil:page>
  <page><title>Alpha</title><evil:title>Forged</evil:title><ns>0</ns><evil:ns>1</evil:ns>
    <id>1</id><evil:id>7</evil:id><evil:redirect title="Evil"/>
    <revision><text>'''Alpha''' is a letter.</text><evil:text>INJECTED</evil:text>
      <evil:wrap><text>INJECTED too</text></evil:wrap></revision>
    <evil:revision><text>INJECTED three</text></evil:revision></page>
  <mw:page><mw:title>Beta</mw:title><mw:ns>0</mw:ns><mw:id>2</mw:id>
    <mw:revision><mw:text>'''Beta''' is a letter.</mw:text></mw:revision></mw:page>
</mediawiki>
"""


def test_elements_of_a_foreign_namespace_are_ignored_with_their_text():
    pages = list(iter_pages(io.BytesIO(FOREIGN.encode())))
    assert [(p.page_id, p.title, p.ns, p.redirect, p.text) for p in pages] == [
        (1, "Alpha", 0, None, "'''Alpha''' is a letter."),
        (2, "Beta", 0, None, "'''Beta''' is a letter.")]


@pytest.mark.parametrize("root", [
    "<mediawiki>",  # no namespace
    '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.6/">',
    '<mw:mediawiki xmlns:mw="http://www.mediawiki.org/xml/export-0.11/">',
])
def test_every_export_version_and_no_namespace_read_alike(root):
    name = root[1:].split()[0].rstrip(">")
    prefix = name[:-len("mediawiki")]
    body = DUMP.split(">", 1)[1].rsplit("</mediawiki>", 1)[0]
    if prefix:
        body = re.sub(r"<(/?)(\w+)", rf"<\1{prefix}\2", body)
    pages = list(iter_pages(io.BytesIO(f"{root}{body}</{name}>".encode())))
    assert [(p.page_id, p.title, p.ns, p.redirect) for p in pages] == [
        (1, "Alpha", 0, None), (2, "Beta", 0, "Alpha"), (3, "Talk:Alpha", 1, None)]


# Before export-0.6 a page has no <ns>: its namespace is its title's prefix, as the siteinfo
# lists them (the layout of a real 0.3 to 0.5 dump).
SITEINFO = """<siteinfo><sitename>Wikipedia</sitename><case>first-letter</case><namespaces>
  <namespace key="-1">Special</namespace><namespace key="0" /><namespace key="1">Talk</namespace>
  <namespace key="4">Wikipedia</namespace></namespaces></siteinfo>"""


def _old_page(title: str, page_id: int, text: str, extra: str = "") -> str:
    return (f"<page><title>{title}</title><id>{page_id}</id>{extra}<revision><id>9</id>"
            f'<timestamp>2005-01-01T00:00:00Z</timestamp><text xml:space="preserve">{text}'
            "</text></revision></page>")


OLD_PAGES = (_old_page("Foo", 1, "'''Foo''' is a thing.")
             + _old_page("Talk:Foo", 2, "'''Foo''' is discussed.")
             + _old_page("Wikipedia:About", 3, "'''About''' this wiki.")
             + _old_page("Foo: the sequel", 4, "'''Foo: the sequel''' is a film.")
             + _old_page("Bar", 5, "#REDIRECT [[Foo]]", "<redirect />"))


@pytest.mark.parametrize("root", [
    '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.3/" version="0.3" xml:lang="en">',
    '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.4/" version="0.4" xml:lang="en">',
    '<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.5/">',
    '<mediawiki version="0.5">',
    "<mediawiki>",  # no version stated: the namespace list says enough
])
def test_a_dump_before_export_0_6_takes_the_namespace_from_the_title(root):
    dump = f"{root}{SITEINFO}{OLD_PAGES}</mediawiki>"
    pages = list(iter_pages(io.BytesIO(dump.encode())))
    assert [(p.title, p.ns, p.problem) for p in pages] == [
        ("Foo", 0, ""), ("Talk:Foo", 1, ""), ("Wikipedia:About", 4, ""),
        ("Foo: the sequel", 0, ""), ("Bar", 0, "")]
    got = [page_to_article(p, "f") for p in pages]
    assert got[0].id == 1 and got[0].lead == "Foo is a thing."
    assert got[1:3] == ["non_article_namespace"] * 2
    assert got[3].title == "Foo: the sequel"
    assert got[4] == "redirect"


def test_a_dump_before_export_0_6_without_a_namespace_list_is_namespace_0():
    dump = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.3/" version="0.3">'
            f"{_old_page('Foo', 1, 'x')}</mediawiki>")
    [page] = iter_pages(io.BytesIO(dump.encode()))
    assert (page.ns, page.problem) == (0, "")


@pytest.mark.parametrize("root,siteinfo", [
    ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10">', SITEINFO),
    ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.6/">', ""),
    ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.4/" version="0.10">', SITEINFO),
    ('<mediawiki version="zero">', SITEINFO),
    ("<mediawiki>", ""),  # neither a version nor a namespace list
    ("<mediawiki>", SITEINFO.replace('key="1"', 'key="one"')),  # the title's key is garbled
    ("<mediawiki>", SITEINFO.replace("</namespaces>",
                                     '<namespace key="3">Talk</namespace></namespaces>')),
])
def test_a_missing_namespace_where_one_is_due_or_unknowable_is_bad_ns(root, siteinfo):
    dump = f"{root}{siteinfo}{_old_page('Talk:Foo', 2, 'x')}</mediawiki>"
    [page] = iter_pages(io.BytesIO(dump.encode()))
    assert (page.ns, page.problem) == (-1, "bad_ns") and page.detail.startswith("<ns> missing")
    assert page_to_article(page, "f") == "bad_ns"


def test_a_listed_namespace_still_yields_to_the_pages_own_ns():
    dump = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">'
            f"{SITEINFO}{_page('<ns>0</ns><id>1</id>', 'Talk:Foo')}</mediawiki>")
    [page] = iter_pages(io.BytesIO(dump.encode()))
    assert (page.ns, page.problem) == (0, "")


def test_a_doctype_stops_the_file_before_any_entity_is_declared():
    dump = ('<!DOCTYPE mediawiki [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
            "<mediawiki>" + _page("<ns>0</ns><id>1</id>") + "</mediawiki>")
    with pytest.raises(DumpError) as err:
        list(iter_pages(io.BytesIO(dump.encode())))
    assert err.value.reason == "doctype" and err.value.pages_read == 0


def test_a_text_cut_into_many_pieces_is_too_large_not_held_piece_by_piece():
    # 2,000 bytes of text in 1,000 pieces (each an object of ~50 bytes) under a 100 KB limit.
    inner = "<ns>0</ns><id>1</id><revision><text>" + "ab<x/>" * 1000 + "</text></revision>"
    dump = f"<mediawiki><page><title>A</title>{inner}</page></mediawiki>"
    [page] = iter_pages(io.BytesIO(dump.encode()), max_text_bytes=100_000)
    assert page.too_large and page.text == ""


# Tiny compressed dumps that would take unbounded time or memory, read in a child process with a
# wall-time limit and an address-space limit. Each has a good page before the hostile part,
# which must come out, and a page after it (the file stops at the hostile part).
HOSTILE = """
import bz2, io, json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (400 << 20, 400 << 20))
from wikisum.pipeline.dumps import DumpError, iter_pages
kind = sys.argv[1]
page = b"<page><title>%s</title><ns>0</ns><id>%d</id><revision><text>t</text></revision></page>"
z = bz2.BZ2Compressor(9)
out = [z.compress(b"<mediawiki>" + page % (b"Good", 1))]
if kind == "deep":  # 200,000 nested elements outside <page>, text in each
    out += [z.compress(b"<x> " * 200_000), z.compress(b"</x>" * 200_000)]
else:  # a 200 MB attribute value, or a 200 MB comment
    out.append(z.compress(b'<siteinfo note="' if kind == "attribute" else b"<!--"))
    block = b"a" * (1 << 20)
    out += [z.compress(block) for _ in range(200)]
    out.append(z.compress(b'"/>' if kind == "attribute" else b"-->"))
out += [z.compress(page % (b"After", 2) + b"</mediawiki>"), z.flush()]
data = b"".join(out)
pages, reason = [], None
try:
    for p in iter_pages(bz2.BZ2File(io.BytesIO(data))):
        pages.append(p.title)
except DumpError as exc:
    reason = exc.reason
with open("/proc/self/status") as status:
    peak = next(int(l.split()[1]) for l in status if l.startswith("VmHWM")) // 1024
print(json.dumps({"bytes": len(data), "pages": pages, "reason": reason, "peak_mb": peak}))
"""


@pytest.mark.parametrize("kind,reason", [("deep", "too_deep"), ("attribute", "markup_too_large"),
                                         ("comment", "markup_too_large")])
def test_hostile_markup_stops_the_file_in_bounded_time_and_memory(kind, reason):
    done = subprocess.run([sys.executable, "-c", HOSTILE, kind], capture_output=True, text=True,
                          timeout=30, check=False)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    got = json.loads(done.stdout)
    assert got["bytes"] < 2000  # the bomb is tiny
    assert (got["pages"], got["reason"]) == (["Good"], reason)
    assert got["peak_mb"] < 150, got  # the reader holds about 2 MB of the markup


# expat >= 2.6 defers re-parsing a long partial token, and after it moves its buffer it has no
# event position: CurrentByteIndex is -1 (expat 2.5 here never is). A parser that answers -1
# for most slices stands in for it.
class _LostPosition:
    def __init__(self, parser):
        object.__setattr__(self, "_parser", parser)
        object.__setattr__(self, "deferral", [])
        object.__setattr__(self, "calls", 0)

    def __getattr__(self, name):
        return getattr(self._parser, name)

    def __setattr__(self, name, value):
        setattr(self._parser, name, value)

    def SetReparseDeferralEnabled(self, enabled):  # noqa: N802 (expat's name)
        self.deferral.append(enabled)

    @property
    def CurrentByteIndex(self):  # noqa: N802
        object.__setattr__(self, "calls", self.calls + 1)
        return self._parser.CurrentByteIndex if self.calls % 3 == 0 else -1


@pytest.fixture
def lost_position(monkeypatch):
    made = []

    def create(*args, **kwargs):
        made.append(_LostPosition(expat.ParserCreate(*args, **kwargs)))
        return made[-1]

    monkeypatch.setattr(dumps, "expat", SimpleNamespace(ParserCreate=create,
                                                        ExpatError=expat.ExpatError))
    return made


def test_a_lost_byte_index_never_refuses_a_normal_dump(lost_position):
    body = "".join(_page(f"<ns>0</ns><id>{i}</id>", f"T{i}").replace("a letter", "x" * 5000)
                   for i in range(1, 601))
    dump = f"<mediawiki>{body}</mediawiki>".encode()
    assert len(dump) > 3_000_000
    pages = list(iter_pages(io.BytesIO(dump)))
    assert [p.page_id for p in pages] == list(range(1, 601))
    [parser] = lost_position
    assert parser.deferral == [False] and parser.calls > 40


def test_a_lost_byte_index_still_bounds_the_markup(lost_position):
    dump = ("<mediawiki>" + _page("<ns>0</ns><id>1</id>", "Good") + "<!--" + "a" * (3 << 20)
            + "-->" + _page("<ns>0</ns><id>2</id>", "After") + "</mediawiki>")
    reader = iter_pages(io.BytesIO(dump.encode()))
    assert next(reader).title == "Good"
    with pytest.raises(DumpError) as err:
        next(reader)
    assert err.value.reason == "markup_too_large"
