"""Asynchronous rollouts with bounded staleness (``grpo.max_staleness``, ``rollout/ahead.py``):
step s is sampled with exactly the weights of version s - k, stale episodes are dropped and
counted, thread failures reach the trainer, and a GRPO run with k = 1 logs its staleness."""

from __future__ import annotations

import types

import pytest
import torch

from vlagent.algo_config import GRPOConfig
from vlagent.errors import ConfigError
from vlagent.rollout.ahead import AheadSampler, AheadSamplerError, split_stale, staleness_metrics
from vlagent.rollout.trajectory import Trajectory
from vlagent.train.outputs import read_metrics


def _sampler(lag: int, first: int, last: int, fail_at: int | None = None):
    trainer = torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        trainer.weight.fill_(float(first))  # the weight of version v is v
    twin = types.SimpleNamespace(model=torch.nn.Linear(1, 1, bias=False))

    def collect(policy, step, version):
        if step == fail_at:
            raise RuntimeError("env crashed")
        seen = float(policy.model.weight.detach()[0, 0])
        traj = Trajectory(f"task{step}", 0, 0, policy_version=version)
        return [traj], {"seen_weight": seen}, {"cursor": step + 1}

    return trainer, AheadSampler(collect, twin, trainer, first, last, lag)


@pytest.mark.parametrize("lag,first", [(1, 0), (2, 0), (2, 5)])
def test_step_s_is_sampled_with_the_weights_of_version_s_minus_k(lag, first):
    trainer, ahead = _sampler(lag, first, first + 6)
    try:
        for step in range(first, first + 6):
            batch = ahead.take(step, timeout_s=30)
            want = max(step - lag, first)
            assert batch.version == want and batch.trajectories[0].policy_version == want
            assert batch.stats["seen_weight"] == float(want)  # loaded that version's weights
            assert batch.cursor == {"cursor": step + 1}
            with torch.no_grad():
                trainer.weight.fill_(float(step + 1))  # the update: version step + 1
            ahead.publish(step + 1, trainer)
    finally:
        ahead.close()


def test_a_failure_in_the_thread_reaches_the_trainer():
    trainer, ahead = _sampler(1, 0, 5, fail_at=1)
    try:
        ahead.take(0, timeout_s=30)
        ahead.publish(1, trainer)
        with pytest.raises(AheadSamplerError, match="before step 1") as info:
            ahead.take(1, timeout_s=30)
        assert isinstance(info.value.__cause__, RuntimeError)
    finally:
        ahead.close()
    with pytest.raises(AheadSamplerError, match="closed"):
        ahead.take(2)


def test_stale_episodes_are_dropped_and_counted():
    trajs = [Trajectory(f"t{v}", 0, 0, policy_version=v) for v in (7, 6, 5, 4)]
    kept, dropped = split_stale(trajs, version=7, max_staleness=2)
    assert [t.policy_version for t in kept] == [7, 6, 5]
    assert [t.policy_version for t in dropped] == [4]
    m = staleness_metrics(kept, dropped, 7)
    assert m == {"staleness/mean": 1.0, "staleness/max": 2.0, "staleness/dropped": 1.0}


def test_config_rejects_recomputed_old_logprobs_with_staleness():
    with pytest.raises(ConfigError, match="grpo.recompute_old_logprobs"):
        GRPOConfig(max_staleness=1, recompute_old_logprobs=True)
    with pytest.raises(ConfigError, match="grpo.max_staleness"):
        GRPOConfig(max_staleness=-1)


def test_grpo_run_one_step_off(tmp_path, tiny_dir):
    """k = 1: the first step (version 0 both ways) equals the synchronous run's; later steps
    are one version stale, and every step trains."""
    from tests.vlagent.train.test_grpo_mechanics import _run

    _run(tmp_path, tiny_dir, "sync", [], steps=3)
    _, result = _run(tmp_path, tiny_dir, "ahead", ["grpo.max_staleness=1"], steps=3)
    assert result.steps == 3
    sync = read_metrics(tmp_path / "sync" / "metrics.jsonl", "grpo")
    ahead = read_metrics(tmp_path / "ahead" / "metrics.jsonl", "grpo")
    assert [r["staleness/max"] for r in ahead] == [0.0, 1.0, 1.0]
    assert all(r["staleness/dropped"] == 0.0 for r in ahead)
    assert ahead[0]["reward/mean"] == pytest.approx(sync[0]["reward/mean"], abs=1e-9)
    assert ahead[0]["loss"] == pytest.approx(sync[0]["loss"], abs=1e-6)
    assert "staleness/max" not in sync[0]
