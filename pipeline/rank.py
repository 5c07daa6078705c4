"""``wikisum rank``: ingest shards -> training shards with token ids and every ranking.

For every article: the title, the lead and every reference paragraph are tokenised once with
the sentencepiece vocabulary, and every extractor ranks the paragraphs of every corpus
(``citations``, ``search``, ``combined``: each ranked on its own paragraphs, so tf-idf's N_d and
TextRank's graph differ per corpus). A ranking is stored as indices into the article's paragraph
list, so that ``wikisum.pipeline.loader`` builds the model input for any extractor x corpus x L
without rerunning anything.

    ingest shards --ReadFromParquet--> rows --RankArticles--> (split, shard) --GroupByKey-->
        {train,dev,test}-NNNNN-of-NNNNN.parquet; dataset.json describes them
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import TaggedOutput

from wikisum import extractors
from wikisum.pipeline import ingest, schemas, shards, vocab
from wikisum.pipeline.ingest import DEAD, WriteShard, tally
from wikisum.pipeline.records import DeadLetter, stable_hash

log = logging.getLogger("wikisum.rank")

CORPORA = ("citations", "search", "combined")
SPLITS = ("train", "dev", "test")
RANK = "rank"
DEFAULT_SHARDS = 4
_CORPUS_SOURCE = {"citations": "citation", "search": "search"}


@dataclass(frozen=True)
class RankConfig:
    ingest_dir: str
    vocab: str
    out: str
    learned: str | None = None  # a model written by `wikisum.extractors.learned`; None: no learned
    num_shards: int = DEFAULT_SHARDS

    def extractor_names(self) -> list[str]:
        return [n for n in extractors.NAMES if n != "learned" or self.learned]


def corpus_indices(paragraphs: list[dict], corpus: str) -> list[int]:
    """Indices of the paragraphs that belong to ``corpus``."""
    if corpus == "combined":
        return list(range(len(paragraphs)))
    source = _CORPUS_SOURCE[corpus]
    return [i for i, p in enumerate(paragraphs) if source in p["sources"]]


def rank_article(row: dict, sp, rankers: dict) -> dict:
    """One ingest row -> one training row (schema ``RANKED``)."""
    paragraphs = [{"text": text, "reference": r, "sources": list(ref["sources"])}
                  for r, ref in enumerate(row["references"]) for text in ref["paragraphs"]]
    texts = [p["text"] for p in paragraphs]
    ids = sp.encode(texts) if texts else []
    for p, p_ids in zip(paragraphs, ids, strict=True):
        p["ids"] = p_ids
    rankings = []
    for corpus in CORPORA:
        index = corpus_indices(paragraphs, corpus)
        sub_texts = [texts[i] for i in index]
        sub_sources = [_primary(paragraphs[i]["sources"]) for i in index]
        for name, ranker in rankers.items():
            order = ranker.rank(row["title"], sub_texts, target=row["lead"], sources=sub_sources)
            rankings.append({"extractor": name, "corpus": corpus,
                             "order": [index[i] for i in order]})
    return {
        "id": row["id"],
        "title": row["title"],
        "split": row["split"],
        "title_ids": sp.encode(row["title"]),
        "lead": row["lead"],
        "lead_ids": sp.encode(row["lead"]),
        "reference_urls": [ref["url"] for ref in row["references"]],
        "paragraphs": paragraphs,
        "rankings": rankings,
    }


def _primary(sources: list[str]) -> str:
    return "citation" if "citation" in sources else "search"


class RankArticles(beam.DoFn):
    def __init__(self, config: RankConfig):
        self.config = config

    def setup(self):
        self.sp = vocab.load(self.config.vocab)
        kwargs = {"learned": {"path": self.config.learned}}
        self.rankers = {name: extractors.get(name, **kwargs.get(name, {}))
                        for name in self.config.extractor_names()}

    def process(self, row: dict):
        try:
            out = rank_article(row, self.sp, self.rankers)
        except Exception as exc:  # one article that breaks an extractor is a dead letter
            yield tally(RANK, "error")
            yield TaggedOutput(DEAD, DeadLetter("", str(row.get("id")), row.get("url", ""),
                                                RANK, "error", f"{type(exc).__name__}: {exc}"))
            return
        yield tally(RANK, "kept")
        shard = stable_hash(str(out["id"])) % self.config.num_shards
        yield (out["split"], shard), out


def shard_path(out: str, split: str, index: int, total: int) -> str:
    return FileSystems.join(out, f"{split}-{index:05d}-of-{total:05d}.parquet")


class WriteSplitShard(beam.DoFn):
    def __init__(self, out: str, total: int):
        self.out, self.total = out, total

    def process(self, item):
        (split, index), rows = item
        rows = sorted((r for r in rows if r is not None), key=lambda r: r["id"])
        path = shard_path(self.out, split, index, self.total)
        shards.write_table(path, rows, schemas.RANKED)
        yield path


def build(p: beam.Pipeline, config: RankConfig) -> None:
    pattern = ingest.article_shards_pattern(config.ingest_dir)
    ranked = (p | "ReadIngestShards" >> beam.io.ReadFromParquet(pattern)
              | "RankArticles" >> beam.ParDo(RankArticles(config)).with_outputs(
                  DEAD, "tally", main="rows"))
    every_shard = p | "AllShards" >> beam.Create(
        [((split, i), None) for split in SPLITS for i in range(config.num_shards)])
    _ = ((ranked.rows, every_shard) | "RowsAndShards" >> beam.Flatten()
         | "GroupShards" >> beam.GroupByKey()
         | "WriteShards" >> beam.ParDo(WriteSplitShard(config.out, config.num_shards)))
    empty_dead = p | "NoDeadLetters" >> beam.Create([(0, None)])
    _ = ((ranked[DEAD] | "DeadLetterRows" >> beam.Map(lambda d: (0, asdict(d))), empty_dead)
         | "DeadLettersAndShard" >> beam.Flatten()
         | "GroupDead" >> beam.GroupByKey()
         | "WriteDeadLetters" >> beam.ParDo(WriteShard(
             config.out, "rank_dead_letters", 1, schemas.DEAD_LETTERS,
             lambda d: (d["record"], d["error"]))))


def run(config: RankConfig, pipeline_options) -> dict:
    """Run the job, then write and return ``dataset.json`` (what the shards hold)."""
    for path in ingest.article_shards(config.ingest_dir):
        shards.row_count(path)  # a truncated shard is named now, not deep inside the job
    sp = vocab.load(config.vocab)
    # The completion record goes first, then the shards: a killed run leaves no dataset.json.
    shards.delete(FileSystems.join(config.out, "dataset.json"))
    for split in SPLITS:
        shards.delete(FileSystems.join(config.out, f"{split}-*.parquet"))
    log.info("rank: %s -> %s with %s", config.ingest_dir, config.out,
             ", ".join(config.extractor_names()))
    with beam.Pipeline(options=pipeline_options) as p:
        build(p, config)
    rerun = f"rerun `wikisum rank --out {config.out}`"
    rows = {split: sum(shards.row_count(path) for path in shards.complete_set(
                FileSystems.join(config.out, f"{split}-*.parquet"), config.num_shards,
                f"{config.out}: the {split} split", rerun))
            for split in SPLITS}
    dead = sum(shards.row_count(path) for path in shards.match(FileSystems.join(
        config.out, "rank_dead_letters", "*.parquet")))
    info = {
        "format": schemas.FORMAT_VERSION,
        "vocab": config.vocab,
        "vocab_size": sp.get_piece_size(),
        "special_ids": asdict(vocab.special_ids(sp)),
        "extractors": config.extractor_names(),
        "corpora": list(CORPORA),
        "learned_model": config.learned,
        "num_shards": config.num_shards,
        "rows": rows,
        "errors": dead,
        "source": config.ingest_dir,
    }
    shards.write_text(FileSystems.join(config.out, "dataset.json"),
                      json.dumps(info, indent=1) + "\n")
    return info
