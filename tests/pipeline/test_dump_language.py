"""The dump's language as the launcher reads it (the head of the first dump, in every
compression) and as a whole `wikisum ingest` records it: --lang defaults to it, a disagreeing
--lang is kept with a warning, a dump naming none is English with a log line."""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
import subprocess
import sys

import pytest

from wikisum.pipeline.ingest.articles import dump_siteinfo

HEAD = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" '
        'xml:lang="{xml_lang}">\n{siteinfo}')
SITEINFO = """  <siteinfo>
    <sitename>Вікіпедія</sitename>
    <dbname>{dbname}</dbname>
    <namespaces>
      <namespace key="0" case="first-letter" />
      <namespace key="6" case="first-letter">Файл</namespace>
      <namespace key="14" case="first-letter">Категорія</namespace>
    </namespaces>
  </siteinfo>
"""
PAGE = """  <page>
    <title>Київ</title>
    <ns>0</ns>
    <id>7</id>
    <revision><id>1</id><text>Київ — столиця.[[Категорія:Столиці]]</text></revision>
  </page>
"""


def dump(dbname: str | None = "ukwiki", xml_lang: str = "uk", pages: str = PAGE) -> bytes:
    siteinfo = SITEINFO.format(dbname=dbname) if dbname is not None else ""
    return (HEAD.format(xml_lang=xml_lang, siteinfo=siteinfo) + pages + "</mediawiki>\n"
            ).encode()


# The dbname table and read_siteinfo itself: tests/pipeline/test_dump_siteinfo.py.


@pytest.mark.parametrize(("suffix", "compress"), [
    ("", lambda b: b), (".bz2", bz2.compress), (".gz", gzip.compress), (".xz", lzma.compress)])
def test_the_launcher_reads_a_dump_compressed_as_the_job_does(tmp_path, suffix, compress):
    (tmp_path / f"w.xml{suffix}").write_bytes(compress(dump("viwiki", "vi")))
    path, site = dump_siteinfo([str(tmp_path / f"w.xml{suffix}")])
    assert path.endswith(f"w.xml{suffix}") and site.language == "vi"


def test_dump_siteinfo_reads_the_first_matched_dump(tmp_path):
    (tmp_path / "a.xml.xz").write_bytes(lzma.compress(dump("viwiki", "vi")))
    (tmp_path / "b.xml.bz2").write_bytes(bz2.compress(dump("jawiki", "ja")))
    path, site = dump_siteinfo([str(tmp_path / "*.xml.*")])
    assert path.endswith("a.xml.xz") and site.language == "vi"
    path, site = dump_siteinfo([f"{tmp_path / 'b.xml.bz2'},{tmp_path / 'a.xml.xz'}"])
    assert site.language == "ja"


# -- the command line ----------------------------------------------------------------------------

def _ingest_lang(tmp_path, data: bytes, *extra: str) -> tuple[str, str]:
    """The articles' language an ingest settles on (its summary's options), and stderr."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    wiki = tmp_path / "w.xml.bz2"
    wiki.write_bytes(bz2.compress(data))
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "wikisum.workflows.cli", "ingest", "--wiki", str(wiki), "--out",
         str(out), "--allow-empty", "--reference-lang", "any", *extra],
        capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = (out / "summary.json").read_text()
    return re.search(r'\n  "lang": "([^"]*)"', summary)[1], done.stderr


def test_ingest_takes_the_dumps_language_and_keeps_an_explicit_one(tmp_path):
    lang, err = _ingest_lang(tmp_path / "a", dump("jawiki", "ja"))
    assert lang == "ja" and "warning: --lang" not in err and "no language" not in err
    lang, err = _ingest_lang(tmp_path / "b", dump("jawiki", "ja"), "--lang", "de")
    assert lang == "de"
    assert "warning: --lang de" in err and "jawiki (ja)" in err
    lang, err = _ingest_lang(tmp_path / "c", dump("jawiki", "ja"), "--lang", "ja")
    assert lang == "ja" and "warning: --lang" not in err


def test_ingest_without_a_language_in_the_dump_takes_english_and_says_so(tmp_path):
    data = b'<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/">' + PAGE.encode() + \
        b"</mediawiki>"
    lang, err = _ingest_lang(tmp_path, data)
    assert lang == "en"
    assert "names no language" in err and "--lang" in err
