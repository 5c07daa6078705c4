"""``wikisum evaluate``: metrics of a predictions file (ROUGE, perplexity, ...), printed as a
table and written as JSON. The metrics are
:func:`wikisum.generation.evaluation.score_predictions`'."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from wikisum.workflows import checks

HELP = ("ROUGE-1/2/L, perplexity and their bootstrap intervals of a `wikisum decode` predictions "
        "file (and section and structure scores of whole articles), or a paired test of two")
DESCRIPTION = """\
Read PREDS (JSON lines from `wikisum decode`: id, prediction, reference, and reference_nll /
reference_tokens for perplexity) and report ROUGE-1/2/L (F1, precision, recall; rouge-score with
stemming), DUC-style 75-byte recall, redundancy and the reference's perplexity per wordpiece.

ROUGE is scored in each record's language ("lang", which `wikisum decode` records from the
dataset; --lang CODE overrides it for every record): English with rouge-score's own tokenizer and
Porter stemmer (its figures bit for bit), any other language on the words of its script (Chinese,
Japanese, Thai, Lao, Khmer and Burmese segmented by ICU) with its Snowball stemmer where one
exists. A record without a language is English. A warning with counts says when text in another
script was scored as English, when a script could not be segmented, and which languages had no
stemmer.

Every score comes with a 95% percentile bootstrap interval (--bootstrap resamples of the
examples, drawn with --seed, so a rerun gives the same interval); with fewer than 100
examples the intervals are wide and a warning says so.

Output: a short table on stdout, and the metrics as JSON in --out (each interval under
"intervals", at the same path as its score).

--compare A B scores two predictions files of the same examples (paired by id) and tests B
against A for every score: the mean per-example difference B - A, its paired bootstrap 95%
interval and a two-sided p-value from an approximate randomization test (random sign flips of
the per-example differences, which draws from the exact null distribution of "A and B are
interchangeable"), with a one-line verdict per score:

  ROUGE-2 F1   12.10   13.30  B above A: +1.20 [0.40, 2.00], p = 0.003

The comparison goes to --out as JSON (default: B with the suffix .compare.json).

Predictions of whole articles (a run trained with target=article: records with
prediction_sections and reference_sections) add, in the table, the JSON (under "article") and
the paired test: summary-level ROUGE-Lsum (one sentence a line, each heading a line), ROUGE-1/2/L
per section over the lead and the sections whose headings match, the number of sections
matched, heading precision/recall/F1, sections per article and the share of sections that
repeat an earlier one; and how many references the perplexity saw cut to the run's
max_target_tokens. A file mixing leads and articles, or a comparison of one against the other,
is refused.

--html DIR, with --compare, writes DIR/index.html: one self-contained page (no server, nothing
fetched) showing every paired example with its title, the reference, A's output beside B's and
their ROUGE-1/2/L F1 (and ROUGE-Lsum, with the sections under their headings, for whole
articles), sorted by the ROUGE-L F1 difference B - A, largest first (controls re-sort by another
score, by id or in file order), below the table of paired tests. Outputs are shown as text,
never as markup. DIR must be new, empty or a page directory `evaluate` wrote before.
"""

DEFAULT_RESAMPLES = 1000  # wikisum.core.stats.DEFAULT_RESAMPLES, without importing numpy here


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("evaluate", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--preds", metavar="PREDS", help="predictions (.jsonl)")
    what.add_argument("--compare", nargs=2, metavar=("A", "B"),
                      help="two predictions files of the same examples: test B against A")
    p.add_argument("--out", metavar="JSON",
                   help="metrics file (default: PREDS with the suffix .metrics.json; with "
                        "--compare, B with the suffix .compare.json)")
    p.add_argument("--html", metavar="HTML_DIR",
                   help="with --compare: also write HTML_DIR/index.html, the paired examples "
                        "side by side with their scores, sorted by the ROUGE-L difference")
    p.add_argument("--bootstrap", type=checks.count(0), default=DEFAULT_RESAMPLES, metavar="N",
                   help=f"bootstrap resamples for the intervals and the paired test (default "
                        f"{DEFAULT_RESAMPLES}; 0 leaves the intervals out, not with --compare)")
    p.add_argument("--seed", type=checks.count(0), default=0,
                   help="seed of the resamples (default 0; the same seed gives the same numbers)")
    p.add_argument("--lang", metavar="CODE",
                   help="score every record's ROUGE in this language (a tag such as ru, ja, "
                        "pt-BR) instead of the language each record names (default: the "
                        "record's \"lang\", English where it has none)")
    p.set_defaults(func=run)


def read_predictions(path: str, *, unique: bool = False) -> list[dict]:
    """The records of a predictions file; a bad line is an error naming ``path:line``, and
    with ``unique`` an id that repeats is an error naming the records."""
    from wikisum.generation.predictions import check_unique_ids
    from wikisum.generation.predictions import read_predictions as read

    records = read(path)
    if unique:
        check_unique_ids(records, path)
    return records


def default_out(preds: str) -> str:
    return str(Path(preds).with_suffix(".metrics.json"))


def default_compare_out(b: str) -> str:
    return str(Path(b).with_suffix(".compare.json"))


def _write_json(data: dict, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, target)


def _warnings(examples: int, rouge_warnings: list[str] = ()) -> list[str]:
    from wikisum.core import stats

    warning = stats.small_sample_warning(examples)
    return ([warning] if warning else []) + list(rouge_warnings)


def evaluate(preds: str, out: str | None = None, *, bootstrap: int = DEFAULT_RESAMPLES,
             seed: int = 0, lang: str | None = None) -> tuple[dict, str]:
    """The metrics of ``preds`` with ``bootstrap`` resamples for their intervals (0: none),
    ROUGE in ``lang`` (default: each record's), written to ``out`` (default:
    :func:`default_out`). ``metrics["warnings"]`` says when too few examples were scored for
    reliable intervals and what ROUGE could not score as it should. An id that repeats in
    ``preds`` is an error: each example is scored once."""
    from wikisum.generation import evaluation

    records = read_predictions(preds, unique=True)
    metrics = evaluation.score_predictions(records, bootstrap=bootstrap, seed=seed, lang=lang)
    metrics["predictions"] = str(preds)
    metrics["warnings"] = _warnings(metrics["examples"], metrics["rouge_warnings"])
    target = Path(out or default_out(preds))
    _write_json(metrics, target)
    return metrics, str(target)


def _examples(ids: list[str]) -> str:
    shown = ", ".join(ids[:3])
    return f"{shown}, ..." if len(ids) > 3 else shown


def pair_by_id(records_a: list[dict], records_b: list[dict], path_a: str = "A",
               path_b: str = "B") -> tuple[list[dict], list[dict]]:
    """``records_a`` and ``records_b`` in the same order (A's), paired by id; an error when an
    id repeats in a file or the two files do not hold the same ids, saying what to do."""
    from wikisum.generation.predictions import id_key

    by_id = []
    for path, records in ((path_a, records_a), (path_b, records_b)):
        index: dict[str, dict] = {}
        for record in records:
            key = id_key(record["id"])
            if key in index:
                raise ValueError(f"{path}: id {key} occurs more than once; a comparison pairs "
                                 "examples by id, so each id must be unique")
            index[key] = record
        by_id.append(index)
    only_a = [k for k in by_id[0] if k not in by_id[1]]
    only_b = [k for k in by_id[1] if k not in by_id[0]]
    if only_a or only_b:
        parts = []
        if only_a:
            parts.append(f"{len(only_a)} id(s) only in {path_a} ({_examples(only_a)})")
        if only_b:
            parts.append(f"{len(only_b)} id(s) only in {path_b} ({_examples(only_b)})")
        raise ValueError(
            f"{path_a} and {path_b} do not hold the same examples: {'; '.join(parts)}. A paired "
            f"comparison needs both systems' predictions of the same examples: decode the same "
            f"split of the same data with the same --limit for both runs (and let an "
            f"interrupted decode finish), then compare again")
    return list(by_id[0].values()), [by_id[1][k] for k in by_id[0]]


def compare(path_a: str, path_b: str, out: str | None = None, *,
            bootstrap: int = DEFAULT_RESAMPLES, seed: int = 0,
            html: str | None = None, lang: str | None = None) -> tuple[dict, str]:
    """B against A (:func:`wikisum.generation.evaluation.compare`), examples paired by id, written
    to ``out`` (default: :func:`default_compare_out` of B), and with ``html`` the side-by-side
    page in ``html/index.html`` (:func:`wikisum.generation.comparepage.write_page`).
    ``result["warnings"]`` notes few examples and examples whose reference differs between the
    files."""
    from wikisum.generation import evaluation

    if bootstrap < 1:
        raise ValueError("--compare needs --bootstrap of at least 1 (the paired test resamples)")
    records_a, records_b = pair_by_id(read_predictions(path_a), read_predictions(path_b),
                                      path_a, path_b)
    result = evaluation.compare(records_a, records_b, bootstrap=bootstrap, seed=seed, lang=lang)
    result["a"]["predictions"], result["b"]["predictions"] = str(path_a), str(path_b)
    warnings = _warnings(result["examples"], result["a"]["rouge_warnings"])
    differ = sum(" ".join(a["reference"].split()) != " ".join(b["reference"].split())
                 for a, b in zip(records_a, records_b, strict=True))
    if differ:
        warnings.append(f"{differ} of {result['examples']} examples have a different reference "
                        f"in {path_a} and {path_b} (different data or vocabularies?); each file "
                        f"is scored against its own references")
    result["warnings"] = warnings
    target = Path(out or default_compare_out(path_b))
    _write_json(result, target)
    if html:
        from wikisum.generation import comparepage

        comparepage.write_page(html, records_a, records_b, result, (path_a, path_b))
    return result, str(target)


def run(args: argparse.Namespace) -> int:
    import sys

    from wikisum.core.progress import say
    from wikisum.generation import evaluation

    if args.html and not args.compare:
        raise SystemExit("wikisum evaluate: --html needs --compare A B (the page sets two "
                         "systems' outputs side by side); for one file's scores leave it out")
    if args.compare:
        for path in args.compare:
            checks.input_path(path, "--compare", "evaluate")
    else:
        checks.input_path(args.preds, "--preds", "evaluate")
    try:
        if args.compare:
            path_a, path_b = args.compare
            result, path = compare(path_a, path_b, args.out, bootstrap=args.bootstrap,
                                   seed=args.seed, html=args.html, lang=args.lang)
            say(f"A = {path_a}\nB = {path_b}\n{result['examples']} examples paired by id")
            print(evaluation.format_comparison(result))
        else:
            result, path = evaluate(args.preds, args.out, bootstrap=args.bootstrap,
                                    seed=args.seed, lang=args.lang)
            print(evaluation.format_table(result))
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum evaluate: {exc}") from exc
    for warning in result["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    say(f"{'comparison' if args.compare else 'metrics'} -> {path}")
    if args.html:
        from wikisum.generation.comparepage import PAGE

        say(f"side-by-side page -> {Path(args.html) / PAGE}")
    return 0


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership): --out, or its
    default beside the predictions, and the page directory of --html."""
    from wikisum.core.ownership import Output

    if args.out:
        path = args.out
    elif args.compare:
        path = default_compare_out(args.compare[1])
    else:
        path = default_out(args.preds)
    found = [Output("--out", path, "file")]
    if getattr(args, "html", None):
        found.append(Output("--html", args.html, "dir"))
    return found
