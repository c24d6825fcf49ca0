"""How far a robot policy's first reply is from the scripted expert's, per chunk slot, held out.

Success says whether an episode worked, not which part of a plan was wrong. OpenVLA-style
trainers report a held-out action error next to success; for a chunked policy (``robot.chunk``
> 1) the first reply is a whole plan, and its slots have different jobs (for push: travel
behind the cube, descend, push towards the zone). For each of the first ``n`` test tasks this
scores the policy's greedy first reply against the expert's first reply — the env's scripted
controller, played in a twin env reset to the same state, exactly as SFT's demonstrations are —
both decoded to bin centres, then to metres:

- ``target`` frame: each slot names a workspace point; the error is the distance between the
  policy's and the expert's points (m);
- ``delta`` frame: each slot is a move of ``action * max_step`` per axis; the error is the
  distance between the two moves (m).

Own suite only (its workspace bounds give the metres). Malformed first replies are counted, not
scored. The JSON is written atomically::

    python -m vlagent.eval.action_error --config runs/x/sft/config.yaml --model runs/x/sft/final \\
        --episodes 100 --out runs/x/action_error.json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np

THRESHOLDS_M: tuple[float, ...] = (0.015, 0.03, 0.06)
"""Error thresholds reported per slot (m): reach's tolerance, twice it, push's ``BEHIND``."""


def slot_errors(
    policy_actions: np.ndarray,
    expert_actions: np.ndarray,
    frame: str,
    lo: np.ndarray,
    hi: np.ndarray,
    max_step: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-slot position error (m) and gripper agreement of two decoded plans.

    Args:
        policy_actions, expert_actions: float (k, 4) in [-1, 1]: k chunk slots of
            ``(x, y, z, gripper)`` (``target`` frame) or ``(dx, dy, dz, gripper)`` (``delta``).
        frame: ``target`` | ``delta``.
        lo, hi: (3,) workspace bounds (m), for the ``target`` frame.
        max_step: metres per unit action per axis, for the ``delta`` frame.

    Returns:
        (errors, same_grip): float (k,) distances in metres, bool (k,) whether both close or
        both open the gripper (closed at ``gripper >= 0``).
    """
    a = np.asarray(policy_actions, dtype=np.float64).reshape(-1, 4)
    b = np.asarray(expert_actions, dtype=np.float64).reshape(-1, 4)
    if a.shape != b.shape:
        raise ValueError(f"plans differ in shape: {a.shape} vs {b.shape}")
    if frame == "target":
        span = np.asarray(hi, dtype=np.float64) - np.asarray(lo, dtype=np.float64)
        diff = (np.clip(a[:, :3], -1, 1) - np.clip(b[:, :3], -1, 1)) / 2 * span
    elif frame == "delta":
        diff = (np.clip(a[:, :3], -1, 1) - np.clip(b[:, :3], -1, 1)) * max_step
    else:
        raise ValueError(f"frame must be 'target' or 'delta', got {frame!r}")
    return np.linalg.norm(diff, axis=1), (a[:, 3] >= 0) == (b[:, 3] >= 0)


def summarize(errors: Sequence[np.ndarray], grips: Sequence[np.ndarray]) -> list[dict[str, float]]:
    """Per slot: mean and median error (m), the share under each of ``THRESHOLDS_M``, and the
    gripper agreement, over the scored episodes (``errors[i]`` is episode i's (k,) errors)."""
    if not errors:
        return []
    e, g = np.stack(errors), np.stack(grips)  # [episodes, k]
    out = []
    for j in range(e.shape[1]):
        row = {
            "slot": j,
            "mean_m": float(e[:, j].mean()),
            "median_m": float(np.median(e[:, j])),
            "grip_agree": float(g[:, j].mean()),
        }
        row.update({f"within_{t * 100:g}cm": float((e[:, j] <= t).mean()) for t in THRESHOLDS_M})
        out.append(row)
    return out


def score_first_replies(world: Any, trajectories: Sequence[Any]) -> dict[str, Any]:
    """Each episode's first reply against the expert's first reply for the same (task, reset
    seed), on ``world`` (a ``RobotWorld`` of the own suite); see the module docstring.

    Returns:
        ``{"episodes", "scored", "malformed_first_reply", "frame", "chunk", "slots"}`` with
        ``slots`` from :func:`summarize`.
    """
    from sim.robot.scene import WORKSPACE_HI, WORKSPACE_LO

    r = world.cfg.robot
    if r.suite != "own":
        raise ValueError(f"action_error needs the own suite (workspace in metres), got {r.suite!r}")
    demo = world.demonstrator()
    errors, grips, malformed = [], [], 0
    try:
        for t in trajectories:
            if not t.turns:
                malformed += 1
                continue
            first = t.turns[0]
            ids = t.segments[first.segment].ids[first.start : first.end] if t.segments else None
            mine = world.codec.parse(first.text, ids if r.action_style == "tokens" else None)
            if mine.invalid:
                malformed += 1
                continue
            # the expert resets its own twin from (t.seed, t.task_id) and reads privileged
            # state only, so it needs no observation
            reply = demo.text(t, {}, {})
            theirs = world.codec.parse(
                reply if isinstance(reply, str) else "", reply if isinstance(reply, list) else None
            )
            e, g = slot_errors(mine.actions, theirs.actions, r.action_frame, WORKSPACE_LO,
                               WORKSPACE_HI, r.max_step)  # fmt: skip
            errors.append(e)
            grips.append(g)
    finally:
        demo.close()
    return {
        "episodes": len(trajectories),
        "scored": len(errors),
        "malformed_first_reply": malformed,
        "frame": r.action_frame,
        "chunk": r.chunk,
        "slots": summarize(errors, grips),
    }


def action_error(world: Any, policy: Any, n: int, max_new_tokens: int) -> dict[str, Any]:
    """Greedy episodes of ``policy`` on the first ``n`` test tasks, their success rate, and
    their first replies scored by :func:`score_first_replies`."""
    from vlagent.eval.evaluate import evaluate

    rep = evaluate(world, policy, "test", n, max_new_tokens=max_new_tokens, keep_inputs=n)
    return {
        "success": rep.success_rate,
        "success_ci": list(rep.success_ci),
        **score_first_replies(world, rep.trajectories),
    }


def main(argv: list[str] | None = None) -> int:
    """CLI: load the run's config and a checkpoint, write the per-slot errors as JSON."""
    from vlagent.config import load_config
    from vlagent.io import atomic_write_json
    from vlagent.models.loading import load_policy, quiet_transformers
    from vlagent.worlds import make_world

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--config", required=True, help="the run's config.yaml (world robot)")
    p.add_argument("--model", required=True, help="checkpoint folder")
    p.add_argument("--episodes", type=int, default=100, help="held-out test tasks")
    p.add_argument("--out", default=None, help="JSON file (default: print only)")
    p.add_argument("overrides", nargs="*", help="key=value config overrides")
    args = p.parse_args(argv)
    quiet_transformers()
    cfg = load_config(args.config, args.overrides)
    policy = load_policy(args.model)
    world = make_world(cfg, policy)
    try:
        result = action_error(world, policy, args.episodes, cfg.eval.max_new_tokens)
    finally:
        world.close()
    words = sys.argv[1:] if argv is None else argv
    result.update(
        model=args.model,
        config=args.config,
        command=" ".join(["python -m vlagent.eval.action_error", *words]),
    )
    if args.out:
        atomic_write_json(args.out, result)
    sys.stdout.write(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
