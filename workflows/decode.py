"""``wikisum decode``: a trained run's summaries of a split, with the reference's likelihood.

:func:`wikisum.generation.decode.decode` does the work; this is the command's glue.
"""

from __future__ import annotations

import argparse

from wikisum.training import datastats
from wikisum.workflows import checks

HELP = "summaries of a split by a trained run (batched beam search or sampling), as JSON lines"
DESCRIPTION = f"""\
Decode a split of the run's dataset (or --data) with the run's latest checkpoint, or its
checkpoints/best.pt where early stopping (patience) wrote one (or an export's weights):
batched beam search with GNMT's length penalty (--alpha); --beam 1 is greedy search;
--do-sample draws tokens instead (with --temperature, --top-k, --top-p, --seed).
--no-repeat-ngram-size N never repeats an N-gram; --wfe constrains word frequencies with the
model's estimator (a model trained with --wfe).

--max-len defaults to {datastats.DEFAULT_MAX_LEN_HELP} (`wikisum train` records it).

Output (--out), one JSON object a line, in data order, written as it goes:
  {{"id", "title", "prediction", "reference", "reference_nll", "reference_tokens"}}
reference_nll (nats) and reference_tokens (wordpieces, </s> included) come from a teacher-forced
pass over the reference, so `wikisum evaluate` reports perplexity without the model. Examples
with an empty reference are skipped and counted.

A run trained on whole articles (`wikisum train --target article`) writes whole articles:
each record adds "target": "article", prediction_sections and reference_sections (lists of
{{"title", "text"}}, the lead first with title ""), and reference_cut (the reference's tokens past
the run's max_target_tokens, which reference_nll does not score); prediction and reference
are the articles as text with " == Title == " before each section (tensor2tensor's layout).
PREDS.articles.md shows each predicted article beside its reference. A title-only run
(--inputs title) reads the titles alone. Beside it, PREDS.decode.json records the run,
checkpoint step, split and decoding settings, and whether the file is complete.

A killed decode resumes: run the same command again and it keeps the predictions already written
(a line cut short is dropped) and decodes the rest. A file written by another run, checkpoint or
other settings is refused; --overwrite starts it again. Progress with an ETA goes to stderr.

The vocabulary is checked first: a run's vocab.model (an export's tokenizer.model) that is not
the file the model was trained with, or a --data tokenised with another vocabulary, is refused
with both SHA-256 hashes (a run trained before they were recorded is decoded with a warning).
"""

# A search: (model, batch) -> one hypothesis (with .tokens, </s> excluded) per batch row.


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("decode", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True, metavar="RUN",
                   help="a `wikisum train` --out, or a `wikisum export` --out (with --data)")
    p.add_argument("--split", default="test", help="split to decode (default: %(default)s)")
    p.add_argument("--out", required=True, metavar="PREDS", help="predictions file (.jsonl)")
    p.add_argument("--beam", type=checks.count(1), metavar="K",
                   help="beam size; 1 is greedy search (default: 4)")
    p.add_argument("--alpha", type=checks.number(0, 10), default=0.6,
                   help="length penalty exponent (default: %(default)s)")
    p.add_argument("--max-len", type=checks.count(1), metavar="N",
                   help="most generated tokens, </s> included (default: twice the 99th "
                        f"percentile of the run's training targets, at most "
                        f"{datastats.MAX_LEN_CAP} ({datastats.ARTICLE_MAX_LEN_CAP} for whole "
                        f"articles); {datastats.FALLBACK_MAX_LEN} for a run trained without "
                        "that record)")
    p.add_argument("--min-len", type=checks.count(0), default=0, metavar="N",
                   help="fewest tokens before </s> (default: %(default)s)")
    p.add_argument("--no-repeat-ngram-size", type=checks.count(0), default=0, metavar="N",
                   help="never emit an N-gram twice in one output; 0: off (default: "
                        "%(default)s)")
    sampling = p.add_argument_group("sampling (instead of beam search)")
    sampling.add_argument("--do-sample", dest="sample", action="store_true",
                          help="draw each token from the model's distribution")
    sampling.add_argument("--temperature", type=checks.number(0, 100, low_open=True),
                          default=1.0, help="divides the scores (default: %(default)s)")
    sampling.add_argument("--top-k", type=checks.count(0), default=0, metavar="K",
                          help="draw from the K likeliest tokens; 0: all (default: %(default)s)")
    sampling.add_argument("--top-p", type=checks.number(0, 1, low_open=True), default=1.0,
                          metavar="P", help="draw from the likeliest tokens whose probability "
                                            "reaches P; 1: all (default: %(default)s)")
    sampling.add_argument("--seed", type=checks.count(0), metavar="N",
                          help="seed: the same seed gives the same samples (default: none)")
    p.add_argument("--data", metavar="DIR",
                   help="dataset directory (default: the one the run was trained on; an "
                        "export needs it)")
    p.add_argument("--batch-size", type=checks.count(1), default=8, metavar="N",
                   help="examples decoded together (default: %(default)s)")
    p.add_argument("--limit", type=checks.count(1), metavar="N",
                   help="decode the first N examples only")
    p.add_argument("--wfe", action="store_true", help="word-frequency-constrained decoding")
    p.add_argument("--device", type=checks.device, default="auto",
                   help="auto, cpu, cuda, cuda:N (default: %(default)s)")
    p.add_argument("--overwrite", action="store_true",
                   help="decode from the start into --out even where it holds predictions")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from wikisum.core.progress import say
    from wikisum.generation.decode import decode
    from wikisum.training.batching import CorruptShardError

    checks.input_path(args.run, "--run", "decode", "any")
    data = checks.dataset(args.data, "--data", "decode") if args.data else None
    try:
        result = decode(args.run, args.split, args.out, beam=args.beam, alpha=args.alpha,
                        max_len=args.max_len, min_len=args.min_len, data=data,
                        batch_size=args.batch_size, limit=args.limit, wfe=args.wfe,
                        device=args.device, no_repeat_ngram_size=args.no_repeat_ngram_size,
                        sample=args.sample, temperature=args.temperature, top_k=args.top_k,
                        top_p=args.top_p, seed=args.seed, overwrite=args.overwrite)
    except (CorruptShardError, FileNotFoundError, ValueError) as exc:
        raise SystemExit(f"wikisum decode: {exc}") from exc
    skipped = ", ".join(f"{v} {k}" for k, v in result["skipped"].items())
    resumed = f", {result['resumed']} kept from before" if result["resumed"] else ""
    cut = (f"; {result['cut']} references longer than the run's max_target_tokens, scored "
           "cut to it" if result["cut"] else "")
    noun = "articles" if result["target"] == "article" else "examples"
    say(f"decode: {result['examples']} {args.split} {noun} by {args.run} (step "
        f"{result['step']}, max-len {result['max_len']}{resumed}) -> {result['out']}"
        + (f" (skipped {skipped})" if skipped else "") + cut
        + (f"\n  articles beside their references: {result['view']}" if result["view"] else ""))
    return 0


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership): the predictions
    and the settings record beside them."""
    from wikisum.core.ownership import Output
    from wikisum.generation.decode import settings_path, view_path

    return [Output("--out", args.out, "file"),
            Output("--out", str(settings_path(args.out)), "file"),
            Output("--out", str(view_path(args.out)), "file")]
