"""Action-type and typed-text rewards (GUI-R1 / UI-R1), checked against GUI-R1's own numbers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rewards import Prediction, RewardSpec, RewardTarget, score
from rewards.actions import action_type_match, canonical_action, text_f1, token_f1
from rewards.types import RewardSpecError

FIXTURE = Path(__file__).parents[1] / "fixtures" / "gui_r1" / "text_f1.json"
CASES = json.loads(FIXTURE.read_text())["cases"]


@pytest.mark.parametrize(
    "case", CASES, ids=[f"{c['predicted']!r}-{c['expected']!r}" for c in CASES]
)
def test_token_f1_equals_gui_r1_reference(case):
    assert token_f1(case["predicted"], case["expected"]) == pytest.approx(case["f1"], abs=1e-12)


def test_fixture_covers_the_special_cases():
    values = {c["f1"] for c in CASES}
    assert {0.0, 0.5, 1.0} <= values and any(0.5 < v < 1 for v in values)


def test_text_f1_threshold_is_gui_r1s_verdict():
    assert text_f1("open the settings", "settings").value == 0.5
    assert text_f1("open the settings", "settings", threshold=0.5).value == 1.0
    assert text_f1("open the settings now", "settings", threshold=0.5).value == 0.0  # F1 0.4
    assert text_f1(None, "settings").value == 0.0
    assert text_f1("settings", None).value == 0.0  # the step types nothing: term does not apply
    with pytest.raises(RewardSpecError):
        text_f1("a", "a", threshold=-1)


def test_action_type_match_uses_aliases_and_needs_both_sides():
    assert canonical_action("LEFT_SINGLE") == "click"
    assert action_type_match("click", "click").value == 1.0
    assert action_type_match("Tap", "click").value == 1.0
    assert action_type_match("type", "click").value == 0.0
    assert action_type_match(None, "click").value == 0.0
    assert action_type_match("click", None).value == 0.0


def test_composite_reads_action_and_text_from_prediction_and_target():
    spec = RewardSpec.from_dict(
        {"action_type": 0.5, "text_f1": {"weight": 0.25, "threshold": 0.5}, "point_in_box": 1.0}
    )
    target = RewardTarget(box=(0.4, 0.4, 0.6, 0.6), action_type="type", text="new york")
    right = Prediction(point=(0.5, 0.5), action_type="type", text="New York City")
    wrong = Prediction(point=(0.5, 0.5), action_type="click", text="boston")
    assert score(spec, right, target).terms == {
        "action_type": 0.5,
        "text_f1": 0.25,
        "point_in_box": 1.0,
    }
    assert score(spec, wrong, target).terms == {
        "action_type": 0.0,
        "text_f1": 0.0,
        "point_in_box": 1.0,
    }
    # a bare box as ground truth still works (no action / text: those terms score 0)
    assert score(spec, right, (0.4, 0.4, 0.6, 0.6)).value == 1.0
