"""A blind human evaluation of summarization systems, as Liu et al. (2018) ran it: the page that
``wikisum human-eval make`` writes and the key that unblinds its answers.

From one predictions file per system (``wikisum decode``'s JSON Lines), :func:`make` samples the
same examples for every system and writes, in one directory:

- ``index.html``: the annotation page (:mod:`wikisum.generation.humaneval_page`), one
  self-contained file (:func:`wikisum.core.htmlpage.page`). Its items are
  **quality** items (one output alone, rated on the five DUC linguistic quality questions, 1-5;
  Table 5 of the paper) and **preference** items (two outputs of one example side by side, "A",
  "B" or no preference; Table 6). Items are shuffled and named by opaque ids; no system name
  or predictions path is in the page.
- ``key.json``: which system wrote each item, the sample, the seed and each output's ROUGE-L
  (the format of docs/human-evaluation.md); never shown to annotators.

The sample, the order of the items and the sides of each preference item follow ``seed``; the
page id (the key of the answers in the browser, and in every answers file) is new for each page.
"""

from __future__ import annotations

import itertools
import json
import random
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path

from wikisum.core import htmlpage
from wikisum.generation import humaneval_page, predictions
from wikisum.generation.predictions import id_key

KEY_FORMAT = "wikisum-human-eval-key"
ANSWERS_FORMAT = "wikisum-human-eval-answers"
VERSION = 1
KINDS = ("quality", "preference", "both")
SHOW = ("reference", "input")
STORAGE_PREFIX = "wikisum-human-eval:"  # + page id: the page's key in localStorage
INPUT_PARAGRAPHS = 3  # the top-ranked input paragraphs shown for context
DEFAULT_EXTRACTOR = ("tfidf", "combined")  # input paragraphs' ranking where nothing names one

# The DUC 2005-2007 linguistic quality questions, in their standard wording
# (https://duc.nist.gov/duc2007/quality-questions.txt), each rated on the scale below.
QUESTIONS = (
    ("grammaticality", "Grammaticality",
     "The summary should have no datelines, system-internal formatting, capitalization errors "
     "or obviously ungrammatical sentences (e.g., fragments, missing components) that make the "
     "text difficult to read."),
    ("non_redundancy", "Non-redundancy",
     "There should be no unnecessary repetition in the summary. Unnecessary repetition might "
     "take the form of whole sentences that are repeated, or repeated facts, or the repeated use "
     "of a noun or noun phrase (e.g., \"Bill Clinton\") when a pronoun (\"he\") would suffice."),
    ("referential_clarity", "Referential clarity",
     "It should be easy to identify who or what the pronouns and noun phrases in the summary "
     "are referring to. If a person or other entity is mentioned, it should be clear what their "
     "role in the story is. So, a reference would be unclear if an entity is referenced but its "
     "identity or relation to the story remains unclear."),
    ("focus", "Focus",
     "The summary should have a focus; sentences should only contain information that is "
     "related to the rest of the summary."),
    ("structure_coherence", "Structure and Coherence",
     "The summary should be well-structured and well-organized. The summary should not just be "
     "a heap of related information, but should build from sentence to sentence to a coherent "
     "body of information about a topic."),
)
DIMENSIONS = tuple(key for key, _, _ in QUESTIONS)
SCALE = ("Very poor", "Poor", "Barely acceptable", "Good", "Very good")  # 1 .. 5

# -- reading predictions -------------------------------------------------------------------


def read_predictions(path: str) -> dict[str, dict]:
    """The records of a predictions file by :func:`id_key`, in file order.

    Raises:
        FileNotFoundError: the file cannot be read.
        ValueError: a line is not a JSON object with id, prediction and reference, an id repeats,
            or the file holds none (the message names ``path:line``).
    """
    records: dict[str, dict] = {}
    for number, record in enumerate(predictions.read_predictions(path), 1):
        key = id_key(record["id"])
        if key in records:
            raise ValueError(f"{path}: record {number}: id {key} occurs more than once; the "
                             "systems' outputs are paired by id, so each id must be unique")
        records[key] = record
    return records


def common_ids(files: Mapping[str, Mapping[str, dict]], paths: Mapping[str, str]
               ) -> tuple[list[str], dict[str, int]]:
    """The ids present in every system's file (in the first file's order), and how many of each
    system's records were left out for lacking from another file.

    Raises:
        ValueError: no id is in every file (the message names the files).
    """
    names = list(files)
    common = [k for k in files[names[0]] if all(k in files[n] for n in names[1:])]
    if not common:
        listed = ", ".join(f"{n}={paths[n]}" for n in names)
        raise ValueError(f"no example id is in every predictions file ({listed}): a human "
                         "evaluation shows each system's output of the same examples, so "
                         "decode the same split of the same data for every system")
    kept = set(common)
    dropped = {n: sum(k not in kept for k in files[n]) for n in names}
    return common, dropped


# -- outputs as the page shows them --------------------------------------------------------


def output_view(record: Mapping, sections_key: str, text_key: str) -> dict:
    """An output as the page shows it: ``{"sections": [{"title", "text"}, ...]}`` for a whole
    article (a record with ``sections_key``), else ``{"text": str}``."""
    sections = record.get(sections_key)
    if isinstance(sections, list) and all(isinstance(s, dict) for s in sections):
        return {"sections": [{"title": str(s.get("title", "")), "text": str(s.get("text", ""))}
                             for s in sections]}
    return {"text": str(record.get(text_key, ""))}


def record_input(record: Mapping, top: int = INPUT_PARAGRAPHS) -> list[str] | None:
    """The input paragraphs a record carries (an ``input`` field: a text or a list of texts),
    the first ``top``; None when it has none."""
    value = record.get("input")
    if isinstance(value, str):
        return [value] if value.strip() else None
    if isinstance(value, list):
        texts = [str(v) for v in value if str(v).strip()]
        return texts[:top] or None
    return None


def decode_settings(preds_path: str) -> dict:
    """What ``wikisum decode`` recorded beside a predictions file (split, extractor, corpus);
    {} where there is no such record."""
    from wikisum.generation.decode import settings_path

    try:
        value = json.loads(settings_path(preds_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def dataset_paragraphs(data: str, keys: Sequence[str], *, extractor: str | None = None,
                       corpus: str | None = None, split: str | None = None,
                       top: int = INPUT_PARAGRAPHS) -> dict[str, list[str]]:
    """The ``top`` ranked paragraphs of the examples ``keys`` (:func:`id_key` s) in the dataset
    ``data``: read from ``split`` (every split when None), ranked by ``extractor`` on
    ``corpus`` (default: the dataset's default model input, else tf-idf on the combined
    corpus, :data:`DEFAULT_EXTRACTOR`). Examples the dataset does not hold are left out."""
    from wikisum.core import loader

    dataset = loader.Dataset(data)
    if extractor is None or corpus is None:
        default = loader.dataset_default_input(dataset.dir)
        extractor = extractor or default.get("extractor", DEFAULT_EXTRACTOR[0])
        corpus = corpus or default.get("corpus", DEFAULT_EXTRACTOR[1])
    wanted, found = set(keys), {}
    splits = [split] if split in dataset.splits() else dataset.splits()
    for name in splits:
        for row in dataset.rows(name, ["id", "paragraphs", "rankings"]):
            key = id_key(row["id"])
            if key in wanted and key not in found:
                try:
                    found[key] = loader.ranked_texts(row, extractor, corpus)[:top]
                except KeyError as exc:  # no such ranking: the message lists those there are
                    raise ValueError(f"--data {data}: {exc.args[0]}") from None
        if len(found) == len(wanted):
            break
    return found


# -- the sample and the items --------------------------------------------------------------


def _rng(seed: int, purpose: str) -> random.Random:
    """A generator for one use of ``seed`` (the sample, the order, the sides), so that each
    depends on the seed alone."""
    return random.Random(f"wikisum-human-eval:{seed}:{purpose}")


def sample_ids(ids: Sequence[str], sample: int, seed: int) -> list[str]:
    """``sample`` of ``ids`` (all of them when fewer), drawn with ``seed``."""
    return _rng(seed, "sample").sample(list(ids), min(sample, len(ids)))


def system_pairs(names: Sequence[str], pairs: Sequence[tuple[str, str]] | None
                 ) -> list[tuple[str, str]]:
    """The pairs of systems compared side by side: ``pairs`` when given (checked), else every
    pair of ``names`` in their order.

    Raises:
        ValueError: a pair names an unknown system, a system twice, or repeats a pair.
    """
    if not pairs:
        return list(itertools.combinations(names, 2))
    seen, out = set(), []
    for a, b in pairs:
        for name in (a, b):
            if name not in names:
                raise ValueError(f"--pairs {a}:{b}: no system is called {name!r}; the systems: "
                                 f"{', '.join(names)}")
        if a == b:
            raise ValueError(f"--pairs {a}:{b}: a system is not compared with itself")
        if frozenset((a, b)) in seen:
            raise ValueError(f"--pairs {a}:{b}: the pair is given twice")
        seen.add(frozenset((a, b)))
        out.append((a, b))
    return out


def quality_plan(examples: Sequence[str], names: Sequence[str], seed: int
                 ) -> list[tuple[str, str]]:
    """(example, system) for every sampled example and system, shuffled with ``seed`` so that
    neither the systems nor an example's outputs come in a fixed order."""
    plan = [(example, name) for example in examples for name in names]
    _rng(seed, "quality").shuffle(plan)
    return plan


def preference_plan(examples: Sequence[str], pairs: Sequence[tuple[str, str]], seed: int
                    ) -> list[tuple[str, str, str]]:
    """(example, left system, right system) for every sampled example and pair, shuffled with
    ``seed``. Within each pair the sides are drawn at random and balanced: each system is on the
    left for half of the examples (one more for an odd count)."""
    rng = _rng(seed, "sides")
    plan = []
    for a, b in pairs:
        swaps = [i % 2 == 1 for i in range(len(examples))]
        rng.shuffle(swaps)
        plan += [(example, b, a) if swap else (example, a, b)
                 for example, swap in zip(examples, swaps, strict=True)]
    _rng(seed, "preference").shuffle(plan)
    return plan


def item_ids(count: int, prefix: str, seed: int, page_id: str) -> list[str]:
    """``count`` distinct opaque ids (``prefix`` + 16 hex digits), drawn from the seed and the
    page id in page order: an id says nothing about the system behind its item."""
    rng = random.Random(f"wikisum-human-eval:{seed}:{page_id}:{prefix}")
    out, seen = [], set()
    while len(out) < count:
        value = f"{prefix}{rng.getrandbits(64):016x}"
        if value not in seen:
            seen.add(value)
            out.append(value)
    return out


def rouge_l(files: Mapping[str, Mapping[str, dict]], examples: Sequence[str]
            ) -> dict[str, dict[str, float]]:
    """ROUGE-L F1 of each system's prediction of each example against its reference, in the
    record's language: ``{id_key: {system: F1}}``."""
    from wikisum.generation.evaluation import record_lang, rouge_per_example

    out: dict[str, dict[str, float]] = {k: {} for k in examples}
    for name, records in files.items():
        scores = rouge_per_example([str(records[k]["prediction"]) for k in examples],
                                   [str(records[k]["reference"]) for k in examples],
                                   [record_lang(records[k]) for k in examples])
        for k, score in zip(examples, scores, strict=True):
            out[k][name] = score["rougeL"]["f"]
    return out


# -- the page and the key ------------------------------------------------------------------


def page_data(*, page_id: str, kind: str, examples: Sequence[dict], items: Sequence[dict]
              ) -> dict:
    """The page's JSON block (:mod:`wikisum.generation.humaneval_page`): nothing in it names a
    system."""
    return {"page_id": page_id, "storage_key": STORAGE_PREFIX + page_id, "kind": kind,
            "questions": [{"key": k, "name": n, "text": t} for k, n, t in QUESTIONS],
            "scale": list(SCALE), "examples": list(examples), "items": list(items)}


def page_html(data: Mapping) -> str:
    """The annotation page of ``data`` (:func:`page_data`) as one self-contained HTML file."""
    return htmlpage.page(humaneval_page.TITLE, humaneval_page.BODY, script=humaneval_page.SCRIPT,
                         css=humaneval_page.CSS, data=data,
                         lang=humaneval_page.page_language(data["examples"]))


def _is_text(value: str) -> bool:
    """Whether ``value`` encodes as UTF-8 (no lone surrogate, such as a path byte that is not
    UTF-8 becomes)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _parse_show(show: Sequence[str]) -> tuple[str, ...]:
    unknown = [s for s in show if s not in SHOW]
    if unknown:
        raise ValueError(f"--show {','.join(show)}: unknown {', '.join(unknown)}; choose from "
                         f"{', '.join(SHOW)}")
    return tuple(show)


def _inputs(files: Mapping[str, Mapping[str, dict]], preds: Mapping[str, str],
            examples: Sequence[str], data: str | None) -> tuple[dict[str, list[str]], list[str]]:
    """The input paragraphs to show per example, and warnings: an ``input`` field of the
    records where they have one, else the dataset's ranked paragraphs."""
    first = next(iter(files))
    found = {k: text for k in examples
             if (text := record_input(files[first][k])) is not None}
    missing = [k for k in examples if k not in found]
    if not missing:
        return found, []
    if data is None:
        raise ValueError("--show input: the predictions hold no input paragraphs (no \"input\" "
                         "field); pass --data DIR, the dataset they were decoded from, to show "
                         "its top-ranked paragraphs")
    settings = decode_settings(preds[first])
    found.update(dataset_paragraphs(data, missing, extractor=settings.get("extractor"),
                                    corpus=settings.get("corpus"), split=settings.get("split")))
    absent = [k for k in examples if k not in found]
    warnings = [f"{len(absent)} of {len(examples)} sampled examples are not in {data}: they are "
                "shown without input paragraphs"] if absent else []
    return found, warnings


def make(preds: Mapping[str, str], out: str, *, kind: str = "both", sample: int = 50,
         seed: int = 0, show: Sequence[str] = ("reference",),
         pairs: Sequence[tuple[str, str]] | None = None, data: str | None = None,
         page_id: str | None = None) -> dict:
    """Write the annotation page ``out/index.html`` and its key ``out/key.json``.

    Args:
        preds: system name -> predictions file (JSON Lines of ``wikisum decode``), in the
            order the key lists them.
        kind: "quality", "preference" or "both".
        sample: examples drawn (the same for every system) from the ids in every file.
        seed: the draw, the order of the items and the sides of the preference items.
        show: context beside the title: "reference" (the reference lead or article) and/or
            "input" (the top-ranked input paragraphs: the records' ``input`` field, else read
            from the dataset ``data``).
        pairs: the pairs of systems compared (default: every pair).
        page_id: the page's id (default: 32 random hex digits).

    Returns:
        ``{"page", "key", "page_id", "examples", "quality_items", "preference_items",
        "dropped": {system: records left out}, "warnings": [...]}``.

    Raises:
        ValueError: bad arguments or predictions (a system name or a record that is not
            UTF-8 text is refused before anything is written), or ``out`` already holds a page
            and its key (a key is never replaced: the answers to its page need it; a key
            without its page, from a make stopped before it wrote the page, is written anew).
        FileNotFoundError: a file cannot be read.
    """
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r}: choose from {', '.join(KINDS)}")
    if sample < 1:
        raise ValueError(f"sample must be at least 1, got {sample}")
    show = _parse_show(show)
    names = list(preds)
    if not names:
        raise ValueError("no predictions: give --preds NAME=PREDS.jsonl for each system")
    for name in names:
        if not _is_text(name):
            raise ValueError(f"--preds {ascii(name)[1:-1]}={ascii(str(preds[name]))[1:-1]}: the "
                             "system name is not valid UTF-8 (a byte no character encodes); "
                             "the key records it as text: name the system in UTF-8")
    if kind != "quality" and len(names) < 2:
        raise ValueError(f"--kind {kind} compares systems side by side and needs at least two "
                         f"(--preds NAME=PREDS.jsonl for each); with one, use --kind quality")
    chosen_pairs = system_pairs(names, pairs) if kind != "quality" else []
    page_id = page_id or secrets.token_hex(16)
    folder = Path(out)
    if (folder / "key.json").exists() and (folder / "index.html").exists():
        raise ValueError(f"{folder} already holds a page and its key.json: answers to that page "
                         "can only be scored with that key, so it is never replaced; give a new "
                         "--out")

    files = {name: read_predictions(path) for name, path in preds.items()}
    common, dropped = common_ids(files, preds)
    examples = sample_ids(common, sample, seed)
    warnings = [f"{name} ({preds[name]}): {n} of {len(files[name])} examples are not in every "
                "predictions file and were left out" for name, n in dropped.items() if n]
    if len(common) < sample:
        warnings.append(f"only {len(common)} examples are in every file: all of them are "
                        f"shown (--sample {sample})")
    first = files[names[0]]
    differ = sum(any(" ".join(str(files[n][k]["reference"]).split())
                     != " ".join(str(first[k]["reference"]).split()) for n in names[1:])
                 for k in examples)
    if differ:
        warnings.append(f"{differ} of {len(examples)} sampled examples have different references "
                        "in the predictions files (different data?); the page shows the first "
                        "file's")

    inputs: dict[str, list[str]] = {}
    if "input" in show:
        inputs, more = _inputs(files, preds, examples, data)
        warnings += more

    quality = quality_plan(examples, names, seed) if kind != "preference" else []
    preference = preference_plan(examples, chosen_pairs, seed) if chosen_pairs else []
    quality_ids = item_ids(len(quality), "q-", seed, page_id)
    preference_ids = item_ids(len(preference), "p-", seed, page_id)

    # examples in the order the page first shows them
    order = list(dict.fromkeys([k for k, _ in quality] + [k for k, _, _ in preference]))
    index = {k: i for i, k in enumerate(order)}
    page_examples = []
    for k in order:
        record = first[k]
        example = {"title": str(record.get("title") or record["id"])}
        example.update(humaneval_page.example_language(record))
        if "reference" in show:
            example["reference"] = output_view(record, "reference_sections", "reference")
        if k in inputs:
            example["input"] = inputs[k]
        page_examples.append(example)

    def output(name: str, k: str) -> dict:
        return output_view(files[name][k], "prediction_sections", "prediction")

    items = [{"id": i, "type": "quality", "example": index[k], "output": output(name, k)}
             for i, (k, name) in zip(quality_ids, quality, strict=True)]
    items += [{"id": i, "type": "preference", "example": index[k], "a": output(a, k),
               "b": output(b, k)}
              for i, (k, a, b) in zip(preference_ids, preference, strict=True)]

    key = {
        "format": KEY_FORMAT, "version": VERSION, "page_id": page_id, "kind": kind,
        "seed": seed, "sample": sample, "systems": dict(preds), "dimensions": list(DIMENSIONS),
        "examples": [first[k]["id"] for k in order],
        "quality_items": [{"item": i, "example": first[k]["id"], "system": name}
                          for i, (k, name) in zip(quality_ids, quality, strict=True)],
        "preference_items": [{"item": i, "example": first[k]["id"], "a": a, "b": b}
                             for i, (k, a, b) in zip(preference_ids, preference, strict=True)],
        "rouge_l": rouge_l(files, order),
    }
    folder.mkdir(parents=True, exist_ok=True)
    page = folder / "index.html"
    key_path = folder / "key.json"
    data_block = page_data(page_id=page_id, kind=kind, examples=page_examples, items=items)
    # the key first (ASCII, so no text in it can fail to encode), the page last: a page on
    # disk always has its key, and a make stopped before its page is simply made again
    from wikisum.core.files import write_text_atomically

    write_text_atomically(key_path, json.dumps(key, indent=1, ensure_ascii=True) + "\n")
    write_text_atomically(page, page_html(data_block))
    return {"page": str(page), "key": str(key_path), "page_id": page_id,
            "examples": len(order), "quality_items": len(quality),
            "preference_items": len(preference), "dropped": dropped, "warnings": warnings}
