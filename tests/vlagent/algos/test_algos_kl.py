"""KL estimators, KL in loss and KL in reward against loop references and hand-computed cases."""

from __future__ import annotations

import math

import pytest
import torch

from vlagent.algos.kl import kl_in_reward, kl_k1, kl_k2, kl_k3, kl_penalty

LN2 = math.log(2.0)


def ref_kl(kind, lp, ref):
    d = lp - ref
    return {"k1": d, "k2": 0.5 * d * d, "k3": math.exp(-d) + d - 1.0}[kind]


def test_estimators_hand_computed():
    # logp = 0, ref = ln 2 -> d = logp - ref = -ln 2
    # k1 = -ln 2 = -.693147 ; k2 = (ln 2)^2 / 2 = .240227 ; k3 = e^{ln 2} - ln 2 - 1 = .306853
    lp, ref = torch.tensor([[0.0]]), torch.tensor([[LN2]])
    assert kl_k1(lp, ref).item() == pytest.approx(-LN2)
    assert kl_k2(lp, ref).item() == pytest.approx(0.5 * LN2**2)
    assert kl_k3(lp, ref).item() == pytest.approx(1.0 - LN2)
    for kind in ("k1", "k2", "k3"):
        assert kl_penalty(torch.full((2, 3), -0.4), torch.full((2, 3), -0.4), kind).abs().max() == 0


@pytest.mark.parametrize("kind", ["k1", "k2", "k3"])
def test_estimators_match_reference(kind):
    g = torch.Generator().manual_seed(0)
    lp = -torch.rand(5, 7, generator=g) * 3
    ref = -torch.rand(5, 7, generator=g) * 3
    got = kl_penalty(lp, ref, kind)
    want = [[ref_kl(kind, a, b) for a, b in zip(r1, r2, strict=True)] for r1, r2 in
            zip(lp.tolist(), ref.tolist(), strict=True)]  # fmt: skip
    for row_got, row_want in zip(got.tolist(), want, strict=True):
        assert row_got == pytest.approx(row_want, abs=1e-6)
    if kind != "k1":
        assert bool((got >= 0).all())


def test_penalty_dispatches_to_the_estimator_and_unknown_kind_raises():
    # d = logp - ref = ln 2 - 0: k1 = ln 2, k2 = (ln 2)^2 / 2, k3 = 1/2 + ln 2 - 1 = ln 2 - .5
    lp, ref = torch.full((2, 3), LN2), torch.zeros(2, 3)
    want = {"k1": LN2, "k2": 0.5 * LN2**2, "k3": LN2 - 0.5}
    for kind, value in want.items():
        got = kl_penalty(lp, ref, kind)
        assert got.shape == (2, 3) and got.flatten().tolist() == pytest.approx([value] * 6)
    with pytest.raises(ValueError, match="unknown"):
        kl_penalty(lp, ref, "k4")


def test_kl_in_reward_hand_computed():
    rewards = torch.tensor([1.0, 0.0, float("nan")])
    logp = torch.tensor([[0.0, -1.0], [-2.0, 5.0], [0.0, 0.0]])
    ref = torch.tensor([[-1.0, -1.0], [0.0, 0.0], [0.0, 0.0]])
    mask = torch.tensor([[1.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    # k1: row 0: (0 - -1) + 0 = 1 -> 1 - .1 = .9 ; row 1: -2 (second token masked) -> 0 + .2
    got = kl_in_reward(rewards, logp, ref, mask, coef=0.1, kind="k1")
    assert got[:2].tolist() == pytest.approx([0.9, 0.2])
    assert math.isnan(got[2].item())  # an unscorable sample stays unscorable
    # k3 with d = logp - ref: row 0: e^-1 + 1 - 1 = .367879 -> .963212 ; row 1: e^2 - 3 = 4.389056
    got = kl_in_reward(rewards, logp, ref, mask, coef=0.1, kind="k3")
    assert got[:2].tolist() == pytest.approx([1 - 0.1 * math.exp(-1), -0.1 * (math.exp(2) - 3)])


def test_kl_in_reward_matches_reference_and_carries_no_gradient():
    g = torch.Generator().manual_seed(1)
    for kind in ("k1", "k2", "k3"):
        rewards = torch.randn(6, generator=g)
        logp = (-torch.rand(6, 5, generator=g)).requires_grad_()
        ref = -torch.rand(6, 5, generator=g)
        mask = (torch.rand(6, 5, generator=g) > 0.4).float()
        got = kl_in_reward(rewards, logp, ref, mask, coef=0.05, kind=kind)
        assert not got.requires_grad
        want = [
            r - 0.05 * sum(ref_kl(kind, lp[t], rf[t]) for t in range(5) if m[t])
            for r, lp, rf, m in zip(rewards.tolist(), logp.tolist(), ref.tolist(), mask.tolist(),
                                    strict=True)
        ]  # fmt: skip
        assert got.tolist() == pytest.approx(want, abs=1e-6)
