"""Read an assistant turn: a Qwen function call ``<tool_call>{"name": …, "arguments": …}</tool_call>``
or a final answer. Never raises: malformed calls come back as a ``ToolCallParse`` with ``error``
set, which the loop turns into an error-text observation.

Cost is linear in the text and bounded: a turn longer than :data:`MAX_TURN_CHARS` is an error
before anything else is read, blocks are found with ``str.find`` (no backtracking regex over
the turn), and only the first call's body (at most :data:`MAX_CALL_CHARS`) is decoded.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
from typing import Any

_LOG = logging.getLogger(__name__)
_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
_FENCE = "```"
_SOURCE_RE = re.compile(r'"source"\s*:\s*"(original|observation_(\d{1,4}))"')
MAX_TURN_CHARS = 20_000
"""Longest assistant turn read (a runaway generation beyond it is an error, never scanned)."""
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
        _LOG.debug("parse_tool_call caught an exception on %s", _short(str(text)), exc_info=True)
        return ToolCallParse(None, f"unreadable tool call ({type(exc).__name__})")


def _blocks(text: str) -> tuple[str | None, int]:
    """The first ``<tool_call>…</tool_call>`` body and the number of closed blocks.

    Each block closes at the first ``</tool_call>`` after its opening (as a non-greedy regex
    would); one ``str.find`` pass over the text.
    """
    first, n, pos = None, 0, 0
    while True:
        start = text.find(_OPEN, pos)
        if start < 0:
            break
        end = text.find(_CLOSE, start + len(_OPEN))
        if end < 0:
            break
        if first is None:
            first = text[start + len(_OPEN) : end]
        n += 1
        pos = end + len(_CLOSE)
    return first, n


def _unfence(body: str) -> str:
    """``body`` without a surrounding ```json … ``` fence (stripped)."""
    if len(body) >= 2 * len(_FENCE) and body.startswith(_FENCE) and body.endswith(_FENCE):
        body = body[len(_FENCE) : -len(_FENCE)]
        if body.startswith("json"):
            body = body[len("json") :]
        body = body.strip()
    return body


def _parse(text: object) -> ToolCallParse | None:
    if not isinstance(text, str):
        return ToolCallParse(None, f"expected text, got {type(text).__name__}")
    if _OPEN not in text:
        return None
    if len(text) > MAX_TURN_CHARS:
        return ToolCallParse(None, f"turn longer than {MAX_TURN_CHARS} characters", 1)
    first, n = _blocks(text)
    if first is None:
        return ToolCallParse(None, f"unterminated {_OPEN}: close it with {_CLOSE}", 1)
    body = first.strip()
    if len(body) > MAX_CALL_CHARS + 2 * len(_FENCE) + len("json"):
        return ToolCallParse(None, f"tool call longer than {MAX_CALL_CHARS} characters", n)
    body = _unfence(body)
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
    if not isinstance(text, str) or len(text) > MAX_TURN_CHARS:
        return None
    match = _SOURCE_RE.search(text)
    if match is None:
        return None
    index = 0 if match.group(1) == "original" else int(match.group(2))
    return index if 0 <= index < n_observations else None
