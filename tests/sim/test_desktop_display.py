"""XDisplay: start / close, leftover socket and lock cleanup, no leaks over many sessions;
missing_requirements lines."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import psutil
import pytest

import sim.desktop.display as display_mod
from sim.desktop import DesktopSession, DesktopUnavailable, XDisplay, missing_requirements

MISSING = missing_requirements()
SKIP = pytest.mark.skipif(bool(MISSING), reason="desktop unavailable: " + "; ".join(MISSING))


def needs_desktop(test):
    """Mark ``test`` as needing an X display; skip it (naming the package) when one is missing."""
    return SKIP(pytest.mark.display(test))


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _descendants() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def test_missing_requirements_names_binary_and_install_command(monkeypatch):
    real_which = shutil.which
    monkeypatch.setattr(
        display_mod.shutil, "which", lambda n: None if n in ("Xvfb", "bwrap") else real_which(n)
    )
    real_spec = display_mod.importlib.util.find_spec
    monkeypatch.setattr(
        display_mod.importlib.util,
        "find_spec",
        lambda n: None if n == "mss" else real_spec(n),
    )
    lines = missing_requirements()
    assert any("Xvfb" in ln and "apt-get install -y xvfb" in ln for ln in lines), lines
    assert any("bwrap" in ln and "apt-get install -y bubblewrap" in ln for ln in lines), lines
    assert any("mss" in ln and "pip install mss" in ln for ln in lines), lines
    with pytest.raises(DesktopUnavailable, match="apt-get install -y xvfb"):
        display_mod.require_binary("Xvfb")


@pytest.mark.parametrize("size", [(0, 768), (1024, -1), (10.5, 768), (True, 768)])
def test_bad_size_is_rejected(size):
    with pytest.raises(ValueError, match="width|height"):
        XDisplay(*size)


def test_name_before_start_is_a_clear_error():
    with pytest.raises(RuntimeError, match="not started"):
        XDisplay().name  # noqa: B018


@needs_desktop
def test_start_answers_and_close_leaves_nothing():
    d = XDisplay(320, 240).start()
    n, pids = d.number, d.pids
    assert len(pids) == 2  # Xvfb and openbox
    if shutil.which("xdpyinfo"):  # x11-utils
        info = subprocess.run(["xdpyinfo"], env=d.env, capture_output=True, text=True, timeout=10)
        assert info.returncode == 0 and "320x240 pixels" in info.stdout
    assert d.name == f":{n}" and d.env["DISPLAY"] == d.name and d.size == (320, 240)
    wm_tmp = d._state.tmp
    assert wm_tmp is not None and wm_tmp.is_dir()
    d.close()
    d.close()  # idempotent
    assert all(_gone(p) for p in pids)
    assert not Path(f"/tmp/.X{n}-lock").exists()
    assert not Path(f"/tmp/.X11-unix/X{n}").exists()
    assert not wm_tmp.exists()
    assert not d.running


@needs_desktop
def test_close_removes_socket_and_lock_of_a_killed_server():
    with XDisplay(64, 64, window_manager=False) as d:
        n = d.number
        os.kill(d.pids[0], signal.SIGKILL)  # a killed server leaves its socket behind
        d._state.xvfb.wait(5)
        assert Path(f"/tmp/.X11-unix/X{n}").exists()
        # (Xvfb -displayfd makes no lock file; a stale one of ours goes too)
        Path(f"/tmp/.X{n}-lock").write_text(f"{d._state.xvfb.pid:10d}\n")
    assert not Path(f"/tmp/.X{n}-lock").exists()
    assert not Path(f"/tmp/.X11-unix/X{n}").exists()


@needs_desktop
def test_three_sessions_leak_nothing():
    before = _descendants()
    seen_pids, numbers, folders = set(), [], []
    start = time.monotonic()
    for _ in range(3):
        s = DesktopSession(320, 240)
        s.launch("terminal", wait_title="Terminal")
        seen_pids |= _descendants() - before
        numbers.append(s.display.number)
        folders += [s.home, s.sandbox._state.root, s.display._state.tmp]
        s.close()
        s.close()
    assert time.monotonic() - start < 20
    # Xvfb, openbox, bwrap and xterm (+ its shell) of each session were seen, and are gone
    assert len(seen_pids) >= 3 * 4
    assert _descendants() == before
    assert all(_gone(p) for p in seen_pids)
    for n in numbers:
        assert not Path(f"/tmp/.X11-unix/X{n}").exists()
        assert not Path(f"/tmp/.X{n}-lock").exists()
    assert folders and not any(f.exists() for f in folders)
