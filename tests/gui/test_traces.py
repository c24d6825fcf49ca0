"""Synthetic zoom traces: the zoom holds the target, replaying the answer lands in the target."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from gui.grounding import SyntheticSource
from gui.grounding.traces import TraceConfig, TraceError, zoom_trace
from perception_tools.geometry import CoordSpace, ImageSize, intersection_area, point_in_box
from perception_tools.tools import TOOLS, ToolContext

_CALL_RE = re.compile(r"<tool_call>(.*)</tool_call>")
BUDGET = 448 * 252


def _contains(outer, inner, tol=1e-9) -> bool:
    return (
        outer[0] <= inner[0] + tol
        and outer[1] <= inner[1] + tol
        and outer[2] >= inner[2] - tol
        and outer[3] >= inner[3] - tol
    )


def _replay(sample, steps, space):
    """Run every call of ``steps`` through the real tools; returns the final context."""
    ctx = ToolContext.start(space, ImageSize(*sample.image_size), pixel_budget=BUDGET)
    images = [sample.image]
    for step in steps:
        if step.tool_call is None:
            continue
        assert json.loads(_CALL_RE.fullmatch(step.text).group(1)) == step.tool_call
        result = TOOLS[step.tool_call["name"]](images, step.tool_call["arguments"], ctx)
        assert result.error is None and result.crop == step.result.crop
        np.testing.assert_array_equal(result.image, step.result.image)
        ctx = ctx.observe(result)
        images.append(result.image)
    return ctx


@pytest.mark.parametrize("space", [CoordSpace.K1000, CoordSpace.RESIZED_PX])
@pytest.mark.parametrize("answer_space", ["crop", "original"])
@pytest.mark.parametrize("level", ["hires_tiny_small", "hires_tiny", "widgets"])
def test_zoom_holds_the_target_and_the_answer_maps_back_inside(level, space, answer_space):
    source = SyntheticSource(level)
    cfg = TraceConfig(p_wrong_first=0.5, answer_space=answer_space)
    rng = np.random.default_rng(7)
    for seed in range(4):
        sample = source.sample(seed)
        ctx = ToolContext.start(space, ImageSize(*sample.image_size), pixel_budget=BUDGET)
        steps = zoom_trace(sample, ctx, rng, cfg)
        zooms, answer = steps[:-1], steps[-1]
        assert 1 <= len(zooms) <= 2 and all(s.tool_call["name"] == "zoom_in" for s in zooms)
        target = sample.target_box_norm
        assert _contains(zooms[-1].result.crop.box_in_original_norm, target)
        if len(zooms) == 2:  # a miss first, then a zoom re-read on the original
            assert intersection_area(zooms[0].result.crop.box_in_original_norm, target) == 0.0
            assert zooms[1].tool_call["arguments"]["source"] == "original"
        assert json.loads(answer.text) == {"point_2d": list(answer.answer_point)}
        assert all(isinstance(v, int) for v in answer.answer_point)
        final = _replay(sample, steps, space)
        expected_obs = final.n_observations - 1 if answer_space == "crop" else 0
        assert answer.answer_observation == expected_obs
        back = final.to_original_norm(answer.answer_point, answer.answer_observation)
        assert back == pytest.approx(answer.answer_point_norm)
        assert point_in_box(back, target), (level, seed, back, target)


def test_crop_answer_by_hand():
    """The answer on the zoom, mapped back with its CropMap, equals the original coordinates."""
    sample = SyntheticSource("hires_tiny_small").sample(3)
    ctx = ToolContext.start("k1000", ImageSize(*sample.image_size), pixel_budget=BUDGET)
    steps = zoom_trace(sample, ctx, np.random.default_rng(0), TraceConfig(p_wrong_first=0.0))
    (zoom, answer) = steps
    x0, y0, x1, y1 = zoom.result.crop.box_in_original_norm
    px, py = answer.answer_point
    expected = (x0 + px / 1000 * (x1 - x0), y0 + py / 1000 * (y1 - y0))
    assert answer.answer_point_norm == pytest.approx(expected)


def test_wrong_first_probability_and_determinism():
    sample = SyntheticSource("hires_tiny_small").sample(1)
    ctx = ToolContext.start("k1000", ImageSize(*sample.image_size), pixel_budget=BUDGET)

    def texts(p: float, seed: int) -> list[str]:
        steps = zoom_trace(sample, ctx, np.random.default_rng(seed), TraceConfig(p_wrong_first=p))
        return [s.text for s in steps]

    assert len(texts(0.0, 0)) == 2 and len(texts(1.0, 0)) == 3
    assert texts(0.5, 11) == texts(0.5, 11)
    assert len({tuple(texts(0.5, s)) for s in range(6)}) > 1  # random margins and jitter
    first = json.loads(_CALL_RE.fullmatch(texts(0.0, 0)[0]).group(1))
    assert set(first["arguments"]) == {"bbox_2d"} and len(first["arguments"]["bbox_2d"]) == 4


def test_bad_config_and_context_raise():
    sample = SyntheticSource("basic").sample(0)
    ctx = ToolContext.start("k1000", ImageSize(224, 224))
    for bad in (
        {"zoom_scale": (0.5, 2.0)},
        {"p_wrong_first": 1.5},
        {"answer_space": "zoom"},
        {"answer_jitter": 1.0},
    ):
        with pytest.raises(TraceError):
            TraceConfig(**bad)
    with pytest.raises(TraceError, match="image is"):
        zoom_trace(
            sample, ToolContext.start("k1000", ImageSize(448, 448)), np.random.default_rng(0)
        )
    zoomed = ctx.observe(TOOLS["zoom_in"]([sample.image], {"bbox_2d": [0, 0, 500, 500]}, ctx))
    with pytest.raises(TraceError, match="only the original"):
        zoom_trace(sample, zoomed, np.random.default_rng(0))
