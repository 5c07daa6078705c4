"""``wikisum export``: a trained run's model as safetensors weights, config and tokenizer, for
use without the training state; :func:`wikisum.generation.export.export` does the work."""

from __future__ import annotations

import argparse

HELP = "write a run's model as safetensors weights + config + tokenizer, without training state"
DESCRIPTION = """\
Export the model of a trained run (its latest checkpoint, or --run CHECKPOINT_FILE) to a
directory that loads without the optimizer, schedule or data position:

  model.safetensors   the weights
  config.json         model name and config, special ids, how inputs are made (extractor,
                      corpus, L), default decoding (beam, alpha, max_len)
  tokenizer.model     the sentencepiece model
  data_stats.json     the training targets' lengths (where the run has them)
  extractor.json      the learned extractor, for a model trained on its rankings (JSON: an
                      export holds no pickle, and one that does is refused)
  README.md           what the model is and how to use it

Use it from Python with `wikisum.generation.summarize(OUT, texts, title=...)` or
`wikisum.generation.load_bundle(OUT)`, or decode a dataset with
`wikisum decode --run OUT --data DIR`.

--format hf writes instead a folder that transformers loads where wikisum is not installed
(AutoModelForCausalLM and AutoTokenizer, trust_remote_code=True): wikisum's model code copied
beside the weights, transformers config, model and tokenizer classes, and a model card
README.md that huggingface_hub.upload_folder publishes as it is. T-D and T-DMCA only; wikisum's
load and summarize read the default format, not this one.
"""


def add_parser(subparsers) -> None:
    p = subparsers.add_parser("export", help=HELP, description=DESCRIPTION,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--run", required=True, metavar="RUN",
                   help="a `wikisum train` --out (or one of its checkpoint files)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the export directory (new, empty, or an earlier export)")
    p.add_argument("--format", choices=("wikisum", "hf"), default="wikisum",
                   help="wikisum: what `wikisum decode`, load and summarize read (default); hf: "
                        "a transformers folder (AutoModelForCausalLM, trust_remote_code), "
                        "t-d and t-dmca only")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from wikisum.core.progress import say
    from wikisum.generation import export
    from wikisum.workflows import checks

    checks.input_path(args.run, "--run", "export", "any")
    form = getattr(args, "format", "wikisum")
    try:
        result = export.export(args.run, args.out, format=form)
    except (FileNotFoundError, FileExistsError, ValueError) as exc:
        raise SystemExit(f"wikisum export: {exc}") from exc
    say(f"export{' --format hf' if form == 'hf' else ''}: {result['model']} step "
        f"{result['step']} ({result['parameters']:,} parameters) -> {result['out']} "
        f"({', '.join(result['files'])})")
    return 0


def outputs(args: argparse.Namespace) -> list:
    """What this command writes, checked before it runs (pipeline.ownership)."""
    from wikisum.core.ownership import Output

    return [Output("--out", args.out, "dir")]
