"""The ``phone`` layout: status bar, app bar, a stack of widget rows and a bottom tab bar."""

from __future__ import annotations

import numpy as np

from sim.screens.fonts import font_size_for, text_width
from sim.screens.layout import Attributes, DecorRect, DecorText, ElementSpec, Plan
from sim.screens.level import ScreenLevel
from sim.screens.palette import BORDER, INK
from sim.screens.vocab import APP_TITLES

_BAR: tuple[int, int, int] = (248, 248, 250)


def row_block(
    kind: str, attrs: Attributes, x0: int, x1: int, y: int, h: int, budget: int
) -> tuple[list[ElementSpec], list[DecorRect | DecorText], int]:
    """Specs and decor of one content block at the top ``y``; returns them and its height.

    ``kind`` picks the block: a single widget row, or a row of several icons / shapes
    (at most ``budget`` of them).
    """
    level, rng = attrs.level, attrs.rng
    fs = font_size_for(h)
    if kind in ("icon", "shape"):
        side = round(h * (0.7 if kind == "icon" else 0.9))
        count = max(1, min(budget, int(rng.integers(3, 6))))
        step = (x1 - x0) // count
        specs = []
        for i in range(count):
            cx = x0 + step * i + step // 2
            box = (
                cx - side // 2,
                y + (h - side) // 2,
                cx - side // 2 + side,
                y + (h - side) // 2 + side,
            )
            spec = ElementSpec(kind, box, colour=attrs.colour())
            if kind == "icon":
                spec.label = attrs.icon()
            else:
                spec.shape = attrs.shape()
            specs.append(spec)
        return specs, [], h
    if kind == "toggle":
        label = attrs.label(level.toggle_labels)
        sh = round(h * 0.5)
        sw = round(sh * 1.8)
        box = (x1 - sw, y + (h - sh) // 2, x1, y + (h - sh) // 2 + sh)
        spec = ElementSpec(kind, box, label=label, colour=attrs.colour())
        spec.state = "on" if rng.random() < 0.5 else "off"
        spec.label_box = (x0, y, x0 + text_width(label, fs), y + h)
        sep = DecorRect((x0, y + h + 1, x1, y + h + 2), BORDER)
        return [spec], [sep], h + 2
    if kind == "button":
        label = attrs.label(level.text_labels)
        w = x1 - x0 if rng.random() < 0.4 else min(x1 - x0, text_width(label, fs) + 2 * h)
        left = x0 + int(rng.integers(0, x1 - x0 - w + 1))
        spec = ElementSpec(kind, (left, y, left + w, y + h), label=label, colour=attrs.colour())
        return [spec], [], h
    if kind == "text_field":
        spec = ElementSpec(kind, (x0, y, x1, y + h), label=attrs.label(level.field_labels))
        return [spec], [], h
    # list_row
    spec = ElementSpec(kind, (x0, y, x1, y + h), label=attrs.label(level.text_labels))
    return [spec], [], h


def plan_phone(level: ScreenLevel, rng: np.random.Generator, width: int, height: int) -> Plan:
    """Lay out a phone screen whose elements fill ``level.n_elements`` where space allows.

    Rows are ``size_frac x short side`` tall; the status bar and app-bar title are chrome, the
    app-bar icons and tabs are elements.

    Args:
        level: the knobs (kinds, row-height range, vocabularies).
        rng: the screen's generator; the only source of randomness.
        width: screen width in pixels.
        height: screen height in pixels.

    Returns:
        The plan in pixels.
    """
    attrs = Attributes(level, rng)
    plan = Plan(width, height)
    lo, hi = level.size_frac
    h = max(16, round(min(width, height) * (lo + (hi - lo) * rng.random())))
    margin = max(4, round(0.04 * width))
    budget = int(rng.integers(level.n_elements[0], level.n_elements[1] + 1))

    status_h = max(12, round(0.035 * height))
    plan.decor.append(DecorRect((0, 0, width, status_h), (235, 235, 240)))
    plan.decor.append(DecorText((margin, status_h // 2), "9:41", font_size_for(status_h), INK))
    bw = round(status_h * 0.9)
    plan.decor.append(
        DecorRect((width - margin - bw, status_h // 4, width - margin, status_h * 3 // 4), INK)
    )

    app_top, app_h = status_h, round(h * 1.2)
    plan.decor.append(DecorRect((0, app_top, width, app_top + app_h), _BAR))
    title = APP_TITLES[int(rng.integers(len(APP_TITLES)))]
    attrs.reserve_label(title)
    side = round(app_h * 0.5)
    icon_y = app_top + (app_h - side) // 2
    title_x = margin
    chrome_budget = budget // 2  # app-bar icons and tabs leave room for content
    if "icon" in level.kinds:
        for at_left in (True, False):
            if rng.random() < 0.7 and len(plan.specs) < chrome_budget:
                x = margin if at_left else width - margin - side
                name = attrs.icon()
                icon = ElementSpec("icon", (x, icon_y, x + side, icon_y + side), label=name)
                icon.colour, icon.bg = "black", _BAR
                plan.specs.append(icon)
                if at_left:
                    title_x = 2 * margin + side
    plan.decor.append(
        DecorText((title_x, app_top + app_h // 2), title, font_size_for(round(app_h * 0.8)), INK)
    )

    bottom = height
    if "tab" in level.kinds and chrome_budget - len(plan.specs) >= 3:
        tab_h = round(h * 1.2)
        bottom = height - tab_h
        plan.decor.append(DecorRect((0, bottom, width, height), _BAR, outline=BORDER))
        count = min(int(rng.integers(3, 6)), chrome_budget - len(plan.specs))
        cell = width // count
        selected = int(rng.integers(count))
        accent = attrs.colour()
        for i in range(count):
            box = (i * cell + 2, bottom + 2, (i + 1) * cell - 2, height - 2)
            tab = ElementSpec("tab", box, label=attrs.label(level.text_labels), colour=accent)
            tab.state, tab.bg = ("selected" if i == selected else None), _BAR
            plan.specs.append(tab)

    y = app_top + app_h + margin
    block_kinds = [k for k in level.kinds if k != "tab"] or ["list_row"]
    gap = max(3, round(h * 0.3))
    content: list[ElementSpec] = []
    while len(plan.specs) + len(content) < budget:
        kind = block_kinds[int(rng.integers(len(block_kinds)))]
        left = budget - len(plan.specs) - len(content)
        specs, decor, block_h = row_block(kind, attrs, margin, width - margin, y, h, left)
        if y + block_h > bottom - margin:
            break
        content += specs
        plan.decor += decor
        y += block_h + gap
    plan.specs += content
    return plan
