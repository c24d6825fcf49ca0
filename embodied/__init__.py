"""Embodied (robot manipulation) gymnasium envs: tasks, envs, action chunks, scripted experts.

Importing ``embodied`` registers the env ids and loads nothing else (no MuJoCo, no renderer):
``gymnasium.make("vlagent/RobotPush-v0", image_size=64)`` builds a
:class:`embodied.robot_env.RobotEnv`. ``embodied.RobotEnv``, ``embodied.ActionChunk`` and
``embodied.ScriptedController`` resolve on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

import gymnasium

_ENVS: dict[str, tuple[str, dict[str, object]]] = {
    "vlagent/RobotReach-v0": ("embodied.robot_env:RobotEnv", {"task": "reach"}),
    "vlagent/RobotPush-v0": ("embodied.robot_env:RobotEnv", {"task": "push"}),
    "vlagent/RobotPickPlace-v0": ("embodied.robot_env:RobotEnv", {"task": "pick_place"}),
    "vlagent/RobotPress-v0": ("embodied.robot_env:RobotEnv", {"task": "press"}),
}

for _env_id, (_entry_point, _kwargs) in _ENVS.items():
    if _env_id not in gymnasium.registry:
        gymnasium.register(id=_env_id, entry_point=_entry_point, kwargs=dict(_kwargs))

_LAZY = {
    "RobotEnv": "embodied.robot_env",
    "ActionChunk": "embodied.chunk",
    "ScriptedController": "embodied.scripted",
    "RobotTask": "embodied.tasks",
    "make_task": "embodied.tasks",
}


def registered_env_ids() -> tuple[str, ...]:
    """Ids of the envs this package registers with gymnasium.

    >>> registered_env_ids()
    ('vlagent/RobotReach-v0', 'vlagent/RobotPush-v0', 'vlagent/RobotPickPlace-v0', 'vlagent/RobotPress-v0')
    """
    return tuple(_ENVS)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'embodied' has no attribute {name!r}")
