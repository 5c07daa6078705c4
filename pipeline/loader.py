"""The model input of the paper, built from a training shard row for any extractor x corpus x L.

Input: the title's tokens, the title separator, then the ranked paragraphs' tokens in rank
order, cut to the first L tokens. Target: the lead's tokens, not truncated. Shards are streamed
a batch of rows at a time with pyarrow, never a whole split in memory.

    data = Dataset("build/data")
    for ex in data.examples("train", extractor="tfidf", corpus="combined", max_input_tokens=500):
        ex.inputs, ex.targets
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass

from apache_beam.io.filesystems import FileSystems

from pipeline import shards


@dataclass(frozen=True)
class Example:
    id: int
    title: str
    inputs: list[int]
    targets: list[int]  # the lead's ids, without </s>
    exemplar: list[int] | None = None  # the retrieved training target's ids (AdaDec, AttExp)


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


def ranked_texts(row: dict, extractor: str, corpus: str) -> list[str]:
    """The paragraphs' texts in rank order (for extractive evaluation)."""
    return [row["paragraphs"][i]["text"] for i in ranking(row, extractor, corpus)]


class Dataset:
    """A directory written by ``wikisum rank``: shards per split and ``dataset.json``."""

    def __init__(self, data_dir: str):
        self.dir = data_dir
        info_path = FileSystems.join(data_dir, "dataset.json")
        try:
            self.info = json.loads(shards.read_text(info_path))
        except (FileNotFoundError, OSError) as exc:
            raise FileNotFoundError(f"{info_path} not found: is {data_dir} the output of "
                                    "`wikisum rank` (or `wikisum build`)?") from exc
        self.special_ids = self.info["special_ids"]

    def files(self, split: str) -> list[str]:
        return shards.match(FileSystems.join(self.dir, f"{split}-*.parquet"))

    def rows(self, split: str, columns: list[str] | None = None) -> Iterator[dict]:
        files = self.files(split)
        if not files:
            raise FileNotFoundError(f"no {split} shards in {self.dir}")
        return shards.iter_rows(files, columns)

    def examples(self, split: str, extractor: str, corpus: str,
                 max_input_tokens: int) -> Iterator[Example]:
        if extractor not in self.info["extractors"]:
            raise ValueError(f"extractor {extractor!r} not in this dataset; it has "
                             f"{self.info['extractors']}")
        if corpus not in self.info["corpora"]:
            raise ValueError(f"corpus {corpus!r} not in {self.info['corpora']}")
        sep = self.special_ids["title_sep"]
        for row in self.rows(split, ["id", "title", "title_ids", "lead_ids", "paragraphs",
                                     "rankings"]):
            yield Example(row["id"], row["title"],
                          build_input(row, extractor, corpus, max_input_tokens, sep),
                          list(row["lead_ids"]))
