"""Thin entry points: the ``wikisum`` command and its subcommands."""
