"""The base install (``pip install wikisum``, no extras) is stage two without Beam: in a fresh
virtual environment holding the wheel and exactly its declared base dependencies, and not
apache-beam, trafilatura or warcio, `wikisum train`, `decode` and `evaluate` run on a dataset
that stage one built (in this environment, with Beam), and a stage-one command answers with the
one-line error that names the ``pipeline`` extra.

The fresh environment does not download its dependencies (from the registries, `pip install
torch==2.13.0` and then the wheel took two minutes here, and installed the same distributions):
it links them from this environment, one symbolic link per top-level file or folder each
distribution's RECORD lists, for the distributions the wheel's Requires-Dist (no extra) needs,
followed transitively. ``pip check`` in the fresh environment then confirms that the declared
dependencies are all there is and that they suffice.
"""

from __future__ import annotations

import email
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
# setup.py's PIPELINE packages that the issue names: none of them may be in the base install.
STAGE_ONE = ("apache-beam", "trafilatura", "warcio")
STAGE_ONE_MODULES = ("apache_beam", "trafilatura", "warcio")

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(),
    reason="needs a git checkout to know the package's files")


def copy_source(dest: Path) -> Path:
    """The files git tracks, as a clean clone has them (no build/ or egg-info of a checkout)."""
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split("\0")
    for name in filter(None, tracked):
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return dest


def requirements(lines: list[str], extra: str = "") -> set[str]:
    """The distributions ``Requires-Dist`` lines ask for, without an extra or with ``extra``
    (canonical names)."""
    names = set()
    for line in lines:
        req = Requirement(line)
        if req.marker is None or req.marker.evaluate({"extra": extra}):
            names.add(canonicalize_name(req.name))
    return names


def wheel_requires(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        return email.message_from_bytes(archive.read(name)).get_all("Requires-Dist") or []


def closure(lines: list[str]) -> list[metadata.Distribution]:
    """This environment's distributions that ``lines`` (no extra) need, transitively, with the
    extras each is asked for. A requirement that this environment does not satisfy fails."""
    todo = [(Requirement(line), "") for line in lines]
    found: dict[str, tuple[metadata.Distribution, set[str]]] = {}
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        dist = metadata.distribution(req.name)
        assert req.specifier.contains(dist.version, prereleases=True), (str(req), dist.version)
        key = canonicalize_name(req.name)
        extras = found.get(key, (dist, set()))[1]
        if key in found and set(req.extras) <= extras:
            continue
        found[key] = (dist, extras | set(req.extras))
        for line in dist.requires or []:
            for wanted in {""} | found[key][1]:
                todo.append((Requirement(line), wanted))
    return [dist for dist, _ in found.values()]


def link_distributions(dists: list[metadata.Distribution], site: Path) -> None:
    """Install ``dists`` into ``site`` as symbolic links to this environment's copies: every
    top-level file and folder their RECORDs list (the package, its .libs, its .dist-info, a
    .pth), not scripts outside site-packages nor byte code."""
    for dist in dists:
        assert dist.files, f"{dist.metadata['Name']} has no RECORD"
        for top in {f.parts[0] for f in dist.files}:
            if top in ("..", "__pycache__") or (site / top).exists():
                continue
            source = Path(dist.locate_file(top))
            if source.exists():
                (site / top).symlink_to(source)


def clean_env(**extra: str) -> dict[str, str]:
    """This environment's variables less what would show its packages to another
    interpreter."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV",
                        "WIKISUM_PACKAGE")}
    return {**env, "PYTHONNOUSERSITE": "1", **extra}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from the files git tracks, as `pip install .` builds it."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = copy_source(tmp / "src")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp / "dist"), str(src)], check=True,
                   cwd=tmp, env=clean_env())
    (built,) = (tmp / "dist").glob("wikisum-*.whl")
    return built


@pytest.fixture(scope="module")
def stage_two(wheel, tmp_path_factory) -> Path:
    """A fresh virtual environment with the wheel and its base dependencies only: its bin/."""
    env_dir = tmp_path_factory.mktemp("stage-two") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    python = env_dir / "bin" / "python"
    site = Path(subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True, text=True, check=True, env=clean_env()).stdout.strip())
    link_distributions(closure(wheel_requires(wheel)), site)
    pip = [sys.executable, "-m", "pip", "--python", str(python)]
    subprocess.run([*pip, "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True,
                   env=clean_env())
    # every requirement of every distribution there is met, by what is there
    check = subprocess.run([*pip, "check"], capture_output=True, text=True, env=clean_env(),
                           check=False)
    assert check.returncode == 0, check.stdout + check.stderr
    return env_dir / "bin"


def run(bin_dir: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess:
    """``wikisum ARGV`` (or ``python ARGV`` when argv[0] is "python") in the fresh
    environment, on the CPU with one thread (a tiny model gains nothing from more, and on a
    busy machine OpenMP's threads wait for each other: 5 steps took 18 s instead of 0.5 s)."""
    program = argv[0] if argv[0] == "python" else "wikisum"
    args = argv[1:] if argv[0] == "python" else argv
    env = clean_env(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    return subprocess.run([str(bin_dir / program), *args], cwd=cwd, capture_output=True,
                          text=True, env=env, check=False, timeout=600)


def test_the_base_install_has_torch_and_the_pipeline_extra_has_beam(wheel):
    requires = wheel_requires(wheel)
    base = requirements(requires)
    assert {"torch", "safetensors", "numpy", "pyarrow", "fsspec"} <= base
    assert base.isdisjoint(STAGE_ONE)
    pipeline = requirements(requires, extra="pipeline") - base
    assert set(STAGE_ONE) <= pipeline
    assert "torch" not in pipeline


@pytest.fixture(scope="module")
def workers_sdist(tmp_path_factory) -> Path:
    """The sdist Beam's stager builds for --setup_file (`python -m build --sdist
    --no-isolation`) while `packaged_for_workers` sets WIKISUM_PACKAGE=workers."""
    tmp = tmp_path_factory.mktemp("workers-sdist")
    src = copy_source(tmp / "src")
    subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir",
                    str(tmp / "dist"), str(src)], check=True, capture_output=True, cwd=src,
                   env=clean_env(WIKISUM_PACKAGE="workers"))
    (sdist,) = (tmp / "dist").glob("wikisum-*.tar.gz")
    return sdist


def test_the_workers_sdist_lists_beam_and_not_torch(workers_sdist):
    with tarfile.open(workers_sdist) as archive:
        top = workers_sdist.name.removesuffix(".tar.gz")
        info = archive.extractfile(f"{top}/PKG-INFO").read()
    base = requirements(email.message_from_bytes(info).get_all("Requires-Dist") or [])
    assert set(STAGE_ONE) <= base
    assert "torch" not in base and "safetensors" not in base
    assert {"numpy", "pyarrow", "fsspec"} <= base


def test_a_worker_installs_the_workers_sdist_without_torch(workers_sdist, tmp_path):
    """A Dataflow worker runs `pip install` on the staged sdist: pip builds a wheel from it, in
    the worker's environment, where `packaged_for_workers` never ran."""
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(tmp_path / "dist"), str(workers_sdist)],
                   check=True, cwd=tmp_path, env=clean_env())
    (built,) = (tmp_path / "dist").glob("wikisum-*.whl")
    base = requirements(wheel_requires(built))
    assert "apache-beam" in base
    assert "torch" not in base


def test_the_fresh_environment_has_no_stage_one_packages(stage_two, tmp_path):
    code = ("import importlib.util, sys, torch, wikisum\n"
            f"print(sorted(n for n in {STAGE_ONE_MODULES!r} if importlib.util.find_spec(n)))\n"
            "print(wikisum.__file__)\n"
            "print(sys.prefix)\n"
            "import apache_beam\n")
    done = run(stage_two, "python", "-c", code, cwd=tmp_path)
    found, wikisum_file, prefix = done.stdout.splitlines()
    assert found == "[]"
    assert Path(wikisum_file).is_relative_to(stage_two.parent), wikisum_file
    assert Path(prefix) == stage_two.parent
    assert done.returncode == 1
    assert "ModuleNotFoundError: No module named 'apache_beam'" in done.stderr


def test_train_decode_evaluate_without_beam(stage_two, built_sample, tmp_path):
    data = built_sample[0] / "data"
    run_dir, preds = tmp_path / "run", tmp_path / "preds.jsonl"
    trained = run(stage_two, "-q", "train", "--model", "t-dmca", "--data", str(data),
                  "--out", str(run_dir), "--preset", "tiny", "--steps", "5",
                  "--max-input-tokens", "32", "--batch-tokens", "200", "--device", "cpu",
                  "warmup_steps=1", "eval_every=5", "checkpoint_every=5", "dev_examples=1",
                  "max_target_tokens=8", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (summary["step"], summary["complete"]) == (5, True)
    assert (run_dir / "checkpoints" / "step-5.pt").is_file()

    decoded = run(stage_two, "-q", "decode", "--run", str(run_dir), "--split", "test",
                  "--out", str(preds), "--beam", "2", "--max-len", "12", "--limit", "3",
                  "--device", "cpu", cwd=tmp_path)
    assert decoded.returncode == 0, decoded.stderr
    records = [json.loads(line) for line in preds.read_text().splitlines()]
    assert len(records) == 3
    assert all(set(r) >= {"id", "prediction", "reference", "reference_nll"} for r in records)

    metrics_path = tmp_path / "metrics.json"
    evaluated = run(stage_two, "evaluate", "--preds", str(preds), "--out", str(metrics_path),
                    "--bootstrap", "0", cwd=tmp_path)
    assert evaluated.returncode == 0, evaluated.stderr
    assert "ROUGE-1" in evaluated.stdout
    metrics = json.loads(metrics_path.read_text())
    assert metrics["examples"] == 3
    assert set(metrics["rouge"]) == {"rouge1", "rouge2", "rougeL"}
    assert metrics["perplexity"] > 1


def test_a_stage_one_command_names_the_pipeline_extra(stage_two, sample_corpus, tmp_path):
    helped = run(stage_two, "ingest", "--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    assert "--wiki" in helped.stdout

    sample = sample_corpus[0]
    out = tmp_path / "ingest"
    done = run(stage_two, "ingest", "--wiki", str(sample / "enwiki-sample-pages-articles.xml.bz2"),
               "--warc", str(sample / "warc" / "*.warc.gz"), "--out", str(out), cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "wikisum ingest: apache_beam is not installed; this command belongs to stage one (the "
        "Beam jobs), which needs the pipeline extra: pip install 'wikisum[pipeline]'"]
    assert not out.exists()
