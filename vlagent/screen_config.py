"""Config sections of the computer-use worlds: ``desktop`` (OSWorld-format tasks on a local X
desktop) and ``web`` (MiniWoB++ in headless Chromium).

Both worlds re-prompt each turn with the last screenshots and the earlier actions as text (the
``apps`` world's adapter), so they share the fields that shape a turn's prompt.
"""

from __future__ import annotations

import dataclasses

from vlagent.errors import ConfigError
from vlagent.world_config import TurnPromptConfig


def _check(cond: bool, field: str, msg: str) -> None:
    if not cond:
        raise ConfigError(f"{field}: {msg}")


@dataclasses.dataclass
class DesktopConfig(TurnPromptConfig):
    """OSWorld-format tasks on a local Xvfb desktop (world ``desktop``, ``gui.osworld``)."""

    train_suite: str = "local"
    """Training tasks: a bundled suite (``local``, ``os``) or a folder / file of task JSON."""
    eval_suite: str = "local"
    """Held-out tasks (same forms). Tasks whose setup cannot run here are left out and counted."""
    width: int = 1024
    """X screen width in pixels."""
    height: int = 768
    """X screen height in pixels."""
    max_steps: int = 15
    """Actions per episode before the episode is truncated (then evaluated); the local suite's
    longest oracle script takes 12."""
    step_timeout: float = 10.0
    """Seconds one action or evaluator command may take before it is killed (episode error)."""

    screen_width: int = 256
    """Screenshots are resized to this width in pixels before the processor (0: keep)."""
    screen_height: int = 192
    """Screenshots are resized to this height in pixels before the processor (0: keep)."""

    def __post_init__(self) -> None:
        self.check_prompt("desktop")
        _check(320 <= self.width <= 3840, "desktop.width", "must be in [320, 3840]")
        _check(240 <= self.height <= 2160, "desktop.height", "must be in [240, 2160]")
        _check(1 <= self.max_steps <= 100, "desktop.max_steps", "must be in [1, 100]")
        _check(self.step_timeout > 0, "desktop.step_timeout", "must be > 0")


@dataclasses.dataclass
class WebConfig(TurnPromptConfig):
    """MiniWoB++ tasks in headless Chromium (world ``web``, ``gui.web``)."""

    tasks: list[str] = dataclasses.field(default_factory=list)
    """MiniWoB++ task names (empty: the bundled suite ``gui.web.suite.MINIWOB_SUITE``)."""
    screen_width: int = 160
    """Page screenshots (160×210 CSS pixels) are resized to this width (0: keep)."""
    screen_height: int = 210
    """Page screenshots are resized to this height (0: keep)."""
    max_browsers: int = 8
    """At most this many episodes run at once (one Chromium each, reused across episodes)."""

    def __post_init__(self) -> None:
        self.check_prompt("web")
        _check(1 <= self.max_browsers <= 64, "web.max_browsers", "must be in [1, 64]")
        _check(
            all(isinstance(t, str) and t for t in self.tasks),
            "web.tasks",
            "must be a list of MiniWoB++ task names",
        )
