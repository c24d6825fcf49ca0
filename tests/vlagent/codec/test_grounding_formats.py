"""Grounding answer formats: every format x kind x family round-trips; real UI-TARS, Qwen2-VL and
GUI-R1 outputs parse to hand-computed values; a seeded fuzz corpus never raises, stays fast and
never yields an answer off the image."""

from __future__ import annotations

import gc
import math
import random
import re
import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from perception_tools.geometry import CoordSpace, Frame, ImageSize
from vlagent.codec import ANSWER_FORMATS, Answer, GroundingCodec, ParseError
from vlagent.world_config import TASK_ANSWER_FORMATS, TaskConfig

FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")
# resized != original (and not proportional) so a codec that reads the wrong space is off by far
# more than one unit
FRAMES = (
    Frame(ImageSize(1000, 600), ImageSize(1400, 840)),
    Frame(ImageSize(1920, 1080), ImageSize(1288, 700)),
)
SPECIALS = ("<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>", "<|box_end|>")


def _boxes(n: int = 12) -> list[tuple[float, float, float, float]]:
    rng = random.Random(7)
    out = [(0.0, 0.0, 0.01, 0.01), (0.99, 0.99, 1.0, 1.0), (0.0, 0.0, 1.0, 1.0)]
    while len(out) < n:
        x0, y0 = rng.uniform(0, 0.9), rng.uniform(0, 0.9)
        out.append((x0, y0, x0 + rng.uniform(0.01, 0.1), y0 + rng.uniform(0.01, 0.1)))
    return out


def _unit(family: str, frame: Frame) -> tuple[float, float]:
    """One unit of the family's space in normalized coordinates (x, y), plus float slack."""
    if family == "qwen2_5_vl":
        return 1.000001 / frame.resized.width, 1.000001 / frame.resized.height
    return 1.000001e-3, 1.000001e-3


def _strip_specials(text: str) -> str:
    for tok in SPECIALS:
        text = text.replace(tok, "")
    return text


def test_format_lists_agree():
    assert set(TASK_ANSWER_FORMATS) == set(ANSWER_FORMATS)
    assert len(TASK_ANSWER_FORMATS) == len(ANSWER_FORMATS)
    for fmt in ANSWER_FORMATS:
        assert TaskConfig(answer_format=fmt).answer_format == fmt
    from vlagent.errors import ConfigError

    with pytest.raises(ConfigError, match=r"task\.answer_format: 'tars' is unknown; .*uitars"):
        TaskConfig(answer_format="tars")


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("fmt", ANSWER_FORMATS)
@pytest.mark.parametrize("kind", ["point", "box"])
def test_round_trip_every_format_kind_family(family, fmt, kind):
    codec = GroundingCodec.for_family(family, fmt=fmt, kind=kind)
    for frame in FRAMES:
        ux, uy = _unit(family, frame)
        for box in _boxes():
            text = codec.render(box, frame, think="the target")
            # the numbers written are the target in the family's space, computed independently
            pixels = family == "qwen2_5_vl"
            sx, sy = (frame.resized.width, frame.resized.height) if pixels else (1000, 1000)
            if kind == "point":
                want = [round((box[0] + box[2]) / 2 * sx), round((box[1] + box[3]) / 2 * sy)]
            else:
                want = [round(box[0] * sx), round(box[1] * sy), round(box[2] * sx)]
                want.append(round(box[3] * sy))
            if not pixels:
                want = [min(v, 999) for v in want]
            bare = re.sub(r"<[^>]*>|Thought:.*\n", "", text)
            written = [int(v) for v in re.findall(r"(?<![A-Za-z_])\d+", bare)]
            assert written == want, (text, want)
            variants = [text, _strip_specials(text)] if fmt == "qwen_box" else [text]
            for variant in variants:
                ans = codec.parse(variant, frame)
                assert isinstance(ans, Answer), (variant, ans)
                cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
                assert abs(ans.point_norm[0] - cx) <= ux and abs(ans.point_norm[1] - cy) <= uy
                if kind == "box":
                    for got, exp, u in zip(ans.box_norm, box, (ux, uy, ux, uy), strict=True):
                        assert abs(got - exp) <= u, (variant, ans.box_norm, box)
                else:
                    assert ans.box_norm is None
                assert ans.action_type == ("click" if fmt == "uitars" else None)
            if fmt == "uitars":
                assert text.startswith("Thought: the target\nAction: click(start_box='(")


def test_render_hand_computed():
    frame = FRAMES[0]  # resized 1400 x 840
    box = (0.1, 0.2, 0.3, 0.4)  # centre (0.2, 0.3)
    px = GroundingCodec.for_family("qwen2_5_vl", fmt="uitars")
    assert px.render(box, frame) == "Action: click(start_box='(280,252)')"
    k = GroundingCodec.for_family("qwen2_vl", fmt="uitars", kind="box")
    assert k.render(box, frame, think="it") == (
        "Thought: it\nAction: click(start_box='(100,200,300,400)')"
    )
    q = GroundingCodec.for_family("qwen2_vl", fmt="qwen_box", kind="box")
    assert q.render(box, frame) == (
        "<|object_ref_start|>target<|object_ref_end|><|box_start|>(100,200),(300,400)<|box_end|>"
    )
    qp = GroundingCodec.for_family("qwen2_vl", fmt="qwen_box")
    assert qp.render(box, frame).endswith("<|box_start|>(200,300)<|box_end|>")


# (family, text, point_norm, box_norm, action_type, typed_text) on frame 1000x600 -> 1400x840
REAL = [
    # UI-TARS-1.5 (Qwen2.5-VL): pixels of the smart-resized image
    (
        "qwen2_5_vl",
        "Thought: The search box is at the top of the page; I click it.\n"
        "Action: click(start_box='(700,210)')",
        (0.5, 0.25),
        None,
        "click",
        None,
    ),
    (
        "qwen2_5_vl",
        "Thought: Click the settings gear.\nAction: click(point='<point>350 168</point>')",
        (0.25, 0.2),
        None,
        "click",
        None,
    ),
    (
        "qwen2_5_vl",
        "Action: left_double(start_box='(140,84,420,252)')",
        (0.2, 0.2),
        (0.1, 0.1, 0.3, 0.3),
        "left_double",
        None,
    ),
    (
        "qwen2_5_vl",
        "Reflection: the menu did not open.\nAction_Summary: open it again.\n"
        "Action: right_single(start_box='(1400,840)')",
        (1.0, 1.0),
        None,
        "right_single",
        None,
    ),
    # UI-TARS 1.0 (Qwen2-VL): thousandths inside Qwen2-VL box tokens
    (
        "qwen2_vl",
        "Thought: 点击搜索按钮\nAction: click(start_box='<|box_start|>(235,512)<|box_end|>')",
        (0.235, 0.512),
        None,
        "click",
        None,
    ),
    (
        "qwen2_vl",
        "Thought: type the city.\nAction: type(start_box='(500,100)', content='New York\\'s \\n')",
        (0.5, 0.1),
        None,
        "type",
        "New York's \n",
    ),
    (
        "qwen2_vl",
        "Action: scroll(start_box='<|box_start|>(400,600)<|box_end|>', direction='down')",
        (0.4, 0.6),
        None,
        "scroll",
        None,
    ),
    (
        "qwen2_vl",
        "Action: drag(start_box='(100,200)', end_box='(300,400)')",
        (0.1, 0.2),
        None,
        "drag",
        None,
    ),
    (  # the last Action: wins
        "qwen2_vl",
        "Action: click(start_box='(1,1)')\nAction: click(start_box='[250, 750]')",
        (0.25, 0.75),
        None,
        "click",
        None,
    ),
    # Qwen2-VL grounding tokens, with and without the special tokens
    (
        "qwen2_vl",
        "<|object_ref_start|>the search button<|object_ref_end|>"
        "<|box_start|>(120,45),(180,95)<|box_end|>",
        (0.15, 0.07),
        (0.12, 0.045, 0.18, 0.095),
        None,
        None,
    ),
    ("qwen2_vl", "the search button(120,45),(180,95)", (0.15, 0.07), (0.12, 0.045, 0.18, 0.095)),
    ("qwen2_vl", "<|box_start|>(640,320)<|box_end|>", (0.64, 0.32), None),
    # GUI-R1 python-literal answers
    (
        "qwen2_5_vl",
        "<think>The Wi-Fi toggle is on the right.</think>"
        "<answer>[{'action': 'click', 'point': [1050, 420], 'input_text': 'no input text'}]"
        "</answer>",
        (0.75, 0.5),
        None,
        "click",
        None,
    ),
    (
        "qwen3_vl",
        "<think>search</think><answer>[{'action': 'type', 'point': [300, 50], "
        "'input_text': 'weather today'}]</answer>",
        (0.3, 0.05),
        None,
        "type",
        "weather today",
    ),
]


@pytest.mark.parametrize("case", REAL, ids=lambda c: c[1][:40])
def test_real_outputs_parse_to_hand_computed_values(case):
    family, text, point, box, *rest = case
    action_type, typed = rest if rest else (None, None)
    fmt = "uitars" if "Action" in text else "think_answer" if "<answer>" in text else "qwen_box"
    ans = GroundingCodec.for_family(family, fmt=fmt).parse(text, FRAMES[0])
    assert isinstance(ans, Answer), ans
    assert ans.point_norm == pytest.approx(point, abs=1e-9)
    assert (ans.box_norm is None) == (box is None)
    if box is not None:
        assert ans.box_norm == pytest.approx(box, abs=1e-9)
    assert (ans.action_type, ans.typed_text) == (action_type, typed)
    pred = ans.to_prediction()
    assert (pred.action_type, pred.text, pred.format_ok) == (action_type, typed, True)
    action = ans.to_action()
    assert ("action_type" in action) == (action_type is not None)
    assert ("text" in action) == (typed is not None)
    assert action.get("action_type") == action_type and action.get("text") == typed


@pytest.mark.parametrize(
    "fmt, text, reason",
    [
        ("uitars", "I would click the button.", "no 'Action:'"),
        ("uitars", "Action: hotkey(key='ctrl c')", "hotkey(…) has no start_box"),
        ("uitars", "Action: type(content='hello')", "type(…) has no start_box"),
        ("uitars", "Action: finished(content='done')", "finished(…) has no start_box"),
        ("uitars", "Action: click(start_box='(1001,5)')", "off the image"),
        ("uitars", "Action: click(start_box='(-3,5)')", "off the image"),
        ("uitars", "Action: click(start_box='(5,5,2,9)')", "x0 < x1"),
        ("uitars", "Action: click(start_box='(5;5)')", "not a point"),
        ("uitars", "Action: click(start_box='(٣,5)')", "not a point"),  # unicode digit
        ("uitars", "Action: click(start_box='(1,2)', end_box='(1,2000)')", "end_box"),
        ("uitars", "Action: click(start_box='(1,2)", "unclosed quote"),
        ("uitars", "Action: click(start_box='(1,2)', start_box='(3,4)')", "twice"),
        ("uitars", "Action: click(point='(1,2)', start_box='(3,4)')", "twice"),
        ("uitars", "Action: click start_box='(1,2)'", "followed by '('"),
        ("qwen_box", "<|box_start|>(1,2),(3,4)", "without <|box_end|>"),
        ("qwen_box", "<|box_start|>the button<|box_end|>", "not (x,y)"),
        ("qwen_box", "it is in the top left", "no box"),
        ("qwen_box", "(1,2),(1,5)", "x0 < x1"),
        ("qwen_box", "(1,2000)", "off the image"),
        ("think_answer", "<answer>[{'action': 3, 'point': [1, 2]}]</answer>", "'action' must"),
        ("think_answer", "<answer>{'point': [1e999, 2]}</answer>", "finite"),
        ("think_answer", '<answer>{"point": [1' + "0" * 400 + ", 2]}</answer>", "finite"),
        ("think_answer", '<answer>{"point": [1000.5, 2]}</answer>', "off the image"),
        ("qwen_json", '{"point_2d": [5, -1]}', "off the image"),
        ("qwen_json", "```" + " " * 5000 + "x", "not valid JSON"),
    ],
)
def test_malformed_answers_name_the_problem(fmt, text, reason):
    out = GroundingCodec(fmt=fmt, space=CoordSpace.K1000).parse(text, FRAMES[0])
    assert isinstance(out, ParseError), out
    assert reason in out.reason, out.reason
    assert out.to_action() == {"parse_error": out.reason}


# ------------------------------------------------------------------------------- fuzz corpus
_NUMS = st.one_of(
    st.integers(-5, 2000).map(str),
    st.integers(-(10**30), 10**30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["NaN", "nan", "inf", "-inf", "1e999", "٣", "１２", "0x1f", "9" * 400, ""]),
)
_TEMPLATES = [
    "Action: click(start_box='({a},{b})')",
    "Thought: {t}\nAction: left_double(start_box='<|box_start|>({a},{b})<|box_end|>')",
    "Action: click(point='<point>{a} {b}</point>')",
    "Action: right_single(start_box='({a},{b},{c},{d})')",
    "Action: type(start_box='({a},{b})', content='{t}')",
    "Action: drag(start_box='({a},{b})', end_box='({c},{d})')",
    "Action: scroll(start_box='[{a}, {b}]', direction='{t}')",
    "<|object_ref_start|>{t}<|object_ref_end|><|box_start|>({a},{b}),({c},{d})<|box_end|>",
    "<|box_start|>({a},{b})<|box_end|>",
    "{t}({a},{b}),({c},{d})",
    "<think>{t}</think><answer>[{{'action': 'click', 'point': [{a}, {b}], 'input_text': '{t}'}}]"
    "</answer>",
    '<answer>{{"bbox": [{a}, {b}, {c}, {d}]}}</answer>',
    '{{"point_2d": [{a}, {b}]}}',
    '```json\n[{{"bbox_2d": [{a}, {b}, {c}, {d}], "label": "{t}"}}]\n```',
]
_UNITS = [
    "Action: ",
    "<|box_start|>",
    "<|box_end|>",
    "(",
    "(1,",
    "'",
    "\\'",
    '"',
    "click(",
    "start_box='",
    "<answer>",
    "</answer>",
    "<think>",
    "[",
    "{",
    "```",
    " ",
    "\n",
    "<point>",
    "9",
    "1,",
    "١",
]
_TEXT = st.text(max_size=40)
_FILLED = st.builds(
    lambda tpl, a, b, c, d, t: tpl.format(a=a, b=b, c=c, d=d, t=t),
    st.sampled_from(_TEMPLATES),
    _NUMS,
    _NUMS,
    _NUMS,
    _NUMS,
    st.one_of(_TEXT, st.sampled_from(["it's", "a'b\"c", "\\", "')", "',", "x')\nAction: "])),
)
MALFORMED = st.one_of(
    st.text(max_size=300),
    _FILLED,
    # truncated and spliced well-formed answers
    st.builds(lambda s, k: s[:k], _FILLED, st.integers(0, 120)),
    st.builds(lambda s, u, k: s[:k] + u + s[k:], _FILLED, _TEXT, st.integers(0, 120)),
    # long repetitions of tag / quote / number fragments, just under and over the length bound
    st.builds(
        lambda units, n, cut: ("".join(units) * n)[: 19_990 if cut else None],
        st.lists(st.sampled_from(_UNITS), min_size=1, max_size=4),
        st.integers(1, 6_000),
        st.booleans(),
    ),
    st.builds(lambda u, s: u * 2_000 + s, st.sampled_from(_UNITS), _FILLED),
)
# per format: qwen2_vl, qwen2_5_vl, qwen3_vl (so _CODECS[i::3] is one family, every format)
_CODECS = [
    (GroundingCodec.for_family(fam, fmt=fmt), frame)
    for fmt in ANSWER_FORMATS
    for fam, frame in zip(FAMILIES, (*FRAMES, FRAMES[0]), strict=True)
]


def _timed_parse(codec: GroundingCodec, text: str, frame: Frame) -> tuple[object, float]:
    """The parse and its CPU seconds: the best of up to 3 tries, garbage collection off (a
    collection of the test runner's heap is not the parser's time)."""
    best, out = math.inf, None
    gc.disable()
    try:
        for _ in range(3):
            t0 = time.thread_time()
            out = codec.parse(text, frame)
            best = min(best, time.thread_time() - t0)
            if best < 0.05:
                break
    finally:
        gc.enable()
    return out, best


def _check_one(text: str, accepted: Counter, family: int) -> None:
    """Every format on ``text`` (in family ``FAMILIES[family]``'s space): no exception, fast, a
    specific reason or an on-image answer."""
    for codec, frame in _CODECS[family::3]:
        out, spent = _timed_parse(codec, text, frame)
        assert spent < 0.05, (codec.fmt, len(text), spent, text[:80])
        assert isinstance(out, (Answer, ParseError))
        if isinstance(out, ParseError):
            assert out.reason and "unparseable answer" not in out.reason, out.reason
            continue
        accepted[codec.fmt] += 1
        coords = list(out.point_norm) + list(out.box_norm or ())
        assert all(math.isfinite(v) and 0.0 <= v <= 1.0 for v in coords), (codec.fmt, out)
        if out.box_norm is not None:
            assert out.box_norm[0] < out.box_norm[2] and out.box_norm[1] < out.box_norm[3]


def test_fuzz_never_raises_is_fast_and_stays_on_the_image():
    """Over 2,000 distinct seeded malformed strings through every format (families in turn);
    some of them parse (so the on-image check has answers to check), none raises or takes more
    than 50 ms."""
    accepted: Counter = Counter()
    texts: list[str] = []

    @settings(
        max_examples=3_000,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(MALFORMED)
    def run(text: str) -> None:
        texts.append(text)
        _check_one(text, accepted, len(texts) % 3)

    run()
    assert len(set(texts)) >= 2_000, len(set(texts))
    assert max(len(t) for t in texts) > 19_000
    # Some strings of every format parse, so the on-image check had answers to check. (The
    # count varies a little with machine load: Hypothesis's generation is not fully fixed by
    # derandomize; 9 think_answer acceptances were seen under load, 10+ otherwise.)
    assert all(accepted[fmt] >= 5 for fmt in ANSWER_FORMATS), accepted


def test_worst_case_inputs_are_linear():
    """Inputs that made the old regexes quadratic or worse stay well under the time budget."""
    worst = [
        "```" + " " * 19_990 + "x",  # fence regex with adjacent lazy / \s* groups
        "<answer>" * 2_499,  # <answer>(.*?)</answer> restarted at every tag
        "<think>" * 2_800,
        "Action: click(start_box='" + "'" * 19_000,
        "Action: click(a='" + "' " * 9_000,
        "( " * 9_999,
        "<|box_start|>" * 1_500,
    ]
    for text in worst:
        for codec, frame in _CODECS:
            out, spent = _timed_parse(codec, text, frame)
            assert isinstance(out, ParseError)
            assert spent < 0.05, (codec.fmt, text[:30], spent)


def test_text_modules_bound_their_input():
    """The UI-TARS and Qwen-box readers refuse over-long text themselves, before any scan."""
    from vlagent.codec import qwen_box, uitars

    long = "Action: click(start_box='(1,2)')" + " " * 20_000
    assert "longer than 20000" in uitars.parse_action_text(long)
    assert "longer than 20000" in uitars.coords("(1,2)" + " " * 20_000)
    assert "longer than 20000" in qwen_box.parse("(1,2)" + " " * 20_000)
    assert uitars.parse_action_text(long[:100]) == uitars.UITarsCall(
        "click", {"start_box": "(1,2)"}
    )
