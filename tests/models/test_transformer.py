"""T-ED, T-D and T-DMCA on tiny shapes: causality at awkward lengths, cached decoding equal to a
full pass (ragged prefixes, reorder), losses as specified, overfitting, configs and errors."""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest
import torch

from wikisum import models
from wikisum.models import transformer, wfe
from wikisum.models.base import make_batch
from wikisum.models.transformer import TransformerConfig, concat_source_target

V, SEP, BOS, EOS = 40, 5, 2, 3
LENGTHS = [1, 2, 3, 7, 255, 256, 257, 769]
BLOCK = 256
NARROW = dict(d_model=16, n_heads=2, d_ff=32, vocab_size=V, dropout=0.0)


def build(name: str, **overrides):
    torch.manual_seed(0)
    return models.build(name, "tiny", **{**NARROW, **overrides})


def cut_points(length: int) -> list[int]:
    points = {0, length // 2, BLOCK - 1, BLOCK, length - 2}
    return sorted(t for t in points if 0 <= t < length - 1)


# (name, overrides): every attention kind in a decoder-only model and in T-ED's decoder.
CAUSAL_MODELS = [
    ("t-d", dict(layer_kinds=["full", "full"])),
    ("t-d", dict(layer_kinds=["local", "local"])),
    ("t-d", dict(layer_kinds=["local", "local"], previous_block=False)),
    ("t-d", dict(layer_kinds=["compressed", "compressed"])),
    ("t-dmca", dict(moe_layers=[1])),
    ("t-ed", dict(layer_kinds=["full", "full"])),
    ("t-ed", dict(layer_kinds=["local", "local"])),
    ("t-ed", dict(layer_kinds=["compressed", "compressed"])),
]


def model_id(case):
    name, overrides = case
    return f"{name}-{'-'.join(overrides.get('layer_kinds', ['dmca']))}" + (
        "-independent" if overrides.get("previous_block") is False else "")


def teacher_forced_logits(model, name: str, tokens: torch.Tensor) -> torch.Tensor:
    """tokens (B, T) -> logits (B, T, V): the decoder-only model itself, or T-ED's decoder over
    a fixed source."""
    if name != "t-ed":
        return model(tokens)
    sources = torch.tensor([[7, 8, 9, 10, 11, 12]] * tokens.shape[0])
    return model.logits(sources, torch.tensor([6] * tokens.shape[0]), tokens)


@pytest.mark.parametrize("length", LENGTHS)
@pytest.mark.parametrize("case", CAUSAL_MODELS, ids=model_id)
def test_no_later_token_changes_an_earlier_output(case, length):
    name, overrides = case
    model = build(name, block_size=BLOCK, **overrides).eval()
    gen = torch.Generator().manual_seed(length)
    tokens = torch.randint(6, V, (1, length), generator=gen)
    with torch.no_grad():
        logits = teacher_forced_logits(model, name, tokens)
        assert logits.shape == (1, length, V) and torch.isfinite(logits).all()
        for t in cut_points(length):
            changed = tokens.clone()
            changed[:, t + 1:] = torch.randint(6, V, (1, length - t - 1), generator=gen)
            got = teacher_forced_logits(model, name, changed)
            torch.testing.assert_close(got[:, :t + 1], logits[:, :t + 1], rtol=0, atol=1e-5,
                                       msg=f"{model_id(case)}: position <= {t} saw a later one")


def test_training_mode_with_experts_and_dropout_is_causal_too():
    """Train mode: dropout and gate noise (drawn alike from the same seed), capacity drops
    shared by the batch: still no later token reaches an earlier output."""
    model = build("t-dmca", block_size=4, moe_layers=[0, 1], capacity_factor=0.5,
                  dropout=0.3).train()
    assert model.config.dropout == 0.3
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(6, V, (2, 40), generator=gen)
    torch.manual_seed(1)
    logits = model(tokens)
    torch.manual_seed(2)
    assert not torch.allclose(model(tokens), logits)  # dropout and noise are really on
    for t in (3, 17, 30):
        changed = tokens.clone()
        changed[:, t + 1:] = torch.randint(6, V, (2, 39 - t), generator=gen)
        torch.manual_seed(1)
        torch.testing.assert_close(model(changed)[:, :t + 1], logits[:, :t + 1], rtol=0,
                                   atol=1e-5)


# ---------------------------------------------------------------------------------------------
# Cached decoding

SOURCES = [[7, 8, 9, 10, 11, 12, 13, 14, 15], [16, 17, 18, 19], [20]]
TARGETS = [[21, 22, 23, 24, 25, 26, 27, 28, EOS], [29, 30, 31, 32, 33, 34, 35, 36, EOS],
           [37, 38, 39, 6, 7, 8, 9, 10, 11, EOS]]
DECODE_MODELS = [
    ("t-d", dict(layer_kinds=["full", "full"])),
    ("t-d", dict(layer_kinds=["local", "local"])),
    ("t-d", dict(layer_kinds=["local", "local"], previous_block=False)),
    ("t-d", dict(layer_kinds=["compressed", "compressed"])),
    ("t-dmca", dict(moe_layers=[1], wfe=True)),
    ("t-ed", dict(layer_kinds=["full", "full"], wfe=True)),
    ("t-ed", dict(layer_kinds=["local", "local"])),
    ("t-ed", dict(layer_kinds=["compressed", "compressed"], moe_layers=[0])),
]


def reference_logprobs(model, name: str, source: list[int], target: list[int]) -> torch.Tensor:
    """(len(target), V): log p(target[s] | source, target[:s]) from one full pass over this row
    alone (no padding)."""
    if name == "t-ed":
        inputs = torch.tensor([[BOS] + target[:-1]])
        logits = model.logits(torch.tensor([source]), torch.tensor([len(source)]), inputs)[0]
    else:
        logits = model(torch.tensor([source + [SEP] + target]))[0][len(source):]
    return torch.log_softmax(logits, dim=-1)[:len(target)]


@pytest.mark.parametrize("case", DECODE_MODELS, ids=model_id)
def test_cached_decoding_equals_a_full_pass(case):
    """Rows with 9, 4 and 1 source tokens (right-padded), blocks of 4 so that local blocks and
    compressed windows complete during prefill and during steps, and a reorder that drops,
    repeats and permutes rows halfway."""
    name, overrides = case
    model = build(name, block_size=4, **overrides).eval()
    batch = make_batch(SOURCES, TARGETS)
    with torch.no_grad():
        refs = [reference_logprobs(model, name, s, t)
                for s, t in zip(SOURCES, TARGETS, strict=True)]
        state = model.start(batch)
        for r in range(3):
            torch.testing.assert_close(state.first_logprobs[r], refs[r][0], rtol=1e-4,
                                       atol=1e-4)
        rows = [0, 1, 2]
        for s in range(8):
            if s == 3:
                index = [2, 0, 0, 1]
                state = model.reorder(state, torch.tensor(index))
                rows = [rows[i] for i in index]
            tokens = torch.tensor([TARGETS[r][s] for r in rows])
            logprobs, state = model.step(state, tokens)
            for n, r in enumerate(rows):
                torch.testing.assert_close(logprobs[n], refs[r][s + 1], rtol=1e-4, atol=1e-4,
                                           msg=f"{model_id(case)}: step {s}, row {r}")


# Long decoding: ~40 output positions with blocks of 4, so that every step past the first few
# reads a local window that the ring has overwritten several times (a ring of 2 blocks = 8
# positions) and a compressed layer whose raw-input ring (3 positions) has turned over a dozen
# times, while its slots keep growing.
LONG_BLOCK = 4
LONG_SOURCES = [[7, 8, 9], list(range(10, 23))]  # prefixes of 4 and 14 positions
LONG_STEPS = 40
LONG_MODELS = [
    ("t-dmca", dict()),  # local, compressed, local
    ("t-d", dict(layer_kinds=["local", "local"])),
    ("t-d", dict(layer_kinds=["local", "compressed"], compress_kernel=3, compress_stride=2)),
]


def region(position: int) -> str:
    """Where an input position lies against the local layer's blocks and ring."""
    if position >= 2 * LONG_BLOCK:
        return f"position {position}, beyond the local ring of {2 * LONG_BLOCK}"
    if position >= LONG_BLOCK:
        return f"position {position}, beyond one local block of {LONG_BLOCK}"
    return f"position {position}, in the first block"


@pytest.mark.parametrize("case", LONG_MODELS, ids=model_id)
def test_long_cached_decoding_equals_a_full_pass_beyond_the_block_and_the_ring(case):
    """Beam-style decoding of 40 tokens: two rows (prefixes shorter and longer than the
    ring) expanded to three hypotheses each by the first reorder, each hypothesis fed its own
    tokens, and a reorder halfway that drops, repeats and swaps hypotheses across rows. Every
    step's log-probabilities of every final hypothesis equal one full pass over its own
    ``source <sep> tokens``; the prefill leaves only the rings that a step reads."""
    name, overrides = case
    model = build(name, block_size=LONG_BLOCK, **overrides).eval()
    gen = torch.Generator().manual_seed(31)
    with torch.no_grad():
        state = model.start(make_batch(LONG_SOURCES, [[EOS]] * 2))
        first = state.first_logprobs
        for block, cache in zip(model.blocks, state.caches, strict=True):
            raw = cache.attn.k.shape  # local (N, H, W, D), compressed (N, kernel, d)
            ring = {"local": (2, 2, 2 * LONG_BLOCK, 8), "compressed": (2, 3, 16)}
            assert raw == ring[block.attn.kind], (block.attn.kind, raw)
        # Per hypothesis: its source row, its tokens so far, and the log-probabilities the
        # cached steps gave after each of them.
        hyps = [(r, [], [first[r]]) for r in (0, 0, 0, 1, 1, 1)]
        state = model.reorder(state, torch.tensor([0, 0, 0, 1, 1, 1]))
        for s in range(LONG_STEPS):
            if s == LONG_STEPS // 2:
                index = [4, 0, 0, 5, 2, 4]
                state = model.reorder(state, torch.tensor(index))
                hyps = [(hyps[i][0], list(hyps[i][1]), list(hyps[i][2])) for i in index]
            tokens = torch.randint(6, V, (len(hyps),), generator=gen)
            logprobs, state = model.step(state, tokens)
            for n, (_, seen, outs) in enumerate(hyps):
                seen.append(int(tokens[n]))
                outs.append(logprobs[n])
        checked = set()
        for n, (r, seen, outs) in enumerate(hyps):
            source = LONG_SOURCES[r]
            full = model(torch.tensor([source + [SEP] + seen]))[0, len(source):]  # <sep> on
            reference = torch.log_softmax(full, dim=-1)  # (1 + LONG_STEPS, V)
            for s, got in enumerate(outs):
                position = len(source) + s  # the input position whose output this is
                torch.testing.assert_close(got, reference[s], rtol=1e-4, atol=1e-4,
                                           msg=f"{model_id(case)}: hypothesis {n}, "
                                               f"{region(position)}")
                checked.add(position)
    # The steps reached well past one block, past the ring, and past the halfway reorder.
    assert {3, LONG_BLOCK + 1, 2 * LONG_BLOCK + 1, 30, 45} <= checked
    assert max(checked) == len(LONG_SOURCES[1]) + LONG_STEPS == 53


@pytest.mark.parametrize("name", ["t-dmca", "t-ed"])
def test_wfe_estimate_of_a_padded_row_is_that_of_the_row_alone(name):
    model = build(name, block_size=4, wfe=True).eval()
    batch = make_batch(SOURCES, TARGETS)
    with torch.no_grad():
        state = model.start(batch)
        assert isinstance(state.wfe, wfe.Estimate) and state.wfe.r.shape == (3, V)
        for r in range(3):
            alone = model.start(make_batch([SOURCES[r]], [TARGETS[r]])).wfe
            torch.testing.assert_close(state.wfe.r[r], alone.r[0], rtol=1e-4, atol=1e-4)
            torch.testing.assert_close(state.wfe.g[r], alone.g[0], rtol=1e-4, atol=1e-4)
        # Training sees the same estimate: aux["wfe"] is Eq. 7 of it against the target counts.
        out = model(batch)
        counts = wfe.target_counts(batch.targets, V, ignore=(0,))
        expected = wfe.wfe_loss(state.wfe.a_hat, counts)
        torch.testing.assert_close(out.aux["wfe"], expected, rtol=1e-4, atol=1e-4)
        reordered = model.reorder(state, torch.tensor([2, 2, 0]))
        torch.testing.assert_close(reordered.wfe.r, state.wfe.r[[2, 2, 0]])


# ---------------------------------------------------------------------------------------------
# What a training step computes


def test_concatenation_of_ragged_rows_by_hand():
    sources = torch.tensor([[7, 8, 9], [10, 0, 0]])
    targets = torch.tensor([[20, 3, 0], [21, 22, 3]])
    seq, total = concat_source_target(sources, torch.tensor([3, 1]), SEP, 0, targets,
                                      torch.tensor([2, 3]))
    assert seq.tolist() == [[7, 8, 9, SEP, 20, 3], [10, SEP, 21, 22, 3, 0]]
    assert total.tolist() == [6, 5]
    prefix, lengths = concat_source_target(sources, torch.tensor([3, 1]), SEP, 0)
    assert prefix.tolist() == [[7, 8, 9, SEP], [10, SEP, 0, 0]] and lengths.tolist() == [4, 2]


def test_decoder_only_loss_covers_source_and_target_or_target_only():
    batch = make_batch(SOURCES, TARGETS)
    per_all, per_target = [], []
    model = build("t-d").eval()
    with torch.no_grad():
        for source, target in zip(SOURCES, TARGETS, strict=True):
            seq = torch.tensor([source + [SEP] + target])
            nll = torch.nn.functional.cross_entropy(model(seq)[0, :-1], seq[0, 1:],
                                                    reduction="none")
            per_all.append(nll)  # predicts source[1:], <sep> and the target
            per_target.append(nll[len(source):])
        out_all = model(batch)
        target_model = build("t-d", loss_on="target").eval()
        target_model.load_state_dict(model.state_dict())
        out_target = target_model(batch)
    all_nll, target_nll = torch.cat(per_all), torch.cat(per_target)
    assert all_nll.numel() == sum(len(s) + len(t) for s, t in zip(SOURCES, TARGETS, strict=True))
    torch.testing.assert_close(out_all.loss, all_nll.mean())
    torch.testing.assert_close(out_target.loss, target_nll.mean())
    for out in (out_all, out_target):  # perplexity is always on the target
        assert out.target_tokens.item() == sum(len(t) for t in TARGETS)
        torch.testing.assert_close(out.target_nll, target_nll.sum())


def test_encoder_decoder_reads_bos_and_target_minus_last():
    model = build("t-ed").eval()
    batch = make_batch(SOURCES, TARGETS)
    with torch.no_grad():
        out = model(batch)
        nll = [torch.nn.functional.cross_entropy(
            reference_logprobs(model, "t-ed", s, t), torch.tensor(t), reduction="none")
            for s, t in zip(SOURCES, TARGETS, strict=True)]
    nll = torch.cat(nll)
    assert out.target_tokens.item() == nll.numel()
    torch.testing.assert_close(out.loss, nll.mean())
    torch.testing.assert_close(out.target_nll, nll.sum())


def test_mixture_of_experts_loss_is_weighted_into_the_loss():
    model = build("t-dmca", moe_layers=[0, 2], loss_on="target", moe_loss_weight=0.5).train()
    out = model(make_batch(SOURCES, TARGETS))
    assert set(out.aux) == {"moe_balance", "moe_dropped"}
    assert out.aux["moe_balance"].item() >= 0.5
    mean_nll = out.target_nll / out.target_tokens
    torch.testing.assert_close(out.loss.detach() - mean_nll, 0.5 * out.aux["moe_balance"].detach())
    out.loss.backward()
    gate = model.blocks[0].ffn.gate.weight.grad
    assert gate is not None and gate.abs().sum() > 0


def test_decoder_only_model_maps_token_ids_to_logits():
    for name in ("t-d", "t-dmca"):
        logits = build(name)(torch.randint(0, V, (3, 11)))
        assert logits.shape == (3, 11, V)
    with pytest.raises(TypeError, match="t-ed takes a Batch"):
        build("t-ed")(torch.randint(0, V, (3, 11)))


@pytest.mark.parametrize("name", transformer.NAMES)
def test_trains_and_decodes_under_bf16_autocast(name):
    model = build(name, block_size=4, moe_layers=[1], wfe=True)
    batch = make_batch(SOURCES, TARGETS)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = model(batch)
    out.loss.backward()
    assert torch.isfinite(out.loss) and set(out.aux) == {"moe_balance", "moe_dropped", "wfe"}
    model.eval()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        state = model.start(batch)
        for s in range(5):
            logprobs, state = model.step(state, torch.tensor([t[s] for t in TARGETS]))
    assert torch.isfinite(logprobs).all() and logprobs.dtype == torch.float32


OVERFIT = [("t-ed", {}), ("t-d", {}), ("t-dmca", dict(block_size=4, moe_layers=[1]))]


@pytest.mark.parametrize("name,overrides", OVERFIT, ids=[n for n, _ in OVERFIT])
def test_overfits_a_handful_of_examples_and_decodes_them(name, overrides):
    torch.manual_seed(0)
    model = models.build(name, "tiny", vocab_size=V, **overrides)
    batch = make_batch(SOURCES, TARGETS)
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    for steps in range(1, 301):
        out = model(batch)
        optimizer.zero_grad()
        out.loss.backward()
        optimizer.step()
        per_token = (out.target_nll / out.target_tokens).item()
        if per_token < 0.05 or steps == 300:
            break
    assert per_token < 0.05, f"{name}: target NLL still {per_token:.3f} after {steps} steps"
    # Greedy decoding through start/step now writes each target back.
    model.eval()
    with torch.no_grad():
        state = model.start(batch)
        logprobs, written = state.first_logprobs, []
        for _ in range(max(len(t) for t in TARGETS)):
            tokens = logprobs.argmax(dim=-1)
            written.append(tokens)
            logprobs, state = model.step(state, tokens)
    written = torch.stack(written, dim=1).tolist()
    for r, target in enumerate(TARGETS):
        assert written[r][:len(target)] == target


# ---------------------------------------------------------------------------------------------
# Configs, presets, errors


@pytest.mark.parametrize("name", transformer.NAMES)
def test_build_and_from_config_round_trip(name):
    model = build(name, moe_layers=[0], wfe=True).eval()
    assert model.name == name and isinstance(model.config, TransformerConfig)
    saved = json.loads(json.dumps(asdict(model.config)))  # as a checkpoint stores it
    again = models.from_config(name, saved).eval()
    assert again.config == model.config and again.name == name
    again.load_state_dict(model.state_dict())
    batch = make_batch(SOURCES, TARGETS)
    with torch.no_grad():
        torch.testing.assert_close(again(batch).loss, model(batch).loss)


def test_presets():
    with torch.device("meta"):
        ted = models.build("t-ed", "base", vocab_size=V)
        td = models.build("t-d", "base", vocab_size=V)
        paper = models.build("t-dmca", "paper", vocab_size=V)
    c = ted.config
    assert (c.d_model, c.n_heads, c.n_layers, c.n_encoder_layers, c.d_ff) == (512, 8, 6, 6, 2048)
    assert td.config.n_encoder_layers == 0 and td.config.layer_kinds == ["full"] * 6
    p = paper.config
    assert p.layer_kinds == ["local", "compressed", "local", "compressed", "local"]
    assert p.moe_layers == [2] and p.n_experts == 256 and p.block_size == 256
    tiny = models.build("t-dmca", "tiny", vocab_size=V).config
    assert tiny.layer_kinds == ["local", "compressed", "local"] and tiny.d_model == 64
    # n_layers alone re-derives the kinds; layer_kinds alone sets n_layers.
    assert build("t-dmca", n_layers=5).config.layer_kinds == p.layer_kinds
    assert build("t-d", layer_kinds=["local"] * 4).config.n_layers == 4


@pytest.mark.parametrize("call,message", [
    (lambda: models.build("t-dmca", "huge"), "unknown preset 'huge'"),
    (lambda: transformer.build("t-dmca", "huge"), "unknown preset 'huge'"),
    (lambda: transformer.build("t-xl", "tiny"), "unknown transformer 't-xl'"),
    (lambda: build("t-dmca", layer_kinds=["local", "sparse"]), r"layer_kinds\[1\] = 'sparse'"),
    (lambda: build("t-d", n_head=3), "unknown TransformerConfig field.*n_head"),
    (lambda: build("t-d", n_layers=3, layer_kinds=["full"]), "1 entries for n_layers = 3"),
    (lambda: build("t-d", moe_layers=[2]), r"moe_layers \[2\]"),
    (lambda: build("t-d", loss_on="source"), "loss_on 'source'"),
    (lambda: build("t-ed", n_encoder_layers=0), "n_encoder_layers >= 1"),
    (lambda: models.from_config("t-d", {"layer_kinds": ["strided"], "n_layers": 1}),
     "'strided' is not an attention kind"),
])
def test_bad_configs_are_clear_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()
