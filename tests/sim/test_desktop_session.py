"""DesktopSession: screenshots, window list / activation / waiting, app catalogue, and
reset_home between episodes."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from sim.desktop import (
    APP_TITLES,
    APPS,
    CommandTimeout,
    DesktopSession,
    missing_requirements,
    wait_for_window,
)

MISSING = missing_requirements()
pytestmark = [
    pytest.mark.display,
    pytest.mark.skipif(bool(MISSING), reason="desktop unavailable: " + "; ".join(MISSING)),
]


@pytest.fixture(scope="module")
def session():
    s = DesktopSession()
    yield s
    s.close()


@pytest.fixture
def fresh(session):
    session.reset_home()
    return session


def test_screenshot_shape_and_static_screen_is_stable(fresh):
    empty = fresh.screenshot()
    assert empty.shape == (768, 1024, 3) and empty.dtype == np.uint8
    w = fresh.launch("terminal", wait_title=APP_TITLES["terminal"])
    time.sleep(0.3)  # let xterm finish drawing
    a, b = fresh.screenshot(), fresh.screenshot()
    assert np.array_equal(a, b)
    assert a.flags.c_contiguous
    # the window is drawn where windows() says: its client area is white, the desktop is not
    box = a[w.y : w.y + w.height, w.x : w.x + w.width]
    assert (box == 255).mean() > 0.9 and not np.array_equal(a, empty)


def test_screenshots_from_many_threads_agree(fresh):
    fresh.launch("calculator", wait_title="Calculator")
    time.sleep(0.3)
    ref = fresh.screenshot()
    with ThreadPoolExecutor(3) as pool:
        shots = list(pool.map(lambda _: fresh.screenshot(), range(9)))
    assert all(np.array_equal(s, ref) for s in shots)


def test_windows_lists_apps_by_title_with_boxes_on_screen(fresh):
    term = fresh.launch("terminal", wait_title="Terminal")
    calc = fresh.launch("calculator", wait_title="Calculator")
    titles = [w.title for w in fresh.windows()]
    assert titles == ["Terminal", "Calculator"]  # bottom to top
    for w in (term, calc):
        assert 0 <= w.x <= 1024 - w.width and 0 <= w.y <= 768 - w.height
    assert fresh.active_window() == calc


def test_activate_window_like_osworld(fresh):
    fresh.launch("terminal", wait_title="Terminal")
    fresh.launch("calculator", wait_title="Calculator")
    assert fresh.activate_window("terminal")  # case-insensitive substring
    assert fresh.active_window().title == "Terminal"
    assert fresh.windows()[-1].title == "Terminal"  # raised to the top
    assert not fresh.activate_window("calc", strict=True)  # strict: exact title only
    assert fresh.activate_window("Calculator", strict=True)
    assert fresh.active_window().title == "Calculator"
    assert not fresh.activate_window("no such window")


def test_wait_for_window_times_out_naming_the_title(fresh):
    start = time.monotonic()
    with pytest.raises(CommandTimeout, match="'Nonexistent App'"):
        wait_for_window(fresh.display, "Nonexistent App", timeout=0.5)
    assert time.monotonic() - start < 2.0


def test_launch_rejects_unknown_apps_and_reports_early_exit(fresh):
    with pytest.raises(ValueError, match="known apps: .*calculator.*terminal"):
        fresh.launch("firefox")
    assert set(APPS) == {"terminal", "text_editor", "calculator"}
    with pytest.raises(RuntimeError, match="exited"):
        fresh.launch("terminal", ["-no-such-flag"], wait_title="Terminal", timeout=5.0)


def test_text_editor_starts(fresh):
    w = fresh.launch("text_editor", wait_title=APP_TITLES["text_editor"])
    assert w.width > 100 and w.height > 100


def test_reset_home_gives_a_fresh_home_and_closes_apps(session):
    session.reset_home()
    session.launch("terminal", wait_title="Terminal")
    note = session.sandbox.host_path("~/Documents/note.txt")
    note.write_text("old episode")
    old_home = session.home
    start = time.monotonic()
    session.reset_home()
    assert time.monotonic() - start < 3.0
    assert session.windows() == []
    assert not old_home.exists()
    assert sorted(p.name for p in session.home.iterdir()) == ["Desktop", "Documents", "Downloads"]
    assert session.sandbox.run(["ls", "Documents"]).stdout == ""


def test_close_is_idempotent():
    s = DesktopSession(320, 240)
    home = s.home
    s.close()
    s.close()
    assert not home.exists() and not s.display.running
