"""A private virtual X display: Xvfb (plus the openbox window manager) in its own process groups.

``XDisplay(1024, 768).start()`` picks a free display number itself (``Xvfb -displayfd``), so
many displays can run side by side; ``close()`` kills both process groups (TERM, then KILL)
and removes the X socket and lock file should the server leave them behind.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import os
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import IO

from sim.desktop.errors import DesktopError, DesktopUnavailable

# binary or module -> the command that installs it (Debian / Ubuntu, and pip for modules)
BINARIES = {
    "Xvfb": "apt-get install -y xvfb",
    "xdotool": "apt-get install -y xdotool",
    "bwrap": "apt-get install -y bubblewrap",
    "openbox": "apt-get install -y openbox",
    "xterm": "apt-get install -y xterm",
    "xedit": "apt-get install -y x11-apps",
    "xcalc": "apt-get install -y x11-apps",
}
MODULES = {"mss": "pip install mss", "Xlib": "pip install python-xlib"}
X11_UNIX = Path("/tmp/.X11-unix")


def missing_requirements() -> list[str]:
    """One human line per missing binary (on PATH) or Python module; ``[]`` when all are there.

    Each line names the missing piece and the command that installs it, e.g.
    ``"Xvfb not found on PATH: apt-get install -y xvfb"``.
    """
    lines = [f"{b} not found on PATH: {cmd}" for b, cmd in BINARIES.items() if not shutil.which(b)]
    lines += [
        f"Python module {m} not importable: {cmd}"
        for m, cmd in MODULES.items()
        if importlib.util.find_spec(m) is None
    ]
    bwrap = shutil.which("bwrap")
    problem = _bwrap_problem(bwrap) if bwrap else None
    if problem:
        lines.append(
            f"bwrap cannot create a sandbox here ({problem}): run as root, or allow "
            "unprivileged user namespaces (sysctl -w kernel.unprivileged_userns_clone=1)"
        )
    return lines


@functools.cache
def _bwrap_problem(bwrap: str) -> str | None:
    """Why bwrap fails to make a sandbox like :class:`~sim.desktop.sandbox.Sandbox`'s (its
    error output), or None when it works. Cached: one probe (~20 ms) per process."""
    argv = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
    argv += ["--unshare-pid", "--unshare-net", "--die-with-parent", "--new-session", "true"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return str(exc)
    return None if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")


def require_binary(name: str) -> str:
    """The full path of binary ``name``; raises :class:`DesktopUnavailable` naming its package."""
    path = shutil.which(name)
    if path is None:
        install = BINARIES.get(name, f"install the package that provides {name}")
        raise DesktopUnavailable(f"{name} not found on PATH: {install}")
    return path


def stop_group(proc: subprocess.Popen | None, grace: float = 2.0) -> None:
    """Stop ``proc`` and its process group (it must lead its own group): SIGTERM, wait up to
    ``grace`` seconds, then SIGKILL. Safe on processes that already exited."""
    if proc is None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    # members of the group that outlived its leader
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _tail(log: IO[bytes] | None, limit: int = 2000) -> str:
    if log is None:
        return ""
    with contextlib.suppress(OSError, ValueError):
        log.seek(0)
        return log.read().decode("utf-8", "replace")[-limit:].strip()
    return ""


def _listening(path: Path) -> bool:
    """True when a server accepts connections on unix socket ``path``."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(1.0)
        try:
            sock.connect(str(path))
        except OSError:
            return False
    return True


class _State:
    """What :meth:`XDisplay.close` must undo; kept apart so a finalizer can run it at exit."""

    def __init__(self) -> None:
        self.xvfb: subprocess.Popen | None = None
        self.wm: subprocess.Popen | None = None
        self.number: int | None = None
        self.logs: list[IO[bytes]] = []
        self.tmp: Path | None = None
        self.hooks: list[Callable[[], None]] = []

    def close(self) -> None:
        hooks, self.hooks = self.hooks, []
        for hook in hooks:
            with contextlib.suppress(Exception):
                hook()
        stop_group(self.wm)
        stop_group(self.xvfb)
        if self.number is not None and self.xvfb is not None:
            # a killed server leaves its socket (and lock file, when it made one); leave both
            # alone when another server already took the number over
            lock = Path(f"/tmp/.X{self.number}-lock")
            try:
                owner = int(lock.read_text().strip())
            except (OSError, ValueError):
                owner = None
            if owner in (None, self.xvfb.pid):
                sock = X11_UNIX / f"X{self.number}"
                if not _listening(sock):
                    sock.unlink(missing_ok=True)
                    lock.unlink(missing_ok=True)
        for log in self.logs:
            log.close()
        self.logs = []
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None
        self.wm = self.xvfb = None


class XDisplay:
    """A virtual screen of ``width`` x ``height`` pixels at 24-bit depth.

    Xvfb listens on a unix socket only (``-nolisten tcp``); no auth cookie is used (local
    clients of this machine may connect, as apps in :class:`sim.desktop.sandbox.Sandbox` do).
    With ``window_manager`` openbox runs on it, so windows get frames, focus and EWMH
    properties (``_NET_CLIENT_LIST``, ``_NET_ACTIVE_WINDOW``).
    """

    def __init__(
        self,
        width: int = 1024,
        height: int = 768,
        window_manager: bool = True,
        start_timeout: float = 10.0,
    ) -> None:
        for field, v in (("width", width), ("height", height)):
            if not isinstance(v, int) or isinstance(v, bool) or not 16 <= v <= 8192:
                raise ValueError(f"XDisplay {field} must be an int in [16, 8192], got {v!r}")
        self.width, self.height = width, height
        self.window_manager = window_manager
        self.start_timeout = float(start_timeout)
        self._state = _State()
        self._started = False
        self._finalizer = weakref.finalize(self, self._state.close)

    # -- properties -------------------------------------------------------------------------
    @property
    def number(self) -> int:
        """The display number N (the server listens on ``/tmp/.X11-unix/XN``)."""
        if self._state.number is None:
            raise DesktopError("XDisplay is not started: call start() first")
        return self._state.number

    @property
    def name(self) -> str:
        """The display name, e.g. ``":7"`` (the value of ``DISPLAY``)."""
        return f":{self.number}"

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` in pixels."""
        return self.width, self.height

    @property
    def env(self) -> dict[str, str]:
        """This process's environment with ``DISPLAY`` set to this display (and any
        ``XAUTHORITY`` / ``WAYLAND_DISPLAY`` removed): pass it as ``env=`` to host commands."""
        env = {k: v for k, v in os.environ.items() if k not in ("XAUTHORITY", "WAYLAND_DISPLAY")}
        env["DISPLAY"] = self.name
        return env

    @property
    def running(self) -> bool:
        """True while the X server process is alive."""
        xvfb = self._state.xvfb
        return xvfb is not None and xvfb.poll() is None

    @property
    def pids(self) -> list[int]:
        """Process ids of the X server and the window manager (for leak checks)."""
        return [p.pid for p in (self._state.xvfb, self._state.wm) if p is not None]

    def add_close_hook(self, hook: Callable[[], None]) -> None:
        """Run ``hook()`` first thing in :meth:`close` (e.g. to drop cached X connections);
        its exceptions are ignored."""
        self._state.hooks.append(hook)

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> XDisplay:
        """Start Xvfb (and openbox), wait until the display answers; returns ``self``.

        Raises :class:`DesktopUnavailable` when a binary is missing or the server fails to
        come up within ``start_timeout`` seconds (the message carries the server's log).
        """
        if self._started:
            raise DesktopError("XDisplay.start() called twice; make a new XDisplay")
        self._started = True
        xvfb_bin = require_binary("Xvfb")
        wm_bin = require_binary("openbox") if self.window_manager else None
        if importlib.util.find_spec("Xlib") is None:
            raise DesktopUnavailable(f"Python module Xlib not importable: {MODULES['Xlib']}")
        deadline = time.monotonic() + self.start_timeout
        try:
            self._start_xvfb(xvfb_bin, deadline)
            self._wait_until(deadline, self._answers, "the X server to accept connections")
            if wm_bin is not None:
                self._start_wm(wm_bin)
                self._wait_until(deadline, self._wm_ready, "openbox to manage the screen")
        except BaseException:
            self.close()
            raise
        return self

    def _start_xvfb(self, binary: str, deadline: float) -> None:
        log = tempfile.TemporaryFile()  # noqa: SIM115 (lives until close())
        self._state.logs.append(log)
        read_fd, write_fd = os.pipe()
        argv = [binary, "-displayfd", str(write_fd), "-nolisten", "tcp", "-noreset"]
        argv += ["-screen", "0", f"{self.width}x{self.height}x24"]
        try:
            self._state.xvfb = subprocess.Popen(
                argv,
                pass_fds=(write_fd,),
                start_new_session=True,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        finally:
            os.close(write_fd)
        data = b""
        try:
            while not data.endswith(b"\n"):
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([read_fd], [], [], left)[0]:
                    raise DesktopUnavailable(
                        f"Xvfb gave no display number within {self.start_timeout:.0f} s; "
                        f"log: {_tail(log)!r}"
                    )
                chunk = os.read(read_fd, 64)
                if not chunk:
                    raise DesktopUnavailable(f"Xvfb exited while starting; log: {_tail(log)!r}")
                data += chunk
        finally:
            os.close(read_fd)
        self._state.number = int(data.strip())

    def _start_wm(self, binary: str) -> None:
        log = tempfile.TemporaryFile()  # noqa: SIM115 (lives until close())
        self._state.logs.append(log)
        # openbox writes ~/.cache/openbox: give it a private folder, removed on close
        tmp = Path(tempfile.mkdtemp(prefix="vlagent-openbox-"))
        self._state.tmp = tmp
        env = self.env | {"XDG_CACHE_HOME": str(tmp), "XDG_CONFIG_HOME": str(tmp)}
        self._state.wm = subprocess.Popen(
            [binary, "--sm-disable"],
            env=env,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )

    def _wait_until(self, deadline: float, ready, what: str) -> None:
        while True:
            if not self.running:
                raise DesktopUnavailable(f"Xvfb exited; log: {_tail(self._state.logs[0])!r}")
            wm = self._state.wm
            if wm is not None and wm.poll() is not None:
                raise DesktopUnavailable(f"openbox exited; log: {_tail(self._state.logs[-1])!r}")
            if ready():
                return
            if time.monotonic() > deadline:
                raise DesktopUnavailable(
                    f"timed out after {self.start_timeout} s waiting for {what}"
                )
            time.sleep(0.02)

    def _answers(self) -> bool:
        from Xlib import display as xdisplay
        from Xlib import error as xerror

        try:
            d = xdisplay.Display(self.name)
        except (xerror.DisplayError, OSError):
            return False
        d.close()
        return True

    def _wm_ready(self) -> bool:
        from Xlib import display as xdisplay

        d = xdisplay.Display(self.name)
        try:
            atom = d.intern_atom("_NET_SUPPORTING_WM_CHECK")
            return d.screen().root.get_full_property(atom, 0) is not None
        finally:
            d.close()

    def close(self) -> None:
        """Kill openbox and Xvfb (TERM, then KILL after 2 s), remove a leftover socket / lock
        file and the window manager's temp folder. Idempotent."""
        self._state.close()

    def __enter__(self) -> XDisplay:
        return self if self._started else self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        where = self.name if self._state.number is not None else "not started"
        return f"XDisplay({where}, {self.width}x{self.height}, running={self.running})"
