"""Shim for Beam's ``--setup_file``, which stages the package for Dataflow workers by running
``python setup.py sdist``; all metadata is in pyproject.toml."""

from setuptools import setup

setup()
