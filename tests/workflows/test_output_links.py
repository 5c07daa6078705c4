"""Filesystem tricks on outputs: a link planted in an earlier output is never written or deleted
through, an output never goes into, onto or around an input, and odd path names (spaces, line
breaks, leading dashes) work while names that are not UTF-8 are refused before any work."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from clirun import run_cli
from humaneval_files import write_preds

# -- commands run once, then again over their own output ------------------------------------


def sample_argv(here: Path, out: Path) -> list[str]:
    return ["sample", "--out", str(out), "--articles", "4"]


def humaneval_argv(here: Path, out: Path) -> list[str]:
    preds = write_preds(here / "preds", ("alpha", "beta"), n=4)
    return ["human-eval", "make", "--preds", f"alpha={preds['alpha']}",
            "--preds", f"beta={preds['beta']}", "--out", str(out)]


def evaluate_argv(here: Path, out: Path) -> list[str]:
    preds = write_preds(here / "preds", ("alpha",), n=4)
    return ["evaluate", "--preds", preds["alpha"], "--out", str(out)]


# (case, argv builder, the output's name, what is replaced by a link: a file or a folder
# inside the output, or the output itself when it is a file)
LINKS = [
    ("a file of sample's output", sample_argv, "out", "manifest.json"),
    ("a folder of sample's output", sample_argv, "out", "warc"),
    ("sample's marker", sample_argv, "out", ".wikisum"),
    ("a file of human-eval make's output", humaneval_argv, "out", "key.json"),
    ("evaluate --out, a file output", evaluate_argv, "metrics.json", ""),
]


def digest(path: Path) -> str:
    """What the user's file or folder holds (names and bytes)."""
    h = hashlib.sha256()
    items = sorted(path.rglob("*")) if path.is_dir() else [path]
    for item in items:
        h.update(str(item.relative_to(path.parent)).encode())
        if item.is_file():
            h.update(item.read_bytes())
    return h.hexdigest()


def users_things(tmp_path: Path) -> tuple[Path, Path]:
    """A file and a folder of the user's."""
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "thesis.tex").write_text("\\section{Mine}\n")
    (folder / "notes.json").write_text('{"mine": true}\n')
    return folder / "notes.json", folder


@pytest.mark.parametrize("case, argv_of, name, replaced", LINKS, ids=[c[0] for c in LINKS])
def test_a_link_planted_in_an_earlier_output_is_refused_and_never_followed(
        case, argv_of, name, replaced, tmp_path, capsys):
    out = tmp_path / name
    argv = argv_of(tmp_path, out)
    status, _, err = run_cli(argv, capsys)
    assert status == 0, err
    my_file, my_folder = users_things(tmp_path)
    before = digest(my_folder)
    victim = out / replaced if replaced else out
    target = my_folder if victim.is_dir() and replaced else my_file
    if victim.is_dir():
        import shutil

        shutil.rmtree(victim)
    else:
        victim.unlink()
    victim.symlink_to(target)

    status, _, err = run_cli(argv, capsys)

    assert status == 1
    line = err.strip().splitlines()[-1]
    assert f"{victim} is a symbolic link (to {target})" in line, line
    assert "wikisum writes nothing through a link" in line
    assert digest(my_folder) == before


def test_an_out_that_links_to_a_users_folder_is_refused(tmp_path, capsys):
    my_file, my_folder = users_things(tmp_path)
    before = digest(my_folder)
    out = tmp_path / "out"
    out.symlink_to(my_folder)
    status, _, err = run_cli(sample_argv(tmp_path, out), capsys)
    assert status == 1
    assert "holds files wikisum did not write" in err
    assert digest(my_folder) == before


# -- outputs apart from inputs ---------------------------------------------------------------


def preds_file(here: Path) -> str:
    return write_preds(here / "in", ("alpha",), n=4)["alpha"]


# (case, argv builder(tmp_path) -> argv, the message's end)
APART = [
    ("evaluate --out the --preds file",
     lambda t: ["evaluate", "--preds", (p := preds_file(t)), "--out", p],
     "is also the input --preds"),
    ("human-eval make --out the folder holding --preds",
     lambda t: ["human-eval", "make", "--preds", f"a={preds_file(t)}", "--preds",
                f"b={preds_file(t)}", "--out", str(t / "in")],
     "holds the input --preds"),
    ("report --out inside --data",
     lambda t: ["report", "--data", str(t / "in"), "--out", str(t / "in" / "report")],
     "lies inside the input --data"),
    ("train --out inside --data",
     lambda t: ["train", "--model", "t-ed", "--data", str(t / "in"), "--out",
                str(t / "in" / "run")],
     "lies inside the input --data"),
    ("export --out inside --run",
     lambda t: ["export", "--run", str(t / "in"), "--out", str(t / "in" / "export")],
     "lies inside the input --run"),
    ("ingest --out the dump",
     lambda t: ["ingest", "--wiki", preds_file(t), "--out", preds_file(t)],
     "is also the input --wiki"),
    ("ingest --out a path its --warc glob matches",
     lambda t: ["ingest", "--wiki", preds_file(t), "--warc", str(t / "in" / "*"),
                "--out", str(t / "in" / "new")],
     "matches the input --warc"),
    ("write-as --out inside --data, through a link",
     lambda t: (t / "link").symlink_to(t / "in", target_is_directory=True) or [
         "write-as", "jsonl", "--data", str(t / "in"), "--out", str(t / "link" / "out")],
     "lies inside the input --data"),
    ("vocab --out the --data folder",
     lambda t: ["vocab", "--data", str(t), "--out", str(t)],
     "is also the input --data"),
]


@pytest.mark.parametrize("case, argv_of, message", APART, ids=[c[0] for c in APART])
def test_an_output_never_goes_into_onto_or_around_an_input(case, argv_of, message, tmp_path,
                                                           capsys):
    (tmp_path / "in").mkdir(exist_ok=True)
    argv = argv_of(tmp_path)
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    status, _, err = run_cli(argv, capsys)
    assert status == 1
    assert message in err.strip().splitlines()[-1], err
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_file_output_inside_an_input_folder_is_allowed(tmp_path, capsys):
    preds = preds_file(tmp_path)
    out = Path(preds).parent / "metrics.json"  # beside its predictions, as decode's are
    status, _, err = run_cli(["evaluate", "--preds", preds, "--out", str(out)], capsys)
    assert status == 0, err
    assert out.is_file()


# -- odd names -------------------------------------------------------------------------------

ODD_NAMES = ["with space", "line\nbreak", "-leading-dash", "tab\tand 'quote'", "ünïcødé ✓"]


@pytest.mark.parametrize("name", ODD_NAMES, ids=repr)
def test_odd_path_names_are_ordinary_names(name, tmp_path, capsys):
    here = tmp_path / name
    here.mkdir()
    preds = write_preds(here / name, ("alpha", "beta"), n=4)
    out = here / f"{name}-eval"
    status, _, err = run_cli(["human-eval", "make", "--preds", f"alpha={preds['alpha']}",
                              "--preds", f"beta={preds['beta']}", f"--out={out}"], capsys)
    assert status == 0, err
    assert (out / "index.html").is_file() and (out / "key.json").is_file()
    status, _, err = run_cli(["evaluate", "--preds", preds["alpha"],
                              f"--out={here / (name + '.json')}"], capsys)
    assert status == 0, err


def test_a_name_that_is_not_utf8_is_refused_before_any_work(tmp_path, capsys):
    out = os.fsdecode(os.fsencode(str(tmp_path)) + b"/out\xff")
    status, _, err = run_cli(["sample", "--out", out], capsys)
    assert status == 1
    assert err.strip().splitlines()[-1] == (
        f"wikisum sample: --out {tmp_path}/out\\xff: the path is not valid UTF-8 (byte 0xff); "
        "wikisum's files (Parquet, JSON records) name paths in UTF-8: rename it")
    assert os.listdir(tmp_path) == []


def test_a_file_recorded_as_being_written_then_replaced_by_a_link_is_refused(tmp_path):
    from wikisum.core import ownership

    mine = tmp_path / "mine.txt"
    mine.write_text("mine")
    preds = tmp_path / "preds.jsonl"
    ownership.begin_file(str(preds), "decode")  # as a killed decode leaves it
    preds.symlink_to(mine)
    with pytest.raises(ownership.NotOurs, match="is a symbolic link"):
        ownership.check_file(str(preds), "decode")
    assert mine.read_text() == "mine"
