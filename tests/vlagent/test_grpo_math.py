"""GRPO math against slow loop references and hand-computed cases."""

from __future__ import annotations

import math

import pytest
import torch

from vlagent.algos.grpo import group_advantages, kl_k3, masked_mean, ppo_clip_loss


def ref_advantages(rewards, groups, scale=True, eps=1e-6):
    out = []
    for r, g in zip(rewards, groups, strict=True):
        if not math.isfinite(r):
            out.append(0.0)
            continue
        members = [x for x, h in zip(rewards, groups, strict=True) if h == g and math.isfinite(x)]
        mean = sum(members) / len(members)
        std = math.sqrt(sum((x - mean) ** 2 for x in members) / len(members))
        out.append((r - mean) / (std + eps) if scale else r - mean)
    return out


def test_advantages_hand_computed():
    # group 0: rewards 1, 0 -> mean 0.5, std 0.5 -> +1, -1 ; group 7: 2, 2, 2 -> zeros
    adv = group_advantages(
        torch.tensor([1.0, 0.0, 2.0, 2.0, 2.0]), torch.tensor([0, 0, 7, 7, 7]), eps=0.0
    )
    assert adv.tolist() == pytest.approx([1.0, -1.0, 0.0, 0.0, 0.0])


def test_advantages_nan_is_zero_and_excluded():
    adv = group_advantages(torch.tensor([1.0, float("nan"), 0.0]), torch.tensor([3, 3, 3]), eps=0.0)
    assert adv.tolist() == pytest.approx([1.0, 0.0, -1.0])


@pytest.mark.parametrize("scale", [True, False])
def test_advantages_match_reference_ragged_noncontiguous(scale):
    g = torch.Generator().manual_seed(0)
    for _ in range(20):
        n = int(torch.randint(2, 40, (1,), generator=g))
        rewards = torch.randn(n, generator=g)
        rewards[torch.rand(n, generator=g) < 0.1] = float("nan")
        groups = torch.randint(0, 5, (n,), generator=g) * 11  # ragged, non-contiguous, sparse ids
        got = group_advantages(rewards, groups, scale_by_std=scale)
        want = ref_advantages(rewards.tolist(), groups.tolist(), scale)
        assert got.tolist() == pytest.approx(want, abs=1e-5)


def test_kl_k3_hand_computed():
    # ref - logp = log 2 -> 2 - log 2 - 1
    v = kl_k3(torch.tensor([0.0]), torch.tensor([math.log(2.0)]))
    assert v.item() == pytest.approx(1 - math.log(2.0))
    assert kl_k3(torch.tensor([0.3]), torch.tensor([0.3])).item() == 0.0


def ref_ppo(logp, old, adv, mask, eps, ref=None, beta=0.0):
    total, count = 0.0, 0.0
    for i in range(len(logp)):
        for t in range(len(logp[i])):
            if mask[i][t] == 0:
                continue
            ratio = math.exp(logp[i][t] - old[i][t])
            val = -min(ratio * adv[i], max(min(ratio, 1 + eps), 1 - eps) * adv[i])
            if beta:
                d = ref[i][t] - logp[i][t]
                val += beta * (math.exp(d) - d - 1)
            total += val
            count += 1
    return total / count


def test_ppo_hand_computed():
    # one token, ratio e^0.5 ≈ 1.6487 > 1.2, A = +1 -> clipped: loss = -1.2
    loss, stats = ppo_clip_loss(
        torch.tensor([[0.5]]), torch.tensor([[0.0]]), torch.tensor([1.0]), torch.ones(1, 1)
    )
    assert loss.item() == pytest.approx(-1.2)
    assert stats["clip_frac"] == 1.0
    # A = -1, ratio e^0.5: min(-1.6487, -1.2) = -1.6487 -> loss 1.6487 (not clipped)
    loss, _ = ppo_clip_loss(
        torch.tensor([[0.5]]), torch.tensor([[0.0]]), torch.tensor([-1.0]), torch.ones(1, 1)
    )
    assert loss.item() == pytest.approx(math.exp(0.5))


@pytest.mark.parametrize("beta", [0.0, 0.1])
def test_ppo_matches_reference(beta):
    g = torch.Generator().manual_seed(1)
    logp = -torch.rand(6, 5, generator=g)
    old = logp + 0.3 * torch.randn(6, 5, generator=g)
    ref = logp + 0.2 * torch.randn(6, 5, generator=g)
    adv = torch.randn(6, generator=g)
    mask = (torch.rand(6, 5, generator=g) > 0.3).float()
    mask[:, 0] = 1
    loss, _ = ppo_clip_loss(logp, old, adv, mask, clip_eps=0.2, ref_logp=ref, kl_coef=beta)
    want = ref_ppo(
        logp.tolist(), old.tolist(), adv.tolist(), mask.tolist(), 0.2, ref.tolist(), beta
    )
    assert loss.item() == pytest.approx(want, rel=1e-5)


def test_ppo_gradient_on_policy_is_advantage_weighted_logprob_gradient():
    # at ratio 1 the PPO gradient equals the policy-gradient estimator -mean(A * grad logp)
    logp = torch.tensor([[-0.5, -1.0], [-0.2, -0.1]], requires_grad=True)
    adv = torch.tensor([2.0, -1.0])
    mask = torch.ones(2, 2)
    loss, _ = ppo_clip_loss(logp, logp.detach(), adv, mask)
    loss.backward()
    assert logp.grad.flatten().tolist() == pytest.approx([-0.5, -0.5, 0.25, 0.25])


def test_kl_needs_reference():
    with pytest.raises(ValueError, match="ref_logp"):
        ppo_clip_loss(
            torch.zeros(1, 1), torch.zeros(1, 1), torch.ones(1), torch.ones(1, 1), kl_coef=0.1
        )


def test_masked_mean_ignores_masked():
    assert masked_mean(torch.tensor([1.0, 100.0, 3.0]), torch.tensor([1.0, 0.0, 1.0])).item() == 2.0
