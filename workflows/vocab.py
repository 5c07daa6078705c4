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
The trainer suits the language's script (--lang; default: the language the ingest output
records, else told from the text): character coverage 0.9995 for languages with a rich
character set (Chinese, Japanese, Korean), 1.0 for the others, as sentencepiece advises; with
byte fallback (from --vocab-size 2048 on, unless told) a character that is not a piece is
spelled as its UTF-8 bytes, so that no letter becomes <unk>.
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
    p.add_argument("--lang", metavar="CODE",
                   help="the text's language, which chooses the character coverage (default: "
                        "the ingest output's; else told from the text's script)")
    p.add_argument("--byte-fallback", action=argparse.BooleanOptionalAction, default=None,
                   help="spell characters that are not pieces as UTF-8 byte pieces (256 "
                        "pieces) instead of <unk> (default: on from --vocab-size "
                        f"{vocab_config.BYTE_FALLBACK_MIN_SIZE})")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from wikisum.core import vocab

    logging.getLogger("wikisum").setLevel(progress.log_level())
    if args.vocab_size < 16:
        raise SystemExit("wikisum vocab: --vocab-size must be at least 16")
    checks.ingest_output(args.ingest_dir, "--data", "vocab")
    lang = (args.lang or "").strip() or vocab.ingest_language(args.ingest_dir)
    try:
        texts = vocab.training_texts(args.ingest_dir, args.max_texts)
        ids = vocab.train_vocab(texts, args.out, args.vocab_size, lang=lang,
                                byte_fallback=args.byte_fallback)
    except (FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum vocab: {exc}") from exc
    sp = vocab.load(args.out)
    print(f"vocab: {sp.get_piece_size()} pieces from {len(texts)} texts -> {args.out} "
          f"(<t>={ids.title_sep}, <sep>={ids.sep})")
    return 0


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "file")]
