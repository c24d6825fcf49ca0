"""Config sections of the computer-use worlds: ``desktop`` (OSWorld-format tasks on a local X
desktop) and ``web`` (MiniWoB++ in headless Chromium).

Both worlds re-prompt each turn with the last screenshots and the earlier actions as text (the
``apps`` world's adapter), so they share the fields that shape a turn's prompt.
"""

from __future__ import annotations

import dataclasses

from vlagent.errors import ConfigError


def _check(cond: bool, field: str, msg: str) -> None:
    if not cond:
        raise ConfigError(f"{field}: {msg}")


@dataclasses.dataclass
class _TurnPrompt:
    keep_images: int = 1
    """The last k screenshots are images (k >= 1); older turns appear only as text."""
    max_text_turns: int = 8
    """At most this many past actions are listed as text (the most recent ones)."""
    screen_width: int = 256
    """Screenshots are resized to this width in pixels before the processor (0: keep)."""
    screen_height: int = 192
    """Screenshots are resized to this height in pixels before the processor (0: keep)."""
    reward: dict[str, float] = dataclasses.field(
        default_factory=lambda: {"success": 1.0, "invalid_action": -0.1}
    )
    """The env's reward terms (weights of ``success`` and ``invalid_action``): the trainer
    reads them from ``info["reward_terms"]`` and never recomputes them."""

    def _check_prompt(self, section: str) -> None:
        _check(1 <= self.keep_images <= 8, f"{section}.keep_images", "must be in [1, 8]")
        _check(self.max_text_turns >= 0, f"{section}.max_text_turns", "must be >= 0")
        for name in ("screen_width", "screen_height"):
            v = getattr(self, name)
            _check(v == 0 or 32 <= v <= 4096, f"{section}.{name}", "must be 0 or in [32, 4096]")
        unknown = set(self.reward) - {"success", "invalid_action"}
        _check(
            not unknown,
            f"{section}.reward",
            f"unknown terms {sorted(unknown)}; known: success, invalid_action",
        )


@dataclasses.dataclass
class DesktopConfig(_TurnPrompt):
    """OSWorld-format tasks on a local Xvfb desktop (world ``desktop``, ``gui.osworld``)."""

    train_suite: str = "local"
    """Training tasks: a bundled suite (``local``, ``os``) or a folder / file of task JSON."""
    eval_suite: str = "local"
    """Held-out tasks (same forms). Tasks whose setup cannot run here are left out and counted."""
    width: int = 1024
    """X screen width in pixels."""
    height: int = 768
    """X screen height in pixels."""
    max_steps: int = 10
    """Actions per episode before the episode is truncated (then evaluated)."""
    step_timeout: float = 10.0
    """Seconds one action or evaluator command may take before it is killed (episode error)."""

    def __post_init__(self) -> None:
        self._check_prompt("desktop")
        _check(320 <= self.width <= 3840, "desktop.width", "must be in [320, 3840]")
        _check(240 <= self.height <= 2160, "desktop.height", "must be in [240, 2160]")
        _check(1 <= self.max_steps <= 100, "desktop.max_steps", "must be in [1, 100]")
        _check(self.step_timeout > 0, "desktop.step_timeout", "must be > 0")


@dataclasses.dataclass
class WebConfig(_TurnPrompt):
    """MiniWoB++ tasks in headless Chromium (world ``web``, ``gui.web``)."""

    tasks: list[str] = dataclasses.field(default_factory=list)
    """MiniWoB++ task names (empty: the bundled suite ``gui.web.suite.MINIWOB_SUITE``)."""
    screen_width: int = 160
    screen_height: int = 210
    max_browsers: int = 8
    """At most this many episodes run at once (one Chromium each, reused across episodes)."""

    def __post_init__(self) -> None:
        self._check_prompt("web")
        _check(1 <= self.max_browsers <= 64, "web.max_browsers", "must be in [1, 64]")
        _check(
            all(isinstance(t, str) and t for t in self.tasks),
            "web.tasks",
            "must be a list of MiniWoB++ task names",
        )
