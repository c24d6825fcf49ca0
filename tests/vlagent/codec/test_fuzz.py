"""Fuzz every parser and tool-call path with a seeded corpus of hostile model text.

:func:`hostile_text.hostile_corpus` builds ``N_STRINGS`` strings (seeded, so a failure
reproduces): filled answer / action / tool-call templates with hostile numbers (NaN, Infinity,
1e309, 5,000-digit integers, negatives, off-image values) and hostile typed text (newline, NUL,
escape sequences, bidi overrides, shell metacharacters, JSON ``\\u0000`` escapes), random JSON
values, tag soups (``<tool_call>``, ``<answer>``, ``<think>``, fences, Qwen special tokens),
truncated and spliced templates, random Unicode (control characters and lone surrogates
included), and 20,000-character inputs (repeated open tags, unclosed fences over whitespace,
JSON nesting bombs) on both sides of the parsers' length bound.

Each string goes through: every :class:`~vlagent.codec.grounding.GroundingCodec` format in two
coordinate spaces, its answer through :func:`gui.grounding.actions.parse_action`,
:func:`~vlagent.codec.tool_calls.parse_tool_call` and the tool it calls
(:func:`perception_tools.tools.call_tool`), :func:`~vlagent.codec.tool_calls.answer_source`, the
GUI action codec (both spaces, with an element list), the Android plan of its action, and the
adb text path itself. Every call must: not raise; take <= 50 ms; accept no NaN and no
coordinate off the image; let no control character reach an executor (an ``input text``
request); and catch nothing inside (a parser's ``except Exception`` that fired on fuzz input is a
bug to fix, not to hide: caught exceptions are seen in the parsers' debug logs and reasons).
"""

from __future__ import annotations

import logging
import math
import random
import re
import time
import unicodedata
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest
from hostile_text import BIG, N_STRINGS, PROBES, SEED, TAGS, coordinate_probes, hostile_corpus

from gui.actions import InvalidAction, Type
from gui.apps.android_actions import PlanConfig, plan_action
from gui.grounding.actions import parse_action as parse_grounding_action
from perception_tools.crop import ToolContext
from perception_tools.geometry import CoordSpace, ImageSize, frame_for
from perception_tools.tools import call_tool
from sim.android.adb_text import input_command_text, shell_word, text_chunks, typing_problem
from vlagent.codec import gui_actions, tool_calls
from vlagent.codec.grounding import ANSWER_FORMATS, Answer, GroundingCodec, ParseError
from vlagent.codec.gui_actions import GuiActionCodec
from vlagent.codec.tool_calls import answer_source, parse_tool_call

BUDGET_S = 0.05
FRAME = frame_for(ImageSize(320, 240))
SPACES = (CoordSpace.K1000, CoordSpace.RESIZED_PX)
ELEMENTS = [(0.1, 0.1, 0.3, 0.2), (0.5, 0.5, 0.9, 0.95)]
PLAN = PlanConfig(activities={"Notes": "com.vlagent.phone/.Notes"})
IMAGE = np.zeros((48, 64, 3), dtype=np.uint8)
TOOL_CTX = ToolContext(space=CoordSpace.K1000, pixel_budget=64 * 64, min_side_px=8)
REFUSED = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
CAUGHT = (  # the reasons a parser gives when its catch-all ``except Exception`` fired
    "unparseable answer (",
    "action text could not be read (",
    "unreadable tool call (",
    "action could not be read:",
    "AndroidWorld action could not be read:",
)
LOGGERS = ("vlagent", "gui", "perception_tools", "sim", "rewards")


class _Caught(logging.Handler):
    """Collects log records that carry an exception (a parser's catch-all fired)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.exc_info:
            self.records.append(record)


@pytest.fixture
def caught() -> Iterator[_Caught]:
    handler = _Caught()
    loggers = [logging.getLogger(name) for name in LOGGERS]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    yield handler
    for lg, level in zip(loggers, levels, strict=True):
        lg.removeHandler(handler)
        lg.setLevel(level)


def _on_image(values: Any) -> bool:
    return all(isinstance(v, float | int) and math.isfinite(v) and 0 <= v <= 1 for v in values)


class Fuzz:
    """Runs the checks, collecting problems (the first few are reported)."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        self.calls = 0
        self.slowest = (0.0, "")

    def problem(self, where: str, s: str, why: str) -> None:
        self.problems.append(f"{where}: {why} on {s[:120]!r} (len {len(s)})")

    def call(self, where: str, s: str, fn: Callable[..., Any], *args: Any) -> Any:
        """``fn(*args)``: no exception, within budget (re-timed before it counts as slow)."""
        self.calls += 1
        t0 = time.perf_counter()
        try:
            out = fn(*args)
        except Exception as err:  # noqa: BLE001 - the point of the test
            self.problem(where, s, f"raised {type(err).__name__}: {err}")
            return None
        spent = time.perf_counter() - t0
        if spent > BUDGET_S:  # a scheduler hiccup on a shared core is not the parser's cost
            spent = min(_timed(fn, *args) for _ in range(3))
            if spent > BUDGET_S:
                self.problem(where, s, f"took {spent * 1000:.0f} ms")
        if spent > self.slowest[0]:
            self.slowest = (spent, f"{where} on len {len(s)}")
        return out

    def reason(self, where: str, s: str, reason: str | None) -> None:
        if reason and reason.startswith(CAUGHT):
            self.problem(where, s, f"caught inside: {reason}")

    def grounding(self, s: str) -> None:
        for fmt in ANSWER_FORMATS:
            for space in SPACES:
                where = f"GroundingCodec({fmt}, {space.value})"
                out = self.call(where, s, GroundingCodec(fmt=fmt, space=space).parse, s, FRAME)
                if isinstance(out, ParseError):
                    self.reason(where, s, out.reason)
                elif isinstance(out, Answer):
                    coords = [*(out.point_norm or ()), *(out.box_norm or ())]
                    if not coords or not _on_image(coords):
                        self.problem(where, s, f"accepted {out.point_norm} / {out.box_norm}")
                elif out is not None:
                    self.problem(where, s, f"returned {type(out).__name__}")
                if out is not None:
                    self.env_action(s, {**out.to_action(), "completion": s})

    def env_action(self, s: str, action: dict[str, Any]) -> None:
        where = "gui.grounding.actions.parse_action"
        out = self.call(where, s, parse_grounding_action, action)
        if out is None:
            return
        pred, reason = out
        self.reason(where, s, reason)
        if pred.format_ok:
            coords = [*(pred.point or ()), *(pred.box or ())]
            if not coords or not _on_image(coords):
                self.problem(where, s, f"accepted {pred.point} / {pred.box}")

    def tool_call(self, s: str) -> None:
        out = self.call("parse_tool_call", s, parse_tool_call, s)
        if out is not None:
            self.reason("parse_tool_call", s, out.error)
            if out.call is not None:
                result = self.call("call_tool", s, call_tool, out.call, [IMAGE], TOOL_CTX)
                crop = getattr(result, "crop", None)
                if crop is not None and not _on_image(crop.box_in_original_norm):
                    self.problem("call_tool", s, f"crop {crop.box_in_original_norm}")
        source = self.call("answer_source", s, answer_source, s, 3)
        if source is not None and not 0 <= source < 3:
            self.problem("answer_source", s, f"observation {source} of 3")

    def gui_action(self, s: str) -> None:
        for space in SPACES:
            where = f"GuiActionCodec({space.value})"
            codec = GuiActionCodec(space=space)
            out = self.call(where, s, codec.parse, s, FRAME, ELEMENTS)
            if isinstance(out, InvalidAction):
                self.reason(where, s, out.reason)
            elif out is not None:
                points = [out.to_dict().get(k) for k in ("point", "start", "end")]
                if not all(_on_image(p) for p in points if p is not None):
                    self.problem(where, s, f"accepted {out!r}")
                self.android(s, out)

    def android(self, s: str, action: Any) -> None:
        """The device plan of a parsed action: no control character reaches adb."""
        steps = self.call("plan_action", s, plan_action, action, PLAN)
        if not isinstance(steps, list):
            return
        for step in steps:
            if not hasattr(step, "input_text") or not step.input_text.text:
                continue
            arg = step.input_text.text
            if any(unicodedata.category(ch) in REFUSED for ch in arg):
                self.problem("plan_action", s, f"control character sent to adb: {arg[:60]!r}")
            self.call("shell_word", s, shell_word, arg)  # one safe shell word

    def adb_text(self, s: str) -> None:
        """The adb text path on the raw string: typed exactly, or an invalid action."""
        problem = self.call("typing_problem", s, typing_problem, s)
        if problem is None:
            steps = self.call("plan_action", s, plan_action, Type(text=s), PLAN)
            args = [st.input_text.text for st in steps or [] if hasattr(st, "input_text")]
            typed = "".join(input_command_text(shell_word(a)) for a in args if a)
            if typed != s:
                self.problem("adb text", s, f"typed {typed[:60]!r}")
            if len(args) != len(text_chunks(s)):
                self.problem("adb text", s, f"{len(args)} requests")
        else:
            action = Type.model_construct(type="type", text=s, point=None)
            out = self.call("plan_action", s, plan_action, action, PLAN)
            if not isinstance(out, InvalidAction):
                self.problem("plan_action", s, f"untypable text planned: {problem}")

    def run(self, s: str) -> None:
        self.grounding(s)
        self.tool_call(s)
        self.gui_action(s)
        self.adb_text(s)
        rng = random.Random(len(s))
        hostile = [math.nan, math.inf, -40.0, 1e20, 0.5, 1.0, -0.0]
        self.env_action(s, {"point": [rng.choice(hostile), rng.choice(hostile)], "text": s})


def _timed(fn: Callable[..., Any], *args: Any) -> float:
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0


POINT_TEMPLATES = {
    "gui": [
        '{{"action_type": "click", "x": {x}, "y": {y}}}',
        '{{"type": "click", "point": [{x}, {y}]}}',
    ],
    "think_answer": ['<answer>{{"point": [{x}, {y}]}}</answer>'],
    "qwen_json": ['{{"point_2d": [{x}, {y}]}}'],
    "uitars": ["Action: click(start_box='({x},{y})')"],
    "qwen_box": ["<|box_start|>({x},{y})<|box_end|>"],
}


def _upper(space: CoordSpace) -> tuple[float, float]:
    if space is CoordSpace.K1000:
        return 1000.0, 1000.0
    return float(FRAME.resized.width), float(FRAME.resized.height)


def test_no_off_image_coordinate_is_accepted() -> None:
    """A point template with numbers off the image (or not finite) in the codec's space is
    never accepted; every accepted point maps inside [0, 1]."""
    bad: list[str] = []
    accepted = 0
    for x, y in coordinate_probes():
        value = (float(x), float(y))
        for space in SPACES:
            hi = _upper(space)
            inside = all(math.isfinite(v) and 0 <= v <= h for v, h in zip(value, hi, strict=True))
            for fmt, templates in POINT_TEMPLATES.items():
                for template in templates:
                    text = template.format(x=x, y=y)
                    if fmt == "gui":
                        out = GuiActionCodec(space=space).parse(text, FRAME)
                        ok = not isinstance(out, InvalidAction)
                        point = out.point if ok else None
                    else:
                        out = GroundingCodec(fmt=fmt, space=space).parse(text, FRAME)
                        ok = isinstance(out, Answer)
                        point = out.point_norm if ok else None
                    accepted += ok
                    if ok and (not inside or not _on_image(point)):
                        bad.append(f"{fmt} {space.value} accepted {text!r} as {point}")
    assert not bad, f"{len(bad)} off-image points accepted:\n" + "\n".join(bad[:10])
    assert accepted > PROBES  # in-image probes do parse (the check is not vacuous)


def test_corpus_is_seeded_and_hostile() -> None:
    corpus = hostile_corpus()
    assert len(corpus) >= 10_000 and corpus == hostile_corpus()
    assert sum(len(s) >= BIG for s in corpus) >= 20
    assert sum("\x00" in s for s in corpus) >= 100
    assert sum(("\n" in s or "\\n" in s) for s in corpus) >= 100
    assert sum("NaN" in s or "Infinity" in s for s in corpus) >= 100
    assert max(s.count("<tool_call>") for s in corpus) >= 8000


def test_fuzz_corpus_through_every_parser(caught: _Caught) -> None:
    fuzz = Fuzz()
    t0 = time.perf_counter()
    for s in hostile_corpus():
        fuzz.run(s)
    elapsed = time.perf_counter() - t0
    caught_inside = [
        f"{r.name}: {r.getMessage()[:120]} ({r.exc_info[0].__name__})"  # type: ignore[index]
        for r in caught.records
    ]
    assert not caught_inside, f"{len(caught_inside)} exceptions caught inside parsers: " + (
        "\n".join(caught_inside[:10])
    )
    assert not fuzz.problems, f"{len(fuzz.problems)} problems:\n" + "\n".join(fuzz.problems[:15])
    assert fuzz.calls >= 10 * N_STRINGS
    assert elapsed < 120, f"fuzzing took {elapsed:.0f} s (slowest: {fuzz.slowest})"


def _old_json_body(text: str) -> str | None:
    """The regex implementation the linear scans replaced (quadratic on long inputs)."""
    body = re.sub(r"^\s*<think>.*?</think>\s*", "", text, count=1, flags=re.DOTALL)
    answers = re.findall(r"<answer>(.*?)</answer>", body, re.DOTALL)
    if answers:
        body = answers[-1]
    elif "<answer>" in body:
        return None
    fence = re.search(r"```(?:json)?\s*(.*?)\s*```", body, re.DOTALL)
    if fence:
        body = fence.group(1)
    return body.strip() or None


def test_linear_scans_read_what_the_regexes_read() -> None:
    """On short tag soups (where the old regexes are fast) the linear scans agree with them."""
    rng = random.Random(SEED + 2)
    pieces = [*TAGS, "<answer>", "</answer>", "```json", "x", " ", '{"a": 1}', "json"]
    for _ in range(3_000):
        s = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 14)))
        blocks = re.findall(r"<tool_call>(.*?)</tool_call>", s, re.DOTALL)
        assert tool_calls._blocks(s) == (blocks[0] if blocks else None, len(blocks)), s
        body = gui_actions._json_body(s)
        assert (None if isinstance(body, InvalidAction) else body) == _old_json_body(s), s
