"""Grounding rewards: a predicted point or box against a ground-truth box.

All inputs are normalized [0, 1] coordinates (x right, y down, boxes xyxy). A prediction that is
not finite, not in [0, 1], or (for boxes) not ``x0 < x1 and y0 < y1`` scores 0 and never raises;
so does an invalid ground-truth box. Only bad *parameters* (``sigma_scale``, ``scale``, ...) raise
:class:`~rewards.types.RewardSpecError`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perception_tools import geometry as geo
from rewards.types import RewardResult, check_positive, norm_box_or_none, norm_point_or_none

_SQRT2 = math.sqrt(2.0)


def _result(name: str, value: float) -> RewardResult:
    return RewardResult(value=value, terms={name: value})


def point_in_box(point: object, gt_box: object) -> RewardResult:
    """1 if the point lies in the ground-truth box (edges included), else 0.

    UI-R1's click reward (``accuracy_reward_coord``) and GUI-R1's (``r1gui_accuracy_reward``)
    without their action-type check; tested against both (``tests/fixtures/ui_r1/``,
    ``tests/fixtures/gui_r1/``). UI-R1 includes the edges as here; GUI-R1 excludes them, so a
    point exactly on an edge scores 1 here and 0 there.

    Args:
        point: predicted ``(x, y)``, normalized.
        gt_box: ground-truth ``(x0, y0, x1, y1)``, normalized.

    Returns:
        ``RewardResult`` with value in {0, 1} and term ``"point_in_box"``.

    >>> point_in_box((0.5, 0.5), (0.4, 0.4, 0.6, 0.6)).value
    1.0
    """
    p, gt = norm_point_or_none(point), norm_box_or_none(gt_box)
    hit = p is not None and gt is not None and geo.point_in_box(p, gt)
    return _result("point_in_box", 1.0 if hit else 0.0)


def iou_reward(pred_box: object, gt_box: object) -> RewardResult:
    """Intersection over union of the predicted and ground-truth boxes.

    Args:
        pred_box: predicted ``(x0, y0, x1, y1)``, normalized.
        gt_box: ground-truth ``(x0, y0, x1, y1)``, normalized.

    Returns:
        ``RewardResult`` with value in [0, 1] and term ``"iou"``.

    >>> iou_reward((0.0, 0.0, 0.5, 0.5), (0.25, 0.0, 0.75, 0.5)).value  # 0.125 / 0.375
    0.3333333333333333
    """
    pred, gt = norm_box_or_none(pred_box), norm_box_or_none(gt_box)
    return _result("iou", 0.0 if pred is None or gt is None else geo.iou(pred, gt))


def giou_reward(pred_box: object, gt_box: object) -> RewardResult:
    """Generalized IoU of the predicted and ground-truth boxes, in [-1, 1].

    An invalid box scores 0, which beats a far-away valid box (negative GIoU); weight
    :func:`giou01` instead when invalid answers must score lowest.

    Args:
        pred_box: predicted ``(x0, y0, x1, y1)``, normalized.
        gt_box: ground-truth ``(x0, y0, x1, y1)``, normalized.

    Returns:
        ``RewardResult`` with value in [-1, 1] and term ``"giou"``.

    >>> giou_reward((0.0, 0.0, 0.25, 0.25), (0.75, 0.75, 1.0, 1.0)).value  # 0 - (1 - 0.125)
    -0.875
    """
    pred, gt = norm_box_or_none(pred_box), norm_box_or_none(gt_box)
    return _result("giou", 0.0 if pred is None or gt is None else geo.giou(pred, gt))


def giou01(pred_box: object, gt_box: object) -> RewardResult:
    """GIoU mapped to [0, 1] as ``(giou + 1) / 2``; an invalid box scores 0.

    Args:
        pred_box: predicted ``(x0, y0, x1, y1)``, normalized.
        gt_box: ground-truth ``(x0, y0, x1, y1)``, normalized.

    Returns:
        ``RewardResult`` with value in [0, 1] and term ``"giou01"``.

    >>> giou01((0.0, 0.0, 0.25, 0.25), (0.75, 0.75, 1.0, 1.0)).value  # (-0.875 + 1) / 2
    0.0625
    """
    pred, gt = norm_box_or_none(pred_box), norm_box_or_none(gt_box)
    value = 0.0 if pred is None or gt is None else (geo.giou(pred, gt) + 1.0) / 2.0
    return _result("giou01", value)


def gaussian_point(point: object, gt_box: object, sigma_scale: float = 0.5) -> RewardResult:
    """GUI-G²'s Gaussian point reward: an unnormalized Gaussian centred on the box centre.

    ``σx = sigma_scale · box width``, ``σy = sigma_scale · box height``;
    value ``= exp(-0.5 · ((dx / σx)² + (dy / σy)²))`` with ``(dx, dy)`` the offset of the point
    from the box centre. The centre scores 1; ``dx = σx, dy = 0`` scores ``e^-0.5``.

    Source: ``gaussian_point_reward`` in GUI-G²'s ``src/gui_g2/src/open_r1/gaussian_grpo.py``
    (github.com/ZJU-REAL/GUI-G2), whose ``alpha = 0.5`` is ``sigma_scale``; tested against values
    of that function (``tests/fixtures/gui_g2/``). Differences: the reference scores the centre
    of a predicted *box* (the composite scores a box-only prediction at its centre too) and
    rounds to 3 decimals; here the value is not rounded, and a point outside [0, 1] (off the
    image) or a degenerate ground-truth box scores 0.

    Args:
        point: predicted ``(x, y)``, normalized.
        gt_box: ground-truth ``(x0, y0, x1, y1)``, normalized.
        sigma_scale: standard deviation as a fraction of the box size (> 0).

    Returns:
        ``RewardResult`` with value in [0, 1] and term ``"gaussian_point"``.

    >>> gaussian_point((0.5, 0.5), (0.4, 0.4, 0.6, 0.6)).value
    1.0
    """
    sigma_scale = check_positive("gaussian_point: sigma_scale", sigma_scale)
    p, gt = norm_point_or_none(point), norm_box_or_none(gt_box)
    if p is None or gt is None:
        return _result("gaussian_point", 0.0)
    sigma = _sigmas(gt, sigma_scale)
    if sigma is None:
        return _result("gaussian_point", 0.0)
    cx, cy = geo.box_center(gt)
    zx, zy = (p[0] - cx) / sigma[0], (p[1] - cy) / sigma[1]
    return _result("gaussian_point", math.exp(-0.5 * (zx * zx + zy * zy)))


def _sigmas(box: geo.Box, sigma_scale: float) -> tuple[float, float] | None:
    """Adaptive standard deviations ``sigma_scale * (w, h)``; None if one underflows to 0."""
    w, h = geo.box_size(box)
    sx, sy = sigma_scale * w, sigma_scale * h
    return (sx, sy) if sx > 0.0 and sy > 0.0 and math.isfinite(sx * sy) else None


def _bhattacharyya_1d(d_mu: float, s1: float, s2: float) -> float:
    """``exp(-D_B)`` of N(0, s1²) and N(d_mu, s2²): ``sqrt(2 s1 s2 / v) · exp(-d_mu² / (4 v))``,
    ``v = s1² + s2²``, written with ``r = min / max`` so tiny or huge sigmas cannot overflow."""
    lo, hi = min(s1, s2), max(s1, s2)
    r, z = lo / hi, d_mu / hi
    return math.sqrt(2.0 * r / (1.0 + r * r)) * math.exp(-z * z / (4.0 * (1.0 + r * r)))


def gaussian_plane(pred_box: object, gt_box: object, sigma_scale: float = 0.5) -> RewardResult:
    """GUI-G²'s Gaussian plane (coverage) reward: ``exp(-D_B)`` of the two boxes' Gaussians.

    Each box becomes ``N(μ = box centre, diag(σx², σy²))`` with ``σ = sigma_scale · (width,
    height)`` of *that* box; the value is ``exp(-D_B)``, ``D_B`` their Bhattacharyya distance
    ``(1/8) Δμᵀ Σ⁻¹ Δμ + (1/2) ln(det Σ / sqrt(det Σp · det Σg))``, ``Σ = (Σp + Σg) / 2`` (the
    Bhattacharyya coefficient). Identical boxes score 1; the value falls as the centres part
    *and* as the sizes differ, so a box much larger (or smaller) than the target scores little
    (unlike :func:`gaussian_mass_ratio`). It is invariant to rescaling either axis, so
    normalized and pixel coordinates give one value.

    Source: ``gaussian_plane_reward`` in GUI-G²'s ``src/gui_g2/src/open_r1/gaussian_grpo.py``
    (github.com/ZJU-REAL/GUI-G2, registered there as ``gaussian_plane``), whose ``alpha = 0.5``
    is ``sigma_scale``; tested against values of that function (``tests/fixtures/gui_g2/``).
    Differences: the reference rounds to 3 decimals and adds ``eps = 1e-8`` to ``Σ`` and to
    ``det Σp · det Σg`` (negligible for the pixel boxes it is given, dominant for normalized
    boxes, so left out: the distance is computed exactly, per axis); it squares a negative width,
    so it scores an inverted box like the upright one. Here an inverted, empty or off-image box
    scores 0.

    Args:
        pred_box: predicted ``(x0, y0, x1, y1)``, normalized.
        gt_box: ground-truth ``(x0, y0, x1, y1)``, normalized.
        sigma_scale: standard deviation as a fraction of each box's size (> 0).

    Returns:
        ``RewardResult`` with value in [0, 1] and term ``"gaussian_plane"``.

    >>> gaussian_plane((0.4, 0.4, 0.6, 0.6), (0.4, 0.4, 0.6, 0.6)).value
    1.0
    >>> round(gaussian_plane((0.3, 0.3, 0.7, 0.7), (0.4, 0.4, 0.6, 0.6)).value, 6)  # 2x: 0.8
    0.8
    """
    sigma_scale = check_positive("gaussian_plane: sigma_scale", sigma_scale)
    pred, gt = norm_box_or_none(pred_box), norm_box_or_none(gt_box)
    if pred is None or gt is None:
        return _result("gaussian_plane", 0.0)
    sp, sg = _sigmas(pred, sigma_scale), _sigmas(gt, sigma_scale)
    if sp is None or sg is None:
        return _result("gaussian_plane", 0.0)
    (px, py), (gx, gy) = geo.box_center(pred), geo.box_center(gt)
    value = _bhattacharyya_1d(px - gx, sp[0], sg[0]) * _bhattacharyya_1d(py - gy, sp[1], sg[1])
    return _result("gaussian_plane", min(1.0, value))


def _normal_mass(lo: float, hi: float, mu: float, sigma: float) -> float:
    """Probability that N(mu, sigma²) falls in [lo, hi]."""
    return 0.5 * (math.erf((hi - mu) / (sigma * _SQRT2)) - math.erf((lo - mu) / (sigma * _SQRT2)))


def _gaussian_mass(box: geo.Box, center: geo.Point, sigma: tuple[float, float]) -> float:
    """Mass of an axis-aligned 2-D Gaussian inside an xyxy box."""
    x0, y0, x1, y1 = box
    return _normal_mass(x0, x1, center[0], sigma[0]) * _normal_mass(y0, y1, center[1], sigma[1])


def gaussian_mass_ratio(pred_box: object, gt_box: object, sigma_scale: float = 0.5) -> RewardResult:
    """Ours (not GUI-G²'s): the ground truth Gaussian's mass inside the predicted box.

    With ``G = N(μ = gt centre, diag(σ²))``, ``σ = sigma_scale · gt (width, height)``:
    value ``= min(1, G(pred box) / G(gt box))``, where ``G(B)`` is the probability mass of ``G``
    inside box ``B`` (a product of 1-D normal CDF differences). Normalizing by ``G(gt box)``
    makes identical boxes score exactly 1. Any box that holds the ground-truth box scores 1
    (the whole screen too), so pair it with a size guard (``RewardSpec.size_guard``); GUI-G²'s
    box reward, which also penalizes a wrong size, is :func:`gaussian_plane`.

    Args:
        pred_box: predicted ``(x0, y0, x1, y1)``, normalized.
        gt_box: ground-truth ``(x0, y0, x1, y1)``, normalized.
        sigma_scale: standard deviation as a fraction of the ground-truth size (> 0).

    Returns:
        ``RewardResult`` with value in [0, 1] and term ``"gaussian_mass_ratio"``.

    >>> gaussian_mass_ratio((0.4, 0.4, 0.5, 0.6), (0.4, 0.4, 0.6, 0.6)).value  # left half: 0.5
    0.5
    """
    sigma_scale = check_positive("gaussian_mass_ratio: sigma_scale", sigma_scale)
    pred, gt = norm_box_or_none(pred_box), norm_box_or_none(gt_box)
    if pred is None or gt is None:
        return _result("gaussian_mass_ratio", 0.0)
    sigma = _sigmas(gt, sigma_scale)
    if sigma is None:
        return _result("gaussian_mass_ratio", 0.0)
    center = geo.box_center(gt)
    full = _gaussian_mass(gt, center, sigma)
    value = 0.0 if full <= 0.0 else min(1.0, max(0.0, _gaussian_mass(pred, center, sigma) / full))
    return _result("gaussian_mass_ratio", value)


def distance_decay(point: object, gt_box: object, scale: float = 0.1) -> RewardResult:
    """``exp(-d / scale)`` with ``d`` the Euclidean distance from the point to the box.

    ``d`` is 0 inside the box (edges included), so any hit scores 1.

    Args:
        point: predicted ``(x, y)``, normalized.
        gt_box: ground-truth ``(x0, y0, x1, y1)``, normalized.
        scale: decay length in normalized units (> 0).

    Returns:
        ``RewardResult`` with value in (0, 1] for valid inputs (0 otherwise) and term
        ``"distance_decay"``.

    >>> round(distance_decay((0.9, 0.5), (0.4, 0.4, 0.6, 0.6)).value, 6)  # d = 0.3: e^-3
    0.049787
    """
    scale = check_positive("distance_decay: scale", scale)
    p, gt = norm_point_or_none(point), norm_box_or_none(gt_box)
    if p is None or gt is None:
        return _result("distance_decay", 0.0)
    x0, y0, x1, y1 = gt
    dx = max(x0 - p[0], 0.0, p[0] - x1)
    dy = max(y0 - p[1], 0.0, p[1] - y1)
    return _result("distance_decay", math.exp(-math.hypot(dx, dy) / scale))


def box_size_guard(pred_box: object, gt_box: object, max_area_ratio: float = 4.0) -> RewardResult:
    """1 if the predicted box is at most ``max_area_ratio`` times the ground truth's area, else 0.

    The comparison allows a relative 1e-9 for float rounding.

    A multiplier for box rewards that stops the "predict a huge box" reward hack; invalid boxes
    score 0.

    Args:
        pred_box: predicted ``(x0, y0, x1, y1)``, normalized.
        gt_box: ground-truth ``(x0, y0, x1, y1)``, normalized.
        max_area_ratio: largest allowed ``area(pred) / area(gt)`` (> 0).

    Returns:
        ``RewardResult`` with value in {0, 1} and term ``"size_guard"``.

    >>> box_size_guard((0.0, 0.0, 1.0, 1.0), (0.4, 0.4, 0.6, 0.6)).value  # 1 > 4 * 0.04
    0.0
    """
    max_area_ratio = check_positive("box_size_guard: max_area_ratio", max_area_ratio)
    pred, gt = norm_box_or_none(pred_box), norm_box_or_none(gt_box)
    if pred is None or gt is None:
        return _result("size_guard", 0.0)
    # The relative slack keeps a box of exactly the allowed size (0.4 x 0.4 vs 0.2 x 0.2 at 4x)
    # from failing on float rounding.
    ok = geo.box_area(pred) <= max_area_ratio * geo.box_area(gt) * (1.0 + 1e-9)
    return _result("size_guard", 1.0 if ok else 0.0)


def _noun_key(element: Any) -> str:
    """What a reference's noun names: the outline of a shape, else the role or kind.

    The key of ``sim.screens.instruction.noun`` (which writes the word); kept here because
    ``rewards`` may not import ``sim``. ``tests/rewards/test_attribute_match.py`` checks the two
    agree on every element of generated screens through the env."""
    if element.kind == "shape" and element.shape:
        return str(element.shape)
    return "menuitem" if element.role == "menuitem" else str(element.kind)


def _attributes(reference: str | None, element: Any) -> tuple[object, ...]:
    """The attributes of ``element`` that a ``reference`` names (``sim.screens.instruction``):
    a colour reference ("the red circle") its colour and its noun, a shape reference ("the
    circle") its outline; any other reference (text, icon, position, ...) names the element as
    a whole."""
    if reference == "colour":
        return (element.colour, _noun_key(element))
    if reference == "shape":
        return (element.shape,)
    return (id(element),)


def element_at(point: object, elements: Sequence[Any]) -> int | None:
    """Index of the element whose box holds ``point`` (the smallest when boxes nest), or None.

    ``elements``: objects with ``box_norm`` ``(x0, y0, x1, y1)``, normalized.
    """
    p = norm_point_or_none(point)
    if p is None:
        return None
    hits = [
        (geo.box_area(b), i)
        for i, e in enumerate(elements)
        if (b := norm_box_or_none(e.box_norm)) is not None and geo.point_in_box(p, b)
    ]
    return min(hits)[1] if hits else None


def attribute_match(
    point: object, elements: Sequence[Any], target_index: int | None, reference: str | None
) -> RewardResult:
    """Semantic partial credit: the share of the attributes the instruction names that the
    clicked element has.

    For "the red circle" (a ``colour`` reference) a click on the red circle scores 1, on a red
    square or a blue circle 0.5, on a blue square, the background or off the image 0. For a
    ``shape`` reference ("the circle") only a circle scores (1). Any other reference scores 1 on
    the target only, like ``point_in_box``. A dense signal for binding words to elements: a
    GRPO group whose samples all miss still ranks "right colour, wrong shape" above "wrong
    both". Ours (not from a paper); it needs the screen's element list, so synthetic screens
    only.

    Args:
        point: predicted ``(x, y)``, normalized.
        elements: the screen's elements (``kind``, ``shape``, ``colour``, ``role``,
            ``box_norm``), e.g. ``sim.screens.screen.Element``.
        target_index: index of the target in ``elements``.
        reference: how the instruction names the target (``colour``, ``shape``, ...).

    Returns:
        ``RewardResult`` with value in [0, 1] and term ``"attribute_match"``; 0 when the
        target index is missing or out of range.
    """
    if target_index is None or not 0 <= target_index < len(elements):
        return _result("attribute_match", 0.0)
    hit = element_at(point, elements)
    if hit is None:
        return _result("attribute_match", 0.0)
    if hit == target_index:
        return _result("attribute_match", 1.0)
    want = _attributes(reference, elements[target_index])
    have = _attributes(reference, elements[hit])
    return _result(
        "attribute_match", sum(a == b for a, b in zip(want, have, strict=True)) / len(want)
    )
