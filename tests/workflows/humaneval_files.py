"""Small generated predictions files for the tests of ``wikisum human-eval``, a browser driver
that annotates its page, and the docs' screenshots of the page:

    .venv/bin/python tests/workflows/humaneval_files.py docs

writes docs/human-eval-quality.png and docs/human-eval-preference.png (1200x800) from a page of
these predictions.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

# (title, reference lead) of made-up articles.
ARTICLES = (
    ("Harbour Lane Bridge",
     "The Harbour Lane Bridge is a stone arch bridge over the River Teal in the town of "
     "Westmouth. It was built between 1821 and 1824 to replace a wooden ferry crossing. The "
     "bridge has five arches and carries a single road lane. It was listed as a protected "
     "structure in 1968."),
    ("Cedric Aldane",
     "Cedric Aldane (1902-1977) was a botanist and museum curator. He studied the mosses of "
     "coastal heathland and described eleven new species. From 1946 he directed the natural "
     "history museum of Westmouth, where his herbarium is kept."),
    ("Pale marsh moth",
     "The pale marsh moth is a moth of the family Noctuidae. It is found in wet meadows and "
     "reed beds of northern Europe. The wingspan is 28-32 mm. The larvae feed on sedges and "
     "reed grasses."),
    ("Orlen Valley Railway",
     "The Orlen Valley Railway was a branch line that ran for 14 miles along the valley of the "
     "Orlen. It opened in 1879 to carry slate from the quarries at Brenick. Passenger services "
     "ended in 1951 and the line closed completely in 1963. Part of the route is now a "
     "footpath."),
    ("Lake Tarrow",
     "Lake Tarrow is a reservoir in the hills east of Castleford. It was formed in 1934 by a "
     "concrete dam across the Tarrow stream. The lake supplies drinking water to the town and "
     "is used for sailing and fishing."),
    ("Mira Solvang",
     "Mira Solvang (born 1985) is a composer and pianist. Her first opera, The Salt Road, was "
     "performed in 2014. She has written music for film and for the theatre, and she teaches "
     "composition at the conservatory of Castleford."),
)


def sentences(text: str) -> list[str]:
    return [s.strip().rstrip(".") + "." for s in text.split(". ") if s.strip().rstrip(".")]


def system_output(system: int, title: str, lead: str) -> str:
    """A system's made-up lead: system 0 keeps the reference's first sentences, system 1
    repeats itself, system 2 says little; others reorder the sentences."""
    parts = sentences(lead)
    if system == 0:
        return " ".join(parts[:3])
    if system == 1:
        return " ".join([parts[0], parts[0], f"{title} is {title}.", parts[-1]])
    if system == 2:
        return f"{title} is a {title.split()[-1].lower()}. It is known."
    return " ".join(reversed(parts))


def records(system: int, n: int, *, article: bool = False, start_id: int = 100) -> list[dict]:
    """``n`` prediction records of one system, ids ``start_id``, ``start_id + 1``, ..."""
    out = []
    for i in range(n):
        title, lead = ARTICLES[i % len(ARTICLES)]
        if i >= len(ARTICLES):
            title = f"{title} ({i // len(ARTICLES) + 1})"
        prediction = system_output(system, title, lead)
        record = {"id": start_id + i, "title": title, "prediction": prediction,
                  "reference": lead, "reference_nll": 1.0, "reference_tokens": 10}
        if article:
            predicted = [{"title": "", "text": prediction},
                         {"title": "History", "text": sentences(lead)[-1]}]
            reference = [{"title": "", "text": lead},
                         {"title": "History", "text": "It was first described in 1901."}]
            record.update(target="article", prediction_sections=predicted,
                          reference_sections=reference,
                          prediction=f"{prediction}\n== History ==\n{predicted[1]['text']}",
                          reference=f"{lead}\n== History ==\n{reference[1]['text']}")
        out.append(record)
    return out


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def write_preds(folder: Path, names: tuple[str, ...] = ("alpha", "beta"), n: int = 6,
                **options) -> dict[str, str]:
    """One predictions file per system in ``folder``: name -> path."""
    return {name: str(write_jsonl(folder / f"{name}.jsonl", records(k, n, **options)))
            for k, name in enumerate(names)}


# -- driving the page in a browser ---------------------------------------------------------


def open_page(context, path: Path):
    """A new tab of ``context`` showing the page at ``path``, once its script has run."""
    page = context.new_page()
    page.set_default_timeout(5000)  # a page that does not react fails in seconds
    page.goto(path.as_uri())
    page.wait_for_selector("html[data-ready=true]")
    return page


def current_item(page) -> str:
    return page.get_attribute("#item", "data-item")


def answer_current(page, planted: dict, *, keyboard: bool = True) -> None:
    """Answer the item on screen with its planted answer: a quality item's ratings (a dict
    question -> 1..5, in the page's question order) or a preference ("A", "B", "none"), by
    keyboard (the digits typed from the first question, which the page highlights on an
    unanswered item) or by clicking."""
    want = planted[current_item(page)]
    if keyboard:
        page.keyboard.type("".join(map(str, want.values())) if isinstance(want, dict)
                           else {"A": "a", "B": "b", "none": "n"}[want])
    elif isinstance(want, dict):
        for question, value in want.items():
            page.click(f".question[data-question={question}] button[data-value='{value}']")
    else:
        page.click(f".choices button[data-choice={want}]")


def planted_answers(key: dict, quality: dict, prefer: str, ties: int = 1) -> dict:
    """item id -> its planted answer: every quality item of system S rated ``quality[S]`` (a
    dict question -> value), every preference for ``prefer`` except the first ``ties``
    items, answered "none"."""
    out = {q["item"]: dict(quality[q["system"]]) for q in key["quality_items"]}
    for k, p in enumerate(key["preference_items"]):
        if k < ties:
            out[p["item"]] = "none"
        else:
            out[p["item"]] = "A" if p["a"] == prefer else "B"
    return out


# -- the docs' screenshots -----------------------------------------------------------------


def screenshots(docs: Path, work: Path) -> list[Path]:
    """docs/human-eval-quality.png and docs/human-eval-preference.png (1200x800): a page of three
    made-up systems, a quality item half rated and a preference item answered."""
    import shutil

    from playwright.sync_api import sync_playwright

    from wikisum.generation import humaneval

    preds = write_preds(work / "preds", ("t-dmca", "seq2seq", "tfidf"), n=6)
    made = humaneval.make(preds, str(work / "page"), kind="both", sample=4, seed=0)
    page_path = Path(made["page"])
    key = json.loads(Path(made["key"]).read_text())
    executable = next(p for p in map(shutil.which, ("chromium", "chromium-browser")) if p)
    shots = [docs / "human-eval-quality.png", docs / "human-eval-preference.png"]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        context = browser.new_context(viewport={"width": 1200, "height": 800})
        page = open_page(context, page_path)
        page.fill("#annotator", "Annotator 1")
        page.keyboard.press("Enter")
        quality = next(q for q in key["quality_items"] if q["system"] == "t-dmca")
        while current_item(page) != quality["item"]:
            page.keyboard.press("ArrowRight")
        for value in ("4", "5", "4"):
            page.keyboard.press(value)
        page.screenshot(path=str(shots[0]))
        while not current_item(page).startswith("p-"):
            page.keyboard.press("ArrowRight")
        page.keyboard.press("ArrowRight")
        page.keyboard.press("a")
        page.screenshot(path=str(shots[1]))
        browser.close()
    return shots


if __name__ == "__main__":
    import tempfile

    target = Path(sys.argv[1] if len(sys.argv) > 1 else "docs")
    with tempfile.TemporaryDirectory() as tmp:
        for shot in screenshots(target, Path(tmp)):
            print(shot)
