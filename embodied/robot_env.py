"""``RobotEnv``: a gymnasium env of one task kind on the ``sim.robot`` table-top scene.

Observation (``Dict``):
    image: uint8 (S, S, 3), RGB from ``camera`` (``front`` or ``top``), row 0 at the top.
    image2: uint8 (S, S, 3) from the other fixed scene camera, when ``second_view``.
    wrist_image: uint8 (S, S, 3) from the ``wrist`` camera on the gripper (behind and above
        it, looking down and 45 degrees forward: the fingers at the bottom centre), when
        ``wrist_view``.
    proprio: float32 (4,): end effector x, y, z in metres (world frame, z up, table top at 0)
        and the gripper's closed flag (1 closed, 0 open), when ``proprio``.
    instruction: str, e.g. ``"push the red cube onto the green square"``.
Action: float32 (4,) in [-1, 1]. With ``action_frame="delta"`` (the default) ``dx, dy, dz``
move the end effector by at most ``max_step`` metres per axis. With ``action_frame="target"``
the first three name a goal point of the workspace (-1 = ``WORKSPACE_LO``, +1 =
``WORKSPACE_HI`` per axis) and the end effector moves straight towards it, at most
``max_step`` metres per axis per step (it stops on the point). ``gripper > 0`` closes
(grasping a cube inside the grasp region), ``<= 0`` opens. In the push task the gripper stays
open whatever the action says and its fingers touch the cubes (:mod:`embodied.contact`), so a
cube moves only by being pushed. In the press task the scene has buttons
(``RobotScene(buttons=True)``), the gripper stays open and its fingers touch the button caps
only; ``info["button"]`` names the button and ``info["button_travel"]`` is how far its cap is
down (m).

Rewards: ``info["reward_terms"]`` (see :data:`embodied.robot_actions.DEFAULT_REWARD`) sum to the
reward. The episode terminates on success and is truncated after the task's ``max_steps``.
An action that is not 4 finite numbers is a no-op step (no motion, gripper unchanged, time
advances and the step counts) with ``info["invalid_action"] = True`` and its reason.
"""

from __future__ import annotations

import dataclasses
import math
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium
import numpy as np
from gymnasium import spaces

from embodied.contact import enable_pusher
from embodied.robot_actions import (
    ACTION_FRAMES,
    parse_action,
    proximity,
    reward_weights,
    step_towards,
    target_point,
)
from embodied.tasks import (
    DEFAULT_MAX_STEP,
    RobotTask,
    RobotTaskError,
    is_holding,
    is_success,
    make_task,
    n_tasks,
    task_distance,
)
from sim.robot import CUBES, ZONES, RobotScene, SceneSnapshot
from sim.robot.render import MAX_SIDE
from sim.robot.scene import FIXED_CAMERAS, WORKSPACE_HI, WORKSPACE_LO

INSTRUCTION_CHARSET = string.ascii_letters + string.digits + " .,'-_"
MAX_INSTRUCTION = 128
_SEED_SPACE = 2**31


def layout_seed(seed: int, task_id: int) -> int:
    """The scene seed of ``(seed, task_id)``: a hash, distinct pairs give unrelated layouts."""
    return int(
        np.random.SeedSequence([int(seed) % 2**63, int(task_id) % 2**63]).generate_state(1)[0]
    )


def cubes_on_table(named: str | None, n: int, scene_seed: int) -> tuple[str, ...]:
    """The ``n`` cubes a scene shows: the named cube (None for ``press``) and others drawn from
    ``scene_seed`` (its own stream, so the layout draws are the same at every ``n``).

    >>> cubes_on_table("green", 3, 5)
    ('red', 'green', 'blue')
    >>> cubes_on_table("green", 1, 5)
    ('green',)
    """
    return _on_table(CUBES, named, n, scene_seed, stream=1)


def zones_on_table(named: str | None, n: int, scene_seed: int) -> tuple[str, ...]:
    """The ``n`` zones a scene shows: the named zone (None for ``reach`` and ``press``) and
    others drawn from ``scene_seed`` (a stream of its own, apart from :func:`cubes_on_table`'s,
    so the layout draws and the cubes' choice are the same at every ``n``).

    >>> zones_on_table("blue", 2, 5)
    ('green', 'blue')
    >>> zones_on_table("blue", 1, 5)
    ('blue',)
    >>> [zones_on_table(None, 1, s)[0] for s in range(3, 8)]  # reach and press name no zone
    ['blue', 'green', 'blue', 'blue', 'green']
    """
    return _on_table(ZONES, named, n, scene_seed, stream=2)


def _on_table(
    names: tuple[str, ...], named: str | None, n: int, scene_seed: int, stream: int
) -> tuple[str, ...]:
    """``named`` (if any) and ``n - 1`` (or ``n``) others of ``names``, drawn from the rng stream
    ``[scene_seed, stream]``; in ``names`` order."""
    if n >= len(names):
        return names
    others = [x for x in names if x != named]
    rng = np.random.default_rng([int(scene_seed) % 2**63, stream])
    k = n - (named is not None)
    chosen = {str(x) for x in rng.choice(others, size=k, replace=False)} if k else set()
    return tuple(x for x in names if x == named or x in chosen)


SUBSTEPS = 40
# MuJoCo steps (2 ms each) per action: 80 ms, so a full 0.05 m action moves the gripper at
# 0.625 m/s. At the scene's default 20 substeps full-speed pushes fling cubes: the scripted push
# controller solved 94.5 % of 200 episodes even with 60 steps, and 11 named cubes left the
# workspace; at 40 it solved 1,000 of 1,000 and no named cube left the workspace.


@dataclass(frozen=True)
class EnvSnapshot:
    """A :class:`RobotEnv`'s full episode state: the scene's, plus the task and step count."""

    scene: SceneSnapshot
    task: RobotTask
    task_id: int
    steps: int


class RobotEnv(gymnasium.Env[dict[str, Any], np.ndarray]):
    """One task kind (``reach``, ``push``, ``pick_place``, ``press``) on a seeded table-top scene.

    ``reset(seed=s, options={"task_id": k})`` lays the scene out with ``RobotScene.reset(s)``
    and sets task ``make_task(kind, k)``; the same ``(s, k)`` always gives the same state, so a
    GRPO group resets identically. Without ``task_id`` the id is drawn from the env's seeded
    generator. See the module docstring for spaces, rewards and invalid actions.
    """

    metadata = {"render_modes": ["rgb_array"], "render_fps": 12.5}  # 1 / (SUBSTEPS * 2 ms)

    def __init__(
        self,
        task: str = "reach",
        image_size: int = 128,
        camera: str = "front",
        second_view: bool = False,
        proprio: bool = True,
        max_step: float = DEFAULT_MAX_STEP,
        max_steps: int | None = None,
        reward: Mapping[str, float] | None = None,
        render_mode: str | None = None,
        wrist_view: bool = False,
        action_frame: str = "delta",
        cubes: int = len(CUBES),
        zones: int = len(ZONES),
        paced: bool = False,
    ) -> None:
        """Args:
        task: the task kind.
        image_size: side S of the square camera images, pixels, in [1, 640].
        camera: ``front`` or ``top``.
        second_view: add ``image2`` from the other camera.
        proprio: add ``proprio`` (end effector xyz in m, gripper closed flag).
        max_step: metres per action at ``|a| = 1``, per axis.
        max_steps: step budget override (None: the task kind's budget for ``max_step``).
        reward: reward-term weights over :data:`~embodied.robot_actions.DEFAULT_REWARD`.
        render_mode: None or ``rgb_array`` (``render()`` returns the ``image`` view).
        wrist_view: add ``wrist_image`` from the gripper's ``wrist`` camera (S x S as well).
        action_frame: ``delta`` (moves) or ``target`` (goal points), see the module docstring.
        cubes: cubes on the table, 1..3: the named cube and ``cubes - 1`` others drawn from the
            layout seed (the others lie on the floor, off camera; ``cubes=1`` is a curriculum's
            first rung).
        zones: target zones on the table, 1..2 (``len(ZONES)``): the named zone (push,
            pick_place) and ``zones - 1`` others drawn from the layout seed, or for reach and
            press (no named zone) ``zones`` drawn ones; the others lie on the floor, off camera
            (``zones=1`` makes push / pick_place a one-zone task).
        paced: a move longer than ``DEFAULT_MAX_STEP`` per axis is spread over proportionally
            more MuJoCo substeps, so the gripper never goes faster than at 0.05 m per 80 ms
            (0.625 m/s per axis). Without it every action takes 80 ms whatever its length, and
            at ``max_step`` 0.2 a push flings the cube. Lets one ``target``-frame action carry
            a whole push.
        """
        n_tasks(task)  # validates the kind
        if isinstance(image_size, bool) or not isinstance(image_size, int | np.integer):
            raise RobotTaskError(f"image_size must be an int, got {image_size!r}")
        if not 1 <= int(image_size) <= MAX_SIDE:
            raise RobotTaskError(f"image_size must be in [1, {MAX_SIDE}], got {image_size}")
        if camera not in FIXED_CAMERAS:
            raise RobotTaskError(
                f"unknown camera {camera!r}; cameras are {', '.join(FIXED_CAMERAS)} (the "
                "gripper's camera is wrist_view=True)"
            )
        if not isinstance(wrist_view, bool):
            raise RobotTaskError(f"wrist_view must be a bool, got {wrist_view!r}")
        if not isinstance(max_step, int | float) or not (
            math.isfinite(max_step) and 0 < max_step <= 0.2
        ):
            raise RobotTaskError(f"max_step must be in (0, 0.2] m, got {max_step!r}")
        if max_steps is not None and (
            isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1
        ):
            raise RobotTaskError(f"max_steps must be None or an int >= 1, got {max_steps!r}")
        if action_frame not in ACTION_FRAMES:
            raise RobotTaskError(
                f"action_frame must be one of {', '.join(ACTION_FRAMES)}, got {action_frame!r}"
            )
        if isinstance(cubes, bool) or not isinstance(cubes, int) or not 1 <= cubes <= len(CUBES):
            raise RobotTaskError(f"cubes must be an int in [1, {len(CUBES)}], got {cubes!r}")
        if isinstance(zones, bool) or not isinstance(zones, int) or not 1 <= zones <= len(ZONES):
            raise RobotTaskError(f"zones must be an int in [1, {len(ZONES)}], got {zones!r}")
        if not isinstance(paced, bool):
            raise RobotTaskError(f"paced must be a bool, got {paced!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise RobotTaskError(f"render_mode must be None or 'rgb_array', got {render_mode!r}")
        self.kind = task
        self.image_size = int(image_size)
        self.camera = camera
        self.second_camera: str | None = (
            next(c for c in FIXED_CAMERAS if c != camera) if second_view else None
        )
        self.wrist_view = wrist_view
        self.action_frame = action_frame
        self.n_cubes = cubes
        self.n_zones = zones
        self.paced = paced
        self.proprio = bool(proprio)
        self.max_step = float(max_step)
        self.max_steps_override = max_steps
        self.weights = reward_weights(reward)
        self.render_mode = render_mode
        self.scene = RobotScene(max_step=self.max_step, substeps=SUBSTEPS, buttons=task == "press")
        if task == "push":
            enable_pusher(self.scene)
        self.task: RobotTask | None = None
        self.task_id = -1
        self.steps = 0
        s = self.image_size
        obs: dict[str, spaces.Space[Any]] = {
            "image": spaces.Box(0, 255, (s, s, 3), np.uint8),
            "instruction": spaces.Text(MAX_INSTRUCTION, min_length=1, charset=INSTRUCTION_CHARSET),
        }
        if self.second_camera is not None:
            obs["image2"] = spaces.Box(0, 255, (s, s, 3), np.uint8)
        if wrist_view:
            obs["wrist_image"] = spaces.Box(0, 255, (s, s, 3), np.uint8)
        if self.proprio:
            lo = np.array([*WORKSPACE_LO, 0.0], dtype=np.float32)
            hi = np.array([*WORKSPACE_HI, 1.0], dtype=np.float32)
            obs["proprio"] = spaces.Box(lo, hi, (4,), np.float32)
        self.observation_space = spaces.Dict(obs)
        self.action_space = spaces.Box(-1.0, 1.0, (4,), np.float32)

    # ----------------------------------------------------------------------------- episode
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """Lay out the scene from ``(seed, task_id)`` and pick task ``options["task_id"]``.

        The layout depends on both, so every task id is its own scene even at one seed (a
        trainer that numbers its tasks and keeps ``seed`` fixed still sees new scenes), while
        equal ``(seed, task_id)`` give equal states (a GRPO group). Returns (obs, info)."""
        super().reset(seed=seed)
        options = {} if options is None else options
        if not isinstance(options, Mapping) or set(options) - {"task_id"}:
            raise RobotTaskError(f"reset options may only hold 'task_id', got {options!r}")
        if "task_id" in options:
            task_id = options["task_id"]
        else:
            task_id = int(self.np_random.integers(n_tasks(self.kind)))
        task = make_task(self.kind, task_id, self.max_step)
        if self.max_steps_override is not None:
            task = dataclasses.replace(task, max_steps=self.max_steps_override)
        base = seed if seed is not None else int(self.np_random.integers(_SEED_SPACE))
        scene_seed = layout_seed(base, int(task_id))
        self.scene.reset(
            scene_seed,
            cubes=cubes_on_table(task.cube, self.n_cubes, scene_seed),
            zones=zones_on_table(task.zone, self.n_zones, scene_seed),
        )
        self.task, self.task_id, self.steps = task, int(task_id), 0
        return self.observation(), self._info(is_success(self.scene, task))

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Apply one action (see the module docstring); invalid ones are recorded no-ops."""
        reward, terminated, truncated, info = self.advance(action)
        return self.observation(), reward, terminated, truncated, info

    def advance(self, action: Any) -> tuple[float, bool, bool, dict[str, Any]]:
        """:meth:`step` without the observation: (reward, terminated, truncated, info).

        Rendering is most of a step's cost (about 5 ms of 6 at 224 px); callers that throw
        the frame away (``ActionChunk``'s inner rows, the demonstrator's twin env) use this and
        call :meth:`observation` when they need one. Rendering never changes the state, so
        ``advance`` then ``observation`` equals ``step``."""
        task = self._require_task()
        scene = self.scene
        arr, reason = parse_action(action)
        invalid = arr is None
        grip_now = 1.0 if scene.closed else -1.0
        command = np.array([0.0, 0.0, 0.0, grip_now]) if arr is None else arr.copy()
        if arr is not None and self.action_frame == "target":
            goal = target_point(arr[:3], WORKSPACE_LO, WORKSPACE_HI)
            command[:3] = step_towards(goal, scene.ee_position(), self.max_step)
        if task.kind in ("push", "press"):
            command[3] = -1.0  # the pusher (and presser) never closes
        # shaping signals cost ~0.2 ms a step: computed only when their weight is not 0
        shape_dist = self.weights["distance"] != 0 or self.weights["proximity"] != 0
        shape_grasp = self.weights["grasp"] != 0
        before_dist = self._distance() if shape_dist else 0.0
        before_held = is_holding(scene, task) if shape_grasp else False
        scene.apply(command, self._substeps(command) if self.paced else None)
        self.steps += 1
        success = is_success(scene, task)
        after_dist = self._distance() if shape_dist else 0.0
        signals = {
            "success": float(success),
            "distance": before_dist - after_dist,
            "proximity": proximity(after_dist) - proximity(before_dist) if shape_dist else 0.0,
            "grasp": float(is_holding(scene, task)) - float(before_held) if shape_grasp else 0.0,
            "invalid_action": float(invalid),
        }
        terms = {name: self.weights[name] * value for name, value in signals.items()}
        reward = float(sum(terms.values()))
        terminated = success
        truncated = not terminated and self.steps >= task.max_steps
        info = self._info(success)
        info.update(reward_terms=terms, invalid_action=invalid, invalid_reason=reason)
        return reward, terminated, truncated, info

    def _substeps(self, command: np.ndarray) -> int:
        """MuJoCo substeps for a paced move by ``command[:3] * max_step`` m: ``SUBSTEPS`` per
        ``DEFAULT_MAX_STEP`` of its longest axis, at least ``SUBSTEPS``.

        >>> env = RobotEnv(max_step=0.2, paced=True)
        >>> [env._substeps(np.array([a, 0.0, -0.1, 1.0])) for a in (0.0, 0.25, 0.5, -1.0)]
        [40, 40, 80, 160]
        """
        longest = float(np.max(np.abs(np.clip(command[:3], -1.0, 1.0)))) * self.max_step
        return max(SUBSTEPS, math.ceil(SUBSTEPS * longest / DEFAULT_MAX_STEP - 1e-9))

    # --------------------------------------------------------------------------- reading
    def observation(self) -> dict[str, Any]:
        """The observation of the current state (renders the camera views)."""
        task = self._require_task()
        s = self.image_size
        obs: dict[str, Any] = {
            "image": self.scene.render(s, s, self.camera),
            "instruction": task.instruction,
        }
        if self.second_camera is not None:
            obs["image2"] = self.scene.render(s, s, self.second_camera)
        if self.wrist_view:
            obs["wrist_image"] = self.scene.render(s, s, "wrist")
        if self.proprio:
            ee = self.scene.ee_position()
            obs["proprio"] = np.array([*ee, float(self.scene.closed)], dtype=np.float32)
        return obs

    def render(self) -> np.ndarray | None:
        """With ``render_mode="rgb_array"``: the ``image`` view, uint8 (S, S, 3); else None."""
        if self.render_mode != "rgb_array":
            return None
        return self.scene.render(self.image_size, self.image_size, self.camera)

    def _distance(self) -> float:
        return task_distance(self.scene, self._require_task())

    def _info(self, success: bool) -> dict[str, Any]:
        task = self._require_task()
        info: dict[str, Any] = {
            "success": bool(success),
            "task_id": self.task_id,
            "kind": task.kind,
            "cube": task.cube,
            "zone": task.zone,
            "instruction": task.instruction,
            "steps": self.steps,
            "max_steps": task.max_steps,
            "invalid_action": False,
            "invalid_reason": "",
        }
        if task.button is not None:
            info.update(button=task.button, button_travel=self.scene.button_travel(task.button))
        return info

    def _require_task(self) -> RobotTask:
        if self.task is None:
            raise RobotTaskError("RobotEnv: call reset() before step() or observation()")
        return self.task

    # ------------------------------------------------------------------------- snapshots
    def snapshot(self) -> EnvSnapshot:
        """The scene's full state (``RobotScene.snapshot``) plus the task and step count."""
        return EnvSnapshot(self.scene.snapshot(), self._require_task(), self.task_id, self.steps)

    def restore(self, snap: EnvSnapshot) -> dict[str, Any]:
        """Return to ``snap`` (taken from an env of the same task kind); the observation there.

        The same actions afterwards give bit-identical states, rewards and infos.
        """
        if not isinstance(snap, EnvSnapshot):
            raise RobotTaskError(f"restore() needs an EnvSnapshot, got {type(snap).__name__}")
        if snap.task.kind != self.kind:
            raise RobotTaskError(
                f"snapshot of a {snap.task.kind!r} env cannot restore a {self.kind!r} env"
            )
        self.scene.restore(snap.scene)
        self.task, self.task_id, self.steps = snap.task, snap.task_id, snap.steps
        return self.observation()

    def close(self) -> None:
        """Free the GL contexts; safe to call more than once."""
        self.scene.close()
