"""``wikisum export --format hf``: a T-D or T-DMCA run as a folder that transformers loads with
``AutoModelForCausalLM`` and ``AutoTokenizer`` (``trust_remote_code=True``), where wikisum is
not installed, with logits equal to wikisum's.

The folder holds wikisum's own model code: ``wikisum/models/transformer.py`` and every module it
imports from ``wikisum.models`` (attention, base, losses, moe, wfe, flexattention, cpu_kernels;
torch only), copied as they are with ``from wikisum.models.X import`` rewritten to
``from .X import`` (transformers copies a remote-code module's siblings only when imported so),
and thin transformers classes around them (:mod:`wikisum.generation.hfcode`)::

    config.json               model_type "wikisum", auto_map, the TransformerConfig fields, and
                              under "wikisum": the special ids, inputs (extractor, corpus, L),
                              default decoding, step, the tokenizer's SHA-256
    generation_config.json    greedy decoding up to the run's max_len, </s> ends
    model.safetensors         the weights (float32), named model.<wikisum's name>
    modeling_wikisum.py       WikisumForCausalLM (PreTrainedModel + GenerationMixin)
    configuration_wikisum.py  WikisumConfig (PretrainedConfig)
    tokenization_wikisum.py   WikisumTokenizer (PreTrainedTokenizer over sentencepiece)
    tokenizer.model           the run's sentencepiece model
    tokenizer_config.json     the tokenizer's auto_map, special tokens and L
    transformer.py, ...       the copied model modules
    README.md                 the model card, YAML front matter first (huggingface_hub reads it)

Only the decoder-only models export: T-ED and the recurrent families read their input through an
encoder into wikisum's own decoding state, and AdaDec and AttExp a retrieved training exemplar
besides, which a causal language model's ``generate`` does not carry (:func:`check_family`).
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import asdict
from pathlib import Path

import yaml

from wikisum.core import files
from wikisum.generation import hfcode

HF_FAMILIES = ("t-d", "t-dmca")
ENTRY_MODULE = "transformer"  # wikisum.models.transformer: DecoderOnlyTransformer
_MODEL_IMPORT = re.compile(r"^(\s*)from wikisum\.models\.(\w+) import", re.MULTILINE)
_ANY_WIKISUM_IMPORT = re.compile(r"^\s*(?:from|import)\s+wikisum\b", re.MULTILINE)


def check_family(name: str) -> None:
    """Raise ValueError unless model ``name`` exports to transformers (module docstring)."""
    if name not in HF_FAMILIES:
        raise ValueError(f"--format hf exports {' and '.join(HF_FAMILIES)} only, not {name}: "
                         "T-ED and the LSTM families decode through an encoder into wikisum's "
                         "own state (AdaDec and AttExp also read a retrieved exemplar), which "
                         "transformers' causal-LM generate does not carry; export it in the "
                         "default format")


def model_sources() -> dict[str, str]:
    """``{module name: source}`` of ``wikisum.models.transformer`` and of every
    ``wikisum.models`` module it imports, transitively, with those imports made relative.

    Raises:
        ValueError: a module imports wikisum otherwise (the folder could not load without it).
    """
    sources: dict[str, str] = {}
    pending = [ENTRY_MODULE]
    while pending:
        name = pending.pop()
        if name in sources:
            continue
        spec = importlib.util.find_spec(f"wikisum.models.{name}")
        text = Path(spec.origin).read_text(encoding="utf-8")
        pending.extend(m.group(2) for m in _MODEL_IMPORT.finditer(text))
        text = _MODEL_IMPORT.sub(r"\1from .\2 import", text)
        if _ANY_WIKISUM_IMPORT.search(text):
            raise ValueError(f"wikisum.models.{name} imports wikisum other than by `from "
                             "wikisum.models.X import ...`: --format hf cannot ship it")
        sources[name] = text
    return sources


def dev_metrics(run: Path, step: int) -> dict | None:
    """The last dev evaluation of ``run``'s log at or before ``step`` (``dev_ppl``, ``step``),
    or None where the log holds none."""
    log = run / "log.jsonl"
    if not log.is_file():
        return None
    found = None
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and "dev_ppl" in record and "event" not in record \
                and int(record.get("step", 0)) <= step:
            found = {"step": int(record["step"]), "dev_ppl": float(record["dev_ppl"])}
    return found


def write(bundle, target: Path) -> dict:
    """Write ``bundle`` (a T-D or T-DMCA run, :func:`wikisum.generation.export.load_run`) to the
    folder ``target`` (module docstring); returns what was written."""
    from safetensors.torch import save_file

    from wikisum.generation.export import Staging, copy_tokenizer, written

    check_family(bundle.name)
    sources = model_sources()
    target.mkdir(parents=True, exist_ok=True)
    weights = {f"model.{k}": v.detach().to("cpu").contiguous().clone()
               for k, v in bundle.model.state_dict().items()}
    with Staging(target) as staging:
        with files.naming(str(target / "model.safetensors")):
            save_file(weights, str(staging.add("model.safetensors")), metadata={"format": "pt"})
        tokenizer_hash = copy_tokenizer(bundle, target, staging)
        for name, text in {**{f"{m}.py": s for m, s in sources.items()},
                           **hfcode.FILES}.items():
            staging.text(name, text)
        _stage_configs(bundle, target, staging, sources, tokenizer_hash)
        # config.json, which transformers (and wikisum) open first, is renamed into place last
        staging.commit("config.json")
    return written(bundle, target, format="hf")


def _stage_configs(bundle, target: Path, staging, sources: dict, tokenizer_hash: str) -> None:
    """config.json, generation_config.json, tokenizer_config.json and README.md, staged."""
    from wikisum.generation.export import HF_FORMAT, _version

    special = {k: int(v) for k, v in bundle.special_ids.items()}
    inputs = bundle.input_record()
    info = {"format": HF_FORMAT, "format_version": 1, "model": bundle.name,
            "special_ids": special, "dataset_kind": bundle.dataset_kind, "input": inputs,
            "decoding": bundle.decoding, "step": bundle.step,
            "tokenizer_sha256": tokenizer_hash, "exported_from": str(bundle.path),
            "wikisum_version": _version(), "model_modules": sorted(sources)}
    config = {"architectures": [hfcode.MODEL_CLASS], "model_type": hfcode.MODEL_TYPE,
              "auto_map": {"AutoConfig": f"configuration_wikisum.{hfcode.CONFIG_CLASS}",
                           "AutoModelForCausalLM": f"modeling_wikisum.{hfcode.MODEL_CLASS}"},
              "wikisum_model": bundle.name, "transformer": asdict(bundle.config),
              "wikisum": info, "vocab_size": bundle.tokenizer.get_piece_size(),
              "pad_token_id": special["pad"], "bos_token_id": special["bos"],
              "eos_token_id": special["eos"], "sep_token_id": special["sep"],
              "tie_word_embeddings": False, "use_cache": False, "dtype": "float32"}
    generation = {"bos_token_id": special["bos"], "eos_token_id": special["eos"],
                  "pad_token_id": special["pad"], "do_sample": False, "num_beams": 1,
                  "max_new_tokens": int(bundle.decoding["max_len"]), "use_cache": False}
    sp = bundle.tokenizer
    tokenizer = {"tokenizer_class": hfcode.TOKENIZER_CLASS,
                 "auto_map": {"AutoTokenizer": [f"tokenization_wikisum.{hfcode.TOKENIZER_CLASS}",
                                                None]},
                 "pad_token": sp.id_to_piece(special["pad"]),
                 "unk_token": sp.id_to_piece(special["unk"]),
                 "bos_token": sp.id_to_piece(special["bos"]),
                 "eos_token": sp.id_to_piece(special["eos"]),
                 "sep_token": sp.id_to_piece(special["sep"]),
                 "title_sep_token": sp.id_to_piece(special["title_sep"]),
                 "max_input_tokens": bundle.max_input_tokens,
                 "clean_up_tokenization_spaces": False, "padding_side": "right"}
    for name, value in (("config.json", config), ("generation_config.json", generation),
                        ("tokenizer_config.json", tokenizer)):
        staging.text(name, json.dumps(value, indent=1) + "\n")
    staging.text("README.md", model_card(info, bundle, target))


def card_metadata(info: dict, bundle, name: str) -> dict:
    """The model card's YAML front matter: library, task, tags, the dataset, and the run's dev
    perplexity (``model-index``) where its log has one."""
    inputs = info["input"]
    dataset = Path(bundle.data).name if bundle.data else None
    meta: dict = {"library_name": "transformers", "pipeline_tag": "summarization",
                  "tags": ["wikisum", "summarization", bundle.name, "custom_code"]}
    if dataset:
        meta["datasets"] = [dataset]
    meta["wikisum"] = {"model": bundle.name, "step": bundle.step,
                       "dataset_kind": bundle.dataset_kind, "extractor": inputs["extractor"],
                       "corpus": inputs["corpus"], "L": inputs["max_input_tokens"],
                       "target": inputs["target"], "inputs": inputs["inputs"]}
    metrics = dev_metrics(bundle.path, bundle.step)
    if metrics:
        meta["wikisum"]["dev_perplexity"] = metrics["dev_ppl"]
        meta["model-index"] = [{"name": name, "results": [{
            "task": {"type": "summarization", "name": "Summarization"},
            "dataset": {"name": dataset or "wikisum dataset", "type": dataset or "wikisum",
                        "split": "dev"},
            "metrics": [{"type": "perplexity", "value": round(metrics["dev_ppl"], 4),
                         "name": f"dev perplexity (step {metrics['step']})"}]}]}]
    return meta


def model_card(info: dict, bundle, target: Path) -> str:
    """README.md of the folder: YAML front matter, what the model reads and writes, and how to
    load it."""
    inputs = info["input"]
    meta = card_metadata(info, bundle, target.name)
    if bundle.dataset_kind == "pairs":
        reads = (f"the source text, cut to its first {inputs['max_input_tokens']} wordpieces, "
                 "then `<sep>` (a headline-pairs model)")
        prompt = ("ids = tokenizer.encode(text)[:tokenizer.max_input_tokens] + "
                  "[tokenizer.sep_token_id]")
    elif inputs["inputs"] == "title":
        reads = "the article title, `<t>`, then `<sep>` (a title-only model)"
        prompt = 'ids = tokenizer.prompt("Title")'
    else:
        reads = (f"the article title, `<t>`, then the reference paragraphs ranked by wikisum's "
                 f"`{inputs['extractor']}` extractor with the title as the query (the "
                 f"`{inputs['corpus']}` corpus in training), cut to L = "
                 f"{inputs['max_input_tokens']} wordpieces, then `<sep>`")
        prompt = 'ids = tokenizer.prompt("Title", ranked_paragraphs)  # best paragraph first'
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    return f"""---
{front}---

# {bundle.name} (wikisum, transformers format)

A `{bundle.name}` model (Liu et al. 2018, "Generating Wikipedia by Summarizing Long Sequences")
trained with wikisum for {bundle.step} steps, exported from `{info['exported_from']}` with
`wikisum export --format hf`. It reads {reads}, and writes the summary after `<sep>`.

The model code is wikisum's own (`transformer.py` and the modules it imports, copied here), so
the logits equal wikisum's; loading it runs that code: pass `trust_remote_code=True`.

```python
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

model = AutoModelForCausalLM.from_pretrained("THIS_DIRECTORY", trust_remote_code=True)
tokenizer = AutoTokenizer.from_pretrained("THIS_DIRECTORY", trust_remote_code=True)
{prompt}
out = model.generate(torch.tensor([ids]), max_new_tokens={info['decoding']['max_len']})
print(tokenizer.decode(out[0, len(ids):], skip_special_tokens=True))
```

`generate` is greedy by default (`generation_config.json`), token for token as `wikisum decode
--beam 1`; it runs the whole sequence at every step (no key/value cache). wikisum's own default
is beam search (beam {info['decoding']['beam']}, length penalty alpha
{info['decoding']['alpha']}), whose length penalty transformers' beam search does not share.
The input must not be left-padded: decode rows of one length together.
"""


# ------------------------------------------------------------------------------------------
# A fine-tuned pretrained model (`train --model hf`): its own transformers folder


PRETRAINED_RECORD = "wikisum.json"  # what wikisum knows of a fine-tuned model, beside its files


def write_pretrained(bundle, target: Path) -> dict:
    """Write a ``--model hf`` run (a fine-tuned transformers checkpoint) to ``target``: the
    model and its tokenizer as ``save_pretrained`` writes them (``AutoModelFor...`` and
    ``AutoTokenizer.from_pretrained(target)`` load them, no remote code), ``wikisum.json``
    (what wikisum needs to use it: inputs, decoding, special ids) and the model card."""
    from wikisum.core.files import write_text_atomically
    from wikisum.generation.export import EXPORT_FORMAT, EXPORT_VERSION, _version, written
    from wikisum.models import hf

    target.mkdir(parents=True, exist_ok=True)
    # the record goes before transformers replaces the model's files, and comes back last
    (target / PRETRAINED_RECORD).unlink(missing_ok=True)
    hf.save_pretrained(bundle.model, target)
    config = asdict(bundle.config)
    config["init"] = "."  # the export is its own checkpoint
    inputs = bundle.input_record()
    model = bundle.model
    info = {"format": EXPORT_FORMAT, "format_version": EXPORT_VERSION, "model": bundle.name,
            "model_config": config, "architecture": config.get("architecture"),
            "special_ids": {"eos": model.eos_id, "sep": model.sep_id, "pad": model.pad_id},
            "dataset_kind": bundle.dataset_kind, "input": inputs,
            "decoding": bundle.decoding, "step": bundle.step,
            "exported_from": str(bundle.path), "wikisum_version": _version()}
    write_text_atomically(target / "README.md", pretrained_card(info, bundle, target))
    # the record of what wikisum needs to use the model is written last
    write_text_atomically(target / PRETRAINED_RECORD, json.dumps(info, indent=1) + "\n")
    return written(bundle, target, format="hf")


def pretrained_card(info: dict, bundle, target: Path) -> str:
    """README.md of a fine-tuned pretrained model's folder."""
    inputs = info["input"]
    meta = card_metadata(info, bundle, target.name)
    meta["tags"] = [t for t in meta["tags"] if t != "custom_code"]
    auto = ("AutoModelForSeq2SeqLM" if bundle.config.kind == "seq2seq"
            else "AutoModelForCausalLM")
    front = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True)
    return f"""---
{front}---

# {info.get('architecture') or 'transformers model'} fine-tuned with wikisum

Fine-tuned with `wikisum train --model hf` for {bundle.step} steps from
`{bundle.config.init}` on a WikiSum-style dataset, and exported with `wikisum export`. It reads
the article title, then the reference paragraphs ranked by wikisum's `{inputs['extractor']}`
extractor (the `{inputs['corpus']}` corpus in training), cut to L = {inputs['max_input_tokens']}
of this tokenizer's tokens, and writes the lead.

```python
from transformers import {auto}, AutoTokenizer

model = {auto}.from_pretrained("THIS_DIRECTORY")
tokenizer = AutoTokenizer.from_pretrained("THIS_DIRECTORY")
```

`wikisum decode --run THIS_DIRECTORY` and `wikisum.generation.summarize` read it too
(`wikisum.json` holds what they need: the inputs, the default decoding and the special ids).
"""
