"""``wikisum human-eval make`` (the blind annotation page, :mod:`wikisum.generation.humaneval`)
and ``wikisum human-eval score`` (the statistics of its answers,
:mod:`wikisum.generation.humanscore`)."""

from __future__ import annotations

import argparse
import sys

from wikisum.workflows import checks

COMMAND = "human-eval"
KINDS = ("quality", "preference", "both")  # wikisum.generation.humaneval.KINDS
SHOW = ("reference", "input")  # wikisum.generation.humaneval.SHOW

HELP = ("blind human evaluation: an annotation page of several systems' outputs (make), and "
        "the statistics of its answers (score)")
DESCRIPTION = """\
A human evaluation as Liu et al. (2018) ran it, in two steps:

  wikisum human-eval make --preds NAME=PREDS.jsonl NAME=PREDS.jsonl ... --out DIR
      writes DIR/index.html, one self-contained annotation page (open it from disk or put it on
      any static host; it fetches nothing), and DIR/key.json, which system wrote each item
      (keep it; the page holds only opaque ids). Quality items show one output alone with the
      five DUC linguistic quality questions (1-5); preference items show two outputs of one
      example side by side (A, B, no preference). Each annotator types a name, answers (kept in
      the browser), and exports the answers as a JSON file.

  wikisum human-eval score --answers A.json [B.json ...] --key DIR/key.json --out DIR
      per system and question the mean with a 95% interval, Welch's t-test against a system
      (--against), preference counts with a sign test, agreement between annotators, and the
      correlation of preferences with ROUGE-L: report.html, report.md and scores.json in --out.

Run `wikisum human-eval make --help` or `wikisum human-eval score --help` for their options and
defaults.
"""

MAKE_HELP = "write the blind annotation page (DIR/index.html) and its key (DIR/key.json)"
MAKE_DESCRIPTION = """\
Sample --sample examples (the same for every system, drawn with --seed from the ids that every
predictions file holds) and write, in --out:

  index.html  the annotation page: one self-contained file (style, script and data inline; a
              Content-Security-Policy that forbids any request and any other script), no
              server needed; answers are kept in the browser and exported as a JSON file
  key.json    which system wrote each item, the sample and each output's ROUGE-L F1, for
              `wikisum human-eval score`; never give it to annotators

--kind quality: every system's output of every sampled example alone, in shuffled order, with
the five DUC 2005-2007 linguistic quality questions (grammaticality, non-redundancy,
referential clarity, focus, structure and coherence) on a 1-5 scale.
--kind preference: for every sampled example and pair of systems (--pairs, default all
pairs), the two outputs side by side, sides drawn at random, "A", "B" or "No preference".
--kind both (default): the quality items, then the preference items.

No system name or predictions path is written into the page.
"""

SCORE_HELP = "score the answers of annotators against the key: report.html, report.md, " \
             "scores.json"
SCORE_DESCRIPTION = """\
Read the answers files the page exported (one per annotator) and the page's key.json, and write
in --out:

  report.html  per system and question the mean with a 95% interval, Welch's t-test against
               --against, preference counts with a two-sided sign test (ties apart), agreement
               between annotators (Krippendorff's alpha, ordinal) and the correlation of
               preferences with the ROUGE-L difference of each pair
  report.md    the same tables
  scores.json  every number

Answers from another page, malformed, incomplete or duplicated files get a clear error or a
counted skip.
"""


# -- option values -------------------------------------------------------------------------


def system_spec(text: str) -> tuple[str, str]:
    """``NAME=PATH`` -> (name, path)."""
    name, sep, path = text.partition("=")
    name, path = name.strip(), path.strip()
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not NAME=PREDS.jsonl; name each system's predictions, e.g. "
            "--preds t-dmca=runs/t-dmca/preds.jsonl")
    return name, path


system_spec.__name__ = "NAME=PREDS"


def show_list(text: str) -> tuple[str, ...]:
    """``reference,input`` -> ("reference", "input"); ``none`` -> ()."""
    values = tuple(v.strip() for v in text.split(",") if v.strip())
    if values == ("none",):
        return ()
    unknown = [v for v in values if v not in SHOW]
    if unknown or not values:
        raise argparse.ArgumentTypeError(f"{text!r}: give reference, input, reference,input or "
                                         "none")
    return tuple(dict.fromkeys(values))


show_list.__name__ = "list"


def pair_list(text: str) -> list[tuple[str, str]]:
    """``A:B,C:D`` -> [("A", "B"), ("C", "D")]."""
    out = []
    for piece in text.split(","):
        a, sep, b = piece.strip().partition(":")
        if not sep or not a.strip() or not b.strip():
            raise argparse.ArgumentTypeError(f"{piece.strip()!r} is not A:B; give pairs of "
                                             "system names, e.g. --pairs t-dmca:seq2seq,"
                                             "t-dmca:tfidf")
        out.append((a.strip(), b.strip()))
    return out


pair_list.__name__ = "pairs"


# -- the parser ----------------------------------------------------------------------------


def add_parser(subparsers) -> None:
    p = subparsers.add_parser(COMMAND, help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    steps = p.add_subparsers(title="subcommands", metavar="SUBCOMMAND", dest="subcommand")
    steps.required = True

    make = steps.add_parser("make", help=MAKE_HELP, description=MAKE_DESCRIPTION,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    make.add_argument("--preds", action="extend", nargs="+", type=system_spec, required=True,
                      metavar="NAME=PREDS",
                      help="each system's name and its predictions (.jsonl of `wikisum "
                           "decode`): several after one --preds (--preds a=A.jsonl b=B.jsonl), "
                           "or --preds once per system, or both; at least two systems for "
                           "preference items")
    make.add_argument("--kind", choices=KINDS, default="both",
                      help="quality items, preference items or both (default: both)")
    make.add_argument("--sample", type=checks.count(1), default=50, metavar="N",
                      help="examples drawn, the same for every system (default: 50)")
    make.add_argument("--seed", type=checks.count(0), default=0,
                      help="seed of the sample, the order of the items and the sides of "
                           "preference items (default: 0)")
    make.add_argument("--show", type=show_list, default=("reference",), metavar="WHAT",
                      help="context shown beside the title: reference (the reference lead or "
                           "article), input (the top 3 input paragraphs: the records' input "
                           "field, else read from --data), both as reference,input, or none "
                           "(default: reference)")
    make.add_argument("--data", metavar="DIR",
                      help="the dataset the predictions were decoded from, for --show input "
                           "(default: none)")
    make.add_argument("--pairs", type=pair_list, metavar="A:B,...",
                      help="the pairs of systems compared side by side (default: every pair)")
    make.add_argument("--out", required=True, metavar="DIR",
                      help="a new or empty directory for index.html and key.json")
    make.set_defaults(func=run_make)

    score = steps.add_parser("score", help=SCORE_HELP, description=SCORE_DESCRIPTION,
                             formatter_class=argparse.RawDescriptionHelpFormatter)
    score.add_argument("--answers", nargs="+", required=True, metavar="FILE",
                       help="answers files exported by the page, one per annotator")
    score.add_argument("--key", required=True, metavar="FILE",
                       help="the page's key.json (written by `wikisum human-eval make`)")
    score.add_argument("--against", metavar="NAME",
                       help="the system the others are tested against (Welch's t-test; "
                            "default: the first system of the key)")
    score.add_argument("--out", required=True, metavar="DIR",
                       help="a new or empty directory (or this command's earlier output) for "
                            "report.html, report.md and scores.json")
    score.set_defaults(func=run_score)


# -- running -------------------------------------------------------------------------------


def systems(specs: list[tuple[str, str]], where: str) -> dict[str, str]:
    """The --preds values as name -> path; a repeated name or a missing file is a one-line
    error."""
    out: dict[str, str] = {}
    for name, path in specs:
        if name in out:
            raise SystemExit(f"{where}: --preds {name}={path}: the name {name!r} is given twice "
                             f"(also for {out[name]}); give each system its own name")
        checks.input_path(path, "--preds", f"{COMMAND} make")
        out[name] = path
    return out


def run_make(args: argparse.Namespace) -> int:
    from wikisum.core.progress import say
    from wikisum.generation import humaneval

    where = f"wikisum {COMMAND} make"
    preds = systems(args.preds, where)
    if args.kind != "quality" and len(preds) < 2:
        raise SystemExit(f"{where}: --kind {args.kind} compares systems side by side and needs "
                         "at least two --preds NAME=PREDS.jsonl; with one system use --kind "
                         "quality")
    if args.data:
        checks.input_path(args.data, "--data", f"{COMMAND} make", "dir")
    try:
        result = humaneval.make(preds, args.out, kind=args.kind, sample=args.sample,
                                seed=args.seed, show=args.show, pairs=args.pairs,
                                data=args.data)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"{where}: {exc}") from exc
    for warning in result["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    say(f"{result['examples']} examples of {len(preds)} systems: "
        f"{result['quality_items']} quality and {result['preference_items']} preference items")
    say(f"page -> {result['page']} (give it to the annotators)\n"
        f"key  -> {result['key']} (keep it: `wikisum {COMMAND} score --key` needs it)")
    return 0


def run_score(args: argparse.Namespace) -> int:
    from wikisum.core.progress import say
    from wikisum.generation import humanscore

    where = f"wikisum {COMMAND} score"
    for path in args.answers:
        checks.input_path(path, "--answers", f"{COMMAND} score")
    checks.input_path(args.key, "--key", f"{COMMAND} score")
    try:
        result = humanscore.score_answers(list(args.answers), args.key, args.against)
        paths = humanscore.write_report(result, args.out)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"{where}: {exc}") from exc
    print(humanscore.format_summary(result))
    say("\n".join(f"{name} -> {path}" for name, path in paths.items()))
    return 0


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (core.ownership): the --out directory
    of either subcommand."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
