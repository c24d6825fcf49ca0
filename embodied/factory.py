"""One constructor for every embodied env the trainer can run: our scenes, Meta-World, LIBERO."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
    wrist_view: bool = False,
    action_frame: str = "delta",
    cubes: int = 3,
    zones: int = 2,
    paced: bool = False,
) -> Any:
    """A gymnasium env of ``suite`` with our contract (image + proprio + instruction in,
    ``Box(-1, 1, (4,))`` out; ``ActionChunk`` of ``chunk`` steps when ``chunk`` > 1).

    Args:
        suite: ``own`` (``RobotEnv``), ``metaworld`` (``MetaWorldEnv``) or ``libero``.
        task: own: reach | push | pick_place | press; metaworld: a v3 task name; libero: a
            suite name.
        max_steps: step budget per episode (0: the task's own).
        wrist_view: own only: add ``wrist_image`` (the gripper's camera, same size as ``image``).
        action_frame: own only: ``delta`` (moves) or ``target`` (goal points of the workspace,
            ``embodied.robot_env``).
        cubes: own only: cubes on the table (1..3; the named one always among them).
        zones: own only: target zones on the table (1..2; the named one always among them).
        paced: own only: long moves run at the gripper's top speed (``RobotEnv``).

    Raises:
        ValueError: an unknown suite, or ``wrist_view``, the ``target`` frame, ``cubes``,
            ``zones`` or ``paced`` other than their defaults with a suite other than ``own``.
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
            wrist_view=wrist_view,
            action_frame=action_frame,
            cubes=cubes,
            zones=zones,
            paced=paced,
        )
    elif paced:
        raise ValueError(f"paced is only available for suite 'own', not {suite!r}")
    elif cubes != 3:
        raise ValueError(f"cubes is only available for suite 'own', not {suite!r}")
    elif zones != 2:
        raise ValueError(f"zones is only available for suite 'own', not {suite!r}")
    elif wrist_view:
        raise ValueError(f"wrist_view is only available for suite 'own', not {suite!r}")
    elif action_frame != "delta":
        raise ValueError(
            f"action_frame {action_frame!r} is only available for suite 'own', not {suite!r} "
            "(its actions are moves)"
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


DEMO_FORMATS = ("auto", "lerobot", "libero_hdf5")


def load_demo_episodes(
    path: str, fmt: str = "auto", camera: str = "", action_dims: Sequence[int] = ()
) -> list[Any]:
    """Recorded demonstrations as ``DemoEpisode`` s with 4-dim actions (dx, dy, dz, gripper).

    Args:
        path: a LeRobot v2.x dataset folder or a LIBERO / robomimic HDF5 file.
        fmt: ``auto`` (a folder is LeRobot, ``.hdf5`` / ``.h5`` is LIBERO), ``lerobot`` or
            ``libero_hdf5``.
        camera: the image feature (LeRobot) or obs key (LIBERO); empty: the reader's default.
        action_dims: LeRobot: which action columns are (dx, dy, dz, gripper), when the file's
            actions are not already those 4. LIBERO's 7-dim actions drop their rotation dims.

    Raises:
        DemoFileError: the file is malformed (the message names file and field), or its actions
            are not 4-dim after the conversion.
        ValueError: an unknown format.
    """
    from pathlib import Path

    from embodied.demo_files import DemoFileError, episodes_to_ee_delta4
    from embodied.lerobot_files import read_lerobot
    from embodied.libero_files import read_libero_hdf5

    if fmt not in DEMO_FORMATS:
        raise ValueError(f"unknown demo format {fmt!r}; use one of {', '.join(DEMO_FORMATS)}")
    p = Path(path)
    if fmt == "auto":
        fmt = "libero_hdf5" if p.suffix.lower() in (".hdf5", ".h5") else "lerobot"
    if fmt == "libero_hdf5":
        episodes = read_libero_hdf5(p, camera=camera or "agentview_rgb")
        episodes, _ = episodes_to_ee_delta4(episodes)
    else:
        episodes = read_lerobot(p, camera=camera or None, action_dims=list(action_dims) or None)
    width = episodes[0].actions.shape[1]
    if width != 4:
        raise DemoFileError(
            f"{path}: actions have {width} dims; name the (dx, dy, dz, gripper) columns with "
            "robot.demo_action_dims"
        )
    return episodes


def make_demo_env(episodes: Sequence[Any], image_size: int = 64, chunk: int = 1) -> Any:
    """A ``ReplayEnv`` over recorded episodes (``ActionChunk`` of ``chunk`` when > 1)."""
    from embodied.replay_env import ReplayEnv

    env: Any = ReplayEnv(list(episodes), image_size=image_size)
    if chunk > 1:
        from embodied.chunk import ActionChunk

        env = ActionChunk(env, chunk)
    return env
