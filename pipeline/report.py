"""``wikisum report``: the paper's extractive analyses on any built dataset, as a Beam job.

Per article (a pure function, :func:`article_metrics`, wrapped by a DoFn):

* **extractive ROUGE** (paper, Figure 2): for every extractor x corpus, the ranked paragraphs cut
  to the length of the lead in words, scored against the lead with rouge-score's ROUGE-1, ROUGE-2
  and ROUGE-L F1, Porter stemming on. ROUGE-L is rouge-score's ``rougeL``: the longest common
  subsequence of the two texts taken as one token sequence each. That is what tensor2tensor's
  ``rouge_l_fscore`` (the paper's metric) computes; ``rougeLsum`` would instead match sentence by
  sentence and reward an extract that has the right sentences in the wrong order.
* **input recall vs L** (paper, Table 1's statistic): ROUGE-1 recall of the lead by the first L
  subword tokens of the model input (title, then paragraphs in rank order), computed as
  rouge-score computes it (its tokenizer and stemmer, clipped unigram counts) from per-paragraph
  counts, so every L costs one partial paragraph, not a re-tokenisation of the prefix.

Then combined: means with 95% confidence intervals by a Poisson bootstrap (each article gets
``B`` Poisson(1) weights seeded by its id, the same for every metric, so that comparisons between
extractors are paired). The bootstrap is a ``CombineFn``: its state is ``B`` sums per metric,
mergeable across workers, so memory does not grow with the number of articles.

Dataset statistics (paper, Table 2) come from the ingest shards that the dataset was ranked from
(``dataset.json``'s ``source``): percentiles of lead size, number of citations, citation size,
number of search results and search-result size, in words; citation coverage; clones and self
pages removed. Beam's ``ApproximateQuantiles`` keeps them bounded (exact on small data).
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
from collections import Counter
from dataclasses import dataclass, field

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.stats import ApproximateQuantiles

from wikisum.pipeline import beamio, loader, outputs, shards, vocab
from wikisum.pipeline.records import stable_hash

log = logging.getLogger("wikisum.report")

DEFAULT_LENGTHS = (100, 500, 1000, 2000, 4000, 11000)
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL")
PERCENTILES = (20, 40, 50, 60, 80, 100)
BOOTSTRAP_SAMPLES = 1000
STAT_NAMES = ("lead_words", "citations", "citation_words", "search_results", "search_words")
TOTAL_NAMES = ("articles", "citations_listed", "citations_found", "search_listed",
               "search_found", "clones_removed", "self_removed", "other_language_removed",
               "duplicate_references_removed", "duplicate_paragraphs_removed")


@dataclass(frozen=True)
class ReportConfig:
    data: str
    out: str
    split: str = "dev"
    lengths: tuple[int, ...] = DEFAULT_LENGTHS
    sample: int | None = None  # score only this many articles (the smallest stable hashes)
    bootstrap: int = BOOTSTRAP_SAMPLES
    seed: int = 0
    per_article_in_json: int = 100  # per-article rows also copied into metrics.json


@dataclass
class Scorers:
    """rouge-score objects, built once per worker."""

    rouge: object = field(default=None)
    tokenizer: object = field(default=None)

    @classmethod
    def create(cls) -> Scorers:
        from rouge_score import rouge_scorer, tokenizers

        return cls(rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True),
                   tokenizers.DefaultTokenizer(use_stemmer=True))


def cut_to_words(texts: list[str], n_words: int) -> str:
    """The first ``n_words`` whitespace-separated words of ``texts`` (paragraphs kept apart)."""
    out, left = [], n_words
    for text in texts:
        if left <= 0:
            break
        words = text.split()
        out.append(" ".join(words[:left]))
        left -= len(words)
    return "\n".join(out)


def recall_curve(lead_counts: Counter, prefix_counts: list[Counter], lengths: list[int],
                 prefix_ids: list[list[int]], decode, tokenize) -> list[float]:
    """ROUGE-1 recall of the lead by the first L ids of a sequence of pieces, for each L.

    Args:
        lead_counts: unigram counts of the lead (rouge-score tokens).
        prefix_counts: unigram counts of each piece of the input, in input order.
        lengths: the Ls, ascending.
        prefix_ids: the token ids of each piece (their lengths place the L cuts).
        decode: ids -> text, for the one piece an L cuts in two.
        tokenize: text -> rouge-score tokens.
    """
    total = sum(lead_counts.values())
    if total == 0:
        return [0.0 for _ in lengths]
    out = []
    have: Counter = Counter()
    used = piece = 0  # tokens taken so far; index of the next whole piece
    for length in lengths:
        while piece < len(prefix_ids) and used + len(prefix_ids[piece]) <= length:
            have.update(prefix_counts[piece])
            used += len(prefix_ids[piece])
            piece += 1
        counts = have
        if piece < len(prefix_ids) and used < length:
            counts = have + Counter(tokenize(decode(prefix_ids[piece][:length - used])))
        overlap = sum(min(n, counts[w]) for w, n in lead_counts.items())
        out.append(overlap / total)
    return out


def article_metrics(row: dict, extractors: list[str], corpora: list[str], lengths: list[int],
                    scorers: Scorers, decode) -> dict:
    """Every per-article number of the report: ``{"id", "title", "rouge", "recall"}``.

    ``rouge[extractor][corpus][type]`` is an F1; ``recall[extractor][corpus]`` a list aligned
    with ``lengths``.
    """
    tokenize = scorers.tokenizer.tokenize
    lead = row["lead"]
    lead_words = len(lead.split())  # the extractive summary is cut to the lead's length
    lead_counts = Counter(tokenize(lead))
    paragraph_counts = [Counter(tokenize(p["text"])) for p in row["paragraphs"]]
    title_counts = Counter(tokenize(row["title"]))
    rouge: dict = {}
    recall: dict = {}
    for extractor in extractors:
        rouge[extractor], recall[extractor] = {}, {}
        for corpus in corpora:
            order = loader.ranking(row, extractor, corpus)
            summary = cut_to_words([row["paragraphs"][i]["text"] for i in order], lead_words)
            scores = scorers.rouge.score(lead, summary)
            rouge[extractor][corpus] = {t: scores[t].fmeasure for t in ROUGE_TYPES}
            # The model input: title, <t> (no words), then paragraphs in rank order.
            pieces_ids = [list(row["title_ids"]) + [0]] + [row["paragraphs"][i]["ids"]
                                                          for i in order]
            pieces_counts = [title_counts] + [paragraph_counts[i] for i in order]
            recall[extractor][corpus] = recall_curve(lead_counts, pieces_counts, lengths,
                                                     pieces_ids, decode, tokenize)
    return {"id": row["id"], "title": row["title"], "rouge": rouge, "recall": recall}


def flat_values(metrics: dict, lengths: list[int]) -> dict[str, float]:
    """Per-article metrics as ``{"rouge|ext|corpus|type": v, "recall|ext|corpus|L": v}``."""
    out = {}
    for ext, by_corpus in metrics["rouge"].items():
        for corpus, scores in by_corpus.items():
            for t, v in scores.items():
                out[f"rouge|{ext}|{corpus}|{t}"] = v
    for ext, by_corpus in metrics["recall"].items():
        for corpus, curve in by_corpus.items():
            for length, v in zip(lengths, curve, strict=True):
                out[f"recall|{ext}|{corpus}|{length}"] = v
    return out


def poisson_weights(article_id, samples: int, seed: int) -> np.ndarray:
    """The article's bootstrap weights: ``samples`` draws of Poisson(1), seeded by its id."""
    rng = np.random.default_rng([stable_hash(str(article_id)) & 0xFFFFFFFF, seed])
    return rng.poisson(1.0, samples).astype(np.float64)


class BootstrapMeans(beam.CombineFn):
    """(article_id, {metric: value}) -> {metric: {"mean", "low", "high", "n"}} (95% CI).

    Poisson bootstrap: replicate b's mean is sum_i w_ib v_i / sum_i w_ib. The accumulator holds,
    per metric, the plain sum and count and the ``samples`` weighted sums and weights.
    """

    def __init__(self, samples: int = BOOTSTRAP_SAMPLES, seed: int = 0):
        self.samples, self.seed = samples, seed

    def create_accumulator(self):
        return {}

    def add_input(self, acc, item):
        article_id, values = item
        w = poisson_weights(article_id, self.samples, self.seed)
        for key, v in values.items():
            slot = acc.get(key)
            if slot is None:
                slot = acc[key] = [0.0, 0, np.zeros(self.samples), np.zeros(self.samples)]
            slot[0] += v
            slot[1] += 1
            slot[2] += w * v
            slot[3] += w
        return acc

    def merge_accumulators(self, accumulators):
        out = {}
        for acc in accumulators:
            for key, (s, n, ws, ww) in acc.items():
                if key not in out:
                    out[key] = [s, n, ws.copy(), ww.copy()]
                else:
                    slot = out[key]
                    slot[0] += s
                    slot[1] += n
                    slot[2] += ws
                    slot[3] += ww
        return out

    def extract_output(self, acc):
        return {key: interval(s, n, ws, ww) for key, (s, n, ws, ww) in acc.items()}


def interval(total: float, n: int, weighted_sums: np.ndarray, weights: np.ndarray) -> dict:
    """Mean and the 2.5/97.5 percentiles of the bootstrap replicate means."""
    ok = weights > 0
    replicates = weighted_sums[ok] / weights[ok]
    mean = total / n if n else float("nan")
    if len(replicates) == 0:
        low = high = mean
    else:
        low, high = (float(x) for x in np.percentile(replicates, [2.5, 97.5]))
    return {"mean": mean, "low": low, "high": high, "n": n}


def article_stats(row: dict) -> tuple[list[tuple[str, float]], dict[str, int]]:
    """Table 2 of the paper for one ingest article: (stat name, value) pairs, and totals."""
    citations = [r for r in row["references"] if "citation" in r["sources"]]
    search = [r for r in row["references"] if "search" in r["sources"]]

    def words(ref):
        return sum(len(p.split()) for p in ref["paragraphs"])

    values = [("lead_words", len(row["lead"].split())), ("citations", len(citations)),
              ("search_results", len(search))]
    values += [("citation_words", words(r)) for r in citations]
    values += [("search_words", words(r)) for r in search]
    totals = {"articles": 1}
    for name in TOTAL_NAMES[1:]:
        totals[name] = int(row.get(name) or 0)  # format 1 shards lack the newer counts
    return values, totals


class ScoreArticles(beam.DoFn):
    """Ranked rows -> per-article metrics; logs progress every 10 s. What to score (extractors,
    corpora, the vocabulary) comes from the dataset's ``info`` (a side input read by the job),
    loaded on the first row."""

    def __init__(self, lengths: list[int], sample: int | None):
        self.lengths, self.sample = lengths, sample
        self.vocab_path = None

    def setup(self):
        self.scorers = Scorers.create()
        self.done, self.started, self.last = 0, time.monotonic(), time.monotonic()

    def process(self, row, info):
        if self.vocab_path != info["vocab_path"]:
            self.vocab_path = info["vocab_path"]
            self.sp = vocab.load(self.vocab_path)
        if not row["lead"].strip():
            beam.metrics.Metrics.counter("report", "skipped:empty_lead").inc()
            return
        metrics = article_metrics(row, info["extractors"], info["corpora"], self.lengths,
                                  self.scorers, self.sp.decode)
        beam.metrics.Metrics.counter("report", "scored").inc()
        self.done += 1
        now = time.monotonic()
        if now - self.last >= 10:
            self.last = now
            rate = self.done / (now - self.started)
            expected = info["expected"] if self.sample is None else min(self.sample,
                                                                       info["expected"])
            print(f"report: {self.done} articles scored by this worker "
                  f"(of {expected} in all), {rate:.1f}/s", file=sys.stderr, flush=True)
        yield metrics


def dataset_info(config: ReportConfig) -> dict:
    """What the job needs to know of the dataset, read by the job itself: dataset.json checked
    (:func:`check_dataset`), the vocabulary's path and the split's size."""
    info, vocab_path = check_dataset(config)
    return {"extractors": list(info["extractors"]), "corpora": list(info["corpora"]),
            "vocab_path": vocab_path, "expected": info["rows"].get(config.split, 0),
            "source": info.get("source")}


def source_shards(info: dict) -> list[str]:
    """The finished ingest output the dataset was ranked from (for the statistics), or []
    with a warning when it is not there any more."""
    source = info.get("source")
    if not source:
        return []
    try:
        return outputs.article_shards(source)
    except (FileNotFoundError, ValueError) as exc:
        log.warning("report: no dataset statistics: %s", exc)
        return []


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


class DatasetStatistics(beam.PTransform):
    """Scored articles -> the paper's Table 2 over the same articles of the ingest output the
    dataset came from: (name, percentiles) and (name, total)."""

    def __init__(self, info):
        super().__init__()
        self.info = info

    def expand(self, scored):
        ids = beam.pvalue.AsDict(scored | "Ids" >> beam.Map(lambda m: (m["id"], True)))
        stats = (self.info | "SourceShards" >> beam.FlatMap(source_shards)
                 | "Spread" >> beam.Reshuffle()
                 | "ReadIngest" >> beam.io.ReadAllFromParquet()
                 | "SameArticles" >> beam.Filter(lambda r, keep: r["id"] in keep, ids)
                 | "Stats" >> beam.Map(article_stats))
        quantiles = (stats | "Values" >> beam.FlatMap(lambda vt: vt[0])
                     | "Quantiles" >> ApproximateQuantiles.PerKey(101))
        totals = (stats | "Totals" >> beam.FlatMap(lambda vt: vt[1].items())
                  | "SumTotals" >> beam.CombinePerKey(sum))
        return {"quantiles": quantiles, "totals": totals}


def build(p: beam.Pipeline, config: ReportConfig, work: str) -> None:
    """Add the report job to pipeline ``p`` (no filesystem is touched here: the job reads
    dataset.json and matches the shards when it runs)."""
    lengths = list(config.lengths)
    info = p | "DatasetInfo" >> beam.Create([config]) | "ReadInfo" >> beam.Map(dataset_info)
    scored = (p | "ReadRanked" >> ReadRanked(config.data, config.split, config.sample)
              | "ScoreArticles" >> beam.ParDo(ScoreArticles(lengths, config.sample),
                                              beam.pvalue.AsSingleton(info)))
    _ = (scored | "PerArticleJson" >> beam.Map(json.dumps)
         | "WritePerArticle" >> beam.io.WriteToText(
             FileSystems.join(work, "per_article"), file_name_suffix=".jsonl"))
    _ = (scored | "Flatten" >> beam.Map(lambda m: (m["id"], flat_values(m, lengths)))
         | "Bootstrap" >> beam.CombineGlobally(BootstrapMeans(config.bootstrap, config.seed))
         | "MeansJson" >> beam.Map(json.dumps)
         | "WriteMeans" >> beam.io.WriteToText(FileSystems.join(work, "means"),
                                               file_name_suffix=".json", num_shards=1))
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
    shards.write_text(FileSystems.join(config.out, "per_article.jsonl"),
                      "".join(json.dumps(m) + "\n" for m in per_article))
    shards.delete(FileSystems.join(work, "*"))
    metrics = assemble(config, info, means, quantiles, totals, per_article,
                       ingest_drops(info.get("source")))
    metrics["seconds"] = round(time.monotonic() - started, 1)
    return metrics


def ingest_drops(source: str | None) -> dict[str, dict[str, int]] | None:
    """What the ingest run the dataset was ranked from dropped: {stage: {reason: n}} from its
    summary.json, or None when it is not there any more."""
    if not source:
        return None
    try:
        stages = outputs.read_summary(source).get("stages", {})
    except (FileNotFoundError, ValueError, shards.IncompleteOutput) as exc:
        log.warning("report: no ingest drop counts: %s", exc)
        return None
    return {stage: {"in": counts.get("in", 0), **dict(sorted(counts.get("dropped", {}).items()))}
            for stage, counts in stages.items()}


def assemble(config: ReportConfig, info: dict, means: dict, quantiles: dict, totals: dict,
             per_article: list[dict], drops: dict | None = None) -> dict:
    """The metrics.json structure from the job's outputs (pure); `drops` is `ingest_drops`."""
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
        "rouge_l_variant": "rougeL (summary as one sequence; tensor2tensor's rouge_l_fscore)",
        "bootstrap": {"samples": config.bootstrap, "seed": config.seed, "confidence": 0.95,
                      "method": "Poisson bootstrap, weights seeded by article id"},
        "extractive_rouge": rouge,
        "input_recall": recall,
        "dataset_statistics": stats,
        "per_article": per_article[:config.per_article_in_json],
        "per_article_file": "per_article.jsonl",
    }
    metrics["learned_comparison"] = learned_comparison(metrics)
    metrics["recommendation"] = recommend(metrics)
    return metrics


def learned_comparison(metrics: dict) -> dict | None:
    """The learned extractor beside tf-idf and cheating: ROUGE and recall, per corpus."""
    if "learned" not in metrics["extractors"]:
        return None
    names = [n for n in ("learned", "tfidf", "cheating") if n in metrics["extractors"]]
    return {n: {c: {"rouge": metrics["extractive_rouge"][n][c],
                    "recall": metrics["input_recall"][n][c]} for c in metrics["corpora"]}
            for n in names}


PLATEAU_GAIN = 0.01  # recall "stops growing" once within one point of its value at the largest L


def plateau_length(curve: list[dict]) -> int:
    """The smallest L whose recall is within PLATEAU_GAIN of the recall at the largest L."""
    final = curve[-1]["mean"]
    for point in curve:
        if final - point["mean"] <= PLATEAU_GAIN:
            return point["length"]
    return curve[-1]["length"]


def recommend(metrics: dict) -> dict:
    """What to pick, from the numbers: per corpus the best extractor a model can use (cheating
    reads the target, so it is only a ceiling) by ROUGE-L, whether its lead over the runner-up is
    outside the confidence intervals, and the L beyond which its input recall stops growing."""
    usable = [e for e in metrics["extractors"] if e != "cheating"]
    per_corpus = {}
    for corpus in metrics["corpora"]:
        ranked = sorted(usable, key=lambda e: -metrics["extractive_rouge"][e][corpus]["rougeL"]
                        ["mean"])
        best = ranked[0]
        best_score = metrics["extractive_rouge"][best][corpus]["rougeL"]
        entry = {"best": best, "rougeL": best_score["mean"],
                 "plateau_length": plateau_length(metrics["input_recall"][best][corpus]),
                 "recall_at_max_length": metrics["input_recall"][best][corpus][-1]["mean"]}
        if len(ranked) > 1:
            second = metrics["extractive_rouge"][ranked[1]][corpus]["rougeL"]
            entry["runner_up"] = ranked[1]
            entry["clear_winner"] = best_score["low"] > second["high"]
        if "cheating" in metrics["extractors"]:
            entry["ceiling_rougeL"] = metrics["extractive_rouge"]["cheating"][corpus]["rougeL"][
                "mean"]
        per_corpus[corpus] = entry
    best_corpus = max(per_corpus, key=lambda c: per_corpus[c]["rougeL"])
    return {"per_corpus": per_corpus, "best_corpus": best_corpus,
            "best_extractor": per_corpus[best_corpus]["best"],
            "plateau_gain": PLATEAU_GAIN, "text": recommendation_text(per_corpus, best_corpus,
                                                                      metrics)}


def recommendation_text(per_corpus: dict, best_corpus: str, metrics: dict) -> list[str]:
    lines = []
    best = per_corpus[best_corpus]
    lines.append(f"Use {best['best']} on the {best_corpus} corpus: the highest extractive "
                 f"ROUGE-L ({100 * best['rougeL']:.1f}) of the extractors a model can use "
                 f"on {metrics['articles']} {metrics['split']} articles.")
    for corpus, entry in per_corpus.items():
        clear = entry.get("clear_winner")
        sure = ("ahead of" if clear else "not clearly ahead of") if "runner_up" in entry else ""
        runner = f", {sure} {entry['runner_up']} (95% intervals)" if sure else ""
        ceiling = (f"; the cheating ceiling is {100 * entry['ceiling_rougeL']:.1f}"
                   if "ceiling_rougeL" in entry else "")
        lines.append(f"{corpus}: best {entry['best']} ({100 * entry['rougeL']:.1f} ROUGE-L"
                     f"{runner}){ceiling}; its input recall stops growing at L = "
                     f"{entry['plateau_length']} (within {100 * PLATEAU_GAIN:.0f} point of "
                     f"{100 * entry['recall_at_max_length']:.1f} at L = "
                     f"{metrics['lengths'][-1]}).")
    if metrics["articles"] < 30:
        lines.append(f"Only {metrics['articles']} articles were scored: the intervals are wide; "
                     "rerun on a larger split or --sample before choosing.")
    return lines

