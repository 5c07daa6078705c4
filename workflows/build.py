"""``wikisum build``: ingest, vocab and rank in sequence with one set of options."""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys

from wikisum.core import progress, vocab_config
from wikisum.pipeline.ccfetch.records import CcFetchConfig
from wikisum.workflows import checks
from wikisum.workflows import ingest as ingest_cmd
from wikisum.workflows import rank as rank_cmd

HELP = "ingest + vocab + rank in one go: from dump and crawl to training shards"
DESCRIPTION = """\
Run the three stage-one jobs in sequence with one set of options:

  OUT/ingest        `wikisum ingest` (articles + references, clone-filtered)
  OUT/vocab.model   `wikisum vocab` (sentencepiece, shared by inputs and targets)
  OUT/data          `wikisum rank` (training shards with every extractor x corpus ranking;
                    the learned extractor is fitted first unless --no-learned)
  OUT/README.md     dataset card: `datasets.load_dataset("OUT")` gives train/dev/test of
                    the ready model inputs (--model-inputs; the first is the default)

The trainers read OUT/data (pipeline.loader.Dataset), or OUT itself. Shards: --ingest-shards
article shards in OUT/ingest, --shards training shards per split in OUT/data.

With --search local:INDEX (a `wikisum search-index` output) or --search ENGINE (a web search
API: google, brave, searxng), the dump's titles are searched first (`wikisum search`, into
OUT/search/results.jsonl) and the results join the articles as their search-result references,
the paper's second half of the corpus beside the citations.

With --fetch-missing cc[,crawl], the references no --warc/--wet file holds are fetched first:

  OUT/fetch/ingest  an ingest of the given inputs (missing_urls.txt, missing_search_urls.txt)
  OUT/fetch/cc      `wikisum cc-fetch` of those lists (Common Crawl's index, --cc-* options)
  OUT/fetch/crawl   `wikisum crawl` of what cc did not fetch (the live web, politely)

then OUT/ingest reads the given inputs and the fetched WARC files, and the summary counts the
references each route brought. OUT/build-steps.json records each finished step with a
fingerprint of its settings and inputs: a rerun skips what is done.
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("build", help=HELP, description=DESCRIPTION,
                              epilog="Beam pipeline options are passed through to both Beam "
                                     "jobs (see `wikisum ingest --help`).\n" + checks.SIZES,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    ingest_cmd.add_arguments(p, shards_option="--ingest-shards")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory")
    p.add_argument("--vocab-size", type=checks.count(16), default=vocab_config.DEFAULT_SIZE,
                   metavar="N", help="vocabulary size, an upper bound (default: %(default)s)")
    p.add_argument("--max-texts", type=checks.count(1), default=vocab_config.DEFAULT_MAX_TEXTS,
                   metavar="N",
                   help="texts sampled to train the vocabulary (default: %(default)s)")
    p.add_argument("--no-learned", dest="train_learned", action="store_false",
                   help="do not fit the learned extractor")
    add_search_arguments(p)
    add_fetch_arguments(p)
    rank_cmd.add_arguments(p)
    p.set_defaults(func=run, beam_args=True, train_learned=True)


def run(args: argparse.Namespace, beam_argv: list[str] | None = None) -> int:
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import PipelineOptions

    from wikisum.core import card, ownership, shards, vocab
    from wikisum.core import outputs as job_outputs
    from wikisum.pipeline import beamio, buildsteps, rank

    logging.getLogger("wikisum").setLevel(progress.log_level())
    options = PipelineOptions(beam_argv or [])
    ingest_dir = FileSystems.join(args.out, "ingest")
    vocab_path = FileSystems.join(args.out, "vocab.model")
    data_dir = FileSystems.join(args.out, "data")
    dry = beamio.is_dry_run(options)
    if dry:
        return dry_run(args, options, ingest_dir, vocab_path, data_dir)
    routes = fetch_routes(args)
    search = search_source(args)
    ingest_cmd.check_inputs(args, args.out, "build")
    rank_cmd.check_learned(args, "build")
    checks.input_files([path for path in args.cc_columnar_index or [] if "://" not in path],
                       "--cc-columnar-index", "build")
    claim_parts(ingest_dir, vocab_path, data_dir)
    lang = ingest_cmd.article_language(args, "build")  # once, for every ingest of the build
    steps = buildsteps.Steps(args.out)
    total = 3 + (2 + len(routes) if routes else 0) + (1 if search else 0)
    step = iter(range(1, total + 1))
    try:
        if search:
            args.search_results = run_search(args, search, options, steps,
                                             f"build [{next(step)}/{total}] search")
            if args.search_results is None:
                return 1
        fetched: dict[str, str] = {}
        if routes:
            fetched = fetch_missing(args, options, routes, steps, step, total, lang)
            if fetched is None:
                return 1
        warc = tuple(args.warc) + tuple(FileSystems.join(d, "warc", "*.warc.gz")
                                         for d in fetched.values())
        config = dataclasses.replace(
            ingest_cmd.config_from_args(args, ingest_dir, lang, "build"), warc=warc)
        summary = run_ingest(config, options, steps, "ingest",
                             f"build [{next(step)}/{total}] ingest")
        progress.say(ingest_cmd.format_summary(summary, ingest_dir))
        if fetched:
            by_route = buildsteps.references_by_route(
                job_outputs.article_shards(ingest_dir), fetched)
            print("build: references by route: " + ", ".join(
                f"{route} {n}" for route, n in by_route.items()))
        if ingest_cmd.empty(summary, "build", args.allow_empty):
            return 1
        if not summary["balanced"]:
            print("build: ingest accounting is not balanced; stopping")
            return 1
        if not ingest_cmd.has_references(summary):
            print(ingest_cmd.missing_hint(summary, ingest_dir, "build", fetched=bool(routes)),
                  file=sys.stderr)
            return 1
        hint = ingest_cmd.missing_hint(summary, ingest_dir, "build", fetched=bool(routes))
        if hint:
            print(hint, file=sys.stderr)
        fp = buildsteps.fingerprint((args.max_texts, args.vocab_size, lang,
                                     steps.done.get("ingest")))
        if steps.is_done("vocab", fp, vocab_path):
            progress.say(f"build [{next(step)}/{total}] vocab: done ({vocab_path})")
        else:
            progress.say(f"build [{next(step)}/{total}] vocab -> {vocab_path}")
            steps.forget("vocab")
            with ownership.guarded("vocab", [ownership.Output("--out", vocab_path, "file")]):
                vocab.train_vocab(vocab.training_texts(ingest_dir, args.max_texts), vocab_path,
                                  args.vocab_size, lang=lang)
            steps.finish("vocab", fp)
        fp = buildsteps.fingerprint((args.train_learned, args.learned, args.learned_articles,
                                     args.model_inputs, args.rank_shards,
                                     steps.done.get("vocab")), args.learned or ())
        record = FileSystems.join(data_dir, "dataset.json")
        n = next(step)
        if steps.is_done("rank", fp, record):
            progress.say(f"build [{n}/{total}] rank: done ({data_dir})")
            info = json.loads(shards.read_text(record))
        else:
            progress.say(f"build [{n}/{total}] rank -> {data_dir}")
            steps.forget("rank")
            model = rank_cmd.learned_model(args, ingest_dir, data_dir)
            with rank_cmd.watch(ingest_dir, options, f"build [{n}/{total}] rank"):
                info = rank.run(rank_cmd.with_model_inputs(args, rank.RankConfig(
                    ingest_dir, vocab_path, data_dir, model, args.rank_shards,
                    args.shard_buffer)), options)
            if info["errors"] == 0:
                steps.finish("rank", fp)
        # The build's own card: `datasets.load_dataset(OUT)` reads OUT/data's configs.
        card.write_card(args.out, info, prefix="data/")
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum build: {exc}") from exc
    print(f"build finished: {info['rows']} articles, {info['vocab_size']} subwords, "
          f"extractors {', '.join(info['extractors'])} x corpora "
          f"{', '.join(info['corpora'])}\n  training shards: {data_dir}")
    return 0 if info["errors"] == 0 else 1


ROUTES = ("cc", "crawl")
SEARCH_ENGINES = ("google", "brave", "searxng")


def add_search_arguments(p) -> None:
    g = p.add_argument_group(
        "search results (--search)",
        "Search the dump's titles before ingest (`wikisum search`) and join the results as "
        "the articles' search-result references (OUT/search/results.jsonl).")
    g.add_argument("--search", metavar="SOURCE",
                   help="local:INDEX, an index built by `wikisum search-index`, or a web search "
                        f"API: {', '.join(SEARCH_ENGINES)} (its key from the environment: "
                        "docs/web-search.md)")
    g.add_argument("--search-arg", action="append", default=[], metavar="ARG",
                   help="an option passed on to `wikisum search` (repeatable), e.g. "
                        "--search-arg=--k=5 or --search-arg=--endpoint=URL")


def search_source(args) -> tuple[str, str] | None:
    """--search as ("local", INDEX) or ("engine", NAME); None without it; a usage error for
    anything else."""
    if not args.search:
        if args.search_arg:
            raise SystemExit("wikisum build: --search-arg needs --search")
        return None
    if args.search_results:
        raise SystemExit("wikisum build: give --search (search here) or --search-results "
                         "(results made before), not both")
    if not args.wiki:
        raise SystemExit("wikisum build: --search searches the titles of a dump: give --wiki")
    kind, _, value = args.search.partition(":")
    if kind == "local" and value:
        return "local", value
    if args.search in SEARCH_ENGINES:
        return "engine", args.search
    raise SystemExit(f"wikisum build: --search takes local:INDEX or one of "
                     f"{', '.join(SEARCH_ENGINES)}, got {args.search!r}")


def run_search(args, search: tuple[str, str], options, steps, what: str) -> str | None:
    """`wikisum search` of the dumps' titles into OUT/search/results.jsonl, skipped when done
    with the same settings and inputs; the results path, or None when the search failed (its
    reason printed)."""
    from apache_beam.io.filesystems import FileSystems

    from wikisum.core import ownership
    from wikisum.pipeline import buildsteps
    from wikisum.pipeline.search.results import summary_path
    from wikisum.workflows import search as search_cmd

    out = FileSystems.join(args.out, "search", "results.jsonl")
    kind, value = search
    argv = ["search", "--out", out, *(f"--wiki={d}" for d in args.wiki),
            f"--index={value}" if kind == "local" else f"--engine={value}", *args.search_arg]
    sub = sub_args(search_cmd, argv)
    fp = buildsteps.fingerprint(argv, tuple(args.wiki) + (
        (FileSystems.join(value, "index.json"),) if kind == "local" else ()))
    if steps.is_done("search", fp, summary_path(out)):
        progress.say(f"{what}: done ({out})")
        return out
    progress.say(f"{what} -> {out}")
    steps.forget("search")
    try:
        with ownership.guarded("search", search_cmd.outputs(sub)):
            code = (search_cmd.websearch.run(sub, search_cmd.iter_titles(sub)) if kind == "engine"
                    else search_cmd.run_local(sub, options=options))
    except ownership.NotOurs as exc:
        raise SystemExit(f"wikisum build: {exc}") from None
    if code != 0:
        print(f"wikisum build: the search did not finish whole ({summary_path(out)}); fix what "
              "it says and rerun the build, which resumes", file=sys.stderr)
        return None
    steps.finish("search", fp)
    return out


def add_fetch_arguments(p) -> None:
    """--fetch-missing and the options of the routes it runs."""
    cc = CcFetchConfig(urls=(), out="")  # cc-fetch's defaults
    g = p.add_argument_group(
        "fetching missing references (--fetch-missing)",
        "Ingest first to learn which cited and search-result pages no --warc/--wet file holds "
        "(OUT/fetch/ingest/missing_urls.txt, missing_search_urls.txt), fetch them, then "
        "ingest again with what was fetched. Each step is resumable: a rerun skips what is "
        "done, and cc-fetch and crawl skip the URLs they settled.")
    g.add_argument("--fetch-missing", metavar="ROUTES",
                   help="cc: look the missing URLs up in Common Crawl's index and fetch their "
                        "captures (`wikisum cc-fetch`, into OUT/fetch/cc); crawl: fetch what is "
                        "still missing from the live web, politely (`wikisum crawl`, into "
                        "OUT/fetch/crawl); cc,crawl: both, in that order")
    g.add_argument("--cc-crawl", action="append", metavar="CRAWL",
                   help="Common Crawl crawl to search, e.g. CC-MAIN-2017-13 (repeatable, in "
                        "order; needed with --cc-source api)")
    g.add_argument("--cc-source", choices=("api", "columnar"), default=cc.source,
                   help="cc-fetch's index: the URL index server or the columnar table "
                        "(default: %(default)s)")
    g.add_argument("--cc-index-url", metavar="BASE",
                   help=f"URL index server (default: {cc.index_url})")
    g.add_argument("--cc-data-url", metavar="BASE",
                   help=f"where the WARC files are (default: {cc.data_url})")
    g.add_argument("--cc-columnar-index", action="append", metavar="GLOB",
                   help="Parquet files of the URL table (--cc-source columnar)")
    g.add_argument("--cc-before", metavar="DATE",
                   help="captures closest to and not after this date, e.g. the dump's")
    g.add_argument("--cc-index-rate", type=checks.number(0, 1000, low_open=True), metavar="R",
                   help=f"index requests per second per worker (default: {cc.index_rate})")
    g.add_argument("--cc-retries", type=checks.count(0, 20), metavar="N",
                   help=f"cc-fetch's extra tries on timeouts, connection errors and 5xx "
                        f"(default: {cc.retries})")
    g.add_argument("--crawl-delay", type=checks.number(0, 3600), metavar="S",
                   help="crawl: seconds between requests to one host (default: crawl's)")
    g.add_argument("--crawl-allow-private", action="store_true",
                   help="crawl: allow loopback and private addresses (local test sites)")


def fetch_routes(args) -> tuple[str, ...]:
    """--fetch-missing's routes, in the order they run; a usage error for anything else."""
    if not args.fetch_missing:
        return ()
    routes = tuple(dict.fromkeys(r.strip() for r in args.fetch_missing.split(",") if r.strip()))
    unknown = [r for r in routes if r not in ROUTES]
    if unknown or not routes:
        raise SystemExit(f"wikisum build: --fetch-missing takes cc, crawl or cc,crawl, got "
                         f"{args.fetch_missing!r}")
    if "cc" in routes and args.cc_source == "api" and not args.cc_crawl:
        raise SystemExit("wikisum build: --fetch-missing cc needs --cc-crawl CRAWL (e.g. "
                         "CC-MAIN-2017-13, a crawl near the dump's date), or --cc-source "
                         "columnar")
    return tuple(r for r in ROUTES if r in routes)


def run_ingest(config, options, steps, name: str, what: str) -> dict:
    """One ingest, skipped when ``steps`` says it finished with the same settings and
    inputs (its summary is read back)."""
    from wikisum.core import outputs
    from wikisum.pipeline import buildsteps, ingest

    fp = buildsteps.fingerprint(config, config.wiki + config.t2t_content + config.t2t_urls
                               + config.warc + config.wet + (
        (config.search_results,) if config.search_results else ()))
    record = f"{config.out.rstrip('/')}/{outputs.INGEST_SUMMARY}"
    if steps.is_done(name, fp, record):
        progress.say(f"{what}: done ({config.out})")
        return outputs.read_summary(config.out)
    progress.say(f"{what} -> {config.out}")
    steps.forget(name)
    with ingest_cmd.watch(config, options, what):
        summary = ingest.run(config, options)
    steps.finish(name, fp)
    return summary


def fetch_missing(args, options, routes, steps, step, total, lang: str
                  ) -> dict[str, str] | None:
    """Ingest the given inputs (articles in ``lang``) to learn which references are missing,
    then fetch those from Common Crawl (cc) and what is still missing from the live web
    (crawl), each into OUT/fetch/ROUTE. Returns {route: its folder}; None when the network
    failed a route whole (the reason printed)."""
    from apache_beam.io.filesystems import FileSystems

    from wikisum.core import ownership
    from wikisum.pipeline import ingest

    fetch = FileSystems.join(args.out, "fetch")
    first = FileSystems.join(fetch, "ingest")
    for command, folder in [("ingest", first)] + [
            ({"cc": "cc-fetch", "crawl": "crawl"}[r], FileSystems.join(fetch, r))
            for r in routes]:
        try:
            ownership.check_dir(folder, command)
        except ownership.NotOurs as exc:
            raise SystemExit(f"wikisum build: {exc}") from None
        ownership.claim_dir(folder, command)
    config = ingest_cmd.config_from_args(args, first, lang, "build")
    run_ingest(config, options, steps, "ingest-missing",
                         f"build [{next(step)}/{total}] ingest (to find missing references)")
    lists = [FileSystems.join(first, name) for name in ingest.MISSING_FILES.values()]
    progress.say("  missing: " + ", ".join(
        f"{count_lines(path)} in {path}" for path in lists))
    done: dict[str, str] = {}
    for route in routes:
        folder = FileSystems.join(fetch, route)
        urls = lists if route == "cc" or not done else [still_missing(lists, done, folder)]
        progress.say(f"build [{next(step)}/{total}] {route}: fetch missing references -> "
                     f"{folder}")
        if not any(count_lines(u) for u in urls):
            progress.say(f"  nothing missing: {route} skipped")
            done[route] = folder
            continue
        failure = (fetch_cc(args, options, urls, folder) if route == "cc"
                   else fetch_crawl(args, options, urls, folder))
        if failure:
            print(f"wikisum build: {failure}", file=sys.stderr)
            return None
        done[route] = folder
    return done


def count_lines(path: str) -> int:
    from apache_beam.io.filesystems import FileSystems

    from wikisum.core import shards

    if not FileSystems.exists(path):
        return 0
    return sum(1 for line in shards.read_text(path).splitlines() if line.strip())


def still_missing(lists: list[str], done: dict[str, str], folder: str) -> str:
    """The URLs of ``lists`` that no earlier route fetched, written to FOLDER/urls.txt."""
    from apache_beam.io.filesystems import FileSystems

    from wikisum.core import shards
    from wikisum.pipeline.urls import normalize_url

    fetched: set[str] = set()
    for earlier in done.values():
        for path in shards.match(FileSystems.join(earlier, "log", "*.parquet")):
            for row in shards.iter_rows([path], columns=["url", "outcome"]):
                if row["outcome"] == "fetched":
                    fetched.add(normalize_url(row["url"]) or row["url"])
    urls = []
    for path in lists:
        if FileSystems.exists(path):
            urls += [u for u in shards.read_text(path).splitlines()
                     if u.strip() and (normalize_url(u) or u) not in fetched]
    target = FileSystems.join(folder, "urls.txt")
    shards.write_text(target, "".join(u + "\n" for u in urls))
    return target


def fetch_cc(args, options, urls: list[str], folder: str) -> str | None:
    """cc-fetch of ``urls`` into ``folder`` with cc-fetch's own defaults and build's --cc-*
    options; the network-failure line, or None."""
    from wikisum.pipeline import ccfetch
    from wikisum.workflows import ccfetch as ccfetch_cmd

    argv = ["cc-fetch", "--out", folder, "--source", args.cc_source]
    for url_list in urls:
        argv += ["--urls", url_list]
    for crawl in args.cc_crawl or []:
        argv += ["--crawl", crawl]
    for glob in args.cc_columnar_index or []:
        argv += ["--columnar-index", glob]
    for option, value in (("--index-url", args.cc_index_url), ("--data-url", args.cc_data_url),
                          ("--before", args.cc_before), ("--index-rate", args.cc_index_rate),
                          ("--retries", args.cc_retries)):
        if value is not None:
            argv += [option, str(value)]
    config = ccfetch_cmd.config_from_args(sub_args(ccfetch_cmd, argv))
    with ccfetch_cmd.watch(config.urls, options):
        summary = ccfetch.run(config, options)
    say_summary(ccfetch_cmd.format_summary(summary, folder))
    return ccfetch_cmd.network_failure(summary)


def fetch_crawl(args, options, urls: list[str], folder: str) -> str | None:
    """crawl of ``urls`` into ``folder`` (crawl's polite defaults, build's --crawl-* options);
    the network-failure line, or None."""
    from wikisum.pipeline import crawl
    from wikisum.workflows import crawl as crawl_cmd

    argv = ["crawl", "--out", folder]
    for url_list in urls:
        argv += ["--urls", url_list]
    if args.crawl_allow_private:
        argv.append("--allow-private")
    if args.crawl_delay is not None:
        argv += ["--delay", str(args.crawl_delay)]
    config = crawl_cmd.config_from_args(sub_args(crawl_cmd, argv))
    with crawl_cmd.watch(config.urls, options):
        summary = crawl.run(config, options)
    say_summary(crawl_cmd.format_summary(summary, folder))
    return crawl_cmd.network_failure(summary)


def say_summary(text: str) -> None:
    """A fetch job's closing lines inside a build: its outcomes, without the advice on reading
    its WARC files (the build reads them next); all of it under --verbose."""
    lines = text.splitlines()
    cut = next((i for i, line in enumerate(lines) if line.startswith("  WARC files")), len(lines))
    progress.say("\n".join(lines[:cut]))
    progress.detail("\n".join(lines[cut:]))


def sub_args(module, argv: list[str]) -> argparse.Namespace:
    """``argv`` parsed by another command's own parser: its defaults, its checks."""
    parser = argparse.ArgumentParser(prog="wikisum")
    module.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def claim_parts(ingest_dir: str, vocab_path: str, data_dir: str) -> None:
    """The build's parts, each the output of the command that makes it alone (so that `wikisum
    vocab --out OUT/vocab.model` or `wikisum rank --out OUT/data` may redo one), checked and
    claimed before the first job starts."""
    from wikisum.core import ownership

    parts = [("ingest", ownership.Output("--out", ingest_dir, "dir")),
             ("vocab", ownership.Output("--out", vocab_path, "file")),
             ("rank", ownership.Output("--out", data_dir, "dir"))]
    try:
        for command, part in parts:
            ownership.Guard(command, [part]).check()
    except ownership.NotOurs as exc:
        raise SystemExit(f"wikisum build: {exc}") from None
    for command, part in parts:
        if part.kind == "dir":
            ownership.claim_dir(part.path, command)


def dry_run(args, options, ingest_dir: str, vocab_path: str, data_dir: str) -> int:
    """Both Beam jobs built and validated (``--dry_run true``); the vocabulary, trained on the
    launching machine between them, is only named."""
    from wikisum.pipeline import ingest, rank

    try:
        ingest_config = ingest_cmd.config_from_args(
            args, ingest_dir, ingest_cmd.article_language(args, "build", read_dump=False),
            "build")
        ingest.run(ingest_config, options)
        print(f"wikisum build: the vocabulary would be trained here, between the jobs -> "
              f"{vocab_path}")
        model = rank_cmd.learned_model(args, ingest_dir, data_dir, dry_run=True)
        rank.run(rank_cmd.with_model_inputs(args, rank.RankConfig(
            ingest_dir, vocab_path, data_dir, model, args.rank_shards, args.shard_buffer,
            corpora=ingest_config.corpora()), dry_run=True), options)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum build: {exc}") from exc
    return 0


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
