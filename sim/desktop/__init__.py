"""Desktop backend: a private virtual X display (Xvfb + openbox) running real Debian X apps
(xterm, xedit, xcalc) inside a bubblewrap sandbox, driven by xdotool. Pure I/O: it produces
pixels and window lists and takes pixel-coordinate actions; it knows nothing of rewards.

- :mod:`sim.desktop.display`: :class:`XDisplay`, :func:`missing_requirements`.
- :mod:`sim.desktop.xinput`: :class:`XInput` (mouse / keyboard in screen pixels).
- :mod:`sim.desktop.screen`: :func:`screenshot` (uint8 ``(H, W, 3)`` RGB), :class:`Window`,
  :func:`windows`, :func:`active_window`, :func:`activate_window`, :func:`wait_for_window`.
- :mod:`sim.desktop.sandbox`: :class:`Sandbox` (bwrap, throw-away ``/home/user``).
- :mod:`sim.desktop.session`: :class:`DesktopSession`, :data:`APPS`.

Importing this package needs only numpy and psutil; mss and python-xlib are imported when a
screenshot is taken or windows are listed.
"""

from sim.desktop.display import XDisplay, missing_requirements
from sim.desktop.errors import CommandTimeout, DesktopError, DesktopUnavailable
from sim.desktop.sandbox import Sandbox
from sim.desktop.screen import (
    Window,
    activate_window,
    active_window,
    screenshot,
    wait_for_window,
    windows,
)
from sim.desktop.session import APP_TITLES, APPS, DesktopSession
from sim.desktop.xinput import XInput, parse_chord

__all__ = [
    "APPS",
    "APP_TITLES",
    "CommandTimeout",
    "DesktopError",
    "DesktopSession",
    "DesktopUnavailable",
    "Sandbox",
    "Window",
    "XDisplay",
    "XInput",
    "activate_window",
    "active_window",
    "missing_requirements",
    "parse_chord",
    "screenshot",
    "wait_for_window",
    "windows",
]
