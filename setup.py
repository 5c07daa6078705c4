"""Package layout, and the shim for Beam's ``--setup_file`` (Dataflow stages the package by
running ``python setup.py sdist``); all other metadata is in pyproject.toml.

The design keeps ``pipeline/``, ``extractors/``, ``models/`` and ``workflows/`` at the top of the
repository, and installs them under one import name: the repository root is the package
``wikisum`` (its ``__init__.py`` is the public API) and the folders are ``wikisum.pipeline``,
``wikisum.extractors``, ``wikisum.models`` and ``wikisum.workflows``. So nobody's own
``models.py`` or ``pipeline/`` next to their script shadows ours. A new sub-package (a folder
with an ``__init__.py`` under one of the four) is found here without being listed.
"""

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

TOP_LEVEL = ["pipeline", "extractors", "models", "workflows"]


class BuildPy(build_py):
    """The root folder is the package ``wikisum``, but of its own files only ``__init__.py``
    belongs to it: this ``setup.py`` (which would run ``setup()`` on import) stays out."""

    def find_package_modules(self, package, package_dir):
        modules = super().find_package_modules(package, package_dir)
        if package == "wikisum":
            modules = [m for m in modules if m[1] == "__init__"]
        return modules


setup(
    cmdclass={"build_py": BuildPy},
    package_dir={"wikisum": "."},
    packages=["wikisum"] + [
        f"wikisum.{name}"
        for name in find_packages(include=[p for top in TOP_LEVEL for p in (top, f"{top}.*")])
    ],
)
