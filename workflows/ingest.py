"""``wikisum ingest``: the stage-one Beam job (dump + WARC/WET -> article shards)."""

from __future__ import annotations

import argparse
import logging
import sys

from wikisum.core import progress
from wikisum.core.language import primary_subtag
from wikisum.pipeline.clones import CLONE_MEASURES
from wikisum.pipeline.ingest.config import (
    ARTICLE_OUTCOMES,
    MAX_TIMEOUT_S,
    MISSING_FILES,
    AttachConfig,
    CleanConfig,
    DedupConfig,
    IngestConfig,
)
from wikisum.workflows import checks

log = logging.getLogger("wikisum.ingest")
DEFAULT_LANG = "en"  # the articles' language where neither --lang nor the dump names one

HELP = "Beam job: Wikipedia dump + WARC/WET captures -> clone-filtered article shards"
DESCRIPTION = """\
Read Wikipedia articles from pages-articles dumps and their references from WARC and WET files,
join them by normalised URL, drop each article's own Wikipedia page and its clones, and write
Parquet shards with one row per article and its references.

Inputs may be local paths or Beam filesystem URLs (gs://...); globs are expanded.

Outputs in --out:
  articles/articles-NNNNN-of-NNNNN.parquet      one row per article (schema: docs/data.md)
  dead_letters/dead_letters-NNNNN-of-NNNNN.parquet
                                                every dropped or failed record, with its reason
  summary.json                                  per stage: in = kept + dropped
  missing_urls.txt                              cited URLs no WARC/WET provided (crawl input)
  missing_search_urls.txt                       the same for search-result URLs
"""
EPILOG = checks.BEAM_OPTIONS + checks.SIZES + "\n"


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("ingest", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.set_defaults(func=run, beam_args=True)


def add_arguments(p, shards_option: str = "--shards") -> None:
    """The job's options, shared with `wikisum build` (where the article shards are
    ``--ingest-shards``: its ``--shards`` are the training shards)."""
    p.add_argument("--wiki", action="append", default=[], metavar="DUMP[,DUMP...]",
                   help="pages-articles XML dump(s), plain, .bz2 or .gz (repeatable); beside "
                        "--t2t-wiki-content, its citations label the authors' URLs")
    p.add_argument("--t2t-wiki-content", action="append", default=[], metavar="GLOB",
                   help="tensor2tensor's released articles (wiki_content.tfrecords-*), "
                        "instead of a dump's (repeatable)")
    p.add_argument("--t2t-wiki-urls", action="append", default=[], metavar="GLOB",
                   help="tensor2tensor's released reference URLs (wiki_urls.json-*): the "
                        "articles' citations and search results in one list, instead of the "
                        "dump's citations (repeatable)")
    p.add_argument("--warc", action="append", default=[], metavar="GLOB",
                   help="WARC/ARC files with the captured pages (repeatable)")
    p.add_argument("--wet", action="append", default=[], metavar="GLOB",
                   help="WET files with text conversions (repeatable)")
    p.add_argument("--search-results", metavar="JSONL",
                   help='search results, one {"title": ..., "urls": [...]} per line')
    p.add_argument("--clone-threshold", type=checks.number(0, 1),
                   default=AttachConfig.clone_threshold, metavar="R",
                   help="drop a reference that recalls more than R of the lead's words as a "
                        "clone (default: %(default)s)")
    p.add_argument("--clone-measure", choices=CLONE_MEASURES,
                   default=AttachConfig.clone_measure,
                   help="the lead's words a clone recalls: content (function words of --lang "
                        "left out; measured better on real pages, experiments/clones) or "
                        "unigram (every word, as in the paper) (default: %(default)s)")
    p.add_argument("--reference-lang", metavar="CODE",
                   help="drop references identified, with confidence, as another language "
                        "than CODE, as wrong_language; 'any' keeps every language and skips "
                        "identifying it (references' language: und) (default: --lang)")
    p.add_argument("--dedup", choices=("near", "exact", "off"), default="near",
                   help="paragraphs repeated across an article's references (syndicated "
                        "news): dropped when the same after normalisation (exact), or also "
                        "when near duplicates by MinHash (near); the first by citation order "
                        "is kept (default: %(default)s)")
    p.add_argument("--near-duplicate-threshold", type=checks.number(0, 1, low_open=True),
                   default=DedupConfig.threshold, metavar="J",
                   help="word-shingle Jaccard similarity from which a paragraph is a near "
                        "duplicate (default: %(default)s)")
    checks.add_option(p, shards_option, retired=["--num-shards"], dest="num_shards",
                      type=checks.count(1, 100_000), default=IngestConfig.num_shards,
                      metavar="N",
                      help="article shards to write (default: %(default)s)")
    p.add_argument("--lang", metavar="CODE",
                   help="the articles' language, a Wikipedia language code (default: the one "
                        "the first dump's <siteinfo> names, jawiki -> ja; en where it names "
                        "none)")
    add_cleaning_arguments(p)
    p.add_argument("--max-article-bytes", type=checks.byte_size(1),
                   default=IngestConfig.max_article_bytes, metavar="SIZE",
                   help="a dump page with more wikitext is dropped as too_large, unread "
                        "(memory stays bounded by it; default: "
                        f"{checks.format_size(IngestConfig.max_article_bytes)})")
    checks.add_shard_buffer(p)
    p.add_argument("--allow-empty", action="store_true",
                   help="exit 0 even when the dump yields no article (by default an empty "
                        "output is an error: a wrong or garbled dump)")


def add_cleaning_arguments(p) -> None:
    """How a capture is cleaned into a page's text: ingest's, and search-index's (which cleans
    pages exactly as ingest does)."""
    p.add_argument("--max-page-bytes", type=checks.byte_size(1),
                   default=CleanConfig.max_page_bytes, metavar="SIZE",
                   help="captures larger than this are dropped as too_large "
                        f"(default: {checks.format_size(CleanConfig.max_page_bytes)})")
    p.add_argument("--page-timeout", type=checks.number(0, MAX_TIMEOUT_S, low_open=True),
                   default=CleanConfig.timeout_s, metavar="S",
                   help="seconds allowed for extracting one page's text "
                        "(default: %(default)s)")
    p.add_argument("--min-words", type=checks.count(0), default=CleanConfig.min_words,
                   metavar="N",
                   help="paragraphs of a page's main text with fewer words are dropped as "
                        "too_few_words; 1 keeps headings, list items and captions, whose "
                        "furniture is dropped by what it says (default: %(default)s)")


def check_inputs(args, out: str, command: str) -> None:
    """Inputs and the output directory, before any work."""
    checks.output_dir(out, command)
    checks.input_files(args.wiki, "--wiki", command)
    checks.input_files(args.t2t_wiki_content, "--t2t-wiki-content", command)
    checks.input_files(args.t2t_wiki_urls, "--t2t-wiki-urls", command)
    checks.input_files(args.warc, "--warc", command)
    checks.input_files(args.wet, "--wet", command)
    if args.search_results:
        checks.input_files([args.search_results], "--search-results", command)


def empty(summary: dict, command: str, allow_empty: bool) -> bool:
    """Warn when the output holds no article; True when that is an error: the dump yielded no
    article at all (a wrong or garbled dump), unless ``allow_empty``."""
    pages = summary["stages"].get(article_stage(summary), {"kept": 0, "dropped": {}})
    kept = pages.get("kept", 0)
    parsed = kept + sum(pages.get("dropped", {}).get(k, 0)
                        for k in ARTICLE_OUTCOMES if k != "kept")
    if kept:
        return False
    if parsed:
        print(f"wikisum {command}: warning: none of the dump's {parsed} articles has a "
              "reference found in the WARC/WET input", file=sys.stderr)
        return False
    print(f"wikisum {command}: warning: the dump yielded no article (is it a pages-articles "
          "dump? --allow-empty accepts an empty output)", file=sys.stderr)
    return not allow_empty


def warn_empty_files(summary: dict, out: str, command: str) -> None:
    """Say so when input files held no record: an empty WARC is a failed download."""
    n = summary["stages"].get("files", {}).get("dropped", {}).get("empty_file", 0)
    if n:
        print(f"wikisum {command}: warning: {n} WARC/WET file(s) hold no record (a failed "
              f"download?): listed in {out}/dead_letters with reason empty_file",
              file=sys.stderr)


def has_references(summary: dict) -> bool:
    """Whether any article kept a reference (an output a vocabulary can be trained on)."""
    return summary["stages"].get(article_stage(summary), {}).get("kept", 0) > 0


def article_stage(summary: dict) -> str:
    """The stage whose ``kept`` are the output's articles: the dump's pages, or the records of
    tensor2tensor's wiki_content files (the dump then only labels citations)."""
    return "t2t_content" if "t2t_content" in summary["stages"] else "pages"


# A build that finds fewer than this share of its cited and search-result pages says where the
# missing ones are listed and how to fetch them.
JOINED_ENOUGH = 0.5


def missing_hint(summary: dict, out: str, command: str, fetched: bool = False) -> str | None:
    """What to do when little of the references joined: the missing-URL lists and the commands
    (or build's option) that fetch them; None when most joined or none is missing."""
    from apache_beam.io.filesystems import FileSystems

    links = summary["stages"].get("links", {"in": 0, "kept": 0, "dropped": {}})
    missing = links.get("dropped", {}).get("missing", 0)
    if not missing or (links["in"] and links["kept"] / links["in"] >= JOINED_ENOUGH
                       and has_references(summary)):
        return None
    lists = [FileSystems.join(out, name) for name in MISSING_FILES.values()]
    head = (f"wikisum {command}: {missing} of {links['in']} cited and search-result pages are "
            f"in no --warc/--wet input{' after fetching' if fetched else ''}; they are listed "
            f"in {lists[0]} and {lists[1]}.")
    if fetched:
        return (head + "\n  Search more crawls (--cc-crawl, several are tried in order), add "
                "the live web (--fetch-missing cc,crawl), or give more --warc files.")
    return (head + "\n  Fetch them in the same command: wikisum build ... --fetch-missing cc "
            "--cc-crawl CC-MAIN-YYYY-WW (Common Crawl; cc,crawl adds the live web)"
            f"\n  or step by step: wikisum cc-fetch --urls {lists[0]} --urls {lists[1]} "
            "--crawl CC-MAIN-YYYY-WW --out CC, then ingest again with "
            "--warc 'CC/warc/*.warc.gz' (`wikisum crawl` fetches what Common Crawl lacks)")


def article_language(args, command: str, read_dump: bool = True) -> str:
    """The articles' language: --lang, else the language of the first dump's ``<siteinfo>``
    (its dbname, :func:`wikisum.pipeline.dumps.dbname_language`; else the root's
    ``xml:lang``), else "en", said in a log line. A --lang that disagrees with the dump is kept,
    with a warning. ``read_dump`` False (a dry run, which reads no input) takes --lang or "en".
    """
    given = (args.lang or "").strip()
    site = path = None
    if args.wiki and read_dump:
        from wikisum.pipeline.ingest.articles import dump_siteinfo
        try:
            path, site = dump_siteinfo(args.wiki)
        except OSError as exc:  # Beam's BeamIOError too; the job names the error again
            log.warning("the first dump's <siteinfo> could not be read (%s)", exc)
    found = site.language if site is not None else None
    if given:
        if found and found != given.lower().replace("_", "-") and \
                primary_subtag(found) != primary_subtag(given):
            print(f"wikisum {command}: warning: --lang {given}, but {path} is "
                  f"{site.dbname or 'xml:lang ' + str(site.xml_lang)} ({found}): its articles "
                  f"are taken as {given}", file=sys.stderr)
        return given
    if found:
        log.info("the articles' language: %s (%s's <siteinfo>, %s)", found, path,
                 site.dbname or f"xml:lang {site.xml_lang}")
        return found
    if args.wiki:
        why = ("a dry run reads no dump" if not read_dump else
               f"{path or 'the first dump'} names no language (no <siteinfo> dbname or "
               "xml:lang)")
        log.warning("%s: the articles are taken as %s (--lang sets their language)", why,
                    DEFAULT_LANG)
    return DEFAULT_LANG


def config_from_args(args, out: str | None = None, lang: str | None = None,
                     command: str = "ingest"):
    """The job's :class:`wikisum.pipeline.ingest.IngestConfig`; ``lang``, the articles'
    language, is :func:`article_language`'s where not given."""
    from wikisum.pipeline import language

    if not 0.0 <= args.clone_threshold <= 1.0:
        raise SystemExit("wikisum ingest: --clone-threshold must be between 0 and 1")
    if args.reference_lang not in (None, "", "any") and not language.is_known(
            args.reference_lang):
        raise SystemExit(f"wikisum ingest: --reference-lang {args.reference_lang!r} is not a "
                         "language the identifier knows (an ISO 639-1 code such as en, de, "
                         "pl; 'any' keeps every language)")
    if args.dedup != "near" and args.near_duplicate_threshold != DedupConfig.threshold:
        print("wikisum ingest: warning: --near-duplicate-threshold has no effect with "
              f"--dedup {args.dedup}", file=sys.stderr)
    if args.num_shards < 1:
        raise SystemExit("wikisum ingest: --shards must be at least 1")
    if not args.wiki and not args.t2t_wiki_content:
        raise SystemExit("wikisum ingest: the articles are missing: give --wiki DUMP (a "
                         "pages-articles dump) or --t2t-wiki-content GLOB (tensor2tensor's "
                         "released wiki_content TFRecords)")
    if lang is None:
        lang = article_language(args, command)
    attach = AttachConfig(
        clone_threshold=args.clone_threshold, clone_measure=args.clone_measure,
        article_lang=lang, lang=args.reference_lang,
        dedup=None if args.dedup == "off" else DedupConfig(
            threshold=args.near_duplicate_threshold, near=args.dedup == "near"))
    return IngestConfig(
        wiki=tuple(args.wiki), out=out or args.out, warc=tuple(args.warc), wet=tuple(args.wet),
        search_results=args.search_results, t2t_content=tuple(args.t2t_wiki_content),
        t2t_urls=tuple(args.t2t_wiki_urls),
        num_shards=args.num_shards, lang=lang, max_article_bytes=args.max_article_bytes,
        attach=attach,
        clean=CleanConfig(max_page_bytes=args.max_page_bytes, timeout_s=args.page_timeout,
                          min_words=args.min_words,
                          identify_language=attach.wants_language),
        buffer_bytes=args.shard_buffer)


def run(args: argparse.Namespace, beam_argv: list[str] | None = None) -> int:
    from apache_beam.options.pipeline_options import PipelineOptions

    from wikisum.pipeline import beamio, ingest

    logging.getLogger("wikisum").setLevel(progress.log_level())
    options = PipelineOptions(beam_argv or [])
    dry = beamio.is_dry_run(options)
    if not dry:  # a dry run touches no filesystem
        check_inputs(args, args.out, "ingest")
    config = config_from_args(args, lang=article_language(args, "ingest", read_dump=not dry))
    try:
        with watch(config, options):
            summary = ingest.run(config, options)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum ingest: {exc}") from exc
    if summary is None:
        return 0
    print(format_summary(summary, config.out))
    warn_empty_files(summary, config.out, "ingest")
    hint = missing_hint(summary, config.out, "ingest")
    if hint:
        print(hint, file=sys.stderr)
    if empty(summary, "ingest", args.allow_empty):
        return 1
    return 0 if summary["balanced"] else 1


def watch(config, options, what: str = "ingest"):
    """Progress of a local ingest run: input files read of all matched (dumps, WARC and WET
    files), with the pages, records and articles counted so far."""
    from wikisum.pipeline import beamio

    return beamio.watch_job(
        what, options, "files",
        total=lambda: beamio.count_files(config.wiki + config.t2t_content + config.t2t_urls
                                         + config.warc + config.wet),
        others=("pages", "records", "articles"))


def format_summary(summary: dict, out: str) -> str:
    return "\n".join([f"ingest finished: {out}", *stage_lines(summary["stages"])])


def stage_lines(stages: dict, width: int = 15) -> list[str]:
    """A job summary's stages, a line each: in, kept and dropped by reason (the stage names in
    a column ``width`` wide), and a mark where the counts do not balance."""
    lines = []
    for stage, s in stages.items():
        dropped = ", ".join(f"{k} {v}" for k, v in s["dropped"].items()) or "none"
        mark = "" if s.get("balanced", True) else "  NOT BALANCED"
        lines.append(f"  {stage:{width}s} in {s['in']:>8d}  kept {s['kept']:>8d}  dropped: "
                     f"{dropped}{mark}")
    return lines


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
