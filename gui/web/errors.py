"""Exceptions raised by :mod:`gui.web`, and the check that the browser stack is installed."""

from __future__ import annotations

import importlib.util
import os
import shutil

from gui.errors import GuiError

INSTALL_HINT = "apt-get install -y chromium chromium-driver; pip install 'vlagent[web]'"
"""What to run when part of the web stack is missing."""
CHROME_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
"""Browser executables looked up on ``PATH`` (in this order)."""
CHROME_ENV, DRIVER_ENV = "MINIWOB_CHROME_BINARY", "MINIWOB_CHROMEDRIVER"


class WebError(GuiError):
    """Base class of every error raised by ``gui.web``."""


class WebUnavailable(WebError, RuntimeError):
    """Chromium, chromedriver, selenium or miniwob is missing; the message names which and how
    to install it."""


class WebTaskError(WebError, ValueError):
    """A web env was built or reset with a bad task name, task id, option or argument."""


class WebBackendError(WebError, RuntimeError):
    """The browser failed to start or to load a task page."""


def find_browser() -> tuple[str, str]:
    """Paths ``(chromium, chromedriver)``; raises :class:`WebUnavailable` naming what is missing.

    ``MINIWOB_CHROME_BINARY`` and ``MINIWOB_CHROMEDRIVER`` (set both or neither) override the
    ``PATH`` lookup, as in miniwob itself.
    """
    chrome_env, driver_env = os.environ.get(CHROME_ENV), os.environ.get(DRIVER_ENV)
    if bool(chrome_env) != bool(driver_env):
        raise WebUnavailable(f"set {CHROME_ENV} and {DRIVER_ENV} together (or neither)")
    if chrome_env and driver_env:
        for var, path in ((CHROME_ENV, chrome_env), (DRIVER_ENV, driver_env)):
            if not (os.path.isfile(path) and os.access(path, os.X_OK)):
                raise WebUnavailable(f"{var}={path!r} is not an executable file")
        return chrome_env, driver_env
    chrome = next((p for p in map(shutil.which, CHROME_NAMES) if p), None)
    driver = shutil.which("chromedriver")
    missing = [name for name, path in (("chromium", chrome), ("chromedriver", driver)) if not path]
    if missing:
        raise WebUnavailable(
            f"{' and '.join(missing)} not found on PATH (looked for {', '.join(CHROME_NAMES)} and "
            f"chromedriver, or set {CHROME_ENV} and {DRIVER_ENV}); install with: {INSTALL_HINT}"
        )
    assert chrome is not None and driver is not None
    return chrome, driver


def require_web() -> tuple[str, str]:
    """Check the whole web stack (python packages and binaries) without starting anything.

    Returns:
        ``(chromium, chromedriver)`` paths.

    Raises:
        WebUnavailable: naming every missing piece and the install command.
    """
    missing = [m for m in ("selenium", "miniwob") if importlib.util.find_spec(m) is None]
    if missing:
        raise WebUnavailable(
            f"python package(s) {', '.join(missing)} not installed; install with: {INSTALL_HINT}"
        )
    return find_browser()
