"""Headline pairs (Gigaword as Rush et al. 2015 released it) -> Parquet shards of token ids.

The input is two aligned text files, ``*.article.txt`` (the first sentence of a news story) and
``*.title.txt`` (its headline), one example a line. Each pair is tokenised once with a
sentencepiece model shared by sources and targets; AdaDec (Peng et al. 2019) uses BPE with 25k
types on Gigaword, so when no model exists one is trained (BPE) on the train files.

    article.txt, title.txt --count, check aligned--> lines --drop empty--> pairs
        --encode (batches)--> OUT/{split}-NNNNN-of-NNNNN.parquet (schema PAIRS)
    OUT/dataset.json (kind "pairs"; one entry per converted split)
    OUT/drops-{split}.json (lines dropped, by reason, with their line numbers)
    OUT/README.md (dataset card: ``datasets.load_dataset(OUT)`` reads the splits)

An example's id is its 1-based line number in the input files, so ids are stable across runs
and find the line again (``sed -n 'IDp' FILE``). Files are streamed: memory holds one batch of
lines, and the vocabulary sample is a bounded heap, whatever the size of the input.

The configuration (:class:`PairsConfig`, the defaults) is in
:mod:`wikisum.pipeline.pairs_config`, which the command line reads without importing Beam.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems

from wikisum.core import card, files, loader, outputs, schemas, shards, vocab
from wikisum.pipeline.pairs_config import PairsConfig

log = logging.getLogger("wikisum.pairs")

ENCODE_BATCH = 10_000  # lines per sentencepiece call, and rows per Parquet row group
VOCAB_FILE = "vocab.model"
TRAIN = "train"
SPLIT_NAME = re.compile(r"[A-Za-z0-9_]+")  # no "-": `{split}-*.parquet` must match one split
DROP_REASONS = ("empty_source", "empty_target", "empty_both", "decode_error")


@dataclass
class Drops:
    """Lines that did not become rows, by reason; ``lines`` holds their line numbers."""

    counts: Counter = field(default_factory=Counter)
    lines: dict[str, list[int]] = field(default_factory=dict)

    def add(self, reason: str, line: int) -> None:
        self.counts[reason] += 1
        self.lines.setdefault(reason, []).append(line)


# ------------------------------------------------------------------------------------------
# Pure functions


def drop_reason(source: str | None, target: str | None) -> str | None:
    """Why a pair cannot be an example (None: keep it). ``None`` text: the line was not UTF-8."""
    if source is None or target is None:
        return "decode_error"
    if not source.strip():
        return "empty_both" if not target.strip() else "empty_source"
    if not target.strip():
        return "empty_target"
    return None


def shard_of(index: int, total: int, num_shards: int) -> int:
    """The shard of 0-based line ``index`` of ``total``: consecutive lines, near-equal shards."""
    return index * num_shards // total


def check_split(split: str) -> None:
    if not SPLIT_NAME.fullmatch(split):
        raise ValueError(f"split name {split!r} must be letters, digits or '_' (it names the "
                         "shards {split}-NNNNN-of-NNNNN.parquet)")


def check_kind(info: dict | None, out: str) -> None:
    """Pairs are never merged into a ranked (WikiSum) dataset's directory."""
    if info is not None and info.get("kind") != "pairs":
        raise ValueError(f"{out} holds a ranked (WikiSum) dataset "
                         "(its dataset.json has no \"kind\": \"pairs\"); convert pairs into "
                         "another directory")


def merge_info(old: dict | None, split: str, rows: int, num_shards: int, vocab_path: str,
               sp, source: dict) -> dict:
    """``dataset.json`` after converting ``split``: other splits' entries are kept."""
    info = dict(old or {})
    info.update({
        "kind": "pairs",
        "format": schemas.FORMAT_VERSION,
        "relative_paths": True,  # the paths below are relative to dataset.json's directory
        "vocab": vocab_path,
        "vocab_size": sp.get_piece_size(),
        "special_ids": asdict(vocab.special_ids(sp)),
        "extractors": [],
        "corpora": [],
    })
    for key, value in (("rows", rows), ("num_shards", num_shards), ("sources", source)):
        entry = info.get(key)
        info[key] = {**(entry if isinstance(entry, dict) else {}), split: value}
    return info


def forget_split(info: dict, split: str) -> dict:
    """``dataset.json`` without ``split``'s entries."""
    out = dict(info)
    for key in ("rows", "num_shards", "sources"):
        if isinstance(out.get(key), dict):
            out[key] = {k: v for k, v in out[key].items() if k != split}
    return out


# ------------------------------------------------------------------------------------------
# Files


def read_lines(path: str) -> Iterator[bytes]:
    """The lines of a text file, without their line ending; a last line without one counts."""
    try:
        f = FileSystems.open(path, compression_type=CompressionTypes.AUTO)
    except (FileNotFoundError, OSError) as exc:
        raise FileNotFoundError(f"cannot open {path}: {exc}") from exc
    with f:
        while line := f.readline():
            yield line.rstrip(b"\r\n")


def count_lines(path: str) -> int:
    return sum(1 for _ in read_lines(path))


def check_aligned(source: str, target: str) -> int:
    """The number of pairs; a ValueError naming both files when their line counts differ."""
    n_source, n_target = count_lines(source), count_lines(target)
    if n_source != n_target:
        raise ValueError(f"line counts differ: {source} has {n_source} lines, {target} has "
                         f"{n_target}; the files must be aligned line by line")
    return n_source


def read_pairs(source: str, target: str) -> Iterator[tuple[int, str | None, str | None]]:
    """(1-based line number, source text, target text); text None where a line is not UTF-8."""
    for number, (src, tgt) in enumerate(zip(read_lines(source), read_lines(target),
                                            strict=True), start=1):
        yield number, _decode(src), _decode(tgt)


def _decode(line: bytes) -> str | None:
    try:
        return line.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None


def training_texts(source: str, target: str, max_texts: int) -> list[str]:
    """The ``max_texts`` source and target lines with the smallest stable hash, as
    ``wikisum.core.vocab.training_texts`` samples (memory fixed, independent of line order)."""

    def texts():
        for _, src, tgt in read_pairs(source, target):
            if drop_reason(src, tgt) is None:
                yield src.replace(UNK_MARKER, " ")
                yield tgt.replace(UNK_MARKER, " ")

    sample, _ = vocab.smallest_hash_sample(texts(), max_texts)
    if not sample:
        raise ValueError(f"no non-empty pair in {source} / {target}: nothing to train a "
                         "vocabulary on")
    return sample


def _absolute(path: str) -> str:
    """Local paths are recorded absolute, so dataset.json works from any working directory."""
    return path if "://" in path else os.path.abspath(path)


def _same_model(a: str, b: str) -> bool:
    return (vocab.load(a).serialized_model_proto() == vocab.load(b).serialized_model_proto())


def resolve_vocab(config: PairsConfig, info: dict | None) -> tuple[str, bool]:
    """(the vocabulary to encode with, whether it must be trained first).

    Order: ``--vocab``; the one OUT's dataset.json records; OUT/vocab.model; else a new one,
    trained on the train files (converting another split first is an error).
    """
    others = sorted(s for s in (info or {}).get("rows", {}) if s != config.split)
    recorded = loader.resolve_info(info, config.out).get("vocab") if info else None
    if config.vocab is not None:
        if not shards.match(config.vocab):
            raise FileNotFoundError(f"vocabulary {config.vocab} not found")
        if others and recorded and not _same_model(config.vocab, recorded):
            raise ValueError(f"{config.out} holds splits {others} encoded with {recorded}, not "
                             f"{config.vocab}: pass that --vocab or convert into a new --out")
        return _absolute(config.vocab), False
    if recorded:
        if not shards.match(recorded):
            raise FileNotFoundError(f"vocabulary {recorded} (recorded in {config.out}/"
                                    "dataset.json) not found; pass --vocab")
        return recorded, False
    default = FileSystems.join(config.out, VOCAB_FILE)
    if shards.match(default):
        return _absolute(default), False
    if config.split != TRAIN:
        raise ValueError(f"no vocabulary for split {config.split!r}: {default} does not exist. "
                         f"Convert the {TRAIN} split first (it trains one) or pass --vocab")
    return _absolute(default), True


# ------------------------------------------------------------------------------------------
# The conversion


def drops_path(out: str, split: str) -> str:
    return FileSystems.join(out, f"drops-{split}.json")


class _ShardWriter:
    """Writes rows to consecutive shards, one open at a time, in row groups of a batch. Each
    shard is written under a hidden temporary name; :meth:`close` renames the whole set into
    place once every shard is written, and :meth:`abort` removes what was written."""

    def __init__(self, out: str, split: str, total: int):
        self.out, self.split, self.total = out, split, total
        self.index = -1
        self.file = self.writer = None
        self.paths: list[str] = []
        self._temps: list[str] = []

    def advance_to(self, index: int) -> None:
        while self.index < index:  # a shard no line falls into is still written, empty
            self._close()
            self.index += 1
            path = shards.shard_path(self.out, self.split, self.index, self.total)
            temp = shards.temporary_name(path)
            self.file = FileSystems.create(temp, compression_type=CompressionTypes.UNCOMPRESSED)
            self.writer = pq.ParquetWriter(self.file, schemas.PAIRS, compression="zstd")
            self.paths.append(path)
            self._temps.append(temp)

    def write(self, index: int, rows: list[dict]) -> None:
        with files.naming(shards.shard_path(self.out, self.split, index, self.total)):
            self.advance_to(index)
            if rows:
                self.writer.write_table(pa.Table.from_pylist(rows, schema=schemas.PAIRS))

    def close(self) -> None:
        """Every shard finished, the split's earlier shards that this set does not replace
        removed, and the set renamed into place."""
        with files.naming(shards.shard_path(self.out, self.split, self.total - 1, self.total)):
            self.advance_to(self.total - 1)
            self._close()
        for earlier in shards.match(FileSystems.join(self.out, f"{self.split}-*.parquet")):
            if earlier not in self.paths:
                FileSystems.delete([earlier])
        for temp, path in zip(self._temps, self.paths, strict=True):
            shards.rename(temp, path)
        self._temps = []

    def abort(self) -> None:
        try:
            self._close()
        finally:
            for temp in self._temps:
                if FileSystems.exists(temp):
                    FileSystems.delete([temp])
            self._temps = []

    def _close(self) -> None:
        if self.writer is not None:
            self.writer.close()
            self.file.close()
            self.writer = self.file = None


# Rush et al.'s pairs mark words outside their vocabulary with a literal "<unk>". It is one
# unknown word, not text: encoded as the vocabulary's unk id, and kept out of its training text
# (or it becomes three pieces, "<", "unk", ">", and decodes as a word).
UNK_MARKER = "<unk>"


def encode(sp, texts: list[str]) -> list[list[int]]:
    """Subword ids of ``texts``, each literal ``<unk>`` as the unk id."""
    out = []
    for text in texts:
        if UNK_MARKER not in text:
            out.append(sp.encode(text))
            continue
        ids: list[int] = []
        for k, part in enumerate(text.split(UNK_MARKER)):
            if k:
                ids.append(sp.unk_id())
            if part.strip():
                ids.extend(sp.encode(part.strip()))
        out.append(ids)
    return out


def _encode_and_write(batch: list[tuple[int, str, str]], sp, split: str, total_lines: int,
                      writer: _ShardWriter) -> int:
    source_ids = encode(sp, [src for _, src, _ in batch])
    target_ids = encode(sp, [tgt for _, _, tgt in batch])
    by_shard: dict[int, list[dict]] = {}
    for (number, src, tgt), s_ids, t_ids in zip(batch, source_ids, target_ids, strict=True):
        shard = shard_of(number - 1, total_lines, writer.total)
        by_shard.setdefault(shard, []).append({
            "id": number, "split": split, "source": src, "source_ids": s_ids,
            "target": tgt, "target_ids": t_ids})
    for shard in sorted(by_shard):
        writer.write(shard, by_shard[shard])
    return len(batch)


def read_info(out: str) -> dict | None:
    path = FileSystems.join(out, "dataset.json")
    if not shards.match(path):
        return None
    try:
        return json.loads(shards.read_text(path))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); remove it or use another "
                         "--out") from exc


def convert(config: PairsConfig) -> dict:
    """Convert one split; returns the summary (also the content of ``drops-{split}.json``)."""
    check_split(config.split)
    if config.num_shards < 1:
        raise ValueError("num_shards must be at least 1")
    info = read_info(config.out)
    check_kind(info, config.out)
    total = check_aligned(config.source, config.target)
    if total == 0:
        raise ValueError(f"{config.source} and {config.target} are empty")
    vocab_path, train = resolve_vocab(config, info)
    if train:
        log.info("pairs: training a BPE vocabulary (%d types at most) on %s / %s",
                 config.vocab_size, config.source, config.target)
        vocab.train_vocab(training_texts(config.source, config.target, config.max_texts),
                          vocab_path, config.vocab_size, model_type="bpe")
    sp = vocab.load(vocab_path)

    # The split leaves dataset.json before its shards are replaced, and comes back after they
    # are all written: a killed conversion leaves the split unrecorded, never half-recorded
    # (its shards, earlier or new, are there unrecorded, and the loader names the command to
    # rerun). The new shards are staged and replace the earlier ones once all are whole.
    if info is not None and config.split in (info.get("rows") or {}):
        shards.write_text(FileSystems.join(config.out, "dataset.json"),
                          json.dumps(forget_split(info, config.split), indent=1) + "\n")
    # Exemplars point at train ids: converting train again makes every exemplars file stale.
    stale = "*" if config.split == TRAIN else config.split
    removed = shards.match(FileSystems.join(config.out, f"exemplars-{stale}.parquet"))
    shards.delete(FileSystems.join(config.out, f"exemplars-{stale}.parquet"))

    drops, rows = Drops(), 0
    writer = _ShardWriter(config.out, config.split, config.num_shards)
    batch: list[tuple[int, str, str]] = []
    try:
        for number, src, tgt in read_pairs(config.source, config.target):
            reason = drop_reason(src, tgt)
            if reason is not None:
                drops.add(reason, number)
                continue
            batch.append((number, src, tgt))
            if len(batch) >= ENCODE_BATCH:
                rows += _encode_and_write(batch, sp, config.split, total, writer)
                batch = []
        if batch:
            rows += _encode_and_write(batch, sp, config.split, total, writer)
        writer.close()
    except BaseException:
        writer.abort()
        raise

    summary = {
        "split": config.split,
        "source": _absolute(config.source),
        "target": _absolute(config.target),
        "lines": total,
        "rows": rows,
        "dropped": dict(sorted(drops.counts.items())),
        "balanced": total == rows + sum(drops.counts.values()),
        "dropped_lines": {k: drops.lines[k] for k in sorted(drops.lines)},
        "vocab": vocab_path,
        "vocab_trained": train,
        "shards": writer.paths,
        "exemplars_removed": removed,
    }
    shards.write_text(drops_path(config.out, config.split), json.dumps(
        {k: summary[k] for k in ("split", "source", "target", "lines", "rows", "dropped",
                                 "balanced", "dropped_lines")}, indent=1) + "\n")
    # dataset.json's paths are relative to the directory holding it, so OUT can be moved.
    source = {"source": outputs.relative_path(summary["source"], config.out),
              "target": outputs.relative_path(summary["target"], config.out),
              "lines": total, "dropped": summary["dropped"]}
    info = merge_info(info, config.split, rows, config.num_shards,
                      outputs.relative_path(vocab_path, config.out), sp, source)
    card.write_card(config.out, info)  # README.md: `datasets.load_dataset(OUT)` reads the splits
    shards.write_text(FileSystems.join(config.out, "dataset.json"),  # the record, last
                      json.dumps(info, indent=1) + "\n")
    log.info("pairs: %s: %d of %d lines -> %d shards in %s", config.split, rows, total,
             config.num_shards, config.out)
    return summary
