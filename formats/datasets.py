"""Readers and writers of the multi-document summarisation datasets researchers train on, so that
data built here trains their systems and theirs can be imported here.

Each reader turns one format into :class:`SourceExample` records, streamed: JSON Lines, CSV and
text files line by line, JSON arrays element by element, Parquet by row batches, ``.pt`` files one
file at a time (:mod:`wikisum.formats.torchfiles`, ``weights_only``), so memory is bounded by the
largest record (or ``.pt`` file), never by the dataset. A record that cannot be converted is
yielded as a :class:`Problem` (file, record, reason, detail) for the caller to count, and the
next record is read: never a crash, never a silent loss. So is one over the limits the caller
gives (:class:`~wikisum.formats.config.ReadLimits`: bytes, paragraphs, token ids; a longer line
or array element is skipped in chunks, never held), one nested too deep, one whose text is not
Unicode or holds control characters, and one whose format separators say two things at once.
Nothing is cut: an example is read whole or is a Problem. A whole file that cannot be read (no
split in its name, a refused ``.pt``, one that declares more tensor bytes than it holds) raises,
naming the file.

Each writer is the inverse: :func:`write` takes :class:`OutExample` records and lays out the files
exactly as the system's own loader globs and reads them. Every file is written under a temporary
name and renamed, all together, once every one is whole.

This module is the API (``read``, ``detect``, ``write`` and the records); the work is in
:mod:`~wikisum.formats.examples` (records, reasons, splits, markup),
:mod:`~wikisum.formats.sources` (record sources and field checks),
:mod:`~wikisum.formats.readers` and :mod:`~wikisum.formats.writers`.

The layouts, as each system's code reads them:

- ``hiersumm`` (Liu & Lapata 2019, nlpyang/hiersumm): ``WIKI.{train,valid,test}.N.pt``, each a
  list of ``{"src": [[ids] per ranked paragraph], "tgt": [BOS, ids..., EOS], "tgt_str": str}``
  (src/abstractive/data_loader.py ``load_dataset`` and ``AbstracticeIterator.preprocess``).
  ``<Q>`` separates the target's sentences (``tgt_str`` words and ``EOQ`` ids).
- ``graphsum`` (Li et al. 2020, PaddlePaddle/Research NLP/ACL2020-GraphSum): one JSON *array*
  per file, ``*.{split}.N.json`` in ``train/``, ``valid/``, ``test/`` folders, elements
  ``{"src", "tgt", "src_str"?, "tgt_str", "sim_graph"}`` (graphsum_reader.py ``load_dataset``).
- ``primera`` (Xiao et al. 2022, allenai/PRIMER): ``train.pt``, ``valid.pt`` (or ``val.pt``),
  ``test.pt``, each a list of ``{"text": [documents], "tgt": str}`` (script/dataloader.py).
- ``wikicatsum`` (Perez-Beltrachini et al. 2019): GEM/wiki_cat_sum's JSON Lines
  ``main_splits/{train,valid,test}-{animal,company,film}.jsonl`` (or its Parquet conversion) of
  ``{gem_id, id, title, paragraphs: [...], summary: {text: [sentences], topic: [ids]}}``, or the
  release's ``{split}.src``/``{split}.tgt`` lines: ``title <EOT> paragraph <EOP> paragraph``
  and ``sentence <SNT> sentence``.
- ``multinews`` (Fabbri et al. 2019): ``document`` (documents separated by ``|||||``) and
  ``summary``; the hub's ``train``/``validation``/``test`` files (JSON Lines, CSV, Parquet) or the
  release's ``{train,val,test}.src[.cleaned]``/``.tgt`` lines, whose newlines are written
  ``NEWLINE_CHAR`` and whose summaries start with ``– ``.
- ``jsonl``: JSON Lines of ``{id, title, documents: [...], summary}``, one file a split.

How markers become text in :attr:`SourceExample.summary` and ``documents``: a paragraph break
(WikiCatSum's ``<EOP>`` and ``<NLTOKEN>``, Multi-News' ``NEWLINE_CHAR``) is a newline; a sentence
break (``<SNT>``, hiersumm's ``<Q>``) is a space, as hiersumm's own scorer turns ``<Q>`` into
one; ``<t>``/``</t>`` are dropped; Multi-News' leading ``– `` is dropped. Whitespace is collapsed
within each line and blank lines are dropped.
"""


from wikisum.formats.examples import (  # noqa: F401  (the module's API, re-exported)
    AMBIGUOUS_SEPARATOR,
    BAD_ENCODING,
    BAD_IDS,
    BAD_TARGET_IDS,
    CONTROL_CHARACTERS,
    DEFAULT_SHARD_SIZE,
    EMPTY_SUMMARY,
    HIERSUMM_PIECES,
    MALFORMED_JSON,
    MALFORMED_ROW,
    MAX_PARAGRAPHS,
    MISSING_FIELD,
    MULTINEWS_SEPARATOR,
    NO_DOCUMENTS,
    NO_PARAGRAPHS,
    REASONS,
    RESERVED_PIECE,
    SPLIT_NAMES,
    SPLITS,
    TOO_DEEP,
    TOO_LARGE,
    TOO_MANY_PARAGRAPHS,
    UNPAIRED_LINE,
    UNREAD_REST,
    WRONG_TYPE,
    OutExample,
    Problem,
    SourceExample,
    WriteReport,
    clean_lines,
    expand,
    hiersumm_summary,
    hiersumm_symbols,
    multinews_documents,
    multinews_summary,
    split_of,
    wikicatsum_text,
)
from wikisum.formats.readers import READERS, detect, read  # noqa: F401
from wikisum.formats.writers import (  # noqa: F401
    WRITERS,
    hiersumm_record,
    jsonl_record,
    multinews_record,
    write,
)
