"""The compare page and the human-evaluation page in the predictions' language: the texts of
each example (title, reference, outputs) carry the records' ``lang`` and its direction, the
English interface around them stays left to right, and in a browser Arabic and Hebrew read
right to left with their punctuation where it belongs."""

import json

import pytest
from rtl_texts import TEXTS, records

from wikisum.core import htmlpage
from wikisum.generation import comparepage, evaluation, humaneval, humaneval_page

DIRECTIONS = [("ar", "rtl"), ("he", "rtl"), ("ja", "ltr"), ("en", "ltr")]


def _compare_data(lang: str, with_lang: bool = True, override: str | None = None) -> dict:
    a, b = records(lang, 0, with_lang=with_lang), records(lang, 1, with_lang=with_lang)
    comparison = evaluation.compare(a, b, bootstrap=20, lang=override)
    return comparepage.page_data(a, b, comparison, ("a.jsonl", "b.jsonl"))


def test_compare_items_carry_their_language_and_direction():
    data = _compare_data("ar")
    assert data["lang"] == "ar"
    assert {(i["lang"], i["dir"]) for i in data["items"]} == {("ar", "rtl")}
    # records without a language: the texts give the direction, the page stays English
    data = _compare_data("he", with_lang=False)
    assert data["lang"] == "en"
    assert {(i["lang"], i["dir"]) for i in data["items"]} == {(None, "rtl")}
    # evaluate --lang names the language of every record
    data = _compare_data("ar", with_lang=False, override="ar")
    assert (data["lang"], data["items"][0]["lang"], data["items"][0]["dir"]) == ("ar", "ar", "rtl")
    html = comparepage.render(_compare_data("ar"))
    assert '<html lang="ar" dir="rtl">' in html and f"<body {htmlpage.CHROME}>" in html
    english = comparepage.render(_compare_data("en", with_lang=False))
    assert '<html lang="en" dir="ltr">' in english and "<body>\n" in english


def test_page_language_is_the_most_common_one():
    items = [{"index": 0, "lang": "he"}, {"index": 1, "lang": "ar"}, {"index": 2, "lang": "ar"},
             {"index": 3, "lang": None}]
    assert comparepage.page_language(items) == "ar"
    assert comparepage.page_language([{"index": 0, "lang": None}]) == "en"
    examples = [{"lang": "fa", "dir": "rtl"}, {"dir": "ltr"}]
    assert humaneval_page.page_language(examples) == "fa"
    assert humaneval_page.page_language([{"dir": "rtl"}]) == "en"


def test_a_human_evaluation_example_carries_its_records_language():
    assert humaneval_page.example_language(records("ar", 0)[0]) == {"lang": "ar", "dir": "rtl"}
    assert humaneval_page.example_language(records("ja", 0)[0]) == {"lang": "ja", "dir": "ltr"}
    assert humaneval_page.example_language(records("he", 0, with_lang=False)[0]) == \
        {"dir": "rtl"}


# -- in the browser ------------------------------------------------------------------------

# Directions of the interface and of the content, and where a text's final full stop lies
# against the character before it (left of it in a right-to-left paragraph).
LAYOUT = """([chrome, content, text]) => {
  const dir = s => getComputedStyle(document.querySelector(s)).direction;
  const node = document.querySelector(text).firstChild, n = node.length;
  const box = i => { const r = document.createRange(); r.setStart(node, i); r.setEnd(node, i + 1);
                     return r.getBoundingClientRect().left; };
  return {chrome: chrome.map(dir), content: content.map(dir), stop: box(n - 1),
          before: box(n - 2), lang: document.querySelector(text).closest('[lang]').lang};
}"""


def _open(browser, path):
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    return page, errors


def _assert_reads(seen: dict, direction: str) -> None:
    assert set(seen["chrome"]) == {"ltr"}, seen
    assert set(seen["content"]) == {direction}, seen
    if direction == "rtl":
        assert seen["stop"] < seen["before"], seen
    else:
        assert seen["stop"] > seen["before"], seen


@pytest.mark.parametrize(("lang", "direction"), DIRECTIONS)
def test_the_compare_page_reads_in_its_direction(browser, tmp_path, lang, direction):
    a, b = records(lang, 0), records(lang, 1)
    path = comparepage.write_page(tmp_path / "page", a, b, evaluation.compare(a, b, bootstrap=20),
                                  ("a.jsonl", "b.jsonl"))
    page, errors = _open(browser, path)
    try:
        seen = page.evaluate(LAYOUT, [
            ["header", "#tests", "#controls", "li.example", ".block h4", ".scores"],
            ["li.example h3.title", ".reference p.text", ".side-a p.text", ".side-b p.text"],
            ".reference p.text"])
        page.locator("li.example").first.screenshot(path=str(tmp_path / f"compare-{lang}.png"))
    finally:
        page.close()
    _assert_reads(seen, direction)
    assert seen["lang"] == lang
    assert errors == []


@pytest.mark.parametrize(("lang", "direction"), DIRECTIONS)
@pytest.mark.parametrize("marked", [True, False])
def test_the_human_evaluation_page_reads_in_its_direction(browser, tmp_path, lang, direction,
                                                          marked):
    """``marked``: the page's examples carry ``lang`` and ``dir``
    (:func:`humaneval_page.example_language`); else they hold none and each text takes the
    direction of its first letters."""
    preds = {}
    for side, name in enumerate(("alpha", "beta")):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                for r in records(lang, side)), encoding="utf-8")
        preds[name] = str(path)
    out = tmp_path / "eval"
    humaneval.make(preds, str(out), kind="preference", sample=1, seed=0, page_id="p" * 32)
    page_file = out / "index.html"
    if marked:
        html = page_file.read_text(encoding="utf-8")
        start = html.index('<script type="application/json"')
        start = html.index(">", start) + 1
        data = json.loads(html[start:html.index("</script>", start)])
        for example in data["examples"]:
            example.update(humaneval_page.example_language(records(lang, 0)[0]))
        page_file.write_text(htmlpage.page(
            humaneval_page.TITLE, humaneval_page.BODY, script=humaneval_page.SCRIPT,
            css=humaneval_page.CSS, data=data,
            lang=humaneval_page.page_language(data["examples"])), encoding="utf-8")
    page, errors = _open(browser, page_file)
    try:
        page.wait_for_selector("html[data-ready=true]")
        seen = page.evaluate(LAYOUT, [
            ["header.bar", ".actions button", "p.kind", ".output h2", "details.context summary",
             ".choices"],
            ["h1.title", "details.context .text", ".output .text"],
            "details.context .text p"])
        page.locator("#item").screenshot(path=str(tmp_path / f"humaneval-{lang}.png"))
    finally:
        page.close()
    _assert_reads(seen, direction)
    if marked:
        assert seen["lang"] == lang
    assert errors == []


def test_every_rtl_text_of_the_examples_is_right_to_left():
    """The Arabic and Hebrew texts here are mostly right-to-left letters: what the page tests
    above rely on when no language is given."""
    for lang in ("ar", "he"):
        assert {htmlpage.sample_direction(t) for t in TEXTS[lang]} == {"rtl"}
