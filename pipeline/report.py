"""``wikisum report``: the paper's extractive analyses on any built dataset, as a Beam job.

The job reads the split's ranked rows, scores each article (:mod:`.report_scores`: extractive
ROUGE, input recall vs L, the per-article view), combines the scores into means with 95%
intervals (:mod:`.report_bootstrap`) and computes the dataset statistics
(:mod:`.report_stats`); the launcher then assembles metrics.json from what the job wrote, with
what to pick (:mod:`.report_recommend`). Two builds' metrics are compared by
:mod:`.report_compare`, and rendered into report.md and report.html by
:mod:`.report_render`.

The configuration (:class:`ReportConfig`, the defaults) is in
:mod:`wikisum.pipeline.report_config`, which the command line reads without importing Beam.
"""

from __future__ import annotations

import json
import os
import time

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from wikisum.core import language, loader, shards, vocab
from wikisum.core import rouge as multilingual
from wikisum.core.progress import WorkerProgress
from wikisum.core.records import stable_hash
from wikisum.pipeline import beamio
from wikisum.pipeline.report_bootstrap import BootstrapMeans
from wikisum.pipeline.report_compare import compare  # noqa: F401 (workflows/report.py calls it)
from wikisum.pipeline.report_config import ReportConfig
from wikisum.pipeline.report_recommend import recommend
from wikisum.pipeline.report_scores import (
    ROUGE_TYPES,
    VIEW_ARTICLES,
    Scorers,
    article_metrics,
    article_view,
    flat_values,
)
from wikisum.pipeline.report_stats import (
    PERCENTILES,
    STAT_NAMES,
    DatasetStatistics,
    ingest_drops,
)


class ScoreArticles(beam.DoFn):
    """Ranked rows -> per-article metrics, counted (WorkerProgress). What to score (extractors,
    corpora, the vocabulary) comes from the dataset's ``info`` (a side input read by the job),
    loaded on the first row."""

    def __init__(self, lengths: list[int], sample: int | None):
        self.lengths, self.sample = lengths, sample
        self.vocab_path = None

    def setup(self):
        self.scorers = None
        self.progress = WorkerProgress("report", "articles")

    def finish_bundle(self):
        self.progress.flush()

    def process(self, row, info):
        if self.vocab_path != info["vocab_path"]:
            self.vocab_path = info["vocab_path"]
            self.sp = vocab.load(self.vocab_path)
        if self.scorers is None or self.scorers.lang != info["language"]:
            self.scorers = Scorers.create(info["language"])
        self.progress.update()
        if not row["lead"].strip():
            beam.metrics.Metrics.counter("report", "skipped:empty_lead").inc()
            return
        metrics = article_metrics(row, info["extractors"], info["corpora"], self.lengths,
                                  self.scorers, self.sp.decode)
        beam.metrics.Metrics.counter("report", "scored").inc()
        yield metrics


def dataset_info(config: ReportConfig) -> dict:
    """What the job needs to know of the dataset, read by the job itself: dataset.json checked
    (:func:`check_dataset`), the vocabulary's path and the split's size."""
    info, vocab_path = check_dataset(config)
    return {"extractors": list(info["extractors"]), "corpora": list(info["corpora"]),
            "vocab_path": vocab_path, "language": info.get("language"),
            "expected": info["rows"].get(config.split, 0),
            "source": info.get("source"),
            # an imported dataset: where from, and the extractors that could not rank it
            "imported": info.get("imported"),
            "extractors_unavailable": info.get("extractors_unavailable") or {},
            "corpora_note": info.get("corpora_note")}


class ReadRanked(beam.PTransform):
    """The split's shards of a dataset, checked whole by the job (``dataset.json``), read by
    row group; with ``sample`` only the articles with the smallest stable hashes of their id."""

    def __init__(self, data: str, split: str, sample: int | None):
        super().__init__()
        self.data, self.split, self.sample = data, split, sample

    def expand(self, pbegin):
        split = self.split
        rows = (pbegin | "Dataset" >> beam.Create([self.data])
                | "SplitShards" >> beam.FlatMap(lambda d: loader.Dataset(d).files(split))
                | "Spread" >> beam.Reshuffle()
                | "ReadParquet" >> beam.io.ReadAllFromParquet())
        if self.sample:
            rows = (rows | "Sample" >> beam.combiners.Top.Smallest(
                        self.sample, key=lambda r: stable_hash(str(r["id"])))
                    | "Unpack" >> beam.FlatMap(lambda rs: rs))
        return rows


def build(p: beam.Pipeline, config: ReportConfig, work: str) -> None:
    """Add the report job to pipeline ``p`` (no filesystem is touched here: the job reads
    dataset.json and matches the shards when it runs)."""
    lengths = list(config.lengths)
    info = p | "DatasetInfo" >> beam.Create([config]) | "ReadInfo" >> beam.Map(dataset_info)
    rows = p | "ReadRanked" >> ReadRanked(config.data, config.split, config.sample)
    scored = (rows
              | "ScoreArticles" >> beam.ParDo(ScoreArticles(lengths, config.sample),
                                              beam.pvalue.AsSingleton(info)))
    _ = (scored | "PerArticleJson" >> beam.Map(json.dumps)
         | "WritePerArticle" >> beam.io.WriteToText(
             FileSystems.join(work, "per_article"), file_name_suffix=".jsonl"))
    _ = (scored | "Flatten" >> beam.Map(lambda m: (m["id"], flat_values(m, lengths)))
         | "Bootstrap" >> beam.CombineGlobally(BootstrapMeans(config.bootstrap, config.seed,
                                                             keep_replicates=True))
         | "MeansJson" >> beam.Map(json.dumps)
         | "WriteMeans" >> beam.io.WriteToText(FileSystems.join(work, "means"),
                                               file_name_suffix=".json", num_shards=1))
    # The per-article view: the scored articles with the smallest stable hashes of their id
    # (the same articles for every run on the same data).
    _ = (rows | "ViewCandidates" >> beam.Filter(lambda r: bool(r["lead"].strip()))
         | "ViewArticles" >> beam.combiners.Top.Smallest(
             VIEW_ARTICLES, key=lambda r: stable_hash(str(r["id"])))
         | "ViewUnpack" >> beam.FlatMap(lambda rs: rs)
         | "View" >> beam.Map(lambda r, i: article_view(r, i["extractors"], i["corpora"]),
                              beam.pvalue.AsSingleton(info))
         | "ViewJson" >> beam.Map(json.dumps)
         | "WriteViews" >> beam.io.WriteToText(FileSystems.join(work, "views"),
                                               file_name_suffix=".jsonl", num_shards=1))
    stats = scored | "DatasetStatistics" >> DatasetStatistics(info)
    for name in ("quantiles", "totals"):
        _ = (stats[name] | f"{name.title()}Json" >> beam.Map(json.dumps)
             | f"Write{name.title()}" >> beam.io.WriteToText(
                 FileSystems.join(work, name), file_name_suffix=".jsonl", num_shards=1))


def find_vocab(data_dir: str, info: dict) -> str:
    """The sentencepiece model of a dataset: dataset.json's path, else ``../vocab.model``."""
    candidates = [info.get("vocab") or "",
                  FileSystems.join(os.path.dirname(data_dir.rstrip("/")), "vocab.model"),
                  FileSystems.join(data_dir, "vocab.model")]
    for path in candidates:
        if path and FileSystems.exists(path):
            return path
    raise FileNotFoundError(f"the dataset's vocabulary ({info.get('vocab')}) was not found; "
                            f"put it at {candidates[1]}")


def _read_lines(pattern: str) -> list[str]:
    out = []
    for path in shards.match(pattern):
        out.extend(line for line in shards.read_text(path).splitlines() if line.strip())
    return out


def check_dataset(config: ReportConfig) -> tuple[dict, str]:
    """dataset.json and the vocabulary, or a clear error about what the directory is not."""
    # (A gs:// "directory" is a prefix, not an object: there, dataset.json's absence says it.)
    if "://" not in config.data and not os.path.isdir(config.data):
        raise FileNotFoundError(f"{config.data} does not exist; pass the data directory written "
                                "by `wikisum build` (OUT/data) or `wikisum rank`")
    data = loader.Dataset(config.data)
    info = data.info
    if info.get("kind", "ranked") != "ranked":
        raise ValueError(f"{config.data} holds {info['kind']} data; the report compares "
                         "extractors on WikiSum data built by `wikisum build`")
    if not data.files(config.split):
        available = [s for s in ("train", "dev", "test") if data.files(s)]
        raise FileNotFoundError(f"no {config.split} shards in {config.data}; splits with "
                                f"shards: {', '.join(available) or 'none'}")
    if not any(info["rows"].values()):
        raise ValueError(f"{config.data} has no articles (dataset.json rows: {info['rows']})")
    if info["rows"].get(config.split, 0) == 0:
        raise ValueError(f"the {config.split} split of {config.data} has no articles; "
                         f"rows per split: {info['rows']}; choose another with --split")
    if list(config.lengths) != sorted(set(config.lengths)) or min(config.lengths) < 1:
        raise ValueError(f"--lengths must be distinct positive integers in ascending order, "
                         f"got {list(config.lengths)}")
    return info, find_vocab(config.data, info)


def run(config: ReportConfig, pipeline_options) -> dict | None:
    """Run the job; return the metrics dict (what metrics.json holds); None for a dry run.

    The job writes its per-article scores, bootstrap means and statistics into OUT/work; the
    launcher then assembles metrics.json from them (a dry run skips both)."""
    work = FileSystems.join(config.out, "work")
    dry = beamio.is_dry_run(pipeline_options)
    if not dry:
        info = check_dataset(config)[0]
        shards.delete(FileSystems.join(work, "*"))
    started = time.monotonic()
    if not beamio.launch("report", pipeline_options, lambda p: build(p, config, work),
                         [FileSystems.join(work, "*"), *(FileSystems.join(config.out, name)
                          for name in ("per_article.jsonl", "metrics.json", "report.html",
                                       "report.md", "figures/*.png"))]):
        return None
    per_article = [json.loads(line) for line in
                   _read_lines(FileSystems.join(work, "per_article*.jsonl"))]
    per_article.sort(key=lambda m: m["id"])
    if not per_article:
        raise ValueError(f"no article of the {config.split} split could be scored "
                         "(all leads empty?)")
    means = json.loads(_read_lines(FileSystems.join(work, "means*.json"))[0])
    quantiles = dict(json.loads(line) for line in
                     _read_lines(FileSystems.join(work, "quantiles*.jsonl")))
    totals = dict(json.loads(line) for line in _read_lines(FileSystems.join(work, "totals*.jsonl")))
    views = [json.loads(line) for line in _read_lines(FileSystems.join(work, "views*.jsonl"))]
    shards.write_text(FileSystems.join(config.out, "per_article.jsonl"),
                      "".join(json.dumps(m) + "\n" for m in per_article))
    shards.delete(FileSystems.join(work, "*"))
    replicates = {key: m.pop("replicates") for key, m in means.items() if "replicates" in m}
    metrics = assemble(config, info, means, quantiles, totals, per_article,
                       ingest_drops(info.get("source")), replicates=replicates, views=views,
                       provenance=provenance(config))
    metrics["seconds"] = round(time.monotonic() - started, 1)
    return metrics


def provenance(config: ReportConfig) -> dict:
    """What made the report: the wikisum version, when, on which data, with which options."""
    import datetime

    from wikisum import __version__

    data = config.data if "://" in config.data else os.path.abspath(config.data)
    return {"wikisum_version": __version__,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "data": data,
            "options": {"split": config.split, "lengths": list(config.lengths),
                        "limit": config.sample, "bootstrap": config.bootstrap,
                        "seed": config.seed}}


def assemble(config: ReportConfig, info: dict, means: dict, quantiles: dict, totals: dict,
             per_article: list[dict], drops: dict | None = None, replicates: dict | None = None,
             views: list[dict] | None = None, provenance: dict | None = None) -> dict:
    """The metrics.json structure from the job's outputs (pure); `drops` is `ingest_drops`,
    `replicates` the bootstrap replicate means by metric key (for the paired comparisons; not
    written out), `views` the per-article view (:func:`article_view`)."""
    extractor_names, corpora = list(info["extractors"]), list(info["corpora"])
    lengths = list(config.lengths)
    rouge = {e: {c: {t: means[f"rouge|{e}|{c}|{t}"] for t in ROUGE_TYPES} for c in corpora}
             for e in extractor_names}
    recall = {e: {c: [dict(means[f"recall|{e}|{c}|{n}"], length=n) for n in lengths]
                  for c in corpora} for e in extractor_names}
    stats = None
    if quantiles:
        stats = {"percentiles": list(PERCENTILES),
                 "words": {name: [quantiles[name][p] for p in PERCENTILES] if name in quantiles
                           else None for name in STAT_NAMES},
                 "totals": totals, "ingest_drops": drops}
        listed, found = totals.get("citations_listed", 0), totals.get("citations_found", 0)
        stats["citation_coverage"] = found / listed if listed else None
        s_listed, s_found = totals.get("search_listed", 0), totals.get("search_found", 0)
        stats["search_coverage"] = s_found / s_listed if s_listed else None
    metrics = {
        "data": config.data,
        "source": info.get("source"),
        "split": config.split,
        "articles": len(per_article),
        "sample": config.sample,
        "lengths": lengths,
        "extractors": extractor_names,
        "corpora": corpora,
        "rouge_types": list(ROUGE_TYPES),
        "language": info.get("language"),
        "rouge_tokenizer": ("rouge-score's English tokenizer, Porter stemmer"
                            if multilingual.is_english(info.get("language")) else
                            "words of every script (ICU segmentation), "
                            + (f"Snowball '{language.stemmer_name(info.get('language'))}' stemmer"
                               if language.stemmer_name(info.get("language")) else
                               "no stemmer")),
        "rouge_l_variant": "rougeL (summary as one sequence; tensor2tensor's rouge_l_fscore)",
        "bootstrap": {"samples": config.bootstrap, "seed": config.seed, "confidence": 0.95,
                      "method": "Poisson bootstrap, weights seeded by article id"},
        "extractive_rouge": rouge,
        "input_recall": recall,
        "dataset_statistics": stats,
        "per_article": per_article[:config.per_article_in_json],
        "per_article_file": "per_article.jsonl",
        "dataset_rows": dict(info.get("rows") or {}),
        "provenance": provenance,
        "imported": info.get("imported"),
        "extractors_unavailable": info.get("extractors_unavailable") or {},
        "corpora_note": info.get("corpora_note"),
    }
    by_id = {m["id"]: m for m in per_article}
    metrics["article_views"] = [
        dict(v, rougeL={e: {c: by_id[v["id"]]["rouge"][e][c]["rougeL"] for c in corpora}
                        for e in extractor_names})
        for v in sorted(views or [], key=lambda v: stable_hash(str(v["id"])))
        if v["id"] in by_id]
    metrics["learned_comparison"] = learned_comparison(metrics)
    metrics["recommendation"] = recommend(metrics, replicates or {})
    return metrics


def learned_comparison(metrics: dict) -> dict | None:
    """The learned extractor beside tf-idf and cheating: ROUGE and recall, per corpus."""
    if "learned" not in metrics["extractors"]:
        return None
    names = [n for n in ("learned", "tfidf", "cheating") if n in metrics["extractors"]]
    return {n: {c: {"rouge": metrics["extractive_rouge"][n][c],
                    "recall": metrics["input_recall"][n][c]} for c in metrics["corpora"]}
            for n in names}


