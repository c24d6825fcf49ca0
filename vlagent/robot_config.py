"""Config section of the ``robot`` world (table-top manipulation): which env, what the policy
sees, how it acts, which reward terms count (``docs/DESIGN.md``, "Worlds")."""

from __future__ import annotations

import dataclasses
import math

from vlagent.world_config import _check

ROBOT_SUITES = ("own", "metaworld", "libero")
ROBOT_TASKS = ("reach", "push", "pick_place", "press")
ROBOT_REWARD_TERMS = ("success", "distance", "proximity", "grasp", "invalid_action")


@dataclasses.dataclass
class RobotConfig:
    """Table-top manipulation (world ``robot``): which env, what the policy sees, how it acts.

    Task ids come from ``task.*_seed_offset`` like screens do: train and demo ids never meet the
    held-out (val, test) ids, and each id fixes the scene layout and the named cube / zone.
    """

    suite: str = "own"
    """own (``embodied.RobotEnv`` on the ``sim.robot`` scene) | metaworld | libero."""
    task: str = "reach"
    """own: reach | push | pick_place. metaworld: a v3 task name (``reach-v3``). libero: a
    suite name (``libero_spatial``)."""
    image_size: int = 64
    """Side of the square camera image in pixels (the training resolution)."""
    camera: str = "front"
    """Scene camera (own: front | top)."""
    wrist_camera: bool = False
    """own suite: add the gripper's wrist camera (``wrist_image``) as a second image per turn."""
    proprio: bool = True
    """Add the end effector's position (mm) and gripper state to each turn's text."""
    chunk: int = 1
    """Actions per model call (k); the env runs them one after another (``embodied.ActionChunk``)."""
    action_style: str = "digits"
    """How a bin is written: digits (``"128 0 255 0"``) | padded (zero-padded to a fixed width,
    ``"128 000 255 000"``: one place value per digit) | tokens (one reserved token per bin)."""
    n_bins: int = 256
    """Uniform bins per action dimension over [-1, 1] (OpenVLA: 256)."""
    constrained: bool = False
    """Constrained decoding: the sampler (rollouts and evaluation) draws only well-formed
    replies, and the learner scores tokens under that same restricted distribution
    (``codec/action_grammar.py``); needs ``action_style`` padded or tokens."""
    max_step: float = 0.05
    """Metres the end effector moves per action at |a| = 1 (own suite); in the ``target`` frame
    the most it moves per step towards the goal point."""
    action_frame: str = "delta"
    """own suite: ``delta`` (dx, dy, dz are moves) | ``target`` (x, y, z name a goal point of the
    workspace that the gripper heads to, an absolute end-effector position command)."""
    max_steps: int = 0
    """Env steps per episode (0: the task kind's own budget)."""
    cubes: int = 3
    """own suite: cubes on the table, 1..3 (the named one always among them; the others are
    drawn per layout). ``1`` makes reach a localization task, the first rung of a curriculum."""
    zones: int = 2
    """own suite: target zones on the table, 1..2 (push and pick_place: the named one always
    among them; the others are drawn per layout and lie off camera). ``1`` makes push /
    pick_place a one-zone task."""
    paced: bool = False
    """own suite: a move longer than 0.05 m per axis runs over proportionally more MuJoCo
    substeps (the gripper's top speed stays 0.625 m/s), so one ``target``-frame action at
    ``max_step`` 0.2 can carry a push without flinging the cube."""
    reward: dict[str, float] = dataclasses.field(
        default_factory=lambda: {
            "success": 1.0,
            "distance": 0.0,
            "proximity": 0.0,
            "grasp": 0.0,
            "invalid_action": 0.0,
        }
    )
    """Weights of the env's reward terms: binary success, dense distance / proximity / grasp
    shaping, the invalid-action penalty as a negative weight (``embodied.robot_actions``'s
    ``DEFAULT_REWARD`` defines each signal). The trainer reads ``info["reward_terms"]``."""

    demo_file: str = ""
    """SFT from recorded demonstrations instead of the scripted controller: a LeRobot v2.x
    dataset folder or a LIBERO / robomimic HDF5 file (the ``demo`` split replays its episodes)."""
    demo_format: str = "auto"
    """auto (folder: lerobot; .hdf5 / .h5: libero_hdf5) | lerobot | libero_hdf5."""
    demo_camera: str = ""
    """The demo file's image feature (LeRobot) or obs key (LIBERO); empty: the first / agentview."""
    demo_action_dims: list[int] = dataclasses.field(default_factory=list)
    """LeRobot: the action columns that are (dx, dy, dz, gripper), when there are more than 4."""

    def __post_init__(self) -> None:
        _check(
            self.demo_format in ("auto", "lerobot", "libero_hdf5"),
            "robot.demo_format",
            f"{self.demo_format!r} is unknown; use auto, lerobot or libero_hdf5",
        )
        _check(
            not self.demo_action_dims or len(self.demo_action_dims) == 4,
            "robot.demo_action_dims",
            f"name exactly 4 columns (dx, dy, dz, gripper), got {self.demo_action_dims}",
        )
        _check(
            self.suite in ROBOT_SUITES,
            "robot.suite",
            f"{self.suite!r} is unknown; use one of {', '.join(ROBOT_SUITES)}",
        )
        if self.suite == "own":
            _check(
                self.task in ROBOT_TASKS,
                "robot.task",
                f"{self.task!r} is unknown; use one of {', '.join(ROBOT_TASKS)}",
            )
        _check(
            not self.wrist_camera or self.suite == "own",
            "robot.wrist_camera",
            f"only the own suite has a wrist camera, not {self.suite!r}",
        )
        _check(
            16 <= self.image_size <= 512,
            "robot.image_size",
            f"must be in [16, 512], got {self.image_size}",
        )
        _check(1 <= self.chunk <= 16, "robot.chunk", f"must be in [1, 16], got {self.chunk}")
        _check(
            self.action_style in ("digits", "padded", "tokens"),
            "robot.action_style",
            f"{self.action_style!r} is unknown; use digits, padded or tokens",
        )
        _check(
            not self.constrained or self.action_style in ("padded", "tokens"),
            "robot.constrained",
            f"needs robot.action_style=padded or tokens, got {self.action_style!r} "
            "(plain digits have no fixed-width grammar)",
        )
        _check(
            self.action_frame in ("delta", "target"),
            "robot.action_frame",
            f"{self.action_frame!r} is unknown; use delta or target",
        )
        _check(
            self.action_frame == "delta" or self.suite == "own",
            "robot.action_frame",
            f"target is only available for the own suite; {self.suite!r} actions are moves",
        )
        for name, count, full in (("cubes", self.cubes, 3), ("zones", self.zones, 2)):
            _check(
                type(count) is int and 1 <= count <= full,
                f"robot.{name}",
                f"must be an int in [1, {full}], got {count!r}",
            )
            _check(
                count == full or self.suite == "own",
                f"robot.{name}",
                f"is only available for the own suite, not {self.suite!r}",
            )
        _check(
            type(self.paced) is bool and (not self.paced or self.suite == "own"),
            "robot.paced",
            f"must be a bool, and true only for the own suite (got {self.paced!r}, "
            f"suite {self.suite!r})",
        )
        _check(2 <= self.n_bins <= 1024, "robot.n_bins", f"must be in [2, 1024], got {self.n_bins}")
        _check(
            0 < self.max_step <= 0.2,
            "robot.max_step",
            f"must be in (0, 0.2] m, got {self.max_step}",
        )
        _check(self.max_steps >= 0, "robot.max_steps", "must be >= 0")
        unknown = set(self.reward) - set(ROBOT_REWARD_TERMS)
        _check(
            not unknown,
            "robot.reward",
            f"unknown terms {sorted(unknown)}; known: {', '.join(ROBOT_REWARD_TERMS)}",
        )
        bad = [k for k, v in self.reward.items() if not math.isfinite(float(v))]
        _check(not bad, "robot.reward", f"weights must be finite numbers: {bad}")
