"""Grounding rewards: a predicted point or box against a ground-truth box.

All inputs are normalized [0, 1] coordinates (x right, y down, boxes xyxy). A prediction that is
not finite, not in [0, 1], or (for boxes) not ``x0 < x1 and y0 < y1`` scores 0 and never raises;
so does an invalid ground-truth box. Only bad *parameters* (``sigma_scale``, ``scale``, ...) raise
:class:`~rewards.types.RewardSpecError`.
"""

from __future__ import annotations

import math

from perception_tools import geometry as geo
from rewards.types import RewardResult, check_positive, norm_box_or_none, norm_point_or_none

_SQRT2 = math.sqrt(2.0)


def _result(name: str, value: float) -> RewardResult:
    return RewardResult(value=value, terms={name: value})


def point_in_box(point: object, gt_box: object) -> RewardResult:
    """1 if the point lies in the ground-truth box (edges included), else 0.

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
    """GUI-G² Gaussian point reward: an unnormalized Gaussian centred on the box centre.

    ``σx = sigma_scale · box width``, ``σy = sigma_scale · box height``;
    value ``= exp(-0.5 · ((dx / σx)² + (dy / σy)²))`` with ``(dx, dy)`` the offset of the point
    from the box centre. The centre scores 1; ``dx = σx, dy = 0`` scores ``e^-0.5``.

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


def _sigmas(gt_box: geo.Box, sigma_scale: float) -> tuple[float, float] | None:
    """Adaptive standard deviations ``sigma_scale * (w, h)``; None if one underflows to 0."""
    w, h = geo.box_size(gt_box)
    sx, sy = sigma_scale * w, sigma_scale * h
    return (sx, sy) if sx > 0.0 and sy > 0.0 and math.isfinite(sx * sy) else None


def _normal_mass(lo: float, hi: float, mu: float, sigma: float) -> float:
    """Probability that N(mu, sigma²) falls in [lo, hi]."""
    return 0.5 * (math.erf((hi - mu) / (sigma * _SQRT2)) - math.erf((lo - mu) / (sigma * _SQRT2)))


def _gaussian_mass(box: geo.Box, center: geo.Point, sigma: tuple[float, float]) -> float:
    """Mass of an axis-aligned 2-D Gaussian inside an xyxy box."""
    x0, y0, x1, y1 = box
    return _normal_mass(x0, x1, center[0], sigma[0]) * _normal_mass(y0, y1, center[1], sigma[1])


def gaussian_coverage(pred_box: object, gt_box: object, sigma_scale: float = 0.5) -> RewardResult:
    """GUI-G²-style coverage: how much of the ground truth's Gaussian the predicted box holds.

    With ``G = N(μ = gt centre, diag(σ²))``, ``σ = sigma_scale · gt (width, height)``:
    value ``= min(1, G(pred box) / G(gt box))``, where ``G(B)`` is the probability mass of ``G``
    inside box ``B`` (a product of 1-D normal CDF differences). Normalizing by ``G(gt box)``
    makes identical boxes score exactly 1; boxes larger than the ground truth saturate at 1, so
    pair this with a size guard. (The paper scores the predicted Gaussian's mass inside the
    ground-truth box instead; that peaks below 1 and is not what is computed here.)

    Args:
        pred_box: predicted ``(x0, y0, x1, y1)``, normalized.
        gt_box: ground-truth ``(x0, y0, x1, y1)``, normalized.
        sigma_scale: standard deviation as a fraction of the ground-truth size (> 0).

    Returns:
        ``RewardResult`` with value in [0, 1] and term ``"gaussian_coverage"``.

    >>> gaussian_coverage((0.4, 0.4, 0.5, 0.6), (0.4, 0.4, 0.6, 0.6)).value  # left half: 0.5
    0.5
    """
    sigma_scale = check_positive("gaussian_coverage: sigma_scale", sigma_scale)
    pred, gt = norm_box_or_none(pred_box), norm_box_or_none(gt_box)
    if pred is None or gt is None:
        return _result("gaussian_coverage", 0.0)
    sigma = _sigmas(gt, sigma_scale)
    if sigma is None:
        return _result("gaussian_coverage", 0.0)
    center = geo.box_center(gt)
    full = _gaussian_mass(gt, center, sigma)
    value = 0.0 if full <= 0.0 else min(1.0, max(0.0, _gaussian_mass(pred, center, sigma) / full))
    return _result("gaussian_coverage", value)


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
