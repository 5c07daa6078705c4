"""Renderers for the sample corpus: article wikitext, web pages in HTML, WET text.

Pure functions of their arguments (randomness comes in through an explicit ``random.Random``).
"""

from __future__ import annotations

import html
import random
from dataclasses import dataclass

from wikisum.pipeline.sample.world import Entity, lead_sentences, plain, section_sentences

# --------------------------------------------------------------------------------------------
# Wikitext


@dataclass(frozen=True)
class Citation:
    """One ``<ref>`` as written in the article.

    ``style`` is one of ``cite web``, ``cite news``, ``bare``, ``bracket`` (``[url label]``) or
    ``archive`` (a ``{{cite web}}`` with only ``archive-url=``). ``raw_url`` is the URL as written
    in the wikitext, which may differ from the captured URL only by normalisation.
    """

    raw_url: str
    title: str
    site: str
    date: str
    style: str
    name: str = ""


def ref_markup(c: Citation, reuse: bool = False) -> str:
    if reuse:
        return f'<ref name="{c.name}" />'
    if c.style == "cite web":
        body = (f"{{{{cite web |url={c.raw_url} |title={c.title} |website={c.site} "
                f"|access-date={c.date}}}}}")
    elif c.style == "cite news":
        body = (f"{{{{Cite news|title = {c.title}|url = {c.raw_url}|work = ''{c.site}''"
                f"|date = {c.date}}}}}")
    elif c.style == "archive":
        body = (f"{{{{cite web |title={c.title} |archive-url={c.raw_url} "
                f"|archive-date={c.date} |url-status=dead}}}}")
    elif c.style == "bracket":
        body = f"[{c.raw_url} {c.title}]"
    else:
        body = c.raw_url
    opening = f'<ref name="{c.name}">' if c.name else "<ref>"
    return opening + body + "</ref>"


@dataclass(frozen=True)
class RenderedArticle:
    wikitext: str
    lead: str  # plain text, paragraphs separated by a blank line
    section_titles: tuple[str, ...]
    sections: tuple[tuple[str, str], ...]  # (heading, plain text) of the prose sections


INFOBOX = {"town": "settlement", "river": "river", "band": "musical artist",
           "scientist": "scientist", "company": "company", "species": "speciesbox"}


def render_article(e: Entity, citations: list[Citation], rng: random.Random) -> RenderedArticle:
    """An article's wikitext, with ``citations`` spread over the lead and the sections.

    The first citation always goes into the lead; a named citation is cited a second time with
    ``<ref name=... />`` further down, as articles do.
    """
    lead = lead_sentences(e)
    sections = section_sentences(e, rng)
    # Slots for refs: after each lead sentence, then after each section sentence.
    slots: list[list[str]] = [[] for _ in range(len(lead) + sum(len(s) for _, s in sections))]
    for i, c in enumerate(citations):
        slot = 0 if i == 0 else rng.randrange(len(slots))
        slots[slot].append(ref_markup(c))
    named = [c for c in citations if c.name]
    if named:
        slots[-1].append(ref_markup(named[0], reuse=True))

    head = [
        f"{{{{Short description|{e.kind.capitalize()} in the {e.region}}}}}",
        "{{Use dmy dates|date=March 2020}}",
        f"{{{{Infobox {INFOBOX[e.kind]}",
        f"| name = {e.title}",
        f"| region = [[{e.region}]]",
        "| image = " + e.title.replace(" ", "_") + ".jpg",
        "}}",
        f"[[File:{e.title} in 2010.jpg|thumb|left|{e.title} seen from the [[{e.region}]]]]",
    ]
    # One or two lead paragraphs: the split point is drawn, the text is not.
    split = 2 if rng.random() < 0.5 else len(lead)
    paragraphs = [list(range(0, split)), list(range(split, len(lead)))]
    lead_wiki, lead_plain = [], []
    for idx in paragraphs:
        if not idx:
            continue
        lead_wiki.append(" ".join(lead[i] + "".join(slots[i]) for i in idx))
        lead_plain.append(" ".join(plain(lead[i]) for i in idx))

    body, k, plain_sections = [], len(lead), []
    for heading, sentences in sections:
        body.append(f"\n== {heading} ==")
        plain_sections.append((heading, " ".join(plain(s) for s in sentences)))
        parts = []
        for s in sentences:
            parts.append(s + "".join(slots[k]))
            k += 1
        body.append(" ".join(parts))
        if heading in ("Geography", "Description", "Course"):
            body.append("{| class=\"wikitable\"\n|-\n! Measure !! Value\n|-\n| Area || 12 km2\n"
                        "|-\n| Elevation || 140 m\n|}")
    tail = [
        "\n== See also ==",
        f"* [[List of places in the {e.region}]]",
        "\n== References ==",
        "{{Reflist}}",
        "\n== External links ==",
        f"* [https://www.{e.title.split()[0].lower()}-official.example/ Official website]",
        "",
        f"[[Category:{e.kind.capitalize()}s of the {e.region}]]",
    ]
    wikitext = "\n".join(head + ["\n\n".join(lead_wiki)] + body + tail) + "\n"
    titles = tuple(h for h, _ in sections) + ("See also", "References", "External links")
    return RenderedArticle(wikitext, "\n\n".join(lead_plain), titles, tuple(plain_sections))


# --------------------------------------------------------------------------------------------
# HTML web pages


@dataclass(frozen=True)
class Site:
    host: str
    name: str
    layout: str  # news | blog | guide | database
    scheme: str = "https"


NAV = {
    "news": ["Home", "News", "Sport", "Business", "Culture", "Weather", "Contact"],
    "blog": ["Home", "About me", "Archive", "Travel", "Photography"],
    "guide": ["Destinations", "Things to do", "Where to stay", "Maps", "Plan your trip"],
    "database": ["Search", "Browse", "Taxonomy", "Contributors", "Help"],
}
COOKIE = ("We use cookies to improve your experience and to show you relevant adverts. By "
          "continuing to browse you agree to our use of cookies.")
SIDEBAR = {
    "news": ["Council approves new bridge", "Storm closes ferry route", "Ten best bakeries"],
    "blog": ["My camera bag", "A week in the hills", "Notes on slow travel"],
    "guide": ["Top ten markets", "Rainy day ideas", "Best walks for families"],
    "database": ["Recently updated", "Random record", "Data licence"],
}


def boilerplate_texts(site: Site) -> list[str]:
    """The strings around the main text of a page, which a good extractor leaves out."""
    return [COOKIE, " | ".join(NAV[site.layout]), *SIDEBAR[site.layout],
            f"© 2021 {site.name}. All rights reserved."]


def render_html(site: Site, headline: str, paragraphs: list[str], *, date: str, author: str,
                charset: str = "utf-8", meta_charset: bool = True,
                http_equiv: bool = False) -> str:
    """A web page in one of four layouts, with navigation, banner, sidebar and footer."""
    esc = html.escape
    nav = "".join(f'<li><a href="/{n.lower().replace(" ", "-")}">{esc(n)}</a></li>'
                  for n in NAV[site.layout])
    side = "".join(f'<li><a href="/read/{i}">{esc(s)}</a></li>'
                   for i, s in enumerate(SIDEBAR[site.layout]))
    body = "\n".join(f"<p>{esc(p)}</p>" for p in paragraphs)
    meta = ""
    if meta_charset and http_equiv:
        meta = f'<meta http-equiv="Content-Type" content="text/html; charset={charset}">'
    elif meta_charset:
        meta = f'<meta charset="{charset}">'
    if site.layout == "news":
        main = (f'<main><article><h1>{esc(headline)}</h1>'
                f'<p class="byline">By {esc(author)}, {esc(date)}</p>\n{body}\n</article></main>')
    elif site.layout == "blog":
        main = (f'<div id="content"><div class="post"><h2 class="post-title">{esc(headline)}</h2>'
                f'<div class="post-body">\n{body}\n</div>'
                f'<div class="post-footer">Posted by {esc(author)} on {esc(date)}</div>'
                '</div></div>')
    elif site.layout == "guide":
        main = (f'<div class="page"><h1>{esc(headline)}</h1><section class="guide-text">\n'
                f'{body}\n</section><p class="updated">Last updated {esc(date)}</p></div>')
    else:
        main = (f'<div id="record"><h1>{esc(headline)}</h1><div class="record-text">\n{body}\n'
                f'</div><table class="meta"><tr><td>Record</td><td>{esc(date)}</td></tr>'
                '</table></div>')
    return (
        f'<!DOCTYPE html>\n<html lang="en">\n<head>{meta}<title>{esc(headline)} | '
        f'{esc(site.name)}</title></head>\n<body>\n'
        f'<div id="cookie-banner" class="cookie-consent"><p>{COOKIE}</p>'
        '<button>Accept</button></div>\n'
        f'<header><div class="logo">{esc(site.name)}</div><nav><ul>{nav}</ul></nav></header>\n'
        f'{main}\n'
        f'<aside class="sidebar"><h3>Most read</h3><ul>{side}</ul></aside>\n'
        f'<footer><p>© 2021 {esc(site.name)}. All rights reserved.</p>'
        '<a href="/privacy">Privacy policy</a> <a href="/terms">Terms</a></footer>\n'
        '</body>\n</html>\n'
    )


def render_wet_text(site: Site, headline: str, paragraphs: list[str]) -> str:
    """A WET conversion: the page's visible text, boilerplate lines included, as Common Crawl
    writes it (one block of text a line)."""
    lines = [f"{headline} | {site.name}", COOKIE, "Accept", site.name,
             *NAV[site.layout], headline, *paragraphs, "Most read", *SIDEBAR[site.layout],
             f"© 2021 {site.name}. All rights reserved.", "Privacy policy Terms"]
    return "\n".join(lines) + "\n"


def render_wikipedia_html(title: str, lead: str, sections: list[tuple[str, str]],
                          *, mirror: str | None = None) -> str:
    """A page as Wikipedia serves it, or as a mirror site copies it (``mirror`` names it)."""
    esc = html.escape
    paras = "".join(f"<p>{esc(p)}</p>\n" for p in lead.split("\n\n"))
    for heading, text in sections:
        paras += f'<h2><span class="mw-headline">{esc(heading)}</span></h2>\n<p>{esc(text)}</p>\n'
    if mirror:
        return (f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{esc(title)} - '
                f'{esc(mirror)}</title></head><body><div class="top">{esc(mirror)}: the free '
                'encyclopedia mirror</div>\n<div id="article"><h1>'
                f'{esc(title)}</h1>\n{paras}</div>\n<div class="foot">Text is available under '
                'the Creative Commons Attribution-ShareAlike License. Content copied from '
                'Wikipedia.</div></body></html>\n')
    return (f'<!DOCTYPE html>\n<html class="client-nojs" lang="en" dir="ltr"><head>'
            f'<meta charset="UTF-8"><title>{esc(title)} - Wikipedia</title></head>\n'
            '<body class="mediawiki"><div id="mw-navigation"><a href="/wiki/Main_Page">Main '
            'page</a> <a href="/wiki/Special:Random">Random article</a></div>\n'
            f'<div id="content" class="mw-body"><h1 id="firstHeading">{esc(title)}</h1>\n'
            f'<div id="mw-content-text"><div class="mw-parser-output">\n{paras}</div></div>'
            '</div>\n<div id="footer">This page was last edited on 1 March 2020. Text is '
            'available under the Creative Commons Attribution-ShareAlike License 4.0.</div>'
            '</body></html>\n')


# A tiny but well-formed PDF and PNG: the non-HTML responses a crawl meets.
PDF_BYTES = (b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
             b"2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n"
             b"trailer << /Root 1 0 R >>\n%%EOF\n")
PNG_BYTES = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082")
