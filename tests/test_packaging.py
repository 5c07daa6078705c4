"""The package installs under one import name, ``wikisum``, and nothing of a user's shadows it."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOP_LEVEL = ("core", "extractors", "formats", "pipeline", "models", "training", "generation",
             "workflows")


def package_files() -> list[Path]:
    files = [ROOT / "__init__.py"]
    for top in TOP_LEVEL:
        files += sorted((ROOT / top).rglob("*.py"))
    return files


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(["wikisum", *(parts[:-1] if parts[-1] == "__init__" else parts)])


def top_level_imports(path: Path) -> list[int]:
    """Lines that import a bare top-level name (``pipeline``, ``models``, ``core``, ...)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        if any(name.split(".")[0] in TOP_LEVEL for name in names):
            found.append(node.lineno)
    return found


def test_no_module_imports_a_bare_top_level_name():
    files = (package_files() + sorted((ROOT / "tests").rglob("*.py"))
             + sorted((ROOT / "bench").rglob("*.py"))
             + sorted((ROOT / "experiments").rglob("*.py")))
    offenders = [f"{path.relative_to(ROOT)}:{line}" for path in files
                 for line in top_level_imports(path)]
    assert offenders == []


def test_the_scan_finds_a_bare_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import models\nfrom pipeline.urls import normalize_url\nimport wikisum\n"
                   "from wikisum.models import base\nfrom . import models\n")
    assert top_level_imports(bad) == [1, 2]


def test_public_api_is_lazy_and_complete():
    code = textwrap.dedent("""
        import sys, wikisum
        assert "torch" not in sys.modules and "apache_beam" not in sys.modules, "eager import"
        for name in wikisum.__all__:
            getattr(wikisum, name)
        print(wikisum.__version__)
    """)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT.parent, check=False)
    assert done.returncode == 0, done.stderr
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        import wikisum

        wikisum.nope  # noqa: B018


def fresh_install(wheel: Path, env_dir: Path) -> Path:
    """A fresh virtual environment with ``wheel`` installed; the dependencies are this
    environment's, seen through a plain path (a path line in a .pth file does not run that
    directory's own .pth files, so this environment's editable finder stays out)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(env_dir)], check=True)
    fresh = env_dir / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(fresh), "install", "-q",
                    "--no-deps", "--no-index", str(wheel)], check=True)
    site = subprocess.run([str(fresh), "-c", "import sysconfig; print(sysconfig.get_paths()"
                           "['purelib'])"], capture_output=True, text=True, check=True)
    Path(site.stdout.strip(), "deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return env_dir


def _copy_source(dest: Path) -> None:
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    for name in tracked:
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs a git checkout to know the package's files")
def test_installed_wheel_imports_every_module_from_a_directory_that_shadows_them(tmp_path):
    """Build the wheel, install it into a fresh virtual environment (dependencies seen through
    this environment's site-packages, but not its editable install), and import every module
    from a directory holding ``models.py``, ``pipeline/`` and the like, which raise if used."""
    src = tmp_path / "src"
    _copy_source(src)
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(wheels), str(src)], check=True)
    (wheel,) = wheels.glob("wikisum-*.whl")

    env_dir = fresh_install(wheel, tmp_path / "fresh")
    user = tmp_path / "user"
    for name in TOP_LEVEL:
        (user / name).mkdir(parents=True)
        (user / name / "__init__.py").write_text("raise ImportError('the user package')\n")
    (user / "models.py").write_text("raise ImportError('the user module')\n")
    code = textwrap.dedent("""
        import importlib, pkgutil, sys
        import wikisum
        assert "site-packages" in wikisum.__file__, wikisum.__file__
        names = ["wikisum"]
        for info in pkgutil.walk_packages(wikisum.__path__, "wikisum."):
            names.append(info.name)
        for name in names:
            importlib.import_module(name)
        assert wikisum.build_model("t-dmca", preset="tiny", vocab_size=50) is not None
        print(" ".join(sorted(names)))
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run([str(env_dir / "bin" / "python"), "-c", code], cwd=user,
                          capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    installed = set(done.stdout.split())
    expected = {module_name(path) for path in package_files()}
    # The wheel is built from the files git tracks: a new module must be added to git.
    assert installed == expected, (f"not installed: {sorted(expected - installed)}; "
                                   f"not in the tree: {sorted(installed - expected)}")
    cli = subprocess.run([str(env_dir / "bin" / "wikisum"), "--help"], cwd=user,
                         capture_output=True, text=True, env=env, check=False)
    assert cli.returncode == 0 and "COMMAND" in cli.stdout, cli.stderr


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(),
                    reason="needs a git checkout to know the package's files")
def test_the_package_dataflow_stages_installs_and_imports_every_module(tmp_path):
    """The sdist that ``--setup_file`` stages, built by Beam's own stager as a Dataflow launch
    builds it, becomes a wheel as a worker's pip makes one, installs on a fresh interpreter and
    imports every module the jobs' DoFns live in."""
    src = tmp_path / "src"
    _copy_source(src)
    dist = tmp_path / "dist"
    dist.mkdir()
    stage = textwrap.dedent(f"""
        from apache_beam.runners.portability.stager import Stager
        print(Stager._build_setup_package({str(src / 'setup.py')!r}, {str(dist)!r}))
    """)
    subprocess.run([sys.executable, "-c", stage], cwd=tmp_path, check=True, capture_output=True)
    (sdist,) = dist.glob("wikisum-*.tar.gz")
    wheels = tmp_path / "wheels"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps",
                    "--no-build-isolation", "-w", str(wheels), str(sdist)], check=True,
                   cwd=tmp_path)
    (wheel,) = wheels.glob("wikisum-*.whl")
    python = fresh_install(wheel, tmp_path / "fresh") / "bin" / "python"
    code = textwrap.dedent("""
        import importlib, pkgutil
        import wikisum
        assert "site-packages" in wikisum.__file__, wikisum.__file__
        names = ["wikisum"] + [i.name for i in pkgutil.walk_packages(wikisum.__path__,
                                                                     "wikisum.")]
        for name in names:
            importlib.import_module(name)
        print(" ".join(sorted(names)))
    """)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    done = subprocess.run([str(python), "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr
    expected = {module_name(path) for path in package_files()}
    installed = set(done.stdout.split())
    assert installed == expected, (f"not staged: {sorted(expected - installed)} (a new module "
                                   "must be added to git)")
