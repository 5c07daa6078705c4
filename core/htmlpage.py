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
                data={"items": [...]})

Every string a caller puts into ``body`` goes through :func:`escape`; data goes through
:func:`json_block` (which :func:`page` calls), so ``</script>`` in a text cannot close the
block.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json

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

DATA_ID = "page-data"  # the id of the JSON data block; read it with JSON.parse(el.textContent)


def escape(text: object) -> str:
    """``text`` as HTML text or a quoted attribute value: & < > " ' escaped."""
    return html.escape(str(text), quote=True)


def json_block(data: object, element_id: str = DATA_ID) -> str:
    """``data`` as a JSON block that a browser does not execute and whose text cannot end it:
    every ``<``, ``>`` and ``&`` written as a JSON escape."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")
    text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
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
         data: object | None = None, lang: str = "en") -> str:
    """A whole HTML document: ``title`` (escaped here), ``body`` (HTML the caller built with
    :func:`escape`), ``data`` in the JSON block, then ``script`` and ``css`` inline under the
    policy that allows only them."""
    parts = [
        "<!DOCTYPE html>",
        f'<html lang="{escape(lang)}">',
        "<head>",
        '<meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{escape(policy(script, css))}">',
        '<meta name="referrer" content="no-referrer">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title>",
    ]
    if css:
        parts.append(f"<style>{css}</style>")
    parts += ["</head>", "<body>", body]
    if data is not None:
        parts.append(json_block(data))
    if script:
        parts.append(f"<script>{script}</script>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)
