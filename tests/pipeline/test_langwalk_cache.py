"""A damaged, mixed-up or unusable language-model cache never changes an answer.

Every case starts from a whole cache entry (``CACHE/language-model/KEY``), damages it or the
folder around it, and then identifies texts through :func:`wikisum.pipeline.language
.identify_many` in a process whose identifier is loaded anew: the answers must be those of the
unpacked model, bit for bit, and the damage said in exactly one warning. An entry that does not
check is unpacked again and rewritten (the next load reads it without a word); a cache that
cannot be used is bypassed. A link planted in the cache is never followed: what it points to is
left as it was. The cases that need a mount (a read-only folder, a full disk; a root user
writes through a mode of 0555) or that would hang a process that reads a pipe run in a child
process with a time limit.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from wikisum.pipeline import language, langwalk

TEXTS = [
    "The quick brown fox jumps over the lazy dog, again and again, every single morning.",
    "Der Hund läuft schnell über die grüne Wiese und bellt die Kühe auf der Weide an.",
    "Le chat dort tranquillement sur le canapé pendant que la pluie tombe dehors.",
    "El perro corre rápidamente por el parque mientras los niños juegan al fútbol.",
    "Il gatto dorme sul divano mentre la pioggia cade fuori dalla finestra aperta.",
    "De kat slaapt rustig op de bank terwijl de regen buiten op het dak valt.",
    "Кошка спокойно спит на диване, пока за окном идёт сильный дождь.",
    "Η γάτα κοιμάται ήσυχα στον καναπέ ενώ έξω βρέχει δυνατά όλη τη νύχτα.",
    "猫はソファの上で静かに眠っていて、外では雨が強く降っています。今日は寒いです。",
    "这只猫安静地睡在沙发上，外面正在下着大雨，天气非常寒冷，我们都待在家里。",
    "Kot śpi spokojnie na kanapie, podczas gdy na zewnątrz pada mocny deszcz.",
    "Kissa nukkuu rauhallisesti sohvalla, kun ulkona sataa kovaa vettä koko yön.",
    "O gato dorme tranquilamente no sofá enquanto a chuva cai lá fora sem parar.",
    "Katten sover lugnt på soffan medan regnet faller ute hela natten lång.",
    "short",
]
WARNINGS = "wikisum.language"
CHILD_SECONDS = 60


def answers() -> list[tuple[str, float]]:
    return [(found.code, found.confidence) for found in language.identify_many(TEXTS)]


@pytest.fixture(scope="module")
def clean(tmp_path_factory) -> tuple[Path, list[tuple[str, float]]]:
    """A cache folder holding one whole entry, and the answers of the unpacked model."""
    root = tmp_path_factory.mktemp("clean-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(language, "_identifier", None)
        mp.setenv(langwalk.CACHE_ENV, "off")
        expected = answers()
        mp.setattr(language, "_identifier", None)
        mp.setenv(langwalk.CACHE_ENV, str(root))
        assert answers() == expected
    assert len(list((root / "language-model").iterdir())) == 1
    return root, expected


def entry_of(root: Path) -> Path:
    [entry] = (root / "language-model").iterdir()
    return entry


def load_fresh(monkeypatch, caplog, cache: Path) -> tuple[list, list[str]]:
    """The answers of an identifier loaded anew from ``cache``, and the warnings said."""
    monkeypatch.setattr(language, "_identifier", None)
    monkeypatch.setenv(langwalk.CACHE_ENV, str(cache))
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger=WARNINGS):
        got = answers()
    return got, [r.getMessage() for r in caplog.records if r.name == WARNINGS]


# --- how an entry is damaged --------------------------------------------------------------------

def npy_data_offset(path: Path) -> int:
    with open(path, "rb") as f:
        if np.lib.format.read_magic(f) == (1, 0):
            np.lib.format.read_array_header_1_0(f)
        else:
            np.lib.format.read_array_header_2_0(f)
        return f.tell()


def flip_byte(name: str, where: Callable[[Path], int], xor: int = 0xFF):
    def damage(entry: Path, elsewhere: Path) -> None:
        path = entry / name
        data = bytearray(path.read_bytes())
        data[where(path)] ^= xor
        path.write_bytes(bytes(data))
    return damage


def weight_english_reads(path: Path) -> int:
    """The high byte of one float32 weight that the English text reads, under the column of
    another language: flipping it (0xC1 -> 0x7F) makes the weight about 2e38, so that the text
    would be called that language."""
    identifier = language._get_identifier()
    features, _ = identifier._walk.counts(identifier._encode(TEXTS[0]))
    column = list(identifier.nb_classes).index("zu")
    table = np.load(path, mmap_mode="r")
    return npy_data_offset(path) + (int(features[0]) * table.shape[1] + column) * 4 + 3


def other_models_table(entry: Path, elsewhere: Path) -> None:
    """The table of a model whose first two languages are the other way round: an array of
    another entry, of the same type and shape."""
    table = np.load(entry / "ptc32.npy")
    table[:, [0, 16]] = table[:, [16, 0]]  # "af" and "en"
    np.save(entry / "ptc32.npy", table)


def swap_files(first: str, second: str):
    def damage(entry: Path, elsewhere: Path) -> None:
        a, b = entry / first, entry / second
        a.rename(entry / "swap")
        b.rename(a)
        (entry / "swap").rename(b)
    return damage


def cut(name: str, keep: float):
    def damage(entry: Path, elsewhere: Path) -> None:
        path = entry / name
        path.write_bytes(path.read_bytes()[:int(path.stat().st_size * keep)])
    return damage


def remove(name: str):
    def damage(entry: Path, elsewhere: Path) -> None:
        (entry / name).unlink()
    return damage


def entry_a_file(entry: Path, elsewhere: Path) -> None:
    shutil.rmtree(entry)
    entry.write_text("not an entry")


def consistent_entry_of_another_model(entry: Path, folder: Path) -> None:
    """A copy of ``entry`` at ``folder`` whose table is another model's, with its model.json
    recording that table (types, shapes and checksums that all agree)."""
    shutil.copytree(entry, folder)
    other_models_table(folder, folder)
    meta = json.loads((folder / "model.json").read_text())
    if "arrays" in meta:
        import zlib

        table = np.load(folder / "ptc32.npy")
        meta["arrays"]["ptc32"]["crc32"] = zlib.crc32(np.ascontiguousarray(table))
        (folder / "model.json").write_text(json.dumps(meta))


def table_a_link(entry: Path, elsewhere: Path) -> None:
    elsewhere.mkdir()
    shutil.copy(entry / "ptc32.npy", elsewhere / "ptc32.npy")
    other_models_table(elsewhere, elsewhere)
    (entry / "ptc32.npy").unlink()
    (entry / "ptc32.npy").symlink_to(elsewhere / "ptc32.npy")


def entry_a_link(entry: Path, elsewhere: Path) -> None:
    consistent_entry_of_another_model(entry, elsewhere / "entry")
    shutil.rmtree(entry)
    entry.symlink_to(elsewhere / "entry")


@dataclass(frozen=True)
class Damage:
    name: str
    damage: Callable[[Path, Path], None]


REBUILT = [
    Damage("a byte of the table flipped (a weight an English text reads)",
           flip_byte("ptc32.npy", weight_english_reads, 0xBE)),
    Damage("a byte of the table flipped (its last)", flip_byte("ptc32.npy", lambda p: -1)),
    Damage("a byte of the automaton flipped", flip_byte("nextmove.npy", lambda p: -4, 0x01)),
    Damage("a byte of an array's header flipped (its type)",
           flip_byte("output.npy", lambda p: open(p, "rb").read(128).index(b"<i8") + 2, 0x0C)),
    Damage("a byte of model.json flipped", flip_byte("model.json", lambda p: 3, 0x20)),
    Damage("the table of another entry (same type and shape)", other_models_table),
    Damage("two files of the entry swapped (row.npy, output.npy)",
           swap_files("row.npy", "output.npy")),
    Damage("two files of the entry swapped (pc.npy, ptc32.npy)",
           swap_files("pc.npy", "ptc32.npy")),
    Damage("the table cut short (a full disk, a killed copy)", cut("ptc32.npy", 0.5)),
    Damage("model.json cut short", cut("model.json", 0.5)),
    Damage("an array file missing", remove("output.npy")),
    Damage("the entry a file", entry_a_file),
    Damage("the table a link to another model's table", table_a_link),
    Damage("the entry a link to a consistent entry of another model", entry_a_link),
]


@pytest.mark.parametrize("case", REBUILT, ids=[c.name for c in REBUILT])
def test_a_damaged_entry_is_found_and_rebuilt_with_one_warning(case, clean, tmp_path,
                                                               monkeypatch, caplog):
    root, expected = clean
    cache = tmp_path / "cache"
    shutil.copytree(root, cache, symlinks=True)
    elsewhere = tmp_path / "elsewhere"
    case.damage(entry_of(cache), elsewhere)
    before = snapshot(elsewhere)

    got, warned = load_fresh(monkeypatch, caplog, cache)
    assert got == expected
    assert len(warned) == 1 and "cached again" in warned[0], warned
    assert snapshot(elsewhere) == before  # nothing reached through a link
    entry = entry_of(cache)
    assert entry.is_dir() and not entry.is_symlink()
    assert not any(p.is_symlink() for p in entry.iterdir())
    again, warned = load_fresh(monkeypatch, caplog, cache)  # the rewritten entry is whole
    assert again == expected and warned == []


def snapshot(folder: Path) -> dict[str, bytes]:
    if not folder.exists():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not p.is_symlink()}


# --- a cache that cannot be used ------------------------------------------------------------------

def cache_a_file(tmp_path: Path) -> Path:
    path = tmp_path / "cache"
    path.write_text("a file of the user's where the cache folder would be")
    return path


def cache_under_a_file(tmp_path: Path) -> Path:
    return cache_a_file(tmp_path) / "wikisum"


def models_folder_a_link(tmp_path: Path) -> Path:
    mine = tmp_path / "elsewhere"
    (mine / "py3langid-mine").mkdir(parents=True)
    (mine / "py3langid-mine" / "notes.txt").write_text("the user's own")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "language-model").symlink_to(mine)
    return cache


BYPASSED = [
    ("the cache folder a file", cache_a_file),
    ("the cache folder under a file", cache_under_a_file),
    ("language-model a link to a folder of the user's", models_folder_a_link),
]


@pytest.mark.parametrize("make", [m for _, m in BYPASSED], ids=[n for n, _ in BYPASSED])
def test_a_cache_that_cannot_be_used_is_bypassed_with_one_warning(make, clean, tmp_path,
                                                                  monkeypatch, caplog):
    _, expected = clean
    cache = make(tmp_path)
    before = snapshot(tmp_path)
    got, warned = load_fresh(monkeypatch, caplog, cache)
    assert got == expected
    assert len(warned) == 1 and "cannot be used" in warned[0], warned
    assert snapshot(tmp_path) == before  # nothing written, nothing removed


# --- in a child process: mounts, pipes ----------------------------------------------------------

CHILD = textwrap.dedent("""
    import json, logging, sys
    logging.basicConfig(level=logging.WARNING, format="WARNING %(name)s %(message)s")
    from wikisum.pipeline import language
    texts = json.loads(sys.argv[1])
    print(json.dumps([[f.code, f.confidence] for f in language.identify_many(texts)]))
""")


def mount_command(kind: str, folder: Path) -> list[str] | None:
    """The command that runs the child with ``folder`` read-only ("ro") or a 64 KB tmpfs
    ("full"), in a mount namespace of its own; None where none can be made."""
    if shutil.which("unshare") is None or shutil.which("mount") is None:
        return None
    mount = {"ro": f"mount --bind '{folder}' '{folder}' && "
                   f"mount -o remount,bind,ro '{folder}' '{folder}'",
             "full": f"mount -t tmpfs -o size=64k tmpfs '{folder}'"}[kind]
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", mount], capture_output=True,
                           timeout=30, check=False)
    if probe.returncode:
        return None
    return ["unshare", "-rm", "sh", "-c", f'{mount} && exec "$@"', "child"]


def run_child(cache: Path, prefix: list[str] | None = None) -> tuple[list, list[str]]:
    env = dict(os.environ, **{langwalk.CACHE_ENV: str(cache)})
    done = subprocess.run([*(prefix or []), sys.executable, "-c", CHILD, json.dumps(TEXTS)],
                          capture_output=True, text=True, env=env, timeout=CHILD_SECONDS,
                          check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    warned = [line for line in done.stderr.splitlines()
              if line.startswith(f"WARNING {WARNINGS}")]
    return [tuple(a) for a in json.loads(done.stdout)], warned


def unwritable(tmp_path: Path, kind: str) -> list[str]:
    """The command prefix under which ``tmp_path / "cache"`` cannot be written."""
    folder = tmp_path / "cache"
    if kind == "ro" and os.geteuid() != 0:  # a mode suffices where the user is not root
        for path in [folder, *folder.rglob("*")]:
            if path.is_dir():
                path.chmod(0o555)
        return []
    prefix = mount_command(kind, folder)
    if prefix is None:
        pytest.skip("no mount namespace here (unshare -rm) to make the folder unwritable")
    return prefix


def no_entry(cache: Path) -> None:
    cache.mkdir()


def a_damaged_entry(root: Path):
    def make(cache: Path) -> None:
        shutil.copytree(root, cache)
        other_models_table(entry_of(cache), cache)
    return make


@pytest.mark.parametrize("kind,state,outcome", [
    ("ro", "empty", "cannot be used"),
    ("ro", "whole", None),  # a read-only cache holding a whole entry is read as it is
    ("ro", "damaged", "cannot be removed"),
    ("full", "empty", "space"),  # "No space left on device", or numpy's own words
], ids=["read-only, empty", "read-only, a whole entry", "read-only, a damaged entry",
        "a full disk (64 KB tmpfs)"])
def test_an_unwritable_or_full_cache_gives_the_same_answers(kind, state, outcome, clean,
                                                             tmp_path):
    root, expected = clean
    cache = tmp_path / "cache"
    if state == "empty":
        cache.mkdir()
    else:
        shutil.copytree(root, cache)
        if state == "damaged":
            other_models_table(entry_of(cache), cache)
    prefix = unwritable(tmp_path, kind)
    try:
        got, warned = run_child(cache, prefix)
    finally:
        for path in [cache, *cache.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)
    assert got == expected
    if outcome is None:
        assert warned == []
    else:
        assert len(warned) == 1 and outcome in warned[0], warned
    if kind == "full":  # the tmpfs is gone with the child: nothing was written here
        assert list(cache.iterdir()) == []


def test_a_pipe_planted_as_an_array_is_not_waited_on(clean, tmp_path):
    root, expected = clean
    cache = tmp_path / "cache"
    shutil.copytree(root, cache)
    (entry_of(cache) / "ptc32.npy").unlink()
    os.mkfifo(entry_of(cache) / "ptc32.npy")
    try:
        got, warned = run_child(cache)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the load waited on the pipe for {CHILD_SECONDS} s")
    assert got == expected
    assert len(warned) == 1 and "not a regular file" in warned[0], warned
    assert (entry_of(cache) / "ptc32.npy").is_file()
