"""The ``desktop`` layout: a maximized window with title, menu and tool bars, a sidebar, tabs
and a dense multi-column form; most targets are small (toolbar icons are ~0.02 % of 1080p)."""

from __future__ import annotations

import numpy as np

from sim.screens.fonts import font_size_for, text_width
from sim.screens.layout import Attributes, DecorRect, DecorText, ElementSpec, Plan
from sim.screens.level import ScreenLevel
from sim.screens.palette import BORDER, MUTED_INK, SURFACE
from sim.screens.phone import row_block
from sim.screens.vocab import WINDOW_TITLES

_TITLE_BAR: tuple[int, int, int] = (52, 56, 64)
_MENU_BAR: tuple[int, int, int] = (243, 243, 245)
_TOOL_BAR: tuple[int, int, int] = (236, 237, 240)
_SIDEBAR: tuple[int, int, int] = (229, 231, 236)
_MENU_LABELS: tuple[str, ...] = ("File", "Edit", "View", "Insert", "Format", "Tools", "Window")


def _chrome(plan: Plan, attrs: Attributes, u: int, budget: int) -> tuple[int, int, int]:
    """Title, menu and tool bars plus the sidebar, with at most ``budget`` elements.

    Returns:
        ``(content_x0, content_y0, bottom)`` in pixels: where the form area starts and ends.
    """
    level, rng = attrs.level, attrs.rng
    width, height = plan.width, plan.height

    def add(spec: ElementSpec) -> bool:
        if len(plan.specs) >= budget:
            return False
        plan.specs.append(spec)
        return True

    title_h = round(u * 1.6)
    plan.decor.append(DecorRect((0, 0, width, title_h), _TITLE_BAR))
    title = WINDOW_TITLES[int(rng.integers(len(WINDOW_TITLES)))]
    attrs.reserve_label(title)
    plan.decor.append(
        DecorText((width // 2, title_h // 2), title, font_size_for(title_h), (230, 230, 235), "mm")
    )
    side = round(title_h * 0.5)
    for i, name in enumerate(("close", "maximize", "minimize")):
        x = width - (i + 1) * title_h + (title_h - side) // 2
        box = (x, (title_h - side) // 2, x + side, (title_h - side) // 2 + side)
        add(ElementSpec("icon", box, label=name, colour="white", bg=_TITLE_BAR))

    menu_y, menu_h = title_h, round(u * 1.3)
    plan.decor.append(DecorRect((0, menu_y, width, menu_y + menu_h), _MENU_BAR))
    fs = font_size_for(menu_h)
    x = u // 2
    for label in _MENU_LABELS[: int(rng.integers(4, len(_MENU_LABELS) + 1))]:
        attrs.reserve_label(label)
        w = text_width(label, fs) + u
        box = (x, menu_y + 1, x + w, menu_y + menu_h - 1)
        add(ElementSpec("button", box, label=label, colour="grey", role="menuitem", style="flat"))
        x += w + u // 4

    tool_y, tool_h = menu_y + menu_h, round(u * 1.8)
    plan.decor.append(DecorRect((0, tool_y, width, tool_y + tool_h), _TOOL_BAR, outline=BORDER))
    x = u // 2
    if "icon" in level.kinds:
        for _ in range(int(rng.integers(8, 17))):
            y = tool_y + (tool_h - u) // 2
            colour = attrs.colour() if rng.random() < 0.3 else "black"
            add(
                ElementSpec(
                    "icon", (x, y, x + u, y + u), label=attrs.icon(), colour=colour, bg=_TOOL_BAR
                )
            )
            x += u + round(u * rng.uniform(0.4, 1.2))

    status_h = round(u * 1.1)
    bottom = height - status_h
    plan.decor.append(DecorRect((0, bottom, width, height), _MENU_BAR, outline=BORDER))
    plan.decor.append(
        DecorText((u // 2, bottom + status_h // 2), "Ready", font_size_for(status_h), MUTED_INK)
    )

    top = tool_y + tool_h
    side_w = round(width * rng.uniform(0.11, 0.17))
    plan.decor.append(DecorRect((0, top, side_w, bottom), _SIDEBAR, outline=BORDER))
    if "list_row" in level.kinds:
        row_h, y = round(u * 1.5), top + u // 2
        selected = int(rng.integers(5))
        for i in range(int(rng.integers(5, 13))):
            if y + row_h > bottom - u:
                break
            row = ElementSpec("list_row", (u // 3, y, side_w - u // 3, y + row_h))
            row.label, row.bg = attrs.label(level.text_labels), _SIDEBAR
            row.state = "selected" if i == selected else None
            if not add(row):
                break
            y += row_h + 2
    return side_w + u, top + u, bottom


def plan_desktop(level: ScreenLevel, rng: np.random.Generator, width: int, height: int) -> Plan:
    """Lay out a desktop window whose elements fill ``level.n_elements`` where space allows.

    ``size_frac x short side`` is the unit ``u``: toolbar icons are ``u`` px square, widget rows
    ``1.5 u`` tall.

    Args:
        level: the knobs (kinds, unit range, vocabularies).
        rng: the screen's generator; the only source of randomness.
        width: screen width in pixels.
        height: screen height in pixels.

    Returns:
        The plan in pixels.
    """
    attrs = Attributes(level, rng)
    plan = Plan(width, height)
    lo, hi = level.size_frac
    u = max(10, round(min(width, height) * (lo + (hi - lo) * rng.random())))
    budget = int(rng.integers(level.n_elements[0], level.n_elements[1] + 1))
    # Chrome takes at most half the budget, so every screen has form content too.
    x0, y0, bottom = _chrome(plan, attrs, u, budget // 2)
    right = width - u

    if "tab" in level.kinds:
        tab_h, x = round(u * 1.6), x0
        fs = font_size_for(tab_h)
        accent, selected = attrs.colour(), int(rng.integers(3))
        for i in range(int(rng.integers(3, 7))):
            label = attrs.label(level.text_labels)
            w = text_width(label, fs) + 2 * u
            if x + w > right:
                break
            tab = ElementSpec("tab", (x, y0, x + w, y0 + tab_h), label=label, colour=accent)
            tab.state = "selected" if i == selected else None
            plan.specs.append(tab)
            x += w + 2
        plan.decor.append(DecorRect((x0, y0 + tab_h + 1, right, y0 + tab_h + 2), BORDER))
        y0 += tab_h + u

    n_cols = int(rng.integers(2, 5))
    col_gap = 2 * u
    col_w = (right - x0 - (n_cols - 1) * col_gap) // n_cols
    row_h = round(u * 1.5)
    block_kinds = [k for k in level.kinds if k != "tab"] or ["list_row"]
    tops: list[int | None] = []
    for c in range(n_cols):
        cx0 = x0 + c * (col_w + col_gap)
        card = (cx0 - u // 2, y0 - u // 2, cx0 + col_w + u // 2, bottom - u // 2)
        plan.decor.append(DecorRect(card, SURFACE, outline=BORDER, radius=u // 3))
        tops.append(y0)
    # Fill the shortest column next, so content spreads over every column.
    while len(plan.specs) < budget and tops:
        c = min(range(n_cols), key=lambda i: tops[i] if tops[i] is not None else 1 << 30)
        if tops[c] is None:
            break
        cx0, y = x0 + c * (col_w + col_gap), tops[c]
        kind = block_kinds[int(rng.integers(len(block_kinds)))]
        left = budget - len(plan.specs)
        specs, decor, block_h = row_block(kind, attrs, cx0, cx0 + col_w, y, row_h, left)
        if y + block_h > bottom - u:
            tops[c] = None
            continue
        for spec in specs:
            spec.bg = SURFACE
        plan.specs += specs
        plan.decor += decor
        tops[c] = y + block_h + round(u * 0.6)
    return plan
