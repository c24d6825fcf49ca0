"""Text of the UI-TARS action format: ``Thought: …`` then ``Action: name(key='value', …)``.

The grammar, as UI-TARS (bytedance/UI-TARS ``codes/ui_tars``) writes and reads it::

    Thought: I should open the search box.
    Action: click(start_box='(x,y)')

* point arguments ``start_box`` / ``end_box``; UI-TARS-1.5 / Seed also write ``point`` /
  ``start_point`` / ``end_point`` (read as ``start_box`` / ``end_box``);
* a coordinate value is ``(x,y)``, a box ``(x0,y0,x1,y1)`` or ``(x0,y0),(x1,y1)``, ``[x, y]``
  lists, ``<point>x y</point>`` / ``<bbox>x0 y0 x1 y1</bbox>`` tags, each optionally wrapped in
  Qwen2-VL's ``<|box_start|>…<|box_end|>`` (UI-TARS 1.0), or bare ``x,y``;
* other arguments are quoted strings with Python escapes (``\\'``, ``\\n``):
  ``type(content='…')``, ``hotkey(key='ctrl c')``, ``scroll(…, direction='down')``,
  ``finished(content='…')``; an unescaped quote inside a string counts as text unless a ``,``
  or ``)`` follows it (UI-TARS models write ``type(content='it's')``);
* the last ``Action:`` wins; of several calls after it the first is read; a missing final ``)``
  is tolerated as the reference parser does. Thought, ``Reflection:`` and ``Action_Summary:``
  lines before the action are free text.

This module only reads and writes text: numbers come back as written, in the model family's
space (``vlagent.codec.grounding`` maps them). Every scan is linear in the text, which callers
bound in length before calling.
"""

from __future__ import annotations

import dataclasses
import re

_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,39}")
_NUM = r"(-?[0-9]{1,12}(?:\.[0-9]{1,12})?)"
_SEP = r"\s*,\s*"
# every pattern is full-matched against one stripped argument value; no two adjacent
# quantifiers share characters, so a failing match is linear in the value
_COORD_PATTERNS = [
    re.compile(rf"\(\s*{_NUM}{_SEP}{_NUM}\s*\)"),
    re.compile(rf"\(\s*{_NUM}{_SEP}{_NUM}{_SEP}{_NUM}{_SEP}{_NUM}\s*\)"),
    re.compile(rf"\(\s*{_NUM}{_SEP}{_NUM}\s*\){_SEP}\(\s*{_NUM}{_SEP}{_NUM}\s*\)"),
    re.compile(rf"\[\s*{_NUM}{_SEP}{_NUM}\s*\]"),
    re.compile(rf"\[\s*{_NUM}{_SEP}{_NUM}{_SEP}{_NUM}{_SEP}{_NUM}\s*\]"),
    re.compile(rf"<point>\s*{_NUM}(?:{_SEP}|\s+){_NUM}\s*</point>"),
    re.compile(
        rf"<bbox>\s*{_NUM}(?:{_SEP}|\s+){_NUM}(?:{_SEP}|\s+){_NUM}(?:{_SEP}|\s+){_NUM}\s*</bbox>"
    ),
    re.compile(rf"{_NUM}{_SEP}{_NUM}"),
]
_BOX_START, _BOX_END = "<|box_start|>", "<|box_end|>"
ARG_ALIASES = {"point": "start_box", "start_point": "start_box", "end_point": "end_box"}
"""UI-TARS-1.5 / Seed argument names and the UI-TARS 1.0 name they mean."""
_MAX_ARGS = 8


@dataclasses.dataclass(frozen=True)
class UITarsCall:
    """One parsed action call.

    Attributes:
        name: the action as written, lowercased (``click``, ``left_double``, ``type``, ...).
        args: argument name (aliases mapped, see :data:`ARG_ALIASES`) -> its unescaped string.
    """

    name: str
    args: dict[str, str]


def _skip_ws(s: str, i: int) -> int:
    n = len(s)
    while i < n and s[i].isspace():
        i += 1
    return i


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}


def _scan_string(s: str, i: int) -> tuple[str, int] | str:
    """Read the quoted string starting at ``s[i]``; return (value, index after it) or a reason."""
    quote, j, n, out = s[i], i + 1, len(s), []
    while j < n:
        c = s[j]
        if c == "\\" and j + 1 < n:
            nxt = s[j + 1]
            out.append(_ESCAPES.get(nxt, "\\" + nxt))
            j += 2
            continue
        if c == quote:
            k = _skip_ws(s, j + 1)
            if k >= n or s[k] in ",)":
                return "".join(out), j + 1
        out.append(c)
        j += 1
    return "unclosed quote in the action's arguments"


def _scan_bare(s: str, i: int) -> tuple[str, int]:
    """An unquoted value (``velocity=600``): up to the next ``,`` or ``)``."""
    ends = [k for k in (s.find(",", i), s.find(")", i)) if k >= 0]
    j = min(ends) if ends else len(s)
    return s[i:j].strip(), j


def parse_call(action: str) -> UITarsCall | str:
    """Read the first ``name(key='value', …)`` call of ``action``; a reason string if malformed."""
    i = _skip_ws(action, 0)
    m = _NAME_RE.match(action, i)
    if not m:
        return "Action: must be a call such as click(start_box='(x,y)')"
    name, i = m.group(0).lower(), _skip_ws(action, m.end())
    if i >= len(action) or action[i] != "(":
        return f"Action: {name} must be followed by '(' and its arguments"
    args: dict[str, str] = {}
    i += 1
    while True:
        i = _skip_ws(action, i)
        if i >= len(action) or action[i] == ")":
            return UITarsCall(name, args)  # a missing final ')' is tolerated
        key = _NAME_RE.match(action, i)
        if not key:
            return f"Action: {name}(…) has a malformed argument near {action[i : i + 20]!r}"
        i = _skip_ws(action, key.end())
        if i >= len(action) or action[i] != "=":
            return f"Action: {name}(…) argument {key.group(0)!r} needs '=' and a value"
        i = _skip_ws(action, i + 1)
        if i < len(action) and action[i] in "'\"":
            scanned = _scan_string(action, i)
            if isinstance(scanned, str):
                return scanned
            value, i = scanned
        else:
            value, i = _scan_bare(action, i)
        arg = ARG_ALIASES.get(key.group(0), key.group(0))
        if arg in args:
            return f"Action: {name}(…) gives {arg!r} twice"
        if len(args) >= _MAX_ARGS:
            return f"Action: {name}(…) has more than {_MAX_ARGS} arguments"
        args[arg] = value
        i = _skip_ws(action, i)
        if i < len(action) and action[i] == ",":
            i += 1
        elif i < len(action) and action[i] != ")":
            return f"Action: {name}(…) expects ',' or ')' near {action[i : i + 20]!r}"


def parse_action_text(text: str, max_text: int = 20_000) -> UITarsCall | str:
    """The call after the last ``Action:`` of a UI-TARS reply, or a reason string.

    Text longer than ``max_text`` characters is refused before any scan.
    """
    if len(text) > max_text:
        return f"answer text longer than {max_text} characters"
    at = text.rfind("Action:")
    if at < 0:
        return "no 'Action:' line (expected e.g. Action: click(start_box='(x,y)'))"
    return parse_call(text[at + len("Action:") :])


def coords(value: str, max_text: int = 20_000) -> tuple[float, ...] | str:
    """Numbers of one coordinate argument (2 for a point, 4 for a box), as written.

    >>> coords("<|box_start|>(235,512)<|box_end|>"), coords("<point>350 140</point>")
    ((235.0, 512.0), (350.0, 140.0))
    """
    if len(value) > max_text:
        return f"coordinate text longer than {max_text} characters"
    v = value.strip()
    if v.startswith(_BOX_START):
        v = v[len(_BOX_START) :]
        v = v[: -len(_BOX_END)] if v.endswith(_BOX_END) else v
        v = v.strip()
    for pattern in _COORD_PATTERNS:
        m = pattern.fullmatch(v)
        if m:
            return tuple(float(g) for g in m.groups())
    short = value if len(value) <= 40 else value[:37] + "..."
    return f"{short!r} is not a point '(x,y)' or a box '(x0,y0,x1,y1)'"


def quote(value: str) -> str:
    """``value`` as a single-quoted argument with Python escapes."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def render(
    name: str, nums: list[int], thought: str | None = None, extra: dict[str, str] | None = None
) -> str:
    """A UI-TARS reply: ``Thought: …`` (when given) and ``Action: name(start_box='(…)')``.

    >>> render("click", [500, 250])
    "Action: click(start_box='(500,250)')"
    """
    args = [f"start_box='({','.join(str(n) for n in nums)})'"]
    args += [f"{k}={quote(v)}" for k, v in (extra or {}).items()]
    action = f"Action: {name}({', '.join(args)})"
    return f"Thought: {thought}\n{action}" if thought is not None else action
