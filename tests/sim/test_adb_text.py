"""Text typed through ``adb shell input text`` cannot escape the device shell.

The round trip runs a real POSIX shell (``sh``, as the device runs ``/system/bin/sh``) on the
escaped words, then Android's ``input`` rule (``%s`` is a space), and must give back the text.
Text that cannot be typed safely never becomes a request.
"""

from __future__ import annotations

import shutil
import string
import subprocess
import unicodedata

import gymnasium
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import gui  # noqa: F401  (registers the env ids)
from gui.actions import InvalidAction, Type, parse_action
from gui.apps.android_actions import PlanConfig, plan_action
from sim.android import touch
from sim.android.adb_text import (
    MAX_TYPED_CHARS,
    escape_text,
    input_command_text,
    shell_word,
    text_chunks,
    typing_problem,
    unescape_text,
)

DANGEROUS = {
    "newline": "\n",
    "carriage return": "\r",
    "NUL": "\x00",
    "tab": "\t",
    "escape": "\x1b",
    "delete": "\x7f",
    "C1 next line": "\x85",
    "line separator": "\u2028",
    "paragraph separator": "\u2029",
    "bidi override": "\u202e",
    "zero-width space": "\u200b",
    "lone surrogate": "\ud800",
    "private use": "\ue000",
    "unassigned": "\u0378",
}
"""One character of every class that cannot be typed safely."""
REFUSED = ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
SAFE = [
    string.ascii_letters + string.digits,
    string.punctuation,
    "O'Neil & Co (x); rm -rf / | cat > x $(id) `id` ${HOME} ~root *.txt [a] {a,b} !! #c",
    "100%sure %s %%s % s %",
    "-n leading dash",
    "=~ a=~/b :~",
    "café 中文 \u00a0nbsp",
    "  two  spaces  ",
    "\\",
    "ends with a backslash \\",
]


def _through_sh(words: list[str]) -> list[str]:
    """What ``sh`` passes to a command for each escaped word (one word each, or it fails)."""
    cmd = "printf '[%s]\\n' " + " ".join(words)  # a split word prints an extra [..] line
    out = subprocess.run(["sh", "-c", cmd.encode()], capture_output=True, check=True).stdout
    lines = out.decode("utf-8").split("\n")[:-1]
    assert len(lines) == len(words), (words, lines)
    assert all(line.startswith("[") and line.endswith("]") for line in lines)
    return [line[1:-1] for line in lines]


def _typed_on_device(text: str) -> str:
    """The text a device types for our requests: shell, then ``input``'s ``%s`` rule."""
    words = [escape_text(chunk) for chunk in text_chunks(text)]
    received = _through_sh(words)
    assert received == [shell_word(w) for w in words]  # the synthetic phone's shell agrees
    return "".join(input_command_text(r) for r in received)


pytestmark = pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX sh")


@pytest.mark.parametrize("text", SAFE)
def test_safe_text_types_exactly_through_a_real_shell(text: str) -> None:
    assert typing_problem(text) is None
    assert _typed_on_device(text) == text
    for chunk in text_chunks(text):
        escaped = escape_text(chunk)
        assert " " not in escaped and unescape_text(escaped) == chunk


_TYPABLE = st.characters(exclude_categories=REFUSED)


@settings(max_examples=150, deadline=None)
@given(st.text(_TYPABLE, min_size=1, max_size=40))
@example("a%sb")
@example("%")
def test_any_typable_text_round_trips(text: str) -> None:
    assert typing_problem(text) is None
    assert _typed_on_device(text) == text


@pytest.mark.parametrize("name", list(DANGEROUS))
def test_dangerous_characters_never_become_a_request(name: str) -> None:
    ch = DANGEROUS[name]
    assert unicodedata.category(ch) in REFUSED
    text = f"ok{ch}; reboot"
    problem = typing_problem(text)
    assert problem is not None and f"U+{ord(ch):04X} at index 2" in problem
    with pytest.raises(ValueError, match="cannot be typed safely"):
        escape_text(text)
    with pytest.raises(ValueError):
        touch.type_requests(text)
    action = Type.model_construct(type="type", text=text, point=None)  # past pydantic's checks
    out = plan_action(action, PlanConfig())
    assert isinstance(out, InvalidAction) and out.reason == f"type: {problem}"


def test_empty_and_overlong_text_are_invalid() -> None:
    assert "no text" in typing_problem("")
    assert typing_problem("x" * MAX_TYPED_CHARS) is None
    too_long = typing_problem("x" * (MAX_TYPED_CHARS + 1))
    assert too_long is not None and str(MAX_TYPED_CHARS) in too_long
    out = plan_action(Type(text="y" * (MAX_TYPED_CHARS + 1)), PlanConfig())
    assert isinstance(out, InvalidAction) and "at most" in out.reason


def test_literal_percent_s_is_split_into_requests() -> None:
    steps = plan_action(Type(text="50%sure"), PlanConfig())
    texts = [s.input_text.text for s in steps if hasattr(s, "input_text") and s.input_text.text]
    assert texts == ["50%", "sure"]
    with pytest.raises(ValueError, match="literal"):
        escape_text("50%sure")


def test_unescaped_shell_characters_are_refused_by_the_synthetic_shell() -> None:
    for raw in ("a;b", "a b", "$(id)", "a\nb", "trailing\\"):
        with pytest.raises(ValueError):
            unescape_text(raw)


def _focus_name_field(env) -> object:
    sim = env.unwrapped.simulator
    env.step({"type": "open_app", "name": "Contacts"})
    node = next(n for n in sim.phone.a11y_tree() if n.role == "button" and n.text == "Add contact")
    x0, y0, x1, y1 = node.bounds_norm
    env.step({"type": "click", "point": [(x0 + x1) / 2, (y0 + y1) / 2]})
    assert sim.phone.state.ui.focus == "name"
    return sim


def test_synthetic_android_env_types_exactly_and_refuses_control_characters() -> None:
    env = gymnasium.make("vlagent/AndroidSynthetic-v0")
    env.reset(seed=0, options={"task_id": "basic-add-contact-0"})
    sim = _focus_name_field(env)
    text = "50%sure O'Neil;$(x)"
    _, _, _, _, info = env.step({"type": "type", "text": text})
    assert info["invalid_reason"] is None and sim.phone.state.ui.fields["name"] == text
    for ch in ("\n", "\r", "\x1b"):
        sim.clear_outcome()
        _, _, _, _, info = env.step({"type": "type", "text": f"x{ch}y"})
        assert info["invalid_action"] and f"U+{ord(ch):04X}" in info["invalid_reason"]
        assert sim.last_outcome is None  # no command reached the device
        assert sim.phone.state.ui.fields["name"] == text
    env.close()


@pytest.mark.parametrize("ch", ["\x00", "\n", "\r"])
def test_fake_android_env_refuses_control_characters(ch: str) -> None:
    """android-env's own adb path (a NUL would raise ValueError in subprocess on a device)."""
    env = gymnasium.make("vlagent/AndroidFake-v0")
    env.reset(seed=0)
    parsed = parse_action({"type": "type", "text": f"a{ch}b"})
    assert not isinstance(parsed, InvalidAction)  # the action schema lets it through
    _, reward, terminated, _, info = env.step({"type": "type", "text": f"a{ch}b"})
    assert info["invalid_action"] and "cannot be typed safely" in info["invalid_reason"]
    assert info["backend_error"] is None and not terminated and reward < 0
    env.close()
