"""Value types of a generated screen: its accessibility-style elements and the screen itself."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BoxNorm = tuple[float, float, float, float]


@dataclass(frozen=True)
class Element:
    """One interactive element of a synthetic screen (an accessibility-tree leaf).

    Attributes:
        kind: generator kind (``shape``, ``button``, ``icon``, ``toggle``, ``text_field``,
            ``list_row``, ``tab``).
        box_norm: ``(x0, y0, x1, y1)`` in [0, 1] of the image width / height; the clickable
            area (for a toggle, the switch, not its label).
        label: visible text, icon name, toggle label or placeholder; ``""`` for shapes.
        colour: palette name of its fill or accent (see :data:`sim.screens.palette.PALETTE`).
        shape: outline of a ``shape`` element, else ``None``.
        state: ``"on"`` / ``"off"`` for toggles, ``"selected"`` for the active tab, else ``None``.
        role: accessibility role (``img``, ``button``, ``menuitem``, ``switch``, ``textbox``,
            ``listitem``, ``tab``).
    """

    kind: str
    box_norm: BoxNorm
    label: str
    colour: str
    shape: str | None
    state: str | None
    role: str


@dataclass(frozen=True, eq=False)
class Screen:
    """A rendered synthetic screen with its instruction and ground truth.

    Attributes:
        image: ``uint8`` array of shape ``(H, W, 3)``, RGB, read-only.
        instruction: English instruction that identifies exactly one element.
        target_index: index of the target in ``elements``.
        elements: every interactive element, in drawing order.
        target_box_norm: ``elements[target_index].box_norm``, xyxy in [0, 1].
        reference: how the instruction identifies the target (a
            :data:`sim.screens.level.Reference` value).
        level_name: name of the :class:`~sim.screens.level.ScreenLevel` it came from.
        seed: the seed it was generated from.
        panel_box_norm: the panel drawn around the target (levels with ``panel_frac``), xyxy
            in [0, 1], or None.
    """

    image: np.ndarray
    instruction: str
    target_index: int
    elements: tuple[Element, ...]
    target_box_norm: BoxNorm
    reference: str
    level_name: str
    seed: int
    panel_box_norm: BoxNorm | None = None

    @property
    def target(self) -> Element:
        """The element the instruction refers to."""
        return self.elements[self.target_index]
