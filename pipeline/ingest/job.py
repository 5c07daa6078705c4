"""The ingest job: its stages wired together, one labelled composite transform each (one box
in Dataflow's job graph), its rows and dead letters written as shards, and the commit that
makes them visible with ``summary.json`` last."""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import fields

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from wikisum.core import schemas, shards
from wikisum.core.accounting import job_summary, summary_json
from wikisum.core.outputs import INGEST_SUMMARY, article_shards_pattern, read_summary
from wikisum.core.records import PAGES, DeadLetter, stable_hash
from wikisum.pipeline import beamio, language
from wikisum.pipeline.beamio import (
    DEAD,
    TALLY,
    Commit,
    Staged,
    WriteShards,
    WriteSpilledShards,
)
from wikisum.pipeline.ingest import t2t
from wikisum.pipeline.ingest.articles import ReadArticles, citation_links
from wikisum.pipeline.ingest.assemble import FilterReferences
from wikisum.pipeline.ingest.config import MISSING_FILES, IngestConfig
from wikisum.pipeline.ingest.references import REDIRECTS, JoinReferences, ReadReferences
from wikisum.pipeline.ingest.search import SearchLinks

log = logging.getLogger("wikisum.ingest")

DEAD_LETTER_SHARDS = 2


def shard_paths(out: str, table: str, total: int) -> dict[int, str]:
    """Shard index -> final path of ``OUT/TABLE/TABLE-SSSSS-of-NNNNN.parquet``."""
    return {i: shards.shard_path(FileSystems.join(out, table), table, i, total)
            for i in range(total)}


def dead_letter_key(d: dict) -> tuple:
    return d["stage"], d["input_file"], d["record"], d["url"], d["reason"], d["error"]


def dead_letter_row(d: DeadLetter) -> dict:
    return {f.name: getattr(d, f.name) for f in fields(d)}


def dead_letter_shard(d: dict) -> int:
    return stable_hash(f"{d['input_file']}|{d['record']}|{d['url']}|{d['stage']}") % (
        DEAD_LETTER_SHARDS)


def summary_text(staged: list[Staged], counts: list, config: IngestConfig) -> str:
    """summary.json (:func:`~wikisum.core.accounting.job_summary`): every stage's in = kept
    + dropped from the tallies, and ``shards``, the number of files of each committed set."""
    folders = Counter(s.final.rsplit("/", 2)[-2] for s in staged if s.final.endswith(".parquet"))
    return summary_json(job_summary(
        "ingest", config, counts,
        shards={"articles": folders["articles"], "dead_letters": folders["dead_letters"]},
        corpora=list(config.corpora())))


def output_globs(out: str) -> list[str]:
    """What a run writes (and replaces) in ``out``, as globs."""
    return [article_shards_pattern(out),
            FileSystems.join(out, "dead_letters", "dead_letters-*.parquet"),
            *(FileSystems.join(out, name) for name in MISSING_FILES.values()),
            FileSystems.join(out, INGEST_SUMMARY)]


class StageUrlLists(beam.PTransform):
    """``{path: URLs}`` -> for each path one text file of its distinct URLs, sorted (an empty
    file where there are none), staged for the commit: the lists keyed by their number, every
    number given once more with no URL so that an empty list is written too."""

    def __init__(self, staging: str):
        super().__init__()
        self.staging = staging

    def expand(self, lists: dict):
        paths, staging = sorted(lists), self.staging
        tagged = [lists[path] | f"List{i}" >> beam.Map(lambda url, i=i: (i, url))
                  for i, path in enumerate(paths)]
        every = (lists[paths[0]].pipeline
                 | "EveryList" >> beamio.Values([(i, None) for i in range(len(paths))]))
        return ((*tagged, every) | "AllLists" >> beam.Flatten()
                | "Distinct" >> beam.CombinePerKey(beamio.DistinctSorted())
                | "Stage" >> beam.MapTuple(lambda i, urls: beamio.stage_text(
                    paths[i], staging, "".join(u + "\n" for u in urls))))


def read_articles(p: beam.Pipeline, config: IngestConfig):
    """The job's articles, and the outputs that account for them: the dump's, or the authors'
    (tensor2tensor's wiki_content) with the citations of a dump given beside them."""
    if not config.t2t_content:
        articles = p | "ReadArticles" >> ReadArticles(config.wiki, config.lang,
                                                       config.max_article_bytes)
        return articles, [articles]
    ours = p | "ReadT2TArticles" >> t2t.ReadT2TArticles(config.t2t_content)
    if not config.wiki:
        return ours, [ours]
    dump = p | "ReadArticles" >> ReadArticles(config.wiki, config.lang, config.max_article_bytes)
    matched = (ours["main"], dump["main"]) | "WithDumpCitations" >> t2t.WithDumpCitations()
    unmatched = p | "NoMatchLetters" >> beam.Create([])
    return matched, [ours, dump, {TALLY: matched[TALLY], DEAD: unmatched}]


def build(p: beam.Pipeline, config: IngestConfig, token: str) -> None:
    """Add the ingest job to pipeline ``p`` (no filesystem is touched here: the job matches its
    inputs when it runs, and stages its outputs under ``OUT/.temp-TOKEN``)."""
    out = config.out
    staging = beamio.temp_dir(out, token)
    articles, accounts = read_articles(p, config)
    listed = []
    if config.t2t_urls:  # the authors' lists: citations and search results in one
        t2t_links = articles["main"] | "T2TUrls" >> t2t.JoinT2TUrls(config.t2t_urls,
                                                                    labelled=bool(config.wiki))
        accounts.append(t2t_links)
        articles = t2t_links
        links = [t2t_links[t2t.LINKS_OUT]]
        listed.append(t2t_links[t2t.SEARCH_LISTED])
        cited = None
    else:
        cited = articles["main"] | "CitationLinks" >> beam.FlatMap(citation_links).with_outputs(
            TALLY, main="links")
        links = [cited.links]
    if config.search_results:
        search = articles["main"] | "SearchLinks" >> SearchLinks(config.search_results)
        links.append(search["links"])
        listed.append(search["listed"])
        accounts.append(search)
    search_listed = (listed | "SearchListed" >> beam.Flatten() if listed
                     else p | "NoSearchResults" >> beam.Create([]))
    references = p | "ReadReferences" >> ReadReferences(config.warc + config.wet, config.clean)
    joined = ((tuple(links), references["main"])
              | "JoinReferences" >> JoinReferences(references[REDIRECTS]))
    rows = ((articles["main"], joined["main"], search_listed)
            | "FilterReferences" >> FilterReferences(
                config.attach, config.num_shards,
                t2t.T2T_CONTENT if config.t2t_content else PAGES))
    accounts += [references, joined, rows]

    staged = [rows["main"] | "WriteShards" >> WriteShards(
        shard_paths(out, "articles", config.num_shards), staging, schemas.ARTICLES,
        lambda r: r["id"], config.buffer_bytes)]
    # Written to files by the steps that make them, not carried through a shuffle: their number
    # is not bounded by the input's size (a WARC of a million tiny 404 records makes a million).
    # Each shard is sorted in --shard-buffer, as the articles are.
    staged.append(tuple(a[DEAD] for a in accounts) | "WriteDeadLetters" >> WriteSpilledShards(
        shard_paths(out, "dead_letters", DEAD_LETTER_SHARDS), staging, schemas.DEAD_LETTERS,
        dead_letter_shard, dead_letter_key, config.buffer_bytes, to_row=dead_letter_row))
    staged.append({FileSystems.join(out, name): joined[tag] for tag, name in MISSING_FILES.items()}
                  | "StageMissingLists" >> StageUrlLists(staging))
    counts = ([a[TALLY] for a in accounts] + ([cited[TALLY]] if cited is not None else [])
              | "AllTallies" >> beam.Flatten()
              | "SumTallies" >> beamio.SumTallies())
    _ = (staged | "AllStaged" >> beam.Flatten()
         | "Commit" >> Commit(FileSystems.join(out, INGEST_SUMMARY),
                              lambda files, c: summary_text(files, c, config),
                              output_globs(out)[:-1], staging, side=[counts]))


def run(config: IngestConfig, pipeline_options) -> dict | None:
    """Run the job and return the summary it wrote; None for a dry run (``--dry_run true`` on
    Dataflow: the job is built and validated, nothing is read or written)."""
    log.info("ingest: dumps %s, WARC %s, WET %s -> %s", ", ".join(config.wiki + config.t2t_content),
             ", ".join(config.warc) or "none", ", ".join(config.wet) or "none", config.out)
    if not config.warc and not config.wet:
        log.warning("no --warc or --wet input: every reference will be missing")
    if config.clean.identify_language and beamio.workers_in_this_process(pipeline_options):
        language.preload()  # while the job is built and translated
    token = beamio.new_token()
    writes = [beamio.describe_set(list(shard_paths(config.out, "articles",
                                                   config.num_shards).values())),
              beamio.describe_set(list(shard_paths(config.out, "dead_letters",
                                                   DEAD_LETTER_SHARDS).values())),
              *output_globs(config.out)[2:]]
    if not beamio.launch("ingest", pipeline_options, lambda p: build(p, config, token), writes):
        return None
    return read_summary(config.out)
