"""`wikisum import` and `wikisum write-as`: each format, written exactly as its system writes it
(dataset_files.py cites the reading code), becomes a dataset that train, decode and report
read unchanged; and a dataset written out and imported again gives the same examples."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch
from dataset_files import (
    cases,
    graphsum_record,
    hiersumm_record,
    train_hiersumm_vocab,
    write_generic,
    write_graphsum,
    write_hiersumm,
    write_multinews_hub,
    write_primera,
    write_wikicatsum_hub,
)

from wikisum.core import shards
from wikisum.core.loader import Dataset
from wikisum.workflows import cli

SPLITS = {"train": 12, "valid": 3, "validation": 3, "dev": 3, "test": 3}


def the_cases(names=("train", "valid", "test")) -> dict:
    return {name: cases(name, SPLITS[name], seed=i) for i, name in enumerate(names)}


@pytest.fixture(scope="module")
def hiersumm_vocab(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("spm") / "spm9998_3.model"
    train_hiersumm_vocab(path)
    return path


def import_(fmt: str, sources: list, out: Path, *extra: str) -> dict:
    assert cli.main(["-q", "import", fmt, *map(str, sources), "--out", str(out),
                     "--vocab-size", "300", "--shards", "1", "--workers", "1", *extra]) == 0
    return json.loads((out / "dataset.json").read_text())


def rows(data: Path, split: str) -> list[dict]:
    return list(Dataset(str(data)).rows(split))


def train_and_decode(data: Path, tmp: Path) -> list[dict]:
    run = tmp / "run"
    assert cli.main(["-q", "train", "--model", "seq2seq", "--data", str(data), "--out", str(run),
                     "--preset", "tiny", "--steps", "5", "--max-input-tokens", "48",
                     "--device", "cpu", "warmup_steps=1", "eval_every=5",
                     "checkpoint_every=5", "dev_examples=2"]) == 0
    preds = tmp / "preds.jsonl"
    assert cli.main(["-q", "decode", "--run", str(run), "--split", "test", "--out", str(preds),
                     "--beam", "2", "--max-len", "8", "--device", "cpu"]) == 0
    return [json.loads(line) for line in preds.read_text().splitlines()]


def report(data: Path, tmp: Path) -> dict:
    assert cli.main(["-q", "report", "--data", str(data), "--out", str(tmp / "report"),
                     "--lengths", "50,100", "--bootstrap", "20"]) == 0
    return json.loads((tmp / "report" / "metrics.json").read_text())


@pytest.mark.parametrize("fmt", ["hiersumm", "graphsum"])
def test_token_id_formats_keep_ids_and_order_and_train(fmt, tmp_path, hiersumm_vocab):
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(hiersumm_vocab))
    record, write = ((hiersumm_record, write_hiersumm) if fmt == "hiersumm"
                     else (graphsum_record, write_graphsum))
    records = {split: [record(c, sp) for c in cs] for split, cs in the_cases().items()}
    write(tmp_path / "hs", records, shard_size=5)
    out = tmp_path / "data"
    info = import_(fmt, [tmp_path / "hs"], out, "--source-vocab", str(hiersumm_vocab))
    assert info["rows"] == {"train": 12, "dev": 3, "test": 3}
    assert info["extractors"] == ["given"] and info["corpora"] == ["combined"]
    assert set(info["extractors_unavailable"]) >= {"tfidf", "textrank", "cheating"}
    got = {r["source_id"]: r for r in rows(out, "train")}
    assert len(got) == 12
    first = got[sorted(got)[0]]
    source = records["train"][int(sorted(got)[0].rsplit(":", 1)[1])]
    assert [p["ids"] for p in first["paragraphs"]] == source["src"]  # ids kept
    assert [p["text"] for p in first["paragraphs"]] == [sp.decode(ids) for ids in source["src"]]
    assert first["rankings"][0]["order"] == list(range(len(source["src"])))  # order kept
    assert first["lead_ids"] == source["tgt"][1:-1]  # without <S> and </S>
    extended = spm.SentencePieceProcessor(model_file=str(out / "vocab.model"))
    assert [extended.id_to_piece(i) for i in range(sp.get_piece_size())] == \
        [sp.id_to_piece(i) for i in range(sp.get_piece_size())]  # every id means the same
    preds = train_and_decode(out, tmp_path)
    assert len(preds) == 3
    assert "given" in report(out, tmp_path)["extractors"]


def test_a_pickle_with_code_is_refused_and_runs_nothing(tmp_path, hiersumm_vocab):
    marker = tmp_path / "ran"

    class Payload:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    (tmp_path / "hs").mkdir()
    torch.save([{"src": [[1]], "tgt": [1, 2], "tgt_str": "x", "p": Payload()}],
               tmp_path / "hs" / "WIKI.train.0.pt")
    status = None
    with pytest.raises(SystemExit) as exc:
        status = cli.main(["-q", "import", "hiersumm", str(tmp_path / "hs"),
                           "--out", str(tmp_path / "data"), "--source-vocab",
                           str(hiersumm_vocab)])
    assert status is None
    assert "weights_only" in str(exc.value) or "refused" in str(exc.value).lower()
    assert not marker.exists()


@pytest.mark.parametrize("fmt", ["primera", "multinews", "wikicatsum", "jsonl"])
def test_raw_text_formats_rank_train_decode_and_report(fmt, tmp_path):
    src = tmp_path / "src"
    if fmt == "primera":
        write_primera(src, the_cases())
    elif fmt == "multinews":
        write_multinews_hub(src, the_cases(("train", "validation", "test")), "jsonl")
    elif fmt == "wikicatsum":
        write_wikicatsum_hub(src, the_cases(), "animal")
    else:
        write_generic(src, the_cases(("train", "dev", "test")))
    out = tmp_path / "data"
    info = import_(fmt, [src], out)
    assert info["rows"] == {"train": 12, "dev": 3, "test": 3}
    assert info["stages"]["import"]["balanced"]
    assert "tfidf" in info["extractors"] and info["default_inputs"] == "tfidf-combined-500"
    titled = fmt in ("wikicatsum", "jsonl")
    assert (info["imported"]["query"]["frequent-words"] == 0) == titled
    row = rows(out, "train")[0]
    assert {r["extractor"] for r in row["rankings"]} == set(info["extractors"])
    assert len(train_and_decode(out, tmp_path)) == 3
    metrics = report(out, tmp_path)
    assert metrics["corpora"] == ["combined"]


def test_a_bad_record_is_counted_and_the_rest_imported(tmp_path):
    src = tmp_path / "train.jsonl"
    good = {"id": "a", "title": "T", "documents": ["One two three four five."], "summary": "S."}
    src.write_text("\n".join([json.dumps(good), "{not json", json.dumps({**good, "id": "b"}),
                              json.dumps({**good, "id": "c", "summary": ""})]) + "\n")
    out = tmp_path / "data"
    info = import_("jsonl", [src], out, "--vocab-size", "40")
    stage = info["stages"]["import"]
    assert (stage["in"], stage["kept"]) == (4, 2)
    assert sum(stage["dropped"].values()) == 2 and stage["balanced"]
    problems = list(shards.iter_rows(shards.match(str(out / "import_problems" / "*.parquet"))))
    assert len(problems) == 2 and {p["stage"] for p in problems} == {"import"}


@pytest.mark.parametrize("fmt", ["jsonl", "multinews", "primera", "hiersumm"])
def test_write_as_then_import_gives_the_same_examples(fmt, built_sample, tmp_path):
    data = built_sample[0] / "data"
    out = tmp_path / fmt
    assert cli.main(["-q", "write-as", fmt, "--data", str(data), "--out", str(out)]) == 0
    extra = ["--source-vocab", str(out / "spm.model")] if fmt == "hiersumm" else []
    back = tmp_path / "back"
    import_(fmt, [out], back, *extra)
    original = {s: rows(data, s) for s in ("train", "dev", "test")}
    again = {s: rows(back, s) for s in ("train", "dev", "test")}
    for split in original:
        assert len(again[split]) == len(original[split])
        if fmt == "hiersumm":  # the top 40 tf-idf paragraphs' ids, in their order
            def top(r):
                order = [o for o in r["rankings"] if o["extractor"] == "tfidf"
                         and o["corpus"] == "combined"][0]["order"][:40]
                return tuple(tuple(r["paragraphs"][i]["ids"]) for i in order)

            assert sorted(tuple(tuple(p["ids"]) for p in r["paragraphs"])
                          for r in again[split]) == sorted(top(r) for r in original[split])
            continue
        # jsonl keeps a summary as written; the others' loaders read it one paragraph a line
        lead = (lambda t: t) if fmt == "jsonl" else (lambda t: "\n".join(
            line for line in t.split("\n") if line.strip()))
        want = sorted((lead(r["lead"]), tuple(p["text"] for p in r["paragraphs"]))
                      for r in original[split])
        got = sorted((lead(r["lead"]), tuple(p["text"] for p in r["paragraphs"]))
                     for r in again[split])
        assert got == want, (fmt, split)
        if fmt == "jsonl":
            assert sorted(r["title"] for r in again[split]) == \
                sorted(r["title"] for r in original[split])


def test_ranking_processes_give_the_rows_one_process_gives(tmp_path):
    src = tmp_path / "src"
    write_generic(src, the_cases(("train", "dev", "test")))
    one = import_("jsonl", [src], tmp_path / "one")
    two_dir = tmp_path / "two"
    assert cli.main(["-q", "import", "jsonl", str(src), "--out", str(two_dir), "--vocab-size",
                     "300", "--shards", "1", "--workers", "2"]) == 0
    two = json.loads((two_dir / "dataset.json").read_text())
    assert two["rows"] == one["rows"]
    for split in ("train", "dev", "test"):
        assert rows(two_dir, split) == rows(tmp_path / "one", split)


# -- sources refused before anything is read or written --------------------------------------

GOOD = {"id": "a", "title": "T", "documents": ["One two three four five.\nSix seven."],
        "summary": "S one."}


def jsonl_lines(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


@pytest.fixture(scope="module")
def written_as(tmp_path_factory) -> tuple[Path, Path]:
    """(a finished `wikisum write-as jsonl` output, the vocabulary of the dataset it wrote)."""
    root = tmp_path_factory.mktemp("written-as")
    write_generic(root / "src", the_cases(("train", "dev", "test")))
    import_("jsonl", [root / "src"], root / "data", "--vocab-size", "200")
    assert cli.main(["-q", "write-as", "jsonl", "--data", str(root / "data"), "--out",
                     str(root / "out")]) == 0
    return root / "out", root / "data" / "vocab.model"


def unfinished_copy(written: Path, folder: Path) -> Path:
    """A copy of a write-as output as a run killed between its renames leaves it: its files,
    less the record it writes last."""
    import shutil

    shutil.copytree(written, folder)
    (folder / ".wikisum-write-as.json").unlink()
    return folder


def _write_as_folder(tmp, written):
    return "jsonl", [unfinished_copy(written, tmp / "wa")], tmp / "wa"


def _write_as_file(tmp, written):
    return "jsonl", [unfinished_copy(written, tmp / "wa") / "dev.jsonl"], tmp / "wa"


def _write_as_glob(tmp, written):
    return "jsonl", [f"{unfinished_copy(written, tmp / 'wa')}/*.jsonl"], tmp / "wa"


def _write_as_inside_a_source_folder(tmp, written):
    unfinished_copy(written, tmp / "src" / "wa")
    jsonl_lines(tmp / "src" / "train.jsonl", [GOOD])
    return "jsonl", [tmp / "src"], tmp / "src" / "wa"


def _write_as_second_source(tmp, written):
    good = jsonl_lines(tmp / "good" / "train.jsonl", [GOOD])
    return "jsonl", [good, unfinished_copy(written, tmp / "wa")], tmp / "wa"


def _empty_folder(fmt):
    def make(tmp, written):
        (tmp / "empty").mkdir()
        return fmt, [tmp / "empty"], tmp / "empty"
    return make


def _folder_of_other_files(fmt, names):
    def make(tmp, written):
        (tmp / "other").mkdir()
        for name in names:
            (tmp / "other" / name).write_text("x\n")
        return fmt, [tmp / "other"], tmp / "other"
    return make


def _glob_of_other_files(tmp, written):
    (tmp / "other").mkdir()
    (tmp / "other" / "notes.txt").write_text("x\n")
    return "jsonl", [f"{tmp / 'other'}/*"], f"{tmp / 'other'}/*"


def _jsonl_without_split(name, records):
    def make(tmp, written):
        return "jsonl", [jsonl_lines(tmp / "src" / name, records)], tmp / "src" / name
    return make


def _multinews_without_split(tmp, written):
    path = jsonl_lines(tmp / "src" / "data.jsonl", [{"document": "a b c", "summary": "s"}])
    return "multinews", [path], path


def _empty_split_files(tmp, written):
    jsonl_lines(tmp / "src" / "train.jsonl", [])
    jsonl_lines(tmp / "src" / "test.jsonl", [])
    return "jsonl", [tmp / "src"], tmp / "src"


# (case, sources made in the folder -> (format, sources, the path the refusal names), words the
# refusal says). Each is refused in one line before anything is written, with a vocabulary given
# and without (trained from the source).
REFUSED = [
    ("write-as-without-record-folder", _write_as_folder, ("unfinished", "write-as")),
    ("write-as-without-record-file", _write_as_file, ("unfinished", "write-as")),
    ("write-as-without-record-glob", _write_as_glob, ("unfinished", "write-as")),
    ("write-as-without-record-in-a-folder", _write_as_inside_a_source_folder,
     ("unfinished", "write-as")),
    ("write-as-without-record-second-source", _write_as_second_source,
     ("unfinished", "write-as")),
    ("jsonl-empty-folder", _empty_folder("jsonl"), ("holds no jsonl files", "train.jsonl")),
    ("multinews-empty-folder", _empty_folder("multinews"), ("holds no multinews files",)),
    ("hiersumm-empty-folder", _empty_folder("hiersumm"),
     ("holds no hiersumm files", "WIKI.{train,valid,test}.N.pt")),
    ("primera-empty-folder", _empty_folder("primera"), ("holds no primera files", "train.pt")),
    ("graphsum-empty-folder", _empty_folder("graphsum"), ("holds no graphsum files",)),
    ("wikicatsum-empty-folder", _empty_folder("wikicatsum"), ("holds no wikicatsum files",)),
    ("jsonl-folder-of-text-files", _folder_of_other_files("jsonl", ["a.txt", "b.csv"]),
     ("holds no jsonl files",)),
    ("multinews-folder-of-tgt-files", _folder_of_other_files("multinews", ["train.tgt"]),
     ("holds no multinews files", ".src")),
    ("jsonl-folder-of-hidden-files", _folder_of_other_files("jsonl", [".train.jsonl"]),
     ("holds no jsonl files",)),
    ("hiersumm-folder-of-other-pt", _folder_of_other_files("hiersumm", ["model.pt"]),
     ("holds no hiersumm files",)),
    ("jsonl-glob-of-other-files", _glob_of_other_files, ("holds no jsonl files",)),
    ("jsonl-named-without-split", _jsonl_without_split("import.jsonl", [GOOD, GOOD]),
     ("split cannot be told", "train.jsonl", "'split' field")),
    ("jsonl-named-without-split-first-not-an-object",
     _jsonl_without_split("data.jsonl", ["not an object", GOOD]),
     ("split cannot be told", "train.jsonl")),
    ("multinews-named-without-split", _multinews_without_split,
     ("split cannot be told", "train.jsonl")),
    ("split-files-without-records", _empty_split_files, ("no", "example")),
]


def refusal(argv: list) -> str:
    with pytest.raises(SystemExit) as exc:
        cli.main([str(a) for a in argv])
    return str(exc.value.code)


@pytest.mark.parametrize("vocab", [False, True], ids=["trained-vocab", "given-vocab"])
@pytest.mark.parametrize("case,make,says", REFUSED, ids=[c[0] for c in REFUSED])
def test_an_import_source_that_cannot_be_read_as_asked_is_refused_in_one_line(
        case, make, says, vocab, written_as, tmp_path):
    written, vocab_model = written_as
    fmt, sources, named = make(tmp_path, written)
    out = tmp_path / "data"
    extra = ["--vocab", vocab_model] if vocab else []
    if fmt in ("hiersumm", "graphsum"):
        extra += ["--source-vocab", vocab_model]
    message = refusal(["-q", "import", fmt, *sources, "--out", out, "--workers", "1",
                       "--vocab-size", "40", *extra])
    assert message.startswith("wikisum import: ") and "\n" not in message, message
    assert str(named) in message and all(w in message for w in says), message
    assert not (out / "dataset.json").exists()


def test_a_jsonl_file_named_for_no_split_whose_records_say_it_is_imported(tmp_path):
    path = jsonl_lines(tmp_path / "src" / "import.jsonl",
                       [{**GOOD, "id": str(i), "split": split}
                        for i, split in enumerate(["train"] * 6 + ["dev", "test"])])
    info = import_("jsonl", [path], tmp_path / "data", "--vocab-size", "40")
    assert info["rows"] == {"train": 6, "dev": 1, "test": 1}


def test_a_finished_write_as_output_is_imported(written_as, tmp_path):
    written, _ = written_as
    info = import_("jsonl", [written], tmp_path / "data", "--vocab-size", "200")
    assert info["rows"] == {"train": 12, "dev": 3, "test": 3}


def test_a_source_whose_records_are_all_problems_says_so(tmp_path):
    path = jsonl_lines(tmp_path / "src" / "train.jsonl", [{"id": "x"}, {"id": "y"}])
    message = refusal(["-q", "import", "jsonl", path, "--out", tmp_path / "data",
                       "--workers", "1"])
    assert str(path) in message and "all 2 records are problems" in message, message
    assert "missing_field 2" in message and "\n" not in message


# -- what one example may be, set on the command line ----------------------------------------

def paragraphs(n: int, words: int = 3) -> list[str]:
    return ["\n".join(" ".join(f"w{i}x{j}" for j in range(words)) for i in range(n))]


# (case, the options, the records of train.jsonl beside GOOD ones, the reasons counted)
LIMITS = [
    ("record-over-max-record-bytes", ["--max-record-bytes", "2KB"],
     [{**GOOD, "id": "big", "documents": ["word " * 600]}], {"too_large": 1}),
    ("example-over-max-paragraphs", ["--max-paragraphs", "5"],
     [{**GOOD, "id": "many", "documents": paragraphs(6)}], {"too_many_paragraphs": 1}),
    ("at-max-paragraphs-kept", ["--max-paragraphs", "6"],
     [{**GOOD, "id": "many", "documents": paragraphs(6)}], {}),
    ("both-limits", ["--max-record-bytes", "2KB", "--max-paragraphs", "5"],
     [{**GOOD, "id": "big", "documents": ["word " * 600]},
      {**GOOD, "id": "many", "documents": paragraphs(6)}],
     {"too_large": 1, "too_many_paragraphs": 1}),
]


@pytest.mark.parametrize("case,options,records,dropped", LIMITS, ids=[c[0] for c in LIMITS])
def test_import_limits_from_the_command_line_are_counted_drops(case, options, records, dropped,
                                                               tmp_path):
    goods = [{**GOOD, "id": f"g{i}"} for i in range(4)]
    path = jsonl_lines(tmp_path / "src" / "train.jsonl", [*goods, *records])
    info = import_("jsonl", [path], tmp_path / "data", "--vocab-size", "40", *options)
    stage = info["stages"]["import"]
    assert stage["dropped"] == dropped and stage["balanced"]
    assert stage["kept"] == len(goods) + len(records) - sum(dropped.values())


@pytest.mark.parametrize("option,value,says", [
    ("--max-record-bytes", "lots", "not a size"), ("--max-record-bytes", "0", "at least"),
    ("--max-paragraphs", "0", "at least"), ("--max-paragraphs", "1.5", "not an integer")])
def test_a_bad_import_limit_is_a_usage_error(option, value, says, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["import", "jsonl", str(tmp_path), "--out", str(tmp_path / "o"), option, value])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {option}: " in err and says in err, err


def test_the_import_help_names_every_drop_reason_and_limit():
    from wikisum.formats import datasets

    text = cli.commands(cli.build_parser())["import"].format_help()
    for reason in (*datasets.REASONS, "unknown_split", "rank_error"):
        assert reason in text, reason
    assert "--max-record-bytes" in text and "--max-paragraphs" in text


# A child that runs a command and prints, in order, each file it opens to write or renames to
# under OUT (Python's audit events): the order in which a killed run leaves them.
WRITE_ORDER = """
import os, sys
OUT = os.path.abspath(sys.argv[1])
def hook(event, args):
    if event == "open" and args[1] is not None and any(c in args[1] for c in "wax+"):
        path = args[0]
    elif event == "os.rename":
        path = args[1]
    else:
        return
    if isinstance(path, (str, bytes)) and os.path.abspath(os.fsdecode(path)).startswith(OUT):
        print("WROTE", os.path.basename(os.fsdecode(path)), flush=True)
sys.addaudithook(hook)
from wikisum.workflows import cli
sys.exit(cli.main(sys.argv[2:]))
"""


def test_the_card_is_written_before_the_completion_record(tmp_path):
    import os
    import subprocess

    write_generic(tmp_path / "src", the_cases(("train", "dev", "test")))
    out = tmp_path / "data"
    (tmp_path / "tmp").mkdir()
    done = subprocess.run(
        [sys.executable, "-c", WRITE_ORDER, str(out), "-q", "import", "jsonl",
         str(tmp_path / "src"), "--out", str(out), "--vocab-size", "200", "--shards", "1",
         "--workers", "1"], capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    assert done.returncode == 0, done.stderr[-2000:]
    wrote = [line.split(" ", 1)[1] for line in done.stdout.splitlines()
             if line.startswith("WROTE ")]
    last = {name: i for i, name in enumerate(wrote)}
    assert last["README.md"] < last["dataset.json"], wrote
