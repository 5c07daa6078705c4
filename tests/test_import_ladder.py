"""The import ladder (pyproject.toml's [tool.importlinter] contracts, run by `make lint`): it
holds on this tree, and it fails, naming the contract and the import, on a copy of the tree with
one upward import planted."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

pytestmark = pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter not installed")


def package_copy(tmp_path: Path) -> Path:
    """The package's modules (the repository root is the package ``wikisum``) under
    tmp_path/wikisum, and the contracts beside them."""
    package = tmp_path / "wikisum"
    shutil.copytree(ROOT, package, ignore=shutil.ignore_patterns(
        ".git", ".venv", "tests", "bench", "experiments", "docs", "configs", "*.egg-info",
        "__pycache__", ".*cache", "wikisum-demo", "build", "dist"))
    shutil.copy2(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return package


def lint_imports(tmp_path: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "pyproject.toml"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, check=False)


def test_the_ladder_holds_and_a_planted_upward_import_breaks_it(tmp_path):
    package = package_copy(tmp_path)
    kept = lint_imports(tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    assert "0 broken" in kept.stdout

    text = package / "core" / "text.py"
    source = text.read_text()
    text.write_text(source.replace("import re\n", "import re\n\nfrom wikisum.workflows import cli"
                                   "  # noqa: F401\n", 1))
    broken = lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "wikisum.core.text -> wikisum.workflows" in broken.stdout
    assert "BROKEN" in broken.stdout

    text.write_text(source.replace("import re\n", "import re\n\nimport apache_beam  # noqa: F401\n",
                                   1))
    beam = lint_imports(tmp_path)
    assert beam.returncode != 0 and "wikisum.core.text -> apache_beam" in beam.stdout
