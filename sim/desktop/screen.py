"""Pixels and windows of an :class:`~sim.desktop.display.XDisplay`.

:func:`screenshot` grabs the whole screen with mss as a uint8 ``(H, W, 3)`` RGB array. The
window helpers read the EWMH properties openbox keeps (``_NET_CLIENT_LIST_STACKING``,
``_NET_ACTIVE_WINDOW``) through python-xlib, and fall back to the plain window tree when no
window manager runs. Window geometry is in screen PIXELS (client area, frame excluded).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

import numpy as np

from sim.desktop.display import MODULES, XDisplay
from sim.desktop.errors import CommandTimeout, DesktopError, DesktopUnavailable

_GRABBERS: dict[int, object] = {}
_GRAB_LOCK = threading.Lock()


def _grabber(display: XDisplay):
    """One mss instance per display (mss >= 10 locks each instance, so threads may share it);
    closed by the display's close hook."""
    try:
        import mss
    except ImportError as exc:
        raise DesktopUnavailable(f"Python module mss not importable: {MODULES['mss']}") from exc
    key = id(display)
    with _GRAB_LOCK:
        sct = _GRABBERS.get(key)
        if sct is None:
            sct = mss.MSS(display=display.name)
            _GRABBERS[key] = sct

            def drop(key: int = key) -> None:
                with _GRAB_LOCK:
                    old = _GRABBERS.pop(key, None)
                if old is not None:
                    old.close()

            display.add_close_hook(drop)
    return sct


def screenshot(display: XDisplay) -> np.ndarray:
    """The whole screen as a uint8 array of shape ``(height, width, 3)``, RGB, no cursor.

    Thread-safe. Raises :class:`DesktopError` when the display is not running.
    """
    if not display.running:
        raise DesktopError(f"cannot take a screenshot: {display!r} is not running")
    w, h = display.size
    region = {"left": 0, "top": 0, "width": w, "height": h}
    try:
        import mss

        if hasattr(mss, "MSS"):
            shot = _grabber(display).grab(region)
        else:  # mss < 10: instances are not thread-safe, make one per call
            with mss.mss(display=display.name) as sct:
                shot = sct.grab(region)
    except ImportError as exc:
        raise DesktopUnavailable(f"Python module mss not importable: {MODULES['mss']}") from exc
    bgra = np.frombuffer(shot.bgra, dtype=np.uint8).reshape(h, w, 4)
    return np.ascontiguousarray(bgra[:, :, 2::-1])


@dataclass(frozen=True)
class Window:
    """A visible top-level window: X id, title, and client-area box in screen pixels
    (``x``, ``y`` = top-left corner)."""

    id: int
    title: str
    x: int
    y: int
    width: int
    height: int

    @property
    def center(self) -> tuple[int, int]:
        """Pixel ``(x, y)`` of the middle of the window."""
        return self.x + self.width // 2, self.y + self.height // 2


def _connect(display: XDisplay):
    try:
        from Xlib import display as xdisplay
        from Xlib import error as xerror
    except ImportError as exc:
        raise DesktopUnavailable(f"Python module Xlib not importable: {MODULES['Xlib']}") from exc
    try:
        return xdisplay.Display(display.name)
    except (xerror.DisplayError, OSError) as exc:
        raise DesktopError(f"cannot connect to X display {display.name}: {exc}") from exc


def _root_ids(d, name: str) -> list[int] | None:
    from Xlib import X

    prop = d.screen().root.get_full_property(d.intern_atom(name), X.AnyPropertyType)
    return None if prop is None else [int(v) for v in prop.value]


def _title(d, win) -> str:
    prop = win.get_full_property(d.intern_atom("_NET_WM_NAME"), d.intern_atom("UTF8_STRING"))
    if prop is not None and prop.value:
        value = prop.value
    else:
        prop = win.get_full_property(d.intern_atom("WM_NAME"), 0)
        value = prop.value if prop is not None else b""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _window(d, wid: int) -> Window | None:
    """The Window for X id ``wid`` when it is viewable and has a title, else None."""
    from Xlib import X
    from Xlib import error as xerror

    win = d.create_resource_object("window", wid)
    root = d.screen().root
    try:
        if win.get_attributes().map_state != X.IsViewable:
            return None
        title = _title(d, win)
        if not title:
            return None
        geom = win.get_geometry()
        pos = root.translate_coords(win, 0, 0)
    except xerror.XError:  # the window went away while we looked
        return None
    return Window(wid, title, int(pos.x), int(pos.y), int(geom.width), int(geom.height))


def _list(d) -> list[Window]:
    ids = _root_ids(d, "_NET_CLIENT_LIST_STACKING")
    if ids is None:
        ids = [c.id for c in d.screen().root.query_tree().children]
    return [w for w in (_window(d, i) for i in ids) if w is not None]


def windows(display: XDisplay) -> list[Window]:
    """Visible (mapped) top-level windows that have a title, bottom to top in stacking order
    (the last one is on top)."""
    d = _connect(display)
    try:
        return _list(d)
    finally:
        d.close()


def _active(d) -> Window | None:
    listed = _list(d)
    by_id = {w.id: w for w in listed}
    ids = _root_ids(d, "_NET_ACTIVE_WINDOW")
    if ids and ids[0] in by_id:
        return by_id[ids[0]]
    # no window manager: walk up from the focus window to a listed top-level window
    win = d.get_input_focus().focus
    root_id = d.screen().root.id
    while hasattr(win, "id") and win.id != root_id:
        if win.id in by_id:
            return by_id[win.id]
        win = win.query_tree().parent
    return None


def active_window(display: XDisplay) -> Window | None:
    """The window that has the keyboard focus, or None (desktop focused / nothing open)."""
    d = _connect(display)
    try:
        return _active(d)
    finally:
        d.close()


def _matches(window: Window, title: str, strict: bool) -> bool:
    return window.title == title if strict else title.casefold() in window.title.casefold()


def activate_window(display: XDisplay, title: str, strict: bool = False, wait: float = 2.0) -> bool:
    """Raise and focus the topmost window whose title contains ``title`` (case-insensitive),
    or equals it exactly when ``strict`` (the ``wmctrl -a`` / ``wmctrl -F -a`` rule OSWorld's
    ``activate_window`` uses). Returns True once that window is active (within ``wait``
    seconds), False when no window matches or it did not become active."""
    from Xlib import X
    from Xlib.protocol import event

    d = _connect(display)
    try:
        found = [w for w in _list(d) if _matches(w, title, strict)]
        if not found:
            return False
        target = found[-1]
        win = d.create_resource_object("window", target.id)
        root = d.screen().root
        if _root_ids(d, "_NET_SUPPORTING_WM_CHECK"):
            msg = event.ClientMessage(
                window=win,
                client_type=d.intern_atom("_NET_ACTIVE_WINDOW"),
                data=(32, [2, X.CurrentTime, 0, 0, 0]),  # 2: request from a pager / tool
            )
            mask = X.SubstructureRedirectMask | X.SubstructureNotifyMask
            root.send_event(msg, event_mask=mask)
        else:
            win.configure(stack_mode=X.Above)
            win.set_input_focus(X.RevertToParent, X.CurrentTime)
        d.flush()
        deadline = time.monotonic() + wait
        while True:
            active = _active(d)
            if active is not None and active.id == target.id:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
    finally:
        d.close()


def wait_for_window(
    display: XDisplay, title: str, timeout: float = 10.0, strict: bool = False
) -> Window:
    """Poll until a visible window whose title contains ``title`` (case-insensitive; exact
    when ``strict``) exists and return the topmost one. Raises :class:`CommandTimeout` naming
    the title and the windows seen when none shows up within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        seen = windows(display)
        found = [w for w in seen if _matches(w, title, strict)]
        if found:
            return found[-1]
        if time.monotonic() > deadline:
            titles = [w.title for w in seen]
            raise CommandTimeout(
                f"no window titled {title!r} appeared within {timeout} s; open: {titles}"
            )
        time.sleep(0.05)
