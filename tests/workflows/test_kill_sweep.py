"""Every command that writes, killed (SIGKILL) at several of its writes: the next command that
reads the output refuses what the killed run left, in one line naming the output and the
command to rerun, or finds the output whole; and the same command run again finishes the job,
its output equal to an uninterrupted run's.

Each command runs in a child process, forked from a server that has imported wikisum and its
libraries once (killpoints.Commands), that counts its writes under its output (Python's audit
events: a file opened to write, a rename, a removal) and kills itself at the K-th: the kill
points are the first write, the last and one between, the same on every run; for the Beam jobs
(report, rank), whose runs take seconds each, the middle and the last. Each sweep runs twice:
into a new output, and over an earlier finished output of the same command (a rerun killed
part-way must not leave a mix that a reader takes)."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "formats"))

import killpoints  # noqa: E402
from dataset_files import cases, write_generic  # noqa: E402
from humaneval_files import write_preds  # noqa: E402

from wikisum.core import loader  # noqa: E402
from wikisum.pipeline.sample import write_sample  # noqa: E402
from wikisum.workflows import cli  # noqa: E402

POINTS = 3  # kill points a command is swept at (of those that write its output)


@dataclass
class Job:
    """One command to kill: its command line, the outputs it writes (the kill points are the
    writes under them), the output a reader is pointed at, and the reader: a function of that
    output and a scratch folder that raises (SystemExit or an exception: the refusal) or returns
    (it took the output)."""
    command: str
    argv: list[str]
    roots: list[Path]
    out: Path
    read: Callable[[Path, Path], None]
    # visible files whose bytes may differ between two whole runs (times, absolute paths)
    varying: tuple[str, ...] = ()
    extra: dict = field(default_factory=dict)
    # what "no earlier output" means where the output lives among other files
    clear: Callable[[], None] | None = None
    # the kill points of a run the command is killed at (of those that write its output)
    sweep: Callable[[list[int]], list[int]] = lambda points: killpoints.sweep_points(points,
                                                                                    POINTS)


def main(argv: list) -> None:
    """``wikisum ARGV`` in this process; an exit status other than 0 raises SystemExit."""
    status = cli.main([str(a) for a in argv])
    if status:
        raise SystemExit(f"exit status {status}")


def visible(folder: Path) -> dict[str, bytes]:
    """What a reader sees of an output: its files (a file output: itself), less hidden names."""
    if folder.is_file():
        return {folder.name: folder.read_bytes()}
    if not folder.is_dir():
        return {}
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and not any(part.startswith(".")
                                       for part in p.relative_to(folder).parts)}


def same(a: dict[str, bytes], b: dict[str, bytes], varying: tuple[str, ...]) -> bool:
    """The same files with the same content (``varying`` files: present in both)."""
    return a.keys() == b.keys() and all(same_content(k, a[k], b[k]) for k in a
                                        if k not in varying)


def same_content(name: str, a: bytes, b: bytes) -> bool:
    """Equal bytes; for safetensors, equal tensors and metadata (the library writes its
    metadata in an order of its own, which differs from one run to the next)."""
    if a == b:
        return True
    if not name.endswith(".safetensors"):
        return False
    from safetensors.torch import load

    def metadata(data: bytes) -> dict:
        size = int.from_bytes(data[:8], "little")
        return json.loads(data[8:8 + size]).get("__metadata__", {})
    ta, tb = load(a), load(b)
    return (metadata(a) == metadata(b) and ta.keys() == tb.keys()
            and all(ta[k].equal(tb[k]) for k in ta))


def refusal(read: Callable[[Path, Path], None], out: Path, scratch: Path) -> str | None:
    """The reader's one-line refusal, or None when it took the output."""
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        read(out, scratch)
    except SystemExit as exc:
        return str(exc.code)
    except Exception as exc:  # noqa: BLE001 - any refusal, checked by its message
        return f"{type(exc).__name__}: {exc}"
    return None


# ------------------------------------------------------------------------------ the commands

def import_job(root: Path, built: Path, run: Path) -> Job:
    src = root / "src"
    write_generic(src, {s: cases(s, n, seed=i)
                        for i, (s, n) in enumerate((("train", 8), ("dev", 2), ("test", 2)))})
    out = root / "out"
    return Job("import", ["-q", "import", "jsonl", src, "--out", out, "--vocab-size", "200",
                          "--shards", "1", "--workers", "1"], [out], out,
               lambda o, s: main(["-q", "write-as", "jsonl", "--data", o, "--out", s / "r"]))


def write_as_job(fmt: str) -> Callable:
    def job(root: Path, built: Path, run: Path) -> Job:
        out = root / "out"
        extra = ["--source-vocab", out / "spm.model"] if fmt == "hiersumm" else []
        return Job("write-as", ["-q", "write-as", fmt, "--data", built / "data", "--out", out,
                                "--split", "dev", "--split", "test"], [out], out,
                   lambda o, s: main(["-q", "import", fmt, o, "--out", s / "r",
                                      "--vocab-size", "100", "--workers", "1", *extra]))
    return job


def export_job(root: Path, built: Path, run: Path) -> Job:
    out = root / "out"
    return Job("export", ["-q", "export", "--run", run, "--out", out], [out], out,
               lambda o, s: main(["-q", "decode", "--run", o, "--data", built / "data",
                                  "--split", "test", "--limit", "1", "--max-len", "4",
                                  "--beam", "1", "--device", "cpu", "--out", s / "p.jsonl"]),
               varying=("README.md",))


def human_eval_make_job(root: Path, built: Path, run: Path) -> Job:
    preds = write_preds(root / "preds", ("alpha", "beta"), n=4)
    out = root / "out"
    argv = ["-q", "human-eval", "make", "--out", out, "--sample", "2"]
    for name, path in preds.items():
        argv += ["--preds", f"{name}={path}"]

    def read(o: Path, s: Path) -> None:
        # an annotator opens the page: a folder without it is no page (the key comes first)
        whole_or_refused("human-eval make", "index.html")(o, s)
        main(["-q", "human-eval", "score", "--key", o / "key.json", "--answers",
              answers(o / "key.json", s), "--out", s / "scores"])
        page_id = json.loads((o / "key.json").read_text())["page_id"]
        assert page_id in (o / "index.html").read_text(), "the page is not the key's"
    # a finished page is never replaced (answers to it are scored with its key); each page has
    # an id of its own, drawn at random
    return Job("human-eval make", argv, [out], out, read, varying=("index.html", "key.json"),
               extra={"final": True})


def answers(key_path: Path, folder: Path) -> Path:
    """An annotator's answers to every item of the page whose key is ``key_path`` (the key of
    an earlier whole run: the page id a finished page shows)."""
    key = json.loads(key_path.read_text()) if key_path.is_file() else {"page_id": "none"}
    path = folder / f"answers-{key['page_id']}.json"
    path.write_text(json.dumps({
        "format": "wikisum-human-eval-answers", "version": 1, "page_id": key["page_id"],
        "annotator": "Ann", "exported": "2024-05-01T10:00:00Z",
        "quality": {q["item"]: dict.fromkeys(key["dimensions"], 4)
                    for q in key.get("quality_items", [])},
        "preference": {p["item"]: "A" for p in key.get("preference_items", [])}}))
    return path


def human_eval_score_job(root: Path, built: Path, run: Path) -> Job:
    preds = write_preds(root / "preds", ("alpha", "beta"), n=4)
    page = root / "page"
    main(["-q", "human-eval", "make", "--out", page, "--sample", "2",
          *[w for name, path in preds.items() for w in ("--preds", f"{name}={path}")]])
    out = root / "out"
    return Job("human-eval score", ["-q", "human-eval", "score", "--key", page / "key.json",
                                    "--answers", answers(page / "key.json", root),
                                    "--out", out], [out], out,
               whole_or_refused("human-eval score", "scores.json"))


def whole_or_refused(command: str, record: str = "") -> Callable[[Path, Path], None]:
    """The reader of an output that no wikisum command reads (a person does): it takes the
    output when its completion record (``record`` in the folder, or the file itself) is there,
    and refuses it, naming it, otherwise."""
    def read(o: Path, s: Path) -> None:
        if not (o / record if record else o).is_file():
            raise SystemExit(f"{o} holds no {record or 'file'}: rerun `wikisum {command}`")
    return read


def middle_and_last(points: list[int]) -> list[int]:
    """The kill points of a command whose runs take seconds each (a Beam job): the middle one
    (its job's files half rewritten) and the last (all but the completion record)."""
    return sorted({points[len(points) // 2], points[-1]})


def report_job(root: Path, built: Path, run: Path) -> Job:
    out = root / "out"
    return Job("report", ["-q", "report", "--data", built / "data", "--out", out, "--limit", "2",
                          "--lengths", "50", "--bootstrap", "20", "--split", "dev"], [out], out,
               lambda o, s: main(["-q", "report", "--compare", o, o, "--out", s / "r"]),
               varying=("metrics.json", "report.html", "report.md"),  # times taken
               sweep=middle_and_last)


def vocab_job(root: Path, built: Path, run: Path) -> Job:
    out = root / "v.model"
    return Job("vocab", ["-q", "vocab", "--data", built / "ingest", "--out", out,
                         "--vocab-size", "200", "--max-texts", "300"], [out], out,
               lambda o, s: main(["-q", "convert-pairs", "--source", root / "s.txt",
                                  "--target", root / "t.txt", "--split", "train",
                                  "--vocab", o, "--out", s / "pairs"]),
               extra={"pairs": True})


def evaluate_job(root: Path, built: Path, run: Path) -> Job:
    preds = write_preds(root / "preds", ("alpha",), n=4)["alpha"]
    out = root / "m.json"
    return Job("evaluate", ["-q", "evaluate", "--preds", preds, "--out", out, "--bootstrap",
                            "0"], [out], out,
               whole_or_refused("evaluate"))


def exemplars_job(root: Path, built: Path, run: Path) -> Job:
    data = root / "data"
    shutil.copytree(built / "data", data)
    shutil.copy(built / "vocab.model", root / "vocab.model")  # dataset.json: ../vocab.model

    def read(o: Path, s: Path) -> None:
        dataset = loader.Dataset(str(o))
        for split in dataset.splits():
            dataset.exemplar_ids(split)
    def clear() -> None:
        for path in data.glob("exemplars-*.parquet"):
            path.unlink()
    return Job("exemplars", ["-q", "exemplars", "--data", data], [data], data, read,
               clear=clear)


def convert_pairs_job(root: Path, built: Path, run: Path) -> Job:
    write_pairs(root)
    out = root / "out"

    def read(o: Path, s: Path) -> None:
        dataset = loader.Dataset(str(o))
        assert sum(1 for _ in dataset.rows("train")) == dataset.info["rows"]["train"]
    return Job("convert-pairs", ["-q", "convert-pairs", "--source", root / "s.txt", "--target",
                                 root / "t.txt", "--split", "train", "--out", out,
                                 "--vocab-size", "60", "--shards", "2"], [out], out, read)


def write_pairs(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "s.txt").write_text("".join(f"the river stone {i} city house green {i % 3}\n"
                                        for i in range(30)))
    (root / "t.txt").write_text("".join(f"stone {i} city\n" for i in range(30)))


def rank_job(root: Path, built: Path, run: Path) -> Job:
    # an ingest of a small corpus of its own: ranking takes time per article
    sample, ingest = root / "sample", root / "ingest"
    write_sample(sample, articles=12, seed=0)
    main(["-q", "ingest", "--wiki", sample / "enwiki-sample-pages-articles.xml.bz2",
          "--warc", sample / "warc" / "*.warc.gz", "--out", ingest, "--shards", "1"])
    out = root / "out"
    return Job("rank", ["-q", "rank", "--data", ingest, "--vocab", built / "vocab.model",
                        "--out", out, "--shards", "1"], [out], out,
               lambda o, s: main(["-q", "write-as", "jsonl", "--data", o, "--out", s / "r",
                                  "--extractor", "tfidf"]),
               sweep=middle_and_last)


def decode_job(root: Path, built: Path, run: Path) -> Job:
    out = root / "p.jsonl"
    return Job("decode", ["-q", "decode", "--run", run, "--split", "test", "--out", out,
                          "--limit", "3", "--max-len", "6", "--beam", "1", "--device", "cpu"],
               [out], out,
               lambda o, s: main(["-q", "evaluate", "--preds", o, "--bootstrap", "0"]))


JOBS = {
    "import": import_job,
    "write-as-jsonl": write_as_job("jsonl"),
    "write-as-hiersumm": write_as_job("hiersumm"),
    "export": export_job,
    "human-eval-make": human_eval_make_job,
    "human-eval-score": human_eval_score_job,
    "report": report_job,
    "vocab": vocab_job,
    "evaluate": evaluate_job,
    "exemplars": exemplars_job,
    "convert-pairs": convert_pairs_job,
    "rank": rank_job,
    "decode": decode_job,
}


CASES = [pytest.param(name, over, id=f"{name}-{over}")
         for name in JOBS for over in ("new", "earlier")]


@pytest.fixture(scope="module")
def commands(tmp_path_factory):
    """The server the killed commands are forked from (killpoints.Commands)."""
    server = killpoints.Commands(tmp_path_factory.mktemp("commands"))
    yield server
    server.close()


@pytest.fixture(scope="module")
def jobs(built_sample, sample_run, tmp_path_factory):
    """Each command's job, its inputs made once a module and shared by its two settings:
    ``jobs(name) -> Job``. A test starts from no output (``Job.clear``)."""
    folder = tmp_path_factory.mktemp("jobs")
    made: dict[str, Job] = {}

    def get(name: str) -> Job:
        if name not in made:
            made[name] = JOBS[name](folder / name, built_sample[0], sample_run)
            if made[name].extra.get("pairs"):
                write_pairs(folder / name)
        return made[name]
    return get


@pytest.mark.parametrize("name,over", CASES)
def test_a_killed_command_is_refused_by_its_reader_and_finished_by_a_rerun(
        name, over, jobs, commands, tmp_path):
    job = jobs(name)
    final = job.extra.get("final", False)
    if final and over == "earlier":
        pytest.skip(f"{job.command} never replaces a finished output")
    job.clear() if job.clear else remove(job.roots)
    if over == "earlier":  # the kill points of a rerun over a finished output are counted
        main(job.argv)
    counted = commands.count(job.argv, job.roots, tmp_path / "tmp")
    assert counted.returncode == 0, counted.stderr[-2000:]
    reference = visible(job.out)
    assert reference, f"{name} wrote nothing visible under {job.out}"
    assert refusal(job.read, job.out, tmp_path / "read-whole") is None
    for point in job.sweep(killpoints.work_points(counted)):
        if over == "new":
            job.clear() if job.clear else remove(job.roots)
        # else: the output is whole, from the count or the last rerun
        killed = commands.kill_at(job.argv, job.roots, tmp_path / "tmp", point)
        where = f"{name} killed at write {point} of {counted.points} ({over}: " \
                f"{counted.events.get(point, '?')})"
        assert killed.killed, f"{where}: not killed: {killed.stderr[-2000:]}"
        seen = visible(job.out)
        refused = refusal(job.read, job.out, tmp_path / f"read-{point}")
        if refused is None:
            assert same(seen, reference, job.varying), (
                f"{where}: the reader took an output that is not whole: {sorted(seen)} vs "
                f"{sorted(reference)}")
        else:
            assert str(job.out) in refused and "\n" not in refused.strip(), (
                f"{where}: the refusal is not one line naming {job.out}: {refused!r}")
            assert "wikisum" in refused, f"{where}: the refusal names no command: {refused}"
        if final and refused is None:
            continue  # the killed run had finished its output, which is never replaced
        main(job.argv)  # the same command again finishes the job
        assert same(visible(job.out), reference, job.varying), (
            f"{where}, then rerun: the output differs from an uninterrupted run's")
        assert refusal(job.read, job.out, tmp_path / f"read-again-{point}") is None


def test_a_command_killed_while_claiming_its_output_is_finished_by_a_rerun(commands, tmp_path):
    job = human_eval_score_job(tmp_path / "job", tmp_path, tmp_path)
    counted = commands.count(job.argv, job.roots, tmp_path / "tmp")
    assert counted.returncode == 0, counted.stderr[-2000:]
    reference = visible(job.out)
    points = killpoints.claim_points(counted)
    assert points, counted.events
    failed = []
    for point in points:
        remove(job.roots)
        assert commands.kill_at(job.argv, job.roots, tmp_path / "tmp", point).killed
        try:
            main(job.argv)
        except SystemExit as exc:
            failed.append(f"killed at {counted.events[point]}: {exc}")
            continue
        assert same(visible(job.out), reference, job.varying)
    assert not failed, "\n".join(failed)


def test_import_refuses_a_write_as_killed_between_its_renames(built_sample, commands,
                                                             tmp_path):
    job = write_as_job("jsonl")(tmp_path / "job", built_sample[0], tmp_path)
    counted = commands.count(job.argv, job.roots, tmp_path / "tmp")
    renames = [k for k, event in sorted(counted.events.items())
               if event.startswith("os.rename") and ".jsonl." in event]
    assert renames, counted.events
    remove(job.roots)
    assert commands.kill_at(job.argv, job.roots, tmp_path / "tmp", renames[-1]).killed
    assert not (job.out / ".wikisum-write-as.json").exists()  # its record, written last
    refused = refusal(job.read, job.out, tmp_path / "read")
    assert refused is not None and str(job.out) in refused and "write-as" in refused


def remove(paths: list[Path]) -> None:
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path)
        elif path.exists():
            path.unlink()
