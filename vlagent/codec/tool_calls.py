"""Read an assistant turn: a Qwen function call ``<tool_call>{"name": …, "arguments": …}</tool_call>``
or a final answer. Never raises: malformed calls come back as a ``ToolCallParse`` with ``error``
set, which the loop turns into an error-text observation.
"""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_CALL_RE = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_FENCE_RE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL)
_SOURCE_RE = re.compile(r'"source"\s*:\s*"(original|observation_(\d{1,4}))"')
MAX_CALL_CHARS = 4000
"""Longest call body parsed; longer bodies are an error (a runaway generation)."""
MAX_NAME_CHARS = 64


@dataclasses.dataclass(frozen=True)
class ToolCallParse:
    """Outcome of reading a turn that contains ``<tool_call>``.

    Attributes:
        call: ``{"name": str, "arguments": dict}`` when well formed, else None.
        error: why the call is malformed (shown to the model), else None.
        n_calls: number of ``<tool_call>`` blocks in the turn (only the first runs).
    """

    call: dict[str, Any] | None
    error: str | None
    n_calls: int = 1


def _short(text: str, n: int = 60) -> str:
    return repr(text[:n] + ("…" if len(text) > n else ""))


def parse_tool_call(text: object) -> ToolCallParse | None:
    """The first tool call of an assistant turn, None if the turn has no ``<tool_call>``.

    >>> parse_tool_call('<tool_call>{"name": "zoom_in", "arguments": {"bbox_2d": [1, 2, 3, 4]}}</tool_call>').call
    {'name': 'zoom_in', 'arguments': {'bbox_2d': [1, 2, 3, 4]}}
    >>> parse_tool_call('{"point_2d": [1, 2]}') is None
    True
    """
    try:
        return _parse(text)
    except Exception as exc:  # noqa: BLE001 - a rollout must never die on model text
        return ToolCallParse(None, f"unreadable tool call ({type(exc).__name__})")


def _parse(text: object) -> ToolCallParse | None:
    if not isinstance(text, str):
        return ToolCallParse(None, f"expected text, got {type(text).__name__}")
    if _OPEN not in text:
        return None
    blocks = _CALL_RE.findall(text)
    if not blocks:
        return ToolCallParse(None, f"unterminated {_OPEN}: close it with {_CLOSE}", 1)
    n = len(blocks)
    body = blocks[0].strip()
    fence = _FENCE_RE.match(body)
    if fence:
        body = fence.group(1)
    if len(body) > MAX_CALL_CHARS:
        return ToolCallParse(None, f"tool call longer than {MAX_CALL_CHARS} characters", n)
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return ToolCallParse(None, f"tool call is not valid JSON: {_short(body)}", n)
    if not isinstance(obj, dict):
        return ToolCallParse(
            None, 'a tool call must be a JSON object {"name": ..., "arguments": {...}}', n
        )
    name = obj.get("name")
    if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
        return ToolCallParse(None, f'"name" must be a tool name, got {_short(str(name))}', n)
    args = obj.get("arguments", {})
    if isinstance(args, str):  # some models write the arguments as a JSON string
        try:
            args = json.loads(args)
        except (ValueError, RecursionError):
            return ToolCallParse(None, f'"arguments" is not a JSON object: {_short(args)}', n)
    if not isinstance(args, dict):
        return ToolCallParse(None, f'"arguments" must be a JSON object, got {_short(str(args))}', n)
    return ToolCallParse({"name": name, "arguments": args}, None, n)


def answer_source(text: str, n_observations: int) -> int | None:
    """Observation an answer names with ``"source": "original" | "observation_<i>"``, if valid."""
    match = _SOURCE_RE.search(text) if isinstance(text, str) else None
    if match is None:
        return None
    index = 0 if match.group(1) == "original" else int(match.group(2))
    return index if 0 <= index < n_observations else None
