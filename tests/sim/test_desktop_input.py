"""XInput on a real display: hostile text reaches an app literally (no shell anywhere),
clicks land on the asked pixel, drags move windows, key chords are validated."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from sim.desktop import DesktopSession, missing_requirements, parse_chord
from sim.desktop.xinput import keysym_of, plan_typing, split_text

MISSING = missing_requirements()
SKIP = pytest.mark.skipif(bool(MISSING), reason="desktop unavailable: " + "; ".join(MISSING))


def needs_desktop(test):
    """Mark ``test`` as needing an X display; skip it (naming the package) when one is missing."""
    return SKIP(pytest.mark.display(test))


@pytest.fixture(scope="module")
def session():
    s = DesktopSession()
    yield s
    s.close()


def _wait_for(predicate, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@needs_desktop
def test_hostile_text_is_typed_literally(session):
    tag = uuid.uuid4().hex[:8]
    session.reset_home()
    session.launch("terminal", ["-e", "sh", "-c", "cat > ~/typed.txt"], wait_title="Terminal")
    assert session.activate_window("Terminal")
    hostile = (
        f"$(touch /tmp/pwned_{tag}) `touch ~/pwned_{tag}` ; rm -rf ~ && echo \"hi\" 'q' "
        "é ñ 漢 \\ | > < * -- --help\nsecond\tline"
    )
    dropped = session.input.type_text(hostile + "\x01\x1b\r\n")
    assert dropped == ["\x01", "\x1b", "\r"]
    session.input.key("ctrl+d")  # EOF: cat exits, the file is complete
    typed = session.sandbox.host_path("~/typed.txt")
    want = hostile + "\n"
    assert _wait_for(lambda: typed.exists() and typed.read_text("utf-8") == want), (
        typed.read_text("utf-8") if typed.exists() else "no file"
    )
    assert not list(Path("/tmp").glob(f"pwned_{tag}*"))
    assert not list(Path.home().glob(f"pwned_{tag}*"))
    assert not list(session.home.rglob(f"pwned_{tag}*"))
    assert {"Desktop", "Documents", "Downloads", "typed.txt"} <= {
        p.name for p in session.home.iterdir()
    }


@needs_desktop
def test_more_distinct_characters_than_spare_keycodes(session):
    session.reset_home()
    session.launch("terminal", ["-e", "sh", "-c", "cat > ~/cjk.txt"], wait_title="Terminal")
    text = "".join(chr(0x4E00 + i) for i in range(40)) + " ÀÉÎ àéî ß € ł"
    assert session.input.type_text(text + "\n") == []
    session.input.key("ctrl+d")
    out = session.sandbox.host_path("~/cjk.txt")
    assert _wait_for(lambda: out.exists() and out.read_text("utf-8").endswith("\n"))
    assert out.read_text("utf-8") == text + "\n"


@needs_desktop
def test_click_and_move_land_on_the_pixel(session):
    session.input.click(123, 45)
    assert session.input.mouse_location() == (123, 45)
    session.input.move(1023, 767)
    assert session.input.mouse_location() == (1023, 767)
    session.input.scroll(10, 10, "down", clicks=2)
    assert session.input.mouse_location() == (10, 10)


@needs_desktop
def test_drag_moves_a_window_by_its_title_bar(session):
    session.reset_home()
    w = session.launch("calculator", wait_title="Calculator")
    x0, y0 = w.x + w.width // 2, w.y - 8  # on openbox's title bar, above the client area
    session.input.drag(x0, y0, x0 - 60, y0 + 40)

    def moved() -> bool:
        now = [v for v in session.windows() if v.title == "Calculator"][0]
        return (now.x, now.y) == (w.x - 60, w.y + 40)

    assert _wait_for(moved, 3.0), session.windows()


@needs_desktop
@pytest.mark.parametrize(
    "bad", [(1024, 0), (0, 768), (-1, 5), (1.5, 2), (True, 1), ("10", 10)], ids=str
)
def test_off_screen_or_non_integer_points_are_refused(session, bad):
    with pytest.raises(ValueError, match=r"\bx\b|\by\b"):
        session.input.click(*bad)


@needs_desktop
def test_key_chords_are_validated_before_sending(session):
    assert session.input.key("ctrl+c") == "ctrl+c"
    assert session.input.key("Escape") == "Escape"
    for bad in ("rm -rf", "ctrl+s; ls", "ctrl+", "F36"):
        with pytest.raises(ValueError, match="key"):
            session.input.key(bad)
    with pytest.raises(ValueError, match="direction"):
        session.input.scroll(5, 5, "sideways")


def test_parse_chord_aliases_and_spelling():
    assert parse_chord("enter") == "Return"
    assert parse_chord("ESC") == "Escape"
    assert parse_chord("backspace") == "BackSpace"
    assert parse_chord("pageup") == "Page_Up"
    assert parse_chord("del") == "Delete"
    assert parse_chord("cmd+space") == "super+space"
    assert parse_chord("win+up") == "super+Up"
    assert parse_chord("Ctrl+Shift+T") == "ctrl+shift+t"
    assert parse_chord("alt+f4") == "alt+F4"
    assert parse_chord("ctrl++") == "ctrl+plus"
    assert parse_chord("ctrl+-") == "ctrl+minus"
    assert parse_chord("A") == "A"
    with pytest.raises(ValueError, match="'rm -rf'"):
        parse_chord("rm -rf")
    with pytest.raises(ValueError, match="'é'"):
        parse_chord("ctrl+é")


def test_split_text_sends_newlines_and_tabs_as_keys():
    steps, dropped = split_text("a\tb\r\nc\x00\x7f")
    assert steps == [("type", "a"), ("key", "Tab"), ("type", "b"), ("key", "Return"), ("type", "c")]
    assert dropped == ["\r", "\x00", "\x7f"]


def test_plan_typing_binds_missing_characters_and_reuses_keycodes():
    a, e, n, u = (keysym_of(c) for c in "aéñü")
    assert keysym_of("漢") == 0x1000000 + ord("漢") and e == 0xE9
    assert plan_typing("aé", {a}, {}, [200, 201]) == [({200: e}, "aé")]
    assert plan_typing("éñ", set(), {200: n}, [201]) == [({201: e}, "éñ")]
    # two spare keycodes, three distinct characters: a second chunk rebinds the oldest
    assert plan_typing("éñüé", set(), {}, [200, 201]) == [
        ({200: e, 201: n}, "éñ"),
        ({200: u, 201: e}, "üé"),
    ]
    with pytest.raises(RuntimeError, match="spare keycode"):
        plan_typing("é", set(), {}, [])
