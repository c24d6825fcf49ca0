"""Worlds: what differs between kinds of env (an env factory and an adapter), registered by name.

``import vlagent.worlds`` registers the built-in worlds: ``grounding`` (one screenshot, one
answer), ``zoom`` (thinking with images: zoom tool calls before the answer) and ``apps``
(multi-step phone tasks), ``robot`` (table-top manipulation), ``desktop`` (OSWorld-format tasks
on a local X desktop) and ``web`` (MiniWoB++ in headless Chromium). Their modules are imported
only when a world is built.
"""

from __future__ import annotations

from typing import Any

from vlagent.worlds.base import WORLDS, World, make_world, register_world

__all__ = ["WORLDS", "World", "make_world", "register_world"]


def _grounding(cfg: Any, policy: Any) -> World:
    from vlagent.worlds.grounding import GroundingWorld

    return GroundingWorld(cfg, policy)


def _zoom(cfg: Any, policy: Any) -> World:
    from vlagent.worlds.zoom import ZoomWorld

    return ZoomWorld(cfg, policy)


def _apps(cfg: Any, policy: Any) -> World:
    from vlagent.worlds.apps import AppsWorld

    return AppsWorld(cfg, policy)


def _desktop(cfg: Any, policy: Any) -> World:
    from vlagent.worlds.desktop import DesktopWorld

    return DesktopWorld(cfg, policy)


def _web(cfg: Any, policy: Any) -> World:
    from vlagent.worlds.web import WebWorld

    return WebWorld(cfg, policy)


def _robot(cfg: Any, policy: Any) -> World:
    from vlagent.worlds.robot import RobotWorld

    return RobotWorld(cfg, policy)


register_world("grounding", _grounding)
register_world("zoom", _zoom)
register_world("apps", _apps)
register_world("robot", _robot)
register_world("desktop", _desktop)
register_world("web", _web)
