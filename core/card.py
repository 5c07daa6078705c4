"""The dataset card (``README.md``) written into every dataset ``wikisum rank`` (and so
``wikisum build``) and ``wikisum convert-pairs`` write.

Its YAML front matter lists the dataset's configs, each mapping splits to file globs: Hugging
Face ``datasets`` reads it, so that ``datasets.load_dataset(DIR)`` gives the ready model inputs
of the default extractor x corpus x L, ``load_dataset(DIR, "textrank-search-500")`` another set
written with ``--model-inputs``, and ``load_dataset(DIR, "ranked")`` the full training rows.
The splits go by the hub's conventional names: train, validation (our ``dev``: the files stay
``dev-*.parquet``) and test.
Files the configs do not name (exemplars, dead letters, the ingest output of a build) are not
read. The body says what the files hold: schema, rows per split, extractor, L, vocabulary and
the licences of the text.

The card is made from ``dataset.json`` alone, so it can be written again at any time:
``write_card(DIR, json.load(open(DIR/dataset.json)))``.
"""

from __future__ import annotations

import posixpath

import yaml

from wikisum.core import files, shards

CARD = "README.md"
# Our split names the hub knows by another: datasets.load_dataset gives train/validation/test.
HUB_SPLITS = {"dev": "validation"}
RANKED_CONFIG = "ranked"  # the full training rows (schema RANKED)
PAIRS_CONFIG = "default"

LICENCE = """\
The text is not the builder's to license. Leads (the targets) and titles come from Wikipedia,
whose text is available under the Creative Commons Attribution-ShareAlike licence (CC BY-SA
4.0; older revisions 3.0) and the GFDL: reuse must credit the articles' authors and share
alike. The reference paragraphs (the inputs) are text of the web pages the articles cite or a
search returned: their copyright stays with the pages' owners, and this dataset does not grant
any licence to them. Use it for research as the law where you are allows (text and data
mining exceptions, fair use), and do not redistribute the inputs without checking that you
may."""


IMPORTED_LICENCE = """\
This is a conversion of the {} dataset: its licence and terms are the source dataset's, and
the copyright of its texts stays with their owners. Check them before you redistribute it."""


def _splits(rows: dict) -> list[str]:
    """Splits with rows, in the project's order (train, dev, test), then any other."""
    order = {"train": 0, "dev": 1, "test": 2}
    names = [s for s, n in (rows or {}).items() if n]
    return sorted(names, key=lambda s: (order.get(s, 3), s))


def hub_split(split: str, splits=()) -> str:
    """The name the card gives a split (``dev`` -> ``validation``), unless the dataset has a
    split of that name already (``splits``)."""
    name = HUB_SPLITS.get(split, split)
    return split if name in splits else name


def _data_files(prefix: str, folder: str, rows: dict) -> list[dict]:
    folder = f"{folder}/" if folder else ""
    splits = _splits(rows)
    return [{"split": hub_split(split, splits), "path": f"{prefix}{folder}{split}-*.parquet"}
            for split in splits]


def configs(info: dict, prefix: str = "") -> list[dict]:
    """The front matter's ``configs``: name, data files per split, and which is the default.
    ``prefix``: where the dataset is, seen from the card (``data/`` for a build's root)."""
    if info.get("kind") == "pairs":
        return [{"config_name": PAIRS_CONFIG, "default": True,
                 "data_files": _data_files(prefix, "", info.get("rows", {}))}]
    out = []
    default = info.get("default_inputs")
    for name, entry in (info.get("inputs") or {}).items():
        config = {"config_name": name, "data_files": _data_files(prefix, entry["path"],
                                                                 entry["rows"])}
        if name == default:
            config["default"] = True
        out.append(config)
    ranked = {"config_name": RANKED_CONFIG,
              "data_files": _data_files(prefix, "", info.get("rows", {}))}
    if not out:  # a dataset ranked before ready inputs were written
        ranked["default"] = True
    out.append(ranked)
    out.sort(key=lambda c: not c.get("default", False))
    return [c for c in out if c["data_files"]]


def _table(header: list[str], rows: list[list]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _shown_path(path: str | None, prefix: str) -> str:
    """A path dataset.json stores (relative to the dataset) as seen from the card."""
    if not path:
        return "(none)"
    if "://" in path or path.startswith("/"):
        return path
    return posixpath.normpath(posixpath.join(prefix or ".", path))


def card_text(info: dict, prefix: str = "", where: str = "DIR") -> str:
    """README.md for a dataset whose ``dataset.json`` is ``info``."""
    imported = (info.get("imported") or {}).get("format")
    front = {"pretty_name": ("Headline pairs" if info.get("kind") == "pairs"
                             else f"{imported}, imported by wikisum" if imported
                             else "WikiSum: leads of Wikipedia articles from their references"),
             "license": "other",
             "task_categories": ["summarization"],
             "tags": ["wikisum", "multi-document-summarization"],
             "configs": configs(info, prefix)}
    head = "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n\n"
    if info.get("kind") == "pairs":
        return head + _pairs_body(info, prefix, where)
    return head + _ranked_body(info, prefix, where)


def _vocab_section(info: dict, prefix: str) -> str:
    special = ", ".join(f"{k} {v}" for k, v in (info.get("special_ids") or {}).items())
    return (f"## Vocabulary\n\nA sentencepiece model of {info.get('vocab_size')} pieces, "
            f"`{_shown_path(info.get('vocab'), prefix)}` (the path is relative to this "
            f"card). Special ids: {special}. Load it with `sentencepiece.SentencePieceProcessor("
            f"model_file=...)` to encode new text or decode ids.\n")


def _ranked_body(info: dict, prefix: str, where: str) -> str:
    inputs = info.get("inputs") or {}
    default = info.get("default_inputs")
    rows = info.get("rows", {})
    imported = (info.get("imported") or {}).get("format")
    intro = ("Each example is a Wikipedia article: the target is its lead section, the input "
             "the paragraphs of the web pages it cites (and of search results for its title), "
             "ranked by an extractor and cut to the first L subword tokens, as in Liu et al. "
             "(2018), *Generating Wikipedia by Summarizing Long Sequences*. Written by "
             "`wikisum rank` (`wikisum build`).\n")
    if imported:
        intro = (f"A {imported} dataset imported by `wikisum import`: the target of each "
                 "example is its summary (column `lead`), the input its documents' paragraphs "
                 "ranked by an extractor and cut to the first L subword tokens, laid out as "
                 "wikisum's WikiSum datasets are (Provenance below says what was kept).\n")
    parts = [f"# {'Imported ' + imported if imported else 'WikiSum'} dataset\n", intro,
             "## Loading\n",
             "```python\nfrom datasets import load_dataset\n\n"
             f"data = load_dataset(\"{where}\")  # the default config"
             + (f": {default}" if default in inputs else "") + "\n"
             + "".join(f"data = load_dataset(\"{where}\", \"{name}\")\n"
                       for name in list(inputs)[:3] if name != default)
             + f"data = load_dataset(\"{where}\", \"{RANKED_CONFIG}\")  # every ranking, "
               "any L\n```\n",
             "Splits are `train`, `validation` and `test`; a split without articles is left "
             "out. `validation` is the split wikisum calls `dev` (its files are "
             "`dev-*.parquet`, and wikisum's `--split` takes either name). Within wikisum, "
             "read the same files with `wikisum.core.loader.Dataset`.\n",
             "## Configs\n"]
    table = [[f"`{name}`" + (" (default)" if name == default else ""), e["extractor"],
              e["corpus"], e["max_input_tokens"]] + [e["rows"].get(s, 0) for s in rows]
             for name, e in inputs.items()]
    table.append([f"`{RANKED_CONFIG}`", "all: " + ", ".join(info.get("extractors", [])),
                  "all: " + ", ".join(info.get("corpora", [])), "any"]
                 + [rows[s] for s in rows])
    parts.append(_table(["config", "extractor", "corpus", "L"]
                        + [f"{hub_split(s, rows)} rows" for s in rows], table) + "\n")
    parts.append("Other extractors, corpora and lengths: rank again with `wikisum rank "
                 "--model-inputs EXTRACTOR-CORPUS-L[,...]` (or `all`), or build any input "
                 f"from the `{RANKED_CONFIG}` config with `wikisum.core.loader.build_input("
                 "row, extractor, corpus, L, title_sep_id)`.\n")
    parts.append("## Columns of the model-input configs\n\n" + _table(
        ["column", "type", "meaning"],
        [["`id`", "int64", "the article's page id"],
         ["`title`", "string", "the article's title"],
         ["`input`", "string", "`input_ids` decoded: the title, `<t>`, then the ranked "
                               "paragraphs, cut at L tokens"],
         ["`target`", "string", "the lead section, paragraphs separated by a blank line"],
         ["`input_ids`", "list<int32>", "title ids, the `<t>` id, ranked paragraphs' ids; at "
                                        "most L"],
         ["`target_ids`", "list<int32>", "the lead's ids, never truncated, without `</s>`"]])
        + "\n")
    parts.append(f"The `{RANKED_CONFIG}` config holds one row per article with every reference "
                 "paragraph (text, ids, reference, corpora) and every extractor x corpus "
                 "ranking: columns `id`, `title`, `split`, `title_ids`, `lead`, `lead_ids`, "
                 "`reference_urls`, `paragraphs`, `rankings` (wikisum's docs/data.md, "
                 "`RANKED`)" + (
                     "; and the whole article as a target: `article_ids` (the lead, then each "
                     "section as `<sec>` title `<eoh>` text) and `section_boundaries` (the "
                     "token count after each section, cumulative, as tensor2tensor's)"
                     if "article" in info.get("targets", []) else "") + ".\n")
    parts.append(_vocab_section(info, prefix))
    parts.append("## Licence\n\n" + (IMPORTED_LICENCE.format(imported) if imported
                                        else LICENCE) + "\n")
    provenance = [
        f"- format: {info.get('format')}",
        f"- extractors: {', '.join(info.get('extractors', []))}",
        f"- corpora: {', '.join(info.get('corpora', []))}",
        f"- targets: {', '.join(info.get('targets', ['lead']))}",
        f"- articles an extractor failed on (left out): {info.get('errors', 0)}",
        f"- ranked from: `{_shown_path(info.get('source'), prefix)}`",
        f"- shards per split: {info.get('num_shards')}"]
    provenance += _imported_lines(info)
    parts.append("## Provenance\n\n" + "\n".join(provenance) + "\n")
    return "\n".join(parts)


def _imported_lines(info: dict) -> list[str]:
    """What a card says of an imported dataset (``wikisum import``) and of its one corpus."""
    lines = []
    imported = info.get("imported")
    if imported:
        lines.append(f"- imported from the {imported.get('format')} format: "
                     f"{', '.join(f'`{s}`' for s in imported.get('sources') or [])}")
        query = imported.get("query") or {}
        if query.get("frequent-words"):
            lines.append(f"- examples without a title ({query['frequent-words']}): tf-idf's "
                         "query is the ten most frequent content words of their documents")
        if imported.get("ids"):
            lines.append(f"- token ids: {imported['ids']}")
    for name, why in (info.get("extractors_unavailable") or {}).items():
        lines.append(f"- extractor {name} not computed: {why}")
    if info.get("corpora_note"):
        lines.append(f"- corpus {info['corpora_note']}")
    return lines


def _pairs_body(info: dict, prefix: str, where: str) -> str:
    rows = info.get("rows", {})
    parts = ["# Headline pairs\n",
             "Source / target pairs (the first sentence of a news article and its headline) "
             "converted by `wikisum convert-pairs`.\n",
             "## Loading\n",
             f"```python\nfrom datasets import load_dataset\n\ndata = load_dataset(\"{where}\")"
             "\n```\n",
             "## Splits\n\n" + _table(["split", "files", "rows"],
                                       [[hub_split(s, rows), f"`{s}-*.parquet`", n]
                                        for s, n in rows.items()]) + "\n",
             "## Columns\n\n" + _table(["column", "type", "meaning"], [
                 ["`id`", "int64", "the 1-based line number in both input files"],
                 ["`split`", "string", "the split"],
                 ["`source`", "string", "the source line"],
                 ["`source_ids`", "list<int32>", "its subword ids (the model input)"],
                 ["`target`", "string", "the target line (the headline)"],
                 ["`target_ids`", "list<int32>", "its subword ids, without `</s>`"]]) + "\n",
             _vocab_section(info, prefix),
             "## Licence\n\nThe text belongs to its publishers (Gigaword is distributed by "
             "the LDC under its own licence): check that licence before sharing these files.\n"]
    return "\n".join(parts)


def write_card(out: str, info: dict, prefix: str = "") -> str:
    """Write ``out/README.md`` for the dataset ``info`` (at ``out/prefix``); returns its path."""
    path = files.join(out, CARD)
    shards.write_text(path, card_text(info, prefix))
    return path
