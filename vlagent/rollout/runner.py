"""The episode runner: drives gymnasium envs with a policy (or a demonstrator) and emits trajectories.

Every world goes through this one loop. Per round, the unfinished episodes of a chunk are
continued together: forced turns come from a demonstrator; sampled turns come from the policy in
one batched call (``rollout/engine.py``). Each turn's text goes to the world's :class:`Adapter`,
which reads it as an env action (then ``env.step``) or as a tool call (a new observation that
continues the context without stepping the env). Episodes of a GRPO group reset with the same
task id and seed, so they start from the same state.

A backend that raises in ``reset`` or ``step`` ends only its episode (``Trajectory.error``,
reward NaN); the others and the caller carry on.

The env resets and steps of a round can run on ``env_threads`` threads (``rollout/env_steps.py``):
slow envs mostly wait. Everything else (tokenizer, adapter, demonstrator, trajectories) stays on
the caller's thread in episode order, so the trajectories are the same for any thread count.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import hashlib
import logging
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np

from vlagent.errors import VlagentError
from vlagent.rollout.engine import sample_turns
from vlagent.rollout.engines import RolloutEngine
from vlagent.rollout.env_steps import call_all, env_executor, reset_env, step_env
from vlagent.rollout.trajectory import Trajectory, Turn

log = logging.getLogger(__name__)

EnvFactory = Callable[[], Any]
"""Builds one gymnasium env (one per episode; closed when the episode's chunk ends)."""


@dataclasses.dataclass(frozen=True)
class EpisodeSpec:
    """Which task an episode runs; members of a GRPO group share ``task_id`` and ``seed``."""

    task_id: Any
    seed: int = 0
    group_id: int = 0


@dataclasses.dataclass
class Decision:
    """What an adapter read from one policy turn.

    Attributes:
        kind: ``env`` (send ``action`` to ``env.step``), ``tool`` / ``tool_error`` (the adapter
            already appended the observation turn), or ``over_limit`` (end the episode).
        action: the env action mapping (kind ``env``) or the tool call.
        reason: why, for ``over_limit`` (empty: the runner names the turn or token budget
            that ``last`` ran out).
    """

    kind: str
    action: Any = None
    reason: str = ""


class Adapter(Protocol):
    """The per-world glue between an env and the policy's chat."""

    def start(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> None:
        """Set the first context (``traj.segments = [Segment(prompt)]``) from the reset."""
        ...

    def read(self, traj: Trajectory, turn: Turn, last: bool) -> Decision:
        """Read a policy turn (its tokens are already appended). ``last``: no turn or token
        is left after it, so a tool call could not be followed up."""
        ...

    def observe(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> None:
        """After a non-final ``env.step``: extend or replace the context for the next turn."""
        ...

    def finish(self, trajectories: Sequence[Trajectory]) -> None:
        """All episodes are over: add episode-level terms (to each last turn), pictures, …"""
        ...


class Demonstrator(Protocol):
    """Writes forced (demonstration) turns: the next turn as text or as exact token ids (for
    codecs whose text does not re-tokenize to the same ids), or None to sample."""

    def text(
        self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]
    ) -> str | list[int] | None: ...


def forced_ids(forced: str | Sequence[int], tokenizer: Any) -> list[int]:
    """Token ids of a forced turn (before eos): text is tokenized, ids are taken as they are.

    Raises:
        TypeError: ``forced`` is neither a str nor a sequence of ints (a demonstrator's bug).
    """
    if isinstance(forced, str):
        return list(tokenizer(forced, add_special_tokens=False)["input_ids"])
    ids = list(forced)
    if not all(isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in ids):
        raise TypeError(f"a demonstrator returned {type(forced).__name__} that is not token ids")
    return [int(i) for i in ids]


@dataclasses.dataclass(frozen=True)
class Limits:
    """Budgets of one episode.

    Attributes:
        max_turns: policy turns per episode (tool turns included).
        max_turn_tokens: new tokens per turn.
        max_episode_tokens: new tokens over all turns (0: ``max_turns * max_turn_tokens``).
        over_limit: what a turn that hits a limit does: ``none`` (a turn without eos is still
            read and sent to the env; the env's step budget ends episodes), ``mask`` (the
            episode ends and gets no loss and no advantage), ``penalize`` (it ends and its
            last turn gets the ``over_limit`` term, −``over_limit_penalty``).
    """

    max_turns: int = 1
    max_turn_tokens: int = 32
    max_episode_tokens: int = 0
    over_limit: str = "none"
    over_limit_penalty: float = 0.0

    @property
    def episode_tokens(self) -> int:
        return self.max_episode_tokens or self.max_turns * self.max_turn_tokens


def obs_key(obs: dict[str, Any]) -> str:
    """Anchor key of an observation: a hash of its a11y text, else of its pixels."""
    data = obs.get("a11y")
    raw = data.encode() if isinstance(data, str) else np.ascontiguousarray(obs["image"]).tobytes()
    return hashlib.sha1(raw).hexdigest()[:16]


class _Slot:
    def __init__(self, traj: Trajectory) -> None:
        self.traj, self.env = traj, None
        self.obs: dict[str, Any] = {}
        self.info: dict[str, Any] = {}


Executor = concurrent.futures.Executor | None


def _not_started(traj: Trajectory, err: Exception) -> None:
    traj.error, traj.status = f"reset: {type(err).__name__}: {err}", "error"
    log.warning("episode %s could not start: %s", traj.task_id, traj.error)


def _start_all(slots: list[_Slot], make_env: EnvFactory, adapter: Adapter, pool: Executor) -> None:
    """Make each episode's env here (world factories need not be thread-safe), reset them on
    ``pool``, then start the adapter's contexts in episode order."""
    for s in slots:
        try:
            s.env = make_env()
        except Exception as err:  # a backend that cannot start ends only this episode
            _not_started(s.traj, err)
    ready = [s for s in slots if s.env is not None]
    calls = [functools.partial(reset_env, s.env, s.traj.seed, s.traj.task_id) for s in ready]
    for s, out in zip(ready, call_all(calls, pool), strict=True):
        if isinstance(out, Exception):
            _not_started(s.traj, out)
            continue
        s.obs, s.info = out
        s.traj.info = dict(s.info)
        s.traj.instruction = str(s.obs.get("instruction", ""))
        adapter.start(s.traj, s.obs, s.info)


def _end_over_limit(traj: Trajectory, turn: Turn, reason: str, limits: Limits) -> None:
    turn.kind = "over_limit"
    traj.status = "over_limit"
    traj.extras["limit_reason"] = reason
    if limits.over_limit == "penalize":
        turn.reward_terms["over_limit"] = -float(limits.over_limit_penalty)
        turn.reward = float(sum(turn.reward_terms.values()))
    elif limits.over_limit == "mask":
        traj.mask_out()


def _step_all(steps: list[tuple[_Slot, Turn]], adapter: Adapter, pool: Executor) -> None:
    """Step each episode's env with its turn's action (on ``pool``), then record the outcomes
    in episode order."""
    calls = [functools.partial(step_env, s.env, turn.action) for s, turn in steps]
    for (s, turn), out in zip(steps, call_all(calls, pool), strict=True):
        _record_step(s, turn, out, adapter)


def _record_step(slot: _Slot, turn: Turn, out: Any, adapter: Adapter) -> None:
    traj = slot.traj
    if isinstance(out, Exception):  # simulator raised / device gone: end this episode only
        traj.error, traj.status = f"step {len(traj.turns)}: {type(out).__name__}: {out}", "error"
        log.warning("episode %s crashed: %s", traj.task_id, traj.error)
        return
    obs, reward, terminated, truncated, info = out
    turn.info = dict(info)
    terms = info.get("reward_terms") or {"env": float(reward)}
    turn.reward_terms = {k: float(v) for k, v in terms.items()}
    turn.reward = float(reward)
    turn.invalid = bool(info.get("invalid_action"))
    traj.info = turn.info
    traj.success = bool(info.get("success", traj.success))
    if info.get("backend_error"):
        traj.error, traj.status = str(info["backend_error"]), "error"
    elif terminated:
        traj.status = "terminated"
    elif truncated:
        traj.status = "truncated"
    else:
        slot.obs, slot.info = obs, dict(info)
        adapter.observe(traj, obs, info)


def _after_turn(
    slot: _Slot,
    ids: list[int],
    logps: list[float] | None,
    hit_eos: bool,
    adapter: Adapter,
    limits: Limits,
    tokenizer: Any,
) -> Turn | None:
    """Record a policy turn and read it; the turn when its action goes to ``env.step`` (the
    caller steps the env and records the outcome: :func:`_step_all`), else None."""
    traj = slot.traj
    seg_index = len(traj.segments) - 1
    start, end = traj.segment.append(ids, policy=True, logprobs=logps)
    text = tokenizer.decode(ids, skip_special_tokens=True)
    turn = Turn(seg_index, start, end, text, obs_key=obs_key(slot.obs), truncated=not hit_eos)
    traj.turns.append(turn)
    if not hit_eos and limits.over_limit != "none":
        full = end - start >= limits.max_turn_tokens
        _end_over_limit(traj, turn, "max_turn_tokens" if full else "max_episode_tokens", limits)
        return None
    last = len(traj.turns) >= limits.max_turns or traj.n_generated >= limits.episode_tokens
    decision = adapter.read(traj, turn, last)
    turn.kind, turn.action = decision.kind, decision.action
    if decision.kind == "env":
        return turn
    if decision.kind == "over_limit":
        _end_over_limit(traj, turn, decision.reason or _spent(traj, limits), limits)
    elif last and limits.over_limit != "none":
        _end_over_limit(traj, turn, _spent(traj, limits), limits)
    return None


def _spent(traj: Trajectory, limits: Limits) -> str:
    """The budget a ``last`` turn ran out: turns, else the episode's tokens."""
    return "max_turns" if len(traj.turns) >= limits.max_turns else "max_episode_tokens"


def run_episodes(
    policy: Any,
    adapter: Adapter,
    make_env: EnvFactory,
    specs: Sequence[EpisodeSpec],
    limits: Limits,
    *,
    temperature: float = 1.0,
    greedy: bool = False,
    seed: int | None = None,
    demonstrator: Demonstrator | None = None,
    chunk_size: int = 64,
    shared_prefix: bool = True,
    policy_version: int = 0,
    env_threads: int = 1,
    engine: RolloutEngine | None = None,
) -> list[Trajectory]:
    """Run one episode per spec to its end (env termination, truncation, limit, crash).

    Args:
        policy: a loaded ``Policy`` (its tokenizer decodes turns; its model samples them).
        adapter: the world's adapter.
        make_env: builds one env per episode.
        specs: the episodes (repeat a spec G times for a GRPO group).
        limits: turn and token budgets, and what a limit does.
        temperature, greedy: sampling.
        seed: seeds sampling; round r of chunk c uses a seed derived from (seed, c, r), the
            first round of the first chunk uses ``seed`` itself.
        demonstrator: writes forced turns (SFT demonstrations, probes); None samples all.
        chunk_size: episodes advanced together (memory bound of one sampling call).
        shared_prefix: let the sampler share prefills between equal prompts.
        policy_version: recorded on every trajectory.
        env_threads: threads that run the env resets and steps of one round (1: one after
            another on this thread); ``make_env`` is always called on this thread.
        engine: samples the turns (``rollout/engines.py``, e.g. vLLM); None: the transformers
            sampler on ``policy.model`` (``shared_prefix`` applies to it only).

    Returns:
        The trajectories in ``specs`` order.

    Raises:
        ValueError: ``env_threads`` < 1.
    """
    tokenizer = policy.tokenizer
    trajs = [
        Trajectory(s.task_id, s.seed, s.group_id, policy_version=policy_version) for s in specs
    ]
    sample = functools.partial(
        sample_turns, policy, temperature=temperature, greedy=greedy, shared_prefix=shared_prefix
    )
    if engine is not None:
        if engine.name != "hf" and getattr(policy, "grammar", None) is not None:
            raise VlagentError(
                f"constrained decoding (robot.constrained) runs on the hf engine only, not "
                f"{engine.name!r}: set rollout.engine=hf or robot.constrained=false"
            )
        sample = functools.partial(engine.sample_turns, temperature=temperature, greedy=greedy)
    with env_executor(env_threads) as pool:
        for lo in range(0, len(trajs), chunk_size):
            slots = [_Slot(t) for t in trajs[lo : lo + chunk_size]]
            try:
                _start_all(slots, make_env, adapter, pool)
                for round_ in range(limits.max_turns):
                    active = [s for s in slots if not s.traj.done]
                    if not active:
                        break
                    rseed = _round_seed(seed, lo // chunk_size, round_)
                    _play_round(
                        active, sample, rseed, demonstrator, adapter, limits, tokenizer, pool
                    )
                for s in slots:
                    if not s.traj.done:
                        s.traj.status = "truncated"
            finally:
                _close_envs(slots)
    adapter.finish(trajs)
    return trajs


def _round_seed(seed: int | None, chunk: int, round_: int) -> int | None:
    """Sampling seed of a round: ``seed`` itself for the first round of the first chunk."""
    if seed is None or chunk == round_ == 0:
        return seed
    return seed * 7_919 + chunk * 104_729 + round_


def _play_round(
    active: list[_Slot],
    sample: Callable[..., list[tuple[list[int], list[float], bool]]],
    seed: int | None,
    demonstrator: Demonstrator | None,
    adapter: Adapter,
    limits: Limits,
    tokenizer: Any,
    pool: Executor,
) -> None:
    """One turn of every active episode: the forced turns (then their env steps, together),
    then one sampling call for the others (then their env steps, together)."""
    eos = int(tokenizer.eos_token_id)
    to_sample, steps = [], []
    for s in active:
        forced = demonstrator.text(s.traj, s.obs, s.info) if demonstrator else None
        if forced is None:
            to_sample.append(s)
            continue
        ids = forced_ids(forced, tokenizer) + [eos]
        allow = _allowance(s.traj, limits)
        turn = _after_turn(s, ids[:allow], None, len(ids) <= allow, adapter, limits, tokenizer)
        steps += [] if turn is None else [(s, turn)]
    _step_all(steps, adapter, pool)
    if not to_sample:
        return
    allow = [_allowance(s.traj, limits) for s in to_sample]
    out = sample([s.traj.segment for s in to_sample], allow, seed=seed)
    steps = []
    for s, (ids, logps, hit) in zip(to_sample, out, strict=True):
        turn = _after_turn(s, ids, logps, hit, adapter, limits, tokenizer)
        steps += [] if turn is None else [(s, turn)]
    _step_all(steps, adapter, pool)


def _close_envs(slots: list[_Slot]) -> None:
    for s in slots:
        if s.env is not None:
            try:
                s.env.close()
            except Exception as err:  # closing a dead backend must not lose results
                log.warning("closing env of episode %s failed: %s", s.traj.task_id, err)


def _allowance(traj: Trajectory, limits: Limits) -> int:
    return max(1, min(limits.max_turn_tokens, limits.episode_tokens - traj.n_generated))


def group_specs(
    task_ids: Sequence[Any], group_size: int, seeds: Sequence[int] | int = 0
) -> list[EpisodeSpec]:
    """``group_size`` identical specs per task (group id = task position)."""
    seed_of = (lambda i: seeds) if isinstance(seeds, int) else (lambda i: int(seeds[i]))
    return [
        EpisodeSpec(task_id=t, seed=seed_of(g), group_id=g)
        for g, t in enumerate(task_ids)
        for _ in range(group_size)
    ]
