"""The blind annotation page of ``wikisum human-eval make``: its body, style and script.

The page is one file built by :func:`wikisum.core.htmlpage.page`: the items are in its JSON
block and the script below puts every text into the page with ``textContent`` only, so that a
model output or a web paragraph holding markup is shown as text; a text longer than
:data:`wikisum.core.htmlpage.SHOWN_CHARS` is shown cut, with a button that says how much more
there is and shows it. The script keeps the answers in ``localStorage`` under the page's own
key on every change (a closed tab resumes where it was) and exports them as the answers file of
``docs/human-evaluation.md`` through a download (a ``Blob``, an object URL and ``<a
download>``: nothing leaves the machine). Answers are kept by item id in objects without a
prototype, so that any string is an id (``__proto__`` and ``constructor`` too).

The data block (:func:`wikisum.generation.humaneval.page_data`)::

    {"page_id": str, "storage_key": str, "kind": str,
     "questions": [{"key", "name", "text"}, ...], "scale": [label of 1, ..., label of 5],
     "examples": [{"title": str, "reference"?: OUTPUT, "input"?: [str, ...]}, ...],
     "items": [{"id": "q-...", "type": "quality", "example": int, "output": OUTPUT}
               | {"id": "p-...", "type": "preference", "example": int, "a": OUTPUT,
                  "b": OUTPUT}, ...]}

where an OUTPUT is ``{"text": str}`` or ``{"sections": [{"title": str, "text": str}, ...]}``
(a whole article, the lead first with title ""). No system name is in it.

Languages: the page's interface is English; every text of an example (its title, reference,
input paragraphs and the outputs) is shown in the example's language and direction, an
example's optional ``"lang"`` and ``"dir"`` (:func:`example_language`), and where an example
has no ``"dir"`` in the direction its own first letters give (``dir="auto"``), so that Arabic
or Hebrew text reads right to left whatever wrote the data.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping

from wikisum.core import htmlpage
from wikisum.generation.evaluation import record_lang

TITLE = "Human evaluation"


def example_language(record: Mapping) -> dict:
    """An example's ``"lang"`` (the predictions record's language,
    :func:`~wikisum.generation.evaluation.record_lang`, left out where it has none) and
    ``"dir"`` (:func:`wikisum.core.htmlpage.text_direction`; the record's reference and
    prediction decide where no language is known), to merge into its entry of the page's
    ``examples``."""
    lang = record_lang(record)
    sample = " ".join(str(record.get(k) or "") for k in ("title", "reference", "prediction"))
    out = {"dir": htmlpage.text_direction(lang, sample)}
    if lang:
        out["lang"] = lang
    return out


def page_language(examples: Iterable[Mapping]) -> str:
    """The language of the whole page: the one most of ``examples`` are in (the first of
    equals), English where none says; pass it to :func:`wikisum.core.htmlpage.page`."""
    counts = Counter(e["lang"] for e in examples if e.get("lang"))
    return counts.most_common(1)[0][0] if counts else "en"

# The page's skeleton; nothing in it comes from the data.
BODY = """\
<header class="bar">
  <div class="who">
    <label for="annotator">Your name</label>
    <input id="annotator" type="text" autocomplete="off" spellcheck="false"
      placeholder="required before answering">
  </div>
  <div class="where">
    <span id="progress"></span>
    <span id="complete" class="complete"></span>
  </div>
  <div class="actions">
    <button id="prev" type="button">&larr; Previous</button>
    <button id="next" type="button">Next &rarr;</button>
    <button id="unanswered" type="button">Next unanswered</button>
    <button id="export" type="button">Export answers</button>
  </div>
</header>
<p id="notice" class="notice" role="status"></p>
<main id="item"></main>
<footer class="keys">
  <h2>Keyboard</h2>
  <ul>
    <li><kbd>1</kbd>&ndash;<kbd>5</kbd> rate the highlighted question, then the next one is
      highlighted (click a question to highlight it)</li>
    <li><kbd>a</kbd> / <kbd>b</kbd> / <kbd>n</kbd> prefer A, prefer B, no preference</li>
    <li><kbd>&rarr;</kbd> or <kbd>j</kbd> next item, <kbd>&larr;</kbd> or <kbd>k</kbd>
      previous item</li>
  </ul>
  <p>Answers are kept in this browser as you give them: closing the tab loses nothing. When
    you are done, press <b>Export answers</b> and send the file it saves.</p>
</footer>
"""

CSS = """\
:root { --ink: #1d2430; --muted: #5b6473; --line: #d5dae1; --accent: #1f5fbf;
  --chosen: #1f5fbf; --soft: #f4f6f9; --ok: #1b7a3d; --warn: #a04a00; }
* { box-sizing: border-box; }
body { margin: 0; font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  color: var(--ink); background: #fff; }
.bar { position: sticky; top: 0; z-index: 1; display: flex; flex-wrap: wrap; gap: 8px 24px;
  align-items: center; padding: 10px 20px; background: var(--soft);
  border-bottom: 1px solid var(--line); }
.who label { font-weight: 600; margin-right: 6px; }
.who input { font: inherit; padding: 4px 8px; width: 13em; border: 1px solid var(--line);
  border-radius: 4px; }
.who input.missing { border-color: var(--warn); }
.where { display: flex; gap: 16px; color: var(--muted); }
.complete { font-weight: 600; color: var(--warn); }
.complete.done { color: var(--ok); }
.actions { margin-left: auto; display: flex; gap: 6px; }
button { font: inherit; padding: 4px 12px; border: 1px solid var(--line); border-radius: 4px;
  background: #fff; color: var(--ink); cursor: pointer; }
button:hover:enabled { border-color: var(--accent); }
button:disabled { color: #a0a6ae; cursor: not-allowed; }
button.chosen { background: var(--chosen); border-color: var(--chosen); color: #fff; }
#export { border-color: var(--accent); color: var(--accent); font-weight: 600; }
.notice { margin: 0; padding: 0 20px; min-height: 1.5em; color: var(--warn); }
main { max-width: 1160px; margin: 0 auto; padding: 4px 20px 12px; }
.kind { margin: 0; color: var(--muted); font-size: 13px; }
.kind .position { font-weight: 600; color: var(--ink); }
h1.title { margin: 2px 0 10px; font-size: 22px; }
details.context { margin: 0 0 12px; border: 1px solid var(--line); border-radius: 6px;
  background: var(--soft); }
details.context summary { padding: 6px 12px; cursor: pointer; color: var(--muted); }
details.context .text { padding: 0 12px 8px; max-height: 14em; overflow: auto; }
.output { border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; }
.output h2 { margin: 0 0 4px; font-size: 15px; color: var(--muted); }
.text p { margin: 4px 0 8px; white-space: pre-wrap; overflow-wrap: anywhere; }
.text h3 { margin: 10px 0 2px; font-size: 15px; }
.text ol { margin: 4px 0; padding-inline-start: 22px; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 14px; }
.pair .output { max-height: 26em; overflow: auto; }
.choices { display: flex; gap: 10px; justify-content: center; margin: 14px 0 4px; }
.choices button { min-width: 9em; padding: 8px 14px; }
.questions { margin-top: 12px; }
.question { display: grid; grid-template-columns: minmax(0, 1fr) auto; gap: 4px 16px;
  padding: 6px 10px; border-left: 4px solid transparent; border-radius: 4px; }
.question.focused { border-left-color: var(--accent); background: var(--soft); }
.question h3 { margin: 0; font-size: 15px; }
.question p { margin: 0; color: var(--muted); font-size: 13px; grid-column: 1; }
.scale { grid-column: 2; grid-row: 1 / span 2; display: flex; gap: 4px; align-self: center; }
.scale button { width: 6.6em; padding: 3px 2px; font-size: 12px; line-height: 1.25; }
.scale button b { display: block; font-size: 15px; }
.keys { max-width: 1160px; margin: 8px auto 24px; padding: 8px 20px; color: var(--muted);
  font-size: 13px; border-top: 1px solid var(--line); }
.keys h2 { font-size: 13px; margin: 0; }
.keys ul { margin: 2px 0; padding-left: 18px; }
.keys p { margin: 2px 0; }
.show-all { font-size: 12px; padding: 0 8px; margin: 0 4px; }
kbd { border: 1px solid var(--line); border-radius: 3px; padding: 0 4px; background: #fff;
  font-size: 12px; }
"""

_SCRIPT = """\
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("page-data").textContent);
  var items = data.items, questions = data.questions, total = items.length;
  var PREFS = {a: "A", b: "B", n: "none"};
  // Answers by item id in objects without a prototype: an id such as "__proto__" or
  // "constructor" is a key like any other.
  function table() { return Object.create(null); }
  var state = {annotator: "", position: 0, focus: 0, quality: table(), preference: table()};
  var kept = true;
  var NOT_KEPT = "This browser does not keep the answers (storage is off): export them "
    + "before closing the page.";

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) { node.className = cls; }
    if (text !== undefined && text !== null) { node.textContent = String(text); }
    return node;
  }
  function byId(id) { return document.getElementById(id); }
  function has(object, key) { return Object.prototype.hasOwnProperty.call(object, key); }
  // A text of the data as text, cut to its first characters with a "show all" button where
  // it is long.
@FILL_TEXT@
  // -- answers kept in localStorage under this page's key ------------------------------------
  function isScore(v) { return v === 1 || v === 2 || v === 3 || v === 4 || v === 5; }
  function restore() {
    var saved;
    try { saved = JSON.parse(localStorage.getItem(data.storage_key) || "null"); }
    catch (e) { kept = false; return; }
    if (!saved || typeof saved !== "object") { return; }
    if (typeof saved.annotator === "string") { state.annotator = saved.annotator; }
    if (typeof saved.position === "number" && saved.position >= 0 && saved.position < total) {
      state.position = Math.floor(saved.position);
    }
    items.forEach(function (item) {
      if (item.type === "quality" && saved.quality && has(saved.quality, item.id)) {
        var given = saved.quality[item.id], answer = table();
        questions.forEach(function (q) {
          if (given && isScore(given[q.key])) { answer[q.key] = given[q.key]; }
        });
        if (Object.keys(answer).length) { state.quality[item.id] = answer; }
      } else if (item.type === "preference" && saved.preference
                 && has(saved.preference, item.id)) {
        var choice = saved.preference[item.id];
        if (choice === "A" || choice === "B" || choice === "none") {
          state.preference[item.id] = choice;
        }
      }
    });
  }
  function save() {
    try { localStorage.setItem(data.storage_key, JSON.stringify(state)); kept = true; }
    catch (e) { kept = false; }
    if (!kept) { say(NOT_KEPT); }
  }

  // -- what is answered ----------------------------------------------------------------------
  function answered(item) {
    if (item.type === "preference") { return has(state.preference, item.id); }
    var answer = has(state.quality, item.id) ? state.quality[item.id] : null;
    return !!answer && questions.every(function (q) { return has(answer, q.key); });
  }
  function doneCount() { return items.filter(answered).length; }
  // A quality item's ratings so far (a new, empty table where it has none).
  function answerOf(item) {
    return has(state.quality, item.id) ? state.quality[item.id] : table();
  }
  function named() { return state.annotator.trim() !== ""; }

  var noticeTimer = null;
  function say(text) {
    var notice = byId("notice");
    notice.textContent = text;
    if (noticeTimer) { clearTimeout(noticeTimer); }
    noticeTimer = setTimeout(function () { notice.textContent = ""; }, 6000);
  }

  // -- drawing -------------------------------------------------------------------------------
  // An example's texts in its language and direction; the interface around them is English.
  function inLanguage(node, example) {
    if (example.lang) { node.lang = example.lang; }
    node.dir = example.dir === "rtl" || example.dir === "ltr" ? example.dir : "auto";
    return node;
  }
  function drawText(parent, output, example) {
    var box = inLanguage(el("div", "text"), example);
    if (output.sections) {
      output.sections.forEach(function (section) {
        if (section.title) { box.appendChild(fillText(el("h3"), section.title)); }
        if (section.text) { box.appendChild(fillText(el("p"), section.text)); }
      });
    } else {
      box.appendChild(fillText(el("p"), output.text));
    }
    parent.appendChild(box);
    return box;
  }
  function drawContext(parent, example) {
    if (example.reference) {
      var ref = el("details", "context");
      ref.open = true;
      ref.appendChild(el("summary", null, "Reference: the Wikipedia article (for context)"));
      drawText(ref, example.reference, example);
      parent.appendChild(ref);
    }
    if (example.input && example.input.length) {
      var inp = el("details", "context");
      inp.appendChild(el("summary", null, "Top input paragraphs (for context)"));
      var box = inLanguage(el("div", "text"), example), list = el("ol");
      example.input.forEach(function (p) { list.appendChild(fillText(el("li"), p)); });
      box.appendChild(list);
      inp.appendChild(box);
      parent.appendChild(inp);
    }
  }
  function drawOutput(parent, heading, output, example) {
    var box = el("section", "output");
    box.appendChild(el("h2", null, heading));
    drawText(box, output, example);
    parent.appendChild(box);
    return box;
  }
  function drawQuality(main, item, example) {
    drawOutput(main, "Summary", item.output, example);
    var answer = answerOf(item);
    var list = el("div", "questions");
    questions.forEach(function (q, qi) {
      var row = el("div", "question" + (qi === state.focus ? " focused" : ""));
      row.dataset.question = q.key;
      row.appendChild(el("h3", null, (qi + 1) + ". " + q.name));
      var scale = el("div", "scale");
      data.scale.forEach(function (label, si) {
        var value = si + 1, button = el("button", answer[q.key] === value ? "chosen" : null);
        button.type = "button";
        button.disabled = !named();
        button.dataset.value = String(value);
        button.setAttribute("aria-pressed", answer[q.key] === value ? "true" : "false");
        button.appendChild(el("b", null, String(value)));
        button.appendChild(document.createTextNode(label));
        button.addEventListener("click", function (ev) {
          ev.stopPropagation();
          rate(qi, value);
        });
        scale.appendChild(button);
      });
      row.appendChild(scale);
      row.appendChild(el("p", null, q.text));
      row.addEventListener("click", function () { state.focus = qi; save(); draw(); });
      list.appendChild(row);
    });
    main.appendChild(list);
  }
  function drawPreference(main, item, example) {
    var pair = el("div", "pair");
    drawOutput(pair, "Summary A", item.a, example);
    drawOutput(pair, "Summary B", item.b, example);
    main.appendChild(pair);
    var choices = el("div", "choices"), chosen = state.preference[item.id];
    [["A", "A is better"], ["B", "B is better"], ["none", "No preference"]].forEach(function (c) {
      var button = el("button", chosen === c[0] ? "chosen" : null, c[0] === "none" ? c[1] : c[0]);
      button.type = "button";
      button.title = c[1];
      button.disabled = !named();
      button.dataset.choice = c[0];
      button.setAttribute("aria-pressed", chosen === c[0] ? "true" : "false");
      button.addEventListener("click", function () { prefer(c[0]); });
      choices.appendChild(button);
    });
    main.appendChild(choices);
  }
  function draw() {
    var item = items[state.position], example = data.examples[item.example];
    var main = byId("item");
    main.replaceChildren();
    main.dataset.item = item.id;
    var kind = el("p", "kind");
    kind.appendChild(el("span", "position", "Item " + (state.position + 1) + " of " + total));
    kind.appendChild(document.createTextNode(item.type === "quality"
      ? " \u00b7 Linguistic quality: read the summary on its own and answer the five questions"
      : " \u00b7 Preference: which of the two summaries is better?"));
    main.appendChild(kind);
    main.appendChild(inLanguage(fillText(el("h1", "title"), example.title), example));
    drawContext(main, example);
    if (item.type === "quality") { drawQuality(main, item, example); }
    else { drawPreference(main, item, example); }
    var done = doneCount();
    byId("progress").textContent = done + " of " + total + " answered";
    var complete = byId("complete");
    complete.textContent = done === total ? "Complete" : "Not complete";
    complete.classList.toggle("done", done === total);
    byId("prev").disabled = state.position === 0;
    byId("next").disabled = state.position === total - 1;
    byId("annotator").classList.toggle("missing", !named());
  }

  // -- answering -----------------------------------------------------------------------------
  function needName() {
    if (named()) { return false; }
    say("Type your name at the top first.");
    byId("annotator").focus();
    return true;
  }
  function rate(qi, value) {
    var item = items[state.position];
    if (item.type !== "quality" || needName()) { return; }
    var answer = answerOf(item);
    answer[questions[qi].key] = value;
    state.quality[item.id] = answer;
    state.focus = Math.min(qi + 1, questions.length - 1);
    save();
    draw();
  }
  function prefer(choice) {
    var item = items[state.position];
    if (item.type !== "preference" || needName()) { return; }
    state.preference[item.id] = choice;
    save();
    draw();
  }
  function go(to) {
    if (to < 0 || to >= total || to === state.position) { return; }
    state.position = to;
    state.focus = firstOpenQuestion(items[to]);
    save();
    draw();
    window.scrollTo(0, 0);
  }
  function firstOpenQuestion(item) {
    var answer = answerOf(item);
    for (var i = 0; i < questions.length; i++) {
      if (!has(answer, questions[i].key)) { return i; }
    }
    return 0;
  }
  function nextUnanswered() {
    for (var step = 1; step <= total; step++) {
      var at = (state.position + step) % total;
      if (!answered(items[at])) { go(at); return; }
    }
    say("Every item is answered: export your answers.");
  }

  // -- export --------------------------------------------------------------------------------
  function answersFile() {
    var out = {format: "wikisum-human-eval-answers", version: 1, page_id: data.page_id,
               annotator: state.annotator.trim(), exported: new Date().toISOString(),
               quality: table(), preference: table()};
    items.forEach(function (item) {
      if (item.type === "quality" && has(state.quality, item.id)) {
        var answer = table();
        questions.forEach(function (q) {
          if (has(state.quality[item.id], q.key)) { answer[q.key] = state.quality[item.id][q.key]; }
        });
        out.quality[item.id] = answer;
      } else if (item.type === "preference" && has(state.preference, item.id)) {
        out.preference[item.id] = state.preference[item.id];
      }
    });
    return out;
  }
  function exportAnswers() {
    if (needName()) { return; }
    var answers = answersFile();
    var blob = new Blob([JSON.stringify(answers, null, 1) + "\\n"], {type: "application/json"});
    var url = URL.createObjectURL(blob);
    var link = el("a");
    link.href = url;
    link.download = "answers-" + answers.annotator.replace(/[^A-Za-z0-9_-]+/g, "-") + "-"
      + data.page_id.slice(0, 8) + ".json";
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 10000);
    var left = total - doneCount();
    say(left ? "Exported; " + left + " item(s) are not answered yet." : "Exported all answers.");
  }

  // -- wiring --------------------------------------------------------------------------------
  restore();
  var name = byId("annotator");
  name.value = state.annotator;
  name.addEventListener("input", function () { state.annotator = name.value; save(); draw(); });
  name.addEventListener("keydown", function (ev) {
    if (ev.key === "Enter" || ev.key === "Escape") { name.blur(); }
  });
  byId("prev").addEventListener("click", function () { go(state.position - 1); });
  byId("next").addEventListener("click", function () { go(state.position + 1); });
  byId("unanswered").addEventListener("click", nextUnanswered);
  byId("export").addEventListener("click", exportAnswers);
  document.addEventListener("keydown", function (ev) {
    var target = ev.target;
    if (ev.ctrlKey || ev.metaKey || ev.altKey || (target && (target.tagName === "INPUT"
        || target.tagName === "TEXTAREA" || target.isContentEditable))) { return; }
    var key = ev.key, item = items[state.position];
    if (key === "ArrowRight" || key === "j") { go(state.position + 1); }
    else if (key === "ArrowLeft" || key === "k") { go(state.position - 1); }
    else if (item.type === "quality" && /^[1-5]$/.test(key)) { rate(state.focus, Number(key)); }
    else if (item.type === "preference" && has(PREFS, key)) { prefer(PREFS[key]); }
    else { return; }
    ev.preventDefault();
  });
  if (!kept) { say(NOT_KEPT); }
  draw();
  document.documentElement.dataset.ready = "true";
})();
"""

SCRIPT = _SCRIPT.replace("@FILL_TEXT@\n", htmlpage.FILL_TEXT_JS)
