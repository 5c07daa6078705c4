"""The model input of the paper, built from a training shard row for any extractor x corpus x L.

Input: the title's tokens, the title separator, then the ranked paragraphs' tokens in rank
order, cut to the first L tokens. Target: the lead's tokens, not truncated. Shards are streamed
a batch of rows at a time with pyarrow, never a whole split in memory.

    data = Dataset("build/data")
    for ex in data.examples("train", extractor="tfidf", corpus="combined", max_input_tokens=500):
        ex.inputs, ex.targets

Headline-pair datasets (``wikisum convert-pairs``, dataset.json ``"kind": "pairs"``) read the
same way; the input is the source's ids cut to L, and extractor and corpus are ignored:

    for ex in Dataset("build/gigaword").examples("train", max_input_tokens=100, exemplars=True):
        ex.inputs, ex.targets, ex.exemplar  # exemplar: see `wikisum exemplars`

The rows hold text beside the ids (a ranked row's ``title``, ``lead`` and every paragraph's
``text``; a pair's ``source`` and ``target``), so the loader serves two kinds of example: ids in
the dataset's sentencepiece vocabulary for the paper's families (:meth:`Dataset.examples`,
cut to L here), and text for a model with its own tokenizer (:meth:`Dataset.text_examples`:
the title, the paragraphs in rank order and the target's text, which that model tokenises
and cuts to L in its tokens; ``wikisum train --model hf``):

    for ex in data.text_examples("train", extractor="tfidf", corpus="combined"):
        ex.title, ex.paragraphs, ex.target

Two views of a ranked dataset serve the paper's whole-article models (section 6):
``target="article"`` makes the target the whole article (the lead, then each section as
``<sec>`` title ``<eoh>`` text: :mod:`wikisum.core.articlelayout`; a build with
``--targets lead,article``), and ``inputs="title"`` makes the input the title and ``<t>``
alone, the paper's title-only model:

    data.examples("train", "tfidf", "combined", 6000, target="article")
    data.examples("train", target="article", inputs="title")
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace

import pyarrow.parquet as pq

from wikisum.core import files, outputs, shards


@dataclass(frozen=True)
class Example:
    id: int
    title: str
    inputs: list[int]
    targets: list[int]  # the lead's ids (or the article's: target="article"), without </s>
    exemplar: list[int] | None = None  # the retrieved training target's ids (AdaDec, AttExp)


@dataclass(frozen=True)
class TextExample:
    """An example as text, for a model that tokenises it itself: its input is the title (where
    ``titled``), a separator, then ``paragraphs`` in order, cut to L of its own tokens."""

    id: int
    title: str
    paragraphs: list[str]  # ranked references in rank order; a pair's source; [] title-only
    target: str  # the lead's text (a pair's target)
    titled: bool = True  # False for a headline pair: the input is the source alone


def ranking(row: dict, extractor: str, corpus: str) -> list[int]:
    """The stored order of paragraph indices for ``extractor`` on ``corpus``."""
    for entry in row["rankings"]:
        if entry["extractor"] == extractor and entry["corpus"] == corpus:
            return entry["order"]
    available = sorted({(e["extractor"], e["corpus"]) for e in row["rankings"]})
    raise KeyError(f"no ranking for extractor {extractor!r} on corpus {corpus!r} in article "
                   f"{row['id']}; available: {available}")


def build_input(row: dict, extractor: str, corpus: str, max_tokens: int,
                title_sep_id: int) -> list[int]:
    """title + <t> + ranked paragraphs, the first ``max_tokens`` tokens."""
    if max_tokens < 1:
        raise ValueError("max_tokens (L) must be at least 1")
    ids = list(row["title_ids"]) + [title_sep_id]
    paragraphs = row["paragraphs"]
    for i in ranking(row, extractor, corpus):
        if len(ids) >= max_tokens:
            break
        ids.extend(paragraphs[i]["ids"])
    return ids[:max_tokens]


def model_input_row(row: dict, spec, sp, title_sep: int) -> dict:
    """A training row -> its ready model input for ``spec`` (an ``InputSpec``; schema
    ``MODEL_INPUTS``), as ``wikisum rank`` and ``wikisum import`` write them."""
    ids = build_input(row, spec.extractor, spec.corpus, spec.max_input_tokens, title_sep)
    return {"id": row["id"], "title": row["title"], "input": sp.decode(ids),
            "target": row["lead"], "input_ids": ids, "target_ids": list(row["lead_ids"])}


def ranked_texts(row: dict, extractor: str, corpus: str) -> list[str]:
    """The paragraphs' texts in rank order (for extractive evaluation)."""
    return [row["paragraphs"][i]["text"] for i in ranking(row, extractor, corpus)]


# What a ranked dataset's examples are made of: the target (the lead, or the whole article where
# the build wrote it) and the input (the ranked references after the title, or the title alone).
TARGETS = ("lead", "article")
TARGET_COLUMNS = {"lead": "lead_ids", "article": "article_ids"}
INPUT_VIEWS = ("ranked", "title")
# The paper trains the whole-article model on at most 2,192 target tokens, skipping longer
# examples; a lead is not cut (section 4.2.1).
DEFAULT_MAX_TARGET_TOKENS = {"lead": None, "article": 2192}

KINDS = ("ranked", "pairs")  # dataset.json "kind"; absent means "ranked"
SPLITS = ("train", "dev", "test")  # listed first, in this order, by Dataset.splits
PATH_KEYS = ("vocab", "learned_model", "source")  # dataset.json entries that name files
PAIR_PATH_KEYS = ("source", "target")  # in each split's entry of a pairs dataset's "sources"


def resolve_info(info: dict, data_dir: str) -> dict:
    """dataset.json with the paths it names made openable from the working directory.

    A dataset.json with ``"relative_paths": true`` stores them relative to its own directory
    (``"vocab": "../vocab.model"``), so the dataset can be moved. An older one stores them as
    given on the command line, relative to the directory the job ran in: such a path is kept
    when it exists from here; else the first that exists of the path taken against the
    dataset's directory and its file name in that directory or the one above (a moved build:
    OUT/data's vocabulary is OUT/vocab.model); else it is kept as given.
    """

    def resolve(path):
        if not isinstance(path, str) or not path:
            return path
        if info.get("relative_paths"):
            return outputs.resolve_path(path, data_dir)
        if "://" in path or os.path.isabs(path) or os.path.exists(path):
            return path
        name = os.path.basename(path.rstrip("/"))
        parent = outputs.resolve_path("..", data_dir)
        for candidate in (outputs.resolve_path(path, data_dir), files.join(data_dir, name),
                          files.join(parent, name)):
            if files.exists(candidate):
                return candidate
        return path

    out = dict(info)
    for key in PATH_KEYS:
        if key in out:
            out[key] = resolve(out[key])
    if isinstance(out.get("sources"), dict):
        out["sources"] = {
            split: {k: resolve(v) if k in PAIR_PATH_KEYS else v for k, v in entry.items()}
            if isinstance(entry, dict) else entry
            for split, entry in out["sources"].items()}
    return out


INPUTS = "inputs"  # DATA/inputs/{EXTRACTOR}-{CORPUS}-{L}/: ready model inputs


def dataset_record(out: str, *, vocab_path: str, sp, extractors: list[str], corpora: list[str],
                   num_shards: int, rows: dict, errors: int, source: str | None,
                   inputs: list, input_rows: dict, stages: dict,
                   learned: str | None = None, **extra) -> dict:
    """dataset.json of a ranked dataset in ``out``, as ``wikisum rank`` and ``wikisum import``
    write it: paths relative to ``out`` (so that the dataset can be moved), the vocabulary and
    its special ids, the extractors and corpora of the rankings, rows per split, the ready
    model inputs (``inputs``: InputSpecs, the first the default), the accounting ``stages``,
    and the writer's own keys ``extra``."""
    from wikisum.core import schemas, vocab  # pyarrow and sentencepiece: only when writing

    return {
        "format": schemas.FORMAT_VERSION,
        "relative_paths": True,
        "vocab": outputs.relative_path(vocab_path, out),
        "vocab_size": sp.get_piece_size(),
        "special_ids": asdict(vocab.special_ids(sp)),
        "extractors": list(extractors),
        "corpora": list(corpora),
        "learned_model": outputs.relative_path(learned, out),
        "num_shards": num_shards,
        "rows": rows,
        "errors": errors,
        "source": outputs.relative_path(source, out),
        "inputs": {spec.name: {"extractor": spec.extractor, "corpus": spec.corpus,
                               "max_input_tokens": spec.max_input_tokens,
                               "path": f"{INPUTS}/{spec.name}", "rows": input_rows[spec.name]}
                   for spec in inputs},
        "default_inputs": inputs[0].name,
        "stages": stages,
        **extra,
    }


def dataset_default_input(data: str) -> dict:
    """The extractor, corpus and L of the dataset's default model input (dataset.json's
    ``default_inputs``), which a run reads unless told otherwise: an imported hiersumm dataset
    has only the ranking ``given``. {} where the dataset does not say (or cannot be read yet:
    reading it then says why)."""
    try:
        info = json.loads(files.read_text(files.join(data, outputs.DATASET_RECORD)))
        spec = info["inputs"][info["default_inputs"]]
        return {"extractor": spec["extractor"], "corpus": spec["corpus"],
                "max_input_tokens": int(spec["max_input_tokens"])}
    except (OSError, ValueError, KeyError, TypeError):
        return {}


def exemplars_path(data_dir: str, split: str) -> str:
    """Where ``wikisum exemplars`` writes the retrieved exemplar of each ``split`` example."""
    return files.join(data_dir, f"exemplars-{split}.parquet")


def _read_columns(path: str, columns: list[str]):
    with files.open_read(path) as f:
        return pq.read_table(f, columns=columns)


class Dataset:
    """A directory of shards per split and ``dataset.json``: written by ``wikisum rank``
    (WikiSum articles, kind "ranked") or ``wikisum convert-pairs`` (headline pairs, "pairs").
    The root of a ``wikisum build`` reads as its data/ (``Dataset("build").dir`` is
    ``build/data``).

    With ``examples(..., exemplars=True)`` each example carries the target ids of the training
    example retrieved for it (``wikisum exemplars``). Those targets are loaded once per Dataset,
    on first use, into a dict train id -> ids holding every train example that an exemplars
    file refers to (at most the whole train split's targets); the split being read streams.
    """

    def __init__(self, data_dir: str):
        # A build's root reads as its data/ (outputs.dataset_dir, which raises naming both).
        self.dir = data_dir = outputs.dataset_dir(data_dir)
        info_path = files.join(data_dir, outputs.DATASET_RECORD)
        try:
            self.info = resolve_info(json.loads(shards.read_text(info_path)), data_dir)
        except OSError as exc:
            raise FileNotFoundError(f"{info_path} cannot be read: {exc}") from exc
        self.special_ids = self.info["special_ids"]
        self.kind = self.info.get("kind", "ranked")
        if self.kind not in KINDS:
            raise ValueError(f"{info_path}: unknown dataset kind {self.kind!r}; expected one "
                             f"of {KINDS}")
        self._exemplar_targets: dict[int, tuple[int, ...]] | None = None
        self._exemplar_target = "lead"

    @property
    def targets(self) -> list[str]:
        """The targets the rows hold (dataset.json ``targets``; the lead where it says none)."""
        if self.kind == "pairs":
            return ["lead"]
        return list(self.info.get("targets") or ["lead"])

    def target_column(self, target: str = "lead") -> str:
        """The column of ``target``'s ids (:func:`check_view` first for a clear error)."""
        return "target_ids" if self.kind == "pairs" else TARGET_COLUMNS[target]

    def check_view(self, target: str = "lead", inputs: str = "ranked") -> None:
        """Raises ValueError, saying what to do, when the dataset cannot give examples of
        ``target`` from ``inputs``."""
        if target not in TARGETS:
            raise ValueError(f"target {target!r}: choose from {', '.join(TARGETS)}")
        if inputs not in INPUT_VIEWS:
            raise ValueError(f"inputs {inputs!r}: choose from {', '.join(INPUT_VIEWS)}")
        if self.kind == "pairs" and (target, inputs) != ("lead", "ranked"):
            raise ValueError(f"{self.dir} is a headline-pairs dataset: its examples are its "
                             "sources and targets (target=lead, inputs=ranked), it has no "
                             "articles or titles")
        if target not in self.targets:
            raise ValueError(f"{self.dir} has no {target} targets (its dataset.json: targets "
                             f"{self.targets}): build it with `wikisum rank --targets "
                             f"lead,{target}` (or `wikisum build --targets lead,{target}`)")

    def files(self, split: str) -> list[str]:
        """The split's shards, checked to be the whole set dataset.json records; [] for a split
        the dataset does not have.

        Raises:
            IncompleteOutput: shards are missing, or left by another run.
        """
        pattern = files.join(self.dir, f"{split}-*.parquet")
        rows = self.info.get("rows")
        if isinstance(rows, dict) and split not in rows:
            if shards.match(pattern):
                raise shards.IncompleteOutput(
                    f"{self.dir}: {split} shards are there but dataset.json does not record the "
                    f"split (the job writing it did not finish); {self._rerun(split)}")
            return []
        counts = self.info.get("num_shards")
        expected = counts.get(split) if isinstance(counts, dict) else counts
        return shards.complete_set(pattern, expected, f"{self.dir}: the {split} split",
                                   self._rerun(split))

    def _rerun(self, split: str) -> str:
        if self.kind == "pairs":
            return f"rerun `wikisum convert-pairs --split {split} --out {self.dir}`"
        return f"rerun `wikisum rank --out {self.dir}`"

    def splits(self) -> list[str]:
        """The splits dataset.json records (for a record without row counts, the splits its
        shards are named for): train, dev and test first, then the others by name."""
        rows = self.info.get("rows")
        if isinstance(rows, dict):
            names = set(rows)
        else:
            pattern = files.join(self.dir, "*-*-of-*.parquet")
            names = {os.path.basename(p).rsplit("-", 3)[0] for p in shards.match(pattern)}
        known = [s for s in SPLITS if s in names]
        return known + sorted(names - set(known))

    def split_files(self, split: str) -> list[str]:
        """The shards of ``split`` (:meth:`files`), for a reader that needs the split.

        Raises:
            FileNotFoundError: the dataset has no shards of ``split``; the message lists the
                splits it has.
            IncompleteOutput: as :meth:`files`, and for shards of a split that dataset.json
                does not record (a run that was writing them did not finish): the message
                names the command to rerun.
        """
        recorded = isinstance(self.info.get("rows"), dict)
        files = self.files(split) if recorded or split in self.splits() else []
        if not files:
            raise FileNotFoundError(f"{self.dir} has no {split!r} split; its splits: "
                                    f"{', '.join(self.splits()) or 'none'}")
        return files

    def rows(self, split: str, columns: list[str] | None = None) -> Iterator[dict]:
        return shards.iter_rows(self.split_files(split), columns)

    def examples(self, split: str, extractor: str | None = None, corpus: str | None = None,
                 max_input_tokens: int | None = None, *, exemplars: bool = False,
                 target: str = "lead", inputs: str = "ranked") -> Iterator[Example]:
        """The split's examples in shard order; for pairs, extractor and corpus are ignored and
        ``max_input_tokens`` None keeps whole sources. ``exemplars``: attach each example's
        retrieved training target (``Example.exemplar``, of the same ``target``).
        ``target``: "lead" or "article"; ``inputs``: "ranked" or "title" (the title and
        ``<t>`` only; extractor and corpus are not read then)."""
        self.check_view(target, inputs)
        if self.kind == "pairs":
            stream = self._pair_examples(split, max_input_tokens)
        elif inputs == "title":
            stream = self._title_examples(split, target, max_input_tokens)
        else:
            stream = self._ranked_examples(split, extractor, corpus, max_input_tokens, target)
        yield from self._with_exemplars(split, stream, target) if exemplars else stream

    def text_examples(self, split: str, extractor: str | None = None,
                      corpus: str | None = None, *, target: str = "lead",
                      inputs: str = "ranked") -> Iterator[TextExample]:
        """The split's examples as text (:class:`TextExample`), in the order of
        :meth:`examples`. Only the lead has a text column: ``target="article"`` is refused."""
        self.check_view(target, inputs)
        if target != "lead":
            raise ValueError(f"{self.dir}: whole-article targets are held as ids only; a model "
                             "that reads text trains on the lead")
        if self.kind == "pairs":
            for row in self.rows(split, ["id", "source", "target"]):
                yield TextExample(row["id"], "", [row["source"]], row["target"], titled=False)
            return
        if inputs == "title":
            for row in self.rows(split, ["id", "title", "lead"]):
                yield TextExample(row["id"], row["title"], [], row["lead"])
            return
        if extractor not in self.info["extractors"]:
            raise ValueError(f"extractor {extractor!r} not in this dataset; it has "
                             f"{self.info['extractors']}")
        if corpus not in self.info["corpora"]:
            raise ValueError(f"corpus {corpus!r} not in {self.info['corpora']}")
        for row in self.rows(split, ["id", "title", "lead", "paragraphs", "rankings"]):
            yield TextExample(row["id"], row["title"], ranked_texts(row, extractor, corpus),
                              row["lead"])

    def _pair_examples(self, split: str, max_input_tokens: int | None) -> Iterator[Example]:
        if max_input_tokens is not None and max_input_tokens < 1:
            raise ValueError("max_input_tokens (L) must be at least 1")
        for row in self.rows(split, ["id", "source_ids", "target_ids"]):
            yield Example(row["id"], "", list(row["source_ids"][:max_input_tokens]),
                          list(row["target_ids"]))

    def _ranked_examples(self, split: str, extractor: str | None, corpus: str | None,
                         max_input_tokens: int | None, target: str = "lead"
                         ) -> Iterator[Example]:
        if max_input_tokens is None:
            raise ValueError("max_input_tokens (L) is required for a ranked dataset")
        if extractor not in self.info["extractors"]:
            raise ValueError(f"extractor {extractor!r} not in this dataset; it has "
                             f"{self.info['extractors']}")
        if corpus not in self.info["corpora"]:
            raise ValueError(f"corpus {corpus!r} not in {self.info['corpora']}")
        sep = self.special_ids["title_sep"]
        column = self.target_column(target)
        for row in self.rows(split, ["id", "title", "title_ids", column, "paragraphs",
                                     "rankings"]):
            yield Example(row["id"], row["title"],
                          build_input(row, extractor, corpus, max_input_tokens, sep),
                          list(row[column] or ()))

    def _title_examples(self, split: str, target: str,
                        max_input_tokens: int | None) -> Iterator[Example]:
        if max_input_tokens is not None and max_input_tokens < 1:
            raise ValueError("max_input_tokens (L) must be at least 1")
        sep = self.special_ids["title_sep"]
        column = self.target_column(target)
        for row in self.rows(split, ["id", "title", "title_ids", column]):
            ids = [*row["title_ids"], sep][:max_input_tokens]
            yield Example(row["id"], row["title"], ids, list(row[column] or ()))

    def exemplar_ids(self, split: str) -> dict[int, int]:
        """id -> the train id retrieved for it, from ``exemplars-{split}.parquet``."""
        path = exemplars_path(self.dir, split)
        if not shards.match(path):
            raise FileNotFoundError(f"{path} not found: run `wikisum exemplars --data "
                                    f"{self.dir}` first (it retrieves a training exemplar for "
                                    "every example)")
        table = _read_columns(path, ["id", "exemplar_id"])
        return dict(zip(table["id"].to_pylist(), table["exemplar_id"].to_pylist(), strict=True))

    def exemplar_targets(self, target: str = "lead") -> dict[int, tuple[int, ...]]:
        """train id -> ``target``'s ids, for every train id some exemplars file refers to; read
        once (per target)."""
        if self._exemplar_targets is None or self._exemplar_target != target:
            needed: set[int] = set()
            for path in shards.match(exemplars_path(self.dir, "*")):
                needed.update(_read_columns(path, ["exemplar_id"])["exemplar_id"].to_pylist())
            column = self.target_column(target)
            self._exemplar_targets = {row["id"]: tuple(row[column] or ())
                                      for row in self.rows("train", ["id", column])
                                      if row["id"] in needed}
            self._exemplar_target = target
        return self._exemplar_targets

    def _with_exemplars(self, split: str, stream: Iterator[Example],
                        target: str = "lead") -> Iterator[Example]:
        retrieved = self.exemplar_ids(split)
        targets = self.exemplar_targets(target)
        rerun = f"rerun `wikisum exemplars --data {self.dir}`"
        for ex in stream:
            if ex.id not in retrieved:
                raise ValueError(f"{exemplars_path(self.dir, split)} has no row for {split} id "
                                 f"{ex.id}: it is older than the shards; {rerun}")
            exemplar = targets.get(retrieved[ex.id])
            if exemplar is None:
                raise ValueError(f"exemplar {retrieved[ex.id]} of {split} id {ex.id} is not a "
                                 f"train id of {self.dir}; {rerun}")
            yield replace(ex, exemplar=list(exemplar))
