"""``wikisum vocab``: train the sentencepiece vocabulary on an ingest output."""

from __future__ import annotations

import argparse
import logging

from wikisum.core import progress, vocab_config
from wikisum.workflows import checks

HELP = "train the subword vocabulary (sentencepiece) on ingested leads and paragraphs"
DESCRIPTION = """\
Train a sentencepiece (unigram) model shared by inputs and targets, as the paper's 32k subword
vocabulary, on a deterministic sample of the train split's leads and reference paragraphs
(the --max-texts texts with the smallest stable hash: memory is bounded whatever the corpus).
The model reserves <pad>=0, <unk>=1, <s>=2, </s>=3 and the separators <t> (after the title in
a model input) and <sep> (between input and target in decoder-only models).
Input: --data, the --out directory of `wikisum ingest`. Output: MODEL (a .model file).
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("vocab", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    checks.add_option(p, "--data", retired=["--in"], dest="ingest_dir", required=True,
                      metavar="DIR", help="output directory of `wikisum ingest`")
    p.add_argument("--out", required=True, metavar="MODEL", help="sentencepiece model to write")
    checks.add_option(p, "--vocab-size", retired=["--size"], type=checks.count(16),
                      default=vocab_config.DEFAULT_SIZE, metavar="N",
                      help="vocabulary size; an upper bound on small corpora "
                           "(default: %(default)s)")
    p.add_argument("--max-texts", type=checks.count(1), default=vocab_config.DEFAULT_MAX_TEXTS,
                   metavar="N",
                   help="texts sampled for training (default: %(default)s)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from wikisum.core import vocab

    logging.getLogger("wikisum").setLevel(progress.log_level())
    if args.vocab_size < 16:
        raise SystemExit("wikisum vocab: --vocab-size must be at least 16")
    checks.ingest_output(args.ingest_dir, "--data", "vocab")
    try:
        texts = vocab.training_texts(args.ingest_dir, args.max_texts)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum vocab: {exc}") from exc
    ids = vocab.train_vocab(texts, args.out, args.vocab_size)
    sp = vocab.load(args.out)
    print(f"vocab: {sp.get_piece_size()} pieces from {len(texts)} texts -> {args.out} "
          f"(<t>={ids.title_sep}, <sep>={ids.sep})")
    return 0


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "file")]
