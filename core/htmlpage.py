"""Self-contained HTML pages that show untrusted text (model outputs, web paragraphs, titles)
as text, never as markup.

A page is one file: its style and its one script inline, its data in a JSON block that no
browser executes (``<script type="application/json">``), read by the script with
``JSON.parse`` and put into the page with ``textContent`` only. The Content-Security-Policy
allows exactly that script and style (by their SHA-256) and nothing else: no other script (an
injected ``<script>`` or ``onerror=`` attribute does not run), no request to any address
(``default-src 'none'``, no ``connect-src``, images only from ``data:``), no form posting.
(``frame-ancestors`` is not set: a policy in a ``<meta>`` element cannot set it, and Chromium
logs an error for trying.) It works from disk (``file://``) and from any static host alike,
since nothing is fetched.

    html = page("Annotate", body="<main id='app'></main>", script=JS, css=CSS,
                data={"items": [...]}, lang="ar")

Every string a caller puts into ``body`` goes through :func:`escape`; data goes through
:func:`json_block` (which :func:`page` calls), so ``</script>`` in a text cannot close the
block. Any text is accepted: markup (``</script>``, ``<!--``, ``]]>``) stays text, a lone
surrogate (which JSON allows and UTF-8 cannot hold) travels as its JSON escape in the data and
as U+FFFD in the markup, and a name or path laid out inline inside the English interface is
isolated (:func:`isolate`, ``<bdi>``) so that a right-to-left override in it reorders nothing
around it. A text longer than :data:`SHOWN_CHARS` is laid out cut, with the count of the
characters left out said beside it (:func:`shown`; the pages' scripts show the rest on
demand): a browser lays out a text of megabytes in seconds per block.

A page carries the language of its content: ``<html lang=... dir=...>`` with the direction
of :func:`text_direction` (right to left for Arabic, Hebrew, Persian, Urdu, ...). Its English
interface (headings, buttons, tables of figures) is marked ``lang="en" dir="ltr"``
(:data:`CHROME`), and every block of content (a title, a lead, a prediction) carries the
content's ``lang`` and ``dir`` (:func:`lang_attrs`), so that a right-to-left text is laid out
from the right, with its numbers and punctuation where its readers expect them.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import json
import re
import unicodedata

# The style of the reports' pages (the extractor report, the human-evaluation scores): a
# column of text, numeric tables right-aligned and striped.
REPORT_CSS = """
body{font-family:-apple-system,BlinkMacSystemFont,"Segoe UI",Roboto,Helvetica,Arial,sans-serif;
max-width:1180px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
h1{margin-bottom:0.1em}.sub{color:#666;margin-top:0}
h2{border-bottom:1px solid #ddd;padding-bottom:0.2em;margin-top:1.8em}
.caption{font-style:italic;color:#555;margin:1.2em 0 0.3em}
.scroll{overflow-x:auto}
table{border-collapse:collapse;margin:0 0 1.2em;font-size:0.9em}
th,td{border:1px solid #ddd;padding:0.3em 0.6em;text-align:right;white-space:nowrap}
thead th{background:#f0f0f0}
tbody tr:nth-child(even){background:#f7f7f7}
.note{color:#777;font-size:0.9em}
"""

# Languages written right to left, by ISO 639-1 code and by the ISO 639-2/3 codes of the
# languages (and Wikipedia editions) that have no two-letter one: the languages MediaWiki
# writes right to left, the varieties of Arabic, Persian, Pashto, Kurdish, Balochi and Luri
# written in Arabic script, the Hebrew-script languages and those with a right-to-left
# script of their own (Dhivehi's Thaana, N'Ko, Syriac, Samaritan, Mandaic). A tag with a
# script subtag ("ku-Arab", "az-Arab", "pa-Arab", "ar-Latn") is read by its script instead;
# a code not listed here by the script ICU's likely subtags give it (:func:`text_direction`).
RTL_LANGUAGES = frozenset({
    # Arabic and its varieties
    "ar", "ara", "arb", "arq", "ary", "arz", "aeb", "afb", "ajp", "acm", "acq", "acw", "acx",
    "apc", "apd", "ars", "ayh", "ayl", "ayn", "ayp", "abv", "adf", "avl", "shu", "ssh",
    "mey",
    # Hebrew, Yiddish and other Hebrew-script languages
    "he", "iw", "heb", "hbo", "yi", "ji", "yid", "ydd", "yih", "jrb", "jpr", "yhd", "yud",
    # Persian and the Iranian languages written in Arabic script
    "fa", "fas", "per", "pes", "prs", "haz", "glk", "mzn", "lrc", "luz", "bqi", "sdh", "lki",
    "bal", "bcc", "bgn", "bgp", "ckb", "ps", "pus", "pbt", "pbu", "pst", "wne",
    # Indo-Aryan and other languages of Pakistan, Afghanistan and India in Arabic script
    "ur", "urd", "sd", "snd", "ks", "kas", "pnb", "lah", "skr", "khw", "bft", "trw", "bsk",
    "phr", "hno", "scl", "gwc", "brh", "aiq",
    # Turkic languages in Arabic script
    "ug", "uig", "azb", "ota", "qxq",
    # Thaana, N'Ko, Syriac, Aramaic, Samaritan, Mandaic
    "dv", "div", "nqo", "syc", "syr", "aii", "cld", "tru", "arc", "sam", "smp", "mid", "myz",
})

# ISO 15924 scripts written right to left (a tag's script subtag; ICU's likely script).
RTL_SCRIPTS = frozenset({
    "arab", "aran", "hebr", "syrc", "syre", "syrj", "syrn", "thaa", "nkoo", "adlm", "rohg",
    "mand", "samr", "yezi", "mend", "armi", "avst", "chrs", "cprt", "elym", "hatr", "hung",
    "khar", "lydi", "mani", "merc", "mero", "narb", "nbat", "ougr", "orkh", "palm", "phli",
    "phlp", "phlv", "phnx", "prti", "sarb", "sogd", "sogo", "todr", "txr",
})

# Wikipedia editions written left to right whose language CLDR gives a right-to-left script
# as its likely one (Ladino's Wikipedia is in Latin letters, Rohingya's in Latin too).
LTR_LANGUAGES = frozenset({"lad", "rhg"})

# Tags that name no language: their direction comes from the text.
_NO_LANGUAGE = frozenset({"und", "mul", "zxx", "mis"})
# Script codes that name no one script: common, inherited, unwritten, unknown.
_NO_SCRIPT = frozenset({"zyyy", "zinh", "zxxx", "zzzz"})
_TAG = re.compile(r"[a-z]{2,12}(?:-[a-z0-9]{1,12})*")

# What the English interface of a page is marked with, inside a page in another language.
CHROME = 'lang="en" dir="ltr"'


def _subtags(lang: str | None) -> list[str] | None:
    """A language tag's subtags, lowercased ("pt_BR" -> ["pt", "br"]); None where ``lang`` is
    not a tag of a language."""
    if not lang:
        return None
    tag = lang.strip().replace("_", "-").lower()
    if not _TAG.fullmatch(tag):
        return None
    subtags = tag.split("-")
    return None if subtags[0] in _NO_LANGUAGE else subtags


@functools.cache
def _likely_script(language: str) -> str | None:
    """The script CLDR's likely subtags give a language ("ckb" -> "arab"), through ICU; None
    where ICU does not know the language."""
    import icu  # PyICU (the pyicu-wheels distribution), as wikisum.core.language uses it

    locale = icu.Locale(language)
    locale.addLikelySubtags()
    return locale.getScript().lower() or None


@functools.cache
def _script_direction(script: str) -> str | None:
    """"rtl" or "ltr" for an ISO 15924 script code (lowercased), through :data:`RTL_SCRIPTS`
    and ICU; None for a code that names no one script ("zyyy", "zzzz") or that ICU does not
    know."""
    if script in RTL_SCRIPTS:
        return "rtl"
    if script in _NO_SCRIPT:
        return None
    import icu

    codes = icu.Script.getCode(script)
    if not codes or codes[0] in (icu.UScriptCode.COMMON, icu.UScriptCode.INHERITED,
                                 icu.UScriptCode.UNKNOWN) or codes[0] < 0:
        return None
    return "rtl" if icu.Script(codes[0]).isRightToLeft() else "ltr"


def text_direction(lang: str | None, sample_text: str | None = None) -> str:
    """"rtl" or "ltr": the direction text in ``lang`` is written in.

    In order: a script subtag decides ("ku-Arab" rtl, "ar-Latn" ltr); then the language's code
    (:data:`RTL_LANGUAGES`, :data:`LTR_LANGUAGES`; case, region and "_" do not matter); then,
    for a code not listed, the script CLDR's likely subtags give it (ICU: "bgn" is Arabic
    script, rtl; "ja", "hi", "sr" ltr). Where ``lang`` names no language known this way (None,
    "", "und", an unknown or malformed code) ``sample_text`` decides: rtl where most of its
    letters with a strong direction are right-to-left ones (Arabic, Hebrew, Thaana, ...), else
    ltr, as with no text.
    """
    subtags = _subtags(lang)
    if subtags is not None:
        primary = subtags[0]
        scripts = (_script_direction(s) for s in subtags[1:] if len(s) == 4 and s.isalpha())
        by_script = next((d for d in scripts if d is not None), None)
        if by_script is not None:
            return by_script
        if primary in RTL_LANGUAGES:
            return "rtl"
        if primary in LTR_LANGUAGES:
            return "ltr"
        likely = _likely_script(primary)
        if likely is not None and _script_direction(likely) is not None:
            return _script_direction(likely)
    return sample_direction(sample_text or "")


SAMPLE_CHARS = 10_000  # the characters of a sample text that decide its direction


def sample_direction(text: str) -> str:
    """"rtl" where most of the letters of ``text`` (its first :data:`SAMPLE_CHARS`) that have a
    strong direction are right-to-left ones (Unicode bidirectional class R or AL), else
    "ltr"."""
    rtl = ltr = 0
    for ch in text[:SAMPLE_CHARS]:
        kind = unicodedata.bidirectional(ch)
        if kind in ("R", "AL"):
            rtl += 1
        elif kind == "L":
            ltr += 1
    return "rtl" if rtl > ltr else "ltr"


def lang_attrs(lang: str | None, sample_text: str | None = None) -> str:
    """The ``lang`` and ``dir`` attributes of an element holding text in ``lang``
    (``lang="ar" dir="rtl"``); only ``dir`` where the language is not known."""
    direction = text_direction(lang, sample_text)
    tag = (lang or "").strip().replace("_", "-")
    if not tag:
        return f'dir="{direction}"'
    return f'lang="{escape(tag)}" dir="{direction}"'


def is_english_ltr(lang: str | None, sample_text: str | None = None) -> bool:
    """Whether a page in ``lang`` is an English one (its interface needs no marking)."""
    subtags = _subtags(lang)
    return bool(subtags) and subtags[0] == "en" and text_direction(lang, sample_text) == "ltr"


def body_tag(lang: str | None, sample_text: str | None = None) -> str:
    """``<body>`` of a page whose content is in ``lang``: plain for English, else marked as the
    English interface (:data:`CHROME`) that the content blocks inside it override."""
    return "<body>" if is_english_ltr(lang, sample_text) else f"<body {CHROME}>"


DATA_ID = "page-data"  # the id of the JSON data block; read it with JSON.parse(el.textContent)


# A code point of the surrogate range in a Python string: a lone surrogate (a pair read from
# JSON is one code point), which UTF-8 cannot encode.
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
# Characters that change the direction of the text after them: the right-to-left letters
# (bidirectional classes R, AL), Arabic digits (AN) and the embedding, override and isolate
# controls.
_BIDI_CLASSES = frozenset({"R", "AL", "AN", "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI",
                           "FSI", "PDI"})
FSI, PDI = "\u2068", "\u2069"  # first-strong isolate and its end


def text_of(value: object) -> str:
    """``value`` as text that UTF-8 can encode: each lone surrogate replaced by U+FFFD."""
    return _LONE_SURROGATE.sub("\ufffd", str(value))


def escape(text: object) -> str:
    """``text`` as HTML text or a quoted attribute value: & < > " ' escaped, a lone surrogate
    written as U+FFFD."""
    return html.escape(text_of(text), quote=True)


def needs_isolation(text: str) -> bool:
    """Whether ``text`` holds a right-to-left letter or a bidirectional control, so that laid
    out inline it could reorder the text around it."""
    return any(unicodedata.bidirectional(ch) in _BIDI_CLASSES for ch in text)


def isolate(text: object) -> str:
    """``text`` (:func:`text_of`) between FSI and PDI where it could reorder the text around it
    (:func:`needs_isolation`), else as it is: for plain-text places that have no ``<bdi>``, a
    page's ``<title>`` or a Markdown line. An override left open inside it ends at the PDI."""
    value = text_of(text)
    return f"{FSI}{value}{PDI}" if needs_isolation(value) else value


SHOWN_CHARS = 20_000  # the characters of one text a page lays out before "show all"


def shown(text: str, limit: int = SHOWN_CHARS) -> tuple[str, int]:
    """The first ``limit`` characters (code points) of ``text`` and how many are left out (0
    where it is whole)."""
    if len(text) <= limit:
        return text, 0
    return text[:limit], len(text) - limit


def cut_note(left_out: int) -> str:
    """What a page says after a text it cut (:func:`shown`)."""
    return f"\u2026 {left_out:,} more characters not shown"


# The pages' scripts put a text into an element with ``fillText(node, text)``: as text
# (``textContent``), at most SHOWN_CHARS characters of it at first, then a button (in the
# English interface) that says how many more there are and shows them when pressed. A cut never
# splits a surrogate pair.
FILL_TEXT_JS = """\
  function fillText(node, text) {
    var LIMIT = @LIMIT@;
    text = String(text);
    if (text.length <= LIMIT) { node.textContent = text; return node; }
    var cut = LIMIT, code = text.charCodeAt(cut - 1);
    if (code >= 0xD800 && code <= 0xDBFF) { cut -= 1; }
    var left = Array.from(text.slice(cut)).length;
    node.textContent = text.slice(0, cut);
    var more = document.createElement("button");
    more.type = "button";
    more.className = "show-all";
    more.lang = "en";
    more.dir = "ltr";
    more.textContent = "\\u2026 " + left.toLocaleString("en") + " more characters: show all";
    more.addEventListener("click", function (ev) {
      ev.stopPropagation();
      node.textContent = text;
    });
    node.appendChild(document.createTextNode(" "));
    node.appendChild(more);
    return node;
  }
""".replace("@LIMIT@", str(SHOWN_CHARS))


def _json_escape_surrogate(match: re.Match) -> str:
    return f"\\u{ord(match.group()):04x}"


def json_block(data: object, element_id: str = DATA_ID) -> str:
    """``data`` as a JSON block that a browser does not execute and whose text cannot end it:
    every ``<``, ``>`` and ``&`` written as a JSON escape, and each lone surrogate too (the
    page reads back the very string; UTF-8 cannot hold it raw)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    text = _LONE_SURROGATE.sub(_json_escape_surrogate, text)
    return f'<script type="application/json" id="{escape(element_id)}">{text}</script>'


def _hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def policy(script: str = "", css: str = "") -> str:
    """The Content-Security-Policy of a page whose only script and style are ``script`` and
    ``css`` (inline): those two by hash, images from ``data:`` only, nothing else."""
    scripts = _hash(script) if script else "'none'"
    styles = _hash(css) if css else "'none'"
    return (f"default-src 'none'; script-src {scripts}; style-src {styles}; img-src data:; "
            "base-uri 'none'; form-action 'none'")


def page(title: str, body: str, *, script: str = "", css: str = "",
         data: object | None = None, lang: str | None = "en",
         sample_text: str | None = None) -> str:
    """A whole HTML document: ``title`` (escaped here), ``body`` (HTML the caller built with
    :func:`escape`), ``data`` in the JSON block, then ``script`` and ``css`` inline under the
    policy that allows only them. ``<html>`` carries ``lang`` and its direction
    (:func:`lang_attrs`; ``sample_text``, some of the content, decides the direction where the
    language is not known); ``<body>`` is the English interface (:func:`body_tag`), so every
    element of ``body`` or of the script that holds content sets that content's ``lang`` and
    ``dir`` itself."""
    parts = [
        "<!DOCTYPE html>",
        f"<html {lang_attrs(lang, sample_text)}>",
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{escape(policy(script, css))}">',
        '<meta name="referrer" content="no-referrer">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
    ]
    if css:
        parts.append(f"<style>{css}</style>")
    parts += ["</head>", body_tag(lang, sample_text), body]
    if data is not None:
        parts.append(json_block(data))
    if script:
        parts.append(f"<script>{script}</script>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)
