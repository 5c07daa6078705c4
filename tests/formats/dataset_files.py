"""Files in the layouts other systems publish and read, written for the tests of
:mod:`wikisum.formats.datasets`. Each writer follows the system's own code, cited in its
docstring, and shares nothing with the module under test (the special pieces, separators and
file names are spelt out again here), so that a test compares the module with the system, not
with itself.

A :class:`Case` is one example in neutral form: its documents (each a list of paragraphs) and
its summary's sentences. Each writer lays cases out in its format; each test says what the
reader must make of them.
"""

from __future__ import annotations

import io
import json
import random
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import sentencepiece as spm
import torch

WORDS = ("river", "stone", "north", "city", "house", "green", "small", "light", "film", "moth",
         "company", "animal", "species", "founded", "released", "larvae", "wingspan", "market",
         "studio", "family", "genus", "director", "shares", "island")
# hiersumm's pieces, as src/train_abstractive.py looks them up (PieceToId('<S>') ...).
HIERSUMM_SYMBOLS = ("<S>", "</S>", "<PAD>", "<T>", "<P>", "<Q>")


@dataclass(frozen=True)
class Case:
    split: str  # the system's own split name ("valid", "validation", "val" ...)
    title: str
    documents: tuple[tuple[str, ...], ...]  # each document's paragraphs
    sentences: tuple[str, ...]  # the summary's sentences

    @property
    def paragraphs(self) -> list[str]:
        return [p for doc in self.documents for p in doc]


def sentence(rng: random.Random, low: int = 4, high: int = 9) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randint(low, high))]
    return " ".join(words).capitalize() + "."


def cases(split: str, n: int, seed: int, docs: int = 3, paragraphs: int = 2) -> list[Case]:
    rng = random.Random(seed)
    return [Case(split, f"{rng.choice(WORDS)} {rng.choice(WORDS)} {seed}-{i}",
                 tuple(tuple(" ".join(sentence(rng) for _ in range(2)) for _ in range(paragraphs))
                       for _ in range(docs)),
                 tuple(sentence(rng) for _ in range(rng.randint(2, 3))))
            for i in range(n)]


def train_hiersumm_vocab(path: Path, n_sentences: int = 400, size: int = 200):
    """A small sentencepiece model with hiersumm's pieces as user-defined symbols, as its
    ``spm9998_3.model`` must have them (src/train_abstractive.py looks up ``<S>``, ``</S>``,
    ``<PAD>``, ``<T>``, ``<P>``, ``<Q>``)."""
    rng = random.Random(7)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter([sentence(rng, 3, 12) for _ in range(n_sentences)]),
        model_writer=model, vocab_size=size, model_type="unigram", hard_vocab_limit=False,
        user_defined_symbols=list(HIERSUMM_SYMBOLS), character_coverage=1.0,
        input_sentence_size=0, shuffle_input_sentence=False, num_threads=1, minloglevel=2)
    path.write_bytes(model.getvalue())
    return spm.SentencePieceProcessor(model_file=str(path))


def hiersumm_record(case: Case, sp, tgt_str: str | None = None) -> dict:
    """One example as hiersumm's loader reads it (src/abstractive/data_loader.py,
    ``AbstracticeIterator.preprocess``: ``src``, ``tgt``, ``tgt_str``): ``src`` the ids of each
    ranked paragraph, ``tgt`` built as GraphSum builds it for the same model
    (src/data_preprocess/graphsum/data_builder_graphsum.py, ``SummData.preprocess``:
    ``[BOS] + sum([p + [EOQ] for p in sents], [])[:-1] + [EOS]``), ``tgt_str`` the sentences
    between ``<Q>`` as hiersumm's scorer expects (predictor_builder.py, ``translate``)."""
    bos, eos, eoq = (sp.piece_to_id(p) for p in ("<S>", "</S>", "<Q>"))
    sents = [sp.encode(s) for s in case.sentences]
    tgt = [bos] + sum([s + [eoq] for s in sents], [])[:-1] + [eos]
    return {"src": [sp.encode(p) for p in case.paragraphs][:40], "tgt": tgt,
            "tgt_str": tgt_str if tgt_str is not None else " <Q> ".join(case.sentences)}


def write_hiersumm(folder: Path, records: dict[str, list], shard_size: int) -> list[Path]:
    """``WIKI.{split}.{N}.pt`` shards of ``shard_size`` records, each a ``torch.save``d list, as
    hiersumm's ``load_dataset`` globs them (src/abstractive/data_loader.py:
    ``sorted(glob.glob(args.data_path + '.' + corpus_type + '.[0-9]*.pt'))`` with
    ``-data_path DATA_PATH/WIKI`` and corpus_type train, valid or test)."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for split, items in records.items():
        for n, start in enumerate(range(0, len(items), shard_size)):
            path = folder / f"WIKI.{split}.{n}.pt"
            torch.save(items[start:start + shard_size], path)
            written.append(path)
    return written


def graphsum_record(case: Case, sp) -> dict:
    """One GraphSum example (data_builder_graphsum.py, ``_format_to_paddle``: ``src`` ids per
    unit, ``tgt`` ``[BOS] ... <Q> ... [EOS]``, ``src_str``, ``tgt_str``, ``sim_graph``, an
    n-by-n similarity with ones on the diagonal)."""
    record = hiersumm_record(case, sp)
    n = len(record["src"])
    record["src_str"] = case.paragraphs[:40]
    record["tgt_str"] = " ".join(case.sentences)
    record["sim_graph"] = [[1.0 if i == j else 0.25 for j in range(n)] for i in range(n)]
    return record


def write_graphsum(folder: Path, records: dict[str, list], shard_size: int) -> list[Path]:
    """One JSON *array* a file, ``{split}/WikiSum.{split}.{N}.json``: format_to_paddle writes
    ``json.dumps(datasets)`` to ``{name}.{max_nsents}.{split}.{N}.json``
    (data_builder_graphsum.py), and the reader globs ``data_path + '/*.[0-9]*.json'`` in the
    split's folder (graphsum_reader.py, ``load_dataset``; run_graphsum_local_wikisum.sh passes
    ``--train_set ${TASK_DATA_PATH}/train``, ``/valid``, ``/test``)."""
    written = []
    for split, items in records.items():
        (folder / split).mkdir(parents=True, exist_ok=True)
        for n, start in enumerate(range(0, len(items), shard_size)):
            path = folder / split / f"WikiSum.40.{split}.{n}.json"
            path.write_text(json.dumps(items[start:start + shard_size], ensure_ascii=False))
            written.append(path)
    return written


def write_primera(folder: Path, splits: dict[str, list[Case]]) -> None:
    """PRIMERA's wikisum subset: ``train.pt``, ``valid.pt``, ``test.pt``, each a list of
    ``{"text": [documents], "tgt": str}`` (script/primer_hf_main.py, ``train``: ``torch.load(
    args.data_path + "train.pt")``, ``valid.pt``; ``test``: ``test.pt``; script/dataloader.py,
    ``SummarizationDataset.__getitem__``: ``entry["text"]``, ``entry["tgt"]``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, items in splits.items():
        torch.save([{"text": ["\n".join(doc) for doc in case.documents],
                     "tgt": " ".join(case.sentences)} for case in items],
                   folder / f"{split}.pt")


def wikicatsum_row(case: Case, domain: str, index: int) -> dict:
    """One GEM/wiki_cat_sum example as its data card shows it (huggingface.co/datasets/GEM/
    wiki_cat_sum, README.md "Example Instance"; wiki_cat_sum.py reads
    ``main_splits/{train,valid,test}-{domain}.jsonl``): ``gem_id``, ``id``, ``title``,
    ``paragraphs``, ``summary: {text: [sentences], topic: [labels]}``, ``target``,
    ``references``."""
    target = " ".join(case.sentences)
    return {"gem_id": f"{domain}-{case.split}-{index}", "gem_parent_id":
            f"{domain}-{case.split}-{index}", "id": str(1000 + index), "title": case.title,
            "paragraphs": case.paragraphs,
            "summary": {"text": list(case.sentences),
                        "topic": [(index + k) % 30 for k in range(len(case.sentences))]},
            "target": target, "references": [target]}


def write_wikicatsum_hub(folder: Path, splits: dict[str, list[Case]], domain: str) -> list[Path]:
    """``main_splits/{split}-{domain}.jsonl``, one JSON object a line (wiki_cat_sum.py,
    ``_URLs``: ``"train": "main_splits/train-animal.jsonl"``, ``"validation":
    "main_splits/valid-animal.jsonl"``, ``"test": "main_splits/test-animal.jsonl"``)."""
    (folder / "main_splits").mkdir(parents=True, exist_ok=True)
    written = []
    for split, items in splits.items():
        path = folder / "main_splits" / f"{split}-{domain}.jsonl"
        path.write_text("".join(json.dumps(wikicatsum_row(c, domain, i)) + "\n"
                                for i, c in enumerate(items)))
        written.append(path)
    return written


def write_wikicatsum_parquet(folder: Path, splits: dict[str, list[Case]], domain: str) -> None:
    """The hub's Parquet conversion, ``{domain}/{split}/0000.parquet`` (as the converter lays
    out GEM/wiki_cat_sum, e.g. ``company/challenge_test_topic_diversity_2/0000.parquet``): the
    ``summary`` sequence of ``{text, topic}`` stored as a struct of two lists."""
    schema = pa.schema([("gem_id", pa.string()), ("id", pa.string()), ("title", pa.string()),
                        ("paragraphs", pa.list_(pa.string())),
                        ("summary", pa.struct([("text", pa.list_(pa.string())),
                                               ("topic", pa.list_(pa.int16()))]))])
    for split, items in splits.items():
        rows = [{k: v for k, v in wikicatsum_row(c, domain, i).items() if k in schema.names}
                for i, c in enumerate(items)]
        (folder / domain / split).mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.Table.from_pylist(rows, schema=schema),
                       folder / domain / split / "0000.parquet")


def wikicatsum_lines(case: Case) -> tuple[str, str]:
    """One example as the release's text files hold it: the source ``title <EOT> paragraph
    <EOP> paragraph ...`` and the target ``sentence <SNT> sentence`` (fairseq/fairseq/
    preprocess/Constants.py: ``EOT = " <EOT> "``, ``EOP = " <EOP> "``, ``SNT = " <SNT> "``;
    tokenizerWCSParagraph.py splits the source at EOP, tokenizerWCSSentence.py the target at
    SNT)."""
    return (case.title + " <EOT> " + " <EOP> ".join(case.paragraphs),
            " <SNT> ".join(case.sentences))


def write_wikicatsum_release(folder: Path, splits: dict[str, list[Case]]) -> None:
    """``{train,valid,test}.src`` and ``.tgt``, one example a line, with the ``.bow.src`` and
    ``.bow.tgt`` files beside them (my_preprocess.py ``--trainpref $TEXT/train --validpref
    $TEXT/valid --testpref $TEXT/test``; tokenizerWCSParagraph.py, ``binarize``, opens
    ``train.bow.src`` beside ``train.src``)."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, items in splits.items():
        lines = [wikicatsum_lines(c) for c in items]
        (folder / f"{split}.src").write_text("".join(s + "\n" for s, _ in lines))
        (folder / f"{split}.tgt").write_text("".join(t + "\n" for _, t in lines))
        (folder / f"{split}.bow.src").write_text("".join(s.lower() + "\n" for s, _ in lines))
        (folder / f"{split}.bow.tgt").write_text("".join(t.lower() + "\n" for _, t in lines))


def multinews_document(case: Case) -> str:
    """The documents as the hub's ``document`` holds them: each followed by ``|||||`` (PRIMERA
    splits with ``document.split("|||||")[:-1]``, script/dataloader.py, so a trailing separator
    is there), each document's paragraphs on their own lines."""
    return "".join(" \n \n ".join(doc) + " ||||| " for doc in case.documents).rstrip()


def write_multinews_release(folder: Path, splits: dict[str, list[Case]]) -> None:
    """The release's ``{train,val,test}.src.cleaned`` and ``.tgt``: one example a line, its
    newlines written ``NEWLINE_CHAR``, every summary after ``– `` (the hub's loader,
    multi_news.py ``_generate_examples``: ``src_line.strip().replace("NEWLINE_CHAR", "\\n")``,
    and tensorflow_datasets' multi_news_dataset_builder.py reading ``train.src.cleaned``,
    ``val.tgt`` ...)."""
    folder.mkdir(parents=True, exist_ok=True)
    for split, items in splits.items():
        (folder / f"{split}.src.cleaned").write_text("".join(
            multinews_document(c).replace("\n", "NEWLINE_CHAR") + "\n" for c in items))
        (folder / f"{split}.tgt").write_text("".join(
            "– " + " ".join(c.sentences) + "\n" for c in items))


def multinews_row(case: Case) -> dict:
    """One row of the hub's dataset (features ``document`` and ``summary``; the summary keeps
    its ``– `` since the loader stopped stripping it, "Don't strip proceeding hyphen")."""
    return {"document": multinews_document(case), "summary": "– " + " ".join(case.sentences)}


def write_multinews_hub(folder: Path, splits: dict[str, list[Case]], kind: str) -> list[Path]:
    """The hub's files for splits ``train``, ``validation``, ``test``: Parquet as the hub
    serves it (``data/{split}-00000-of-00001.parquet``), or one JSON Lines or CSV file a split
    named after it."""
    written = []
    for split, items in splits.items():
        rows = [multinews_row(c) for c in items]
        if kind == "parquet":
            path = folder / "data" / f"{split}-00000-of-00001.parquet"
            path.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(pa.Table.from_pylist(rows), path)
        elif kind == "jsonl":
            path = folder / f"{split}.jsonl"
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        else:
            import csv

            path = folder / f"{split}.csv"
            folder.mkdir(parents=True, exist_ok=True)
            with path.open("w", newline="", encoding="utf-8") as f:
                writer = csv.DictWriter(f, fieldnames=["document", "summary"])
                writer.writeheader()
                writer.writerows(rows)
        written.append(path)
    return written


def generic_row(case: Case, index: int) -> dict:
    """The generic JSON Lines record ``{id, title, documents: [...], summary}``."""
    return {"id": f"{case.split}-{index}", "title": case.title,
            "documents": ["\n".join(doc) for doc in case.documents],
            "summary": " ".join(case.sentences)}


def write_generic(folder: Path, splits: dict[str, list[Case]]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for split, items in splits.items():
        path = folder / f"{split}.jsonl"
        path.write_text("".join(json.dumps(generic_row(c, i)) + "\n"
                                for i, c in enumerate(items)))
        written.append(path)
    return written
