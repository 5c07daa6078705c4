"""Mixture of experts: the balancing loss as defined, capacity drops (which and how many), and
batched dispatch equal to a per-token reference."""

from __future__ import annotations

import pytest
import torch

from wikisum.models import moe
from wikisum.models.moe import MixtureOfExperts

E, D, FF = 4, 6, 5


def test_balance_loss_hand_computed_on_a_fixed_gate():
    probs = torch.tensor([[0.9, 0.1], [0.6, 0.4], [0.3, 0.7], [0.8, 0.2]])
    first = probs.argmax(dim=1)  # experts 0, 0, 1, 0
    # f = (3/4, 1/4), P = (0.65, 0.35): 2 * (0.75 * 0.65 + 0.25 * 0.35) = 1.15
    assert moe.balance_loss(probs, first).item() == pytest.approx(1.15)
    # Without the last token: f = (2/3, 1/3), P = (0.6, 0.4): 2 * (0.4 + 0.4 / 3)
    mask = torch.tensor([True, True, True, False])
    assert moe.balance_loss(probs, first, mask).item() == pytest.approx(2 * (0.4 + 0.4 / 3))


def test_balance_loss_is_one_when_uniform_and_e_when_collapsed():
    n = 8
    uniform = moe.balance_loss(torch.full((n, E), 1 / E), torch.arange(n) % E)
    assert uniform.item() == pytest.approx(1.0)
    collapsed = moe.balance_loss(torch.eye(E)[torch.zeros(n, dtype=torch.long)],
                                 torch.zeros(n, dtype=torch.long))
    assert collapsed.item() == pytest.approx(E)


def test_confident_routing_loss_is_e_times_sum_of_squared_loads_between_1_and_e():
    """P_e = f_e for one-hot router probabilities: E * sum f_e^2, minimal (1) only when the
    load is uniform, maximal (E) when one expert takes everything."""
    torch.manual_seed(0)
    for _ in range(20):
        first = torch.randint(0, E, (12,))
        value = moe.balance_loss(torch.eye(E)[first], first).item()
        load = torch.bincount(first, minlength=E).float() / 12
        assert value == pytest.approx(E * (load ** 2).sum().item())
        assert 1.0 - 1e-6 <= value <= E + 1e-6
        assert (value == pytest.approx(1.0)) == bool((load == 1 / E).all())


def test_balance_loss_gradient_moves_probability_off_the_busy_expert():
    logits = torch.zeros(6, E, requires_grad=True)
    first = torch.tensor([0, 0, 0, 0, 1, 2])  # expert 0 overloaded
    moe.balance_loss(logits.softmax(dim=-1), first).backward()
    grad = logits.grad.sum(0)
    assert grad[0] > 0 and (grad[0] > grad[1:]).all()  # descent lowers expert 0's logit most


def test_slots_are_first_come_first_served_and_overflow_is_dropped():
    experts = torch.tensor([[0, 1], [0, 2], [0, 1], [1, 0]])
    slots, keep, capacity = moe.assign_slots(experts, 3, capacity=2)
    # expert 0: tokens 0, 1 (kept), 2, 3 (dropped); expert 1: tokens 0, 2 (kept), 3 (dropped)
    assert capacity == 2
    assert slots.tolist() == [[0, 0], [1, 0], [2, 1], [2, 3]]
    assert keep.tolist() == [[True, True], [True, True], [False, True], [False, False]]
    # Padding takes no place: without token 1, token 2 gets expert 0's second slot.
    slots, keep, _ = moe.assign_slots(experts, 3, 2, torch.tensor([True, False, True, True]))
    assert keep.tolist() == [[True, True], [False, False], [True, True], [False, False]]
    assert slots[2].tolist() == [1, 1]
    # No limit: the buffer is as long as the busiest expert's load (expert 0: 4).
    _, keep, capacity = moe.assign_slots(experts, 3, None)
    assert keep.all() and capacity == 4


def expert(layer: MixtureOfExperts, e: int, x: torch.Tensor) -> torch.Tensor:
    hidden = torch.relu(x @ layer.w_in[e] + layer.b_in[e])
    return hidden @ layer.w_out[e] + layer.b_out[e]


@pytest.mark.parametrize("capacity", [None, 2])
def test_batched_dispatch_equals_a_per_token_reference(capacity):
    torch.manual_seed(0)
    layer = MixtureOfExperts(D, FF, E)
    with torch.no_grad():
        for p in (layer.b_in, layer.b_out):
            p.normal_()
    x = torch.randn(10, D)
    routing = moe.route(torch.randn(10, E), k=2)
    slots, keep, cap = moe.assign_slots(routing.experts, E, capacity)
    got = moe.dispatch(x, routing.experts, routing.gates, slots, keep, cap, layer.w_in,
                       layer.b_in, layer.w_out, layer.b_out)
    expected = torch.zeros(10, D)
    for n in range(10):
        for k in range(2):
            if keep[n, k]:
                expected[n] += routing.gates[n, k] * expert(layer, routing.experts[n, k], x[n])
    torch.testing.assert_close(got, expected)
    if capacity is not None:
        assert not keep.all()  # the case with drops did drop something
    torch.testing.assert_close(routing.gates.sum(dim=1), torch.ones(10))


def steered(capacity_factor: float) -> MixtureOfExperts:
    """A layer whose router always ranks expert 0, then 1, ... (for positive inputs), with
    negligible gate noise."""
    torch.manual_seed(0)
    layer = MixtureOfExperts(D, FF, E, capacity_factor=capacity_factor)
    with torch.no_grad():
        layer.gate.weight.copy_(torch.tensor([[3.0], [2.0], [1.0], [0.0]]).expand(E, D))
        layer.noise.weight.fill_(-100.0)  # softplus -> ~0 for positive inputs
    return layer


def test_training_capacity_drops_are_counted_and_later_positions_lose():
    layer = steered(capacity_factor=0.5).train()
    x = torch.rand(2, 4, D) + 0.1  # N = 8 tokens, each to experts 0 and 1
    y, stats = layer(x)
    # capacity = ceil(0.5 * 2 * 8 / 4) = 2 per expert: experts 0 and 1 keep 2 of 8 each.
    assert stats.assigned.item() == 16 and stats.dropped.item() == 12
    # Priority is by position: both rows' first position are the kept ones.
    assert (y[:, 0].abs().sum(dim=-1) > 0).all()
    assert (y[:, 1:] == 0).all()
    # Padding is not routed and not counted.
    _, stats = layer(x, mask=torch.tensor([[True] * 4, [True, True, False, False]]))
    assert stats.assigned.item() == 12 and stats.dropped.item() == 8


def test_evaluation_has_no_noise_and_no_drops():
    layer = steered(capacity_factor=0.5).eval()
    with torch.no_grad():
        layer.noise.weight.fill_(5.0)  # would be loud noise in training
    x = torch.rand(2, 4, D) + 0.1
    y1, stats = layer(x)
    y2, _ = layer(x)
    assert stats.dropped.item() == 0
    torch.testing.assert_close(y1, y2, rtol=0, atol=0)
    # Each token's output is its own: the same token alone gives the same output.
    y_alone, _ = layer(x[1:, 2:3])
    torch.testing.assert_close(y_alone[0, 0], y1[1, 2])


def test_training_drops_never_let_a_later_position_change_an_earlier_one():
    """Capacity is shared by the batch, but positions are served in time order: changing
    tokens after position t (in any row) leaves outputs at positions <= t as they were."""
    torch.manual_seed(0)
    layer = MixtureOfExperts(D, FF, E, capacity_factor=0.75).train()
    with torch.no_grad():
        layer.gate.weight.normal_()
    x = torch.randn(3, 9, D)
    torch.manual_seed(1)
    y, stats = layer(x)
    assert stats.dropped.item() > 0
    for t in (0, 4, 7):
        changed = x.clone()
        changed[:, t + 1:] = torch.randn(3, 8 - t, D) * 3
        torch.manual_seed(1)  # the same gate noise
        y2, _ = layer(changed)
        torch.testing.assert_close(y2[:, :t + 1], y[:, :t + 1], rtol=0, atol=1e-6)


def test_runs_under_bf16_autocast_and_trains_the_gate():
    layer = MixtureOfExperts(D, FF, E).train()
    x = torch.randn(2, 5, D)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y, stats = layer(x)
    (y.float().sum() + stats.balance).backward()
    assert torch.isfinite(y.float()).all()
    assert layer.gate.weight.grad is not None and layer.gate.weight.grad.abs().sum() > 0


def test_bad_settings_are_clear_errors():
    with pytest.raises(ValueError, match="top-3 routing needs"):
        MixtureOfExperts(D, FF, 2, k=3)
    with pytest.raises(ValueError, match="capacity_factor"):
        MixtureOfExperts(D, FF, E, capacity_factor=0)
