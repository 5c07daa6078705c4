"""`wikisum evaluate --compare A B --html DIR`: the side-by-side page of two systems' outputs
(generation/comparepage.py): per-example scores and order on hand-worked examples, the
command's outputs and refusals, and the page in headless Chromium (untrusted text stays inert,
A beside B, the order by difference)."""

from __future__ import annotations

import json
import re

import pytest

from wikisum.core import ownership, stats
from wikisum.generation import comparepage, evaluation
from wikisum.workflows import cli

REFERENCE = "the cat sat on the mat"
PAYLOADS = ("<script>window.__pwned=1</script>", '<img src=x onerror="window.__pwned=1">',
            "</script><script>window.__pwned=2</script>")


def lead(id_, prediction, reference=REFERENCE, title=""):
    return {"id": id_, "title": title, "prediction": prediction, "reference": reference}


def three_examples():
    """ex0: B gains (ROUGE-L +0.35), ex1: B loses (-0.25), ex2: both the same."""
    a = [lead("ex0", "the dog"), lead("ex1", "the cat"), lead("ex2", "a mat")]
    b = [lead("ex0", "the cat sat"), lead("ex1", "dogs run"), lead("ex2", "a mat")]
    return a, b


def save(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


def page_json(html: str) -> dict:
    block = re.search(r'<script type="application/json" id="page-data">(.*?)</script>', html,
                      re.S)
    return json.loads(block.group(1))


# -- the page's data ------------------------------------------------------------------------


def test_per_example_scores_are_hand_worked_f1():
    a, b = three_examples()
    # "the cat sat" against 6 reference tokens: unigrams P 3/3, R 3/6, F1 2/3; bigrams "the cat",
    # "cat sat" of 5: P 1, R 2/5, F1 4/7. "the dog": one unigram, P 1/2, R 1/6, F1 1/4.
    scores_b = comparepage.example_scores(b)
    assert scores_b[0] == pytest.approx({"rouge1": 2 / 3, "rouge2": 4 / 7, "rougeL": 2 / 3})
    scores_a = comparepage.example_scores(a)
    assert scores_a[0] == pytest.approx({"rouge1": 1 / 4, "rouge2": 0.0, "rougeL": 1 / 4})
    # "the cat": P 1, R 2/6, F1 1/2; "dogs run" (stemmed "dog", "run"): nothing in common
    assert scores_a[1]["rougeL"] == pytest.approx(1 / 2) and scores_b[1]["rougeL"] == 0.0


def test_items_are_sorted_by_the_rouge_l_difference_largest_first():
    a, b = three_examples()
    items = comparepage.paired_items(a, b)
    assert [i["id"] for i in items] == ["ex0", "ex1", "ex2"]  # file order
    diffs = [i["diff"]["rougeL"] for i in items]
    assert diffs == pytest.approx([2 / 3 - 1 / 4, -1 / 2, 0.0])
    assert [i["id"] for i in comparepage.sort_items(items)] == ["ex0", "ex2", "ex1"]
    assert [i["id"] for i in comparepage.sort_items(items, descending=False)] == \
        ["ex1", "ex2", "ex0"]
    # equal differences keep the file order
    same = comparepage.paired_items(a, a)
    assert [i["id"] for i in comparepage.sort_items(same)] == ["ex0", "ex1", "ex2"]
    # a reference that differs in B is kept beside A's; a number id is shown as JSON
    b[1] = dict(b[1], reference="another reference", id=7)
    items = comparepage.paired_items(a, b)
    assert items[1]["reference_b"] == {"text": "another reference"}
    assert "reference_b" not in items[0]


def test_whole_articles_show_sections_and_rouge_lsum():
    # Liu et al.'s order example (docs): ROUGE-L 50, ROUGE-Lsum 100
    def article(text_a, text_b):
        return {"id": "x", "title": "T", "target": "article", "prediction": text_a,
                "reference": text_b, "prediction_sections": [{"title": "", "text": text_a}],
                "reference_sections": [{"title": "", "text": text_b},
                                       {"title": "History", "text": ""}]}

    record = article("A dog ran. The cat sat.", "The cat sat. A dog ran.")
    record["reference_sections"].pop()
    scores = comparepage.example_scores([record])[0]
    assert scores["rougeL"] == pytest.approx(0.5) and scores["rougeLsum"] == pytest.approx(1.0)
    item = comparepage.paired_items([record], [record])[0]
    assert item["a"]["sections"] == [{"title": "", "text": "A dog ran. The cat sat."}]
    assert item["reference"]["sections"] == [{"title": "", "text": "The cat sat. A dog ran."}]
    assert [k for k, _ in comparepage.score_labels(True)] == ["rouge1", "rouge2", "rougeL",
                                                              "rougeLsum"]


def test_verdict_rows_say_which_way_each_test_went():
    def entry(diff, p, label):
        result = stats.PairedResult(mean_a=0.2, mean_b=0.2 + diff, diff=diff, low=diff - 0.01,
                                    high=diff + 0.01, p_value=p, n=50, resamples=1000)
        return {"label": label, "scale": 100.0, **result.as_dict(),
                "verdict": result.verdict(scale=100.0, digits=2)}

    comparison = {"differences": {"rouge.rouge2.f": entry(0.012, 0.003, "ROUGE-2 F1"),
                                  "rouge.rouge2.p": entry(-0.03, 0.001, "ROUGE-2 P"),
                                  "rouge.rougeL.f": entry(0.01, 0.2, "ROUGE-L F1")}}
    rows = comparepage.verdict_rows(comparison)
    assert [(r["label"], r["a"], r["b"], r["direction"], r["primary"]) for r in rows] == [
        ("ROUGE-2 F1", "20.00", "21.20", 1, True), ("ROUGE-2 P", "20.00", "17.00", -1, False),
        ("ROUGE-L F1", "20.00", "21.00", 0, True)]
    assert rows[0]["verdict"] == "B above A: +1.20 [0.20, 2.20], p = 0.003"


def test_every_string_travels_in_the_json_block_only():
    a, b = three_examples()
    a[0] = lead("ex0", PAYLOADS[0], reference=PAYLOADS[1], title=PAYLOADS[2])
    comparison = evaluation.compare(a, b, bootstrap=20)
    html = comparepage.render(comparepage.page_data(a, b, comparison, ("<a>.jsonl", "b.jsonl")))
    assert html.count("<script") == 2  # the data block and the page's own script
    assert "window.__pwned" in html and "<img" not in html and "</script><script>" not in html
    data = page_json(html)
    item = next(i for i in data["items"] if i["id"] == "ex0")
    assert (item["title"], item["a"]["text"], item["reference"]["text"]) == \
        (PAYLOADS[2], PAYLOADS[0], PAYLOADS[1])
    assert data["names"] == {"a": "<a>.jsonl", "b": "b.jsonl"}
    assert "<title>b.jsonl against &lt;a&gt;.jsonl</title>" in html


# -- the command ----------------------------------------------------------------------------


def test_compare_with_html_writes_the_page_beside_the_json(tmp_path, capsys):
    a, b = three_examples()
    path_a, path_b = save(tmp_path / "a.jsonl", a), save(tmp_path / "b.jsonl", b[::-1])
    out = tmp_path / "page"
    assert cli.main(["evaluate", "--compare", path_a, path_b, "--html", str(out),
                     "--bootstrap", "20"]) == 0
    assert (tmp_path / "b.compare.json").exists()
    assert sorted(p.name for p in out.iterdir()) == [".wikisum", "index.html"]
    assert ownership.read_marker(str(out))["command"] == "evaluate"
    data = page_json((out / "index.html").read_text())
    assert [i["id"] for i in data["items"]] == ["ex0", "ex2", "ex1"]  # paired by id, sorted
    assert data["examples"] == 3 and not data["articles"]
    assert data["names"] == {"a": path_a, "b": path_b}
    assert [r["label"] for r in data["verdicts"]][:3] == ["ROUGE-1 F1", "ROUGE-1 P", "ROUGE-1 R"]
    assert "only 3 examples scored" in data["warnings"][0]
    # the page's own directory is rewritten by the same command
    assert cli.main(["evaluate", "--compare", path_a, path_b, "--html", str(out),
                     "--bootstrap", "20"]) == 0


def test_html_refuses_a_directory_holding_user_files(tmp_path):
    a, b = three_examples()
    path_a, path_b = save(tmp_path / "a.jsonl", a), save(tmp_path / "b.jsonl", b)
    mine = tmp_path / "notes"
    mine.mkdir()
    (mine / "index.html").write_text("my page")
    with pytest.raises(SystemExit, match=r"wikisum evaluate: --html .*notes holds files wikisum "
                                         r"did not write \(index\.html\)"):
        cli.main(["evaluate", "--compare", path_a, path_b, "--html", str(mine)])
    assert (mine / "index.html").read_text() == "my page"
    assert not (tmp_path / "b.compare.json").exists()  # refused before any work


def test_html_without_compare_is_an_error_that_writes_nothing(tmp_path):
    a, _ = three_examples()
    preds = save(tmp_path / "a.jsonl", a)
    with pytest.raises(SystemExit, match="--html needs --compare A B"):
        cli.main(["evaluate", "--preds", preds, "--html", str(tmp_path / "page")])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl"]


# -- in the browser -------------------------------------------------------------------------


def watched(browser, path):
    """A page at ``path`` with every request, page error and console error it makes."""
    seen = {"requests": [], "errors": [], "console": []}
    page = browser.new_page(viewport={"width": 1200, "height": 800})
    page.on("request", lambda r: seen["requests"].append(r.url))
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    # Chromium notes that frame-ancestors has no effect in a <meta> policy; anything else counts
    page.on("console", lambda m: seen["console"].append(m.text)
            if m.type == "error" and "frame-ancestors" not in m.text else None)
    page.goto(path.as_uri())
    return page, seen


def test_payloads_stay_inert_in_the_browser(browser, tmp_path):
    a, b = three_examples()
    a[0] = lead("ex0", PAYLOADS[0] + " the dog", reference=PAYLOADS[1] + " " + REFERENCE,
                title=PAYLOADS[2])
    b[0] = lead("ex0", PAYLOADS[1] + " " + PAYLOADS[2], reference=a[0]["reference"],
                title=PAYLOADS[2])
    b[2] = lead("ex2", "x", reference=PAYLOADS[2])  # B's reference differs: shown too
    path = comparepage.write_page(tmp_path / "page", a, b, evaluation.compare(a, b, bootstrap=20),
                                  (PAYLOADS[1], "b.jsonl"))
    page, seen = watched(browser, path)
    try:
        first = page.locator("li.example[data-id='ex0']")
        assert first.locator("h3.title").text_content() == PAYLOADS[2]
        assert first.locator(".side-a .text").text_content() == PAYLOADS[0] + " the dog"
        assert first.locator(".side-b .text").text_content() == PAYLOADS[1] + " " + PAYLOADS[2]
        assert first.locator(".reference .text").text_content() == a[0]["reference"]
        assert page.locator("li.example[data-id='ex2'] .reference .text").nth(1).text_content() \
            == PAYLOADS[2]
        assert page.locator("#systems dd").first.text_content() == PAYLOADS[1]
        assert page.evaluate("typeof window.__pwned") == "undefined"
        assert page.evaluate("document.querySelectorAll('img, iframe, object').length") == 0
        assert page.evaluate("document.scripts.length") == 2
        assert page.locator("li.example").count() == 3
    finally:
        page.close()
    assert seen["requests"] == [path.as_uri()]
    assert seen["errors"] == [] and seen["console"] == []


def test_a_beside_b_and_sorted_by_difference_in_the_browser(browser, tmp_path):
    a, b = three_examples()
    a.append(lead("ex10", "on the mat"))
    b.append(lead("ex10", "the cat sat on"))  # ROUGE-L F1 4/5 - 2/3: +0.13
    path = comparepage.write_page(tmp_path / "page", a, b, evaluation.compare(a, b, bootstrap=20))
    page, seen = watched(browser, path)

    def order():
        return page.eval_on_selector_all("li.example", "els => els.map(e => e.dataset.id)")

    try:
        side_a = page.locator("li.example").first.locator(".side-a").bounding_box()
        side_b = page.locator("li.example").first.locator(".side-b").bounding_box()
        assert side_a["x"] + side_a["width"] <= side_b["x"]  # A left of B
        assert abs(side_a["y"] - side_b["y"]) < 1  # on the same line
        assert side_a["width"] == pytest.approx(side_b["width"], abs=1)
        assert order() == ["ex0", "ex10", "ex2", "ex1"]  # +0.42, +0.13, 0, -0.5
        page.select_option("#sort-order", "asc")
        assert order() == ["ex1", "ex2", "ex10", "ex0"]
        page.select_option("#sort-key", "id")  # ids smallest first
        assert order() == ["ex0", "ex1", "ex2", "ex10"]  # numeric parts compared as numbers
        page.select_option("#sort-key", "file")
        assert order() == ["ex0", "ex1", "ex2", "ex10"]
        page.select_option("#sort-order", "desc")
        assert order() == ["ex10", "ex2", "ex1", "ex0"]
        page.select_option("#sort-key", "diff:rouge2")  # differences largest first again
        assert page.input_value("#sort-order") == "desc"
        assert order() == ["ex0", "ex10", "ex2", "ex1"]  # ROUGE-2: +4/7, 3/4 - 4/7, 0, -1/3
        page.fill("#find", "ex1")
        assert order() == ["ex10", "ex1"]  # still by the ROUGE-2 difference
        assert page.locator("#shown").text_content() == "2 of 4 examples"
        assert page.locator("#verdicts tbody tr:visible").count() == 3  # the F1 rows
        page.check("#all-tests")
        assert page.locator("#verdicts tbody tr:visible").count() == 16
    finally:
        page.close()
    assert seen["errors"] == [] and seen["console"] == []
