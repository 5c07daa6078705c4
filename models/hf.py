"""The "hf" family: a pretrained Hugging Face checkpoint fine-tuned as a wikisum model.

``wikisum train --model hf --init PATH`` reads PATH, a local folder holding any
``AutoModelForSeq2SeqLM`` or ``AutoModelForCausalLM`` checkpoint (``config.json`` and weights)
and its tokenizer. Nothing is fetched: every ``from_pretrained`` passes ``local_files_only``.
``transformers`` is the optional extra ``wikisum[hf]``, imported only when this family builds
a model.

The model reads text, not the dataset's sentencepiece ids: :meth:`HFSummarizer.encode_example`
turns a :class:`wikisum.core.loader.TextExample` into ids of the checkpoint's own tokenizer,
built as for every model (the title, the separator, the ranked paragraphs, the first L tokens;
a headline pair's source cut to L; the title and the separator alone for ``inputs="title"``).
The separator is the tokenizer's sep token, else its eos token. From there the data code is
the paper's families' (length batches, token budgets, the data position a checkpoint stores).

Training (``forward``), by kind of checkpoint:

    seq2seq   encoder input: the source; labels: the target, then eos
    causal    one sequence: source, separator, target, eos; the loss on the target only

Both compute the loss as the checkpoint's own ``forward(labels=...)`` does (the mean NLL of the
labelled tokens), so a step costs what a plain transformers loop's step costs.

Decoding never steps this model token by token (``start``/``step`` are not implemented):
:meth:`HFSummarizer.generate_ids` runs ``generate`` with the settings
:func:`wikisum.generation.decoding.generate_settings` maps the decoding options onto.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn

from wikisum.models.base import Batch, ModelOutput

NAMES = ("hf",)
KINDS = ("seq2seq", "causal")
TOKENIZER_DIR = "hf-tokenizer"  # RUN/hf-tokenizer: the tokenizer the run trains with
IGNORE = -100  # transformers' label of a position that carries no loss


class HFCheckpointError(ValueError):
    """A folder that cannot be fine-tuned: not a checkpoint, an architecture with no
    seq2seq or causal LM head, a tokenizer without a usable token, a context window shorter
    than the input. The message names the folder."""


@dataclass
class HFConfig:
    """What a run records of its pretrained checkpoint: where it came from and its config."""

    init: str = ""  # the folder the run started from (--init)
    kind: str = ""  # seq2seq | causal, from the checkpoint's architecture
    architecture: str = ""  # the checkpoint's model class (BartForConditionalGeneration, ...)
    hf_config: dict[str, Any] = field(default_factory=dict)  # the checkpoint's config.json

    @property
    def vocab_size(self) -> int:
        return int(self.hf_config.get("vocab_size", 0)) or 32000

    @property
    def d_model(self) -> int:
        c = self.hf_config
        return int(c.get("d_model") or c.get("n_embd") or c.get("hidden_size") or 512)

    @property
    def n_layers(self) -> int:
        c = self.hf_config
        return int(c.get("decoder_layers") or c.get("n_layer") or c.get("num_hidden_layers")
                   or 1)

    @property
    def context_window(self) -> int | None:
        """The most positions the checkpoint embeds (None: it does not say, e.g. relative
        positions)."""
        c = self.hf_config
        for key in ("max_position_embeddings", "n_positions", "n_ctx", "max_sequence_length"):
            if isinstance(c.get(key), int) and c[key] > 0:
                return int(c[key])
        return None


def _transformers():
    try:
        import transformers
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError("--model hf needs transformers: pip install 'wikisum[hf]'"
                                  ) from exc
    transformers.logging.set_verbosity_error()  # no hub advice on every load
    transformers.logging.disable_progress_bar()  # wikisum's own lines say what happens
    return transformers


def _auto_class(kind: str):
    t = _transformers()
    return t.AutoModelForSeq2SeqLM if kind == "seq2seq" else t.AutoModelForCausalLM


def read_checkpoint_config(folder: str) -> tuple[Any, str]:
    """(the transformers config of ``folder``, its kind: seq2seq or causal).

    Raises:
        HFCheckpointError: no config.json, one transformers cannot read, or an architecture
            with neither a seq2seq nor a causal LM head.
    """
    t = _transformers()
    path = Path(folder)
    if not path.is_dir():
        raise HFCheckpointError(f"--init {folder}: not a folder")
    if not (path / "config.json").is_file():
        raise HFCheckpointError(f"--init {folder}: not a Hugging Face checkpoint (no "
                                "config.json)")
    try:
        config = t.AutoConfig.from_pretrained(str(path), local_files_only=True)
    except (ValueError, KeyError, OSError) as exc:
        raise HFCheckpointError(f"--init {folder}: config.json names no architecture "
                                f"transformers knows ({exc})") from exc
    if type(config) in t.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING:
        return config, "seq2seq"
    if type(config) in t.MODEL_FOR_CAUSAL_LM_MAPPING:
        return config, "causal"
    raise HFCheckpointError(f"--init {folder}: model type {config.model_type!r} has no "
                            "seq2seq or causal language-model head (AutoModelForSeq2SeqLM, "
                            "AutoModelForCausalLM)")


def load_tokenizer(folder: str, what: str):
    """The tokenizer saved in ``folder`` (``what`` names it in errors: "--init PATH", ...)."""
    t = _transformers()
    try:
        return t.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    except (ValueError, KeyError, OSError, TypeError) as exc:
        raise HFCheckpointError(f"{what}: no tokenizer can be loaded from {folder} ({exc})"
                                ) from exc


class TextTokenizer:
    """The checkpoint's tokenizer behind the small interface wikisum's sentencepiece model
    offers decoding and export: ``encode(text)``, ``decode(ids)`` (special tokens dropped),
    ``get_piece_size()``. ``hf`` is the tokenizer itself (``save_pretrained``)."""

    def __init__(self, tokenizer):
        self.hf = tokenizer

    def encode(self, text: str | list[str]):
        """The ids of ``text`` (a list of ids per text for a list), no special tokens added."""
        return self.hf(text, add_special_tokens=False)["input_ids"]

    def decode(self, ids) -> str:
        return self.hf.decode([int(i) for i in ids], skip_special_tokens=True).strip()

    def get_piece_size(self) -> int:
        return len(self.hf)


class HFSummarizer(nn.Module):
    """A transformers seq2seq or causal LM behind the interface of
    :mod:`wikisum.models.base`: ``forward(Batch) -> ModelOutput`` for training and scoring;
    decoding goes through :meth:`generate_ids` (``generate``)."""

    def __init__(self, config: HFConfig, model: nn.Module | None = None, tokenizer=None,
                 tokenizer_dir: str | None = None):
        super().__init__()
        self.config = config
        self.model = model  # None only for the config probe (no checkpoint given)
        self._tokenizer = tokenizer
        self._tokenizer_dir = tokenizer_dir or config.init

    # -- the tokenizer ---------------------------------------------------------------------

    @property
    def tokenizer(self):
        """The checkpoint's tokenizer (the run's copy once :meth:`attach_run` found one)."""
        if self._tokenizer is None:
            self._tokenizer = load_tokenizer(self._tokenizer_dir, f"the tokenizer of "
                                             f"{self._tokenizer_dir}")
            check_tokenizer(self._tokenizer, self._tokenizer_dir)
        return self._tokenizer

    @property
    def text_tokenizer(self) -> TextTokenizer:
        return TextTokenizer(self.tokenizer)

    def attach_run(self, run: str | Path) -> None:
        """Read the tokenizer from RUN/hf-tokenizer (what the run saved), where it exists."""
        folder = Path(run) / TOKENIZER_DIR
        if folder.is_dir():
            self._tokenizer_dir, self._tokenizer = str(folder), None

    def save_run_files(self, run: str | Path) -> None:
        """RUN/hf-tokenizer: the tokenizer, so that the run decodes without the --init folder."""
        self.tokenizer.save_pretrained(str(Path(run) / TOKENIZER_DIR))

    @property
    def eos_id(self) -> int:
        return int(self.tokenizer.eos_token_id)

    @property
    def sep_id(self) -> int:
        tok = self.tokenizer
        return int(tok.sep_token_id if tok.sep_token_id is not None else tok.eos_token_id)

    @property
    def pad_id(self) -> int:
        tok = self.tokenizer
        return int(tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id)

    # -- inputs ----------------------------------------------------------------------------

    def check_lengths(self, max_input_tokens: int) -> None:
        """Refuse an input length L the checkpoint cannot embed (a causal model also needs
        the separator and at least one target token after it)."""
        window = self.config.context_window
        need = max_input_tokens + (2 if self.config.kind == "causal" else 0)
        if window is not None and window < need:
            raise HFCheckpointError(
                f"--init {self.config.init}: its context window is {window} positions, "
                f"shorter than the input: max_input_tokens (L) = {max_input_tokens}"
                + (" + the separator and a target token" if need > max_input_tokens else "")
                + f"; train with --max-input-tokens {window - (need - max_input_tokens)} or "
                "less")

    def encode_example(self, example, max_input_tokens: int | None):
        """A :class:`wikisum.core.loader.TextExample` as an
        :class:`wikisum.core.loader.Example` of this tokenizer's ids: the source (title,
        separator, ranked paragraphs; cut to L) and the target's ids (without eos)."""
        from wikisum.core.loader import Example

        tok = self.tokenizer
        limit = max_input_tokens or (1 << 30)
        ids: list[int] = []
        if example.titled:
            ids = tok(example.title, add_special_tokens=False)["input_ids"] + [self.sep_id]
        paragraphs = list(example.paragraphs)
        at = 0
        while len(ids) < limit and at < len(paragraphs):
            # a few paragraphs at a time: rarely more than the first few are read
            chunk = paragraphs[at:at + 8]
            at += len(chunk)
            for piece in tok(chunk, add_special_tokens=False)["input_ids"]:
                if len(ids) >= limit:
                    break
                ids.extend(piece)
        target = tok(example.target, add_special_tokens=False)["input_ids"] \
            if example.target else []
        return Example(example.id, example.title, ids[:limit], list(target))

    # -- training --------------------------------------------------------------------------

    def _source(self, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
        """(input ids with this tokenizer's pad, attention mask), (B, S) each."""
        s = batch.sources.shape[1]
        mask = torch.arange(s, device=batch.sources.device)[None, :] < \
            batch.source_lengths[:, None]
        return batch.sources.masked_fill(~mask, self.pad_id), mask.long()

    def _labels(self, batch: Batch) -> torch.Tensor:
        t = batch.targets.shape[1]
        mask = torch.arange(t, device=batch.targets.device)[None, :] < \
            batch.target_lengths[:, None]
        return batch.targets.masked_fill(~mask, IGNORE)

    def _causal(self, batch: Batch, with_targets: bool = True
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(ids, attention mask, labels) of ``source + sep (+ target)`` per row, right-padded,
        cut to the context window (the target's end goes first)."""
        rows, labels = [], []
        window = self.config.context_window
        for i in range(batch.size):
            src = batch.sources[i, :int(batch.source_lengths[i])]
            sep = src.new_full((1,), self.sep_id)
            parts = [src, sep]
            if with_targets:
                parts.append(batch.targets[i, :int(batch.target_lengths[i])])
            seq = torch.cat(parts)
            if window is not None:
                seq = seq[:window]
            label = seq.clone()
            label[:len(src) + 1] = IGNORE
            rows.append(seq)
            labels.append(label)
        longest = max(len(r) for r in rows)
        ids = batch.sources.new_full((len(rows), longest), self.pad_id)
        lab = batch.sources.new_full((len(rows), longest), IGNORE)
        mask = batch.sources.new_zeros((len(rows), longest))
        for i, (r, la) in enumerate(zip(rows, labels, strict=True)):
            ids[i, :len(r)], lab[i, :len(la)], mask[i, :len(r)] = r, la, 1
        return ids, mask, lab

    def forward(self, batch: Batch) -> ModelOutput:
        if self.config.kind == "seq2seq":
            ids, mask = self._source(batch)
            labels = self._labels(batch)
            out = self.model(input_ids=ids, attention_mask=mask, labels=labels)
            tokens = (labels != IGNORE).sum()
        else:
            ids, mask, labels = self._causal(batch)
            out = self.model(input_ids=ids, attention_mask=mask, labels=labels)
            tokens = (labels[:, 1:] != IGNORE).sum()  # the first position predicts nothing
        loss = out.loss
        return ModelOutput(loss=loss, target_nll=loss.detach() * tokens, target_tokens=tokens)

    # -- decoding --------------------------------------------------------------------------

    def start(self, batch: Batch):
        raise NotImplementedError("an hf model decodes through generate_ids")

    step = reorder = start

    @torch.no_grad()
    def generate_ids(self, batch: Batch, settings: dict, seeds: list[int] | None = None
                     ) -> list[tuple[list[int], bool]]:
        """(generated ids without eos, whether eos ended them) of every batch row, by
        ``generate(**settings)`` (:func:`wikisum.generation.decoding.generate_settings` makes
        them). With ``seeds`` (sampling) each row is drawn alone under its own seed, so a
        row's sample does not depend on the rows beside it."""
        if seeds is None:
            return self._generate(batch, settings)
        out: list[tuple[list[int], bool]] = []
        devices = [batch.sources.device] if batch.sources.is_cuda else []
        for i, seed in enumerate(seeds):
            with torch.random.fork_rng(devices=devices):
                torch.manual_seed(seed)
                out.extend(self._generate(_rows(batch, i), settings))
        return out

    def _generate(self, batch: Batch, settings: dict) -> list[tuple[list[int], bool]]:
        settings = {**settings, "eos_token_id": self.eos_id, "pad_token_id": self.pad_id}
        if self.config.kind == "seq2seq":
            ids, mask = self._source(batch)
            sequences = self.model.generate(input_ids=ids, attention_mask=mask, **settings)
            sequences = sequences[:, 1:]  # after the decoder's start token
        else:
            ids, mask, _ = self._causal(batch, with_targets=False)
            # left-padded, so that every row's generation starts right after its prompt
            width = ids.shape[1]
            left = torch.full_like(ids, self.pad_id)
            left_mask = torch.zeros_like(mask)
            for i, n in enumerate(mask.sum(1).tolist()):
                left[i, width - n:] = ids[i, :n]
                left_mask[i, width - n:] = 1
            sequences = self.model.generate(input_ids=left, attention_mask=left_mask,
                                            **settings)[:, width:]
        out = []
        for row in sequences.tolist():
            finished = self.eos_id in row
            out.append((row[:row.index(self.eos_id)] if finished else row, finished))
        return out


def _rows(batch: Batch, i: int) -> Batch:
    return Batch(batch.sources[i:i + 1, :int(batch.source_lengths[i])],
                 batch.source_lengths[i:i + 1], batch.targets[i:i + 1],
                 batch.target_lengths[i:i + 1], ids=batch.ids[i:i + 1])


def check_tokenizer(tokenizer, folder: str) -> None:
    """Refuse a tokenizer without an eos token: it ends targets, separates a causal model's
    source from its target (without a sep token), and pads (without a pad token)."""
    if tokenizer.eos_token_id is None:
        have = ", ".join(f"{k}={v!r}" for k, v in (
            ("pad", tokenizer.pad_token), ("sep", tokenizer.sep_token),
            ("bos", tokenizer.bos_token)) if v is not None) or "none"
        raise HFCheckpointError(
            f"the tokenizer of {folder} has no eos token, which ends every target and "
            f"separates the input from the target (special tokens it has: {have}); set "
            "eos_token in its tokenizer_config.json")


def check_weight_shapes(folder: str, hf_config, kind: str) -> None:
    """Refuse a folder whose safetensors files hold a tensor of another shape than the model
    its config.json describes (another width, vocabulary size, ...), before the model is
    built: the shapes are read from the files' headers and from a model built on the meta
    device, so a config claiming a huge size takes no memory."""
    from safetensors import SafetensorError, safe_open

    with torch.device("meta"):
        expected = {name: tuple(t.shape) for name, t in
                    _auto_class(kind).from_config(hf_config).state_dict().items()}
    for path in sorted(Path(folder).glob("*.safetensors")):
        try:
            with safe_open(str(path), framework="pt") as weights:
                for name in weights.keys():  # noqa: SIM118 - safe_open has no __iter__
                    shape = tuple(weights.get_slice(name).get_shape())
                    if name in expected and shape != expected[name]:
                        raise HFCheckpointError(
                            f"{path}: tensor {name} has shape {list(shape)} where "
                            f"{Path(folder) / 'config.json'} makes it {list(expected[name])}: "
                            "the config and the weights are of different models")
        except SafetensorError as exc:
            raise HFCheckpointError(f"{path} is not a readable safetensors file ({exc}): "
                                    "copy it again") from None


def check_loading(folder: str, info: dict) -> None:
    """Refuse what ``from_pretrained`` reports of loading ``folder``: weights the model has
    and the files lack (transformers would start them at random), weights the files have and
    the model lacks, weights of another shape. Each names a few of the tensors."""
    problems = []
    for key, what in (("missing_keys", "lacking from the weights (config.json describes a "
                                       "bigger model)"),
                      ("unexpected_keys", "in the weights but not in the model config.json "
                                          "describes"),
                      ("mismatched_keys", "of another shape than config.json makes them")):
        found = sorted(str(item[0] if isinstance(item, tuple) else item)
                       for item in info.get(key) or ())
        if found:
            shown = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3
                                            else "")
            problems.append(f"{len(found)} tensor(s) {what}: {shown}")
    if problems:
        raise HFCheckpointError(f"{folder}: the weights do not fit its config.json: "
                                f"{'; '.join(problems)}")


def check_finite(model: nn.Module, folder: str) -> None:
    """Refuse a model any of whose weights is NaN or infinite (a damaged or tampered file:
    it would decode garbage), naming the first such tensor and how many values are bad."""
    for name, weight in model.named_parameters():
        if weight.is_floating_point() and weight.device.type != "meta":
            bad = int((~torch.isfinite(weight.detach())).sum())
            if bad:
                raise HFCheckpointError(
                    f"{folder}: weight {name} holds {bad:,} NaN or infinite value(s) of "
                    f"{weight.numel():,}: the weights are damaged; refused (they would give "
                    "garbage summaries)")


def needs_exemplars(name: str) -> bool:
    return False


def build(name: str, preset: str = "base", **overrides) -> HFSummarizer:
    """The checkpoint ``init`` (a folder) as a model to fine-tune; ``preset`` and
    ``vocab_size`` are the checkpoint's own and are ignored. Without ``init``, the config
    alone (what the training settings are checked against).

    Its weights are the model its config.json describes, every one of them finite: a folder
    whose weights and config disagree, or whose weights hold NaN or inf, is refused
    (:func:`check_weight_shapes`, :func:`check_loading`, :func:`check_finite`).

    Raises:
        HFCheckpointError: the folder is not a checkpoint, its tokenizer lacks eos, or its
            weights are not the finite weights of the model its config describes.
    """
    overrides.pop("vocab_size", None)
    config = HFConfig(**overrides)
    if not config.init:
        return HFSummarizer(config)
    hf_config, kind = read_checkpoint_config(config.init)
    tokenizer = load_tokenizer(config.init, f"--init {config.init}")
    check_tokenizer(tokenizer, config.init)
    check_weight_shapes(config.init, hf_config, kind)
    model, info = _auto_class(kind).from_pretrained(
        config.init, local_files_only=True, output_loading_info=True,
        ignore_mismatched_sizes=True)  # a mismatch is named below, not half-reported
    check_loading(config.init, info)
    check_finite(model, config.init)
    model.float()
    config.kind, config.architecture = kind, type(model).__name__
    config.hf_config = json.loads(model.config.to_json_string(use_diff=False))
    return HFSummarizer(config, model, tokenizer)


def from_config(name: str, config: dict) -> HFSummarizer:
    """The model of a saved :class:`HFConfig` (weights random: a checkpoint's state_dict
    follows); the tokenizer is read on first use, from the run's copy once ``attach_run``
    is called, else from ``init``."""
    t = _transformers()
    cfg = HFConfig(**config)
    values = dict(cfg.hf_config)
    model_type = values.pop("model_type")
    hf_config = t.AutoConfig.for_model(model_type, **values)
    model = _auto_class(cfg.kind).from_config(hf_config)
    return HFSummarizer(cfg, model)


def save_pretrained(model: HFSummarizer, out: str | Path) -> None:
    """The fine-tuned model as a Hugging Face folder: ``save_pretrained`` of the model and
    of its tokenizer (loadable by ``AutoModelFor...from_pretrained(out)``)."""
    model.model.save_pretrained(str(out))
    model.tokenizer.save_pretrained(str(out))
