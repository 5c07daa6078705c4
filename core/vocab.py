"""The subword vocabulary shared by inputs and targets (paper: 32k subwords), with sentencepiece.

Training text is a deterministic sample of the train split's leads and reference paragraphs:
the ``max_texts`` texts with the smallest stable hash. A bounded heap keeps memory fixed however
large the corpus, and the sample does not depend on file or row order.
"""

from __future__ import annotations

import heapq
import io
import logging
from dataclasses import dataclass

import sentencepiece as spm

from wikisum.core import files, outputs, shards
from wikisum.core.records import stable_hash
from wikisum.core.vocab_config import DEFAULT_MAX_TEXTS, DEFAULT_SIZE

log = logging.getLogger("wikisum.vocab")

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
TITLE_SEP = "<t>"  # between the title and the ranked paragraphs of a model input
SEP = "<sep>"  # between input and target in decoder-only models (T-D, T-DMCA)
MODEL_TYPES = ("unigram", "bpe")


@dataclass(frozen=True)
class SpecialIds:
    pad: int
    unk: int
    bos: int
    eos: int
    title_sep: int
    sep: int


def special_ids(sp: spm.SentencePieceProcessor) -> SpecialIds:
    return SpecialIds(sp.pad_id(), sp.unk_id(), sp.bos_id(), sp.eos_id(),
                      sp.piece_to_id(TITLE_SEP), sp.piece_to_id(SEP))


def smallest_hash_sample(texts, max_texts: int) -> tuple[list[str], int]:
    """The ``max_texts`` texts with the smallest stable hash, and how many texts were seen.

    A bounded heap (memory fixed whatever the corpus); the sample does not depend on order.
    """
    heap: list[tuple[int, str]] = []  # max-heap by hash, via negation
    seen = 0
    for text in texts:
        seen += 1
        key = -stable_hash(text)
        if len(heap) < max_texts:
            heapq.heappush(heap, (key, text))
        elif key > heap[0][0]:
            heapq.heapreplace(heap, (key, text))
    return [text for _, text in sorted(heap, reverse=True)], seen


def training_texts(ingest_dir: str, max_texts: int = DEFAULT_MAX_TEXTS,
                   split: str = "train") -> list[str]:
    """The ``max_texts`` leads and paragraphs of ``split`` with the smallest stable hash."""

    def texts():
        for row in shards.iter_rows(outputs.article_shards(ingest_dir),
                                    ["split", "lead", "references"]):
            if row["split"] == split:
                yield row["lead"]
                yield from (p for ref in row["references"] for p in ref["paragraphs"])

    sample, seen = smallest_hash_sample(texts(), max_texts)
    if not sample:
        raise ValueError(f"no {split} article in {ingest_dir}: nothing to train a vocabulary on")
    log.info("vocab: %d of %d %s texts sampled", len(sample), seen, split)
    return sample


def train_vocab(texts: list[str], out_path: str, size: int = DEFAULT_SIZE,
                model_type: str = "unigram") -> SpecialIds:
    """Train a sentencepiece model on ``texts`` and write it to ``out_path``.

    ``size`` is an upper bound: on a small corpus sentencepiece stops at the number of pieces
    the text supports (``hard_vocab_limit=False``) instead of failing. ``model_type`` is
    ``"unigram"`` (WikiSum) or ``"bpe"`` (the headline-pair data of AdaDec, Peng et al. 2019).
    """
    if model_type not in MODEL_TYPES:
        raise ValueError(f"model_type {model_type!r} is not one of {MODEL_TYPES}")
    model = io.BytesIO()
    lines = [line for text in texts for line in text.split("\n") if line.strip()]
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, vocab_size=size,
        model_type=model_type, character_coverage=0.9995, hard_vocab_limit=False,
        pad_id=0, unk_id=1, bos_id=2, eos_id=3, user_defined_symbols=[TITLE_SEP, SEP],
        # input_sentence_size 0: every line (sentencepiece refuses sizes 1 to 100).
        max_sentence_length=16384, input_sentence_size=0, shuffle_input_sentence=False,
        num_threads=1, minloglevel=2)
    shards.write_bytes(out_path, model.getvalue())  # whole or not at all
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    log.info("vocab: %d pieces -> %s", sp.get_piece_size(), out_path)
    return special_ids(sp)


def load(path: str) -> spm.SentencePieceProcessor:
    """The sentencepiece model at ``path``.

    Raises:
        ValueError: the file is truncated or not a sentencepiece model (the message names it).
    """
    with files.open_read(path) as f:
        data = f.read()
    try:
        return spm.SentencePieceProcessor(model_proto=data)
    except RuntimeError as exc:
        raise ValueError(f"{path} is not a readable sentencepiece model ({len(data)} bytes; "
                         f"{str(exc).strip()[:200]}): rerun `wikisum vocab`") from exc
