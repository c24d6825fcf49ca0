"""Visual tools: crop maps, crop planning, zoom sizes, argument fuzzing and schemas."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perception_tools.crop import MARK_RGB, CropMap, plan_crop, zoom_size
from perception_tools.geometry import CoordSpace, Frame, ImageSize, smart_resize
from perception_tools.tools import (
    TOOLS,
    ToolContext,
    ToolError,
    ToolResult,
    call_tool,
    render_tool_prompt,
    tool_schemas,
)

unit = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def norm_boxes(draw: st.DrawFn, min_side: float = 1e-3) -> tuple[float, float, float, float]:
    x0, y0 = draw(st.floats(0.0, 1.0 - min_side)), draw(st.floats(0.0, 1.0 - min_side))
    x1 = draw(st.floats(x0 + min_side, 1.0))
    y1 = draw(st.floats(y0 + min_side, 1.0))
    return x0, y0, x1, y1


def _image(width: int, height: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (height, width, 3), dtype=np.uint8)


# ------------------------------------------------------------------------------ CropMap
@given(norm_boxes(), unit, unit)
def test_point_in_zoom_maps_back_inside_the_zoom_box(box, x, y):
    crop = CropMap(box)
    ox, oy = crop.to_original((x, y))
    assert box[0] - 1e-12 <= ox <= box[2] + 1e-12 and box[1] - 1e-12 <= oy <= box[3] + 1e-12
    bx, by = crop.from_original((ox, oy))
    assert bx == pytest.approx(x, abs=1e-9) and by == pytest.approx(y, abs=1e-9)


@given(norm_boxes(), norm_boxes(), unit, unit)
def test_composing_crops_equals_mapping_through_both(outer, inner, x, y):
    composed = CropMap(outer).compose(CropMap(inner))
    nested = CropMap(outer).to_original(CropMap(inner).to_original((x, y)))
    assert composed.to_original((x, y)) == pytest.approx(nested, abs=1e-12)
    assert composed.box_in_original_norm == pytest.approx(
        CropMap(outer).to_original(inner), abs=1e-12
    )


def test_crop_map_by_hand():
    crop = CropMap((0.5, 0.0, 1.0, 0.5))
    assert crop.to_original((0.5, 0.5)) == (0.75, 0.25)
    assert crop.to_original((0.0, 0.0, 1.0, 1.0)) == (0.5, 0.0, 1.0, 0.5)
    assert crop.compose(CropMap((0.5, 0.5, 1.0, 1.0))).box_in_original_norm == (
        0.75,
        0.25,
        1.0,
        0.5,
    )


# ------------------------------------------------------------------------ crop planning
def test_plan_crop_min_side_by_hand():
    size = ImageSize(1000, 1000)
    assert plan_crop((0.5, 0.5, 0.51, 0.51), size, 28, 50.0) == (491, 491, 519, 519)
    assert plan_crop((0.0, 0.0, 0.005, 0.005), size, 28, 50.0) == (0, 0, 28, 28)  # shifted in
    assert plan_crop((0.995, 0.995, 1.0, 1.0), size, 28, 50.0) == (972, 972, 1000, 1000)
    assert plan_crop((0.2, 0.2, 0.4, 0.5), ImageSize(20, 10), 28, 50.0) == (0, 0, 20, 10)


def test_plan_crop_aspect_by_hand():
    # 800 x 1 px strip: the short side grows to 800 / 50 = 16 px around y = 500.5.
    assert plan_crop((0.1, 0.5, 0.9, 0.501), ImageSize(1000, 1000), 1, 50.0) == (
        100,
        492,
        900,
        509,
    )
    # A 1 x 600 px column with max aspect 4 becomes 150 px wide.
    assert plan_crop((0.5, 0.2, 0.501, 0.8), ImageSize(1000, 1000), 1, 4.0) == (
        425,
        200,
        576,
        800,
    )


@given(norm_boxes(min_side=1e-4), st.integers(1, 64), st.floats(1.0, 100.0))
def test_plan_crop_contains_box_and_meets_bounds(box, min_side, max_aspect):
    size = ImageSize(640, 360)
    x0, y0, x1, y1 = plan_crop(box, size, min_side, max_aspect)
    assert 0 <= x0 < x1 <= 640 and 0 <= y0 < y1 <= 360
    assert x0 <= box[0] * 640 + 1e-6 and x1 >= box[2] * 640 - 1e-6
    assert y0 <= box[1] * 360 + 1e-6 and y1 >= box[3] * 360 - 1e-6
    assert x1 - x0 >= min(min_side, 640) and y1 - y0 >= min(min_side, 360)
    w, h = x1 - x0, y1 - y0
    if w < 640 and h < 360:  # the image did not cap the growth
        assert max(w, h) / min(w, h) <= max_aspect + 2  # +2: rounding out adds up to 2 px


@given(st.integers(1, 3000), st.integers(1, 3000), st.sampled_from([28, 32]), st.integers(4, 2000))
def test_zoom_size_is_factor_multiple_within_budget(width, height, factor, budget_patches):
    budget = budget_patches * factor * factor
    out_w, out_h = zoom_size(width, height, budget, factor)
    assert out_w % factor == 0 and out_h % factor == 0
    assert out_w * out_h <= budget
    if max(width, height) / min(width, height) <= 4 and budget_patches >= 64:
        assert out_w * out_h >= 0.6 * budget
        # The processor (smart_resize with max_pixels = budget) leaves the zoomed view as is.
        assert smart_resize(out_h, out_w, factor, factor * factor, budget) == (out_h, out_w)


# ---------------------------------------------------------------------------- zoom tool
def test_answer_on_zoomed_view_maps_back_by_hand():
    image = _image(1000, 500)
    ctx = ToolContext.start(CoordSpace.K1000, ImageSize(1000, 500), pixel_budget=448 * 252)
    result = TOOLS["zoom_in"]([image], {"bbox_2d": [500, 0, 1000, 500]}, ctx)
    assert result.error is None
    assert result.crop.box_in_original_norm == (0.5, 0.0, 1.0, 0.5)  # 500x250 px region
    assert result.text.startswith("Zoomed into [500, 0, 1000, 500] of observation_0")
    ctx = ctx.observe(result)
    # {"point_2d": [500, 500]} on the zoom is its centre: original (750, 125) px.
    assert ctx.to_original_norm((500, 500)) == (0.75, 0.25)
    # Qwen2.5-VL speaks pixels of the resized view: the zoom is 448x224 and kept as is.
    ctx_px = ToolContext.start(CoordSpace.RESIZED_PX, ImageSize(1000, 500), pixel_budget=448 * 252)
    assert ctx_px.frames[0].resized == ImageSize(448, 224)
    result = TOOLS["zoom_in"]([image], {"bbox_2d": [224, 0, 448, 112]}, ctx_px)
    assert result.crop.box_in_original_norm == (0.5, 0.0, 1.0, 0.5)
    ctx_px = ctx_px.observe(result)
    assert ctx_px.frames[1] == Frame(ImageSize(448, 224), ImageSize(448, 224))
    assert ctx_px.to_original_norm((224, 112)) == (0.75, 0.25)


def test_zoom_is_upscaled_to_the_budget_in_factor_multiples():
    ctx = ToolContext.start("k1000", ImageSize(2560, 1440), pixel_budget=448 * 252, factor=32)
    result = TOOLS["zoom_in"]([_image(2560, 1440)], {"bbox_2d": [100, 100, 120, 115]}, ctx)
    h, w, _ = result.image.shape
    assert (w % 32, h % 32) == (0, 0)
    assert 0.6 * 448 * 252 <= w * h <= 448 * 252
    x0, y0, x1, y1 = result.crop.box_in_original_norm
    # 51.2 x 21.6 px grows to 28 px tall around its centre (140.8..168.8), rounded out: 52 x 29.
    assert (round((x1 - x0) * 2560), round((y1 - y0) * 1440)) == (52, 29)
    assert abs(w / h - 52 / 29) < 0.25


def test_zoom_crops_the_original_not_the_observation():
    original = ((np.indices((400, 400)).sum(0) % 2) * 255).astype(np.uint8)[..., None].repeat(3, 2)
    ctx = ToolContext.start("k1000", ImageSize(400, 400), pixel_budget=28 * 28, min_side_px=1)
    black = np.zeros((224, 224, 3), np.uint8)  # stands for a downscaled earlier observation
    ctx = ctx.observe(ToolResult(black, "", crop=CropMap((0.0, 0.0, 0.5, 0.5))))
    args = {"bbox_2d": [0.0, 0.0, 0.14, 0.14], "coords": "norm", "source": "observation_1"}
    result = TOOLS["zoom_in"]([original, black], args, ctx)
    assert result.crop.box_in_original_norm == (0.0, 0.0, 0.07, 0.07)  # 28 px of the original
    np.testing.assert_array_equal(result.image, original[:28, :28])


@settings(max_examples=30, deadline=None)
@given(norm_boxes(min_side=0.02))
def test_zoom_of_zoom_equals_one_zoom_of_the_composed_box(inner):
    original = _image(320, 200, seed=1)
    ctx = ToolContext.start("k1000", ImageSize(320, 200), pixel_budget=56 * 56 * 4, min_side_px=8)
    first = TOOLS["zoom_in"]([original], {"bbox_2d": [100, 200, 700, 900]}, ctx)
    ctx2 = ctx.observe(first)
    args = {"bbox_2d": list(inner), "coords": "norm"}
    second = TOOLS["zoom_in"]([original, first.image], args, ctx2)
    composed = first.crop.to_original(inner)
    direct = TOOLS["zoom_in"]([original], {"bbox_2d": list(composed), "coords": "norm"}, ctx)
    assert second.crop == direct.crop
    np.testing.assert_array_equal(second.image, direct.image)


# --------------------------------------------------------------------------- hostile args
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
arg_dicts = st.dictionaries(
    st.sampled_from(["bbox_2d", "points", "source", "coords", "label", "junk"]),
    json_values | st.lists(st.floats() | st.integers(), min_size=4, max_size=4),
    max_size=5,
)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(TOOLS)), arg_dicts | json_values)
def test_tools_never_raise_on_hostile_args(name, args):
    ctx = ToolContext.start("k1000", ImageSize(64, 48), pixel_budget=56 * 56)
    result = TOOLS[name]([_image(64, 48)], args, ctx)
    assert isinstance(result, ToolResult) and result.text
    if result.error is None:
        assert result.image is not None and result.crop is not None
    else:
        assert result.image is None and result.text.startswith(f"{name}: ")


@pytest.mark.parametrize(
    "args, fragment",
    [
        ({"bbox_2d": [1, 2]}, "bbox_2d must be 4 numbers [x0, y0, x1, y1] in 0..1000, got [1, 2]"),
        ({"bbox_2d": ["1", 2, 3, 4]}, "must be 4 numbers"),
        ({"bbox_2d": [math.nan, 0, 10, 10]}, "(finite)"),
        ({"bbox_2d": [0, 0, math.inf, 10]}, "(finite)"),
        ({"bbox_2d": [0, 0, 10**400, 10]}, "(finite)"),
        ({"bbox_2d": [[0], {"a": 1}, None, True]}, "must be 4 numbers"),
        ({"bbox_2d": [True, 0, 10, 10]}, "must be 4 numbers"),
        ({"bbox_2d": [10, 10, 5, 20]}, "x0 < x1"),
        ({"bbox_2d": [1200, 0, 1300, 10]}, "lies outside observation_0"),
        ({}, "bbox_2d is required"),
        ({"bbox_2d": [0, 0, 10, 10], "zoom": 2}, "unknown argument(s) ['zoom']"),
        ({"bbox_2d": [0, 0, 10, 10], "source": "observation_1"}, "i in 0..0"),
        ({"bbox_2d": [0, 0, 10, 10], "source": "observation_-1"}, "source must be"),
        ({"bbox_2d": [0, 0, 10, 10], "source": 0}, "source must be"),
        ({"bbox_2d": [0, 0, 10, 10], "coords": "px"}, "coords must be"),
        ({"bbox_2d": [0, 0, 10, 10], "label": 3}, "label must be a string"),
        ("bbox_2d", "arguments must be a JSON object"),
    ],
)
def test_bad_zoom_args_give_error_results(args, fragment):
    ctx = ToolContext.start("k1000", ImageSize(64, 48))
    result = TOOLS["zoom_in"]([_image(64, 48)], args, ctx)
    assert result.error is not None and result.image is None
    assert fragment in result.text, result.text


def test_huge_but_finite_box_is_clamped_to_the_image():
    ctx = ToolContext.start("k1000", ImageSize(64, 48), pixel_budget=56 * 56)
    result = TOOLS["zoom_in"]([_image(64, 48)], {"bbox_2d": [-1e300, -1e300, 1e300, 1e300]}, ctx)
    assert result.error is None and result.crop.box_in_original_norm == (0.0, 0.0, 1.0, 1.0)


def test_misuse_by_the_caller_raises():
    ctx = ToolContext.start("k1000", ImageSize(64, 48))
    with pytest.raises(ToolError, match="2 images for a context of 1"):
        TOOLS["zoom_in"]([_image(64, 48)] * 2, {"bbox_2d": [0, 0, 10, 10]}, ctx)
    with pytest.raises(ToolError, match="needs one Frame per observation"):
        ToolContext(CoordSpace.RESIZED_PX)
    with pytest.raises(ToolError, match="max_aspect"):
        ToolContext(CoordSpace.K1000, max_aspect=500.0)
    with pytest.raises(ToolError, match="not a successful tool result"):
        ctx.observe(ToolResult(None, "zoom_in: bad", error="bad"))
    with pytest.raises(ToolError, match="unknown"):
        tool_schemas(["magnify"])


def test_call_tool_dispatches_and_rejects_unknown_calls():
    ctx = ToolContext.start("k1000", ImageSize(64, 48), pixel_budget=56 * 56)
    ok = call_tool(
        {"name": "crop", "arguments": {"bbox_2d": [0, 0, 500, 1000]}}, [_image(64, 48)], ctx
    )
    assert ok.error is None and ok.crop.box_in_original_norm == (0.0, 0.0, 0.5, 1.0)
    for bad in ({"name": "magnify", "arguments": {}}, {"arguments": {}}, "zoom_in", None):
        assert call_tool(bad, [_image(64, 48)], ctx).error is not None


# ---------------------------------------------------------------------------- ground tool
def test_ground_draws_marks_on_a_copy_of_the_chosen_observation():
    image = np.full((100, 200, 3), 255, np.uint8)
    ctx = ToolContext.start("k1000", ImageSize(200, 100))
    zoom = TOOLS["zoom_in"]([image], {"bbox_2d": [0, 0, 500, 1000]}, ctx)
    ctx = ctx.observe(zoom)
    args = {"points": [[250, 500]], "bbox_2d": [100, 100, 900, 900], "source": "original"}
    result = TOOLS["ground"]([image, zoom.image], args, ctx)
    assert result.error is None and result.crop == CropMap.identity()
    assert result.image.shape == image.shape and (image == 255).all()  # input untouched
    assert tuple(result.image[50, 53]) == MARK_RGB  # mark 1 is a disc of radius 6 at (50, 50) px
    assert tuple(result.image[10, 100]) == MARK_RGB  # the box's top edge at y = 0.1
    assert result.text == (
        "Marked box [100, 100, 900, 900] and 1 numbered point(s) on observation_0: observation_2."
    )
    on_zoom = TOOLS["ground"]([image, zoom.image], {"points": [[500, 500]]}, ctx)
    assert on_zoom.crop == zoom.crop and on_zoom.image.shape == zoom.image.shape
    assert TOOLS["ground"]([image, zoom.image], {"label": "x"}, ctx).error is not None
    assert TOOLS["ground"]([image, zoom.image], {"points": []}, ctx).error is not None


# ------------------------------------------------------------------------------- schemas
EXAMPLES = {
    "zoom_in": [
        {"bbox_2d": [10, 20, 300, 400]},
        {"bbox_2d": [0.1, 0.2, 0.3, 0.4], "coords": "norm", "source": "original", "label": "OK"},
        {"bbox_2d": [10, 20, 300, 400], "source": "observation_0"},
    ],
    "ground": [{"points": [[10, 20], [30, 40]]}, {"bbox_2d": [10, 20, 300, 400], "label": "x"}],
}
NON_EXAMPLES = {
    "zoom_in": [
        {},
        {"bbox_2d": [1, 2, 3]},
        {"bbox_2d": [1, 2, 3, 4], "zoom": 2},
        {"bbox_2d": [1, 2, 3, 4], "source": "image_1"},
    ],
    "ground": [{}, {"label": "x"}, {"points": [[1, 2, 3]]}],
}


def test_schemas_are_valid_json_schema_and_agree_with_the_tools():
    jsonschema = pytest.importorskip("jsonschema")
    ctx = ToolContext.start("k1000", ImageSize(640, 480), pixel_budget=56 * 56)
    for name in ("zoom_in", "ground"):
        (entry,) = tool_schemas([name])
        assert entry["type"] == "function" and entry["function"]["name"] == name
        params = entry["function"]["parameters"]
        jsonschema.Draft202012Validator.check_schema(params)
        validator = jsonschema.Draft202012Validator(params)
        for args in EXAMPLES[name]:
            validator.validate(args)
            assert TOOLS[name]([_image(640, 480)], args, ctx).error is None
        for args in NON_EXAMPLES[name]:
            assert not validator.is_valid(args), args
            assert TOOLS[name]([_image(640, 480)], args, ctx).error is not None


def test_tool_prompt_lists_one_schema_per_line():
    text = render_tool_prompt(["zoom_in", "ground"])
    inside = text.split("<tools>\n", 1)[1].split("\n</tools>", 1)[0].splitlines()
    assert [json.loads(line) for line in inside] == tool_schemas(["zoom_in", "ground"])
    assert text.endswith(
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
    )
