"""Wikitext -> article parts: lead, sections and cited URLs.

The wikitext is parsed once with mwparserfromhell and the tree is walked twice: once to render
plain text (here), once to collect citation URLs (:mod:`wikisum.pipeline.citations`).
`Wikicode.strip_code()` is not used because it keeps the contents of `<ref>` tags, the markup
of tables and the captions of files, all of which would leak into the lead that the summariser
is trained to produce.

Every language's wikitext is read by the same rules; what differs between wikis comes from the
dump's ``<siteinfo>`` (:class:`wikisum.pipeline.dumps.SiteInfo`: the local names of the file and
category namespaces) or from a rule that holds in every wiki: a redirect is ``#WORD [[...]]``
whatever the word, a URL parameter of any template inside a ``<ref>`` is a citation whatever
the template's name, and the ``__DISAMBIG__`` magic word marks a disambiguation page.
"""

from __future__ import annotations

import functools
import html
import re
from dataclasses import dataclass
from urllib.parse import quote

import mwparserfromhell
from mwparserfromhell.nodes import (
    Argument,
    Comment,
    ExternalLink,
    Heading,
    HTMLEntity,
    Node,
    Tag,
    Template,
    Text,
    Wikilink,
)
from mwparserfromhell.parser import ParserError
from mwparserfromhell.wikicode import Wikicode

from wikisum.core.records import Section
from wikisum.pipeline.citations import cited_urls, plain_value, template_name
from wikisum.pipeline.dumps import SiteInfo
from wikisum.pipeline.urls import normalize_title


@dataclass(frozen=True)
class ParsedArticle:
    """The parts of one article that the dataset uses.

    `lead` and each section's `text` are plain text, paragraphs joined with a blank line.
    `citation_urls` are http(s) URLs in order of first appearance, without duplicates and not yet
    normalised (see `wikisum.pipeline.urls.normalize_url`).
    """

    title: str
    url: str
    lead: str
    sections: tuple[Section, ...]
    citation_urls: tuple[str, ...]
    is_redirect: bool
    is_disambiguation: bool


# `#REDIRECT [[Target]]` and every language's own magic word (`#転送`, `#перенаправлення`,
# `#đổi`, `#تحويل`, `#重定向`, `#अनुप्रेषित`): a page that starts with `#` directly followed by one
# word holding a letter (marks such as Devanagari vowel signs are not word characters, so the
# word is any run without space, bracket, colon, pipe or `#`), an optional colon, then a link.
# An ordered list item (`# The [[Beatles]]`, `# [[X]]`, `#1 [[X]]`) has a space or no such word;
# the few words listed here are recognised after a space too (`# REDIRECT [[X]]`). A dump's
# `<redirect>` element says the same of its pages in every language
# (`wikisum.pipeline.articles`).
_REDIRECT = re.compile(
    r"\s*#(?:\s*(?:redirect|weiterleitung|patrz|перенаправление|пренасочване|redirection|"
    r"redirección|rinvia|doorverwijzing)|(?=[^\s\[\]:#|]*[^\W\d_])[^\s\[\]:#|]{1,40})"
    r"\s*:?\s*\[\[",
    re.IGNORECASE,
)

# Members of the disambiguation template family (names lowercased, underscores as spaces).
# Any template whose name ends in " disambiguation" ("hospital disambiguation", "place name
# disambiguation", ...) also counts.
_DISAMBIGUATION_TEMPLATES = frozenset(
    {
        "disambiguation", "disambig", "dab", "disamb", "hndis", "geodis", "numberdis",
        "letter-number combination disambiguation", "begriffsklärung", "ujednoznacznienie",
    }
)

# Every name above, and " disambiguation", contains one of these (tested): an article whose
# wikitext, lowercased, holds none of them and no comment (which can split a name) has no
# disambiguation template, and its tree is not searched for one.
_DISAMBIGUATION_STEMS = ("disamb", "dab", "hndis", "geodis", "numberdis", "begriffsklärung",
                         "ujednoznacznienie")

# Disambiguation templates of other languages, by their page names in those wikis (lowercased):
# the rule that holds in every wiki is the `__DISAMBIG__` magic word, which each of these
# templates carries but a page transcluding it does not show in its wikitext, so the commonest
# local names are listed: Japanese, Russian and Ukrainian, Vietnamese, Chinese, Arabic, Hindi,
# French, Spanish, Italian, Portuguese, Dutch. A maintenance tag that contains one of them
# (Japanese `要曖昧さ回避`, "disambiguation needed") is not a disambiguation page: names are
# matched whole.
_LOCAL_DISAMBIGUATION_TEMPLATES = frozenset(
    {
        "aimai", "曖昧さ回避", "неоднозначність", "неоднозначность", "многозначность",
        "trang định hướng", "消歧义", "消歧義", "توضيح", "बहुविकल्पी शब्द", "homonymie",
        "desambiguación", "disambigua", "desambiguação", "doorverwijspagina",
    }
)
# The Disambiguator extension's magic word (`__DISAMBIG__`, `__DISAMBIGUATION__`) in the page
# itself.
_DISAMBIGUATION_MAGIC = re.compile(r"__DISAMBIG(?:UATION)?__")

# A link target that names a media file by its extension: `[[画像:X.jpg]]` is a file link
# under an alias of the file namespace that `<siteinfo>` does not list.
_MEDIA_FILE = re.compile(
    r"\.(?:jpe?g|png|gif|svg|tiff?|webp|xcf|bmp|ogg|oga|ogv|mp3|wav|flac|opus|mid|webm|"
    r"mpe?g|pdf|djvu|stl)\s*$", re.IGNORECASE)

# Link prefixes whose targets are not shown as text: media and categories (lowercased, with a
# few localised names), and interlanguage links (below).
_HIDDEN_NAMESPACES = frozenset(
    {"file", "image", "media", "category", "datei", "bild", "kategorie", "plik", "grafika",
     "kategoria", "fichier", "catégorie", "archivo", "categoría", "файл", "категория"}
)
# Namespaces whose links are hidden, by key: media (-2), file (6), category (14).
_HIDDEN_NAMESPACE_KEYS = (-2, 6, 14)
# An interlanguage link's prefix is a lowercase language code directly followed by the title
# (`[[de:Köln]]`); "[[Ali: Fear Eats the Soul]]" is an ordinary link.
_INTERLANGUAGE = re.compile(r"[a-z]{2,3}(?:-[a-z0-9]+)*:\S")

# Tags whose contents are not prose: citations, formulas, code, media and widgets.
_DROPPED_TAGS = frozenset(
    {
        "ref", "references", "math", "chem", "ce", "gallery", "imagemap", "timeline", "score",
        "graph", "syntaxhighlight", "source", "pre", "templatedata", "mapframe", "maplink",
        "categorytree", "inputbox", "includeonly", "hiero", "section", "indicator", "style",
        "script",
    }
)

# Wiki-markup tags that are dropped whole (tables) and the ones that only mark list items.
_TABLE_MARKUP = "{|"
_LIST_MARKUP = frozenset({"*", "#", ":", ";"})

# Inline templates whose visible output is one of their positional arguments, and ones that stand
# for a fixed string. Every other template (infoboxes, hatnotes, navboxes, citations, maintenance
# tags, parser functions) is dropped; `{{convert}}` is rendered by `_render_convert`.
_TEXT_TEMPLATES = {"nowrap": 1, "nobr": 1, "small": 1, "big": 1, "lang": 2}
_CONSTANT_TEMPLATES = {
    "mdash": "\u2014", "mdashb": "\u2014", "ndash": "\u2013", "snd": " \u2013 ",
    "spaced ndash": " \u2013 ", "nbsp": " ", "'": "'",
}

# Display forms of `{{convert}}` unit codes that are not readable as they are; other codes
# ("km", "mi", "kg", "ft") are shown unchanged. Only the first (input) value and unit are shown.
_CONVERT_UNITS = {"sqmi": "sq mi", "sqft": "sq ft", "sqkm": "km2", "C": "\u00b0C", "F": "\u00b0F"}
_CONVERT_RANGES = {"-": "\u2013", "\u2013": "\u2013", "to": " to ", "and": " and ", "or": " or "}

# Markers used while rendering, stripped before returning; private-use characters, so never
# whitespace and never in real text. A list marker starts a new paragraph. A gap marks where a
# template, ref or comment was dropped, so that `''{{transl|...}}''` reads as two quote runs
# (an empty italic) rather than one run of four.
_ITEM = "\ue000"
_GAP = "\ue001"

_MAGIC_WORD = re.compile(r"__[A-Z]+__")
# `<ref>`/`</ref>` left as text where broken markup kept the parser from pairing them.
_STRAY_REF_TAG = re.compile(r"</?ref\b[^>]*>", re.IGNORECASE)
# What a dropped template often leaves behind: "Bodmin ({{lang-kw|Bosvena}}) is" -> "Bodmin () is",
# "Khan (; 19 November 1946 - ...)" from a dropped pronunciation template, "Aussprache []".
_EMPTY_PARENTHESES = re.compile(r"[ \t]*(?:\([ \t]*[,;]?[ \t]*\)|\[[ \t]*\])")
_PARENTHESIS_LEADING_PUNCTUATION = re.compile(r"\([ \t]*[,;][ \t]*")
# Bold/italic quote runs. The parser is told to leave them as text (`skip_style_tags`) because an
# unbalanced `''` otherwise swallows the following templates and even headings into a style tag.
_QUOTE_RUN = re.compile(r"'{2,}")
# "born in 1950 {{citation needed}}." would read "born in 1950 ." without the template.
_SPACE_BEFORE_DROPPED = re.compile(rf"[ \t]+{_GAP}+(?=[,.;:!?])")
_BLANK_LINE = re.compile(r"\n[ \t\r\f\v]*\n")


def _namespace_key(name: str) -> str:
    """A namespace name as links are compared: lowercased, underscores as spaces."""
    return " ".join(name.replace("_", " ").split()).lower()


@functools.lru_cache(maxsize=64)
def hidden_namespaces(site: SiteInfo | None) -> frozenset[str]:
    """The link prefixes whose links are not shown as text: the canonical English names and
    the few listed above, and the names the dump's ``<siteinfo>`` gives its media, file and
    category namespaces (``Категорія``, ``ファイル``, ``Thể loại``)."""
    if site is None:
        return _HIDDEN_NAMESPACES
    local = {_namespace_key(name) for key in _HIDDEN_NAMESPACE_KEYS for name in site.names(key)}
    return _HIDDEN_NAMESPACES | frozenset(n for n in local if n)


def parse_article(title: str, wikitext: str, lang: str = "en",
                  site: SiteInfo | None = None) -> ParsedArticle:
    """Parses one article's wikitext into its lead, sections and citation URLs.

    A redirect is returned with `is_redirect=True` and no text or citations, since it has no
    content of its own. Never raises: malformed markup degrades to literal text, and input the
    parser rejects outright gives an article without text. Parsing time grows quadratically with
    the number of unclosed `{{` (a property of mwparserfromhell's tokenizer), which real articles
    do not have in any number.

    Args:
        title: The page title, with spaces or underscores.
        wikitext: The page source.
        lang: The Wikipedia language edition, used for the article URL.
        site: The dump's ``<siteinfo>``: its local namespace names hide file and category
            links (None: the canonical English names and a few others only).
    """
    title = normalize_title(title)
    url = article_url(title, lang)
    if _REDIRECT.match(wikitext):
        return ParsedArticle(title, url, "", (), (), True, False)

    if "<" not in wikitext and "&lt;" in wikitext:
        # Wikitext escaped twice (as some scraped caches store it: `&lt;ref&gt;`) would otherwise
        # show its tags as text. Real wikitext with entities but no tag at all is unaffected,
        # since its entities are unescaped when rendered anyway.
        wikitext = html.unescape(wikitext)
    try:
        code = mwparserfromhell.parse(wikitext, skip_style_tags=True)
    except ParserError:
        # The tokenizer gives up on some pathological inputs. Showing the source as text would
        # put raw markup into a training target, so the article comes back empty instead and
        # is dropped downstream like any article without a lead.
        return ParsedArticle(title, url, "", (), (), False, False)
    hidden = hidden_namespaces(site)
    lead_nodes: list[Node] = []
    headed: list[tuple[Heading, list[Node]]] = []
    for node in code.nodes:
        if isinstance(node, Heading):
            headed.append((node, []))
        elif headed:
            headed[-1][1].append(node)
        else:
            lead_nodes.append(node)

    sections = tuple(
        Section(
            title=" ".join(
                _clean_inline(_render(heading.title.nodes, hidden)).replace(_ITEM, " ").split()),
            level=heading.level,
            text=_paragraphs(_render(body, hidden)),
        )
        for heading, body in headed
    )

    citations = cited_urls(lead_nodes, [(section.title, body) for section, (_, body)
                                        in zip(sections, headed, strict=True)])

    return ParsedArticle(
        title=title,
        url=url,
        lead=_paragraphs(_render(lead_nodes, hidden)),
        sections=sections,
        citation_urls=citations,
        is_redirect=False,
        is_disambiguation=bool(_DISAMBIGUATION_MAGIC.search(wikitext)) or (
            _may_name_disambiguation(wikitext) and any(
                _is_disambiguation(template.name) for template in code.ifilter_templates())),
    )


def _may_name_disambiguation(wikitext: str) -> bool:
    if "<!--" in wikitext:
        return True
    lowered = wikitext.lower()
    if any(stem in lowered for stem in _DISAMBIGUATION_STEMS):
        return True
    spaced = lowered.replace("_", " ")
    return any(name in spaced for name in _LOCAL_DISAMBIGUATION_TEMPLATES)


def article_url(title: str, lang: str = "en") -> str:
    """The canonical URL of an article, percent-encoded the way MediaWiki writes it.

    MediaWiki's `wfUrlencode` escapes everything except letters, digits, `-_.~` and
    `;@$!*(),/:`; spaces become underscores first.
    """
    path = quote(normalize_title(title).replace(" ", "_"), safe=";@$!*(),/:~")
    return f"https://{lang}.wikipedia.org/wiki/{path}"


def _render(nodes: list[Node], hidden: frozenset[str] = _HIDDEN_NAMESPACES) -> str:
    out: list[str] = []
    _render_into(nodes, out, hidden)
    return "".join(out)


def _render_into(nodes: list[Node], out: list[str], hidden: frozenset[str]) -> None:
    for node in nodes:
        if isinstance(node, Text):
            out.append(node.value)
        elif isinstance(node, Wikilink):
            _render_wikilink(node, out, hidden)
        elif isinstance(node, ExternalLink):
            if node.title is not None:
                _render_into(node.title.nodes, out, hidden)
            elif not node.brackets:
                # A bare URL in prose is shown as itself; `[http://x]` is shown as "[1]".
                out.append(str(node.url))
        elif isinstance(node, Tag):
            _render_tag(node, out, hidden)
        elif isinstance(node, HTMLEntity):
            out.append(_entity_text(node))
        elif isinstance(node, Template):
            _render_template(node, out, hidden)
        elif isinstance(node, Heading):
            # Only reachable for a heading nested in another node (e.g. an unclosed <div>).
            out.append("\n\n")
            _render_into(node.title.nodes, out, hidden)
            out.append("\n\n")
        elif isinstance(node, (Comment, Argument)):
            # Comments and template arguments (`{{{1}}}`) render as nothing.
            out.append(_GAP)
        else:
            out.append(str(node))


def _entity_text(node: HTMLEntity) -> str:
    """The character of an entity; U+FFFD for one that names a surrogate (``&#xD800;``), as
    HTML renders it: a lone surrogate is no text and cannot be written as UTF-8."""
    text = node.normalize()
    return "\ufffd" if len(text) == 1 and 0xD800 <= ord(text) <= 0xDFFF else text


def _render_wikilink(node: Wikilink, out: list[str], hidden: frozenset[str]) -> None:
    target = str(node.title).strip()
    namespace, colon, name = target.partition(":")
    namespace = _namespace_key(namespace)
    if colon and (
        namespace in hidden
        or _INTERLANGUAGE.match(target)
        # a file under an alias of the file namespace (`[[画像:X.jpg]]`, `[[Hình:X.png]]`)
        or (namespace and _MEDIA_FILE.search(name))
        # A namespaced link with options (`[[Lêer:X.jpg|thumb|links|Caption]]`) is a media link
        # in a namespace not listed above; ordinary links have at most one pipe.
        or (node.text is not None and "|" in str(node.text))
    ):
        out.append(_GAP)
        return
    if node.text is not None and str(node.text).strip():
        _render_into(node.text.nodes, out, hidden)
    else:
        # `[[:Category:X]]` is a visible link to a category, shown without the colon.
        out.append(_render(node.title.nodes, hidden).lstrip(":"))


def _render_tag(node: Tag, out: list[str], hidden: frozenset[str]) -> None:
    markup = node.wiki_markup
    if markup == _TABLE_MARKUP:
        return
    if markup in _LIST_MARKUP:
        out.append(_ITEM)
        return
    name = str(node.tag).strip().lower()
    if name in _DROPPED_TAGS:
        out.append(_GAP)
        return
    if name == "br" or name == "hr":
        out.append("\n" if name == "br" else "\n\n")
        return
    if node.contents is not None:
        _render_into(node.contents.nodes, out, hidden)


def _render_template(node: Template, out: list[str], hidden: frozenset[str]) -> None:
    name = template_name(node.name)
    if name in _CONSTANT_TEMPLATES:
        out.append(_CONSTANT_TEMPLATES[name])
    elif name == "convert":
        out.append(_render_convert(node))
    elif name in _TEXT_TEMPLATES:
        key = str(_TEXT_TEMPLATES[name])
        for param in node.params:
            if str(param.name).strip() == key:
                _render_into(param.value.nodes, out, hidden)
                return
    else:
        out.append(_GAP)


def _render_convert(node: Template) -> str:
    """`{{convert|5|mi|km}}` -> "5 mi"; `{{convert|1|to|3|km}}` -> "1 to 3 km"."""
    args = [plain_value(p.value) for p in node.params if not p.showkey]
    if len(args) < 2:
        return " ".join(args)
    value, rest = args[0], args[1:]
    if len(rest) >= 2 and rest[0] in _CONVERT_RANGES:
        value = f"{value}{_CONVERT_RANGES[rest[0]]}{rest[1]}"
        rest = rest[2:]
    unit = _CONVERT_UNITS.get(rest[0], rest[0]) if rest else ""
    return f"{value} {unit}".strip()


def _paragraphs(text: str) -> str:
    """Cleans rendered text into paragraphs joined by a blank line.

    A blank line ends a paragraph, a list item is a paragraph of its own, and a line following a
    list item starts a new paragraph (MediaWiki closes the list there). Table markup that was not
    parsed as a table is dropped line by line. Whitespace inside a paragraph is collapsed, and
    paragraphs without a letter or digit (what remains of a list of dropped templates, say) are
    dropped.
    """
    text = _clean_inline(text)
    paragraphs: list[str] = []
    current: list[str] = []
    after_item = False

    def flush() -> None:
        joined = " ".join(" ".join(current).split())
        if any(ch.isalnum() for ch in joined):
            paragraphs.append(joined)
        current.clear()

    table_depth = 0
    for block in _BLANK_LINE.split(text):
        for line in block.split("\n"):
            # Tables the parser left as text (an indented `:{|` is not parsed as a table).
            bare = line.replace(_ITEM, "").lstrip()
            if bare.startswith("{|"):
                # A table is a block: it ends the paragraph before it.
                flush()
                table_depth += 1
            if table_depth:
                table_depth -= bare.startswith("|}")
                continue
            is_item = line.lstrip().startswith(_ITEM)
            if is_item or after_item:
                flush()
            current.append(line.replace(_ITEM, " "))
            after_item = is_item
        flush()
        after_item = False
    return "\n\n".join(paragraphs)


def _clean_inline(text: str) -> str:
    text = _STRAY_REF_TAG.sub("", _MAGIC_WORD.sub("", text))
    text = _QUOTE_RUN.sub(_unquote_run, text)
    text = _SPACE_BEFORE_DROPPED.sub("", text).replace(_GAP, "")
    return _PARENTHESIS_LEADING_PUNCTUATION.sub("(", _EMPTY_PARENTHESES.sub("", text))


def _unquote_run(match: re.Match[str]) -> str:
    # MediaWiki reads 2 as italic, 3 as bold, 5 as both; in a run of 4 the first apostrophe is
    # literal, and apostrophes beyond 5 are literal too.
    n = len(match.group())
    return "'" if n == 4 else "'" * max(0, n - 5)


def _is_disambiguation(name: Wikicode) -> bool:
    normalised = template_name(name)
    return (normalised in _DISAMBIGUATION_TEMPLATES or normalised.endswith(" disambiguation")
            or normalised in _LOCAL_DISAMBIGUATION_TEMPLATES)
