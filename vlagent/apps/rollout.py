"""Multi-step episodes on app envs: G episodes per task, stepped in lockstep, crash-safe.

Every episode of a group resets with the same task id and seed, so its members start from the
same state (GRPO groups). Each turn, the active episodes' prompts (:mod:`vlagent.apps.history`)
go to an :class:`Actor` in one batch; its actions go to the episodes' envs. An env whose
``reset`` or ``step`` raises (simulator error, adb gone) ends that episode with
``Episode.error`` set; the other episodes and the caller carry on.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from gui.actions import BaseAction, InvalidAction, parse_action
from perception_tools.geometry import Frame
from vlagent.apps.config import HistoryConfig
from vlagent.apps.history import TurnContext, resize_screen, turn_context
from vlagent.codec.gui_actions import render_history_action

log = logging.getLogger(__name__)
EnvFactory = Callable[[], Any]
"""Builds one gymnasium env (e.g. ``lambda: gymnasium.make("vlagent/Phone-v0", suite=...)``)."""


@dataclasses.dataclass(frozen=True)
class EpisodeSpec:
    """Which task an episode runs; members of a GRPO group share ``task_id`` and ``seed``."""

    task_id: str
    seed: int = 0
    group_id: int = 0


@dataclasses.dataclass
class Decision:
    """An actor's output for one turn.

    Attributes:
        text: the completion text (or the scripted action as JSON).
        action: the parsed action, or an InvalidAction with the parse error.
        completion_ids: policy token ids of the completion (incl. eos); empty for scripts.
        logprobs: behaviour log-prob of each completion token.
        frame: the coordinate frame of the current screenshot the text refers to.
    """

    text: str
    action: BaseAction | InvalidAction
    completion_ids: list[int] = dataclasses.field(default_factory=list)
    logprobs: list[float] = dataclasses.field(default_factory=list)
    frame: Frame | None = None


@dataclasses.dataclass
class Turn:
    """One turn: what the policy saw, what it said, what happened.

    Attributes:
        context: the prompt's images and text.
        decision: the actor's output.
        obs_key: anchor key of the observation acted on (equal keys = equal env state).
        invalid: the action was unparseable or the env could not execute it.
        info: the env's step info ({} when the step raised).
        screen: the full-size screenshot acted on (kept only when asked, for inspection).
    """

    context: TurnContext
    decision: Decision
    obs_key: str
    invalid: bool = False
    info: dict[str, Any] = dataclasses.field(default_factory=dict)
    screen: np.ndarray | None = None

    @property
    def format_ok(self) -> bool:
        """The completion parsed into an action."""
        return not isinstance(self.decision.action, InvalidAction)


@dataclasses.dataclass
class Episode:
    """One episode and its outcome (rewards are filled in by :mod:`vlagent.apps.credit`)."""

    spec: EpisodeSpec
    uid: int
    instruction: str = ""
    template: str = ""
    task: Any = None
    turns: list[Turn] = dataclasses.field(default_factory=list)
    success: bool = False
    status: str = "still running"
    truncated: bool = False
    error: str | None = None
    reward: float = float("nan")
    reward_terms: dict[str, float] = dataclasses.field(default_factory=dict)
    final_screen: np.ndarray | None = None

    @property
    def done(self) -> bool:
        return self.status != "still running" or self.truncated or self.error is not None


class Actor(Protocol):
    """Chooses the next action of a batch of episodes."""

    def act(
        self,
        episodes: Sequence[Episode],
        contexts: Sequence[TurnContext],
        observations: Sequence[dict[str, Any]],
    ) -> list[Decision]: ...


def obs_key(obs: dict[str, Any]) -> str:
    """Anchor key of an observation: a hash of its a11y text (else of its pixels)."""
    data = obs.get("a11y")
    raw = data.encode() if isinstance(data, str) else np.ascontiguousarray(obs["image"]).tobytes()
    return hashlib.sha1(raw).hexdigest()[:16]


def _env_action(decision: Decision) -> dict[str, Any]:
    """The env's action mapping; an unparseable decision becomes an invalid (no-op) action."""
    if isinstance(decision.action, InvalidAction):
        return {"type": "invalid", "reason": decision.action.reason}
    return decision.action.to_dict()


class _Slot:
    """An episode with its env, current observation and history."""

    def __init__(self, episode: Episode, env: Any) -> None:
        self.episode, self.env = episode, env
        self.obs: dict[str, Any] = {}
        self.screens: list[np.ndarray] = []
        self.past: list[str] = []


def _start(spec: EpisodeSpec, uid: int, make_env: EnvFactory, cfg: HistoryConfig) -> _Slot:
    ep = Episode(spec=spec, uid=uid)
    slot = _Slot(ep, None)
    try:
        slot.env = make_env()
        slot.obs, info = slot.env.reset(seed=spec.seed, options={"task_id": spec.task_id})
        ep.instruction = str(slot.obs.get("instruction", ""))
        ep.template = str(info.get("template", ""))
        ep.task = getattr(slot.env.unwrapped, "task", None)
        slot.screens.append(resize_screen(slot.obs["image"], cfg))
    except Exception as err:  # a backend that cannot start ends only this episode
        ep.error = f"reset: {type(err).__name__}: {err}"
        log.warning("episode %d (%s) could not start: %s", uid, spec.task_id, ep.error)
    return slot


def _step(
    slot: _Slot, decision: Decision, ctx: TurnContext, cfg: HistoryConfig, keep: bool
) -> None:
    ep = slot.episode
    turn = Turn(ctx, decision, obs_key(slot.obs), screen=slot.obs["image"] if keep else None)
    ep.turns.append(turn)
    slot.past.append(render_history_action(decision.action))
    try:
        obs, _, terminated, truncated, info = slot.env.step(_env_action(decision))
    except Exception as err:  # simulator raised / adb gone: end this episode, keep the rest
        turn.invalid = not turn.format_ok
        ep.error = f"step {len(ep.turns)}: {type(err).__name__}: {err}"
        log.warning("episode %d (%s) crashed: %s", ep.uid, ep.spec.task_id, ep.error)
        return
    turn.info = dict(info)
    turn.invalid = (not turn.format_ok) or bool(info.get("invalid_action"))
    ep.success = bool(info.get("success"))
    ep.status = str(info.get("status", ep.status))
    ep.truncated = bool(truncated) and not terminated
    if info.get("backend_error"):
        ep.error = str(info["backend_error"])
    if terminated and ep.status == "still running":
        ep.status = "failure"
    slot.obs = obs
    slot.screens.append(resize_screen(obs["image"], cfg))
    if keep and ep.done:
        ep.final_screen = obs["image"]


def run_episodes(
    actor: Actor,
    make_env: EnvFactory,
    specs: Sequence[EpisodeSpec],
    history: HistoryConfig,
    *,
    max_turns: int = 50,
    keep_screens: bool = False,
    first_uid: int = 0,
) -> list[Episode]:
    """Run one episode per spec to its end (success, ending action, budget, crash).

    Args:
        actor: picks each turn's action for the active episodes (one batched call per turn).
        make_env: builds one env per episode (closed at the end).
        specs: the episodes; repeat a spec G times for a GRPO group.
        history: what each turn's prompt holds.
        max_turns: a safety cap on turns beyond the env's own step budget.
        keep_screens: keep full-size screenshots on the turns (for saved trajectories).
        first_uid: uid of the first episode (uids must stay unique across calls sharing an
            actor: scripted actors keep one policy per uid).

    Returns:
        The episodes in ``specs`` order.
    """
    slots = [_start(s, first_uid + i, make_env, history) for i, s in enumerate(specs)]
    try:
        for _ in range(max_turns):
            active = [s for s in slots if not s.episode.done]
            if not active:
                break
            contexts = [
                turn_context(s.episode.instruction, s.screens, s.past, history) for s in active
            ]
            decisions = actor.act([s.episode for s in active], contexts, [s.obs for s in active])
            for slot, decision, ctx in zip(active, decisions, contexts, strict=True):
                _step(slot, decision, ctx, history, keep_screens)
        for s in slots:
            if not s.episode.done:
                s.episode.truncated = True
    finally:
        for s in slots:
            if s.env is not None:
                try:
                    s.env.close()
                except Exception as err:  # closing a dead backend must not lose the results
                    log.warning("closing env of episode %d failed: %s", s.episode.uid, err)
    return [s.episode for s in slots]


def group_specs(task_ids: Sequence[str], group_size: int, seed: int) -> list[EpisodeSpec]:
    """``group_size`` identical specs per task (group id = task position), all seeded ``seed``."""
    return [
        EpisodeSpec(task_id=t, seed=seed, group_id=g)
        for g, t in enumerate(task_ids)
        for _ in range(group_size)
    ]


class ScriptedActor:
    """Runs a per-episode scripted policy (``gui.apps.evaluate.POLICIES``: oracle, random)."""

    def __init__(self, factory: Callable[[Any, int], Any]) -> None:
        self.factory = factory
        self._policies: dict[int, Any] = {}

    def act(
        self,
        episodes: Sequence[Episode],
        contexts: Sequence[TurnContext],
        observations: Sequence[dict[str, Any]],
    ) -> list[Decision]:
        out = []
        for ep, obs in zip(episodes, observations, strict=True):
            if ep.uid not in self._policies:
                self._policies[ep.uid] = self.factory(ep.task, ep.spec.seed + ep.uid)
            mapping = self._policies[ep.uid].act(obs)
            out.append(Decision(json.dumps(mapping), parse_action(mapping)))
        return out
