"""``wikisum write-as``: a wikisum dataset written in another system's format (the inverse of
``wikisum import``), so that hiersumm, PRIMERA or a Multi-News trainer trains on data built
here. Rows are streamed a batch at a time from the dataset's shards.

What each example becomes: its documents are its references, each the lines of its
paragraphs in their original order (PRIMERA's ``text``, Multi-News' ``document``, the generic
``documents``); its ranked paragraphs are those of one extractor x corpus, best first, cut to
``max_paragraphs`` (hiersumm's ``src``, with their token ids in the dataset's vocabulary); the
target is the lead (``summary``, ``tgt``). An imported example keeps the id it had in its source.

hiersumm's loader needs pieces of its own in the vocabulary (``<S>``, ``</S>``, ``<PAD>``,
``<Q>``, ...): the dataset's model with those appended (every id kept) is written beside the
shards as ``spm.model``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from wikisum.core import files, loader, ownership, shards, vocab
from wikisum.core.progress import Progress
from wikisum.formats import datasets
from wikisum.formats.config import WriteAsConfig

VOCAB_NAME = "spm.model"  # beside hiersumm's shards (its code loads a model by path)
RECORD = ".wikisum-write-as.json"  # hidden: the formats' readers skip it


def unfinished(folder: str) -> str | None:
    """Why ``folder`` must not be read: it is an output of ``wikisum write-as`` (its marker
    says so) without the record the command writes last, so the run that wrote it was killed
    or failed part-way; None for any other folder (a finished one, or files of another
    system)."""
    if not files.is_dir(folder) or files.exists(files.join(folder, RECORD)) or \
            (ownership.read_marker(folder) or {}).get("command") != "write-as":
        return None
    return (f"{folder} holds an unfinished `wikisum write-as` output ({RECORD} is written "
            f"last and is missing): rerun `wikisum write-as ... --out {folder}`")


def documents_of(row: dict) -> tuple[str, ...]:
    """An example's documents: per reference, its paragraphs' lines in their own order."""
    by_reference: dict[int, list[str]] = {}
    for p in row["paragraphs"]:
        by_reference.setdefault(p["reference"], []).append(p["text"])
    return tuple("\n".join(texts) for _, texts in sorted(by_reference.items()))


def out_example(row: dict, split: str, extractor: str, corpus: str, max_paragraphs: int,
                max_paragraph_tokens: int | None) -> datasets.OutExample:
    order = loader.ranking(row, extractor, corpus)[:max_paragraphs]
    paragraphs = [row["paragraphs"][i] for i in order]
    return datasets.OutExample(
        split=split, id=row.get("source_id") or str(row["id"]), title=row["title"],
        documents=documents_of(row), paragraphs=tuple(p["text"] for p in paragraphs),
        paragraph_ids=tuple(tuple(p["ids"][:max_paragraph_tokens]) for p in paragraphs),
        summary=row["lead"], summary_ids=tuple(row["lead_ids"]))


def examples(data: loader.Dataset, config: WriteAsConfig, bar: Progress | None = None
             ) -> Iterator[datasets.OutExample]:
    for split in config.splits:
        if split not in data.splits():
            continue
        for row in data.rows(split):
            if bar is not None:
                bar.update()
            yield out_example(row, split, config.extractor, config.corpus,
                              config.max_paragraphs, config.max_paragraph_tokens)


def run(config: WriteAsConfig) -> dict:
    """Write ``config.data`` as ``config.format`` into ``config.out``; returns the record
    written beside the files (``.wikisum-write-as.json``)."""
    data = loader.Dataset(config.data)
    if data.kind != "ranked":
        raise ValueError(f"{data.dir} is a {data.kind} dataset; write-as writes ranked "
                         "datasets (WikiSum, imported ones)")
    if config.extractor not in data.info["extractors"] or \
            config.corpus not in data.info["corpora"]:
        raise ValueError(f"{data.dir} has the extractors {', '.join(data.info['extractors'])} "
                         f"and the corpora {', '.join(data.info['corpora'])}; choose with "
                         "--extractor and --corpus")
    # Over an earlier output of this command its files are replaced: its record goes once the
    # new files are whole, before any is renamed into place, and the new record comes last.
    record_path = files.join(config.out, RECORD)
    replace = (record_path,) if ownership.is_ours_dir(config.out, "write-as") else None
    sp, also = None, {}
    if config.format == "hiersumm":
        model, added = vocab.with_pieces(files.read_bytes(data.info["vocab"]),
                                         datasets.HIERSUMM_PIECES.values())
        also[files.join(config.out, VOCAB_NAME)] = model  # renamed into place with the shards
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_proto=model)
    total = sum((data.info.get("rows") or {}).get(s, 0) for s in config.splits) or None
    with Progress(f"write-as {config.format}", total=total, unit="examples") as bar:
        report = datasets.write(config.format, examples(data, config, bar), config.out, sp=sp,
                                shard_size=config.shard_size,
                                max_paragraphs=config.max_paragraphs, replace=replace,
                                also=also)
    record = {
        "format": config.format, "data": data.dir, "extractor": config.extractor,
        "corpus": config.corpus, "max_paragraphs": config.max_paragraphs,
        "written": report.written, "dropped": report.dropped_counts(),
        "files": [f.rsplit("/", 1)[-1] for f in report.files],
        "vocab": VOCAB_NAME if sp is not None else None,
    }
    shards.write_text(record_path, json.dumps(record, indent=1) + "\n")
    return record
