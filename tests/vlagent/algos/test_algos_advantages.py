"""Advantage estimators against slow loop references and hand-computed cases."""

from __future__ import annotations

import math

import pytest
import torch

from vlagent.algos.advantages import (
    compute_advantages,
    dr_grpo_advantages,
    gigpo_advantages,
    grpo_advantages,
    reinforce_pp_advantages,
    rloo_advantages,
)

NAN = float("nan")


def _mean(xs):
    return sum(xs) / len(xs)


def _pstd(xs):
    m = _mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def _div(num, den):
    return num / den if den > 0 else 0.0


def ref_grpo(rewards, groups, scale=True, level="group", eps=1e-6):
    batch = [x for x in rewards if math.isfinite(x)]
    out = []
    for r, g in zip(rewards, groups, strict=True):
        if not math.isfinite(r):
            out.append(0.0)
            continue
        members = [x for x, h in zip(rewards, groups, strict=True) if h == g and math.isfinite(x)]
        centred = r - _mean(members)
        if not scale or level == "none":
            out.append(centred)
        elif level == "group":
            out.append(_div(centred, _pstd(members) + eps))
        else:
            out.append(_div(centred, _pstd(batch) + eps))
    return out


def ref_rloo(rewards, groups):
    out = []
    for i, (r, g) in enumerate(zip(rewards, groups, strict=True)):
        others = [
            x
            for j, (x, h) in enumerate(zip(rewards, groups, strict=True))
            if j != i and h == g and math.isfinite(x)
        ]
        out.append(r - _mean(others) if math.isfinite(r) and others else 0.0)
    return out


def ref_reinforce_pp(rewards, groups, baseline, eps=1e-6):
    xs = list(rewards)
    if baseline:
        xs = ref_grpo(rewards, groups, scale=False)
        xs = [x if math.isfinite(r) else NAN for x, r in zip(xs, rewards, strict=True)]
    batch = [x for x in xs if math.isfinite(x)]
    return [_div(x - _mean(batch), _pstd(batch) + eps) if math.isfinite(x) else 0.0 for x in xs]


def random_batches(seed, count=25):
    g = torch.Generator().manual_seed(seed)
    for i in range(count):
        n = int(torch.randint(1, 40, (1,), generator=g))
        rewards = torch.randn(n, generator=g)
        if i % 3 == 0:  # binary rewards: many all-equal groups and ties
            rewards = torch.randint(0, 2, (n,), generator=g).float()
        rewards[torch.rand(n, generator=g) < 0.15] = NAN
        groups = torch.randint(0, 6, (n,), generator=g) * 7 - 3  # ragged, sparse, negative ids
        yield rewards, groups


@pytest.mark.parametrize("level", ["group", "batch", "none"])
@pytest.mark.parametrize("scale", [True, False])
def test_grpo_matches_reference(level, scale):
    for rewards, groups in random_batches(0):
        got = grpo_advantages(rewards, groups, scale_by_std=scale, std_level=level)
        want = ref_grpo(rewards.tolist(), groups.tolist(), scale, level)
        assert got.tolist() == pytest.approx(want, abs=1e-5)


def test_grpo_hand_computed_group_and_batch_std():
    rewards, groups = torch.tensor([1.0, 0.0, 3.0, 1.0]), torch.tensor([0, 0, 1, 1])
    # group means 0.5, 2 -> centred [0.5, -0.5, 1, -1]; group stds 0.5, 1 -> [1, -1, 1, -1]
    got = grpo_advantages(rewards, groups, eps=0.0)
    assert got.tolist() == pytest.approx([1.0, -1.0, 1.0, -1.0])
    # batch mean 1.25; squared deviations .0625 + 1.5625 + 3.0625 + .0625 = 4.75; /4 = 1.1875
    s = math.sqrt(1.1875)
    got = grpo_advantages(rewards, groups, std_level="batch", eps=0.0)
    assert got.tolist() == pytest.approx([0.5 / s, -0.5 / s, 1.0 / s, -1.0 / s])
    for off in (dict(std_level="none"), dict(scale_by_std=False)):
        assert grpo_advantages(rewards, groups, **off).tolist() == [0.5, -0.5, 1.0, -1.0]


def test_grpo_edge_cases():
    # all-equal group and singleton -> 0; all-NaN group -> 0, never NaN
    rewards = torch.tensor([2.0, 2.0, 2.0, 5.0, NAN, NAN])
    groups = torch.tensor([1, 1, 1, 2, 3, 3])
    for level in ("group", "batch", "none"):
        got = grpo_advantages(rewards, groups, std_level=level, eps=0.0)
        assert got.tolist() == [0.0] * 6
    # float64 stays float64; the std level is validated
    assert grpo_advantages(rewards.double(), groups).dtype == torch.float64
    with pytest.raises(ValueError, match="std_level"):
        grpo_advantages(rewards, groups, std_level="global")
    assert grpo_advantages(torch.zeros(0), torch.zeros(0, dtype=torch.long)).numel() == 0


def test_dr_grpo_is_mean_centred():
    # group [1, 0, 2] mean 1 -> [0, -1, 1]; NaN -> 0 and not in the mean
    got = dr_grpo_advantages(torch.tensor([1.0, 0.0, 2.0, NAN]), torch.tensor([4, 4, 4, 4]))
    assert got.tolist() == [0.0, -1.0, 1.0, 0.0]


def test_rloo_matches_reference():
    for rewards, groups in random_batches(2):
        got = rloo_advantages(rewards, groups)
        assert got.tolist() == pytest.approx(ref_rloo(rewards.tolist(), groups.tolist()), abs=1e-5)


def test_rloo_hand_computed():
    # group a = [1, 0, 2]: 1 - (0+2)/2 = 0; 0 - (1+2)/2 = -1.5; 2 - (1+0)/2 = 1.5
    # group b = [5] (no other member) -> 0; group c = [1, NaN, 0]: 1 - 0 = 1, NaN -> 0, 0 - 1 = -1
    rewards = torch.tensor([1.0, 0.0, 2.0, 5.0, 1.0, NAN, 0.0])
    got = rloo_advantages(rewards, torch.tensor([0, 0, 0, 1, 2, 2, 2]))
    assert got.tolist() == pytest.approx([0.0, -1.5, 1.5, 0.0, 1.0, 0.0, -1.0])
    # all-equal group -> 0
    assert rloo_advantages(torch.full((3,), 0.7), torch.zeros(3)).tolist() == [0.0] * 3


def test_rloo_is_k_over_k_minus_1_times_dr_grpo():
    rewards, groups = (
        torch.randn(12, generator=torch.Generator().manual_seed(3)),
        torch.arange(12) % 4,
    )
    k = 3.0  # each of the 4 groups has 3 members
    want = dr_grpo_advantages(rewards, groups) * k / (k - 1)
    assert rloo_advantages(rewards, groups).tolist() == pytest.approx(want.tolist(), abs=1e-6)


@pytest.mark.parametrize("baseline", [False, True])
def test_reinforce_pp_matches_reference(baseline):
    for rewards, groups in random_batches(4):
        got = reinforce_pp_advantages(rewards, groups, group_baseline=baseline)
        want = ref_reinforce_pp(rewards.tolist(), groups.tolist(), baseline)
        assert got.tolist() == pytest.approx(want, abs=1e-5)


def test_reinforce_pp_hand_computed():
    rewards, groups = torch.tensor([1.0, 2.0, 3.0, 4.0]), torch.tensor([0, 0, 1, 1])
    # batch mean 2.5; var (2.25 + .25 + .25 + 2.25) / 4 = 1.25
    got = reinforce_pp_advantages(rewards, eps=0.0)
    s = math.sqrt(1.25)
    assert got.tolist() == pytest.approx([-1.5 / s, -0.5 / s, 0.5 / s, 1.5 / s])
    # group baseline: [-.5, .5, -.5, .5]; batch mean 0, std .5 -> [-1, 1, -1, 1]
    got = reinforce_pp_advantages(rewards, groups, group_baseline=True, eps=0.0)
    assert got.tolist() == pytest.approx([-1.0, 1.0, -1.0, 1.0])
    # constant batch and NaN -> zeros
    got = reinforce_pp_advantages(torch.tensor([3.0, NAN, 3.0]), eps=0.0)
    assert got.tolist() == [0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="group_ids"):
        reinforce_pp_advantages(rewards, group_baseline=True)


def test_compute_advantages_dispatches():
    """Each name reaches its estimator: checked against the loop references, not against the
    functions the dispatcher calls."""
    rewards, groups = next(random_batches(5, count=1))
    r, g = rewards.tolist(), groups.tolist()
    cases = [
        (("grpo", {"std_level": "batch"}), ref_grpo(r, g, True, "batch")),
        (("grpo", {}), ref_grpo(r, g)),
        (("dr_grpo", {}), ref_grpo(r, g, scale=False)),
        (("rloo", {}), ref_rloo(r, g)),
        (("reinforce_pp", {"group_baseline": True}), ref_reinforce_pp(r, g, True)),
        (("reinforce_pp", {}), ref_reinforce_pp(r, g, False)),
    ]
    for (kind, opts), want in cases:
        got = compute_advantages(kind, rewards, groups, **opts)
        assert got.tolist() == pytest.approx(want, abs=1e-5), (kind, opts)
    # the estimators differ on this batch, so a dispatch to the wrong one cannot pass
    wants = [tuple(round(x, 4) for x in want) for _, want in cases]
    assert len(set(wants)) == len(wants)
    with pytest.raises(ValueError, match="unknown"):
        compute_advantages("ppo", rewards, groups)


@pytest.mark.parametrize(("value", "size"), [(0.9, 3), (0.3, 6), (0.7, 7), (0.1, 7)])
def test_constant_float_groups_get_exact_zeros(value, size):
    # float32 mean of `size` copies of `value` misses it by an ulp; divided by (std + 1e-6)
    # that residue used to become an advantage of ~0.056 for 0.9 x 3 (before the fix)
    rewards = torch.cat([torch.full((size,), value), torch.tensor([0.0, 1.0])])
    groups = torch.tensor([0] * size + [1, 1])
    zeros = [0.0] * size
    for level in ("group", "batch", "none"):
        assert grpo_advantages(rewards, groups, std_level=level)[:size].tolist() == zeros
    assert rloo_advantages(rewards, groups)[:size].tolist() == zeros
    assert reinforce_pp_advantages(rewards, groups, group_baseline=True)[:size].tolist() == zeros
    assert reinforce_pp_advantages(rewards[:size]).tolist() == zeros
    step = gigpo_advantages(rewards, torch.arange(size + 2), groups, ["s"] * (size + 2)).step
    assert step[:size].tolist() == zeros


def test_grpo_treats_float_noise_spread_as_no_signal():
    """Rewards 1e-8 apart (KL-in-reward with the policy equal to its reference) must not be
    blown up by the std division into advantages of order 1; a real spread still is."""
    from vlagent.algos.advantages import grpo_advantages

    noise = torch.tensor(
        [1.0, 1.0 + 1e-8, 1.0 - 1e-8, 1.0, 0.0, 1.0, 0.0, 1.0], dtype=torch.float64
    )
    groups = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    adv = grpo_advantages(noise, groups)
    assert torch.equal(adv[:4], torch.zeros(4, dtype=adv.dtype))
    assert torch.allclose(adv[4:], torch.tensor([-1.0, 1.0, -1.0, 1.0], dtype=adv.dtype), atol=1e-5)
    batch = grpo_advantages(noise[:4], groups[:4], std_level="batch")
    assert torch.equal(batch, torch.zeros(4, dtype=batch.dtype))
