"""Chromium running MiniWoB++ pages, and GUI actions translated to miniwob's actions.

:class:`MiniWoBBrowser` drives one headless Chromium (fresh profile, no sandbox, no GPU, no
background networking or component updates) through a miniwob ``SeleniumInstance``; it reloads
a task page per episode and lifts MiniWoB's wall-clock episode limit. :func:`to_miniwob` turns a
:mod:`gui.actions` action (points normalized to [0, 1] of the screenshot) into miniwob action
dicts in CSS pixels of the 160 x 210 task area. selenium and miniwob are imported lazily.
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
import urllib.parse
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

import gui.actions as ga
from gui.web.errors import WebBackendError, require_web

log = logging.getLogger(__name__)

TASK_WIDTH, TASK_HEIGHT = 160, 210
"""MiniWoB++ task area in CSS pixels (top-left corner of the page)."""
EPISODE_MAX_TIME_MS = 24 * 3600 * 1000
"""Episode time limit set in every page (MiniWoB's default is 10 s)."""
SETTLE_TIMEOUT_S = 1.0
"""Longest wait for animations to finish after a reset or an action."""
_SETTLE_JS = """return document.getAnimations().filter(a => a.playState === 'running'
  && !(a.effect && a.effect.getComputedTiming().iterations === Infinity)).length
  + (window.jQuery ? window.jQuery(':animated').length : 0);"""
_PAGE_SETUP_JS = """core.EPISODE_MAX_TIME = @MAX_TIME@;
var style = document.createElement('style');
style.textContent = '* { caret-animation: manual !important; }';
document.head.appendChild(style);"""
"""Lift the episode time limit; stop the text caret blinking (it stays visible)."""
_CHROME_FLAGS = ("--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-extensions", "--no-first-run", "--no-default-browser-check",
    "--password-store=basic", "--hide-scrollbars", "--mute-audio",
    "--window-size=800,600")  # fmt: skip
"""Chromium flags (``--no-sandbox``: root in containers); a fresh user-data-dir is added."""


def css_to_normalized(left: float, top: float) -> tuple[float, float]:
    """Normalized ``(x, y)`` in [0, 1] of the image for a CSS-pixel page point (clipped)."""
    return min(max(left / TASK_WIDTH, 0.0), 1.0), min(max(top / TASK_HEIGHT, 0.0), 1.0)


def normalized_to_css(point: Sequence[float]) -> tuple[float, float]:
    """CSS-pixel page point of a normalized ``(x, y)``: ``(x * 160, y * 210)``, kept inside the
    task area (``x = 1`` lands in the last pixel column, not beside the area)."""
    return (
        min(point[0] * TASK_WIDTH, TASK_WIDTH - 1e-3),
        min(point[1] * TASK_HEIGHT, TASK_HEIGHT - 1e-3),
    )


_KEYS = {"enter": "<Enter>", "return": "<Enter>", "backspace": "<Backspace>", "tab": "<Tab>",
         "escape": "<Escape>", "esc": "<Escape>", "delete": "<Delete>", "del": "<Delete>",
         "space": "<Space>", "up": "<ArrowUp>", "down": "<ArrowDown>", "left": "<ArrowLeft>",
         "right": "<ArrowRight>", "pageup": "<PageUp>", "pagedown": "<PageDown>",
         "home": "<Home>", "end": "<End>", "insert": "<Insert>",
         **{f"f{i}": f"<F{i}>" for i in range(1, 13)}}  # fmt: skip
_MODIFIERS = {"alt": "A-", "option": "A-", "ctrl": "C-", "control": "C-", "meta": "M-",
              "cmd": "M-", "command": "M-", "super": "M-", "win": "M-", "shift": "S-"}  # fmt: skip
_MODIFIER_KEYS = {"A-": "<Alt>", "C-": "<Control>", "M-": "<Meta>", "S-": "<Shift>"}


def _key(name: str) -> str | None:
    """miniwob key syntax (``"<Enter>"``, ``"a"``) of a key name, or ``None``."""
    if len(name) == 1:
        return name if 32 <= ord(name) < 127 else None
    low = name.lower().replace("_", "").replace("-", "").removeprefix("arrow")
    if low in _MODIFIERS:
        return _MODIFIER_KEYS[_MODIFIERS[low]]
    return _KEYS.get(low)


_CONFIG: Any = None


def miniwob_config() -> Any:
    """miniwob ``ActionSpaceConfig`` with every action type and key combination."""
    global _CONFIG
    if _CONFIG is None:
        from miniwob.action import ActionSpaceConfig, ActionTypes
        from miniwob.constants import ALL_POSSIBLE_KEYS

        _CONFIG = ActionSpaceConfig(list(ActionTypes), TASK_WIDTH, TASK_HEIGHT)
        _CONFIG.allowed_keys = ALL_POSSIBLE_KEYS
        index = {k: i for i, k in enumerate(ALL_POSSIBLE_KEYS)}
        _CONFIG.key_index = index  # type: ignore[attr-defined]
    return _CONFIG


def to_miniwob(action: ga.BaseAction) -> list[dict[str, Any]] | str:
    """miniwob action dicts (CSS-pixel coords) for a non-terminal GUI action, or why not.

    Normalized ``(x, y)`` becomes CSS pixel ``(x * 160, y * 210)`` of the page.
    """
    from miniwob.action import ActionTypes as T

    config = miniwob_config()

    def cmd(kind: Any, point: Sequence[float] | None = None, **kw: Any) -> dict[str, Any]:
        if point is not None:
            kw["coords"] = np.array(normalized_to_css(point), np.float64)
        return {"action_type": config.action_types.index(kind), **kw}

    def press(combo: str) -> dict[str, Any]:
        return cmd(T.PRESS_KEY, key=config.key_index[combo])

    match action:
        case ga.Click(point=p):
            return [cmd(T.CLICK_COORDS, p)]
        case ga.DoubleClick(point=p):
            return [cmd(T.DBLCLICK_COORDS, p)]
        case ga.Drag(start=a, end=b) | ga.Swipe(start=a, end=b):
            return [cmd(T.MOUSEDOWN_COORDS, a), cmd(T.MOUSEUP_COORDS, b)]
        case ga.Scroll(point=p, direction=d):
            if d not in ("up", "down"):
                return f"scroll: MiniWoB pages scroll only up or down, not {d}"
            return [cmd(T.SCROLL_UP_COORDS if d == "up" else T.SCROLL_DOWN_COORDS, p)]
        case ga.Type(text=text, point=p):
            if any(0xE000 <= ord(c) <= 0xF8FF for c in text):
                return "type.text: private-use characters (WebDriver key codes) are not typed"
            return [cmd(T.CLICK_COORDS, p)] * (p is not None) + [cmd(T.TYPE_TEXT, text=text)]
        case ga.Key(key=name):
            key = _key(name)
            return f"key: {name!r} has no web-page equivalent" if key is None else [press(key)]
        case ga.Hotkey(keys=keys):
            mods = {_MODIFIERS[k.lower()] for k in keys if k.lower() in _MODIFIERS}
            rest = [k for k in keys if k.lower() not in _MODIFIERS]
            key = _key(rest[0]) if len(rest) == 1 else None
            if key is None:
                return f"hotkey: {'+'.join(keys)} is not modifiers plus one known key"
            return [press("".join(m for m in ("A-", "C-", "M-", "S-") if m in mods) + key)]
        case ga.Wait():
            return []
    return f"{action.type}: not supported on a MiniWoB++ page"


def _quit(driver: Any, profile: str) -> None:
    try:
        driver.quit()
    except Exception:  # a dead browser has nothing left to quit
        log.debug("chromedriver quit failed", exc_info=True)
    shutil.rmtree(profile, ignore_errors=True)


class MiniWoBBrowser:
    """One Chromium (fresh profile) running a miniwob ``SeleniumInstance`` that switches pages.

    Mirrors ``SeleniumInstance.create_driver`` with our flags (no sandbox, no GPU, no
    background networking or component updates, a temporary user-data-dir) and lifts the
    episode time limit in every page it loads.
    """

    def __init__(self, task: str, headless: bool = True, scale: int = 1) -> None:
        chrome, chromedriver = require_web()
        from miniwob.selenium_instance import DEFAULT_BASE_URL, SeleniumInstance
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service

        self.scale = scale
        self._base_url = DEFAULT_BASE_URL
        self.inst = SeleniumInstance(index=0, subdomain=task, headless=headless)
        self.inst.record_screenshots = False  # screenshots are taken here, at `scale`
        profile = tempfile.mkdtemp(prefix="vlagent-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = chrome
        for flag in (*_CHROME_FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        options.add_argument(f"--force-device-scale-factor={scale}")
        if headless:
            options.add_argument("--headless")
        try:
            driver = webdriver.Chrome(
                service=Service(executable_path=chromedriver), options=options
            )
        except Exception as err:
            shutil.rmtree(profile, ignore_errors=True)
            raise WebBackendError(f"Chromium ({chrome}) did not start: {err}") from err
        self.driver = self.inst.driver = driver
        self._finalizer = weakref.finalize(self, _quit, driver, profile)
        self.task = ""
        self.goto(task)

    def goto(self, task: str) -> None:
        """Load ``task``'s page and wait for its START cover."""
        from miniwob.fields import get_field_extractor
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support import expected_conditions
        from selenium.webdriver.support.wait import WebDriverWait

        try:
            extractor = get_field_extractor(task)
        except KeyError:
            extractor = None

        def fields(utterance: str) -> list[tuple[str, str]]:
            try:
                return list(extractor(utterance)) if extractor else []
            except ValueError:  # the extractor's regex does not match this utterance
                return []

        self.inst.url = urllib.parse.urljoin(self._base_url, f"{task}.html")
        self.inst.field_extractor = fields
        try:
            self.driver.get(self.inst.url)
            cover = (By.ID, self.inst.SYNC_SCREEN_ID)
            WebDriverWait(self.driver, 20).until(expected_conditions.element_to_be_clickable(cover))
            self.driver.execute_script(
                _PAGE_SETUP_JS.replace("@MAX_TIME@", str(EPISODE_MAX_TIME_MS))
            )
            size = self.driver.execute_script("return [window.innerWidth, window.innerHeight];")
        except Exception as err:
            raise WebBackendError(f"MiniWoB++ page {self.inst.url} did not load: {err}") from err
        self.inst.inner_width, self.inst.inner_height = size
        self.task = task

    def settle(self) -> None:
        """Wait (up to 1 s) until no finite CSS / jQuery animation runs."""
        deadline = time.monotonic() + SETTLE_TIMEOUT_S
        while self.driver.execute_script(_SETTLE_JS) and time.monotonic() < deadline:
            time.sleep(0.02)

    def start_episode(self, seed: int) -> dict[str, Any]:
        """Start an episode of the loaded task with ``seed``; miniwob's first observation."""
        self.inst.force_stop()
        self.inst.begin_task(seed=seed)
        self.settle()
        return self.observe(refresh_fields=True)

    def observe(self, refresh_fields: bool = False) -> dict[str, Any]:
        """miniwob's observation dict, its screenshot ``uint8 (210 s, 160 s, 3)`` taken here."""
        from miniwob.screenshot import get_screenshot

        obs, _ = self.inst.get_observation(use_cached_fields=not refresh_fields)
        s, inst = self.scale, self.inst
        img = get_screenshot(
            self.driver,
            true_width=inst.inner_width * s,
            true_height=inst.inner_height * s,
            crop_width=TASK_WIDTH * s,
            crop_height=TASK_HEIGHT * s,
        )
        obs["screenshot"] = np.asarray(img.convert("RGB"), dtype=np.uint8)
        return obs

    def close(self) -> None:
        """Quit Chromium and delete its profile (idempotent)."""
        self._finalizer()
