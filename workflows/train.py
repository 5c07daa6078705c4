"""``wikisum train``: train (or resume) an abstractive model; the run is
:func:`wikisum.training.loop.train` of a :class:`wikisum.training.loop.TrainConfig`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wikisum import models
from wikisum.workflows import checks

HELP = "train (or resume) an abstractive model on a dataset into a self-contained run directory"
DESCRIPTION = f"""\
Train a model on the train split of --data (a `wikisum build` or `wikisum rank` output, or
headline pairs from `wikisum convert-pairs`). The model input is the title, <t>, then the
paragraphs in --extractor order on --corpus, cut to L tokens; the target is the lead.
Models: {', '.join(models.NAMES)}.

Whole articles (the paper's section 6; a build with --targets lead,article): --target article
trains on the whole article, its sections marked so that a decoded article splits back into
them; max_target_tokens (default 2,192 for articles, as the paper) skips longer training
examples (long_targets=skip, counted in the start-up lines and summary.json; dev perplexity
keeps them, cut). --inputs title conditions on the title alone (the paper's title-only model).
Decode, evaluate, export and summarize follow the run's target and inputs.

A pretrained model (pip install 'wikisum[hf]'): --model hf --init PATH fine-tunes the local
Hugging Face checkpoint in PATH (any AutoModelForSeq2SeqLM or AutoModelForCausalLM, with its
tokenizer; nothing is downloaded). Its input is built the same way from the dataset's text, in
its own tokenizer, cut to L of its tokens; a causal LM reads input, separator, target, eos and
is trained on the target. The run saves the tokenizer in hf-tokenizer/; decode runs generate.

Settings come, in increasing precedence, from TrainConfig's defaults, the run's own settings
(when --out holds a run; not --stop-after or --device), a --config file (.yaml, .toml or
.json: TrainConfig fields, and model config fields under `model:`), the flags below,
and KEY=VALUE arguments (last). KEY is a TrainConfig field (lr, warmup_steps, accumulate,
clip_norm, seed, eval_every, checkpoint_every, keep_checkpoints, ...), a model config field
(d_model, dropout, ...), or either written model.FIELD / train.FIELD; VALUE is read as JSON or
a YAML scalar. Unknown keys are an error.

Running `wikisum train --out RUN` again resumes from the latest checkpoint and trains on exactly
as an uninterrupted run would; the run's own settings (model, data, preset, ...) are the lowest
layer, so --out alone is enough (add --steps N to train longer). A run records its dataset
relative to the run directory: a run and its dataset, moved or copied together, resume and
decode from any working directory.

Defaults that fit the run: --preset auto is tiny on a CPU and base on CUDA; warmup_steps is
4000, or 10% of --steps when that is less. The first line says what trains and how many
parameters; after 5 updates a line estimates the time the run will take; settings that make
little sense for the run (warmup_steps >= steps, a train split that fits in one batch) are
warned about.

Early stopping: patience=N stops the run when the dev perplexity (measured every eval_every
updates) has not improved for N evaluations in a row (0, the default: never). Each new best is
saved as checkpoints/best.pt, which decode, export and summarize then use for --run RUN (give
RUN/checkpoints/step-N.pt to use another); log.jsonl records "best" and "early_stop" events
and summary.json says stopped_by "early_stopping". A resumed run keeps counting. Several GPUs:
  torchrun --nproc_per_node N -m wikisum.workflows.cli train ...

Outputs in --out (RUN):
  config.json               model name, model config, train config, special ids, the
                            vocabulary's SHA-256
  vocab.model               the data's sentencepiece model (the run is self-contained)
  checkpoints/step-N.pt     model, optimizer, schedule, RNG states, data position, the
                            vocabulary's SHA-256
  checkpoints/best.pt       with patience=N: the step of the lowest dev perplexity
  log.jsonl                 step, loss, lr, tokens/s; dev perplexity; events (always)
  summary.json              the final (or latest) summary
  data_stats.json           the training targets' lengths (decode's default --max-len)
  tensorboard/              with --log-to tensorboard (pip install 'wikisum[tensorboard]')
  wandb.json                with --log-to wandb, the wandb run id (pip install 'wikisum[wandb]')
Progress with loss, lr, tokens/s and an ETA goes to stderr (a bar on a terminal, plain lines
otherwise). A non-finite loss stops with an error (exit 1), and so does a checkpoint that
cannot be written (a full disk, a file-size limit): its partial file is removed, the last good
checkpoint is kept, and the same command resumes from it. A resumed run whose vocab.model or
dataset vocabulary is not the one its checkpoints record (by SHA-256) is refused, as decode,
evaluate and export refuse such a vocab.model.
"""

# Defaults shown in --help; they are TrainConfig's (a test keeps the two equal). Flags default
# to None so that a value left out does not hide one from --config.
SHOWN_DEFAULTS = {"preset": "auto", "steps": 20000, "extractor": "tfidf", "corpus": "combined",
                  "max_input_tokens": 500, "batch_tokens": 4096, "device": "auto",
                  "target": "lead", "inputs": "ranked"}


def add_parser(subparsers) -> None:
    d = SHOWN_DEFAULTS
    p = subparsers.add_parser("train", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", metavar="NAME",
                   help="the model (or `model:` in --config; resuming: the run's)")
    p.add_argument("--data", metavar="DIR",
                   help="the dataset directory (or `data:` in --config; resuming: the run's)")
    p.add_argument("--out", required=True, metavar="RUN", help="the run directory")
    p.add_argument("--preset", choices=(*models.PRESETS, "auto"),
                   help=f"model size; auto: tiny on CPU, base on CUDA (default: {d['preset']})")
    p.add_argument("--steps", type=checks.count(1), metavar="N",
                   help=f"optimizer updates in all (default: {d['steps']})")
    p.add_argument("--stop-after", type=checks.count(1), metavar="N",
                   help="stop after N updates in this invocation, with a checkpoint; run again "
                        "to go on (default: run to --steps)")
    p.add_argument("--config", metavar="FILE", help="settings file (.yaml, .yml, .toml, .json)")
    p.add_argument("--init", metavar="PATH",
                   help="with --model hf: the local Hugging Face checkpoint folder to fine-tune")
    p.add_argument("--wfe", action="store_true",
                   help="train the word-frequency estimator jointly (model config wfe=true)")
    p.add_argument("--extractor", help=f"paragraph ranking (default: {d['extractor']})")
    p.add_argument("--corpus", help=f"citations, search or combined (default: {d['corpus']})")
    p.add_argument("--target", choices=("lead", "article"),
                   help="what the model writes: the lead, or the whole article (a build with "
                        f"--targets lead,article) (default: {d['target']})")
    p.add_argument("--inputs", choices=("ranked", "title"),
                   help="what it reads: the title and the ranked references cut to L, or the "
                        f"title alone (default: {d['inputs']})")
    p.add_argument("--max-input-tokens", type=checks.count(1), metavar="L",
                   help=f"input length L in subwords (default: {d['max_input_tokens']})")
    p.add_argument("--batch-tokens", type=checks.count(1), metavar="N",
                   help="token budget of a batch, padding included "
                        f"(default: {d['batch_tokens']})")
    p.add_argument("--device", type=checks.device,
                   help=f"auto, cpu, cuda or cuda:N (default: {d['device']})")
    p.add_argument("--log-to", action="append", metavar="TARGETS",
                   help="where the log goes besides RUN/log.jsonl (always written): "
                        "tensorboard, wandb; repeat or comma-separate (default: jsonl only)")
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                   help="TrainConfig or model config settings, after the flags")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from wikisum.training import loop as training  # imports torch: only when training
    from wikisum.training.batching import CorruptShardError
    from wikisum.training.checkpoint import CheckpointWriteError
    from wikisum.training.config import make_config

    options = {"preset": args.preset, "steps": args.steps, "stop_after": args.stop_after,
               "extractor": args.extractor, "corpus": args.corpus,
               "max_input_tokens": args.max_input_tokens, "batch_tokens": args.batch_tokens,
               "target": args.target, "inputs": args.inputs,
               "device": args.device,
               "log_to": ",".join(args.log_to) if args.log_to else None,
               "model.init": str(Path(args.init).resolve()) if args.init else None}
    if args.config:
        checks.input_path(args.config, "--config", "train")
    if args.init:
        checks.input_path(args.init, "--init", "train", "dir")
        if args.model not in (None, "hf"):
            raise SystemExit(f"wikisum train: --init {args.init}: a pretrained checkpoint to "
                             f"fine-tune is for --model hf; --model {args.model} trains from "
                             "scratch")
    try:
        config = make_config(args.model, args.data, args.out, file=args.config,
                             options=options, overrides=args.overrides, wfe=args.wfe)
        if args.data:  # a dataset (or a build's root: make_config took its data/), or an error
            checks.dataset(args.data, "--data", "train")  # naming the option, before any work
        summary = training.train(config)
    except (training.NonFiniteLoss, CorruptShardError, CheckpointWriteError, FileNotFoundError,
            ValueError, ImportError) as exc:
        raise SystemExit(f"wikisum train: {exc}") from exc
    if summary["rank"] == 0:  # under torchrun every rank returns here; one line is enough
        print(training.summary_line(summary))
    if summary.get("stopped_by"):
        if summary["rank"] == 0:
            print(f"train: stopped by {summary['stopped_by']} at step {summary['step']}, "
                  f"checkpoint {summary['checkpoint']}; run the same command to resume",
                  file=sys.stderr)
        return 128 + 15 if summary["stopped_by"] == "SIGTERM" else 128 + 2
    return 0


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
