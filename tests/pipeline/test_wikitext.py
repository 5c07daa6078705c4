import random
import re
from pathlib import Path

import pytest
from mwparserfromhell.parser import ParserError

import wikisum.pipeline.wikitext
from wikisum.pipeline.wikitext import ParsedArticle, Section, article_url, parse_article

SHARED_DATA = (Path(__file__).resolve().parents[2] / ".." / "shared" / "data").resolve()
ARTICLES = SHARED_DATA / "wikipedia" / "wikitext" / "articles"
needs_shared_data = pytest.mark.skipif(not ARTICLES.is_dir(), reason="../shared/data is absent")

LEAD_WIKITEXT = """{{Use dmy dates|date=March 2015}}
{{Infobox settlement
| name = Bodmin
| population = 14,736<ref>{{cite web|url=http://infobox.example/pop|title=Pop}}</ref>
| coordinates = {{coord|50.466|-4.718|display=inline,title}}
}}
{{For|the hamlet in Canada|Bodmin, Saskatchewan}}
__NOTOC__
[[File:Bodmin.jpg|thumb|The [[Bodmin Moor|moor]] at dusk<ref>[http://caption.example/photo \
Photo credit]</ref>]]
'''Bodmin''' ({{lang-kw|Bosvena}}) is a [[civil parishes in England|civil parish]] and \
''historic'' town in [[Cornwall]], England.<ref name="maga">{{cite web \
|url=http://www.example.org/a.pdf |title=A \
|archive-url=https://web.archive.org/web/2014/http://www.example.org/a.pdf}}</ref> \
It lies {{convert|5|mi|km}} from the&nbsp;coast.<!-- hidden note -->
{| class="wikitable"
|-
| Year || Population
|-
| 2011 || 14,736
|}
It had   a population of 14,736 in 2011.<ref name="maga"/><ref>{{Cite news|title=Only archived\
|archiveurl=https://web.archive.org/web/2015/http://news.example/b|url=}}</ref>

* Town council, see [http://council.example/ the council site].
* Twinned with [[Grass Valley, California|Grass Valley]]
[[Category:Towns in Cornwall]]
[[de:Bodmin]]
"""


def test_lead_is_plain_text():
    article = parse_article("Bodmin", LEAD_WIKITEXT)
    assert article.lead == (
        "Bodmin is a civil parish and historic town in Cornwall, England. "
        "It lies 5 mi from the coast.\n\n"
        "It had a population of 14,736 in 2011.\n\n"
        "Town council, see the council site.\n\n"
        "Twinned with Grass Valley"
    )
    assert article.sections == ()


def test_citation_urls_in_refs_of_lead():
    article = parse_article("Bodmin", LEAD_WIKITEXT)
    assert article.citation_urls == (
        "http://infobox.example/pop",  # <ref> inside an infobox parameter
        "http://caption.example/photo",  # [http://x label] in a <ref> in a file caption
        "http://www.example.org/a.pdf",  # url= wins over archive-url=
        "https://web.archive.org/web/2015/http://news.example/b",  # empty url=: archiveurl=
    )


SECTIONS_WIKITEXT = """Lead text.<ref>{{cite web|url=http://x.example/a<!-- c -->|title=A}}</ref>

== History ==
The town grew.<ref>{{cite news |url= https://news.example/1 |title=N}}</ref>
A second ref to the same page.<ref>{{Cite_web|url=http://x.example/a}}</ref> \
<ref>{{cite web|url=ftp://files.example/x}}</ref>
Outside any ref: {{cite web|url=http://not-a-citation.example/}}

=== Early [[Middle Ages|medieval]] period ===
Monks arrived.
<ref>See http://bare.example/page for details. {{webarchive|url=http://archive.example/x}}</ref>
<ref>[//proto.example/x Label] {{dead link}}</ref>
<ref>http://dead.example/p?id=7{{dead link|date=October 2016}}</ref>
==Bibliography==
* {{cite book |title=B |url=http://refsection.example/book}}
* {{Citation|url=http://refsection.example/citation}}
== External links ==
* {{cite web|url=http://external.example/}}
* [http://official.example Official site]
"""


def test_sections_have_titles_levels_and_text():
    article = parse_article("Bodmin", SECTIONS_WIKITEXT)
    assert article.lead == "Lead text."
    assert article.sections == (
        Section(
            "History",
            2,
            "The town grew. A second ref to the same page. Outside any ref:",
        ),
        Section("Early medieval period", 3, "Monks arrived."),
        Section("Bibliography", 2, ""),
        Section("External links", 2, "Official site"),
    )


def test_citation_urls_across_sections():
    article = parse_article("Bodmin", SECTIONS_WIKITEXT)
    assert article.citation_urls == (
        "http://x.example/a",  # comment stripped; the later duplicate adds nothing
        "https://news.example/1",
        "http://bare.example/page",  # bare URL in ref text; the {{webarchive}} url= is not
        "https://proto.example/x",  # protocol-relative
        "http://dead.example/p?id=7",  # template glued to the URL stripped
        "http://refsection.example/book",  # citation templates directly in a references section
        "http://refsection.example/citation",
    )


def test_redirect():
    variants = (
        "#REDIRECT [[Toronto]]",
        "#redirect:[[Toronto]]",
        "  # Redirect  [[Toronto#History]]",
        "#WEITERLEITUNG [[Köln]]",
        "#PATRZ [[Kraków]]",
        "#ПРЕНАСОЧВАНЕ [[София]]",
    )
    for text in variants:
        article = parse_article("Old name", text + "{{R from move}}")
        assert article == ParsedArticle(
            title="Old name",
            url="https://en.wikipedia.org/wiki/Old_name",
            lead="",
            sections=(),
            citation_urls=(),
            is_redirect=True,
            is_disambiguation=False,
        ), text


@pytest.mark.parametrize(
    "text",
    [
        "'''Redirect''' is a film.\n#REDIRECT [[Toronto]]",
        "#REDIRECTION of traffic is a practice.",
        "# Redirect of a list item",
    ],
)
def test_not_a_redirect(text):
    assert not parse_article("X", text).is_redirect


def test_disambiguation_page():
    text = (
        "'''Mercury''' may refer to:\n"
        "* [[Mercury (planet)]]\n"
        "* [[Mercury (element)]], a chemical element\n"
        "{{disambiguation|geo}}"
    )
    article = parse_article("Mercury", text)
    assert article.is_disambiguation
    assert article.lead == (
        "Mercury may refer to:\n\nMercury (planet)\n\nMercury (element), a chemical element"
    )


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{Disambig}}", True),
        ("{{ dab }}", True),
        ("{{Template:Hndis|Smith, John}}", True),
        ("{{Geodis}}", True),
        ("{{Place name disambiguation}}", True),
        ("{{Letter-Number Combination Disambiguation}}", True),
        ("{{Disambiguation needed|date=May 2020}}", False),
        ("{{Other uses|Mercury (disambiguation)}}", False),
        ("{{Surname}}", False),
        ("{{Dis<!-- split -->ambig}}", True),  # a comment in the name
        ("{{Template:Numberdis}}", True),
        ("{{Hospital_disambiguation|x}}", True),
        ("{{begriffsklärung}}", True),
        ("{{Ujednoznacznienie}}", True),
        ("{{Letter-number\ncombination disambiguation}}", False),  # not a template
    ],
)
def test_disambiguation_templates(template, expected):
    assert parse_article("X", f"Some text. {template}").is_disambiguation is expected


def test_every_disambiguation_name_holds_a_stem_the_quick_check_looks_for():
    wt = wikisum.pipeline.wikitext
    for name in (*wt._DISAMBIGUATION_TEMPLATES, " disambiguation"):
        assert any(stem in name for stem in wt._DISAMBIGUATION_STEMS), name
    for stem in wt._DISAMBIGUATION_STEMS:
        assert stem == stem.lower() and not set(stem) & set(" _\t\n")
    assert not wt._may_name_disambiguation("{{Infobox person}} text {{Surname}}")
    assert wt._may_name_disambiguation("{{surname<!-- -->}}")


def test_inline_markup():
    text = (
        "H<sub>2</sub>O and <span style=\"color:red\">spanned</span> text<br/>after "
        "<math>x^2</math> done; <nowiki>[[not a link]]</nowiki>, [[:Category:Towns]], "
        "'''''both''''', Il y a l''''arbre''', {{nowrap|kept text}}, {{lang|fr|en français}}, "
        "{{convert|1|to|3|km}}, 1980{{ndash}}1990, a bare http://bare.example link, "
        "[http://numbered.example] and &amp; &lt;tag&gt;."
    )
    assert parse_article("X", text).lead == (
        "H2O and spanned text after done; [[not a link]], Category:Towns, both, "
        "Il y a l'arbre, kept text, en français, 1 to 3 km, 1980\u20131990, "
        "a bare http://bare.example link, and & <tag>."
    )


def test_interlanguage_links_are_hidden_but_colon_titles_are_not():
    text = "See [[Ali: Fear Eats the Soul]] and [[Köln]].[[de:Köln]][[zh-min-nan:Köln]]"
    assert parse_article("X", text).lead == "See Ali: Fear Eats the Soul and Köln."


def test_input_the_parser_rejects_gives_an_empty_article(monkeypatch):
    def reject(*args, **kwargs):
        raise ParserError("tokenizer gave up")

    monkeypatch.setattr(wikisum.pipeline.wikitext.mwparserfromhell, "parse", reject)
    article = parse_article("X", "'''X''' is a thing.<ref>[http://a.example/ A]</ref>")
    assert (article.lead, article.sections, article.citation_urls) == ("", (), ())
    assert not article.is_redirect


def test_italics_around_a_dropped_template_leave_no_apostrophe():
    # After dropping the template the quotes touch; they must not read as one run of four.
    text = "Alhazen, full name ''{{transl|ar|Abu Ali}}'', was a physicist."
    assert parse_article("X", text).lead == "Alhazen, full name, was a physicist."


def test_unbalanced_italics_do_not_swallow_templates_or_headings():
    text = (
        "Intro ''unclosed italics.<ref>{{cite web|url=http://a.example/|title=T ''x''}}</ref>\n"
        "== Next ==\nBody."
    )
    article = parse_article("X", text)
    assert article.lead == "Intro unclosed italics."
    assert article.sections == (Section("Next", 2, "Body."),)
    assert article.citation_urls == ("http://a.example/",)


def test_indented_table_and_localised_file_link_are_dropped():
    text = (
        "Rankings follow.\n"
        ':{|class="wikitable"\n|-\n|Index || 14\n|}\n'
        "[[Lêer:Map.png|thumb|links|A caption]] After the table."
    )
    assert parse_article("X", text).lead == "Rankings follow.\n\nAfter the table."


def test_twice_escaped_wikitext_is_read_as_wikitext():
    text = "Anarchism is a philosophy.&lt;ref&gt;{{cite web|url=http://a.example/}}&lt;/ref&gt;"
    article = parse_article("Anarchism", text)
    assert article.lead == "Anarchism is a philosophy."
    assert article.citation_urls == ("http://a.example/",)


def test_title_and_url_are_normalised():
    article = parse_article("bodmin_town", "Text.", lang="kw")
    assert article.title == "Bodmin town"
    assert article.url == "https://kw.wikipedia.org/wiki/Bodmin_town"


@pytest.mark.parametrize(
    ("title", "lang", "expected"),
    [
        ("AC/DC", "en", "https://en.wikipedia.org/wiki/AC/DC"),
        ("Ender's Game", "en", "https://en.wikipedia.org/wiki/Ender%27s_Game"),
        ("AT&T", "en", "https://en.wikipedia.org/wiki/AT%26T"),
        ("C++", "en", "https://en.wikipedia.org/wiki/C%2B%2B"),
        ("Who? (song)", "en", "https://en.wikipedia.org/wiki/Who%3F_(song)"),
        ("100% Love", "en", "https://en.wikipedia.org/wiki/100%25_Love"),
        ("Mercury, Nevada", "en", "https://en.wikipedia.org/wiki/Mercury,_Nevada"),
        ("Talk:Foo", "en", "https://en.wikipedia.org/wiki/Talk:Foo"),
        ("café (film)", "de", "https://de.wikipedia.org/wiki/Caf%C3%A9_(film)"),
    ],
)
def test_article_url(title, lang, expected):
    assert article_url(title, lang) == expected


def test_never_raises_on_malformed_wikitext():
    pieces = [
        "{{", "}}", "[[", "]]", "{|", "|}", "|", "<ref>", "</ref>", "<ref name=a/>", "'''", "''",
        "== ", " ==", "\n", "\n\n", "* ", "<!--", "-->", "[http://x.example ", "]", "&", "&nbsp;",
        "{{convert|", "{{lang|", "[[File:", "#REDIRECT", "\x00", "é", "<math>", "<div>", "{{{1}}}",
        "text ", "http://y.example/ ",
    ]
    rng = random.Random(0)
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 40)))
        article = parse_article("X", text)
        assert isinstance(article.lead, str)
        assert all(url.startswith(("http://", "https://")) for url in article.citation_urls)


# --- Integration: real articles -----------------------------------------------------------------

_REF = re.compile(r"<ref(?:\s[^>/]*)?>(.*?)</ref\s*>", re.DOTALL | re.IGNORECASE)
_URL_PARAM = re.compile(r"\|\s*url\s*=\s*([^\s|{}<]*)")
# Opening markup only: a lone "}}" or "]]" can be literal text where the source itself is broken
# (United-Kingdom.txt has "...in the 1980scite web |url=...}}").
_MARKUP = re.compile(r"\{\{|\[\[|<ref|</ref|\{\||'''|__[A-Z]+__")


def _cite_web_urls_in_refs(wikitext: str) -> list[str]:
    """`url=` values of well-formed `{{cite web}}` templates inside `<ref>...</ref>`."""
    urls = []
    for body in _REF.findall(wikitext):
        for segment in body.split("{{")[1:]:
            # Only templates closed before the next "{{" (no nesting, not left unclosed).
            if not re.match(r"\s*cite web\b", segment, re.IGNORECASE) or "}}" not in segment:
                continue
            # As in MediaWiki, a repeated parameter's last value wins (toronto.txt has one).
            values = _URL_PARAM.findall(segment.split("}}")[0])
            if values and values[-1].lower().startswith(("http://", "https://")):
                urls.append(values[-1])
    return urls


# Stored with every newline replaced by a space, so no heading, list or table in it is at the
# start of a line: MediaWiki would not parse them either.
FLATTENED = frozenset({"raith_rovers.txt"})


@pytest.fixture(scope="module")
def real_articles():
    """(file name, wikitext, parsed article) for every stored article, parsed once."""
    parsed = []
    for path in sorted(ARTICLES.glob("*.txt")):
        wikitext = path.read_text(encoding="utf-8")
        parsed.append((path.name, wikitext, parse_article(path.stem.replace("-", " "), wikitext)))
    return parsed


@pytest.mark.shared_data
@needs_shared_data
def test_real_articles_parse_into_clean_text(real_articles):
    assert len(real_articles) == 71
    for name, _, article in real_articles:
        texts = [article.lead] + [s.title for s in article.sections]
        texts += [s.text for s in article.sections]
        for text in texts:
            if name not in FLATTENED:
                assert _MARKUP.search(text) is None, (name, _MARKUP.search(text))
        assert article.is_redirect == (name == "redirect.txt"), name


@pytest.mark.shared_data
@needs_shared_data
def test_real_cite_web_urls_are_citation_urls(real_articles):
    checked = 0
    for name, source, article in real_articles:
        found = set(article.citation_urls)
        for url in _cite_web_urls_in_refs(source):
            assert url in found, (name, url)
            checked += 1
    assert checked > 400  # the corpus has 510 {{cite web}}, most inside <ref>


@pytest.mark.shared_data
@needs_shared_data
def test_real_redirect():
    article = parse_article("Redirect", (ARTICLES / "redirect.txt").read_text(encoding="utf-8"))
    assert article.is_redirect
    assert article.lead == ""
