"""Action rewards of GUI agents: the action type and the typed text (GUI-R1 / UI-R1).

GUI-R1 and UI-R1 score an answer ``{"action": "type", "point": [x, y], "input_text": "..."}``
on three parts: the action type must equal the ground truth's, a pointing action must land in
the target box (``point_in_box``), and typed text must match the ground truth's. GUI-R1's code
compares text with a token-set F1 (``calculate_f1_score`` in its reward module: brackets removed,
lower-cased, split on whitespace; two single tokens where one contains the other count as 1) and
pays the step when that F1 is at least 0.5. :func:`text_f1` computes that F1 and, given
``threshold``, GUI-R1's 0/1 verdict.

A term whose ground truth is absent (no action type or no text in the data) scores 0: it does
not apply to that sample.
"""

from __future__ import annotations

from rewards.types import RewardResult, check_positive

ACTION_ALIASES: dict[str, str] = {
    "tap": "click",
    "left_single": "click",
    "left_click": "click",
    "input": "type",
    "input_text": "type",
    "type_text": "type",
    "long_click": "long_press",
    "swipe": "scroll",
    "hotkey": "key",
    "press": "key",
    "key_press": "key",
}
"""Names that mean one action in different datasets' vocabularies, mapped to ours."""


def canonical_action(name: object) -> str | None:
    """Lower-cased action name with :data:`ACTION_ALIASES` applied; None if not a string.

    >>> canonical_action(" Tap "), canonical_action("TYPE"), canonical_action(3)
    ('click', 'type', None)
    """
    if not isinstance(name, str) or not name.strip():
        return None
    key = name.strip().lower()
    return ACTION_ALIASES.get(key, key)


def action_type_match(predicted: object, expected: object) -> RewardResult:
    """1 if the predicted action type equals the expected one (after aliases), else 0.

    Args:
        predicted: the action the answer names (``Prediction.action_type``).
        expected: the ground truth's action (``RewardTarget.action_type``); None scores 0.

    >>> action_type_match("tap", "click").value, action_type_match("type", "click").value
    (1.0, 0.0)
    """
    p, e = canonical_action(predicted), canonical_action(expected)
    hit = p is not None and e is not None and p == e
    return RewardResult(value=1.0 if hit else 0.0, terms={"action_type": 1.0 if hit else 0.0})


def _tokens(text: str) -> set[str]:
    return set(text.replace("[", "").replace("]", "").lower().split())


def token_f1(predicted: str, expected: str) -> float:
    """GUI-R1's token-set F1 between two strings.

    Brackets are removed, both strings lower-cased and split on whitespace into sets; two
    single-token strings where one token contains the other score 1.

    >>> token_f1("hello world", "Hello there"), token_f1("[abc]", "abcd")
    (0.5, 1.0)
    """
    pred, gt = _tokens(predicted), _tokens(expected)
    if len(pred) == 1 and len(gt) == 1:
        (p,), (g,) = pred, gt
        if p in g or g in p:
            return 1.0
    common = pred & gt
    precision = len(common) / len(pred) if pred else 0.0
    recall = len(common) / len(gt) if gt else 0.0
    if precision + recall == 0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def text_f1(predicted: object, expected: object, threshold: float | None = None) -> RewardResult:
    """Token-set F1 of the typed text (:func:`token_f1`), or GUI-R1's 0/1 verdict.

    Args:
        predicted: the answer's typed text (``Prediction.text``); None scores 0.
        expected: the ground truth's text; None (a step that types nothing) scores 0.
        threshold: if given, 1 when the F1 is at least ``threshold`` (GUI-R1 uses 0.5), else 0.

    >>> text_f1("turn on wifi", "turn wifi on").value
    1.0
    >>> text_f1("open the settings", "settings", threshold=0.5).value  # F1 = 0.5
    1.0
    """
    if threshold is not None:
        check_positive("text_f1: threshold", threshold)
    if not isinstance(predicted, str) or not isinstance(expected, str):
        value = 0.0
    else:
        value = token_f1(predicted, expected)
        if threshold is not None:
            value = 1.0 if value >= threshold else 0.0
    return RewardResult(value=value, terms={"text_f1": value})
