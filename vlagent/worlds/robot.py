"""World ``robot``: table-top manipulation (``embodied``) with a VLA action codec.

Env: ``embodied.RobotEnv`` on the ``sim.robot`` scene (or a Meta-World / LIBERO task through
``embodied.metaworld_env`` / ``embodied.libero_env``), wrapped in ``embodied.ActionChunk`` when
``robot.chunk`` > 1. Its reward terms (``robot.reward``: binary success, optional distance and
grasp shaping, the invalid-action penalty) come from ``info["reward_terms"]``; the trainer never
recomputes them. Adapter: each turn is a fresh prompt (a new segment) with the current camera
image and the text::

    Task: push the red cube onto the green square
    Gripper: x=12 y=-40 z=150 mm, open
    Reply with the next action.

The reply is read by :class:`vlagent.codec.robot_actions.RobotActionCodec` (``robot.n_bins``
uniform bins per dimension, as digits or reserved tokens) into a ``(chunk, 4)`` array of bin
centres in [-1, 1]; output that does not parse becomes an all-NaN action, which the env records
as an invalid no-op (``info["invalid_action"]``). Every member of a GRPO group resets to the
task's own start state, so turn prompts repeat within a group while the episodes agree.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vlagent.codec.action_grammar import action_grammar
from vlagent.codec.robot_actions import RobotActionCodec
from vlagent.robot_config import RobotConfig
from vlagent.rollout.runner import Decision
from vlagent.rollout.tokens import PromptCache
from vlagent.rollout.trajectory import Segment, Trajectory, Turn
from vlagent.worlds.base import Split, World, save_episode_record
from vlagent.worlds.pool import EnvPool

DIM_NAMES = ("dx", "dy", "dz", "gripper")
MAX_TWINS = 256
"""Open twin envs a demonstrator keeps at most (each holds a simulator and a renderer)."""


def system_prompt(cfg: RobotConfig) -> str:
    """The system text: what the numbers mean (bins of [-1, 1], the gripper's sign)."""
    mid = cfg.n_bins // 2
    per = "one action" if cfg.chunk == 1 else f"{cfg.chunk} actions separated by ';'"
    views = " The second image is the gripper's wrist camera." if cfg.wrist_camera else ""
    if cfg.action_frame == "target":
        return (
            f"You control a robot gripper over a table.{views} Reply with "
            f"{per}: four bins 0..{cfg.n_bins - 1} for x y z gripper: the point the gripper "
            "moves to (bin 0 is the workspace's low end of an axis, the last bin its high end; "
            f"a gripper bin of {mid} or more closes it, below opens)."
        )
    return (
        f"You control a robot gripper over a table.{views} Reply with "
        f"{per}: four bins 0..{cfg.n_bins - 1} for dx dy dz gripper "
        f"({mid} is about no motion; a gripper bin of {mid} or more closes it, below opens)."
    )


def turn_text(instruction: str, proprio: np.ndarray | None) -> str:
    """The user text of a turn: the instruction, the gripper's state (mm), the request.

    Args:
        proprio: float (4,): end effector x, y, z in metres (world frame) and the gripper's
            closed flag (a demo file's state may have 3 values, or fewer: shown as they are),
            or None when ``robot.proprio`` is off.
    """
    lines = [f"Task: {instruction}"]
    if proprio is not None:
        v = np.asarray(proprio, dtype=np.float64).reshape(-1)
        if len(v) >= 3:
            x, y, z = (int(round(float(c) * 1000)) for c in v[:3])
            state = "" if len(v) < 4 else ", closed" if float(v[3]) > 0.5 else ", open"
            lines.append(f"Gripper: x={x} y={y} z={z} mm{state}")
        elif len(v):  # a demo file's short state vector: its values as they are
            lines.append("State: " + " ".join(f"{float(c):.3g}" for c in v))
    lines.append("Reply with the next action.")
    return "\n".join(lines)


class RobotAdapter:
    """Camera image + instruction (+ proprio) → a fresh prompt each turn; reply → actions."""

    def __init__(self, processor: Any, codec: RobotActionCodec, cfg: RobotConfig) -> None:
        self.prompts = PromptCache(processor)
        self.codec, self.cfg = codec, cfg
        self.system = system_prompt(cfg)

    def _prompt(self, traj: Trajectory, obs: dict[str, Any]) -> None:
        proprio = np.asarray(obs["proprio"]) if self.cfg.proprio and "proprio" in obs else None
        image = np.asarray(obs["image"], dtype=np.uint8)
        traj.extras["frames"].append(image)
        if "proprio" in obs:
            traj.extras["proprio"].append(np.asarray(obs["proprio"], dtype=np.float32))
        images = [image]
        if self.cfg.wrist_camera and "wrist_image" in obs:  # a demo file's replay has none
            images.append(np.asarray(obs["wrist_image"], dtype=np.uint8))
        text = turn_text(traj.instruction, proprio)
        traj.segments.append(Segment(self.prompts.get(images, text, self.system)))

    def start(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> None:
        traj.extras.update(frames=[], proprio=[], kind=str(info.get("kind", self.cfg.task)))
        self._prompt(traj, obs)

    def read(self, traj: Trajectory, turn: Turn, last: bool) -> Decision:
        ids = traj.segments[turn.segment].ids[turn.start : turn.end]
        parsed = self.codec.parse(turn.text, ids if self.cfg.action_style == "tokens" else None)
        action = np.asarray(parsed.actions, dtype=np.float32)
        if self.cfg.chunk == 1:
            action = action.reshape(-1)[: len(DIM_NAMES)]
        return Decision("env", action)

    def observe(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> None:
        self._prompt(traj, obs)

    def finish(self, trajectories: Sequence[Trajectory]) -> None:
        for t in trajectories:
            t.extras["steps"] = int(t.info.get("steps", len(t.turns) * self.cfg.chunk))


class ScriptedDemonstrator:
    """The env's scripted controller (or a suite's own expert, e.g. Meta-World's, or the actions
    a demo file recorded, ``robot.demo_file``) plays each episode (SFT demonstrations); its
    actions are
    rendered by the codec, so they go through the same adapter (parse → bin centres → env) as
    the policy's turns. It controls a twin env reset like the episode's and stepped with the
    decoded (quantized) actions, so its state is the episode's state."""

    def __init__(self, world: RobotWorld) -> None:
        self.world = world
        self._twins: dict[int, Any] = {}

    def text(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> str | list[int]:
        from embodied.scripted import ScriptedController

        key = id(traj)
        if key not in self._twins:
            env = self.world.make_env("demo")
            env.reset(seed=traj.seed, options={"task_id": traj.task_id})
            u = env.unwrapped
            if is_replay(u):
                act = _recorded(u)
            elif hasattr(u, "expert_action"):
                act = _expert(u)
            else:
                act = ScriptedController(u).act
            self._twins[key] = (env, act)
        env, act = self._twins[key]
        u, bins, chunk = env.unwrapped, self.world.codec.bins, []
        ended = False
        for _ in range(self.world.cfg.robot.chunk):
            if ended:  # the env stops a chunk at the episode's end: the rest is never run
                chunk.append(chunk[-1])
                continue
            # every act() reads privileged state or the file, never its argument: no render here
            chunk.append(act(obs))
            ended = _step_unseen(u, bins.centres(bins.to_bins(np.asarray(chunk[-1]))))
        if ended:  # the episode ends with this turn: release the twin's simulator now
            env.close()
            del self._twins[key]
        while len(self._twins) > MAX_TWINS:  # episodes cut short elsewhere (over_limit, errors)
            old = next(iter(self._twins))
            self._twins.pop(old)[0].close()
        actions = np.stack(chunk)
        if self.world.codec.style == "tokens":  # its text does not re-tokenize to its ids
            return self.world.codec.render_ids(actions)
        return self.world.codec.render(actions)

    def close(self) -> None:
        for env, _ in self._twins.values():
            env.close()
        self._twins.clear()


def _step_unseen(env: Any, action: np.ndarray) -> bool:
    """Step the twin ``env`` with ``action`` (as the episode's env sees it); whether the
    episode ended. Nobody reads the twin's frames: an env that can skip rendering
    (``RobotEnv.advance``) does."""
    advance = getattr(env, "advance", None)
    if callable(advance):
        _, terminated, truncated, _ = advance(action)
    else:
        _, _, terminated, truncated, _ = env.step(action)
    return bool(terminated or truncated)


def is_replay(env: Any) -> bool:
    """Whether ``env`` replays a demo file (``embodied.replay_env.ReplayEnv``)."""
    from embodied.replay_env import ReplayEnv

    return isinstance(env, ReplayEnv)


def _recorded(env: Any) -> Any:
    """The demo file's action at the replay's current frame, as ``act(obs)``."""
    from embodied.replay_env import recorded_action

    def act(_obs: dict[str, Any]) -> np.ndarray:
        return recorded_action(env)

    return act


def _expert(env: Any) -> Any:
    """A suite's own scripted policy (Meta-World's ``expert_action``) as ``act(obs)``."""

    def act(_obs: dict[str, Any]) -> np.ndarray:
        return env.expert_action()

    return act


class RobotWorld(World):
    """Manipulation tasks: ``robot.suite`` / ``robot.task``; ids from ``task.*_seed_offset``."""

    default_max_turns = 64

    def __init__(self, cfg: Any, policy: Any) -> None:
        super().__init__(cfg, policy)
        r: RobotConfig = cfg.robot
        tokenizer = getattr(policy.processor, "tokenizer", None)
        self.codec = RobotActionCodec(
            dims=len(DIM_NAMES),
            chunk=r.chunk,
            n_bins=r.n_bins,
            style=r.action_style,  # type: ignore[arg-type]
            tokenizer=tokenizer if r.action_style == "tokens" else None,
        )
        # the policy acting here decodes only well-formed replies, or the whole vocabulary
        policy.grammar = (
            action_grammar(self.codec, tokenizer, int(tokenizer.eos_token_id))
            if r.constrained
            else None
        )
        self._demo_episodes: list[Any] | None = None  # robot.demo_file, read on first use
        self._offsets = cfg.task.split_offsets()
        self._pools: dict[str, EnvPool] = {}

    def make_env(self, split: Split) -> Any:
        """A new env of ``split``; for the own suite a lease from the split's pool: building
        a scene (MJCF compile + GL context) costs ~0.1 s, a reset ~0.01 s, and with fresh
        demonstrations every SFT sample is a new episode with a twin env."""
        from embodied.factory import load_demo_episodes, make_demo_env

        r: RobotConfig = self.cfg.robot
        if split == "demo" and r.demo_file:
            if self._demo_episodes is None:
                self._demo_episodes = load_demo_episodes(
                    r.demo_file, r.demo_format, r.demo_camera, r.demo_action_dims
                )
            return make_demo_env(self._demo_episodes, r.image_size, r.chunk)
        if r.suite != "own":
            return self._build_env()
        if split not in self._pools:
            self._pools[split] = EnvPool(self._build_env)
        return self._pools[split].lease()

    def _build_env(self) -> Any:
        from embodied.factory import make_robot_env

        r: RobotConfig = self.cfg.robot
        return make_robot_env(
            suite=r.suite,
            task=r.task,
            image_size=r.image_size,
            camera=r.camera,
            max_step=r.max_step,
            max_steps=r.max_steps,
            reward=dict(r.reward),
            chunk=r.chunk,
            wrist_view=r.wrist_camera,
            action_frame=r.action_frame,
            cubes=r.cubes,
            zones=r.zones,
            paced=r.paced,
        )

    def adapter(self) -> RobotAdapter:
        return RobotAdapter(self.policy.processor, self.codec, self.cfg.robot)

    def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()
        super().close()

    def demonstrator(self) -> ScriptedDemonstrator:
        return ScriptedDemonstrator(self)

    def task_ids(self, split: Split, start: int, count: int) -> list[Any]:
        return [self._offsets[split] + i for i in range(start, start + count)]

    def baselines(self, task_ids: Sequence[Any]) -> dict[str, float]:
        """Success of a uniform random policy (actions in [-1, 1], ``default_rng(0)``) on these
        tasks, reset as the evaluator resets them (seed 0)."""
        if not task_ids:
            return {}
        env, rng, wins = self.make_env("test"), np.random.default_rng(0), 0
        try:
            for t in task_ids:
                env.reset(seed=0, options={"task_id": t})
                done, info = False, {}
                while not done:
                    action = rng.uniform(-1, 1, env.action_space.shape).astype(np.float32)
                    _, _, terminated, truncated, info = env.step(action)
                    done = terminated or truncated
                wins += bool(info.get("success"))
        finally:
            env.close()
        return {"random_policy": wins / len(task_ids)}

    def summarize(self, trajectories: Sequence[Trajectory]) -> dict[str, float]:
        """Mean env steps per episode, the rate of turns that parsed, success per task kind."""
        turns = [x for t in trajectories for x in t.turns]
        out = {
            "format_rate": sum(not x.invalid for x in turns) / max(len(turns), 1),
            "mean_steps": float(np.mean([t.extras.get("steps", 0) for t in trajectories]))
            if trajectories
            else 0.0,
        }
        by: dict[str, list[bool]] = {}
        for t in trajectories:
            by.setdefault(str(t.extras.get("kind", "?")), []).append(t.success)
        for name, v in sorted(by.items()):
            out[f"success/{name}"] = sum(v) / len(v)
        return out

    def categories(self, traj: Trajectory) -> dict[str, str]:
        """The task kind the env reported at reset (``reach``, ``push`` …; ``robot.task`` when
        the episode never started)."""
        return {"task": str(traj.extras.get("kind", self.cfg.robot.task))}

    def save_pictures(self, trajectories: Sequence[Trajectory], folder: Path, name: str) -> None:
        """Per episode: an animated GIF of its camera frames and a JSON record of its turns."""
        from vlagent.viz import save_gif

        for k, t in enumerate(trajectories):
            frames = t.extras.get("frames", [])
            if not frames:
                continue
            save_gif(frames, Path(folder) / f"{name}_{k:02d}.gif")
            save_episode_record(
                t,
                Path(folder) / f"{name}_{k:02d}.json",
                ("text", "invalid", "reward_terms"),
                seed=t.seed,
                kind=t.extras.get("kind"),
            )
