"""``wikisum evaluate``: metrics of a predictions file (ROUGE, perplexity, ...), printed as a
table and written as JSON. The metrics are :func:`wikisum.models.evaluation.summarize`'s."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

HELP = "ROUGE-1/2/L F1 and per-wordpiece perplexity of a `wikisum decode` predictions file"
DESCRIPTION = """\
Read PREDS (JSON lines from `wikisum decode`: id, prediction, reference, and reference_nll /
reference_tokens for perplexity) and report ROUGE-1/2/L (F1, precision, recall; rouge-score with
stemming), DUC-style 75-byte recall, redundancy and the reference's perplexity per wordpiece.

Output: a short table on stdout, and the metrics as JSON in --out.
"""

REQUIRED = ("id", "prediction", "reference")


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("evaluate", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preds", required=True, metavar="PREDS", help="predictions (.jsonl)")
    p.add_argument("--out", metavar="JSON",
                   help="metrics file (default: PREDS with the suffix .metrics.json)")
    p.set_defaults(func=run)


def read_predictions(path: str) -> list[dict]:
    """The records of a predictions file; a bad line is an error naming ``path:line``."""
    records = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise FileNotFoundError(f"cannot read predictions {path}: {exc}") from exc
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{number}: not JSON ({exc})") from exc
        if not isinstance(record, dict):
            raise ValueError(f"{path}:{number}: a record must be a JSON object")
        missing = [k for k in REQUIRED if k not in record]
        if missing:
            raise ValueError(f"{path}:{number}: no {', '.join(missing)}")
        records.append(record)
    if not records:
        raise ValueError(f"{path} holds no predictions")
    return records


def default_out(preds: str) -> str:
    return str(Path(preds).with_suffix(".metrics.json"))


def evaluate(preds: str, out: str | None = None) -> tuple[dict, str]:
    """The metrics of ``preds``, written to ``out`` (default: :func:`default_out`)."""
    from wikisum.models import evaluation

    metrics = evaluation.summarize(read_predictions(preds))
    metrics["predictions"] = str(preds)
    target = Path(out or default_out(preds))
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(json.dumps(metrics, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, target)
    return metrics, str(target)


def run(args: argparse.Namespace) -> int:
    from wikisum.models import evaluation

    try:
        metrics, path = evaluate(args.preds, args.out)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum evaluate: {exc}") from exc
    print(evaluation.format_table(metrics))
    print(f"metrics -> {path}")
    return 0
