"""The extractor report in the dataset's language: ``<html>`` carries it, the English report
around the articles is marked English, each article's title, lead and paragraphs carry the
language and its direction, the lead's words are marked by the language's words, and in a
browser Arabic and Hebrew read right to left with their punctuation where it belongs."""

import pytest
from rtl_texts import TEXTS

from wikisum.core.text import content_words
from wikisum.pipeline import report, report_bootstrap, report_render, report_scores, report_stats

EXTRACTORS, CORPORA, LENGTHS = ["identity", "tfidf"], ["combined"], [100, 1000]


def metrics_in(lang: str | None) -> dict:
    """metrics.json of six articles whose shown article is ``TEXTS[lang]``'s, as
    :func:`wikisum.pipeline.report.assemble` writes it with dataset.json's ``language``."""
    title, lead, a, b = TEXTS[lang or "en"]
    fn = report_bootstrap.BootstrapMeans(samples=50, seed=0, keep_replicates=True)
    acc = fn.create_accumulator()
    ids = [f"a{i}" for i in range(6)]
    for i, article in enumerate(ids):
        values = {f"rouge|{e}|combined|{t}": 0.2 + 0.05 * i + 0.1 * (e == "tfidf")
                  for e in EXTRACTORS for t in report_scores.ROUGE_TYPES}
        values.update({f"recall|{e}|combined|{n}": 0.3 + 0.02 * i
                       for e in EXTRACTORS for n in LENGTHS})
        acc = fn.add_input(acc, (article, values))
    means = fn.extract_output(acc)
    replicates = {k: m.pop("replicates") for k, m in means.items()}
    config = report.ReportConfig("data", "out", lengths=tuple(LENGTHS), bootstrap=50)
    info = {"extractors": EXTRACTORS, "corpora": CORPORA, "rows": {"test": 6}, "language": lang}
    per_article = [{"id": i, "rouge": {e: {"combined": {"rougeL": 0.3}} for e in EXTRACTORS},
                    "recall": {}} for i in ids]
    top = [{"text": a, "url": "http://مثال.إختبار/مسار"}, {"text": b, "url": "https://x.org/"}]
    views = [{"id": "a0", "title": title, "lead": lead,
              "top": {e: {"combined": top} for e in EXTRACTORS}}]
    return report.assemble(config, info, means, {"lead_words": {p: 1 for p in
                                                                report_stats.PERCENTILES}},
                           {"articles": 6}, per_article, replicates=replicates, views=views)


@pytest.mark.parametrize(("lang", "direction"), [("ar", "rtl"), ("he", "rtl"), ("ja", "ltr")])
def test_the_page_and_its_articles_carry_the_dataset_language(lang, direction):
    html = report_render.to_html(metrics_in(lang), {})
    content = f'lang="{lang}" dir="{direction}"'
    assert html.startswith(f"<!DOCTYPE html><html {content}>")
    assert "<body lang=\"en\" dir=\"ltr\"><h1>Extractor comparison report</h1>" in html
    title, lead = TEXTS[lang][:2]
    assert f"<h3 {content}>{title}</h3>" in html
    assert f"<p {content}>{lead}</p>" in html
    assert html.count(f"<ol {content}>") == len(EXTRACTORS)
    assert "<bdi class='src'>مثال.إختبار</bdi>" in html  # a domain isolated from the text


@pytest.mark.parametrize("lang", ["en", None])
def test_an_english_report_marks_nothing(lang):
    html = report_render.to_html(metrics_in(lang), {})
    assert html.startswith('<!DOCTYPE html><html lang="en" dir="ltr"><head>')
    assert "<body><h1>" in html and "<h3>Egypt</h3>" in html and "<ol>" in html
    assert html.count(" dir=") == 1


def test_the_leads_words_are_marked_by_the_reports_language():
    lead = "Москва является столицей России, которая расположена на реке."
    # Russian function words are not content: "на" is not marked in a Russian report
    marked = report_render._mark_shared("Город стоит на реке.", set(content_words(lead, "ru")))
    assert marked == "Город стоит на <mark>реке.</mark>"
    metrics = metrics_in("ar")
    metrics["language"] = "ru"
    metrics["article_views"][0].update(lead=lead, top={e: {"combined": [
        {"text": "Город стоит на реке.", "url": None}]} for e in EXTRACTORS})
    assert "<li>Город стоит на <mark>реке.</mark></li>" in report_render.to_html(metrics, {})


def test_words_are_marked_one_by_one_in_scripts_without_spaces():
    assert report_render._mark_shared("東京都は日本の首都である。", {"東京", "首都"}) == \
        "<mark>東京</mark>都は日本の<mark>首都</mark>である。"
    assert report_render._mark_shared("首都東京", {"東京", "首都"}) == "<mark>首都東京</mark>"
    assert report_render._mark_shared("a <b> c", {"b"}) == "a <mark>&lt;b&gt;</mark> c"


def _layout(page) -> dict:
    """Computed directions, and where the lead's final full stop lies against the letter
    before it (left of it in a right-to-left paragraph)."""
    return page.evaluate("""() => {
      const dir = s => getComputedStyle(document.querySelector(s)).direction;
      const p = document.querySelector('.article .lead p'), text = p.firstChild;
      const box = (i) => { const r = document.createRange(); r.setStart(text, i);
        r.setEnd(text, i + 1); return r.getBoundingClientRect(); };
      const n = text.length;
      return {body: dir('body'), h2: dir('h2'), pick: dir('.pick'), title: dir('.article h3'),
              lead: dir('.article .lead p'), list: dir('.ext ol'), heading: dir('.ext h4'),
              html: document.documentElement.dir, lang: document.documentElement.lang,
              stop: box(n - 1).left, before: box(n - 2).left};
    }""")


@pytest.mark.parametrize(("lang", "direction"), [("ar", "rtl"), ("he", "rtl"), ("ja", "ltr"),
                                                 ("en", "ltr")])
def test_the_report_reads_in_its_direction_in_a_browser(browser, tmp_path, lang, direction):
    path = tmp_path / "report.html"
    path.write_text(report_render.to_html(metrics_in(lang), {}), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(path.as_uri())
        seen = _layout(page)
        page.locator(".article").screenshot(path=str(tmp_path / f"article-{lang}.png"))
    finally:
        page.close()
    assert (seen["html"], seen["lang"]) == (direction, lang)
    assert seen["body"] == seen["h2"] == seen["pick"] == seen["heading"] == "ltr"
    assert seen["title"] == seen["lead"] == seen["list"] == direction
    if direction == "rtl":
        assert seen["stop"] < seen["before"]  # the full stop ends the line on the left
    else:
        assert seen["stop"] > seen["before"]
    assert errors == []
