"""One desktop for an agent: an :class:`XDisplay`, a :class:`Sandbox` home and an
:class:`XInput`, with a small catalogue of real Debian X apps.

Costs measured on a 2-core machine: a new session (Xvfb + openbox) takes ~0.2-0.3 s and
close ~0.1 s; :meth:`DesktopSession.reset_home` (kill the episode's apps, wait for their
windows to go, make a fresh home) takes ~0.03 s with no app open and ~0.1 s with three, so one
session can serve many episodes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sim.desktop.display import XDisplay, require_binary
from sim.desktop.errors import CommandTimeout, DesktopError
from sim.desktop.sandbox import Sandbox
from sim.desktop.screen import (
    Window,
    activate_window,
    active_window,
    screenshot,
    windows,
)
from sim.desktop.xinput import XInput

# App key -> argv run inside the sandbox. xterm keeps its default bitmap font ("fixed",
# 6x13 px) at a fixed 100x30 cell geometry, black on white, no cursor blink, and ignores
# title-change escapes, so its title and pixels stay deterministic.
APPS: dict[str, list[str]] = {
    "terminal": [
        "xterm",
        "-T",
        "Terminal",
        "-geometry",
        "100x30",
        "-fg",
        "black",
        "-bg",
        "white",
        "-xrm",
        "XTerm*cursorBlink: false",
        "-xrm",
        "XTerm*allowTitleOps: false",
    ],
    "text_editor": ["xedit"],
    "calculator": ["xcalc"],
}
# App key -> the title its main window shows (for ``launch(..., wait_title=...)``).
APP_TITLES: dict[str, str] = {
    "terminal": "Terminal",
    "text_editor": "xedit",
    "calculator": "Calculator",
}


class DesktopSession:
    """A ``width`` x ``height`` pixel desktop with a sandboxed home. ``network`` keeps the
    host network inside the sandbox (off by default)."""

    def __init__(self, width: int = 1024, height: int = 768, network: bool = False) -> None:
        self.network = network
        self.display = XDisplay(width, height).start()
        try:
            self.sandbox = Sandbox(self.display, network=network)
            self.input = XInput(self.display)
        except BaseException:
            self.display.close()
            raise
        self._closed = False

    @property
    def home(self) -> Path:
        """Host folder that is ``/home/user`` inside the sandbox."""
        return self.sandbox.home

    def launch(
        self,
        app: str,
        args: Sequence[str] = (),
        wait_title: str | None = None,
        timeout: float = 10.0,
    ) -> Window | None:
        """Start app ``app`` (a key of :data:`APPS`) with extra ``args`` in the sandbox.

        With ``wait_title`` wait (up to ``timeout`` s) for a window whose title contains it
        and return it; else return None at once. Raises ``ValueError`` listing the known apps
        for an unknown key, :class:`DesktopError` (with the app's output) when the app exits
        before its window shows, :class:`CommandTimeout` when the window never comes.
        """
        if app not in APPS:
            raise ValueError(f"unknown app {app!r}; known apps: {sorted(APPS)}")
        argv = APPS[app]
        require_binary(argv[0])
        proc = self.sandbox.spawn([*argv, *(str(a) for a in args)])
        if wait_title is None:
            return None
        deadline = time.monotonic() + timeout
        while True:
            found = [
                w for w in windows(self.display) if wait_title.casefold() in w.title.casefold()
            ]
            if found:
                return found[-1]
            if proc.poll() is not None:
                raise DesktopError(
                    f"{app} exited with code {proc.returncode} before a window titled "
                    f"{wait_title!r} showed; output: {self.sandbox.log_text(proc, 1000)!r}"
                )
            if time.monotonic() > deadline:
                raise CommandTimeout(
                    f"no window titled {wait_title!r} within {timeout} s after launching "
                    f"{app}; open: {[w.title for w in windows(self.display)]}"
                )
            time.sleep(0.05)

    def screenshot(self) -> np.ndarray:
        """The screen as uint8 ``(height, width, 3)`` RGB."""
        return screenshot(self.display)

    def windows(self) -> list[Window]:
        """Visible titled top-level windows, bottom to top."""
        return windows(self.display)

    def active_window(self) -> Window | None:
        """The focused window, or None."""
        return active_window(self.display)

    def activate_window(self, title: str, strict: bool = False) -> bool:
        """Focus the window whose title contains ``title`` (exact match when ``strict``)."""
        return activate_window(self.display, title, strict)

    def reset_home(self, timeout: float = 5.0) -> None:
        """Start a new episode on the same display: kill every app of the sandbox, wait (up to
        ``timeout`` s) until their windows are gone, and switch to a fresh empty home (the old
        one is deleted). Costs ~0.03-0.1 s, against ~0.3 s for a new session. The pointer
        position and any keys bound by :meth:`XInput.type_text` stay as they were."""
        old = self.sandbox
        old.close()
        self.sandbox = Sandbox(self.display, network=self.network)
        deadline = time.monotonic() + timeout
        while self.windows():
            if time.monotonic() > deadline:
                titles = [w.title for w in self.windows()]
                raise CommandTimeout(f"windows still open {timeout} s after reset: {titles}")
            time.sleep(0.02)

    def close(self) -> None:
        """Kill the apps, delete the home, stop the display. Idempotent."""
        if self._closed:
            return
        self._closed = True
        try:
            self.sandbox.close()
        finally:
            self.display.close()

    def __enter__(self) -> DesktopSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"DesktopSession({self.display!r}, home={self.home})"
