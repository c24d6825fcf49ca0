"""One constructor for every embodied env the trainer can run: our scenes, Meta-World, LIBERO."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def make_robot_env(
    suite: str = "own",
    task: str = "reach",
    image_size: int = 64,
    camera: str = "front",
    max_step: float = 0.05,
    max_steps: int = 0,
    reward: Mapping[str, float] | None = None,
    chunk: int = 1,
) -> Any:
    """A gymnasium env of ``suite`` with our contract (image + proprio + instruction in,
    ``Box(-1, 1, (4,))`` out; ``ActionChunk`` of ``chunk`` steps when ``chunk`` > 1).

    Args:
        suite: ``own`` (``RobotEnv``), ``metaworld`` (``MetaWorldEnv``) or ``libero``.
        task: own: reach | push | pick_place; metaworld: a v3 task name; libero: a suite name.
        max_steps: step budget per episode (0: the task's own).

    Raises:
        ValueError: an unknown suite.
        EmbodiedSuiteMissing: the suite's package is not installed (names the install command).
    """
    if suite == "own":
        from embodied.robot_env import RobotEnv

        env: Any = RobotEnv(
            task=task,
            image_size=image_size,
            camera=camera,
            max_step=max_step,
            max_steps=max_steps or None,
            reward=reward,
        )
    elif suite == "metaworld":
        from embodied.metaworld_env import MetaWorldEnv

        env = MetaWorldEnv(task, image_size=image_size, max_steps=max_steps or None)
    elif suite == "libero":
        from embodied.libero_env import LiberoEnv

        env = LiberoEnv(task, image_size=image_size, max_steps=max_steps or None)
    else:
        raise ValueError(f"unknown embodied suite {suite!r}; use own, metaworld or libero")
    if chunk > 1:
        from embodied.chunk import ActionChunk

        env = ActionChunk(env, chunk)
    return env
