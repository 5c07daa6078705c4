"""One spelling per option across commands (docs/commands.md, "Option names"), retired
spellings kept as hidden aliases, and one parser for byte sizes."""

from __future__ import annotations

import argparse

import commandlines
import pytest

from wikisum.core import progress
from wikisum.workflows import checks, cli

# What each command once spelt otherwise, and what it spells now: the spellings scripts may still
# use, so a record kept by hand (the parsers say which spellings they keep; this says which they
# must). A new command has none: nobody's script spells its options otherwise.
RETIRED = {
    "ingest": {"--num-shards": "--shards", "--shard-buffer-mb": "--shard-buffer"},
    "vocab": {"--in": "--data", "--size": "--vocab-size"},
    "rank": {"--in": "--data", "--rank-shards": "--shards", "--shard-buffer-mb": "--shard-buffer"},
    "build": {"--num-shards": "--ingest-shards", "--rank-shards": "--shards",
              "--shard-buffer-mb": "--shard-buffer"},
    "report": {"--sample": "--limit"},
}
# The same words for other things: `human-eval make --sample N` draws N examples at random
# (with --seed) for annotators to judge, the word of the human-evaluation literature; it is not
# a cut of the data (`--limit`), which report's retired --sample was.
UNRELATED: set[tuple[str, str]] = {("human-eval make", "--sample")}
# (value given to the retired spelling, value given to the new one): the same setting
VALUES = {"--shard-buffer-mb": ("3", "3MB")}


def retired() -> list[tuple[str, str, str]]:
    """(command, retired spelling, the option it became) of every command, from its parser."""
    return [(name, old, new) for name, parser in commandlines.parsers().items()
            for old, new in checks.retired_options(parser).items()]


def visible_options(parser: argparse.ArgumentParser) -> list[str]:
    return [s for a in parser._actions if a.help is not argparse.SUPPRESS
            for s in a.option_strings]


def required_argv(parser: argparse.ArgumentParser, leave_out: str) -> list[str]:
    """A value for each required option (a required group's first) but the one setting
    ``leave_out``."""
    return [x for a in commandlines.required(parser) if a.option_strings and a.dest != leave_out
            for x in (a.option_strings[0], "x")]


def test_no_command_shows_a_retired_spelling():
    retired_spellings = {old for _, old, _ in retired()}
    for name, parser in commandlines.parsers().items():
        shown = set(visible_options(parser))
        hidden = {old for old in retired_spellings if (name, old) not in UNRELATED}
        assert not shown & hidden, name
        help_text = parser.format_help()
        for old in hidden:
            assert f"{old} " not in help_text and f"{old}\n" not in help_text, (name, old)
        # a byte size carries its unit in the value, never in the name
        assert not [s for s in shown if s.endswith(("-mb", "-kb", "-gb"))], name


def test_each_command_keeps_exactly_its_retired_spellings():
    for name, parser in commandlines.parsers().items():
        kept = checks.retired_options(parser)
        if name not in RETIRED:
            assert not kept, (f"{name} keeps retired spellings {sorted(kept)}, but a new command "
                              "has no old ones (checks.add_shard_buffer(p, retired=False))")
        assert kept == RETIRED.get(name, {}), name


@pytest.mark.parametrize("command,old,new", retired())
def test_a_retired_spelling_parses_to_the_same_setting(command, old, new):
    parser = commandlines.parsers()[command]
    dest = {s: a.dest for a in parser._actions for s in a.option_strings}
    assert dest[old] == dest[new]
    old_value, new_value = VALUES.get(old, ("64", "64"))
    base = required_argv(parser, leave_out=dest[new])
    via_old = parser.parse_args([*base, old, old_value])
    via_new = parser.parse_args([*base, new, new_value])
    assert getattr(via_old, dest[old]) == getattr(via_new, dest[new])
    assert via_old.retired_options == [(old, new)]
    assert not hasattr(via_new, "retired_options")


def test_the_shard_buffer_in_either_spelling_is_bytes():
    parser = commandlines.parsers()["rank"]
    base = ["--data", "i", "--vocab", "v", "--out", "o"]
    assert parser.parse_args([*base, "--shard-buffer-mb", "64"]).shard_buffer == 64 * 2 ** 20
    assert parser.parse_args([*base, "--shard-buffer", "1.5GB"]).shard_buffer == 3 * 2 ** 29
    assert parser.parse_args(base).shard_buffer == 256 * 2 ** 20


def test_a_missing_required_option_names_the_new_spelling(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["vocab", "--out", "v.model"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--data" in err and "--in" not in err


def test_verbose_says_what_a_retired_spelling_is_now(tmp_path, capsys):
    argv = ["vocab", "--in", str(tmp_path / "missing"), "--out", str(tmp_path / "v.model")]
    try:
        for flags, shown in (([], False), (["-v"], True)):
            with pytest.raises(SystemExit):  # no ingest output there: the command stops
                cli.main([*flags, *argv])
            assert ("--in is now spelt --data" in capsys.readouterr().err) is shown
    finally:
        progress.set_verbosity(progress.NORMAL)


def test_every_byte_size_option_reads_units():
    for name, parser in commandlines.parsers().items():
        for action in parser._actions:
            if action.help is argparse.SUPPRESS:
                continue
            if action.metavar == "SIZE" or any(s.endswith("-bytes") for s in
                                               action.option_strings):
                assert getattr(action.type, "__name__", "") == "size", (name, action.dest)


@pytest.mark.parametrize("text,n", [
    ("10MB", 10 * 1024 ** 2), ("512KB", 512 * 1024), ("512kb", 512 * 1024), ("64KiB", 65536),
    ("4096", 4096), ("1.5M", 1536 * 1024), ("1.5GB", 3 * 2 ** 29), ("2GiB", 2 * 1024 ** 3),
    ("7 B", 7), ("1k", 1024), (300, 300),
])
def test_parse_size(text, n):
    assert checks.parse_size(text) == n


@pytest.mark.parametrize("text,message", [
    ("", "not a size"), ("MB", "not a size"), ("10 XB", "not a size"), ("ten", "not a size"),
    ("1.5.2MB", "not a size"), ("10MBB", "not a size"), ("0", "must be at least 1, got 0"),
    ("-5", "must be at least 1, got -5"),
])
def test_parse_size_rejects_with_the_value_named(text, message):
    with pytest.raises(ValueError, match=message):
        checks.parse_size(text)


def test_size_bounds_and_format():
    assert checks.byte_size(2 ** 20)("1MB") == 2 ** 20
    with pytest.raises(argparse.ArgumentTypeError, match="must be at least 1MB, got 1000"):
        checks.byte_size(2 ** 20)("1000")
    with pytest.raises(argparse.ArgumentTypeError, match="must be at most 1KB, got 2KB"):
        checks.byte_size(1, 1024)("2KB")
    assert [checks.format_size(n) for n in (256 * 2 ** 20, 2 ** 30, 1024, 1000, 1536)] == \
        ["256MB", "1GB", "1KB", "1000", "1536"]
    for n in (256 * 2 ** 20, 2 ** 30, 1536, 1000):
        assert checks.parse_size(checks.format_size(n)) == n


def test_a_bad_size_is_a_usage_error_naming_the_option(capsys):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["ingest", "--wiki", "w", "--out", "o", "--shard-buffer", "lots"])
    assert exit_.value.code == 2
    assert "argument --shard-buffer: not a size: 'lots'" in capsys.readouterr().err
