"""Turn a grounding action mapping into a :class:`rewards.Prediction`, never raising.

Accepted actions (normalized coordinates, x right, y down):
``{"point": (x, y)}``, ``{"box": (x0, y0, x1, y1)}``, both, or ``{"parse_error": "reason"}``
when the codec could not parse the model's text. Anything else is an invalid action. Optional
extras go to the prediction for the reward: ``"action_type"`` (str), ``"text"`` (typed text) and
``"completion"`` (the model's raw answer, which custom rewards may read; kept with a parse
error too).
"""

from __future__ import annotations

import dataclasses
import logging
import math
import numbers
from collections.abc import Mapping
from typing import Any

import numpy as np

from rewards import Prediction

log = logging.getLogger(__name__)

ACTION_KEYS: frozenset[str] = frozenset(
    {"point", "box", "parse_error", "action_type", "text", "completion"}
)
_TEXT_KEYS = ("action_type", "text", "completion")
_REPR_LIMIT = 120
_MAX_TEXT = 20_000


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not break a rollout
        text = f"<{type(value).__name__}>"
    return text if len(text) <= _REPR_LIMIT else text[: _REPR_LIMIT - 3] + "..."


def _numbers(value: Any, n: int, name: str) -> tuple[tuple[float, ...] | None, str | None]:
    """``n`` finite floats in [0, 1] from a sequence / array, or a reason why not."""
    if isinstance(value, np.ndarray):
        if value.shape != (n,) or value.dtype.kind not in "fiu":
            return None, f"{name} must be {n} numbers, got array {value.dtype} {value.shape}"
        items = value.tolist()
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        return None, f"{name} must be a sequence of {n} numbers, got {_short(value)}"
    if len(items) != n:
        return None, f"{name} must have {n} numbers, got {len(items)}: {_short(value)}"
    if not all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in items):
        return None, f"{name} must hold only numbers, got {_short(value)}"
    try:
        out = tuple(float(v) for v in items)
    except (OverflowError, TypeError, ValueError):
        return None, f"{name} is not convertible to floats: {_short(value)}"
    if not all(math.isfinite(v) for v in out):
        return None, f"{name} must be finite, got {_short(value)}"
    if not all(0.0 <= v <= 1.0 for v in out):
        return None, f"{name} {_short(out)} is off-screen (normalized coordinates lie in [0, 1])"
    return out, None


def parse_action(action: Any) -> tuple[Prediction, str | None]:
    """Prediction for the reward and the reason the action is invalid (``None`` if valid).

    Invalid actions (malformed, off-screen, non-finite, unknown keys) and parse errors give a
    prediction without coordinates and ``format_ok=False``, so they score 0 on every term.

    >>> pred, why = parse_action({"point": (0.5, 0.25), "action_type": "click"})
    >>> pred.point, pred.action_type, pred.format_ok, why
    ((0.5, 0.25), 'click', True, None)
    >>> parse_action({"point": (1.5, 0.25)})[1]
    'point (1.5, 0.25) is off-screen (normalized coordinates lie in [0, 1])'
    """

    try:
        prediction, reason = _parse(action)
    except Exception as err:  # a hostile mapping or sequence must not break a rollout
        log.debug("grounding action reader caught an exception", exc_info=True)
        return _invalid(f"action could not be read: {type(err).__name__}")
    completion = _text_of(action, "completion")
    if completion is not None:
        prediction = dataclasses.replace(prediction, completion=completion)
    return prediction, reason


def _text_of(action: Any, key: str) -> str | None:
    """``action[key]`` when it is a string (cut to ``_MAX_TEXT`` characters), else None."""
    try:
        value = action.get(key) if isinstance(action, Mapping) else None
    except Exception:  # a hostile mapping
        log.debug("grounding action text field unreadable", exc_info=True)
        return None
    return value[:_MAX_TEXT] if isinstance(value, str) else None


def _invalid(reason: str) -> tuple[Prediction, str]:
    return Prediction(point=None, box=None, format_ok=False, error=reason), reason


def _parse(action: Any) -> tuple[Prediction, str | None]:
    invalid = _invalid
    if not isinstance(action, Mapping):
        return invalid(
            f"action must be a mapping with 'point', 'box' or 'parse_error', got {_short(action)}"
        )
    for key in _TEXT_KEYS:
        if key in action and not isinstance(action[key], str):
            return invalid(f"{key} must be a string, got {_short(action[key])}")
    keys = set(action.keys()) - set(_TEXT_KEYS)
    unknown = sorted(_short(k) for k in keys - ACTION_KEYS)
    if unknown:
        return invalid(
            f"unknown action key(s) {', '.join(unknown)}; expected point, box or parse_error "
            "(optionally action_type, text, completion)"
        )
    if "parse_error" in keys:
        return invalid(f"parse error: {_short(action['parse_error'])}")
    if not keys:
        return invalid("action has no 'point', 'box' or 'parse_error'")
    point = box = None
    if "point" in keys:
        point, reason = _numbers(action["point"], 2, "point")
        if reason is not None:
            return invalid(reason)
    if "box" in keys:
        box, reason = _numbers(action["box"], 4, "box")
        if reason is not None:
            return invalid(reason)
        if not (box[0] < box[2] and box[1] < box[3]):
            return invalid(f"box {_short(box)} is empty or inverted (needs x0 < x1 and y0 < y1)")
    extras = {k: _text_of(action, k) for k in ("action_type", "text")}
    return Prediction(point=point, box=box, format_ok=True, error=None, **extras), None
