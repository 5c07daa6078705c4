"""`wikisum ingest` and `wikisum build`'s --lang: the dump's language by default, "en" with a
log line where the dump names none, a disagreeing --lang kept with a warning; the language
carried from the ingest output into dataset.json by `wikisum rank`."""

from __future__ import annotations

import argparse
import bz2
import json
import logging

import pytest

from wikisum.workflows import build as build_cmd
from wikisum.workflows import ingest as ingest_cmd

HEAD = ('<mediawiki xmlns="http://www.mediawiki.org/xml/export-0.10/" version="0.10" '
        'xml:lang="{xml_lang}">{siteinfo}')
SITEINFO = "<siteinfo><dbname>{dbname}</dbname></siteinfo>"
PAGE = ("<page><title>X</title><ns>0</ns><id>1</id><revision><text>Text.</text></revision>"
        "</page></mediawiki>")


def _dump(tmp_path, name: str, dbname: str | None, xml_lang: str = "") -> str:
    siteinfo = SITEINFO.format(dbname=dbname) if dbname is not None else ""
    path = tmp_path / name
    path.write_bytes(bz2.compress((HEAD.format(xml_lang=xml_lang, siteinfo=siteinfo)
                                   + PAGE).encode()))
    return str(path)


def _args(command, argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="wikisum")
    command.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


@pytest.mark.parametrize("command", [ingest_cmd, build_cmd], ids=["ingest", "build"])
def test_lang_defaults_to_the_dumps_language(tmp_path, command):
    dump = _dump(tmp_path, "bnwiki-pages-articles.xml.bz2", "bnwiki", "bn")
    args = _args(command, [command.__name__.rsplit(".", 1)[1], "--wiki", dump,
                           "--out", str(tmp_path / "out")])
    assert args.lang is None
    config = ingest_cmd.config_from_args(args)
    assert config.lang == "bn"
    assert config.attach.article_lang == "bn"  # references are wanted in the articles' language
    assert config.attach.wants_language


def test_the_first_dump_names_the_language(tmp_path):
    first = _dump(tmp_path, "a-ukwiki.xml.bz2", "ukwiki")
    second = _dump(tmp_path, "b-jawiki.xml.bz2", "jawiki")
    args = _args(ingest_cmd, ["ingest", "--wiki", f"{tmp_path}/*.xml.bz2", "--wiki", second,
                              "--out", str(tmp_path / "out")])
    assert first < second
    assert ingest_cmd.article_language(args, "ingest") == "uk"


def test_a_dump_without_siteinfo_is_english_with_a_log_line(tmp_path, caplog):
    dump = _dump(tmp_path, "old.xml.bz2", None)
    args = _args(ingest_cmd, ["ingest", "--wiki", dump, "--out", str(tmp_path / "out")])
    with caplog.at_level(logging.INFO, logger="wikisum"):
        assert ingest_cmd.article_language(args, "ingest") == "en"
    assert "names no language" in caplog.text and "--lang" in caplog.text


def test_without_a_dbname_the_xml_lang_names_the_language(tmp_path):
    dump = _dump(tmp_path, "x.xml.bz2", None, xml_lang="hi")
    args = _args(ingest_cmd, ["ingest", "--wiki", dump, "--out", str(tmp_path / "out")])
    assert ingest_cmd.article_language(args, "ingest") == "hi"


def test_a_lang_that_disagrees_with_the_dump_is_kept_with_a_warning(tmp_path, capsys):
    dump = _dump(tmp_path, "arwiki.xml.bz2", "arwiki", "ar")
    args = _args(ingest_cmd, ["ingest", "--wiki", dump, "--lang", "en",
                              "--out", str(tmp_path / "out")])
    assert ingest_cmd.article_language(args, "ingest") == "en"
    err = capsys.readouterr().err
    assert "warning" in err and "arwiki" in err and "--lang en" in err


@pytest.mark.parametrize("given", ["ru", "RU", "zh-yue"])
def test_a_lang_that_agrees_with_the_dump_says_nothing(tmp_path, capsys, given):
    dump = _dump(tmp_path, "x.xml.bz2", {"zh-yue": "zh_yuewiki"}.get(given, "ruwiki"))
    args = _args(ingest_cmd, ["ingest", "--wiki", dump, "--lang", given,
                              "--out", str(tmp_path / "out")])
    assert ingest_cmd.article_language(args, "ingest") == given
    assert capsys.readouterr().err == ""


def test_a_dry_run_reads_no_dump(tmp_path, caplog):
    args = _args(ingest_cmd, ["ingest", "--wiki", "gs://bucket/zhwiki.xml.bz2",
                              "--out", str(tmp_path / "out")])
    with caplog.at_level(logging.INFO, logger="wikisum"):
        assert ingest_cmd.article_language(args, "ingest", read_dump=False) == "en"
    assert "dry run" in caplog.text


def test_the_articles_language_is_read_back_from_the_ingest_output(tmp_path):
    # what `wikisum rank` writes into dataset.json (the real dumps' builds check it end to end)
    from wikisum.core import vocab

    (tmp_path / "summary.json").write_text(json.dumps({"options": {"lang": "vi"}}))
    assert vocab.ingest_language(str(tmp_path)) == "vi"
    assert vocab.ingest_language(str(tmp_path / "missing")) is None
