"""Hostile text in the pages wikisum writes: the annotation page (`wikisum human-eval make`), the
side-by-side page (`wikisum evaluate --compare --html`) and the extractor report (`wikisum
report`: report.html, report.md and its plots).

Every case of :data:`TEXTS` is put into every place a page shows data (titles, ids, outputs,
references, input paragraphs, section headings, system and extractor names, paths) and the page
is opened in headless Chromium: nothing of it runs (no injected element, no script but the
page's own), it is shown as text (the element holds the very string, or its first
``SHOWN_CHARS`` characters and a button that shows the rest), the page makes no request, logs
no error and still works (the annotation page is answered, reopened and exported; the
side-by-side page is sorted and searched). JavaScript names (``__proto__``, ``constructor``,
...) are also the annotation page's item ids, under which the answers must be kept and
exported.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from clirun import run_cli
from humaneval_files import records

from wikisum.core import htmlpage
from wikisum.generation import comparepage, evaluation, humaneval
from wikisum.pipeline import (
    report,
    report_bootstrap,
    report_plots,
    report_render,
    report_scores,
    report_stats,
)

BIG = 5_000_000
# (name, text): what a prediction, a title, an id or a name may hold.
TEXTS = [
    ("proto", "__proto__"),
    ("constructor", "constructor"),
    ("to_string", "toString"),
    ("has_own_property", "hasOwnProperty"),
    ("script_end", "</script><script>window.__pwned=1</script>"),
    ("comment_open", "<!-- <script>window.__pwned=2</script>"),
    ("cdata_end", "]]><img src=x onerror=\"window.__pwned=3\">"),
    ("markdown_link", "[click](javascript:window.__pwned=4) *em* `code` | cell"),
    ("line_separators", "one\u2028two\u2029three"),
    ("rtl_override", "\u202eevil.exe"),
    ("rtl_isolates", "\u2067\u202btext\u2069 \u2066"),
    ("lone_surrogates", "x\ud800y\udfffz\udbff"),
    ("five_megabytes", "w" * BIG),
    ("five_megabytes_of_words", "word " * (BIG // 5)),
]
# Item ids that are names of every JavaScript object's properties.
JS_NAMES = ["__proto__", "constructor", "toString", "hasOwnProperty", "valueOf",
            "__defineGetter__", "isPrototypeOf"]
DIMENSIONS = [key for key, _, _ in humaneval.QUESTIONS]


def cases(table):
    return [pytest.param(text, id=name) for name, text in table]


# -- the browser ---------------------------------------------------------------------------


def watch(page, seen: dict) -> None:
    """Collect the page's requests, page errors and console errors into ``seen``."""
    seen.setdefault("requests", [])
    seen.setdefault("errors", [])
    seen.setdefault("console", [])
    page.on("request", lambda r: seen["requests"].append(r.url))
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    # Chromium notes that frame-ancestors has no effect in a <meta> policy; anything else counts
    page.on("console", lambda m: seen["console"].append(m.text)
            if m.type == "error" and "frame-ancestors" not in m.text else None)


def open_in(context, path: Path, seen: dict, ready: str | None = "html[data-ready=true]"):
    page = context.new_page()
    page.set_default_timeout(10_000)
    watch(page, seen)
    page.goto(path.as_uri())
    if ready:
        page.wait_for_selector(ready, state="attached")
    return page


def assert_inert(page, scripts: int) -> None:
    """Nothing injected ran or was made: only the page's own scripts, no element that loads
    or runs anything."""
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.evaluate("document.scripts.length") == scripts
    assert page.evaluate("document.querySelectorAll('img, iframe, object, embed, a[href]')"
                         ".length") == 0


def assert_clean(seen: dict, path: Path) -> None:
    """The page asked for nothing but itself (and an export's own blob: address), and logged
    no error."""
    assert {u for u in seen["requests"] if not u.startswith("blob:")} == {path.as_uri()}
    assert seen["errors"] == [] and seen["console"] == []


# What an element shows of a string of the page's data (found by its path in the data block):
# compared in the page, so that a lone surrogate is compared as it is.
SHOWS = """([selector, path]) => {
  if (!globalThis.testData) {
    globalThis.testData = JSON.parse(document.getElementById("page-data").textContent);
  }
  let want = globalThis.testData;
  for (const key of path) { want = want[key]; }
  const node = document.querySelector(selector);
  const text = node.firstChild && node.firstChild.nodeType === 3 ? node.firstChild.data : "";
  return {whole: text === want, start: text.length > 0 && want.startsWith(text),
          shown: text.length, length: want.length,
          button: node.querySelector("button.show-all") !== null};
}"""


def assert_shows(page, selector: str, path: list, expand: bool = False) -> None:
    """The element at ``selector`` shows the data at ``path`` as text: whole, or (a long one)
    its first SHOWN_CHARS characters and a button that (``expand``: pressed here) shows the
    whole text."""
    got = page.evaluate(SHOWS, [selector, path])
    if got["length"] <= htmlpage.SHOWN_CHARS:
        assert got["whole"] and not got["button"], got
        return
    assert got["start"] and got["button"] and got["shown"] == htmlpage.SHOWN_CHARS, got
    if expand:
        page.locator(selector).locator("button.show-all").click()
        assert page.evaluate(SHOWS, [selector, path])["whole"]


def page_json(html: str) -> dict:
    block = re.search(r'<script type="application/json" id="page-data">(.*?)</script>', html,
                      re.S)
    return json.loads(block.group(1))


# -- the annotation page -------------------------------------------------------------------


def annotation_page(folder: Path, text: str, quality_id: str = "q-1",
                    preference_id: str = "p-1") -> Path:
    """An annotation page whose example and outputs hold ``text`` everywhere: a quality item
    (a whole article) and a preference item."""
    example = {"title": text, "dir": "ltr", "reference": {"text": text}, "input": [text]}
    items = [{"id": quality_id, "type": "quality", "example": 0,
              "output": {"sections": [{"title": text, "text": text}]}},
             {"id": preference_id, "type": "preference", "example": 0, "a": {"text": text},
              "b": {"text": "A plain summary."}}]
    data = humaneval.page_data(page_id="0" * 32, kind="both", examples=[example], items=items)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "index.html"
    path.write_text(humaneval.page_html(data), encoding="utf-8")
    return path


def answer_both(page) -> None:
    """Name the annotator, rate the quality item (4 5 3 4 5) and prefer A."""
    page.fill("#annotator", "Ann")
    page.keyboard.press("Enter")
    page.keyboard.type("45345")
    page.keyboard.press("j")
    page.keyboard.press("a")


def exported(page, target: Path) -> dict:
    with page.expect_download() as info:
        page.click("#export")
    info.value.save_as(str(target))
    return json.loads(target.read_text())


RATED = dict(zip(DIMENSIONS, (4, 5, 3, 4, 5), strict=True))


@pytest.mark.parametrize("text", cases(TEXTS))
def test_annotation_page_shows_hostile_text_as_text_and_works(browser, tmp_path, text):
    path = annotation_page(tmp_path / "page", text)
    assert "<img" not in path.read_text(encoding="utf-8")
    seen: dict = {}
    context = browser.new_context(accept_downloads=True)
    try:
        page = open_in(context, path, seen)
        assert_shows(page, "h1.title", ["examples", 0, "title"], expand=True)
        assert_shows(page, "details.context .text p", ["examples", 0, "reference", "text"])
        assert_shows(page, "details.context li", ["examples", 0, "input", 0])
        assert_shows(page, ".output .text h3", ["items", 0, "output", "sections", 0, "title"])
        assert_shows(page, ".output .text p", ["items", 0, "output", "sections", 0, "text"])
        answer_both(page)
        assert_shows(page, ".pair .output .text p", ["items", 1, "a", "text"])
        assert page.locator("#progress").text_content() == "2 of 2 answered"
        assert_inert(page, scripts=2)
        answers = exported(page, tmp_path / "answers.json")
    finally:
        context.close()
    assert answers["quality"] == {"q-1": RATED} and answers["preference"] == {"p-1": "A"}
    assert_clean(seen, path)


@pytest.mark.parametrize("item_id", JS_NAMES)
def test_answers_are_kept_and_exported_under_any_item_id(browser, tmp_path, item_id):
    other = JS_NAMES[(JS_NAMES.index(item_id) + 1) % len(JS_NAMES)]
    path = annotation_page(tmp_path / "page", "A title", quality_id=item_id,
                           preference_id=other)
    seen: dict = {}
    context = browser.new_context(accept_downloads=True)
    try:
        page = open_in(context, path, seen)
        answer_both(page)
        assert page.locator("#progress").text_content() == "2 of 2 answered"
        page.close()
        page = open_in(context, path, seen)  # the answers kept in the browser
        assert page.locator("#progress").text_content() == "2 of 2 answered"
        assert page.locator("#complete").text_content() == "Complete"
        answers = exported(page, tmp_path / "answers.json")
    finally:
        context.close()
    assert answers["quality"] == {item_id: RATED}
    assert answers["preference"] == {other: "A"}
    assert_clean(seen, path)


# The records of `make`: a lone surrogate is left to the predictions' reader and the key, a
# megabyte of words to ROUGE (minutes of stemming), neither of them the page's part.
MADE = [(name, text) for name, text in TEXTS
        if not re.search("[\ud800-\udfff]", text) and name != "five_megabytes_of_words"]


@pytest.mark.parametrize("text", cases(MADE))
def test_make_writes_a_working_page_of_hostile_records(browser, tmp_path, text, capsys):
    folder = tmp_path / "preds"
    folder.mkdir()
    argv = ["human-eval", "make", "--out", str(tmp_path / "eval"), "--sample", "2",
            "--show", "reference,input"]
    names = [f"{text[:100]} {k}".replace("=", "-") for k in range(2)]
    for k, name in enumerate(names):
        rows = [dict(r, input=["An input paragraph."]) for r in records(k, 2)]
        # a line of the file is bounded (8 MiB): a long text is the prediction alone
        rows[0].update(prediction=text)
        if len(text) < 200:
            rows[0].update(id=text, title=text, reference=text, input=[text])
        path = folder / f"system{k}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        argv += ["--preds", f"{name}={path}"]
    status, _, err = run_cli(argv, capsys)
    assert status == 0, err
    path = tmp_path / "eval" / "index.html"
    data = page_json(path.read_text(encoding="utf-8"))
    assert not any(name in json.dumps(data, ensure_ascii=False) for name in names)
    example = next(i for i, e in enumerate(data["examples"])
                   if e["title"] == (text if len(text) < 200 else records(0, 1)[0]["title"]))
    seen: dict = {}
    context = browser.new_context()
    try:
        page = open_in(context, path, seen)
        for _ in data["items"]:
            shown = page.get_attribute("#item", "data-item")
            k, item = next((k, it) for k, it in enumerate(data["items"]) if it["id"] == shown)
            if item["example"] == example:
                assert_shows(page, "h1.title", ["examples", example, "title"])
                assert_shows(page, "details.context .text p",
                             ["examples", example, "reference", "text"])
                if item["type"] == "quality":
                    assert_shows(page, ".output .text p", ["items", k, "output", "text"])
                else:
                    assert_shows(page, ".pair .output .text p", ["items", k, "a", "text"])
            page.keyboard.press("j")
        assert_inert(page, scripts=2)
    finally:
        context.close()
    assert_clean(seen, path)


# -- the side-by-side page -----------------------------------------------------------------


def compare_page(folder: Path, text: str, name_a: str) -> Path:
    """The side-by-side page of two examples, the first showing ``text`` as its id, title,
    reference and both outputs, and system A named ``name_a``. The scores and tests are of
    plain records (ROUGE of texts of megabytes is the metrics' concern, not the page's)."""
    a = [{"id": "ex0", "title": "t", "prediction": "the dog", "reference": "the cat sat"},
         {"id": "ex1", "title": "Plain", "prediction": "the dog", "reference": "the cat sat"}]
    b = [dict(a[0], prediction="the cat"), dict(a[1], prediction="a mat")]
    data = comparepage.page_data(a, b, evaluation.compare(a, b, bootstrap=20),
                                 (name_a, "b.jsonl"))
    item = next(i for i in data["items"] if i["index"] == 0)
    item.update(id=text, title=text, reference={"text": text},
                a=dict(item["a"], text=text), b=dict(item["b"], text=f"{text} the cat"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / comparepage.PAGE
    path.write_text(comparepage.render(data), encoding="utf-8")
    return path


@pytest.mark.parametrize("text", cases(TEXTS))
def test_compare_page_shows_hostile_text_as_text_and_works(browser, tmp_path, text):
    name_a = str(tmp_path / f"{text[:100]}.jsonl".replace("/", "-"))
    path = compare_page(tmp_path / "page", text, name_a)
    data = page_json(path.read_text(encoding="utf-8"))
    seen: dict = {}
    context = browser.new_context()
    try:
        page = open_in(context, path, seen, ready="li.example")
        page.select_option("#sort-key", "file")  # the hostile example first
        index = next(k for k, item in enumerate(data["items"]) if item["index"] == 0)
        first = "li.example:first-child"
        assert_shows(page, f"{first} h3.title", ["items", index, "title"], expand=True)
        assert_shows(page, f"{first} .example-id bdi", ["items", index, "id"])
        assert_shows(page, f"{first} .reference p.text", ["items", index, "reference", "text"])
        assert_shows(page, f"{first} .side-a p.text", ["items", index, "a", "text"])
        assert_shows(page, f"{first} .side-b p.text", ["items", index, "b", "text"])
        assert_shows(page, "#systems dd bdi", ["names", "a"])
        assert page.title() == (f"b.jsonl against "
                                f"{htmlpage.isolate(Path(name_a).name)}")
        page.fill("#find", "plain")
        assert page.locator("#shown").text_content() == "1 of 2 examples"
        page.fill("#find", "")
        page.select_option("#sort-key", "id")
        assert page.locator("li.example").count() == 2
        assert_inert(page, scripts=2)
    finally:
        context.close()
    assert_clean(seen, path)


# -- the extractor report ------------------------------------------------------------------


def report_metrics(text: str, extractors: list[str], data: str, split: str) -> dict:
    """metrics.json of six articles (as :func:`wikisum.pipeline.report.assemble` writes it)
    whose shown article has ``text`` as its title, lead, paragraph and address path."""
    lengths = [100, 1000]
    fn = report_bootstrap.BootstrapMeans(samples=50, seed=0, keep_replicates=True)
    acc = fn.create_accumulator()
    ids = [f"a{i}" for i in range(6)]
    for i, article in enumerate(ids):
        values = {f"rouge|{e}|combined|{t}": 0.2 + 0.05 * i + 0.1 * k
                  for k, e in enumerate(extractors) for t in report_scores.ROUGE_TYPES}
        values.update({f"recall|{e}|combined|{n}": 0.3 + 0.02 * i
                       for e in extractors for n in lengths})
        acc = fn.add_input(acc, (article, values))
    means = fn.extract_output(acc)
    replicates = {k: m.pop("replicates") for k, m in means.items()}
    config = report.ReportConfig(data, "out", lengths=tuple(lengths), bootstrap=50)
    info = {"extractors": extractors, "corpora": ["combined"], "rows": {split: 6}}
    per_article = [{"id": i, "rouge": {e: {"combined": {"rougeL": 0.3}} for e in extractors},
                    "recall": {}} for i in ids]
    top = [{"text": text, "url": "https://example.org/" + text[:100]}]
    views = [{"id": "a0", "title": text, "lead": text,
              "top": {e: {"combined": top} for e in extractors}}]
    metrics = report.assemble(config, info, means, {"lead_words": {p: 1 for p in
                                                                   report_stats.PERCENTILES}},
                              {"articles": 6}, per_article, replicates=replicates, views=views)
    metrics["split"] = split
    return metrics


def shown_in_report(text: str) -> str:
    """What the report shows of a text of its per-article view."""
    value = htmlpage.text_of(text)
    head, left_out = htmlpage.shown(value)
    return f"{head} {htmlpage.cut_note(left_out)}" if left_out else value


@pytest.mark.parametrize("text", cases(TEXTS))
def test_report_shows_hostile_text_as_text(browser, tmp_path, text, monkeypatch):
    short = len(text) < 200
    extractors = ["tfidf", text] if short else ["tfidf", "identity"]
    metrics = report_metrics(text, extractors, text if short else "data",
                             text if short else "test")
    legends = []

    def png(fig):  # the legends' entries of each figure, then its bytes as the report has them
        legends.append([t.get_text() for legend in fig.legends + [a.get_legend() for a in fig.axes]
                        if legend is not None for t in legend.get_texts()])
        return keep_png(fig)

    keep_png = report_plots._png
    monkeypatch.setattr(report_plots, "_png", png)
    pngs = report_render.figures(metrics)
    names = [htmlpage.text_of(e) for e in extractors]
    assert legends == [names, names]  # every name, as written
    html = report_render.to_html(metrics, pngs)
    md = report_render.to_markdown(metrics, {})
    path = tmp_path / "report.html"
    path.write_text(html, encoding="utf-8")
    seen: dict = {}
    context = browser.new_context()
    try:
        page = open_in(context, path, seen, ready=None)
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.evaluate("document.scripts.length") == 0
        assert page.evaluate("document.querySelectorAll('img').length") == 2  # the plots
        assert page.evaluate("document.querySelectorAll('iframe, object, embed, a').length") == 0
        article = page.locator("section.article")
        assert article.locator("h3").text_content() == shown_in_report(text)
        assert article.locator(".lead p").text_content() == shown_in_report(text)
        assert article.locator(".ext li").first.text_content().startswith(
            shown_in_report(text))
        if short:
            assert page.locator("p.sub bdi").first.text_content() == htmlpage.text_of(text)
            assert article.locator(".ext h4 bdi").nth(1).text_content() == \
                htmlpage.text_of(text)
    finally:
        context.close()
    assert_clean(seen, path)
    assert_markdown_is_text(md, text)


def assert_markdown_is_text(md: str, text: str) -> None:
    """report.md rendered by a CommonMark renderer (raw HTML on, as most render it) holds no
    element that the data made (no script, image, link, comment; no emphasis or code span of
    the data's); the title is one heading."""
    markdown_it = pytest.importorskip("markdown_it")
    rendered = markdown_it.MarkdownIt("commonmark").enable("table").render(md)
    assert not re.search(r"<(script|img|a |iframe|!--)|<em>em</em>|<code>code</code>",
                         rendered), rendered[:2000]
    title = md.split("## 5. Articles side by side", 1)[1].split("\n### ", 1)[1]
    assert "\n" not in title.split("\n\n", 1)[0]  # the title holds no line break
