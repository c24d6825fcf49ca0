"""GiGPO step-level advantages and discounted returns: loop references and a hand-built batch."""

from __future__ import annotations

import math

import pytest
import torch

from vlagent.algos.advantages import discounted_returns, gigpo_advantages

NAN = float("nan")


def _mean(xs):
    return sum(xs) / len(xs)


def _pstd(xs):
    m = _mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / len(xs))


def _div(num, den):
    return num / den if den > 0 else 0.0


def ref_group_normalized(values, groups, eps=1e-6):
    """(v - mean_group) / (pstd_group + eps) over finite values; 0 for non-finite ones."""
    out = []
    for v, g in zip(values, groups, strict=True):
        members = [x for x, h in zip(values, groups, strict=True) if h == g and math.isfinite(x)]
        out.append(_div(v - _mean(members), _pstd(members) + eps) if math.isfinite(v) else 0.0)
    return out


def ref_discounted(rewards, episodes, gamma):
    out = [0.0] * len(rewards)
    running: dict[int, float] = {}
    for i in reversed(range(len(rewards))):
        running[episodes[i]] = rewards[i] + gamma * running.get(episodes[i], 0.0)
        out[i] = running[episodes[i]]
    return out


def test_discounted_returns_hand_computed_interleaved():
    # episode 5: r = [1, 0, 3] -> G = [1 + .5*1.5, 0 + .5*3, 3] = [1.75, 1.5, 3]
    # episode 9: r = [0, 2]    -> G = [1, 2]
    got = discounted_returns(
        torch.tensor([1.0, 0.0, 0.0, 2.0, 3.0]), torch.tensor([5, 9, 5, 9, 5]), gamma=0.5
    )
    assert got.tolist() == pytest.approx([1.75, 1.0, 1.5, 2.0, 3.0])


def test_discounted_returns_matches_reference():
    g = torch.Generator().manual_seed(6)
    for gamma in (0.0, 0.9, 1.0):
        for _ in range(10):
            s = int(torch.randint(1, 30, (1,), generator=g))
            rewards = torch.randn(s, generator=g)
            episodes = torch.randint(0, 5, (s,), generator=g) * 3
            got = discounted_returns(rewards, episodes, gamma)
            want = ref_discounted(rewards.tolist(), episodes.tolist(), gamma)
            assert got.tolist() == pytest.approx(want, abs=1e-5)
    assert discounted_returns(torch.zeros(0), torch.zeros(0, dtype=torch.long), 0.9).numel() == 0
    with pytest.raises(ValueError, match="gamma"):
        discounted_returns(torch.zeros(2), torch.zeros(2, dtype=torch.long), 1.5)


def gigpo_batch():
    """2 tasks x 3 episodes, rows interleaved by time step (t=0 of every episode, then t=1 ...).

    task 10: ep 0 = S,A r=[0,1] | ep 1 = S,B,A r=[0,0,1] | ep 2 = S,B r=[0,0]
    task 20: ep 3 = S,C r=[0,0] | ep 4 = S,C r=[0,1]     | ep 5 = S,S r=[0,1] (state repeats)
    """
    rows = [  # (episode, task, anchor, reward, t)
        (0, 10, "S", 0.0, 0), (1, 10, "S", 0.0, 0), (2, 10, "S", 0.0, 0),
        (3, 20, "S", 0.0, 0), (4, 20, "S", 0.0, 0), (5, 20, "S", 0.0, 0),
        (0, 10, "A", 1.0, 1), (1, 10, "B", 0.0, 1), (2, 10, "B", 0.0, 1),
        (3, 20, "C", 0.0, 1), (4, 20, "C", 1.0, 1), (5, 20, "S", 1.0, 1),
        (1, 10, "A", 1.0, 2),
    ]  # fmt: skip
    episodes = torch.tensor([r[0] for r in rows]) * 10 + 1  # non-contiguous ids
    tasks = torch.tensor([r[1] for r in rows])
    anchors = [r[2] for r in rows]
    rewards = torch.tensor([r[3] for r in rows])
    return episodes, tasks, anchors, rewards


def test_gigpo_hand_computed():
    episodes, tasks, anchors, rewards = gigpo_batch()
    # gamma .5 returns: ep0 [.5, 1]; ep1 [.25, .5, 1]; ep2 [0, 0]; ep3 [0, 0]; ep4 [.5, 1];
    # ep5 [.5, 1]
    returns = discounted_returns(rewards, episodes, gamma=0.5)
    assert returns.tolist() == pytest.approx([0.5, 0.25, 0, 0, 0.5, 0.5, 1, 0.5, 0, 0, 1, 1, 1])
    # episode returns = undiscounted totals: task 10 [1, 1, 0], task 20 [0, 1, 1]
    totals = {0: 1.0, 1: 1.0, 2: 0.0, 3: 0.0, 4: 1.0, 5: 1.0}
    ep_returns = torch.tensor([totals[int(e) // 10] for e in episodes])
    out = gigpo_advantages(
        returns, episodes, tasks, anchors, episode_returns=ep_returns, step_weight=0.5, eps=0.0
    )
    # episode level, per task: mean 2/3, std sqrt(((1/3)^2*2 + (2/3)^2)/3) = sqrt(2)/3
    #   -> winners (1/3)/(sqrt(2)/3) = 1/sqrt(2), loser -(2/3)/(sqrt(2)/3) = -sqrt(2)
    w, lo = 1 / math.sqrt(2), -math.sqrt(2)
    ep_adv = {0: w, 1: w, 2: lo, 3: lo, 4: w, 5: w}
    assert out.episode.tolist() == pytest.approx([ep_adv[int(e) // 10] for e in episodes])
    # step groups (5): (10,S) = [.5, .25, 0]: mean .25, std sqrt(.125/3) -> [+sqrt1.5, 0, -sqrt1.5]
    #   (10,A) = [1, 1] -> 0, 0;  (10,B) = [.5, 0] -> [+1, -1]
    #   (20,S) = ep3 0, ep4 .5, ep5 .5, ep5 1: mean .5, std sqrt(.5/4) -> [-sqrt2, 0, 0, +sqrt2]
    #   (20,C) = [0, 1] -> [-1, +1]      ("S" of task 10 and task 20 are different groups)
    r15, r2 = math.sqrt(1.5), math.sqrt(2.0)
    step = [r15, 0, -r15, -r2, 0, 0, 0, 1, -1, -1, 1, r2, 0]
    assert out.step.tolist() == pytest.approx(step)
    sg = out.step_group.tolist()
    assert len(set(sg)) == 5
    assert sg[0] == sg[1] == sg[2] != sg[3] == sg[4] == sg[5] == sg[11]
    assert sg[6] == sg[12] and sg[7] == sg[8] and sg[9] == sg[10]
    combined = [ep_adv[int(e) // 10] + 0.5 * s for e, s in zip(episodes, step, strict=True)]
    assert out.combined.tolist() == pytest.approx(combined)


def test_gigpo_default_episode_return_is_first_step_return():
    episodes, tasks, anchors, rewards = gigpo_batch()
    returns = discounted_returns(rewards, episodes, gamma=1.0)  # first-step return = total
    default = gigpo_advantages(returns, episodes, tasks, anchors)
    explicit = gigpo_advantages(
        returns, episodes, tasks, anchors, episode_returns=returns.new_tensor(
            [1.0, 1, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1])
    )  # fmt: skip
    assert torch.allclose(default.combined, explicit.combined)
    # centring only at both levels
    plain = gigpo_advantages(returns, episodes, tasks, anchors, scale_by_std=False, step_weight=0)
    assert plain.episode[0].item() == pytest.approx(1 / 3)
    assert torch.equal(plain.combined, plain.episode)


def test_gigpo_rejects_inconsistent_inputs():
    episodes, tasks, anchors, rewards = gigpo_batch()
    with pytest.raises(ValueError, match="same length"):
        gigpo_advantages(rewards, episodes, tasks, anchors[:-1])
    bad_tasks = tasks.clone()
    bad_tasks[-1] = 20  # ep 1's last step claims another task
    with pytest.raises(ValueError, match="group_ids"):
        gigpo_advantages(rewards, episodes, bad_tasks, anchors)
    with pytest.raises(ValueError, match="episode_returns"):
        gigpo_advantages(rewards, episodes, tasks, anchors, episode_returns=rewards)


def ref_gigpo(returns, episodes, tasks, anchors, omega):
    first: dict[int, int] = {}
    for i, e in enumerate(episodes):
        first.setdefault(e, i)  # an episode's return = its first row's return; counted once
    ep_ids = list(first)
    ep_adv = ref_group_normalized(
        [returns[first[e]] for e in ep_ids], [tasks[first[e]] for e in ep_ids]
    )
    by_ep = dict(zip(ep_ids, ep_adv, strict=True))
    step = ref_group_normalized(returns, list(zip(tasks, anchors, strict=True)))
    return [by_ep[e] + omega * s for e, s in zip(episodes, step, strict=True)]


def test_gigpo_matches_reference():
    g = torch.Generator().manual_seed(7)
    for _ in range(15):
        s = int(torch.randint(1, 40, (1,), generator=g))
        episodes = torch.randint(0, 8, (s,), generator=g)
        tasks = episodes % 3 + 100  # each episode belongs to one task
        anchors = [f"obs{int(k)}" for k in torch.randint(0, 4, (s,), generator=g)]
        returns = torch.randint(0, 3, (s,), generator=g).float()
        returns[torch.rand(s, generator=g) < 0.1] = NAN
        got = gigpo_advantages(returns, episodes, tasks, anchors, step_weight=0.7).combined
        want = ref_gigpo(returns.tolist(), episodes.tolist(), tasks.tolist(), anchors, 0.7)
        assert got.tolist() == pytest.approx(want, abs=1e-5)
