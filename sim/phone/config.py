"""Configuration of a synthetic phone: screen size and form factor."""

from __future__ import annotations

from dataclasses import dataclass

from sim.phone.errors import PhoneConfigError

PHONE_SIZE: tuple[int, int] = (288, 512)
"""Default ``(width, height)`` in pixels of the handset form factor."""
DESKTOP_SIZE: tuple[int, int] = (640, 400)
"""Default ``(width, height)`` in pixels of the desktop form factor."""


@dataclass(frozen=True)
class PhoneConfig:
    """How the phone looks; its behaviour and state do not depend on it.

    Attributes:
        desktop: ``False``: a handset (status bar, launcher grid, back / home nav bar);
            ``True``: a desktop-like window (title bar, a sidebar of apps, the same apps).
        width: screen width in pixels; ``None`` takes the form factor's default.
        height: screen height in pixels; ``None`` takes the form factor's default.
    """

    desktop: bool = False
    width: int | None = None
    height: int | None = None

    def __post_init__(self) -> None:
        default = DESKTOP_SIZE if self.desktop else PHONE_SIZE
        for name, value, low in (("width", self.width, 200), ("height", self.height, 300)):
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= 4096:
                raise PhoneConfigError(
                    f"PhoneConfig.{name} must be an int in [{low}, 4096] or None, got {value!r}"
                )
        object.__setattr__(self, "width", self.width or default[0])
        object.__setattr__(self, "height", self.height or default[1])

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` in pixels."""
        return int(self.width or 0), int(self.height or 0)
