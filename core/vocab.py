"""The subword vocabulary shared by inputs and targets (paper: 32k subwords), with sentencepiece.

Training text is a deterministic sample of the train split's leads and reference paragraphs:
the ``max_texts`` texts with the smallest stable hash. A bounded heap keeps memory fixed however
large the corpus, and the sample does not depend on file or row order.

The trainer suits the language's script (:func:`trainer_settings`). Character coverage follows
sentencepiece's own advice: 0.9995 for languages with a rich character set (Chinese, Japanese,
Korean), whose rarest characters would otherwise take thousands of pieces, and 1.0 for the
others, so that every character of the sample is a piece. Byte fallback spells a character that
is not a piece as its UTF-8 bytes (256 byte pieces), so that no letter becomes ``<unk>``: on the
truncated real dumps (8,000 pieces trained on 80% of the articles' text, the rest encoded), 1.0
without byte fallback still left ``<unk>`` in 9 of 995 Ukrainian, 36 of 752 Vietnamese and
155 of 954 Japanese held-out texts; with it, in none.
"""

from __future__ import annotations

import heapq
import io
import logging
import re
from dataclasses import dataclass

import sentencepiece as spm

from wikisum.core import files, language, outputs, shards
from wikisum.core.articlelayout import PIECES as ARTICLE_PIECES
from wikisum.core.records import stable_hash
from wikisum.core.vocab_config import BYTE_FALLBACK_MIN_SIZE, DEFAULT_MAX_TEXTS, DEFAULT_SIZE

log = logging.getLogger("wikisum.vocab")

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
TITLE_SEP = "<t>"  # between the title and the ranked paragraphs of a model input
SEP = "<sep>"  # between input and target in decoder-only models (T-D, T-DMCA)
MODEL_TYPES = ("unigram", "bpe")

# sentencepiece's advice (its README, --character_coverage): 0.9995 for languages with a rich
# character set, 1.0 for the others.
RICH_CHARACTER_COVERAGE = 0.9995
FULL_CHARACTER_COVERAGE = 1.0
# Languages written with a rich character set (primary subtags): Chinese and the Chinese
# languages with Wikipedias written in Han (Cantonese, Wu, Gan, Classical Chinese, Jin, Xiang),
# Japanese, Korean, and Yi (a syllabary of over 1,000 signs). Tags that carry such a subtag
# but are written in the Latin alphabet are in _LATIN_WRITTEN.
RICH_CHARACTER_SET_LANGUAGES = frozenset(
    {"zh", "ja", "ko", "yue", "wuu", "gan", "lzh", "cjy", "hsn", "cmn", "ii"})
_LATIN_WRITTEN = frozenset({"zh-min-nan"})  # Min Nan Wikipedia: Pe̍h-ōe-jī
# Han (with its extensions and compatibility ideographs), kana, Hangul and Yi: the scripts of
# a rich character set, told apart from the text's own letters when no language is known.
_RICH_SCRIPT = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\ua000-\ua4cf\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff"
    "\uff66-\uff9f\U00020000-\U0003134f]")
# Text is of a rich character set when at least this share of its letters is in those scripts
# (a Japanese or Chinese build whose references quote some English stays one).
_RICH_SCRIPT_SHARE = 1 / 3
_SCRIPT_SAMPLE_CHARS = 2_000_000  # characters of the sample read to tell the script


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


def ingest_language(ingest_dir: str) -> str | None:
    """The articles' language an ingest output records (``summary.json``'s ``language``, else
    the ``lang`` of its options), or None where it records none or cannot be read."""
    try:
        summary = outputs.read_summary(ingest_dir)
    except (OSError, ValueError, shards.IncompleteOutput):
        return None
    options = summary.get("options") if isinstance(summary, dict) else None
    for value in (summary.get("language") if isinstance(summary, dict) else None,
                  options.get("lang") if isinstance(options, dict) else None):
        if isinstance(value, str) and value.strip() and value.strip() != "und":
            return value.strip()
    return None


def has_rich_character_set(lang: str | None = None, texts=()) -> bool:
    """Whether text of ``lang`` (a language tag), or where it is None, ``texts`` (read up to
    two million characters), is written with a rich character set: Han, kana, Hangul or Yi
    (see :data:`RICH_CHARACTER_SET_LANGUAGES`). "und" (undetermined) is no language."""
    tag = (lang or "").strip().lower().replace("_", "-")
    if tag and tag != "und":
        return tag not in _LATIN_WRITTEN \
            and language.primary_subtag(tag) in RICH_CHARACTER_SET_LANGUAGES
    letters = rich = seen = 0
    for text in texts:
        letters += language.letter_count(text)
        rich += len(_RICH_SCRIPT.findall(text))
        seen += len(text)
        if seen >= _SCRIPT_SAMPLE_CHARS:
            break
    return letters > 0 and rich >= _RICH_SCRIPT_SHARE * letters


@dataclass(frozen=True)
class TrainerSettings:
    """What :func:`train_vocab` chose for a language: sentencepiece's ``character_coverage``
    and ``byte_fallback``, and the language (or None: told from the text's script)."""

    character_coverage: float
    byte_fallback: bool
    language: str | None


def trainer_settings(texts, size: int = DEFAULT_SIZE, *, lang: str | None = None,
                     byte_fallback: bool | None = None) -> TrainerSettings:
    """The character coverage for ``lang``'s script (or, where ``lang`` is None, the script
    of ``texts``) and whether to fall back to bytes: ``byte_fallback`` where given, else from
    a requested ``size`` of :data:`BYTE_FALLBACK_MIN_SIZE` on."""
    rich = has_rich_character_set(lang, texts)
    coverage = RICH_CHARACTER_COVERAGE if rich else FULL_CHARACTER_COVERAGE
    if byte_fallback is None:
        byte_fallback = size >= BYTE_FALLBACK_MIN_SIZE
    known = lang if lang and lang.strip() and lang.strip().lower() != "und" else None
    return TrainerSettings(coverage, bool(byte_fallback), known)


def train_vocab(texts: list[str], out_path: str, size: int = DEFAULT_SIZE,
                model_type: str = "unigram", *, lang: str | None = None,
                byte_fallback: bool | None = None) -> SpecialIds:
    """Train a sentencepiece model on ``texts`` and write it to ``out_path``.

    ``size`` is an upper bound, the two control pieces that mark an article's sections
    (:data:`wikisum.core.articlelayout.PIECES`, appended after the trained pieces) included: on
    a small corpus sentencepiece stops at the number of pieces the text supports
    (``hard_vocab_limit=False``) instead of failing. ``model_type`` is
    ``"unigram"`` (WikiSum) or ``"bpe"`` (the headline-pair data of AdaDec, Peng et al. 2019).
    ``lang`` (a language tag; None: told from the text's script) chooses the character
    coverage, ``byte_fallback`` (None: from ``size``) the byte pieces: :func:`trainer_settings`.

    Raises:
        ValueError: the model cannot be trained as asked (``size`` smaller than the
            characters it must hold, byte pieces included); the message says so.
    """
    if model_type not in MODEL_TYPES:
        raise ValueError(f"model_type {model_type!r} is not one of {MODEL_TYPES}")
    settings = trainer_settings(texts, size, lang=lang, byte_fallback=byte_fallback)
    model = io.BytesIO()
    lines = [line for text in texts for line in text.split("\n") if line.strip()]
    try:
        spm.SentencePieceTrainer.train(
            # the two article markers appended below count in ``size``
            sentence_iterator=iter(lines), model_writer=model,
            vocab_size=max(size - len(ARTICLE_PIECES), 8),
            model_type=model_type, character_coverage=settings.character_coverage,
            hard_vocab_limit=False,
            pad_id=0, unk_id=1, bos_id=2, eos_id=3, user_defined_symbols=[TITLE_SEP, SEP],
            # input_sentence_size 0: every line (sentencepiece refuses sizes 1 to 100).
            max_sentence_length=16384, input_sentence_size=0, shuffle_input_sentence=False,
            num_threads=1, minloglevel=2,
            # only when on: a field set to its default is still written into the model
            **({"byte_fallback": True} if settings.byte_fallback else {}))
    except RuntimeError as exc:
        detail = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else repr(exc)
        raise ValueError(
            f"sentencepiece cannot train a vocabulary of {size} pieces here "
            f"(character coverage {settings.character_coverage}, byte fallback "
            f"{'on: 256 byte pieces' if settings.byte_fallback else 'off'}): {detail}"
        ) from exc
    log.info("vocab: language %s, character coverage %s, byte fallback %s",
             settings.language or "told from the script", settings.character_coverage,
             "on" if settings.byte_fallback else "off")
    # the section markers of whole-article targets (wikisum.core.articlelayout), appended as
    # control pieces after every trained piece, so that no trained id moves
    data, _ = with_pieces(model.getvalue(), ARTICLE_PIECES, control=True)
    shards.write_bytes(out_path, data)  # whole or not at all
    sp = spm.SentencePieceProcessor(model_proto=data)
    log.info("vocab: %d pieces -> %s", sp.get_piece_size(), out_path)
    return special_ids(sp)


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, wire: int, payload: bytes) -> bytes:
    return _varint(number << 3 | wire) + payload


def _int_field(number: int, value: int) -> bytes:
    return _field(number, 0, _varint(value & 0xFFFFFFFFFFFFFFFF))


def _piece(text: str, kind: int) -> bytes:
    """A ``ModelProto.SentencePiece`` (piece = 1, score = 2, type = 3) as field 1 of the model."""
    data = text.encode("utf-8")
    body = _field(1, 2, _varint(len(data)) + data) + _field(2, 5, b"\0\0\0\0") + _int_field(3, kind)
    return _field(1, 2, _varint(len(body)) + body)


_USER_DEFINED, _CONTROL = 4, 3
_SPECIAL_FIELDS = {"unk": 40, "bos": 41, "eos": 42, "pad": 43}  # TrainerSpec's *_id fields
_SPECIAL_PIECES = {"pad": PAD, "bos": BOS, "eos": EOS}


def with_special_pieces(model: bytes) -> tuple[bytes, list[str]]:
    """A sentencepiece model that another system trained, made one that wikisum's models can
    use, with every existing piece keeping its id: the pieces it lacks of ``<t>`` and ``<sep>``
    (user-defined) and of padding, start and end (control pieces, where the model has none)
    are appended at the end. Returns the new model and what was added.

    Done on the serialised ``ModelProto`` (sentencepiece's own ``sentencepiece_model_pb2`` needs
    a newer protobuf than Apache Beam allows): a repeated field appended at the end of a
    message adds to the list, and a ``trainer_spec`` appended merges into the one there (the
    last value of a field wins), so nothing before is rewritten.
    """
    model, added = with_pieces(model, (TITLE_SEP, SEP))
    sp = spm.SentencePieceProcessor(model_proto=model)
    size = sp.get_piece_size()
    tail, spec, appended = bytearray(), bytearray(), 0
    current = {"pad": sp.pad_id(), "bos": sp.bos_id(), "eos": sp.eos_id()}
    for name, piece in _SPECIAL_PIECES.items():
        if current[name] >= 0:
            continue
        existing = sp.piece_to_id(piece)
        if existing != sp.unk_id():
            new_id = existing  # the piece is there, not declared as this special id
        else:
            new_id = size + appended
            appended += 1
            tail += _piece(piece, _CONTROL)
            added.append(piece)
        spec += _int_field(_SPECIAL_FIELDS[name], new_id)
    if spec:
        tail += _field(2, 2, _varint(len(spec)) + bytes(spec))
    if not tail:
        return model, added
    extended = model + bytes(tail)
    spm.SentencePieceProcessor(model_proto=extended)  # it loads, or this raises
    return extended, added


def with_pieces(model: bytes, pieces, *, control: bool = False) -> tuple[bytes, list[str]]:
    """``model`` with those of ``pieces`` it lacks appended as user-defined pieces (matched in
    text as one token), or with ``control`` as control pieces (never produced from text, and
    decoded to nothing: markers only a caller places), every existing piece keeping its id;
    returns the model and what was added (see :func:`with_special_pieces`)."""
    sp = spm.SentencePieceProcessor(model_proto=model)
    tail, added = bytearray(), []
    for piece in pieces:
        if piece not in added and sp.piece_to_id(piece) == sp.unk_id() \
                and piece != sp.id_to_piece(sp.unk_id()):
            tail += _piece(piece, _CONTROL if control else _USER_DEFINED)
            added.append(piece)
    if not tail:
        return model, []
    extended = model + bytes(tail)
    spm.SentencePieceProcessor(model_proto=extended)  # it loads, or this raises
    return extended, added


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
