"""The Python files of a ``wikisum export --format hf`` folder that wikisum writes itself: the
transformers config, model and tokenizer classes (:mod:`wikisum.generation.hfexport` copies the
model modules beside them). They are kept here as text, not as modules of the package, because
they import ``transformers`` and the model modules relatively (``from .transformer import``), as
transformers' remote-code loader wants, and only make sense inside an exported folder.

Each class follows transformers' custom-model conventions: a ``PretrainedConfig`` subclass with
its own ``model_type``, a ``PreTrainedModel`` + ``GenerationMixin`` subclass, a
``PreTrainedTokenizer`` subclass over sentencepiece; ``auto_map`` in ``config.json`` and
``tokenizer_config.json`` names them.
"""

from __future__ import annotations

CONFIG_CLASS = "WikisumConfig"
MODEL_CLASS = "WikisumForCausalLM"
TOKENIZER_CLASS = "WikisumTokenizer"
MODEL_TYPE = "wikisum"

CONFIGURATION = '''\
"""The transformers config of a wikisum T-D / T-DMCA model: the wikisum model name, its
TransformerConfig fields (``transformer``) and what wikisum knows about its inputs (``wikisum``:
extractor, corpus, L, special ids, default decoding)."""

from transformers import PretrainedConfig


class WikisumConfig(PretrainedConfig):
    model_type = "wikisum"

    def __init__(self, wikisum_model="t-d", transformer=None, wikisum=None, vocab_size=32000,
                 pad_token_id=0, bos_token_id=2, eos_token_id=3, sep_token_id=5, **kwargs):
        kwargs.setdefault("tie_word_embeddings", False)  # the model shares the matrix itself
        super().__init__(pad_token_id=pad_token_id, bos_token_id=bos_token_id,
                         eos_token_id=eos_token_id, **kwargs)
        self.wikisum_model = wikisum_model
        self.transformer = dict(transformer or {})
        self.wikisum = dict(wikisum or {})
        self.vocab_size = vocab_size
        self.pad_token_id, self.bos_token_id = pad_token_id, bos_token_id
        self.eos_token_id, self.sep_token_id = eos_token_id, sep_token_id
        self.hidden_size = self.transformer.get("d_model")
        self.num_hidden_layers = self.transformer.get("n_layers")
        self.num_attention_heads = self.transformer.get("n_heads")
'''

MODELING = '''\
"""A wikisum T-D / T-DMCA model (Liu et al. 2018, "Generating Wikipedia by Summarizing Long
Sequences") for ``AutoModelForCausalLM``: wikisum's own ``DecoderOnlyTransformer`` (the modules
beside this file, copied from ``wikisum.models``), so logits equal wikisum's.

The model reads ``title <t> ranked paragraphs`` cut to L, then ``<sep>``, and writes the summary
after it (``WikisumTokenizer.prompt`` builds that input). ``generate`` runs the whole sequence
again at every step (no key/value cache): exact, and about L times the work of a cached step.
Rows of a batch must not be left-padded: local attention counts its blocks from position 0.
"""

import torch
import torch.nn.functional as F
from transformers import GenerationMixin, PreTrainedModel
from transformers.modeling_outputs import CausalLMOutputWithPast

from .configuration_wikisum import WikisumConfig
from .transformer import DecoderOnlyTransformer, config_from_dict


def check_padding(attention_mask):
    """Raise unless every row of ``attention_mask`` (B, T) is ones then zeros."""
    if attention_mask is None:
        return
    mask = attention_mask.bool()
    if (mask[:, 1:] & ~mask[:, :-1]).any():
        raise ValueError("a row of attention_mask has a 0 before a 1 (left padding, or a "
                         "right-padded prompt given to generate): wikisum models count "
                         "positions from the first token, so pass rows of one length, or "
                         "right-padded rows to forward")


class WikisumForCausalLM(PreTrainedModel, GenerationMixin):
    config_class = WikisumConfig
    base_model_prefix = "model"
    main_input_name = "input_ids"
    _supports_cache_class = False

    def __init__(self, config):
        super().__init__(config)
        self.model = DecoderOnlyTransformer(config_from_dict(dict(config.transformer)),
                                            config.wikisum_model)
        self.post_init()

    def _init_weights(self, module):
        """Nothing: the weights come from model.safetensors (wikisum initialised them)."""

    def get_input_embeddings(self):
        return self.model.embed

    def set_input_embeddings(self, value):
        self.model.embed = value

    def get_output_embeddings(self):
        return None  # the output projection is the embedding matrix, not a module

    def forward(self, input_ids=None, attention_mask=None, labels=None, return_dict=None,
                **kwargs):
        """input_ids (B, T) -> next-token logits (B, T, V); with labels (B, T), the mean
        cross-entropy of position t predicting labels[t + 1] (-100 ignored)."""
        check_padding(attention_mask)
        logits = self.model.logits(input_ids)  # (B, T, V)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]).float(),
                                   labels[:, 1:].reshape(-1).to(logits.device),
                                   ignore_index=-100)
        return CausalLMOutputWithPast(loss=loss, logits=logits)

    def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **kwargs):
        """The whole sequence at every step: the model keeps no cache."""
        return {"input_ids": input_ids, "attention_mask": attention_mask}

    def _reorder_cache(self, past_key_values, beam_idx):
        return past_key_values

    @torch.no_grad()
    def summary_ids(self, prompt_ids, **generate_kwargs):
        """The summary's ids for one prompt (a list of ids ending with <sep>), greedy unless
        told otherwise, without the prompt and without </s>."""
        inputs = torch.tensor([list(prompt_ids)], device=self.device)
        out = self.generate(inputs, attention_mask=torch.ones_like(inputs), **generate_kwargs)
        ids = out[0, inputs.shape[1]:].tolist()
        eos = self.config.eos_token_id
        return ids[:ids.index(eos)] if eos in ids else ids
'''

TOKENIZATION = '''\
"""The sentencepiece tokenizer of a wikisum model: text to ids exactly as wikisum's
``SentencePieceProcessor.encode`` (the model's own normalisation, no added <s> or </s>), and
``prompt`` to build the model input the way wikisum does."""

import os
import shutil

import sentencepiece as spm
from transformers import PreTrainedTokenizer


class WikisumTokenizer(PreTrainedTokenizer):
    vocab_files_names = {"vocab_file": "tokenizer.model"}
    model_input_names = ["input_ids", "attention_mask"]

    def __init__(self, vocab_file, title_sep_token="<t>", max_input_tokens=None, **kwargs):
        self.vocab_file = vocab_file
        self.sp = spm.SentencePieceProcessor(model_file=vocab_file)
        self.title_sep_token = title_sep_token
        self.max_input_tokens = max_input_tokens
        for name, index in (("pad_token", self.sp.pad_id()), ("unk_token", self.sp.unk_id()),
                            ("bos_token", self.sp.bos_id()), ("eos_token", self.sp.eos_id())):
            if index >= 0:
                kwargs.setdefault(name, self.sp.id_to_piece(index))
        kwargs.setdefault("sep_token", "<sep>")
        kwargs.setdefault("clean_up_tokenization_spaces", False)
        super().__init__(**kwargs)

    @property
    def vocab_size(self):
        return self.sp.get_piece_size()

    def get_vocab(self):
        return {self.sp.id_to_piece(i): i for i in range(self.vocab_size)}

    def tokenize(self, text, **kwargs):
        """The pieces sentencepiece makes of ``text``, as wikisum encodes it."""
        return self.sp.encode(text, out_type=str)

    def _tokenize(self, text, **kwargs):
        return self.sp.encode(text, out_type=str)

    def _convert_token_to_id(self, token):
        return self.sp.piece_to_id(token)

    def _convert_id_to_token(self, index):
        return self.sp.id_to_piece(int(index))

    def convert_tokens_to_string(self, tokens):
        return self.sp.decode_pieces(list(tokens))

    def _decode(self, token_ids, skip_special_tokens=False, **kwargs):
        """The text of ``token_ids`` as wikisum writes it (``sp.decode``): <pad>, <s> and </s>
        (control pieces) written as nothing, skip_special_tokens or not; <t> and <sep> as
        themselves, as in wikisum's predictions."""
        ids = [int(token_ids)] if isinstance(token_ids, int) else [int(i) for i in token_ids]
        return self.sp.decode(ids)

    def build_inputs_with_special_tokens(self, token_ids_0, token_ids_1=None):
        return list(token_ids_0) + list(token_ids_1 or [])

    def get_special_tokens_mask(self, token_ids_0, token_ids_1=None,
                                already_has_special_tokens=False):
        return [0] * (len(token_ids_0) + len(token_ids_1 or []))

    def num_special_tokens_to_add(self, pair=False):
        return 0

    def prompt(self, title, paragraphs=()):
        """The ids the model reads before it writes: the title's, <t>, then the paragraphs'
        (already in the extractor's order) until L = ``max_input_tokens``, cut to L, then
        <sep>. A headline-pairs model reads ``encode(text)[:L] + [sep_token_id]`` instead."""
        ids = self.sp.encode(title) + [self.sp.piece_to_id(self.title_sep_token)]
        limit = self.max_input_tokens
        for paragraph in paragraphs:
            if limit is not None and len(ids) >= limit:
                break
            ids.extend(self.sp.encode(paragraph))
        return (ids if limit is None else ids[:limit]) + [self.sep_token_id]

    def save_vocabulary(self, save_directory, filename_prefix=None):
        name = (filename_prefix + "-" if filename_prefix else "") + "tokenizer.model"
        out = os.path.join(save_directory, name)
        if os.path.abspath(self.vocab_file) != os.path.abspath(out):
            shutil.copyfile(self.vocab_file, out)
        return (out,)
'''

FILES = {"configuration_wikisum.py": CONFIGURATION, "modeling_wikisum.py": MODELING,
         "tokenization_wikisum.py": TOKENIZATION}
