"""load(): a trained model, its configs and tokenizer from a run or a checkpoint file."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from toys import (
    TOY,
    ToyConfig,
    config,
    log,
    weights,
)

from wikisum.generation import export
from wikisum.generation.decode import decode
from wikisum.training import checkpoint, vocabid
from wikisum.training import loop as training
from wikisum.training.config import ConfigError
from wikisum.workflows import cli

# ------------------------------------------------------------------------------------------
# load().


def test_load_restores_model_configs_and_tokenizer(uninterrupted, toy_data):
    out, _, _ = uninterrupted
    loaded = checkpoint.load(str(out), factory=TOY)
    ckpt = torch.load(out / "checkpoints" / "step-8.pt", weights_only=True)
    assert not loaded.model.training
    assert loaded.name == "toy" and loaded.step == 8
    assert loaded.config == ToyConfig(**ckpt["model_config"])
    assert loaded.train_config == config(toy_data, out)
    assert all(torch.equal(v, ckpt["model"][k]) for k, v in loaded.model.state_dict().items())
    assert loaded.tokenizer.get_piece_size() == json.loads(
        (toy_data / "dataset.json").read_text())["vocab_size"]
    same = checkpoint.load(str(out / "checkpoints" / "step-6.pt"), factory=TOY)
    assert same.step == 6


def test_load_without_a_checkpoint_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint in"):
        checkpoint.load(str(tmp_path), factory=TOY)
    with pytest.raises(FileNotFoundError, match="neither a run directory"):
        checkpoint.load(str(tmp_path / "missing"), factory=TOY)


def test_load_names_an_unreadable_checkpoint(tmp_path):
    (tmp_path / "checkpoints").mkdir()
    bad = tmp_path / "checkpoints" / "step-3.pt"
    bad.write_bytes(b"garbage")
    with pytest.raises(ValueError, match=f"cannot read checkpoint {bad}"):
        checkpoint.load(str(tmp_path), factory=TOY)


def _entry_offset(path: Path, entry: str) -> tuple[int, int]:
    """Where the bytes of zip entry ``entry`` (the first whose name ends so) start in
    ``path``, and how many there are."""
    import struct
    import zipfile

    with zipfile.ZipFile(path) as archive:
        info = next(i for i in archive.infolist() if i.filename.endswith(entry))
    with open(path, "rb") as f:
        f.seek(info.header_offset)
        header = f.read(30)
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    return info.header_offset + 30 + name_length + extra_length, info.compress_size


DAMAGED = [  # (name, the entry whose byte is flipped, where in it: a fraction of its length)
    ("a weight's first byte", "data/0", 0.0),
    ("a weight's middle byte", "data/0", 0.5),
    ("the last weight's last byte", "data/LAST", 1.0),
    ("the pickled structure", "data.pkl", 0.5),
    ("the format version record", ".format_version", 0.0),
]


@pytest.mark.parametrize(("entry", "where"), [c[1:] for c in DAMAGED],
                         ids=[c[0] for c in DAMAGED])
def test_a_flipped_byte_is_refused_naming_the_entry_and_the_run_falls_back(
        uninterrupted, tmp_path, capsys, entry, where):
    import zipfile

    run = copied_run(uninterrupted, tmp_path)
    steps = checkpoint.checkpoints(str(run))
    previous, (_, newest) = steps[-2], steps[-1]
    if entry == "data/LAST":
        with zipfile.ZipFile(newest) as archive:
            entry = max((i.filename for i in archive.infolist() if "/data/" in i.filename),
                        key=lambda name: int(name.rsplit("/", 1)[1]))
    start, size = _entry_offset(newest, entry)
    data = bytearray(newest.read_bytes())
    data[start + min(int(where * size), size - 1)] ^= 0x10
    newest.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=rf"cannot read checkpoint {newest}: .*") as caught:
        checkpoint.read_checkpoint(newest)
    assert "\n" not in str(caught.value) and entry.rsplit("/", 1)[-1] in str(caught.value)
    capsys.readouterr()
    path, state = checkpoint.latest_readable(str(run))
    assert (path, state["step"]) == (previous[1], previous[0])
    warning = capsys.readouterr().err
    assert f"warning: cannot read checkpoint {newest}" in warning
    assert f"using the previous checkpoint {previous[1]}" in warning
    assert checkpoint.load(str(run), factory=TOY).step == previous[0]


def test_crc_check_reads_an_intact_checkpoint(uninterrupted):
    for _, path in checkpoint.checkpoints(str(uninterrupted[0])):
        checkpoint.check_crcs(path)  # raises nothing


# ------------------------------------------------------------------------------------------
# The vocabulary a run trained with: recorded by SHA-256, and another file in its place refused.


def sha256(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def copied_run(uninterrupted, tmp_path) -> Path:
    run = tmp_path / "run"
    shutil.copytree(uninterrupted[0], run)
    return run


def test_a_replaced_vocabulary_is_refused_naming_both(uninterrupted, toy_data, other_vocab,
                                                      toy_registry, tmp_path, capsys):
    run = copied_run(uninterrupted, tmp_path)
    recorded = sha256(toy_data.parent / "vocab.model")
    assert json.loads((run / "config.json").read_text())[vocabid.KEY] == recorded
    for _, path in checkpoint.checkpoints(str(run)):
        assert torch.load(path, weights_only=True)[vocabid.KEY] == recorded
    assert checkpoint.load(str(run), factory=TOY).vocab_sha256 == recorded

    shutil.copy(other_vocab, run / "vocab.model")
    found = sha256(other_vocab)
    with pytest.raises(vocabid.VocabularyMismatch) as exc:
        checkpoint.load(str(run), factory=TOY)
    message = str(exc.value)
    assert f"{run / 'vocab.model'} is not the vocabulary the model was trained with" in message
    assert found in message and recorded in message and "step-8.pt" in message
    # decode (rc 1, no predictions), export, and resuming training: refused alike
    preds = tmp_path / "preds.jsonl"
    with pytest.raises(SystemExit, match=f"wikisum decode: .*{found}.*{recorded}"):
        cli.main(["decode", "--run", str(run), "--data", str(toy_data), "--out", str(preds),
                  "--device", "cpu"])
    assert not preds.exists()
    with pytest.raises(ValueError, match=recorded):
        export.export(run, tmp_path / "export", factory=TOY)
    with pytest.raises(ConfigError, match=f"vocab.model is not the vocabulary this run was "
                                          f"trained with: its SHA-256 is {found}, .*step-8.pt "
                                          f"records {recorded}"):
        training.train(config(toy_data, run, steps=10), TOY)
    assert [step for step, _ in checkpoint.checkpoints(str(run))] == [6, 8]


def test_a_dataset_of_another_vocabulary_is_refused_on_resume_and_decode(
        uninterrupted, toy_data, other_vocab, tmp_path):
    run = copied_run(uninterrupted, tmp_path)
    other = tmp_path / "other_data"
    shutil.copytree(toy_data, other)
    info = json.loads((other / "dataset.json").read_text())
    (other / "dataset.json").write_text(json.dumps({**info, "vocab": str(other_vocab)}))
    with pytest.raises(ConfigError, match=f"the vocabulary of {other} .*{sha256(other_vocab)}"
                                          f".* is not the one .*step-8.pt was trained with"):
        training.train(config(other, run, steps=10), TOY)
    with pytest.raises(vocabid.VocabularyMismatch, match="would be read as other pieces"):
        decode(str(run), "test", str(tmp_path / "p.jsonl"), data=str(other), factory=TOY,
               device="cpu", progress=False)


def test_a_run_written_before_the_hash_is_used_with_one_warning(uninterrupted, toy_data,
                                                               other_vocab, tmp_path, capsys):
    run = copied_run(uninterrupted, tmp_path)
    for _, path in checkpoint.checkpoints(str(run)):
        state = torch.load(path, weights_only=True)
        del state[vocabid.KEY]
        torch.save(state, path)
    info = json.loads((run / "config.json").read_text())
    del info[vocabid.KEY]
    (run / "config.json").write_text(json.dumps(info))
    for _ in range(2):
        assert checkpoint.load(str(run), factory=TOY).vocab_sha256 is None
    assert capsys.readouterr().err.count("records no vocabulary hash") == 1
    # Resuming checks its copy against the dataset's vocabulary, and records the hash.
    shutil.copy(other_vocab, run / "vocab.model")
    with pytest.raises(ConfigError, match="the dataset's vocabulary .* has"):
        training.train(config(toy_data, run, steps=10), TOY)
    shutil.copy(toy_data.parent / "vocab.model", run / "vocab.model")
    training.train(config(toy_data, run, steps=10), TOY)
    recorded = sha256(toy_data.parent / "vocab.model")
    assert torch.load(run / "checkpoints" / "step-10.pt", weights_only=True)[vocabid.KEY] == \
        recorded
    assert json.loads((run / "config.json").read_text())[vocabid.KEY] == recorded


# ------------------------------------------------------------------------------------------
# A checkpoint that cannot be written: a full disk, a file-size limit.

# A child process saves a checkpoint, then, under a 1 MiB file-size limit (SIGXFSZ ignored, so
# the write fails with EFBIG instead of killing the process), one of 4 MiB at the same path.
FILE_SIZE_LIMIT = """
import resource, signal, sys
from pathlib import Path
import torch
from wikisum.training import checkpoint
path = Path(sys.argv[1])
checkpoint.save_atomically({"format": checkpoint.CHECKPOINT_FORMAT, "step": 2,
                            "model": {"w": torch.ones(8)}}, path)
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
try:
    checkpoint.save_atomically({"format": checkpoint.CHECKPOINT_FORMAT, "step": 4,
                                "model": {"w": torch.zeros(1 << 20)}}, path)
except checkpoint.CheckpointWriteError as exc:
    print(f"errno={exc.errno}: {exc}")
    sys.exit(0)
"""


def test_a_file_size_limit_says_so_and_keeps_the_last_checkpoint(tmp_path):
    path = tmp_path / "checkpoints" / "step-2.pt"
    done = subprocess.run([sys.executable, "-c", FILE_SIZE_LIMIT, str(path)],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith(f"errno={errno.EFBIG}: cannot write checkpoint {path}: the "
                                  "file-size limit was hit"), done.stdout
    assert "EFBIG" in done.stdout and "last good checkpoint is kept" in done.stdout
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in path.parent.iterdir()) == ["step-2.pt"]  # no .tmp left
    state = checkpoint.read_checkpoint(path)
    assert state["step"] == 2 and torch.equal(state["model"]["w"], torch.ones(8))


def test_a_full_disk_stops_the_run_which_resumes_from_the_last_checkpoint(
        uninterrupted, toy_data, tmp_path, monkeypatch):
    out = tmp_path / "run"
    real = checkpoint._Recorder.write

    def full_disk(self, data):
        if "step-4" in self.file.name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(self, data)

    monkeypatch.setattr(checkpoint._Recorder, "write", full_disk)
    with pytest.raises(checkpoint.CheckpointWriteError) as exc:
        training.train(config(toy_data, out), TOY)
    assert exc.value.errno == errno.ENOSPC
    assert str(exc.value).startswith(f"cannot write checkpoint {out / 'checkpoints'}/step-4.pt: "
                                     "the disk is full (ENOSPC")
    assert str(exc.value).endswith(f"(the last good checkpoint is {out / 'checkpoints'}/"
                                   "step-2.pt)")
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["step-2.pt"]
    assert log(out)[-1]["event"] == "checkpoint_failed"
    monkeypatch.setattr(checkpoint._Recorder, "write", real)
    training.train(config(toy_data, out), TOY)  # the same command, once there is room
    expected = weights(uninterrupted[0])
    assert all(torch.equal(v, expected[k]) for k, v in weights(out).items())


def test_an_error_that_is_not_the_disks_is_raised_unchanged(tmp_path, monkeypatch):
    # A CUDA or other torch-internal error is not a full disk: it surfaces as itself, with its
    # traceback; the temporary file is still removed and the last checkpoint kept.
    path = tmp_path / "checkpoints" / "step-2.pt"
    checkpoint.save_atomically({"format": checkpoint.CHECKPOINT_FORMAT, "step": 2,
                                "model": {"w": torch.ones(8)}}, path)

    def boom(obj, f):
        f.write(b"partial")
        raise RuntimeError("boom")

    monkeypatch.setattr(checkpoint.torch, "save", boom)
    with pytest.raises(RuntimeError, match="^boom$") as exc:
        checkpoint.save_atomically({"format": checkpoint.CHECKPOINT_FORMAT, "step": 4,
                                    "model": {"w": torch.zeros(8)}}, path)
    assert type(exc.value) is RuntimeError
    monkeypatch.undo()
    assert sorted(p.name for p in path.parent.iterdir()) == ["step-2.pt"]  # no .tmp left
    state = checkpoint.read_checkpoint(path)
    assert state["step"] == 2 and torch.equal(state["model"]["w"], torch.ones(8))
