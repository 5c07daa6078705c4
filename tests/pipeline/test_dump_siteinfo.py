"""A dump's ``<siteinfo>``: its dbname mapped to a language code, its namespace names, read
from the head of a dump in any compression, and handed to the page reader's callback."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma

import pytest

from wikisum.pipeline.dumps import SiteInfo, dbname_language, iter_pages, read_siteinfo

SITEINFO = """<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10"
 xml:lang="{xml_lang}">
  <siteinfo>
    <sitename>Вікіпедія</sitename>
    <dbname>{dbname}</dbname>
    <namespaces>
      <namespace key="-2" case="first-letter">Медіа</namespace>
      <namespace key="0" case="first-letter" />
      <namespace key="6" case="first-letter">Файл</namespace>
      <namespace key="14" case="first-letter">Категорія</namespace>
    </namespaces>
  </siteinfo>
  <page><title>Київ</title><ns>0</ns><id>1</id><revision><text>'''Київ''' — столиця.</text>
  </revision></page>
</mediawiki>"""


def _dump(dbname: str = "ukwiki", xml_lang: str = "uk") -> bytes:
    return SITEINFO.format(dbname=dbname, xml_lang=xml_lang).encode()


@pytest.mark.parametrize(("dbname", "code"), [
    ("enwiki", "en"), ("jawiki", "ja"), ("ukwiki", "uk"), ("viwiki", "vi"), ("arwiki", "ar"),
    ("hiwiki", "hi"), ("zhwiki", "zh"), ("ruwiki", "ru"), ("bnwiki", "bn"),
    ("zh_yuewiki", "zh-yue"), ("simplewiki", "en"), ("be_x_oldwiki", "be-tarask"),
    ("nowiki", "no"), ("zh_min_nanwiki", "nan"), ("zh_classicalwiki", "lzh"),
    ("alswiki", "gsw"), ("map_bmswiki", "map-bms"), ("frwiktionary", "fr"),
    ("dewikisource", "de"), (" JAWIKI ", "ja"),
])
def test_a_dbname_names_its_language(dbname, code):
    assert dbname_language(dbname) == code


@pytest.mark.parametrize("dbname", ["commonswiki", "metawiki", "wikidatawiki", "specieswiki",
                                    "mediawikiwiki", "wiki", "", None, "enwik", "1wiki",
                                    "ja wiki"])
def test_a_dbname_of_no_language_edition_names_none(dbname):
    assert dbname_language(dbname) is None


def test_the_siteinfo_holds_the_dbname_language_and_namespace_names():
    site = read_siteinfo(io.BytesIO(_dump()))
    assert site.dbname == "ukwiki"
    assert site.language == "uk"
    assert site.names(14) == ("Категорія",)
    assert site.names(6) == ("Файл",)
    assert site.names(-2) == ("Медіа",)
    assert site.names(10) == ()


def test_without_a_dbname_the_root_xml_lang_names_the_language():
    text = _dump().replace(b"<dbname>ukwiki</dbname>", b"")
    assert read_siteinfo(io.BytesIO(text)).language == "uk"
    # a dbname wins over xml:lang (MediaWiki writes the content language there: nb for nowiki)
    assert read_siteinfo(io.BytesIO(_dump("nowiki", "nb"))).language == "no"


@pytest.mark.parametrize("text", [
    b"<mediawiki><page><title>A</title><ns>0</ns><id>1</id><revision><text>x</text>"
    b"</revision></page></mediawiki>",  # no siteinfo, no xml:lang
    b"", b"not xml at all", b"\x00\xff" * 100,
])
def test_a_head_without_siteinfo_gives_none_and_never_raises(text):
    assert read_siteinfo(io.BytesIO(text)) is None


def test_only_the_head_is_read():
    class Counting(io.BytesIO):
        read_bytes = 0

        def read(self, n=-1):
            data = super().read(n)
            Counting.read_bytes += len(data)
            return data

    pages = "".join(f"<page><title>P{i}</title><ns>0</ns><id>{i}</id><revision><text>"
                    f"{'x' * 1000}</text></revision></page>" for i in range(2, 3000))
    text = _dump().replace(b"</mediawiki>", pages.encode() + b"</mediawiki>")
    stream = Counting(text)
    assert read_siteinfo(stream).language == "uk"
    assert Counting.read_bytes < len(text) // 10


@pytest.mark.parametrize("compress", [bz2.compress, gzip.compress, lzma.compress, bytes],
                         ids=["bz2", "gz", "xz", "plain"])
def test_the_head_of_a_dump_file_reads_in_every_compression(tmp_path, compress):
    from wikisum.pipeline.ingest.articles import dump_siteinfo

    suffix = {bz2.compress: ".bz2", gzip.compress: ".gz", lzma.compress: ".xz"}.get(compress, "")
    path = tmp_path / f"ukwiki-pages-articles.xml{suffix}"
    path.write_bytes(compress(_dump()))
    found, site = dump_siteinfo([str(tmp_path / "*.xml*")])
    assert found == str(path)
    assert site.language == "uk"


def test_a_corrupt_compressed_head_gives_none(tmp_path):
    from wikisum.pipeline.ingest.articles import dump_siteinfo

    path = tmp_path / "x.xml.xz"
    path.write_bytes(b"\xfd7zXZ\x00" + b"garbage" * 10)
    assert dump_siteinfo([str(path)]) == (str(path), None)


def test_the_page_reader_hands_the_siteinfo_over_before_the_first_page():
    events = []
    for page in iter_pages(io.BytesIO(_dump()), on_siteinfo=events.append):
        events.append(page.title)
    assert isinstance(events[0], SiteInfo) and events[0].dbname == "ukwiki"
    assert events[1:] == ["Київ"]
