"""Experiment: does a zoom tool help a tiny VLM on screens it cannot read at its pixel budget?

Per seed, with the tiny Qwen3-VL (localization init, weights seeded by the seed) on
``hires_tiny_small`` at a 448x256 budget (the glyph textures are unreadable without a zoom):

    zoom     SFT on synthetic zoom traces → multi-turn GRPO with the zoom tool
    notools  SFT on direct answers        → single-turn GRPO (same steps, B, G)

Both arms are the packaged recipes ``zoom_sft`` and ``zoom_grpo`` (world ``zoom``), the
``notools`` arm with ``tools.enabled=false``. Every stage is evaluated greedily on the same
held-out test screens (``vlagent.eval.evaluate``: accuracy in ORIGINAL coordinates, mean tool
calls, where the first zoom went); the zoom arm also gets an oracle-zoom probe (first turn
forced to a trace zoom around the target, then the policy answers), which separates "zooms to
the right cluster" from "picks the right tile after zooming". Baselines: random click, centre
click, and a random tile of the right cluster.

Budgets are step-bound (the time caps are safety caps that a normal run never reaches, and a
stage that stops early is logged and recorded as ``stop_reason``), so numbers do not depend on
machine load. The first held-out episodes of every stage are saved as rollout pictures (each
observation, zoom boxes drawn) under ``<work>/seed_<s>/<arm>_<stage>/samples/heldout_*.png``.

    python -m experiments.zoom_vs_notools --seeds 0,1,2 --out docs/results/zoom_vs_notools.json

Run from the repository root (``experiments`` is not an installed package).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from perception_tools.geometry import box_area, point_in_box
from vlagent.config import TrainConfig, load_config
from vlagent.eval.evaluate import EvalReport, evaluate, report_of
from vlagent.io import atomic_write_json
from vlagent.rollout.runner import EpisodeSpec, run_episodes
from vlagent.rollout.trajectory import Trajectory
from vlagent.worlds.zoom_traces import oracle_zoom_text, trace_config

log = logging.getLogger(__name__)
ARMS = ("zoom", "notools")
KEPT = (  # (name in the JSON, key of EvalReport.summary())
    ("accuracy", "accuracy"),
    ("tool_calls", "tool_calls"),
    ("zoom_rate", "zoom_rate"),
    ("zoom_has_target", "zoom_has_target"),
    ("zoom_on_cluster", "zoom_on_cluster"),
    ("acc_given_target_zoom", "acc_given_target_zoom"),
    ("format_rate", "format_rate"),
    ("over_limit_frac", "over_limit_frac"),
    ("turns", "mean_turns"),
    ("generated_tokens", "generated_tokens"),
    ("reward/mean", "mean_reward"),
)


@dataclasses.dataclass(frozen=True)
class SftStage:
    """One SFT stage: its screen level (None = the task's), steps, and whether it trains direct
    answers shared by both arms (run once per seed, in ``direct_sft_c<i>``) or the arm's own
    format (zoom traces or direct answers, in ``<arm>_sft_c<i>``, the last in ``<arm>_sft``)."""

    level: str | None
    steps: int
    shared: bool = False


def sft_stages(args: argparse.Namespace) -> list[SftStage]:
    """The ``--curriculum`` stages, then the task's own level for ``--sft-steps``.

    ``--curriculum`` items are ``LEVEL:STEPS`` or ``LEVEL:STEPS:shared``; shared stages must
    come first (an arm-specific stage cannot feed a shared one).
    """
    stages: list[SftStage] = []
    for item in filter(None, (x.strip() for x in args.curriculum.split(","))):
        parts = item.split(":")
        ok = len(parts) in (2, 3) and parts[1].isdigit() and int(parts[1]) >= 1
        if not ok or (len(parts) == 3 and parts[2] != "shared"):
            raise ValueError(f"--curriculum: {item!r} is not LEVEL:STEPS or LEVEL:STEPS:shared")
        shared = len(parts) == 3
        if shared and stages and not stages[-1].shared:
            raise ValueError(f"--curriculum: shared stage {item!r} follows an arm's own stage")
        stages.append(SftStage(parts[0], int(parts[1]), shared))
    stages.append(SftStage(None, args.sft_steps))
    return stages


def _sft_dir(root: Path, arm: str, stages: list[SftStage], k: int) -> Path:
    """Run folder of SFT stage ``k`` of ``arm``."""
    if stages[k].shared:
        return root / f"direct_sft_c{k}"
    return root / (f"{arm}_sft" if k == len(stages) - 1 else f"{arm}_sft_c{k}")


def _stage_stop(args: argparse.Namespace) -> list[str]:
    """Overrides that end a curriculum stage once its level's monitor accuracy reaches
    ``--curriculum-stop`` (the stage's steps stay the cap): the tiny model's plateau-then-jump
    comes after a seed-dependent number of steps, so a fixed count hands the next stage anything
    from chance to solved."""
    if not args.curriculum_stop:
        return []
    return [
        f"sft.stop_accuracy={args.curriculum_stop}",
        "eval.every=50",
        "eval.monitor_screens=100",
    ]


def arm_config(
    arm: str, phase: str, seed: int, args: argparse.Namespace, stage: int = -1
) -> TrainConfig:
    """The config of one stage (``phase`` = sft | grpo) of one arm; ``stage`` picks the SFT
    curriculum stage (-1 = the last, on the task's level)."""
    root = Path(args.work) / f"seed_{seed}"
    recipe = "zoom_sft" if phase == "sft" else "zoom_grpo"
    stages = sft_stages(args)
    k = stage % len(stages) if phase == "sft" else len(stages)
    this = stages[k] if phase == "sft" else SftStage(None, args.sft_steps)
    if k == 0:
        model = [
            f"model.path={root / 'tiny-qwen3_vl'}",
            "model.build_tiny=true",
            f"model.tiny_seed={seed}",
        ]
    else:
        model = [
            f"model.path={_sft_dir(root, arm, stages, k - 1) / 'final'}",
            "model.build_tiny=false",
        ]
    grpo_dir = root / f"{arm}_{args.grpo_name}"
    out_dir = _sft_dir(root, arm, stages, k) if phase == "sft" else grpo_dir
    tools = arm == "zoom" and not this.shared
    over = [
        *model,
        f"tools.enabled={'true' if tools else 'false'}",
        f"run.out_dir={out_dir}",
        f"run.seed={seed}",
        f"run.threads={args.threads}",
        "run.progress=false",
        "run.resume=false",
        "eval.every=0",
        "eval.rollout_pictures=0",  # held-out pictures are saved by evaluate_stage
        f"sft.steps={this.steps}",
        f"sft.max_seconds={args.sft_seconds}",
        f"grpo.steps={args.grpo_steps}",
        f"grpo.max_seconds={args.grpo_seconds}",
        *args.set,
        *(args.grpo_set if phase == "grpo" else []),
        *([f"task.level={this.level}"] if this.level else []),
        *(_stage_stop(args) if phase == "sft" and this.level else []),
    ]
    return load_config(recipe, over)


def _keep(report: EvalReport) -> dict[str, float]:
    summary = report.summary()
    return {name: round(float(summary[key]), 4) for name, key in KEPT if key in summary}


class OracleFirstZoom:
    """Demonstrator of the probe: the first turn is a trace's zoom call around the target (no
    miss); every later turn is the policy's own."""

    def __init__(self, world: Any) -> None:
        self.world = world
        self.adapter = world.adapter()
        self.trace = trace_config(world.cfg.tools)

    def text(self, traj: Trajectory, obs: dict[str, Any], info: dict[str, Any]) -> str | None:
        if traj.turns:
            return None
        return oracle_zoom_text(self.adapter, self.world.sample(traj.task_id), self.trace)


def evaluate_stage(
    folder: str, cfg: TrainConfig, keys: list[int], oracle: bool, pictures: int = 0
) -> dict[str, Any]:
    """Held-out numbers of the checkpoint in ``folder`` (and the oracle-zoom probe).

    The first ``pictures`` held-out episodes are saved as rollout PNGs (every observation with
    the zoom boxes drawn) under ``<run dir>/samples/heldout_<k>.png``.
    """
    from vlagent.models.loading import load_policy
    from vlagent.worlds import make_world

    policy = load_policy(folder, dtype=cfg.model.dtype, device=cfg.model.device)  # type: ignore[arg-type]
    world = make_world(cfg, policy)
    e = cfg.eval
    t0 = time.perf_counter()
    report = evaluate(
        world,
        policy,
        "test",
        len(keys),
        batch_size=e.batch_size,
        max_new_tokens=e.max_new_tokens,
        task_ids=keys,
    )
    out: dict[str, Any] = {"free": _keep(report)}
    if pictures:
        world.save_pictures(
            report.trajectories[:pictures], Path(folder).parent / "samples", "heldout"
        )
    if oracle and cfg.tools.enabled:
        trajs = run_episodes(
            policy,
            world.adapter(),
            lambda: world.make_env("test"),
            [EpisodeSpec(k) for k in keys],
            world.limits(e.max_new_tokens),
            greedy=True,
            demonstrator=OracleFirstZoom(world),
            chunk_size=e.batch_size,
        )
        out["oracle_zoom"] = _keep(report_of(world, trajs))
    out["eval_seconds"] = round(time.perf_counter() - t0, 1)
    world.close()
    return out


def baselines(world: Any, keys: list[int]) -> dict[str, float]:
    """Random click, centre click, a random tile of the target's colour cluster, and (on panel
    levels) a uniform click inside the panel around the target."""
    rng = np.random.default_rng(0)
    rand = centre = cluster = 0.0
    in_panel: list[float] = []
    for k in keys:
        s = world.sample(k)
        panel = s.meta.get("panel_box_norm")
        if panel is not None:  # a uniform click in the panel (expected value)
            in_panel.append(box_area(s.target_box_norm) / box_area(panel))
        box = tuple(s.target_box_norm)
        rand += point_in_box(tuple(rng.random(2)), box)
        centre += point_in_box((0.5, 0.5), box)
        target = [e for e in s.elements if tuple(e.box_norm) == box]
        same = [e for e in s.elements if target and e.colour == target[0].colour]
        cluster += 1.0 / max(1, len(same))
    n = len(keys)
    out = {
        "random_click": rand / n,
        "centre_click": centre / n,
        "right_cluster_random_tile": cluster / n,
    }
    if len(in_panel) == n:
        out["random_point_in_panel"] = float(np.mean(in_panel))
    return out


def _run_row(result: Any, steps: int) -> dict[str, Any]:
    """Steps, seconds and stop reason of a training stage; warns when a time cap cut it short
    (the budgets are step-bound: a cap that triggers makes results depend on machine load)."""
    if result.steps != steps:
        log.warning("stage stopped after %d/%d steps (%s)", result.steps, steps, result.stop_reason)
    return {
        "steps": result.steps,
        "seconds": round(result.train_seconds, 1),
        "stop_reason": result.stop_reason,
    }


def run_seed(seed: int, args: argparse.Namespace, keys: list[int]) -> dict[str, Any]:
    """Both arms of one seed: SFT, GRPO, and held-out evaluation after each."""
    from vlagent.train.grpo import run_grpo
    from vlagent.train.sft import run_sft

    out: dict[str, Any] = {}
    stages = sft_stages(args)
    for arm in args.arms.split(","):
        res: dict[str, Any] = {}
        for stage in range(len(stages)):
            cfg = arm_config(arm, "sft", seed, args, stage)
            final = Path(cfg.run.out_dir) / "final"
            if (args.reuse_sft or stages[stage].shared) and final.is_dir():
                log.info("seed %d %s: reusing %s", seed, arm, final)
                res.setdefault("sft_runs", []).append(
                    {"level": cfg.task.level, "steps": cfg.sft.steps, "reused": str(final)}
                )
                continue
            sft = run_sft(cfg)
            res.setdefault("sft_runs", []).append(
                {"level": cfg.task.level, **_run_row(sft, cfg.sft.steps)}
            )
        res["sft_run"] = res["sft_runs"][-1]
        res["sft"] = evaluate_stage(str(final), cfg, keys, oracle=True, pictures=args.pictures)
        log.info("seed %d %s sft: %s", seed, arm, res["sft"])
        cfg = arm_config(arm, "grpo", seed, args)
        grpo_final = Path(cfg.run.out_dir) / "final"
        if args.reuse_grpo and grpo_final.is_dir():
            log.info("seed %d %s: reusing %s", seed, arm, grpo_final)
            res["grpo_run"] = {"steps": cfg.grpo.steps, "reused": str(grpo_final)}
            final_dir = str(grpo_final)
        else:
            grpo = run_grpo(cfg)
            res["grpo_run"] = _run_row(grpo, args.grpo_steps)
            final_dir = grpo.final_dir
        res["grpo"] = evaluate_stage(final_dir, cfg, keys, oracle=True, pictures=args.pictures)
        log.info("seed %d %s grpo: %s", seed, arm, res["grpo"])
        out[arm] = res
    return out


def aggregate(per_seed: dict[str, Any]) -> dict[str, Any]:
    """Mean and values over seeds of every ``<arm>/<stage>/<probe>/<metric>``."""
    flat: dict[str, list[float]] = {}
    for res in per_seed.values():
        for arm, stages in res.items():
            for stage in ("sft", "grpo"):
                for probe, metrics in stages[stage].items():
                    if isinstance(metrics, dict):
                        for k, v in metrics.items():
                            flat.setdefault(f"{arm}/{stage}/{probe}/{k}", []).append(v)
    return {k: {"mean": round(float(np.mean(v)), 4), "values": v} for k, v in flat.items()}


def _acc_ci(acc: float, n: int) -> str:
    """``acc`` in % with its 95 % Wilson interval over ``n`` screens."""
    from vlagent.eval.stats import wilson_interval

    lo, hi = wilson_interval(round(acc * n), n)
    return f"{100 * acc:.1f} [{100 * lo:.1f}, {100 * hi:.1f}]"


def table(paths: list[str]) -> str:
    """Markdown tables from the JSON files this driver wrote: held-out accuracy with 95 %
    Wilson intervals per seed, arm and stage, then the zoom arm's probes. The arms of one seed
    may come from different files (``--arms``); they must share the held-out screen count.

    Raises:
        ValueError: one seed's arm appears in two files, or its files differ in screen count.
    """
    import json

    merged: dict[int, tuple[int, dict[str, Any]]] = {}
    for path in paths:
        run = json.loads(Path(path).read_text())
        n = run["setup"]["held_out_screens"]
        for seed, res in run["seeds"].items():
            m, arms = merged.setdefault(int(seed), (n, {}))
            if m != n or set(arms) & set(res):
                raise ValueError(
                    f"--table: seed {seed} of {path} repeats an arm ({sorted(set(arms) & set(res))}) "
                    f"or differs in held-out screens ({n} vs {m})"
                )
            arms.update(res)
    rows = [(seed, n, res) for seed, (n, res) in sorted(merged.items())]
    out = "| seed | zoom: SFT | zoom: SFT + GRPO | no tools: SFT | no tools: SFT + GRPO |"
    out += " GRPO: zoom − no tools |\n|---:|---|---|---|---|---:|\n"
    for seed, n, res in rows:
        acc = {
            (arm, st): res[arm][st]["free"]["accuracy"]
            for arm in ARMS
            for st in ("sft", "grpo")
            if arm in res
        }
        cells = [
            _acc_ci(acc[(arm, st)], n) if (arm, st) in acc else "-"
            for arm in ARMS
            for st in ("sft", "grpo")
        ]
        gap = (
            f"{100 * (acc[('zoom', 'grpo')] - acc[('notools', 'grpo')]):+.1f}"
            if ("zoom", "grpo") in acc and ("notools", "grpo") in acc
            else "-"
        )
        out += f"| {seed} | " + " | ".join(cells) + f" | {gap} |\n"
    out += "\n| seed | stage | zoom calls | first zoom holds the target | accuracy given it |"
    out += " oracle-zoom accuracy | malformed / over-limit |\n|---:|---|---:|---:|---:|---:|---:|\n"
    for seed, _, res in rows:
        for st in ("sft", "grpo"):
            if "zoom" not in res:
                continue
            f, o = res["zoom"][st]["free"], res["zoom"][st].get("oracle_zoom", {})
            out += (
                f"| {seed} | {st} | {f['tool_calls']:.2f} | {100 * f['zoom_has_target']:.1f} | "
                f"{100 * f.get('acc_given_target_zoom', 0.0):.1f} | "
                f"{100 * o.get('accuracy', float('nan')):.1f} | "
                f"{100 * (1 - f['format_rate']):.1f} / {100 * f['over_limit_frac']:.1f} |\n"
            )
    return out


def _test_keys(
    cfg: TrainConfig, n: int, first: TrainConfig
) -> tuple[list[int], dict[str, float], list[int]]:
    """The held-out test screens (their task ids), the baselines on them and the screen size.

    The world needs a policy's processor and family: the first seed's initial tiny model is
    built here (the SFT stage then finds it and starts from it).
    """
    from vlagent.models.loading import load_policy
    from vlagent.train.common import ensure_model
    from vlagent.worlds import make_world

    m = first.model
    policy = load_policy(ensure_model(m), dtype=m.dtype, device=m.device)  # type: ignore[arg-type]
    world = make_world(cfg, policy)
    keys = world.task_ids("test", 0, n)
    size = list(world.sample(keys[0]).image.shape[1::-1])
    base = baselines(world, keys)
    world.close()
    return keys, base, size


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0", help="comma-separated seeds, e.g. 0,1,2")
    ap.add_argument("--out", default="docs/results/zoom_vs_notools.json", help="JSON to write")
    ap.add_argument("--work", default="runs/zoom_vs_notools", help="folder for the runs")
    ap.add_argument(
        "--arms", default=",".join(ARMS), help="comma-separated arms to run (zoom, notools)"
    )
    ap.add_argument("--sft-steps", type=int, default=200, help="SFT steps per arm")
    ap.add_argument(
        "--sft-seconds", type=float, default=7200, help="SFT safety time cap per arm (step-bound)"
    )
    ap.add_argument(
        "--curriculum",
        default="",
        help="SFT stages before the task's level, LEVEL:STEPS[:shared] (shared = direct "
        "answers, one run for both arms), e.g. hires_dot_big:1200:shared,panel_zoomed:1200:shared",
    )
    ap.add_argument(
        "--curriculum-stop",
        type=float,
        default=0.0,
        help="end a curriculum stage once its monitor accuracy reaches this (0 = run its steps)",
    )
    ap.add_argument(
        "--reuse-sft",
        action="store_true",
        help="skip an SFT stage whose final checkpoint exists (GRPO-only ablations)",
    )
    ap.add_argument("--grpo-steps", type=int, default=30, help="GRPO steps per arm")
    ap.add_argument(
        "--grpo-seconds", type=float, default=7200, help="GRPO safety time cap per arm (step-bound)"
    )
    ap.add_argument("--pictures", type=int, default=4, help="held-out rollout PNGs per stage")
    ap.add_argument("--eval-screens", type=int, default=200, help="held-out test screens")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    ap.add_argument("--set", nargs="*", default=[], help="extra dotted overrides for all stages")
    ap.add_argument("--grpo-set", nargs="*", default=[], help="extra overrides for GRPO only")
    ap.add_argument(
        "--reuse-grpo",
        action="store_true",
        help="evaluate an existing <arm>_<grpo-name>/final instead of training it again",
    )
    ap.add_argument(
        "--grpo-name",
        default="grpo",
        help="GRPO run folder <arm>_<name> (a GRPO-only ablation with --reuse-sft keeps the main run)",
    )
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--table"]:
        sys.stdout.write(table(argv[1:]))
        return {}
    args = ap.parse_args(argv)
    command = shlex.join(["python", "-m", "experiments.zoom_vs_notools", *argv])
    started = time.perf_counter()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    import torch

    from vlagent.models.loading import quiet_transformers

    quiet_transformers()
    torch.set_num_threads(args.threads)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    unknown = sorted(set(args.arms.split(",")) - set(ARMS))
    if unknown:
        ap.error(f"--arms: unknown {unknown}; known: {', '.join(ARMS)}")
    cfg = arm_config("zoom", "sft", seeds[0], args)
    keys, base, screen_px = _test_keys(
        cfg, args.eval_screens, arm_config("zoom", "sft", seeds[0], args, 0)
    )
    result: dict[str, Any] = {
        "command": command,
        "setup": {
            "level": cfg.task.level,
            "screen_px": screen_px,
            "pixel_budget": cfg.task.pixel_budget,
            "model": "tiny qwen3_vl (localization init), CPU",
            "held_out_screens": len(keys),
            "sft_steps": args.sft_steps,
            "curriculum": args.curriculum,
            "curriculum_stop": args.curriculum_stop,
            "grpo_steps": args.grpo_steps,
            "grpo_batch": f"{cfg.grpo.prompts_per_step} screens x {cfg.grpo.group_size}",
            "sft_batch": cfg.sft.batch_size,
            "loop": {
                "max_turns": cfg.loop.max_turns,
                "max_images": cfg.loop.max_images,
                "max_turn_tokens": cfg.grpo.max_new_tokens,
                "max_episode_tokens": cfg.loop.max_episode_tokens,
                "over_limit": cfg.loop.over_limit,
            },
            "threads": args.threads,
            "overrides": args.set,
            "grpo_overrides": args.grpo_set,
        },
        "baselines": base,
        "seeds": {},
    }
    result["seed_seconds"] = {}
    for seed in seeds:
        t0 = time.perf_counter()
        result["seeds"][str(seed)] = run_seed(seed, args, keys)
        result["seed_seconds"][str(seed)] = round(time.perf_counter() - t0, 1)
        result["wall_seconds"] = round(time.perf_counter() - started, 1)
        result["summary"] = aggregate(result["seeds"])
        atomic_write_json(args.out, result)  # after every seed
    return result


if __name__ == "__main__":
    main()
