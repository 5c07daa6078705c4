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

TOP_LEVEL = ["pipeline", "extractors", "models", "workflows"]

setup(
    package_dir={"wikisum": "."},
    packages=["wikisum"] + [
        f"wikisum.{name}"
        for name in find_packages(include=[p for top in TOP_LEVEL for p in (top, f"{top}.*")])
    ],
)
