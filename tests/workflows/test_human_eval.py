"""``wikisum human-eval``: the command's checks, and its page in headless Chromium: annotated
completely by a script (closed halfway and reopened), exported, and scored; a payload in an
output or a title stays text."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest
from clirun import run_cli
from humaneval_files import (
    answer_current,
    current_item,
    open_page,
    planted_answers,
    records,
    write_jsonl,
    write_preds,
)

from wikisum.workflows import cli

DIMENSIONS = ("grammaticality", "non_redundancy", "referential_clarity", "focus",
              "structure_coherence")




def make_argv(preds: dict[str, str], out: Path, *extra: str) -> list[str]:
    argv = ["human-eval", "make"]
    for name, path in preds.items():
        argv += ["--preds", f"{name}={path}"]
    return argv + ["--out", str(out), *extra]


# -- the command ---------------------------------------------------------------------------


def test_make_writes_the_page_and_the_key_and_says_where(tmp_path, capsys):
    preds = write_preds(tmp_path / "preds", ("alpha", "beta", "gamma"), n=6)
    status, out, err = run_cli(make_argv(preds, tmp_path / "eval", "--sample", "4", "--pairs",
                                         "alpha:beta,alpha:gamma", "--seed", "2"), capsys)
    assert status == 0, err
    assert "4 examples of 3 systems: 12 quality and 8 preference items" in out
    assert str(tmp_path / "eval" / "index.html") in out and "key.json" in out
    key = json.loads((tmp_path / "eval" / "key.json").read_text())
    assert (key["seed"], key["sample"], key["kind"]) == (2, 4, "both")
    assert list(key["systems"]) == ["alpha", "beta", "gamma"]
    # ownership: the directory is the command's, so a user's file beside it would be kept and
    # a directory holding someone else's files is refused before any work
    assert json.loads((tmp_path / "eval" / ".wikisum").read_text())["command"] == "human-eval"
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("mine")
    status, _, err = run_cli(make_argv(preds, theirs), capsys)
    assert status == 1 and "holds files wikisum did not write (notes.txt)" in err
    assert sorted(p.name for p in theirs.iterdir()) == ["notes.txt"]
    # the key of a page given out is never replaced
    status, _, err = run_cli(make_argv(preds, tmp_path / "eval"), capsys)
    assert status == 1 and "already holds a page and its key.json" in err


def _surrogate_in(field: str):
    def change(rows: list[dict]) -> list[dict]:
        rows[1][field] = f"{rows[1][field]}\udcff"
        return rows
    return change


NOT_TEXT = [  # (name, system b's name, what is done to its records, the one-line error)
    ("a system name that is not UTF-8 (a path byte)", "b\udcfe", None,
     r"--preds b\\udcfe=.*: the system name is not valid UTF-8"),
    ("a lone surrogate in an id", "b", _surrogate_in("id"),
     r"B.jsonl:2: id holds a lone surrogate"),
    ("a lone surrogate in a prediction", "b", _surrogate_in("prediction"),
     r"B.jsonl:2: prediction holds a lone surrogate"),
    ("a lone surrogate in a reference", "b", _surrogate_in("reference"),
     r"B.jsonl:2: reference holds a lone surrogate"),
]


def argv_with_systems(argv_tail: list[str], tmp_path) -> list[str]:
    """``human-eval make ARGV_TAIL --out OUT`` with systems A and B written in ``tmp_path``
    (``=A`` and ``=B`` in the tail name their files)."""
    for name in ("A", "B"):
        write_jsonl(tmp_path / name, records(0, 2))
    return ["human-eval", "make", *[w.replace("=A", f"={tmp_path / 'A'}")
                                    .replace("=B", f"={tmp_path / 'B'}") for w in argv_tail],
            "--out", str(tmp_path / "out")]


@pytest.mark.parametrize(("name", "change", "message"), [c[1:] for c in NOT_TEXT],
                         ids=[c[0] for c in NOT_TEXT])
def test_text_that_is_not_utf8_is_refused_before_anything_is_written(tmp_path, capsys, name,
                                                                     change, message):
    import re

    rows = records(1, 3)
    paths = {"a": write_jsonl(tmp_path / "A.jsonl", records(0, 3)),
             name: tmp_path / "B.jsonl"}
    (tmp_path / "B.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in (change(rows) if change else rows)),
        encoding="utf-8")
    status, out, err = run_cli(make_argv(paths, tmp_path / "out", "--kind", "quality"), capsys)
    assert status == 1 and re.search(message, err), err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in out + err
    assert not (tmp_path / "out" / "index.html").exists()
    assert not (tmp_path / "out" / "key.json").exists()


def test_the_key_is_written_before_the_page_and_a_stopped_make_is_made_again(
        tmp_path, capsys, monkeypatch):
    import errno
    import os

    from wikisum.generation import humaneval

    preds = write_preds(tmp_path / "preds", ("alpha", "beta"), n=4)

    def full_disk(data):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(humaneval, "page_html", full_disk)
    status, _, err = run_cli(make_argv(preds, tmp_path / "eval"), capsys)
    assert status == 1 and "no space left on device" in err, err
    assert (tmp_path / "eval" / "key.json").is_file()  # the key is whole before the page
    assert not (tmp_path / "eval" / "index.html").exists()
    monkeypatch.undo()
    status, _, err = run_cli(make_argv(preds, tmp_path / "eval"), capsys)
    assert status == 0, err
    key = json.loads((tmp_path / "eval" / "key.json").read_text())
    assert key["page_id"] in (tmp_path / "eval" / "index.html").read_text()


@pytest.mark.parametrize("argv_tail,status,message", [
    (["--preds", "alpha.jsonl"], 2, "argument --preds: 'alpha.jsonl' is not NAME=PREDS.jsonl"),
    (["--preds", "=x.jsonl"], 2, "is not NAME=PREDS.jsonl"),
    (["--preds", "a=A", "--preds", "a=B"], 1, "the name 'a' is given twice"),
    (["--preds", "a=A"], 1, "--kind both compares systems side by side and needs at least two"),
    (["--preds", "a=A", "--preds", "b=B", "--sample", "0"], 2,
     "--sample: must be at least 1, got 0"),
    (["--preds", "a=A", "--preds", "b=B", "--show", "inputs"], 2, "argument --show"),
    (["--preds", "a=A", "--preds", "b=B", "--pairs", "a-b"], 2, "'a-b' is not A:B"),
    (["--preds", "a=A", "--preds", "b=B", "--pairs", "a:c"], 1,
     "--pairs a:c: no system is called 'c'"),
    (["--preds", "a=A", "--preds", "b=B", "--kind", "quality", "--show", "input"], 1,
     "pass --data DIR"),
])
def test_bad_arguments_are_one_line_errors(argv_tail, status, message, tmp_path, capsys):
    got, out, err = run_cli(argv_with_systems(argv_tail, tmp_path), capsys)
    assert got == status and message in err, err
    assert "Traceback" not in out + err
    if status == 1:
        assert len(err.strip().splitlines()) == 1 and err.startswith("wikisum human-eval make: ")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("groups", [
    pytest.param([["alpha", "beta", "gamma"]], id="several_after_one_preds"),
    pytest.param([["alpha"], ["beta"], ["gamma"]], id="one_preds_each"),
    pytest.param([["alpha", "beta"], ["gamma"]], id="both_forms"),
])
def test_preds_takes_several_systems_after_one_option_or_one_each(groups, tmp_path, capsys):
    preds = write_preds(tmp_path / "preds", ("alpha", "beta", "gamma"), n=4)
    argv = ["human-eval", "make", "--out", str(tmp_path / "eval"), "--sample", "2"]
    for group in groups:
        argv += ["--preds", *[f"{name}={preds[name]}" for name in group]]
    status, out, err = run_cli(argv, capsys)
    assert status == 0, err
    assert "2 examples of 3 systems" in out
    key = json.loads((tmp_path / "eval" / "key.json").read_text())
    assert key["systems"] == preds  # in the order given


@pytest.mark.parametrize("argv_tail,status,message", [
    (["--preds", "a=A", "alpha.jsonl"], 2,
     "argument --preds: 'alpha.jsonl' is not NAME=PREDS.jsonl"),
    (["--preds", "a=A", "=x.jsonl", "--preds", "b=B"], 2, "is not NAME=PREDS.jsonl"),
    (["--preds", "a=A", "a=B"], 1, "the name 'a' is given twice"),
    (["--preds", "a=A", "--preds", "b=B", "a=B"], 1, "the name 'a' is given twice"),
    (["--preds", "--kind", "quality"], 2, "argument --preds: expected at least one argument"),
])
def test_a_malformed_spec_among_several_is_the_same_error(argv_tail, status, message, tmp_path,
                                                          capsys):
    got, out, err = run_cli(argv_with_systems(argv_tail, tmp_path), capsys)
    assert got == status and message in err, err
    assert "Traceback" not in out + err
    assert not (tmp_path / "out").exists()


def test_a_missing_input_names_the_option_and_the_path(tmp_path, capsys):
    preds = write_preds(tmp_path / "p", ("a",), n=2)
    missing = str(tmp_path / "no-such-input")
    cases = [
        make_argv({**preds, "b": missing}, tmp_path / "out"),
        make_argv({**preds, "b": preds["a"]}, tmp_path / "out", "--show", "input", "--data",
                  missing),
        ["human-eval", "score", "--answers", missing, "--key", preds["a"], "--out",
         str(tmp_path / "out")],
        ["human-eval", "score", "--answers", preds["a"], "--key", missing, "--out",
         str(tmp_path / "out")],
    ]
    options = ["--preds", "--data", "--answers", "--key"]
    for argv, option in zip(cases, options, strict=True):
        status, out, err = run_cli(argv, capsys)
        line = err.strip()
        assert status == 1 and len(line.splitlines()) == 1, err
        assert line.startswith(f"wikisum human-eval {argv[1]}: {option} {missing}"), line
        assert not (tmp_path / "out").exists()


def test_the_subcommands_have_their_own_help_and_errors(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["human-eval", "--help"])
    text = capsys.readouterr().out
    assert exit_.value.code == 0 and "make" in text and "score" in text
    with pytest.raises(SystemExit) as exit_:
        cli.main(["human-eval", "make", "--help"])
    text = capsys.readouterr().out
    assert all(o in text for o in ("--preds", "--kind", "--sample", "--seed", "--show",
                                   "--data", "--pairs", "--out"))
    with pytest.raises(SystemExit) as exit_:
        cli.main(["human-eval", "make", "--preds", "a=b", "--out", "o", "--sampel", "3"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "unrecognized option --sampel (did you mean --sample?)" in err
    assert "wikisum human-eval make" in err
    with pytest.raises(SystemExit) as exit_:
        cli.main(["human-eval"])
    assert exit_.value.code == 2 and "SUBCOMMAND" in capsys.readouterr().err


# -- the page in a browser -----------------------------------------------------------------

PAYLOADS = ('<script>window.__pwned=1</script>', '<img src=x onerror="window.__pwned=1">')


def test_a_payload_in_an_output_or_a_title_stays_text(browser, tmp_path, capsys):
    payload = " ".join(PAYLOADS)
    folder = tmp_path / "preds"
    preds = {}
    for k, name in enumerate(("alpha", "beta")):
        rows = [{**r, "input": ["An input paragraph."]} for r in records(k, 2)]
        rows[0].update(title=f"Title {payload}", prediction=f"Output {k} {payload}",
                       reference=f"Reference {payload}", input=[f"Input {payload}"])
        preds[name] = str(write_jsonl(folder / f"{name}.jsonl", rows))
    status, _, err = run_cli(make_argv(preds, tmp_path / "eval", "--show", "reference,input"),
                             capsys)
    assert status == 0, err
    path = tmp_path / "eval" / "index.html"
    html = path.read_text()
    assert "<img" not in html and "window.__pwned" in html  # in the JSON block, escaped
    assert html.count("<script") == 2  # the data block and the page's own script

    page = browser.new_page()
    requests, console, errors = [], [], []
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: console.append((m.type, m.text)))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(path.as_uri())
    page.wait_for_selector("html[data-ready=true]")
    seen = 0
    for _ in range(6):  # every item: 4 quality (2 systems x 2), 2 preference
        if page.locator("h1.title").text_content() == f"Title {payload}":
            seen += 1
            texts = page.locator(".output .text p").all_text_contents()
            assert any(t.startswith("Output ") and t.endswith(payload) for t in texts), texts
            reference = page.locator("details.context").first.text_content()
            assert f"Reference {payload}" in reference
        page.keyboard.press("j")
    assert seen == 3  # its two quality items and its preference item
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.evaluate("document.querySelectorAll('img').length") == 0
    assert page.evaluate("document.scripts.length") == 2
    assert requests == [path.as_uri()]
    assert errors == []
    # the one notice a page's policy gets is Chromium's about frame-ancestors in a <meta>
    # policy; nothing was refused (no injected script ran into the policy, nor did ours)
    assert [text for kind, text in console
            if "frame-ancestors" not in text] == [], console
    page.close()


@pytest.fixture(scope="module")
def evaluation(tmp_path_factory):
    """A page of two systems (3 examples: 6 quality and 3 preference items) and its key."""
    here = tmp_path_factory.mktemp("human-eval")
    preds = write_preds(here / "preds", ("alpha", "beta"), n=6)
    argv = make_argv(preds, here / "eval", "--sample", "3")
    assert cli.main(argv) == 0
    key = json.loads((here / "eval" / "key.json").read_text())
    return here, here / "eval" / "index.html", key


# Each annotator's planted ratings per system (question order) and preferences: alpha better.
PLANTED = {
    "Ann One": {"alpha": dict(zip(DIMENSIONS, (4, 5, 4, 4, 5), strict=True)),
                "beta": dict(zip(DIMENSIONS, (2, 1, 3, 2, 2), strict=True)), "ties": 1},
    "Bo Two": {"alpha": dict(zip(DIMENSIONS, (5, 5, 4, 3, 4), strict=True)),
               "beta": dict(zip(DIMENSIONS, (3, 2, 3, 2, 1), strict=True)), "ties": 0},
}


def planted(key: dict, annotator: str) -> dict:
    p = PLANTED[annotator]
    return planted_answers(key, {"alpha": p["alpha"], "beta": p["beta"]}, "alpha", p["ties"])


def export(page, target: Path) -> dict:
    with page.expect_download() as info:
        page.click("#export")
    download = info.value
    download.save_as(str(target))
    assert download.suggested_filename.endswith(".json")
    return json.loads(target.read_text())


def check_answers_file(answers: dict, key: dict, annotator: str, want: dict) -> None:
    """``answers`` is an answers file of docs/human-evaluation.md holding ``want``."""
    assert set(answers) == {"format", "version", "page_id", "annotator", "exported", "quality",
                            "preference"}
    assert (answers["format"], answers["version"]) == ("wikisum-human-eval-answers", 1)
    assert answers["page_id"] == key["page_id"] and answers["annotator"] == annotator
    assert datetime.fromisoformat(answers["exported"].replace("Z", "+00:00")).tzinfo
    assert answers["quality"] == {q["item"]: want[q["item"]] for q in key["quality_items"]}
    assert answers["preference"] == {p["item"]: want[p["item"]]
                                     for p in key["preference_items"]}
    assert all(list(r) == list(DIMENSIONS) for r in answers["quality"].values())


@pytest.fixture(scope="module")
def exports(browser, evaluation):
    """Two annotators' exports of the page. The first annotates half by keyboard, closes the
    tab, reopens the page (a new tab of the same browser profile) and finishes by mouse and
    keyboard; the second annotates it all by keyboard in a fresh profile. Returns (their files,
    what was seen)."""
    here, path, key = evaluation
    total = len(key["quality_items"]) + len(key["preference_items"])
    seen: dict = {"requests": []}

    context = browser.new_context(accept_downloads=True)
    context.on("request", lambda r: seen["requests"].append(r.url))
    page = open_page(context, path)
    want = planted(key, "Ann One")
    # no answer before a name is given
    page.keyboard.press("4" if current_item(page).startswith("q-") else "a")
    seen["unnamed"] = (page.locator("#progress").text_content(),
                       page.locator("#notice").text_content(),
                       page.locator(".scale button, .choices button").first.is_disabled())
    page.fill("#annotator", "Ann One")
    page.keyboard.press("Enter")
    half = total // 2
    for _ in range(half):
        answer_current(page, want, keyboard=True)
        page.keyboard.press("ArrowRight")
    seen["before_close"] = page.locator("#progress").text_content()
    page.close()

    page = open_page(context, path)  # a closed tab resumes
    seen["reopened"] = (page.locator("#progress").text_content(),
                        page.input_value("#annotator"),
                        page.locator(".position").text_content(), page.locator("#complete")
                        .text_content())
    for k in range(half, total):
        answer_current(page, want, keyboard=k % 2 == 1)
        if k < total - 1:
            page.click("#next")
    seen["done"] = (page.locator("#progress").text_content(),
                    page.locator("#complete").text_content())
    first = export(page, here / "ann-one.json")
    context.close()

    context = browser.new_context(accept_downloads=True)
    page = open_page(context, path)
    seen["fresh"] = page.locator("#progress").text_content()
    page.fill("#annotator", "Bo Two")
    page.keyboard.press("Enter")
    want = planted(key, "Bo Two")
    for _ in range(total):
        answer_current(page, want, keyboard=True)
        page.keyboard.press("j")
    second = export(page, here / "bo-two.json")
    context.close()
    return {"Ann One": (here / "ann-one.json", first),
            "Bo Two": (here / "bo-two.json", second)}, seen


def test_a_page_annotated_halfway_resumes_and_exports_every_answer(evaluation, exports):
    _, path, key = evaluation
    files, seen = exports
    assert seen["unnamed"] == ("0 of 9 answered", "Type your name at the top first.", True)
    assert seen["before_close"] == "4 of 9 answered"
    assert seen["reopened"] == ("4 of 9 answered", "Ann One", "Item 5 of 9", "Not complete")
    assert seen["done"] == ("9 of 9 answered", "Complete")
    assert seen["fresh"] == "0 of 9 answered"  # another browser profile: its own answers
    for annotator, (_, answers) in files.items():
        check_answers_file(answers, key, annotator, planted(key, annotator))
    # nothing but the page itself and the exports' own blob: URLs was requested
    assert {u for u in seen["requests"] if not u.startswith("blob:")} == {path.as_uri()}


def test_two_exports_score_to_the_planted_means_and_counts(evaluation, exports, tmp_path,
                                                           capsys):
    pytest.importorskip("wikisum.generation.humanscore")
    from scipy import stats

    _, _, key = evaluation
    files, _ = exports
    out = tmp_path / "scores"
    status, stdout, err = run_cli(["human-eval", "score", "--answers",
                                   *[str(f) for f, _ in files.values()], "--key",
                                   str(evaluation[0] / "eval" / "key.json"), "--out", str(out)],
                                  capsys)
    assert status == 0, err
    assert "2 annotator(s): Ann One, Bo Two" in stdout
    result = json.loads((out / "scores.json").read_text())
    assert {p.name for p in out.iterdir()} >= {"report.html", "report.md", "scores.json"}
    # 3 examples x 2 annotators per system and question: the mean of the two planted values
    means = {"alpha": (4.5, 5.0, 4.0, 3.5, 4.5), "beta": (2.5, 1.5, 3.0, 2.0, 1.5)}
    for system, values in means.items():
        for d, mean in zip(DIMENSIONS, values, strict=True):
            cell = result["quality"]["systems"][system][d]
            assert (cell["n"], cell["items"]) == (6, 3)
            assert cell["mean"] == pytest.approx(mean)
    # grammaticality: alpha 4 x3, 5 x3 (mean 4.5), beta 2 x3, 3 x3 (2.5); both variances
    # 6 * 0.25 / 5 = 0.3, so t = 2 / sqrt(0.3 / 6 + 0.3 / 6) = 2 sqrt(10) = 6.325 on
    # (0.1)^2 / (2 * 0.05^2 / 5) = 10 degrees of freedom
    welch = result["quality"]["welch"]["beta"]["grammaticality"]
    assert abs(welch["t"]) == pytest.approx(2 * 10 ** 0.5) and welch["df"] == pytest.approx(10)
    reference = stats.ttest_ind([4] * 3 + [5] * 3, [2] * 3 + [3] * 3, equal_var=False)
    assert welch["p"] == pytest.approx(reference.pvalue)
    # preferences: alpha in 2 + 3 of 6 judgments, one tie; sign test p = 2 / 2^5
    (pair,) = result["preference"]["pairs"]
    assert (pair["x"], pair["prefer_x"], pair["prefer_y"], pair["no_preference"]) == \
        ("alpha", 5, 0, 1)
    assert pair["p"] == pytest.approx(2 / 2 ** 5)
    assert pair["p"] == pytest.approx(stats.binomtest(5, 5, 0.5).pvalue)
