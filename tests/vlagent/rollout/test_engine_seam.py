"""The engine seam's wiring: ``grpo.engine`` validation and ``run_episodes(engine=...)``."""

from __future__ import annotations

import pytest

from vlagent.algo_config import GRPOConfig
from vlagent.errors import ConfigError
from vlagent.rollout.engines import EngineError, HFEngine, RolloutEngine, make_engine


def test_grpo_engine_config_is_validated():
    assert GRPOConfig().engine == "hf"
    assert GRPOConfig(engine="vllm").vllm_python == ".venv-vllm/bin/python"
    with pytest.raises(ConfigError, match="grpo.engine"):
        GRPOConfig(engine="sglang")
    with pytest.raises(ConfigError, match="grpo.max_staleness"):
        GRPOConfig(engine="vllm", max_staleness=1)
    with pytest.raises(ConfigError, match="grpo.vllm_python"):
        GRPOConfig(engine="vllm", vllm_python=" ")


def test_make_engine_names_the_known_engines():
    with pytest.raises(EngineError, match="hf, vllm"):
        make_engine("sglang", policy=None)


class RecordingEngine:
    """Answers every turn with one fixed token and records the calls (seam test only)."""

    name = "recording"

    def __init__(self, token: int) -> None:
        self.token = token
        self.calls: list[dict] = []

    def sample_turns(self, segments, max_new, *, temperature=1.0, greedy=False, seed=None):
        self.calls.append(
            {"n": len(segments), "max_new": list(max_new), "temperature": temperature,
             "greedy": greedy, "seed": seed}
        )  # fmt: skip
        return [([self.token], [-0.5], False) for _ in segments]

    def push_weights(self, policy, version):
        return None

    def sleep(self):
        return None

    def wake_up(self):
        return None

    def close(self):
        return None


def test_run_episodes_samples_with_the_given_engine(tiny_dir):
    from vlagent.config import load_config
    from vlagent.models.loading import load_policy
    from vlagent.rollout.runner import group_specs
    from vlagent.worlds import make_world

    cfg = load_config(None, [f"model.path={tiny_dir}", "model.build_tiny=false"])
    policy = load_policy(tiny_dir)
    world = make_world(cfg, policy)
    engine = RecordingEngine(token=int(policy.tokenizer.convert_tokens_to_ids("a")))
    assert isinstance(engine, RolloutEngine) and isinstance(HFEngine(policy), RolloutEngine)
    specs = group_specs([0, 1], 2, seeds=0)
    trajs = world.episodes(
        policy, "train", specs, 4, temperature=0.9, seed=5, policy_version=3, engine=engine
    )
    assert engine.calls and engine.calls[0]["n"] == 4
    assert engine.calls[0]["temperature"] == 0.9 and engine.calls[0]["seed"] == 5
    for t in trajs:
        assert t.policy_version == 3
        first = t.turns[0]
        seg = t.segments[first.segment]
        assert seg.ids[first.start : first.end] == [engine.token]
        assert seg.logprobs[first.start : first.end] == [-0.5]
