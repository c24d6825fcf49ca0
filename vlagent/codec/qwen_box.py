"""Text of Qwen2-VL's native grounding tokens.

Qwen2-VL answers a referring expression with
``<|object_ref_start|>label<|object_ref_end|><|box_start|>(x0,y0),(x1,y1)<|box_end|>``, numbers
in thousandths of the image ([0, 1000), the K1000 space); a point is written ``(x,y)`` inside
the same box tokens. The four markers are *special* tokens of the Qwen tokenizer, so a
completion decoded with ``skip_special_tokens=True`` (as the rollout runner decodes) reads
``label(x0,y0),(x1,y1)``: the parser accepts both, reading the first box block, or failing that
the first ``(x,y)`` / ``(x0,y0),(x1,y1)`` group of the text. Numbers come back as written, in
the model family's space (``vlagent.codec.grounding`` maps them); scans are linear in the text,
which callers bound in length before calling.
"""

from __future__ import annotations

import re

REF_START, REF_END = "<|object_ref_start|>", "<|object_ref_end|>"
BOX_START, BOX_END = "<|box_start|>", "<|box_end|>"
_NUM = r"(-?[0-9]{1,12}(?:\.[0-9]{1,12})?)"
_PAIR = rf"\(\s*{_NUM}\s*,\s*{_NUM}\s*\)"
# a point or two corners; searched in the text (each start position fails in constant time
# unless it is a '(' that opens a pair, so the search is linear)
_GROUP_RE = re.compile(rf"{_PAIR}(?:\s*,\s*{_PAIR})?")


def parse(text: str, max_text: int = 20_000) -> tuple[str | None, tuple[float, ...]] | str:
    """``(label, numbers)`` of the first box of ``text``, 2 numbers for a point and 4 for a box;
    a reason string when there is none (or ``text`` is longer than ``max_text`` characters).

    >>> parse("<|object_ref_start|>OK<|object_ref_end|><|box_start|>(10,20),(30,40)<|box_end|>")
    ('OK', (10.0, 20.0, 30.0, 40.0))
    >>> parse("OK(10,20),(30,40)")
    ('OK', (10.0, 20.0, 30.0, 40.0))
    """
    if len(text) > max_text:
        return f"answer text longer than {max_text} characters"
    label = None
    start = text.find(BOX_START)
    if start >= 0:
        end = text.find(BOX_END, start)
        if end < 0:
            return "<|box_start|> without <|box_end|>"
        body = text[start + len(BOX_START) : end].strip()
        m = _GROUP_RE.fullmatch(body)
        if not m:
            short = body if len(body) <= 40 else body[:37] + "..."
            return f"box tokens hold {short!r}, not (x,y) or (x0,y0),(x1,y1)"
        ref = text.rfind(REF_END, 0, start)
        if ref >= 0:
            opened = text.rfind(REF_START, 0, ref)
            label = text[opened + len(REF_START) : ref].strip() if opened >= 0 else None
    else:
        m = _GROUP_RE.search(text)
        if not m:
            return "no box: expected <|box_start|>(x0,y0),(x1,y1)<|box_end|> or (x,y)"
        label = text[: m.start()].replace(REF_START, "").replace(REF_END, "").strip() or None
    nums = tuple(float(g) for g in m.groups() if g is not None)
    return (label[:200] if label else None), nums


def render(nums: list[int], label: str = "target") -> str:
    """The token form of a point (2 numbers) or a box (4 numbers).

    >>> render([100, 200, 300, 400])
    '<|object_ref_start|>target<|object_ref_end|><|box_start|>(100,200),(300,400)<|box_end|>'
    """
    pairs = ",".join(f"({nums[i]},{nums[i + 1]})" for i in range(0, len(nums), 2))
    return f"{REF_START}{label}{REF_END}{BOX_START}{pairs}{BOX_END}"
