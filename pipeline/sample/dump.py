"""Writing the sample's Wikipedia dump: a MediaWiki pages-articles export (schema 0.10), bz2.

The articles are interleaved with the pages that the pipeline must drop (redirects, other
namespaces, a disambiguation page, an empty lead, an article without references).
"""

from __future__ import annotations

import bz2
import hashlib
from datetime import timedelta
from pathlib import Path

from wikisum.pipeline.sample.planner import Planner
from wikisum.pipeline.sample.records import BASE_DATE


def _xml_escape(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def _sha1_base36(text: str) -> str:
    n = int(hashlib.sha1(text.encode("utf-8")).hexdigest(), 16)
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"
    out = ""
    while n:
        n, r = divmod(n, 36)
        out = digits[r] + out
    return out.rjust(31, "0")


SITEINFO = """  <siteinfo>
    <sitename>Wikipedia</sitename>
    <dbname>enwiki</dbname>
    <base>https://en.wikipedia.org/wiki/Main_Page</base>
    <generator>MediaWiki 1.35.0-wmf.25</generator>
    <case>first-letter</case>
    <namespaces>
      <namespace key="0" case="first-letter" />
      <namespace key="1" case="first-letter">Talk</namespace>
      <namespace key="4" case="first-letter">Wikipedia</namespace>
      <namespace key="10" case="first-letter">Template</namespace>
      <namespace key="14" case="first-letter">Category</namespace>
    </namespaces>
  </siteinfo>
"""


def _page_xml(page_id: int, title: str, ns: int, text: str, i: int,
              redirect: str | None = None) -> str:
    stamp = (BASE_DATE - timedelta(days=400 - i)).strftime("%Y-%m-%dT%H:%M:%SZ")
    redirect_el = f'    <redirect title="{_xml_escape(redirect)}" />\n' if redirect else ""
    return (
        "  <page>\n"
        f"    <title>{_xml_escape(title)}</title>\n"
        f"    <ns>{ns}</ns>\n"
        f"    <id>{page_id}</id>\n"
        f"{redirect_el}"
        "    <revision>\n"
        f"      <id>{900000 + page_id}</id>\n"
        f"      <parentid>{800000 + page_id}</parentid>\n"
        f"      <timestamp>{stamp}</timestamp>\n"
        "      <contributor>\n        <username>Sample editor</username>\n"
        "        <id>4242</id>\n      </contributor>\n"
        "      <comment>sample revision</comment>\n"
        "      <model>wikitext</model>\n      <format>text/x-wiki</format>\n"
        f'      <text bytes="{len(text.encode("utf-8"))}" xml:space="preserve">'
        f"{_xml_escape(text)}</text>\n"
        f"      <sha1>{_sha1_base36(text)}</sha1>\n"
        "    </revision>\n"
        "  </page>\n"
    )


def _extra_pages(planner: Planner) -> list[dict]:
    """Pages the pipeline must drop: redirects, other namespaces, a disambiguation page, an
    article with an empty lead and one without references."""
    arts = planner.articles
    first = arts[0]
    extra = []
    for j, a in enumerate(arts[:3]):
        title = f"{a.title} ({a.entity.kind})" if j != 1 else a.title.upper()
        if title == a.title:
            title += " (redirect)"
        extra.append(dict(title=title, ns=0, kind="redirect", redirect_to=a.title,
                          text=f"#REDIRECT [[{a.title}]]\n\n{{{{R from alternative name}}}}\n"))
    extra.append(dict(title=f"Talk:{first.title}", ns=1, kind="non_article",
                      text="== Sources ==\nThe lead needs a better citation. ~~~~\n"))
    extra.append(dict(title="Template:Infobox settlement", ns=10, kind="non_article",
                      text="{| class=\"infobox\"\n|-\n| {{{name}}}\n|}\n<noinclude>"
                           "[[Category:Infobox templates]]</noinclude>\n"))
    extra.append(dict(title="Wikipedia:Sample corpus", ns=4, kind="non_article",
                      text="This page describes the sample corpus. It is not an article.\n"))
    links = "\n".join(f"* [[{a.title}]], a {a.entity.kind} in the {a.entity.region}"
                      for a in arts[:3])
    extra.append(dict(title=f"{first.title.split()[0]} (disambiguation)", ns=0,
                      kind="disambiguation",
                      text=f"'''{first.title.split()[0]}''' may refer to:\n{links}\n\n"
                           "{{disambiguation}}\n"))
    site = planner.sites[0]
    extra.append(dict(title="History of the sample valleys", ns=0, kind="empty_lead",
                      text="{{Use dmy dates|date=March 2020}}\n== Early history ==\nThe valleys "
                           "were settled slowly.<ref>{{cite web |url=" + site.scheme + "://"
                           + site.host + "/history/valleys |title=Valleys}}</ref>\n"))
    extra.append(dict(title="Minor sample hamlet", ns=0, kind="no_references",
                      text="'''Minor sample hamlet''' is a hamlet with no sources.\n\n"
                           "== Geography ==\nIt is small.\n"))
    return extra



def write_dump(path: Path, planner: Planner) -> tuple[list[dict], list[tuple]]:
    """Write the dump of the planned articles and the pages to drop to ``path``; return the
    pages to drop and every page's ``(page_id, title, ns, text, kind, redirect_to)``, in page-id
    order."""
    extra = _extra_pages(planner)
    entries = [(a.page_id, a.title, 0, a.rendered.wikitext, "article", None)
               for a in planner.articles]
    last_id = planner.articles[-1].page_id
    for j, p in enumerate(extra):
        entries.append((last_id + 3 + 2 * j, p["title"], p["ns"], p["text"], p["kind"],
                        p.get("redirect_to")))
    entries.sort(key=lambda x: x[0])
    xml = ['<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" '
           'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
           'xsi:schemaLocation="http://www.mediawiki.org/xml/export-0.10/ '
           'http://www.mediawiki.org/xml/export-0.10.xsd" version="0.10" xml:lang="en">\n',
           SITEINFO]
    for i, (pid, title, ns, text, _kind, redirect) in enumerate(entries):
        xml.append(_page_xml(pid, title, ns, text, i, redirect))
    xml.append("</mediawiki>\n")
    path.write_bytes(bz2.compress("".join(xml).encode("utf-8"), 9))
    return extra, entries
