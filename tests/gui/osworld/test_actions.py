"""OSWorld action spaces -> GUI actions: computer_13 dicts and pyautogui code (never executed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gui.actions import BaseAction, InvalidAction
from gui.osworld.actions import computer13_pointer, from_computer13, from_pyautogui
from gui.osworld.suites import BUNDLED
from gui.osworld.task_file import load_tasks

SCREEN = (1920, 1080)
OS_DIR = BUNDLED["os"]  # the 24 OSWorld os task files, shipped with the package


def _dicts(out: list[BaseAction] | InvalidAction) -> list[dict[str, Any]]:
    assert isinstance(out, list), out
    return [a.to_dict() for a in out]


def _pt(x: float, y: float) -> list[float]:
    return [x / 1920, y / 1080]


REAL = [  # snippets as OSWorld's agents (mm_agents prompts) and task files write them
    ("pyautogui.click(960, 540)", [{"type": "click", "point": [0.5, 0.5]}]),
    (
        "import pyautogui; import time; pyautogui.click(960, 540); time.sleep(0.5);",
        [{"type": "click", "point": [0.5, 0.5]}, {"type": "wait", "seconds": 0.5}],
    ),
    ('pyautogui.hotkey("ctrl", "alt", "t")', [{"type": "hotkey", "keys": ["ctrl", "alt", "t"]}]),
    (
        "pyautogui.write('cd testDir'); time.sleep(0.5); pyautogui.press('enter')",
        [
            {"type": "type", "text": "cd testDir"},
            {"type": "wait", "seconds": 0.5},
            {"type": "key", "key": "enter"},
        ],
    ),
    (
        '# Click "Yes, I trust the authors" button\npyautogui.click(x=480, y=270, duration=1)',
        [{"type": "click", "point": [0.25, 0.25]}],
    ),
    ("pyautogui.doubleClick(192, 108)", [{"type": "double_click", "point": [0.1, 0.1]}]),
    ("pyautogui.rightClick(x=192, y=108)", [{"type": "right_click", "point": [0.1, 0.1]}]),
    ("pyautogui.click(192, 108, clicks=2)", [{"type": "double_click", "point": [0.1, 0.1]}]),
    ("pyautogui.click(192, 108, button='right')", [{"type": "right_click", "point": [0.1, 0.1]}]),
    ("pyautogui.click((192, 108))", [{"type": "click", "point": [0.1, 0.1]}]),
    (
        "pyautogui.moveTo(384, 216)\npyautogui.click()",
        [{"type": "click", "point": [0.2, 0.2]}],
    ),
    (
        "pyautogui.moveTo(192, 108, duration=0.3, tween=pyautogui.easeInQuad)\n"
        "pyautogui.dragTo(960, 540, duration=0.5, button='left')",
        [{"type": "drag", "start": [0.1, 0.1], "end": [0.5, 0.5]}],
    ),
    ("pyautogui.scroll(-5)", [{"type": "scroll", "point": [0.5, 0.5], "direction": "down"}]),
    (
        "pyautogui.scroll(3, x=192, y=108)",
        [{"type": "scroll", "point": [0.1, 0.1], "direction": "up"}],
    ),
    ("pyautogui.hscroll(-2)", [{"type": "scroll", "point": [0.5, 0.5], "direction": "left"}]),
    ("pyautogui.typewrite('ls -la\\n', interval=0.05)", [{"type": "type", "text": "ls -la\n"}]),
    (
        "pyautogui.typewrite(['a', 'enter'])",
        [{"type": "key", "key": "a"}, {"type": "key", "key": "enter"}],
    ),
    ("pyautogui.press(['tab', 'Tab'])", [{"type": "key", "key": "tab"}] * 2),
    ("pyautogui.press('space', presses=2)", [{"type": "key", "key": "space"}] * 2),
    ("pyautogui.press('\\n')", [{"type": "key", "key": "enter"}]),
    ("pyautogui.press('A')", [{"type": "key", "key": "A"}]),
    ("pyautogui.moveTo(10, 10)", []),
    ("```python\npyautogui.click(960, 540)\n```", [{"type": "click", "point": [0.5, 0.5]}]),
    ("DONE", [{"type": "done"}]),
    ("  FAIL\n", [{"type": "fail", "reason": ""}]),
    ("```WAIT```", [{"type": "wait", "seconds": 1.0}]),
    (
        "pyautogui.click(960, 540)\nDONE",
        [{"type": "click", "point": [0.5, 0.5]}, {"type": "done"}],
    ),
]


@pytest.mark.parametrize(("code", "want"), REAL, ids=[c[:40] for c, _ in REAL])
def test_real_snippets(code: str, want: list[dict[str, Any]]) -> None:
    got = _dicts(from_pyautogui(code, SCREEN))
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g.keys() == w.keys() and g["type"] == w["type"]
        for k, v in w.items():
            assert g[k] == (pytest.approx(v) if isinstance(v, list | float) else v)


def test_task_file_setup_snippets_convert() -> None:
    """Every ``python -c "import pyautogui..."`` setup step of the 24 os tasks converts, except
    6ebbfb01's ``pyautogui.type`` (no such pyautogui function)."""
    seen = 0
    for task in load_tasks(OS_DIR):
        for step in (*task.config, *task.evaluator.postconfig):
            cmd = step.parameters.get("command")
            if not (isinstance(cmd, list) and len(cmd) == 3 and "pyautogui" in cmd[2]):
                continue
            seen += 1
            out = from_pyautogui(cmd[2], SCREEN)
            if task.id.startswith("6ebbfb01"):
                assert isinstance(out, InvalidAction)
                assert "pyautogui.type() is not allowed" in out.reason
            else:
                assert isinstance(out, list) and out, (task.id, out)
    assert seen == 21


def test_cursor_is_followed() -> None:
    assert isinstance(from_pyautogui("pyautogui.click()", SCREEN), InvalidAction)
    assert "pointer position is unknown" in from_pyautogui("pyautogui.click()", SCREEN).reason
    assert _dicts(from_pyautogui("pyautogui.click()", SCREEN, cursor=(960, 540))) == [
        {"type": "click", "point": [0.5, 0.5]}
    ]
    two = _dicts(from_pyautogui("pyautogui.click(192, 108); pyautogui.doubleClick()", SCREEN))
    assert two[1] == {"type": "double_click", "point": pytest.approx([0.1, 0.1])}
    half = _dicts(from_pyautogui("pyautogui.moveTo(192, 108); pyautogui.click(y=540)", SCREEN))
    assert half == [{"type": "click", "point": pytest.approx([0.1, 0.5])}]
    drag = from_pyautogui("pyautogui.dragTo(10, 10)", SCREEN)
    assert isinstance(drag, InvalidAction) and "start position" in drag.reason
    assert _dicts(from_pyautogui("pyautogui.dragTo(0, 0)", SCREEN, cursor=(1920, 1080))) == [
        {"type": "drag", "start": [1.0, 1.0], "end": [0.0, 0.0]}
    ]


C13 = [
    ({"action_type": "CLICK", "x": 960, "y": 540}, {"type": "click", "point": [0.5, 0.5]}),
    (
        {"action_type": "CLICK", "parameters": {"button": "right", "x": 192, "y": 108}},
        {"type": "right_click", "point": [0.1, 0.1]},
    ),
    (
        {"action_type": "CLICK", "x": 192, "y": 108, "num_clicks": 2},
        {"type": "double_click", "point": [0.1, 0.1]},
    ),
    (
        {"action_type": "DOUBLE_CLICK", "x": 192, "y": 108},
        {"type": "double_click", "point": [0.1, 0.1]},
    ),
    (
        {"action_type": "RIGHT_CLICK", "x": 192, "y": 108},
        {"type": "right_click", "point": [0.1, 0.1]},
    ),
    (
        {"action_type": "SCROLL", "dx": 0, "dy": -3},
        {"type": "scroll", "point": [0.5, 0.5], "direction": "down"},
    ),
    (
        {"action_type": "SCROLL", "parameters": {"dx": 4, "dy": 1}},
        {"type": "scroll", "point": [0.5, 0.5], "direction": "right"},
    ),
    ({"action_type": "TYPING", "text": "hello 'world'"}, {"type": "type", "text": "hello 'world'"}),
    ({"action_type": "PRESS", "key": "Enter"}, {"type": "key", "key": "enter"}),
    ({"action_type": "HOTKEY", "keys": ["ctrl", "c"]}, {"type": "hotkey", "keys": ["ctrl", "c"]}),
    ({"action_type": "WAIT"}, {"type": "wait", "seconds": 1.0}),
    ({"action_type": "DONE"}, {"type": "done"}),
    ("FAIL", {"type": "fail", "reason": ""}),
]


@pytest.mark.parametrize(("obj", "want"), C13, ids=[str(o)[:40] for o, _ in C13])
def test_computer13(obj: Any, want: dict[str, Any]) -> None:
    got = from_computer13(obj, SCREEN)
    assert isinstance(got, BaseAction), got
    assert got.to_dict() == {k: pytest.approx(v) if k == "point" else v for k, v in want.items()}


@pytest.mark.parametrize(
    ("obj", "reason"),
    [
        ({"action_type": "MOVE_TO", "x": 1, "y": 1}, "MOVE_TO: unsupported"),
        ({"action_type": "MOUSE_DOWN"}, "MOUSE_DOWN: unsupported"),
        ({"action_type": "KEY_UP", "key": "a"}, "KEY_UP: unsupported"),
        ({"action_type": "CLICK"}, "pointer position is unknown"),
        ({"action_type": "CLICK", "x": 5}, "CLICK: give x and y together"),
        ({"action_type": "CLICK", "x": 1, "y": 1, "button": "middle"}, "'middle' have no GUI"),
        ({"action_type": "CLICK", "x": 1, "y": 1, "num_clicks": 3}, "3 click(s)"),
        ({"action_type": "CLICK", "x": 3000, "y": 1}, "outside the 1920x1080 screen"),
        ({"action_type": "DRAG_TO", "x": 5, "y": 5}, "start position"),
        ({"action_type": "DRAG_TO"}, "DRAG_TO: give x and y together (required)"),
        ({"action_type": "SCROLL", "dx": 0, "dy": 0}, "dx and dy are both 0"),
        ({"action_type": "PRESS", "key": "space"}, "unknown key 'space'"),  # not in computer_13
        ({"action_type": "HOTKEY", "keys": "ctrl+c"}, "HOTKEY: keys must be a list"),
        ({"action_type": "TYPING", "text": ""}, "TYPING: text must be a non-empty str"),
        ({"action_type": "TYPING", "text": "x" * 2001}, "type.text"),
        ({"action_type": "MOUSE_MOVE", "x": 1, "y": 1}, "unknown computer_13 action_type"),
        ({"action_type": "CLICK", "parameters": [1]}, "CLICK: parameters must be a mapping"),
        (None, "computer_13 action must be a mapping"),
    ],
)
def test_computer13_invalid(obj: Any, reason: str) -> None:
    got = from_computer13(obj, SCREEN)
    assert isinstance(got, InvalidAction) and reason in got.reason, got


def test_computer13_cursor_and_pointer() -> None:
    drag = from_computer13({"action_type": "DRAG_TO", "x": 0, "y": 0}, SCREEN, cursor=(960, 540))
    assert drag.to_dict() == {"type": "drag", "start": [0.5, 0.5], "end": [0.0, 0.0]}
    assert computer13_pointer({"action_type": "MOVE_TO", "x": 5, "y": 6}, None) == (5.0, 6.0)
    moved = {"action_type": "CLICK", "parameters": {"x": 7, "y": 8}}
    assert computer13_pointer(moved, (1, 1)) == (7.0, 8.0)
    assert computer13_pointer({"action_type": "TYPING", "text": "x"}, (1, 1)) == (1, 1)
    assert isinstance(from_computer13({"action_type": "WAIT"}, (0, 10)), InvalidAction)


HOSTILE = [
    ("import os; os.system('touch {m}')", "import os is not allowed"),
    ("__import__('os').system('touch {m}')", "call of <expression>.system() is not allowed"),
    ("eval(\"open('{m}', 'w')\")", "call of eval() is not allowed"),
    ("exec(\"open('{m}', 'w')\")", "call of exec() is not allowed"),
    ("open('{m}', 'w').write('x')", "call of <expression>.write() is not allowed"),
    ("import subprocess; subprocess.run(['touch', '{m}'])", "import subprocess is not allowed"),
    ("pyautogui.click(open('{m}', 'w'), 1)", "call of open() is not allowed (arguments must be"),
    ('pyautogui.write(f\'{{open("{m}", "w")}}\')', "an f-string is not allowed"),
    ("(lambda: open('{m}', 'w'))()", "call of <expression>() is not allowed"),
    ("pyautogui.os.system('touch {m}')", "call of pyautogui.os.system() is not allowed"),
    ("pyautogui.__class__.__init__.__globals__['os'].system('x')", "<expression>.system()"),
    ("for i in range(3):\n    pyautogui.click(1, 1)", "For statement is not allowed"),
    ("x = 5\npyautogui.click(x, 1)", "Assign statement is not allowed"),
    ("pyautogui.click(x, 1)", "name x is not allowed"),
    ("pyautogui.write('a' * 5000)", "BinOp expression is not allowed"),
    ("pyautogui.click(10**400, 1)", "BinOp expression is not allowed"),
    ("pyautogui.click(1e400, 1)", "x must be a finite number"),
    ("pyautogui.click(*[1, 2])", "*args is not allowed"),
    ("pyautogui.click(**{{'x': 1}})", "keyword ** is not allowed"),
    ("pyautogui.click(1, 1, bogus=2)", "keyword bogus is not allowed"),
    ("import pyautogui as p", "import pyautogui as p is not allowed"),
    ("from os import system", "ImportFrom statement is not allowed"),
    ("with open('{m}', 'w'): pass", "With statement is not allowed"),
    ("def f(): pass", "FunctionDef statement is not allowed"),
    ("'just a string'", "str constant is not allowed"),
    ("DONE\npyautogui.click(1, 1)", "DONE must be the last statement"),
    ("pyautogui.tripleClick(1, 1)", "pyautogui.tripleClick() is not allowed"),
    ("pyautogui.mouseDown()", "pyautogui.mouseDown() is not allowed"),
    ("pyautogui.click('submit.png')", "locating an image on screen is not supported"),
    ("pyautogui.press('notakey')", "unknown key 'notakey'"),
    ("pyautogui.hotkey()", "hotkey() needs at least one key"),
    ("pyautogui.press('a', presses=10**3)", "BinOp expression"),
    ("pyautogui.press('a', presses=1000)", "presses must be 0-64"),
    ("time.sleep(120)", "wait.seconds"),
    ("time.sleep(-1)", "wait.seconds"),
    ("pyautogui.write('" + "x" * 2001 + "')", "type.text"),
    ("pyautogui.click(1, 1)\n" * 70, "more than 64 actions"),
    ("pyautogui.click(1, 1" + ")" * 3, "not valid Python (SyntaxError"),
    ("(" * 5000 + "1" + ")" * 5000, "not valid Python (SyntaxError"),
    ("-" * 19000 + "1", "not valid Python (MemoryError"),
    ("x" + ".y" * 9000, "not valid Python (RecursionError"),
    ("lambda: " * 2000 + "1", "Lambda expression is not allowed"),
    ("\x00\xff\ud800 junk", "not valid Python"),
    ("y" * 20001, "code must have 1-20000 characters"),
    ("", "code must have 1-20000 characters"),
]


@pytest.mark.parametrize(("code", "reason"), HOSTILE, ids=[h[0][:30] for h in HOSTILE])
def test_hostile_code_is_rejected_and_never_run(code: str, reason: str, tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    out = from_pyautogui(code.replace("{m}", str(marker)), SCREEN)
    assert isinstance(out, InvalidAction), out
    assert reason in out.reason, out.reason
    assert not marker.exists()


@pytest.mark.parametrize(
    "bad", [b"pyautogui.click(1, 1)", None, 42, ["DONE"], b"pyautogui.click(1,1)"]
)
def test_non_text_input(bad: Any) -> None:
    out = from_pyautogui(bad, SCREEN)
    assert isinstance(out, InvalidAction) and "must be a str" in out.reason


@pytest.mark.parametrize("size", [(0, 10), (-1, 5), ("a", 1), None, (1, 2, 3), (float("nan"), 1)])
def test_bad_screen_size(size: Any) -> None:
    out = from_pyautogui("pyautogui.click(0, 0)", size)
    assert isinstance(out, InvalidAction) and "screen_size" in out.reason


_TOKENS = st.sampled_from(
    [
        "pyautogui",
        ".",
        "click",
        "(",
        ")",
        "1",
        "-",
        "'a'",
        ",",
        "x=",
        "y=",
        "\n",
        ";",
        "time",
        "sleep",
        "import",
        " ",
        "DONE",
        "[",
        "]",
        "**",
        "*",
        "lambda",
        ":",
        "f'",
        "0.5",
        "press",
    ]
)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=200), st.lists(_TOKENS, max_size=30).map("".join)))
def test_fuzz_never_raises(code: str) -> None:
    out = from_pyautogui(code, SCREEN)
    assert isinstance(out, InvalidAction | list)
    if isinstance(out, list):
        assert all(isinstance(a, BaseAction) for a in out)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["CLICK", "SCROLL", "TYPING", "PRESS", "HOTKEY", "DRAG_TO", "X", None]),
    st.dictionaries(
        st.sampled_from(
            ["x", "y", "dx", "dy", "text", "key", "keys", "button", "num_clicks", "parameters"]
        ),
        _JSON,
    ),
)
def test_computer13_fuzz_never_raises(kind: Any, params: dict[str, Any]) -> None:
    out = from_computer13({"action_type": kind, **params}, SCREEN, cursor=(5, 5))
    assert isinstance(out, InvalidAction | BaseAction)
