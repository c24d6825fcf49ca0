"""``task.answer_format`` uitars / qwen_box through the grounding world on the tiny model:
demonstrations render, tokenize, decode and parse back onto their target; one SFT step trains;
the policy's own (untrained, malformed) text is read without breaking the rollout."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from vlagent.codec import Answer
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.runner import group_specs
from vlagent.train.outputs import read_metrics
from vlagent.train.sft import demonstrations, run_sft
from vlagent.worlds import make_world

QUIET = ["eval.every=0", "run.progress=false", "run.samples_every=0", "run.checkpoint_every=0"]


@pytest.mark.parametrize(
    "fmt, prefix",
    # the tiny tokenizer, like Qwen's, has the box markers as special tokens: decoding drops them
    [("uitars", "Action: click(start_box='("), ("qwen_box", "target(")],
)
def test_demonstrations_round_trip_through_the_world(tiny_dir, fmt, prefix):
    policy = load_policy(tiny_dir)
    cfg = load_config(None, [f"task.answer_format={fmt}", *QUIET])
    world = make_world(cfg, policy)
    ids = world.task_ids("demo", 0, 3)
    trajs = demonstrations(policy, world, ids)
    assert len(trajs) == 3  # a demonstration that did not parse onto its target is dropped
    for t in trajs:
        turn = t.turns[0]
        assert turn.text.startswith(prefix), turn.text
        answer = t.extras["answer"]
        assert isinstance(answer, Answer), answer
        x0, y0, x1, y1 = world.sample(t.task_id).target_box_norm
        # qwen3_vl speaks thousandths: the centre comes back within one unit
        assert answer.point_norm == pytest.approx(((x0 + x1) / 2, (y0 + y1) / 2), abs=1.01e-3)
        assert turn.action.get("action_type") == ("click" if fmt == "uitars" else None)
        assert t.success and t.reward > 0


def test_uitars_one_sft_step_then_rollout(tiny_dir, tmp_path):
    out = tmp_path / "run"
    cfg = load_config(
        None,
        [
            f"model.path={tiny_dir}",
            "model.build_tiny=false",
            f"run.out_dir={out}",
            "recipe=sft",
            "sft.steps=1",
            "sft.batch_size=2",
            "task.answer_format=uitars",
            *QUIET,
        ],
    )
    result = run_sft(cfg)
    assert result.steps == 1
    rows = [r for r in read_metrics(Path(out) / "metrics.jsonl") if "loss" in r]
    assert rows and all(math.isfinite(r["loss"]) and r["loss"] > 0 for r in rows)
    policy = load_policy(result.final_dir)
    world = make_world(cfg, policy)
    trajs = world.episodes(
        policy,
        "val",
        group_specs(world.task_ids("val", 0, 2), 2),
        24,
        seed=0,
    )
    assert len(trajs) == 4
    for t in trajs:
        assert t.error is None and len(t.turns) == 1, t.error
        action = t.turns[0].action
        assert ("parse_error" in action) != ("point" in action or "box" in action), action
        assert math.isfinite(t.reward)
