"""Tiny Hugging Face checkpoints made offline: a WordPiece tokenizer trained on a few texts, and
randomly initialised BART- and GPT-2-style models of a few thousand parameters saved beside
it with ``save_pretrained`` (what ``wikisum train --model hf --init`` reads). Used by
test_hf_finetune.py and bench/hf_finetune.py."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path


def train_tokenizer(texts: Iterable[str], *, eos: bool = True, pad: bool = True,
                    bos: bool = True, vocab_size: int = 600):
    """A ``PreTrainedTokenizerFast`` over a WordPiece model trained on ``texts``; its special
    tokens are the ones asked for (``eos`` False: a tokenizer that lacks one)."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = {"unk_token": "[UNK]"}
    if pad:
        specials["pad_token"] = "<pad>"
    if bos:
        specials["bos_token"] = "<s>"
    if eos:
        specials["eos_token"] = "</s>"
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size,
                                        special_tokens=list(specials.values()))
    tok.train_from_iterator(list(texts), trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, **specials)


def _quiet() -> None:
    import transformers

    transformers.logging.disable_progress_bar()


def _ids(tokenizer) -> dict:
    return {"pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id,
            "eos_token_id": tokenizer.eos_token_id}


def save_bart(folder: Path, tokenizer, *, positions: int = 512, seed: int = 0) -> Path:
    """A 1+1-layer BART of width 32 with ``positions`` positions, saved with ``tokenizer``."""
    import torch
    from transformers import BartConfig, BartForConditionalGeneration

    _quiet()
    torch.manual_seed(seed)
    ids = _ids(tokenizer)
    config = BartConfig(vocab_size=len(tokenizer), d_model=32, encoder_layers=1,
                        decoder_layers=1, encoder_attention_heads=2,
                        decoder_attention_heads=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                        max_position_embeddings=positions,
                        decoder_start_token_id=ids["eos_token_id"], forced_eos_token_id=None,
                        **ids)
    BartForConditionalGeneration(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def save_gpt2(folder: Path, tokenizer, *, positions: int = 512, seed: int = 0) -> Path:
    """A 2-layer GPT-2 of width 32 with ``positions`` positions, saved with ``tokenizer``."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    _quiet()
    torch.manual_seed(seed)
    config = GPT2Config(vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2,
                        n_positions=positions, **_ids(tokenizer))
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def sample_texts(data: Path, limit: int = 200) -> list[str]:
    """Titles, leads and paragraphs of the first ``limit`` train examples of a dataset."""
    from wikisum.core.loader import Dataset

    dataset = Dataset(str(data))
    texts: list[str] = []
    for i, ex in enumerate(dataset.text_examples("train", "tfidf", "combined")):
        if i >= limit:
            break
        texts.extend([ex.title, ex.target, *ex.paragraphs[:10]])
    return texts
