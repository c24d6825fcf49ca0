"""Staged reward weights and custom reward functions, as pure functions."""

from __future__ import annotations

import math
import sys
import types

import pytest

from rewards import Prediction, RewardSpec, RewardTarget, parse_stages, score, spec_at
from rewards.custom import call_reward, load_reward_fn
from rewards.types import RewardResult, RewardSpecError

BASE = RewardSpec.from_dict({"point_in_box": 1.0, "format": 0.1, "iou": 0.5})


def test_stage_applies_below_its_step_then_the_next_then_base():
    stages = parse_stages(
        [
            {"until_step": 10, "weights": {"format": 1.0, "point_in_box": 0.0}},
            {"until_step": 20, "weights": {"format": 0.5}},
        ],
        BASE,
    )

    def weights(step):
        return {t.name: t.weight for t in spec_at(BASE, stages, step).terms}

    assert weights(0) == weights(9) == {"point_in_box": 0.0, "format": 1.0, "iou": 0.5}
    assert weights(10) == weights(19) == {"point_in_box": 1.0, "format": 0.5, "iou": 0.5}
    assert weights(20) == weights(1000) == {"point_in_box": 1.0, "format": 0.1, "iou": 0.5}
    assert spec_at(BASE, (), 0) is BASE


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ([{"until_step": 0, "weights": {"format": 1}}], "until_step must be an int above 0"),
        (
            [{"until_step": 5, "weights": {"format": 1}}, {"until_step": 5, "weights": {"iou": 1}}],
            "stage 1: until_step must be an int above 5",
        ),
        ([{"until_step": 5, "weights": {"giou": 1}}], r"terms \['giou'\] are not in the reward"),
        ([{"until_step": 5, "weights": {"format": math.nan}}], "weight of 'format' must be finite"),
        ([{"until_step": 5}], "expected {until_step"),
        ([{"until_step": 5, "weights": {}}], "non-empty mapping"),
    ],
)
def test_bad_stages_name_the_stage_and_the_problem(raw, message):
    with pytest.raises(RewardSpecError, match=message):
        parse_stages(raw, BASE)


@pytest.fixture
def module(monkeypatch):
    mod = types.ModuleType("vlagent_test_custom_rewards")
    mod.half = lambda prediction, target, k=1.0: k * 0.5
    mod.result = lambda prediction, target: RewardResult(0.25)
    mod.boom = lambda prediction, target: 1 / 0
    mod.nan = lambda prediction, target: math.nan
    mod.flag = lambda prediction, target: True
    mod.reads = lambda prediction, target: float(
        prediction.completion == "hi" and target.sample_id == "s:1"
    )
    mod.not_callable = 3
    monkeypatch.setitem(sys.modules, mod.__name__, mod)
    return mod.__name__


def test_call_reward_values_and_failures(module):
    p, t = Prediction(completion="hi"), RewardTarget(sample_id="s:1")
    assert call_reward(load_reward_fn(f"{module}:half"), p, t, {"k": 4.0}) == (2.0, None)
    assert call_reward(load_reward_fn(f"{module}:result"), p, t, {}) == (0.25, None)
    assert call_reward(load_reward_fn(f"{module}:reads"), p, t, {}) == (1.0, None)
    value, why = call_reward(load_reward_fn(f"{module}:boom"), p, t, {})
    assert value == 0.0 and why.startswith("raised ZeroDivisionError")
    assert call_reward(load_reward_fn(f"{module}:nan"), p, t, {})[1].startswith("returned nan")
    assert "returned bool" in call_reward(load_reward_fn(f"{module}:flag"), p, t, {})[1]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no_colon_here", "expected an import path"),
        ("a b:c", "expected an import path"),
        ("vlagent_no_such_module_q:f", "cannot import module"),
        ("{module}:missing", "has no 'missing'"),
        ("{module}:not_callable", "is not callable"),
    ],
)
def test_load_reward_fn_errors_name_the_path(module, path, message):
    path = path.format(module=module)
    with pytest.raises(RewardSpecError, match=message):
        load_reward_fn(path)


def test_custom_terms_in_a_spec_weighted_logged_by_name_errors_listed(module):
    spec = RewardSpec.from_dict(
        {
            "point_in_box": 1.0,
            f"{module}:half": 2.0,
            "mine": {"weight": 0.5, "fn": f"{module}:half", "k": 4.0},
            f"{module}:boom": 1.0,
        }
    )
    out = score(spec, Prediction(point=(0.5, 0.5)), RewardTarget(box=(0, 0, 1, 1), sample_id="x"))
    assert out.terms == {"point_in_box": 1.0, "half": 1.0, "mine": 1.0, "boom": 0.0}
    assert out.value == 3.0
    assert out.errors == ("boom: raised ZeroDivisionError: division by zero",)
