"""`wikisum decode` writes predictions as it goes and resumes a killed decode: the lines already
written are kept (a last line cut short is dropped), a file of other settings is refused; and
--max-len defaults from the run's training data."""

from __future__ import annotations

import json

import pytest

from wikisum.core import ownership
from wikisum.generation.decode import settings_path
from wikisum.training import datastats
from wikisum.workflows import cli


def decode(run, out, *extra) -> int:
    return cli.main(["decode", "--run", str(run), "--split", "test", "--out", str(out),
                     "--beam", "2", "--batch-size", "1", "--device", "cpu", *extra])


def left_by_a_killed_decode(out) -> None:
    """What a decode stopped while writing leaves besides its lines: the files recorded as
    being written by it (pipeline.ownership), so that the next decode may resume them."""
    for path in (out, settings_path(out)):
        ownership.begin_file(str(path), "decode")


def records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.fixture(scope="module")
def full(tiny_run, tmp_path_factory):
    out = tmp_path_factory.mktemp("preds") / "full.jsonl"
    assert decode(tiny_run, out) == 0
    return out


def test_a_decode_records_how_it_was_made(full, tiny_run):
    assert [r["id"] for r in records(full)] == [200, 201, 202, 203]
    meta = json.loads(settings_path(full).read_text())
    assert settings_path(full).name == "full.decode.json"
    assert meta["complete"] and meta["examples"] == 4 and meta["step"] == 3
    # --max-len left out: twice the 99th percentile of the training targets (</s> included)
    p99 = json.loads((tiny_run / datastats.STATS_FILE).read_text())["target_tokens"]["p99"]
    assert meta["decoding"]["max_len"] == 2 * p99
    assert meta["decoding"]["method"] == "beam" and meta["decoding"]["beam"] == 2


def test_a_killed_decode_resumes_where_it_stopped(full, tiny_run, tmp_path, capsys):
    whole = full.read_text()
    lines = whole.splitlines(keepends=True)
    partial = tmp_path / "preds.jsonl"
    # Killed while writing the third prediction: two whole lines and half of one.
    partial.write_text(lines[0] + lines[1] + lines[2][:len(lines[2]) // 2])
    meta = json.loads(settings_path(full).read_text())
    settings_path(partial).write_text(json.dumps({**meta, "complete": False}))
    left_by_a_killed_decode(partial)
    assert decode(tiny_run, partial) == 0
    assert "2 kept from before" in capsys.readouterr().out
    assert partial.read_text() == whole
    assert json.loads(settings_path(partial).read_text())["complete"]
    # Run again once complete: nothing is decoded twice.
    assert decode(tiny_run, partial) == 0
    assert partial.read_text() == whole


def test_a_file_of_other_settings_is_refused(full, tiny_run, tmp_path):
    out = tmp_path / "p.jsonl"
    out.write_text(full.read_text().splitlines(keepends=True)[0])
    settings_path(out).write_text(settings_path(full).read_text())
    left_by_a_killed_decode(out)
    with pytest.raises(SystemExit, match=r"decoded otherwise \(decoding: .*'beam': 2"):
        decode(tiny_run, out, "--no-repeat-ngram-size", "2")
    assert decode(tiny_run, out, "--overwrite", "--limit", "1") == 0
    assert [r["id"] for r in records(out)] == [200]
    # A file wikisum did not write is never replaced, --overwrite or not.
    stranger = tmp_path / "mine.jsonl"
    stranger.write_text('{"id": 1}\n')
    for extra in ((), ("--overwrite",)):
        with pytest.raises(SystemExit, match="mine.jsonl is a file wikisum did not write"):
            decode(tiny_run, stranger, *extra)
    assert stranger.read_text() == '{"id": 1}\n'



def test_a_bad_line_before_the_end_is_named(full, tiny_run, tmp_path):
    out = tmp_path / "p.jsonl"
    lines = full.read_text().splitlines(keepends=True)
    out.write_text(lines[0] + "garbage\n" + lines[2])
    settings_path(out).write_text(settings_path(full).read_text())
    left_by_a_killed_decode(out)
    with pytest.raises(SystemExit, match=r"p.jsonl:2: not a prediction"):
        decode(tiny_run, out)


def test_predictions_of_other_data_are_refused(full, tiny_run, tmp_path):
    out = tmp_path / "p.jsonl"
    first = json.loads(full.read_text().splitlines()[0])
    out.write_text(json.dumps({**first, "id": 999}) + "\n")
    settings_path(out).write_text(settings_path(full).read_text())
    left_by_a_killed_decode(out)
    with pytest.raises(SystemExit, match="is of id 999, the data has id 200"):
        decode(tiny_run, out)


def test_sampling_decode_is_deterministic_with_a_seed(tiny_run, tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    for out, batch in ((a, "1"), (b, "4")):
        assert cli.main(["decode", "--run", str(tiny_run), "--out", str(out), "--do-sample",
                         "--top-p", "0.9", "--temperature", "1.5", "--seed", "5",
                         "--batch-size", batch, "--device", "cpu"]) == 0
    assert [r["prediction"] for r in records(a)] == [r["prediction"] for r in records(b)]
    with pytest.raises(SystemExit, match="sampling draws one sequence"):
        cli.main(["decode", "--run", str(tiny_run), "--out", str(tmp_path / "c.jsonl"),
                  "--do-sample", "--beam", "4", "--device", "cpu"])
    with pytest.raises(SystemExit, match="apply to sampling only"):
        cli.main(["decode", "--run", str(tiny_run), "--out", str(tmp_path / "c.jsonl"),
                  "--top-k", "4", "--device", "cpu"])


def test_an_export_decodes_with_data(tiny_run, toy_data, full, tmp_path):
    exported = tmp_path / "export"
    assert cli.main(["export", "--run", str(tiny_run), "--out", str(exported)]) == 0
    with pytest.raises(SystemExit, match="export, which names no dataset: pass --data"):
        decode(exported, tmp_path / "x.jsonl")
    out = tmp_path / "e.jsonl"
    assert decode(exported, out, "--data", str(toy_data)) == 0
    assert [r["prediction"] for r in records(out)] == [r["prediction"] for r in records(full)]
