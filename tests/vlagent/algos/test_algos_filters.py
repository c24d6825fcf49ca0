"""Dynamic sampling, overlong masking and difficulty filtering."""

from __future__ import annotations

import math

import pytest
import torch

from vlagent.algos.filters import (
    DynamicSampler,
    difficulty_filter,
    dynamic_sampling_keep,
    overlong_mask,
)

NAN = float("nan")


def ref_keep(rewards, groups):
    out = []
    for g in groups:
        finite = {x for x, h in zip(rewards, groups, strict=True) if h == g and math.isfinite(x)}
        out.append(len(finite) >= 2)
    return out


def test_dynamic_sampling_keep_hand_computed():
    # g0 [1, 1] equal -> drop ; g1 [0, 1] -> keep ; g2 [NaN, 2] one finite -> drop
    # g3 [NaN, NaN] -> drop ; g4 [3] singleton -> drop ; g5 [NaN, 0, 1] -> keep (NaN row too)
    rewards = torch.tensor([1.0, 1.0, 0.0, 1.0, NAN, 2.0, NAN, NAN, 3.0, NAN, 0.0, 1.0])
    groups = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3, 4, 5, 5, 5]) * 13
    got = dynamic_sampling_keep(rewards, groups)
    assert got.tolist() == [False, False, True, True] + [False] * 5 + [True, True, True]
    # equal float rewards (whose float mean is off by an ulp) are still "all equal"
    assert not dynamic_sampling_keep(torch.full((3,), 0.9), torch.zeros(3)).any()


def test_dynamic_sampling_keep_matches_reference():
    g = torch.Generator().manual_seed(0)
    for _ in range(30):
        n = int(torch.randint(1, 30, (1,), generator=g))
        rewards = torch.randint(0, 2, (n,), generator=g).float()  # binary: many constant groups
        rewards[torch.rand(n, generator=g) < 0.2] = NAN
        groups = torch.randint(0, 8, (n,), generator=g) * 5
        got = dynamic_sampling_keep(rewards, groups)
        assert got.tolist() == ref_keep(rewards.tolist(), groups.tolist())


def test_dynamic_sampler_accumulates_to_target():
    sampler = DynamicSampler(target_groups=3, max_rounds=5)
    # round 1: a = [0, 1] varies, b = [1, 1] constant, c = [1, 0] varies -> keep a, c
    taken = sampler.offer(
        torch.tensor([0.0, 1.0, 1.0, 1.0, 1.0, 0.0]), torch.tensor([0, 0, 1, 1, 2, 2])
    )
    assert taken.tolist() == [True, True, False, False, True, True]
    assert not sampler.done
    # round 2 (ids reused): d constant, e varies -> taken (3rd group), f varies -> surplus
    taken = sampler.offer(
        torch.tensor([0.0, 0.0, 0.0, 1.0, 1.0, 0.0]), torch.tensor([0, 0, 1, 1, 2, 2])
    )
    assert taken.tolist() == [False, False, True, True, False, False]
    assert sampler.done
    # seen 6, dropped 2 (b, d); f is not kept but not "dropped" either
    assert sampler.stats() == {
        "rounds": 2.0, "groups_seen": 6.0, "groups_kept": 3.0,
        "fraction_dropped": pytest.approx(1 / 3), "target_reached": 1.0,
    }  # fmt: skip
    with pytest.raises(RuntimeError, match="done"):
        sampler.offer(torch.tensor([0.0, 1.0]), torch.tensor([0, 0]))


def test_dynamic_sampler_gives_up_after_max_rounds():
    sampler = DynamicSampler(target_groups=2, max_rounds=2)
    assert sampler.fraction_dropped == 0.0
    for _ in range(2):
        taken = sampler.offer(torch.tensor([1.0, 1.0, 0.0, 0.0]), torch.tensor([4, 4, 9, 9]))
        assert not taken.any()
    assert sampler.done and sampler.rounds == 2
    assert sampler.fraction_dropped == 1.0
    assert sampler.stats()["target_reached"] == 0.0
    with pytest.raises(ValueError, match="target_groups"):
        DynamicSampler(target_groups=0, max_rounds=1)


def test_overlong_mask():
    mask = torch.tensor([[1, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=torch.int64)
    got = overlong_mask(mask, torch.tensor([False, True, False]))
    assert got.tolist() == [[1, 1, 0], [0, 0, 0], [0, 1, 1]]
    assert got.dtype == torch.int64
    assert mask[1].tolist() == [1, 1, 1]  # input untouched
    # all truncated -> nothing left; nothing truncated -> unchanged
    assert overlong_mask(mask.float(), torch.ones(3, dtype=torch.bool)).sum().item() == 0.0
    assert torch.equal(overlong_mask(mask, torch.zeros(3, dtype=torch.bool)), mask)


def test_difficulty_filter():
    rates = {"a": 0.0, "b": 0.2, "c": 0.5, "d": 0.8, "e": 1.0, "f": NAN, 7: 0.3}
    assert difficulty_filter(rates, 0.2, 0.8) == {"b", "c", "d", 7}  # inclusive bounds
    assert difficulty_filter(rates, 0.0, 1.0) == {"a", "b", "c", "d", "e", 7}  # NaN never kept
    assert difficulty_filter(rates, 0.5, 0.5) == {"c"}
    with pytest.raises(ValueError, match="lo"):
        difficulty_filter(rates, 0.8, 0.2)
