"""Tool-use rewards: hand-computed cases and properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from rewards import (
    RewardResult,
    RewardSpecError,
    ToolRewardConfig,
    curiosity_bonus,
    episode_reward,
    group_tool_rates,
    tool_bonus,
    tool_call_penalty,
    zoom_contains_target,
    zoom_evidence_iou,
)

TARGET = (0.25, 0.25, 0.5, 0.5)


def test_tool_bonus_is_paid_only_for_right_answers_with_a_tool_call():
    assert tool_bonus(True, 1, bonus=0.5).terms == {"tool_bonus": 0.5}
    assert tool_bonus(True, 3, bonus=0.5).value == 0.5
    assert tool_bonus(True, 0, bonus=0.5).value == 0.0
    assert tool_bonus(False, 2, bonus=0.5).value == 0.0
    assert tool_bonus(True, "2", bonus=0.5).value == 0.0  # a non-int count is 0 calls
    with pytest.raises(RewardSpecError, match="bonus"):
        tool_bonus(True, 1, bonus=math.nan)


def test_tool_call_penalty_by_hand():
    assert tool_call_penalty(0).value == 0.0
    assert tool_call_penalty(1).value == 0.0  # one free call
    assert tool_call_penalty(3, free_calls=1, per_call=0.25).value == -0.5
    assert tool_call_penalty(2, free_calls=0, per_call=0.25).terms == {"tool_call_penalty": -0.5}
    for junk in (-3, None, True, 2.5, "4"):
        assert tool_call_penalty(junk, free_calls=0).value == 0.0
    with pytest.raises(RewardSpecError, match="free_calls"):
        tool_call_penalty(2, free_calls=-1)
    with pytest.raises(RewardSpecError, match="per_call"):
        tool_call_penalty(2, per_call=-0.1)


def test_zoom_evidence_iou_by_hand():
    zooms = [(0.25, 0.25, 0.75, 0.5), (0.0, 0.0, 0.5, 0.5)]  # IoU 0.0625 / 0.125, 0.0625 / 0.25
    assert zoom_evidence_iou(zooms, TARGET).terms == {"zoom_iou": 0.5}
    assert zoom_evidence_iou(zooms, TARGET, mode="last").value == 0.25
    assert zoom_evidence_iou([TARGET], TARGET).value == 1.0
    assert zoom_evidence_iou([], TARGET).value == 0.0
    assert zoom_evidence_iou([(0.6, 0.6, 0.9, 0.9)], TARGET).value == 0.0
    assert zoom_evidence_iou([(0.5, 0.5, 0.2, 0.2), "junk", None], TARGET).value == 0.0
    assert zoom_evidence_iou([TARGET], (0.5, 0.5, 0.4, 0.4)).value == 0.0  # invalid target
    assert zoom_evidence_iou("not a list", TARGET).value == 0.0
    with pytest.raises(RewardSpecError, match="mode"):
        zoom_evidence_iou([TARGET], TARGET, mode="mean")


def test_zoom_contains_target_by_hand():
    assert zoom_contains_target([(0.0, 0.0, 1.0, 1.0)], TARGET).terms == {"zoom_contains": 1.0}
    assert zoom_contains_target([(0.0, 0.0, 0.375, 1.0)], TARGET).value == 0.5
    assert zoom_contains_target([(0.0, 0.0, 0.375, 0.375)], TARGET).value == 0.25
    zooms = [(0.0, 0.0, 1.0, 1.0), (0.0, 0.0, 0.375, 0.375)]
    assert zoom_contains_target(zooms, TARGET, mode="last").value == 0.25
    assert zoom_contains_target(zooms, TARGET, mode="max").value == 1.0


def test_curiosity_bonus_by_hand():
    assert curiosity_bonus(0.1, True, alpha=0.5, H=0.3).value == pytest.approx(0.1)
    assert curiosity_bonus(0.0, True, alpha=1.0, H=0.5).terms == {"curiosity": 0.5}
    assert curiosity_bonus(0.1, False, alpha=0.5, H=0.3).value == 0.0
    assert curiosity_bonus(0.3, True, alpha=0.5, H=0.3).value == 0.0
    assert curiosity_bonus(0.9, True, alpha=0.5, H=0.3).value == 0.0
    assert curiosity_bonus(math.nan, True).value == 0.0
    assert curiosity_bonus(-2.0, True, alpha=1.0, H=0.25).value == 0.25  # clipped to rate 0
    with pytest.raises(RewardSpecError, match="H"):
        curiosity_bonus(0.1, True, H=1.5)


def test_group_tool_rates_ragged_groups():
    rates = group_tool_rates([0, 2, 1, 0, 0, 5], ["a", "a", "b", "b", "b", 7])
    np.testing.assert_allclose(rates, [0.5, 0.5, 1 / 3, 1 / 3, 1 / 3, 1.0])
    with pytest.raises(RewardSpecError):
        group_tool_rates([1, 2], ["a"])


def test_episode_reward_by_hand():
    answer = RewardResult(1.1, {"point_in_box": 1.0, "format": 0.1})
    cfg = ToolRewardConfig(
        bonus=0.5, free_calls=1, per_call=0.1, evidence_weight=0.2, curiosity_alpha=0.5
    )
    zooms = [(0.0, 0.0, 0.375, 1.0)]
    out = episode_reward(answer, 3, zooms, TARGET, cfg, group_tool_rate=0.1)
    assert out.terms == pytest.approx(
        {
            "point_in_box": 1.0,
            "format": 0.1,
            "tool_bonus": 0.5,
            "tool_call_penalty": -0.2,  # 2 calls beyond the free one
            "zoom_evidence": 0.1,  # 0.2 * half the target inside the zoom
            "curiosity": 0.1,  # 0.5 * (0.3 - 0.1)
        }
    )
    assert out.value == pytest.approx(1.6)
    assert out.value == pytest.approx(sum(out.terms.values()))


def test_episode_reward_wrong_answer_gets_no_bonus_and_judges_correctness():
    answer = RewardResult(0.1, {"point_in_box": 0.0, "format": 0.1})
    out = episode_reward(answer, 1, [], TARGET, ToolRewardConfig())
    assert out.terms["tool_bonus"] == 0.0 and out.value == pytest.approx(0.1)
    forced = episode_reward(answer, 1, [], TARGET, ToolRewardConfig(bonus=0.3), correct=True)
    assert forced.terms["tool_bonus"] == 0.3
    bare = episode_reward(RewardResult(1.0), 0, [], TARGET, ToolRewardConfig(), correct=True)
    assert bare.terms == {"answer": 1.0, "tool_bonus": 0.0, "tool_call_penalty": 0.0}


def test_episode_reward_config_errors():
    answer = RewardResult(1.0, {"iou": 1.0})
    with pytest.raises(RewardSpecError, match="no term 'point_in_box'"):
        episode_reward(answer, 1, [], TARGET, ToolRewardConfig())
    with pytest.raises(RewardSpecError, match="group_tool_rate"):
        episode_reward(answer, 1, [], TARGET, ToolRewardConfig(curiosity_alpha=0.5), correct=True)
    with pytest.raises(RewardSpecError, match="clash"):
        episode_reward(RewardResult(1.0, {"tool_bonus": 1.0}), 1, [], TARGET, ToolRewardConfig())
    with pytest.raises(RewardSpecError, match="do not sum"):
        episode_reward(
            RewardResult(2.0, {"iou": 1.0}), 1, [], TARGET, ToolRewardConfig(), correct=True
        )
    for bad in (
        {"per_call": -1.0},
        {"free_calls": 1.5},
        {"evidence": "dice"},
        {"curiosity_H": 2.0},
    ):
        with pytest.raises(RewardSpecError):
            ToolRewardConfig(**bad)


boxes = st.tuples(*[st.floats(-0.5, 1.5) | st.just(math.nan)] * 4)


@given(st.lists(boxes, max_size=4), boxes, st.sampled_from(["max", "last"]))
def test_evidence_rewards_stay_in_unit_interval(zooms, target, mode):
    for fn in (zoom_evidence_iou, zoom_contains_target):
        assert 0.0 <= fn(zooms, target, mode).value <= 1.0


@given(
    st.integers(-5, 20),
    st.lists(boxes, max_size=3),
    st.floats(0.0, 1.0),
    st.booleans(),
    st.floats(-2.0, 2.0),
)
def test_episode_terms_sum_to_value(n_calls, zooms, rate, hit, weight):
    answer = RewardResult(float(hit) + 0.1, {"point_in_box": float(hit), "format": 0.1})
    cfg = ToolRewardConfig(evidence_weight=weight, curiosity_alpha=0.5)
    out = episode_reward(answer, n_calls, zooms, TARGET, cfg, group_tool_rate=rate)
    assert out.value == pytest.approx(sum(out.terms.values()))
    assert out.terms["tool_bonus"] == (0.2 if hit and n_calls >= 1 else 0.0)


def test_invalid_call_costs_each_failed_call():
    from rewards import RewardResult
    from rewards.tool_use import ToolRewardConfig, episode_reward

    answer = RewardResult(1.0, {"point_in_box": 1.0})
    cfg = ToolRewardConfig(invalid_call=0.1)
    out = episode_reward(answer, 1, [], (0, 0, 1, 1), cfg, n_tool_errors=3)
    assert out.terms["tool_error_penalty"] == pytest.approx(-0.3)
    assert out.value == pytest.approx(sum(out.terms.values()))
    plain = episode_reward(answer, 1, [], (0, 0, 1, 1), ToolRewardConfig(), n_tool_errors=3)
    assert "tool_error_penalty" not in plain.terms
    with pytest.raises(Exception, match="invalid_call"):
        ToolRewardConfig(invalid_call=-1.0)
