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
(``dataset.json``'s ``source``): percentiles of lead size, article size (the lead and every
section, headings included), number of sections after the lead, number of citations, citation size,
number of search results and search-result size, in words; citation coverage; clones and self
pages removed. Beam's ``ApproximateQuantiles`` keeps them bounded (exact on small data).

The configuration (:class:`ReportConfig`, the defaults) is in
:mod:`wikisum.pipeline.report_config`, which the command line reads without importing Beam.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import Counter
from dataclasses import dataclass, field

import apache_beam as beam
import numpy as np
from apache_beam.io.filesystems import FileSystems
from apache_beam.transforms.stats import ApproximateQuantiles

from wikisum.core import language, loader, outputs, shards, vocab
from wikisum.core import rouge as multilingual
from wikisum.core.progress import WorkerProgress
from wikisum.core.records import stable_hash
from wikisum.core.text import words
from wikisum.pipeline import beamio
from wikisum.pipeline.report_config import BOOTSTRAP_SAMPLES, ReportConfig

log = logging.getLogger("wikisum.report")

ROUGE_TYPES = multilingual.ROUGE_TYPES
PERCENTILES = (20, 40, 50, 60, 80, 100)
STAT_NAMES = ("lead_words", "article_words", "sections", "citations", "citation_words",
              "search_results", "search_words")
TOTAL_NAMES = ("articles", "citations_listed", "citations_found", "search_listed",
               "search_found", "clones_removed", "self_removed", "other_language_removed",
               "duplicate_references_removed", "duplicate_paragraphs_removed")


@dataclass
class Scorers:
    """The dataset language's ROUGE scorer and tokenizer (:mod:`wikisum.core.rouge`), built
    once per worker and language."""

    rouge: object = field(default=None)
    tokenizer: object = field(default=None)
    lang: str | None = None

    @classmethod
    def create(cls, lang: str | None = None) -> Scorers:
        return cls(multilingual.scorer(lang), multilingual.tokenizer(lang), lang)


def split_words(text: str, lang: str | None = None) -> list[str]:
    """The words the report counts and cuts by: whitespace-separated words for English (as the
    paper counts them), the language's words (:func:`wikisum.core.text.words`) otherwise, so
    that text without spaces between words is counted in words, not in runs."""
    return text.split() if multilingual.is_english(lang) else words(text)


def cut_to_words(texts: list[str], n_words: int, lang: str | None = None) -> str:
    """The first ``n_words`` words (:func:`split_words`) of ``texts``, paragraphs kept apart;
    outside English the words are joined by spaces, as ROUGE's tokenizer splits them again."""
    out, left = [], n_words
    for text in texts:
        if left <= 0:
            break
        found = split_words(text, lang)
        out.append(" ".join(found[:left]))
        left -= len(found)
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
    # the extractive summary is cut to the lead's length
    lead_words = len(split_words(lead, scorers.lang))
    lead_counts = Counter(tokenize(lead))
    paragraph_counts = [Counter(tokenize(p["text"])) for p in row["paragraphs"]]
    title_counts = Counter(tokenize(row["title"]))
    rouge: dict = {}
    recall: dict = {}
    for extractor in extractors:
        rouge[extractor], recall[extractor] = {}, {}
        for corpus in corpora:
            order = loader.ranking(row, extractor, corpus)
            summary = cut_to_words([row["paragraphs"][i]["text"] for i in order], lead_words,
                                   scorers.lang)
            scores = scorers.rouge.score(lead, summary)
            rouge[extractor][corpus] = {t: scores[t].fmeasure for t in ROUGE_TYPES}
            # The model input: title, <t> (no words), then paragraphs in rank order.
            pieces_ids = [list(row["title_ids"]) + [0]] + [row["paragraphs"][i]["ids"]
                                                          for i in order]
            pieces_counts = [title_counts] + [paragraph_counts[i] for i in order]
            recall[extractor][corpus] = recall_curve(lead_counts, pieces_counts, lengths,
                                                     pieces_ids, decode, tokenize)
    return {"id": row["id"], "title": row["title"], "rouge": rouge, "recall": recall}


VIEW_ARTICLES = 3  # articles shown in the report's per-article view
VIEW_PARAGRAPHS = 3  # top-ranked paragraphs shown per extractor
VIEW_WORDS = 60  # words shown of each paragraph


def article_view(row: dict, extractors: list[str], corpora: list[str],
                 paragraphs: int = VIEW_PARAGRAPHS, words: int = VIEW_WORDS) -> dict:
    """One article for the per-article view: its lead, and for every extractor x corpus the
    first ``paragraphs`` paragraphs of its ranking (cut to ``words`` words, "..." marking a
    cut), each with the URL of the reference it came from."""
    urls = row.get("reference_urls") or []

    def shown(i):
        p = row["paragraphs"][i]
        text = p["text"].split()
        ref = p.get("reference")
        return {"text": " ".join(text[:words]) + (" ..." if len(text) > words else ""),
                "url": urls[ref] if ref is not None and 0 <= ref < len(urls) else None}

    return {"id": row["id"], "title": row["title"], "lead": row["lead"],
            "top": {e: {c: [shown(i) for i in loader.ranking(row, e, c)[:paragraphs]]
                        for c in corpora} for e in extractors}}


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

    def __init__(self, samples: int = BOOTSTRAP_SAMPLES, seed: int = 0,
                 keep_replicates: bool = False):
        self.samples, self.seed = samples, seed
        # With the replicate means kept, any two metrics can be compared afterwards by a paired
        # bootstrap (:func:`paired_difference`): replicate b of both used the same weights.
        self.keep_replicates = keep_replicates

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
        out = {key: interval(s, n, ws, ww) for key, (s, n, ws, ww) in acc.items()}
        if self.keep_replicates:
            for key, (_, _, ws, ww) in acc.items():
                out[key]["replicates"] = replicate_means(ws, ww)
        return out


def replicate_means(weighted_sums: np.ndarray, weights: np.ndarray) -> list[float | None]:
    """The bootstrap replicate means, 7 significant digits; None where a replicate drew no
    article (all its weights 0)."""
    return [float(f"{s / w:.7g}") if w > 0 else None
            for s, w in zip(weighted_sums.tolist(), weights.tolist(), strict=True)]


def paired_difference(a: dict, b: dict, replicates_a, replicates_b) -> dict:
    """Mean of ``a`` minus mean of ``b`` with the 95% interval of the paired bootstrap: the
    2.5/97.5 percentiles of the replicate differences. Both metrics' replicate b used the same
    per-article weights, so each difference is the mean of the per-article differences under
    one resample (a paired comparison: what the articles have in common cancels out).

    ``clear`` is True when the interval excludes 0 (and at least two articles were scored)."""
    ra = np.array([np.nan if x is None else x for x in replicates_a], dtype=np.float64)
    rb = np.array([np.nan if x is None else x for x in replicates_b], dtype=np.float64)
    diff = ra - rb
    diff = diff[~np.isnan(diff)]
    mean = a["mean"] - b["mean"]
    if len(diff) == 0:
        low = high = mean
    else:
        low, high = (float(x) for x in np.percentile(diff, [2.5, 97.5]))
    n = min(a.get("n", 0), b.get("n", 0))
    return {"mean": mean, "low": low, "high": high,
            "clear": bool(n >= 2 and (low > 0 or high < 0))}


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


def article_stats(row: dict, lang: str | None = None
                  ) -> tuple[list[tuple[str, float]], dict[str, int]]:
    """Table 2 of the paper for one ingest article: (stat name, value) pairs, and totals; words
    are :func:`split_words` of the dataset's language."""
    citations = [r for r in row["references"] if "citation" in r["sources"]]
    search = [r for r in row["references"] if "search" in r["sources"]]

    def count(text):
        return len(split_words(text, lang))

    def ref_words(ref):
        return sum(count(p) for p in ref["paragraphs"])

    sections = row.get("sections") or []
    # the whole article, as its targets hold it (section 6): the lead, then each heading and text
    article = count(row["lead"]) + sum(count(s["title"]) + count(s["text"]) for s in sections)
    values = [("lead_words", count(row["lead"])), ("article_words", article),
              ("sections", len(sections)), ("citations", len(citations)),
              ("search_results", len(search))]
    values += [("citation_words", ref_words(r)) for r in citations]
    values += [("search_words", ref_words(r)) for r in search]
    totals = {"articles": 1}
    for name in TOTAL_NAMES[1:]:
        totals[name] = int(row.get(name) or 0)  # format 1 shards lack the newer counts
    return values, totals


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
                 | "Stats" >> beam.Map(lambda r, i: article_stats(r, i["language"]),
                                       beam.pvalue.AsSingleton(self.info)))
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


PLATEAU_GAIN = 0.01  # recall "stops growing" once within one point of its value at the largest L


def plateau_length(curve: list[dict]) -> int:
    """The smallest L whose recall is within PLATEAU_GAIN of the recall at the largest L."""
    final = curve[-1]["mean"]
    for point in curve:
        if final - point["mean"] <= PLATEAU_GAIN:
            return point["length"]
    return curve[-1]["length"]


def recommend(metrics: dict, replicates: dict | None = None) -> dict:
    """What to pick, from the numbers (pure).

    * Per corpus, the best extractor a model can use (cheating reads the target) by ROUGE-L. It is
      *clearly ahead* when a paired bootstrap of its per-article ROUGE-L difference to every
      other usable extractor gives a 95% interval above 0. (Whether the intervals of two means
      overlap says little: what the articles share, which cancels out of a paired difference,
      widens both.) Cheating is called the ceiling only where no other extractor scores above it.
    * The corpus: a model can only learn to write what its input holds, so the corpora are
      compared first by the input recall of their best extractor at a common L, the largest of
      their plateau lengths (every corpus has then all but stopped growing), by a paired
      bootstrap; among the corpora not clearly below the one with the highest recall, the one
      with the highest ROUGE-L is chosen.
    * The input length L: where the chosen input's recall stops growing (:func:`plateau_length`).

    ``replicates`` maps metric keys (``rouge|ext|corpus|type``, ``recall|ext|corpus|L``) to their
    bootstrap replicate means; without them no difference is called clear.
    """
    replicates = replicates or {}
    extractors, corpora, lengths = metrics["extractors"], metrics["corpora"], metrics["lengths"]
    usable = [e for e in extractors if e != "cheating"]

    def paired(key_a, key_b, a, b):
        if key_a in replicates and key_b in replicates:
            return paired_difference(a, b, replicates[key_a], replicates[key_b])
        return {"mean": a["mean"] - b["mean"], "low": None, "high": None, "clear": False}

    per_corpus = {}
    for corpus in corpora:
        rl = {e: metrics["extractive_rouge"][e][corpus]["rougeL"] for e in extractors}
        ranked = sorted(usable, key=lambda e: -rl[e]["mean"])
        best = ranked[0]
        curve = metrics["input_recall"][best][corpus]
        entry = {"best": best, "rougeL": rl[best]["mean"], "plateau_length": plateau_length(curve),
                 "recall_at_max_length": curve[-1]["mean"],
                 "ahead_of": {o: paired(f"rouge|{best}|{corpus}|rougeL",
                                        f"rouge|{o}|{corpus}|rougeL", rl[best], rl[o])
                              for o in ranked[1:]}}
        if len(ranked) > 1:
            entry["runner_up"] = ranked[1]
            entry["clear_winner"] = all(d["clear"] for d in entry["ahead_of"].values())
        if "cheating" in extractors:
            cheat = rl["cheating"]["mean"]
            entry["cheating_rougeL"] = cheat
            entry["above_cheating"] = [e for e in usable if rl[e]["mean"] > cheat]
            if not entry["above_cheating"]:
                entry["ceiling_rougeL"] = cheat
        per_corpus[corpus] = entry

    common = max(entry["plateau_length"] for entry in per_corpus.values())
    k = lengths.index(common)

    def recall_at(c):
        return metrics["input_recall"][per_corpus[c]["best"]][c][k]

    def recall_key(c):
        return f"recall|{per_corpus[c]['best']}|{c}|{common}"

    top = max(corpora, key=lambda c: recall_at(c)["mean"])
    recall_vs = {c: paired(recall_key(top), recall_key(c), recall_at(top), recall_at(c))
                 for c in corpora if c != top}
    contenders = [top] + [c for c, d in recall_vs.items() if not d["clear"]]
    best_corpus = max(contenders, key=lambda c: per_corpus[c]["rougeL"])
    choice = {"per_corpus": per_corpus, "best_corpus": best_corpus,
              "best_extractor": per_corpus[best_corpus]["best"],
              "input_length": per_corpus[best_corpus]["plateau_length"],
              "recall_length": common,
              "recall": {c: recall_at(c)["mean"] for c in corpora},
              "recall_top": top, "recall_differences": recall_vs,
              "rouge_best_corpus": max(corpora, key=lambda c: per_corpus[c]["rougeL"]),
              "plateau_gain": PLATEAU_GAIN}
    # Nothing to choose between when no extractor shares a word with any lead: every ROUGE is
    # 0 (text that the scorer cannot read, or leads unrelated to their references).
    choice["recommended"] = any(entry["rougeL"] > 0 or entry.get("cheating_rougeL", 0) > 0
                                for entry in per_corpus.values())
    choice["text"] = recommendation_text(choice, metrics)
    return choice


def _diff(d: dict) -> str:
    """A paired difference, x100: "+1.2 [+0.3, +2.0]"."""
    if d["low"] is None:
        return f"{100 * d['mean']:+.1f}"
    return f"{100 * d['mean']:+.1f} [{100 * d['low']:+.1f}, {100 * d['high']:+.1f}]"


def recommendation_text(choice: dict, metrics: dict) -> list[str]:
    per_corpus, best_corpus = choice["per_corpus"], choice["best_corpus"]
    if not choice.get("recommended", True):
        lang = metrics.get("language") or "en"
        return [f"No extractor is recommended: every extractor scores 0.0 ROUGE-L against the "
                f"leads of the {metrics['articles']} {metrics['split']} articles scored, so the "
                f"figures cannot tell them apart. The leads were scored as {lang!r} "
                f"({metrics.get('rouge_tokenizer') or 'ROUGE'}); if that is not their "
                "language, set the dataset's language (dataset.json's \"language\") and "
                "report again."]
    best = per_corpus[best_corpus]
    ext, common = best["best"], choice["recall_length"]
    lines = [f"Use {ext} on the {best_corpus} corpus with inputs of L = {choice['input_length']} "
             f"tokens ({metrics['articles']} {metrics['split']} articles scored)."]
    if len(per_corpus) > 1:
        top, recall = choice["recall_top"], choice["recall"]
        others = "; ".join(f"{c} {100 * recall[c]:.1f}, difference {_diff(d)}, "
                           f"{'clearly' if d['clear'] else 'not clearly'} lower"
                           for c, d in choice["recall_differences"].items())
        why = (f"Corpus: at L = {common}, the input from the {top} corpus holds the most of the "
               f"lead ({100 * recall[top]:.1f} ROUGE-1 recall; {others}; x100, paired "
               "bootstrap)")
        by_rouge = choice["rouge_best_corpus"]
        if best_corpus != top:
            why += (f"; the {best_corpus} corpus recalls about as much and has the higher "
                    "extractive "
                    f"ROUGE-L ({100 * best['rougeL']:.1f} against "
                    f"{100 * per_corpus[top]['rougeL']:.1f}).")
        elif by_rouge != best_corpus:
            why += (f". The {by_rouge} corpus has the higher extractive ROUGE-L "
                    f"({100 * per_corpus[by_rouge]['rougeL']:.1f} against "
                    f"{100 * best['rougeL']:.1f}), but its input holds clearly less of the lead, "
                    "and a model can only learn to write what its input holds.")
        else:
            why += "; it also has the highest extractive ROUGE-L."
        lines.append(why)
    for corpus, entry in per_corpus.items():
        behind = [o for o, d in entry["ahead_of"].items() if not d["clear"]]
        if "runner_up" not in entry:
            rank = ""
        elif not behind:
            rank = ", clearly ahead of every other usable extractor"
        else:
            rank = ", not clearly ahead of " + ", ".join(
                f"{o} ({_diff(entry['ahead_of'][o])})" for o in behind)
        if "ceiling_rougeL" in entry:
            ceiling = f"; the cheating ceiling is {100 * entry['ceiling_rougeL']:.1f}"
        elif "cheating_rougeL" in entry:
            ceiling = (f"; cheating scores {100 * entry['cheating_rougeL']:.1f}, below "
                       f"{', '.join(entry['above_cheating'])}, so it is no ceiling here "
                       "(it picks paragraphs by bigram recall of the lead, not by ROUGE-L)")
        else:
            ceiling = ""
        lines.append(f"{corpus}: best {entry['best']} ({100 * entry['rougeL']:.1f} ROUGE-L"
                     f"{rank}){ceiling}; its input recall stops growing at L = "
                     f"{entry['plateau_length']} (within {100 * PLATEAU_GAIN:.0f} point of "
                     f"{100 * entry['recall_at_max_length']:.1f} at L = "
                     f"{metrics['lengths'][-1]}).")
    if metrics["articles"] < 30:
        lines.append(f"Only {metrics['articles']} articles were scored: the intervals are wide; "
                     "rerun on more articles before choosing.")
    return lines



def _independent_difference(x: dict, y: dict) -> dict:
    """y's mean minus x's, two independent samples: a normal 95% interval whose standard error
    comes from each side's bootstrap interval (its width / 3.92)."""
    d = y["mean"] - x["mean"]
    se = ((x["high"] - x["low"]) ** 2 + (y["high"] - y["low"]) ** 2) ** 0.5 / (2 * 1.96)
    low, high = d - 1.96 * se, d + 1.96 * se
    n = min(x.get("n", 0), y.get("n", 0))
    return {"a": x["mean"], "b": y["mean"], "difference": d, "low": low, "high": high,
            "clear": bool(n >= 2 and (low > 0 or high < 0))}


def compare(a: dict, b: dict) -> dict:
    """What differs between two builds, from their reports' metrics (pure): input recall and
    ROUGE-L per extractor x corpus (B minus A, with a 95% interval that treats the two builds'
    articles as independent samples), counts, coverage, drops per stage and reason, and what
    each report recommends. Extractors, corpora and Ls that only one side has are listed."""
    def common(key):
        return [x for x in a[key] if x in b[key]]

    extractors, corpora, lengths = common("extractors"), common("corpora"), common("lengths")
    ka = [a["lengths"].index(n) for n in lengths]
    kb = [b["lengths"].index(n) for n in lengths]
    recall = {e: {c: [dict(_independent_difference(a["input_recall"][e][c][i],
                                                   b["input_recall"][e][c][j]), length=n)
                      for n, i, j in zip(lengths, ka, kb, strict=True)]
                  for c in corpora} for e in extractors}
    rouge = {e: {c: _independent_difference(a["extractive_rouge"][e][c]["rougeL"],
                                            b["extractive_rouge"][e][c]["rougeL"])
                 for c in corpora} for e in extractors}

    def stats(m):
        return m.get("dataset_statistics") or {}

    counts = {"articles scored": (a["articles"], b["articles"])}
    for split in ("train", "dev", "test"):
        ra, rb = (a.get("dataset_rows") or {}).get(split), (b.get("dataset_rows") or {}).get(split)
        if ra is not None or rb is not None:
            counts[f"{split} articles in the dataset"] = (ra, rb)
    totals_a, totals_b = stats(a).get("totals") or {}, stats(b).get("totals") or {}
    for name in TOTAL_NAMES[1:]:
        if name in totals_a or name in totals_b:
            counts[name.replace("_", " ")] = (totals_a.get(name), totals_b.get(name))
    coverage = {name: (stats(a).get(f"{name}_coverage"), stats(b).get(f"{name}_coverage"))
                for name in ("citation", "search")}
    drops_a, drops_b = stats(a).get("ingest_drops") or {}, stats(b).get("ingest_drops") or {}
    drops = {}
    for stage in list(drops_a) + [s for s in drops_b if s not in drops_a]:
        sa, sb = drops_a.get(stage, {}), drops_b.get(stage, {})
        drops[stage] = {reason: (sa.get(reason, 0), sb.get(reason, 0))
                        for reason in list(sa) + [r for r in sb if r not in sa]}

    def picked(m):
        rec = m["recommendation"]
        return {"extractor": rec["best_extractor"], "corpus": rec["best_corpus"],
                "length": rec.get("input_length")}

    return {"a": {"data": a["data"], "split": a["split"], "provenance": a.get("provenance"),
                  "recommendation": picked(a)},
            "b": {"data": b["data"], "split": b["split"], "provenance": b.get("provenance"),
                  "recommendation": picked(b)},
            "extractors": extractors, "corpora": corpora, "lengths": lengths,
            "only_in_a": {k: [x for x in a[k] if x not in b[k]]
                          for k in ("extractors", "corpora", "lengths")},
            "only_in_b": {k: [x for x in b[k] if x not in a[k]]
                          for k in ("extractors", "corpora", "lengths")},
            "input_recall": recall, "rougeL": rouge, "counts": counts, "coverage": coverage,
            "ingest_drops": drops}
