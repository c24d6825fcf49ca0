"""Rewards that claim a paper's definition, against numbers from that paper's own code.

Each fixture under ``tests/fixtures/`` records the repository, file, commit and function that
produced its values (``tests/fixtures/README.md``). Cases where ours deliberately differs carry
``ours`` and ``ours_differs`` (why).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from rewards import (
    RewardResult,
    ToolRewardConfig,
    curiosity_bonus,
    episode_reward,
    gaussian_mass_ratio,
    gaussian_plane,
    gaussian_point,
    group_tool_rates,
    point_in_box,
    tool_bonus,
    tool_call_penalty,
)

FIXTURES = Path(__file__).parents[1] / "fixtures"
ROUNDED = 5e-4 + 1e-9  # GUI-G2's values are rounded to 3 decimals


def _load(*parts: str) -> dict[str, Any]:
    return json.loads((FIXTURES.joinpath(*parts)).read_text())


GUI_G2 = _load("gui_g2", "gaussian_rewards.json")
UI_R1 = _load("ui_r1", "point_in_box.json")
GUI_R1 = _load("gui_r1", "point_in_box.json")
PIXEL_REASONER = _load("pixel_reasoner", "verl_tool_penalties.json")
DEEPEYES = _load("deepeyes", "tool_reward.json")


def _norm(coords: list[float], size: list[int]) -> tuple[float, ...]:
    """Pixels -> normalized, x by the width and y by the height."""
    return tuple(v / size[i % 2] for i, v in enumerate(coords))


def _ids(cases: list[dict[str, Any]]) -> list[str]:
    return [c["name"] for c in cases]


def test_fixtures_name_their_source() -> None:
    for fixture in (GUI_G2, UI_R1, GUI_R1, PIXEL_REASONER, DEEPEYES):
        source = fixture["source"]
        assert source["repository"].startswith("https://github.com/")
        assert len(source["commit"]) == 40 and source["path"]
    assert GUI_G2["source"]["parameters"]["alpha"] == 0.5
    assert len(GUI_G2["plane"]) + len(GUI_G2["point"]) >= 20


# ------------------------------------------------------------------------------------ GUI-G2
@pytest.mark.parametrize("case", GUI_G2["plane"], ids=_ids(GUI_G2["plane"]))
def test_gaussian_plane_matches_gui_g2(case: dict[str, Any]) -> None:
    size, alpha = GUI_G2["image_size"], GUI_G2["source"]["parameters"]["alpha"]
    pred, gt = _norm(case["pred_box_px"], size), _norm(case["gt_box_px"], size)
    ours = gaussian_plane(pred, gt, sigma_scale=alpha).value
    if "ours_differs" in case:
        assert ours == case["ours"], case["ours_differs"]
    else:
        assert ours == pytest.approx(case["reference"], abs=ROUNDED)


@pytest.mark.parametrize("case", GUI_G2["point"], ids=_ids(GUI_G2["point"]))
def test_gaussian_point_matches_gui_g2(case: dict[str, Any]) -> None:
    size, alpha = GUI_G2["image_size"], GUI_G2["source"]["parameters"]["alpha"]
    if "pred_point_px" in case:
        point = _norm(case["pred_point_px"], size)
    else:  # the reference scores the centre of the predicted box
        x0, y0, x1, y1 = _norm(case["pred_box_px"], size)
        point = ((x0 + x1) / 2, (y0 + y1) / 2)
    ours = gaussian_point(point, _norm(case["gt_box_px"], size), sigma_scale=alpha).value
    if "ours_differs" in case:
        assert ours == case["ours"], case["ours_differs"]
    else:
        assert ours == pytest.approx(case["reference"], abs=ROUNDED)


def test_the_mass_ratio_is_not_gui_g2s_reward() -> None:
    """Ours saturates where the paper's falls: it must never be passed off as the paper's."""
    size = GUI_G2["image_size"]
    cases = {c["name"]: c for c in GUI_G2["plane"]}
    for name in ("whole_screen", "double_size_same_centre"):
        case = cases[name]
        pred, gt = _norm(case["pred_box_px"], size), _norm(case["gt_box_px"], size)
        assert gaussian_mass_ratio(pred, gt).value == 1.0
        assert case["reference"] < 0.9


def test_gui_g2_eps_is_why_ours_has_none() -> None:
    """The reference fed normalized boxes scores identical boxes above 1 (its eps dominates)."""
    note = GUI_G2["normalized_input_note"]
    assert note["reference"] > 1.0
    assert gaussian_plane(note["gt_box"], note["gt_box"]).value == 1.0


# ------------------------------------------------------------------------- UI-R1 / GUI-R1
@pytest.mark.parametrize("case", UI_R1["cases"], ids=_ids(UI_R1["cases"]))
def test_point_in_box_matches_ui_r1(case: dict[str, Any]) -> None:
    size = UI_R1["image_size"]
    ours = point_in_box(_norm(case["point_px"], size), _norm(case["gt_box_px"], size)).value
    assert ours == case["reference"]


@pytest.mark.parametrize("case", GUI_R1["cases"], ids=_ids(GUI_R1["cases"]))
def test_point_in_box_matches_gui_r1_off_the_edges(case: dict[str, Any]) -> None:
    size = GUI_R1["image_size"]
    (x, y), (x0, y0, x1, y1) = case["point_px"], case["gt_box_px"]
    ours = point_in_box(_norm(case["point_px"], size), _norm(case["gt_box_px"], size)).value
    if x in (x0, x1) or y in (y0, y1):  # GUI-R1 excludes the edges, we include them
        assert (ours, case["reference"]) == (1.0, 0.0)
    else:
        assert ours == case["reference"]


def test_gui_r1_fixture_has_edge_and_interior_cases() -> None:
    on_edge = [c for c in GUI_R1["cases"] if c["point_px"][0] in (800, 960)]
    assert on_edge and any(c["reference"] == 1.0 for c in GUI_R1["cases"])


# ---------------------------------------------------------------- Pixel Reasoner (verl-tool)
def test_pixel_reasoner_terms_match_verl_tool() -> None:
    episodes = PIXEL_REASONER["episodes"]
    p = PIXEL_REASONER["source"]["parameters"]
    calls = [sum(e["valid_actions"]) for e in episodes]
    rates = group_tool_rates(calls, [e["group"] for e in episodes])
    cfg = ToolRewardConfig(
        bonus=0.0,
        free_calls=p["action_redundancy_limit"],
        per_call=p["beta"],
        curiosity_alpha=p["alpha"],
        curiosity_H=p["group_tool_call_rate_lower_bound"],
    )
    for e, n, rate in zip(episodes, calls, rates, strict=True):
        assert rate == pytest.approx(e["group_tool_call_rate"], abs=1e-12)
        curiosity = curiosity_bonus(rate, n >= 1, cfg.curiosity_alpha, cfg.curiosity_H).value
        assert curiosity == pytest.approx(e["curiousity_penalty"], abs=1e-12)
        penalty = tool_call_penalty(n, cfg.free_calls, cfg.per_call).value
        assert penalty == pytest.approx(e["action_redundancy_penalty"], abs=1e-12)
        answer = RewardResult(e["answer_score"], {"accuracy": e["answer_score"]})
        total = episode_reward(
            answer, n, [], None, cfg, correct=e["answer_score"] > 0, group_tool_rate=rate
        )
        assert total.value == pytest.approx(e["score"], abs=1e-12)


def test_pixel_reasoner_fixture_exercises_every_branch() -> None:
    episodes = PIXEL_REASONER["episodes"]
    assert any(e["curiousity_penalty"] > 0 for e in episodes)
    assert any(e["action_redundancy_penalty"] < 0 for e in episodes)
    assert any(sum(e["valid_actions"]) and e["curiousity_penalty"] == 0 for e in episodes)
    assert any(False in e["valid_actions"] for e in episodes)  # invalid calls do not count


# ----------------------------------------------------------------------------------- DeepEyes
@pytest.mark.parametrize("case", DEEPEYES["cases"])
def test_tool_bonus_reproduces_deepeyes(case: dict[str, Any]) -> None:
    """DeepEyes' reward = our answer terms weighted 0.8 / 0.2 plus our tool bonus at 1.2."""
    acc = float(case["judge_verdict"])
    fmt = -1.0 if case["format_error"] else 0.0
    n = case["n_images_in_response"]
    answer = RewardResult(0.8 * acc + 0.2 * fmt, {"accuracy": 0.8 * acc, "format": 0.2 * fmt})
    cfg = ToolRewardConfig(bonus=1.2, per_call=0.0)
    total = episode_reward(answer, n, [], None, cfg, correct=acc > 0.5)
    assert total.value == pytest.approx(case["reference"], abs=1e-12)
    assert tool_bonus(acc > 0.5, n, 1.2).value == pytest.approx(1.2 if acc and n else 0.0)
