"""``wikisum rank``: ingest shards -> training shards with token ids and every ranking.

For every article: the title, the lead and every reference paragraph are tokenised once with
the sentencepiece vocabulary, and every extractor ranks the paragraphs of every corpus
(``citations``, ``search``, ``combined``: each ranked on its own paragraphs, so tf-idf's N_d and
TextRank's graph differ per corpus). A ranking is stored as indices into the article's paragraph
list, so that ``wikisum.core.loader`` builds the model input for any extractor x corpus x L
without rerunning anything.

    ReadIngestShards   the ingest output, checked finished by the job, read by row group
    RankArticles       tokenise, rank with every extractor x corpus -> (split, shard), row
    WriteShards        {train,dev,test}-SSSSS-of-NNNNN.parquet, staged (bounded memory)
    ModelInputs        the ready model input of each --model-inputs extractor x corpus x L
    WriteModelInputs   inputs/{EXTRACTOR}-{CORPUS}-{L}/{split}-SSSSS-of-NNNNN.parquet
    WriteDeadLetters   articles an extractor failed on
    StageCard          the dataset card, made from what dataset.json will say
    Commit             staged files renamed into place (the card with them), then dataset.json,
                       last

The dataset card (README.md, :mod:`wikisum.core.card`) is what dataset.json says: its front
matter maps configs and splits to the files, so that ``datasets.load_dataset(OUT)`` reads the
ready model inputs. It is renamed into place before dataset.json is written, so a finished
dataset always has its card.

The configuration (:class:`RankConfig`, :class:`InputSpec`, the defaults) is in
:mod:`wikisum.pipeline.rank_config`, which the command line reads without importing Beam.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems
from apache_beam.pvalue import TaggedOutput

from wikisum import extractors
from wikisum.core import accounting, articlelayout, card, loader, outputs, schemas, shards, vocab
from wikisum.core.accounting import IN, KEPT
from wikisum.core.inputs import CORPORA as CORPORA
from wikisum.core.inputs import DEFAULT_INPUT as DEFAULT_INPUT
from wikisum.core.loader import model_input_row
from wikisum.core.progress import WorkerProgress
from wikisum.core.records import DeadLetter, stable_hash
from wikisum.extractors.ranking import corpus_indices as corpus_indices
from wikisum.extractors.ranking import rank_article
from wikisum.pipeline import beamio
from wikisum.pipeline.beamio import DEAD, TALLY, Commit, Staged, WriteShards, tally
from wikisum.pipeline.rank_config import RankConfig
from wikisum.pipeline.rank_config import parse_inputs as parse_inputs

log = logging.getLogger("wikisum.rank")

SPLITS = ("train", "dev", "test")
RANK = "rank"
# The one corpus of an ingest output whose citations and search results cannot be told apart.
T2T_LISTS_NOTE = ("combined: every URL of tensor2tensor's lists (the authors' citations and "
                  "search results, which the lists do not tell apart)")
INPUTS = loader.INPUTS  # OUT/inputs/{name}/: ready model inputs


class RankArticles(beam.DoFn):
    def __init__(self, config: RankConfig):
        self.config = config

    def setup(self):
        self.sp = vocab.load(self.config.vocab)
        kwargs = {"learned": {"path": self.config.learned}}
        self.rankers = {name: extractors.get(name, **kwargs.get(name, {}))
                        for name in self.config.extractor_names()}
        self.progress = WorkerProgress("rank", "articles")

    def finish_bundle(self):
        self.progress.flush()

    def process(self, row: dict):
        self.progress.update()
        yield tally(RANK, IN)
        try:
            out = rank_article(row, self.sp, self.rankers, self.config.corpora,
                               targets=self.config.targets)
        except Exception as exc:  # one article that breaks an extractor is a dead letter
            yield tally(RANK, "error")
            yield TaggedOutput(DEAD, DeadLetter("", str(row.get("id")), row.get("url", ""),
                                                RANK, "error", f"{type(exc).__name__}: {exc}"))
            return
        yield tally(RANK, KEPT)
        shard = stable_hash(str(out["id"])) % self.config.num_shards
        yield (out["split"], shard), out


def input_path(out: str, name: str, split: str, index: int, total: int) -> str:
    return shards.shard_path(FileSystems.join(out, INPUTS, name), split, index, total)


class ModelInputs(beam.DoFn):
    """((split, shard), row) -> ((input name, split, shard), model input) per input spec."""

    def __init__(self, config: RankConfig):
        self.config = config

    def setup(self):
        self.sp = vocab.load(self.config.vocab)
        self.title_sep = vocab.special_ids(self.sp).title_sep

    def process(self, keyed):
        (split, shard), row = keyed
        for spec in self.config.inputs:
            yield (spec.name, split, shard), model_input_row(row, spec, self.sp, self.title_sep)


DEAD_LETTERS = "rank_dead_letters"
DATASET = "dataset.json"


class ReadIngestShards(beam.PTransform):
    """An ingest output -> its article rows. The job itself checks that the output is finished
    (``summary.json``, the whole shard set) and reads the shards by row group."""

    def __init__(self, ingest_dir: str):
        super().__init__()
        self.ingest_dir = ingest_dir

    def expand(self, pbegin):
        return (pbegin | "IngestOutput" >> beam.Create([self.ingest_dir])
                | "CheckFinished" >> beam.FlatMap(outputs.article_shards)
                | "Spread" >> beam.Reshuffle()
                | "ReadParquet" >> beam.io.ReadAllFromParquet())


def output_globs(out: str) -> list[str]:
    """What a run writes (and replaces) in ``out``, as globs; the completion record last."""
    return ([FileSystems.join(out, f"{split}-*.parquet") for split in SPLITS]
            + [FileSystems.join(out, INPUTS, "*", "*.parquet"),
               FileSystems.join(out, DEAD_LETTERS, f"{DEAD_LETTERS}-*.parquet"),
               FileSystems.join(out, card.CARD), FileSystems.join(out, DATASET)])


def dataset_info(config: RankConfig, staged: list[Staged], sp, counts=()) -> dict:
    """dataset.json: what the committed shards hold, and the job's accounting (``stages``,
    :mod:`~wikisum.core.accounting`) from its tallies ``counts``."""
    rows = {split: 0 for split in SPLITS}
    input_rows = {spec.name: {split: 0 for split in SPLITS} for spec in config.inputs}
    inputs = {input_path(config.out, spec.name, split, i, config.num_shards): (spec.name, split)
              for spec in config.inputs for split in SPLITS for i in range(config.num_shards)}
    errors = 0
    for s in staged:
        name = s.final.rsplit("/", 1)[-1]
        if s.final in inputs:
            input_name, split = inputs[s.final]
            input_rows[input_name][split] += s.rows
        elif name.startswith(DEAD_LETTERS):
            errors += s.rows
        else:
            rows[name.split("-", 1)[0]] += s.rows
    return loader.dataset_record(
        config.out, vocab_path=config.vocab, sp=sp, extractors=config.extractor_names(),
        corpora=list(config.corpora), learned=config.learned, num_shards=config.num_shards,
        rows=rows, errors=errors, source=config.ingest_dir, inputs=list(config.inputs),
        input_rows=input_rows, stages=accounting.stages(counts, [RANK]),
        targets=list(config.targets), language=vocab.ingest_language(config.ingest_dir),
        **({"corpora_note": T2T_LISTS_NOTE} if tuple(config.corpora) == ("combined",) else {}))


def build(p: beam.Pipeline, config: RankConfig, token: str) -> None:
    """Add the rank job to pipeline ``p`` (no filesystem is touched here)."""
    out = config.out
    staging = beamio.temp_dir(out, token)
    ranked = (p | "ReadIngestShards" >> ReadIngestShards(config.ingest_dir)
              | "RankArticles" >> beam.ParDo(RankArticles(config)).with_outputs(
                  DEAD, TALLY, main="rows"))
    finals = {(split, i): shards.shard_path(out, split, i, config.num_shards)
              for split in SPLITS for i in range(config.num_shards)}
    staged = [ranked.rows | "WriteShards" >> WriteShards(
        finals, staging, schemas.RANKED, lambda r: r["id"], config.buffer_bytes)]
    input_finals = {(spec.name, split, i): input_path(out, spec.name, split, i, config.num_shards)
                    for spec in config.inputs for split in SPLITS
                    for i in range(config.num_shards)}
    staged.append(ranked.rows | "ModelInputs" >> beam.ParDo(ModelInputs(config))
                  | "WriteModelInputs" >> WriteShards(
                      input_finals, staging, schemas.MODEL_INPUTS, lambda r: r["id"],
                      config.buffer_bytes))
    dead_path = shards.shard_path(FileSystems.join(out, DEAD_LETTERS), DEAD_LETTERS, 0, 1)
    staged.append(ranked[DEAD] | "DeadLetterRows" >> beam.Map(lambda d: (0, asdict(d)))
                  | "WriteDeadLetters" >> WriteShards(
                      {0: dead_path}, staging, schemas.DEAD_LETTERS,
                      lambda d: (d["record"], d["error"]), config.buffer_bytes))

    counts = ranked[TALLY] | "SumTallies" >> beamio.SumTallies()
    card_path = FileSystems.join(out, card.CARD)

    def info_of(files: list[Staged], counts: list) -> dict:
        shown = [s for s in files if s.final != card_path]
        return json.loads(json.dumps(dataset_info(config, shown, vocab.load(config.vocab),
                                                  counts)))

    def record(files: list[Staged], counts: list) -> str:
        return json.dumps(info_of(files, counts), indent=1) + "\n"

    def stage_card(_, files: list[Staged], counts: list) -> Staged:
        return beamio.stage_text(card_path, staging, card.card_text(info_of(files, counts)))

    # The card is staged from what the record will say and renamed into place with the shards,
    # so a dataset.json is never without its card.
    shards_staged = staged | "AllStaged" >> beam.Flatten()
    staged_card = (p | "CardOnce" >> beam.Impulse()
                   | "StageCard" >> beam.Map(stage_card, beam.pvalue.AsList(shards_staged),
                                             beam.pvalue.AsSingleton(counts)))
    _ = ((shards_staged, staged_card) | "WithCard" >> beam.Flatten()
         | "Commit" >> Commit(FileSystems.join(out, DATASET), record, output_globs(out)[:-1],
                              staging, side=[counts]))


def check_inputs(config: RankConfig) -> None:
    names = config.extractor_names()
    for spec in config.inputs:
        if (spec.extractor not in names or spec.corpus not in config.corpora
                or spec.max_input_tokens < 1):
            raise ValueError(f"model inputs {spec.name}: the extractor must be one this run "
                             f"ranks with ({', '.join(names)}), the corpus one of "
                             f"{', '.join(config.corpora)}, and L at least 1")
    if not config.inputs:
        raise ValueError("at least one set of model inputs is needed (the default config)")


def preflight(config: RankConfig) -> None:
    """Before the job (a dry run skips this): the ingest output is finished and every shard's
    footer reads, and the vocabulary loads, so that a bad input is named now, not deep inside
    the job."""
    for path in outputs.article_shards(config.ingest_dir):
        shards.row_count(path)
    sp = vocab.load(config.vocab)
    if "article" in config.targets:
        try:
            articlelayout.section_ids(sp)
        except articlelayout.MissingPieces as exc:
            raise ValueError(f"--targets article: {config.vocab}: {exc}; or train the "
                             "vocabulary again (`wikisum vocab`), which adds them") from None


def run(config: RankConfig, pipeline_options) -> dict | None:
    """Run the job and return ``dataset.json`` (what the shards hold); None for a dry run."""
    check_inputs(config)
    if not beamio.is_dry_run(pipeline_options):
        preflight(config)
    log.info("rank: %s -> %s with %s", config.ingest_dir, config.out,
             ", ".join(config.extractor_names()))
    token = beamio.new_token()
    writes = [beamio.describe_set([shards.shard_path(config.out, split, i, config.num_shards)
                                   for i in range(config.num_shards)]) for split in SPLITS]
    writes += output_globs(config.out)[len(SPLITS):]
    if not beamio.launch("rank", pipeline_options, lambda p: build(p, config, token), writes):
        return None
    return json.loads(shards.read_text(FileSystems.join(config.out, DATASET)))
