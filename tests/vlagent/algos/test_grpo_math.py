"""GRPO math: properties of the advantage and PPO loss functions not covered in test_algos_*.py."""

from __future__ import annotations

import pytest
import torch

from vlagent.algos.advantages import grpo_advantages
from vlagent.algos.losses import masked_mean, ppo_loss


def test_advantages_nan_is_zero_and_excluded():
    # NaN is left out of the group's mean and std: [1, 0] -> mean .5, std .5 -> +1, -1
    adv = grpo_advantages(torch.tensor([1.0, float("nan"), 0.0]), torch.tensor([3, 3, 3]), eps=0.0)
    assert adv.tolist() == pytest.approx([1.0, 0.0, -1.0])


def test_ppo_gradient_on_policy_is_advantage_weighted_logprob_gradient():
    # at ratio 1 the PPO gradient equals the policy-gradient estimator -mean(A * grad logp)
    logp = torch.tensor([[-0.5, -1.0], [-0.2, -0.1]], requires_grad=True)
    adv = torch.tensor([2.0, -1.0])
    mask = torch.ones(2, 2)
    loss, _ = ppo_loss(logp, logp.detach(), adv, mask)
    loss.backward()
    assert logp.grad.flatten().tolist() == pytest.approx([-0.5, -0.5, 0.25, 0.25])


def test_kl_needs_reference():
    with pytest.raises(ValueError, match="ref_logp"):
        ppo_loss(torch.zeros(1, 1), torch.zeros(1, 1), torch.ones(1), torch.ones(1, 1), kl_coef=0.1)


def test_masked_mean_ignores_masked():
    assert masked_mean(torch.tensor([1.0, 100.0, 3.0]), torch.tensor([1.0, 0.0, 1.0])).item() == 2.0
