"""Reward functions of your own, named by import path (``my_pkg.rewards:fn``), like TRL's
``reward_funcs``.

The signature a custom reward implements::

    def fn(prediction: Prediction, target: RewardTarget, **params) -> float

- ``prediction``: what the codec read from the model's answer (normalized point / box, action
  type, typed text, ``format_ok``, and ``completion``: the raw answer text).
- ``target``: the sample's ground truth (normalized box, action type, text, instruction,
  sample id, meta).
- ``params``: the extra keys of the term's config entry, passed through unchanged.

It returns a finite number (or a :class:`~rewards.types.RewardResult`, whose ``value`` is
used); the term's weight multiplies it. A function that raises or returns anything else scores
0 for that sample and the failure is reported with the sample id (``RewardResult.errors``): one
bad sample never stops a run. A path that cannot be imported is a configuration error, raised
when the spec is built.
"""

from __future__ import annotations

import importlib
import math
import numbers
import re
from collections.abc import Callable, Mapping
from typing import Any

from rewards.types import Prediction, RewardResult, RewardSpecError, RewardTarget

CustomFn = Callable[..., Any]
_PATH_RE = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def is_import_path(name: str) -> bool:
    """Whether ``name`` looks like ``module.path:function``.

    >>> is_import_path("my_pkg.rewards:fn"), is_import_path("point_in_box")
    (True, False)
    """
    return bool(_PATH_RE.match(name))


def load_reward_fn(path: str) -> CustomFn:
    """Import ``module.path:function`` and check that it is callable.

    Raises:
        RewardSpecError: malformed path, module not importable, no such attribute, or not
            callable; the message names the path.
    """
    if not isinstance(path, str) or not is_import_path(path):
        raise RewardSpecError(
            f"custom reward {path!r}: expected an import path 'module.path:function'"
        )
    module_name, attr = path.split(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as err:  # ImportError, or any error raised while importing the module
        raise RewardSpecError(
            f"custom reward {path!r}: cannot import module {module_name!r} "
            f"({type(err).__name__}: {err}); is it installed or on PYTHONPATH?"
        ) from err
    fn = getattr(module, attr, None)
    if fn is None:
        raise RewardSpecError(f"custom reward {path!r}: module {module_name!r} has no {attr!r}")
    if not callable(fn):
        raise RewardSpecError(f"custom reward {path!r}: {attr!r} is not callable")
    return fn


def call_reward(
    fn: CustomFn, prediction: Prediction, target: RewardTarget, params: Mapping[str, Any]
) -> tuple[float, str | None]:
    """Run a custom reward on one sample: ``(value, None)``, or ``(0.0, reason)`` when it
    raised or returned something other than a finite number. Never raises."""
    try:
        out = fn(prediction, target, **params)
    except Exception as err:  # a user's function must not stop the run
        return 0.0, f"raised {type(err).__name__}: {str(err)[:200]}"
    if isinstance(out, RewardResult):
        out = out.value
    if isinstance(out, bool) or not isinstance(out, numbers.Real):
        return 0.0, f"returned {type(out).__name__}, expected a number"
    value = float(out)
    if not math.isfinite(value):
        return 0.0, f"returned {value}, expected a finite number"
    return value, None
