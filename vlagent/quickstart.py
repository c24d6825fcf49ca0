"""The main job: a tiny VLM learns to click on synthetic screens, SFT then GRPO, on CPU.

Pipeline (one seed; ``--seeds`` repeats it and aggregates):
    1. build a tiny random Qwen-VL offline (or start from a trained checkpoint: ``--init``);
       evaluate it (held-out test screens) with baselines
    2. SFT on a small fixed set of demonstrations until validation accuracy plateaus
    3. GRPO from the SFT checkpoint on fresh screens scored only by the reward
    4. continued SFT from the same checkpoint on the same demos, as many updates as GRPO made
       with as many sequences per update (``control_sft_config``); or, with
       ``--control same_seconds``, for as many training seconds as GRPO took
    5. evaluate every stage on the same held-out screens; print the table, save a plot,
       annotated samples and ``summary.json``

The point of the comparison: demonstrations are few, the verifier is free. SFT memorizes the
demos and stalls; GRPO keeps improving on screens nobody labelled.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from pathlib import Path
from typing import Any

import psutil

from vlagent.config import GRPOConfig, ModelConfig, SFTConfig, TaskConfig, TrainConfig
from vlagent.errors import ConfigError
from vlagent.eval.evaluate import evaluate as evaluate_world
from vlagent.io import atomic_write_json, atomic_write_text
from vlagent.models.loading import load_policy, quiet_transformers
from vlagent.train.common import ensure_model, setup_threads
from vlagent.train.grpo import GRPOResult, run_grpo
from vlagent.train.sft import SFTResult, run_sft
from vlagent.viz import plot_accuracy
from vlagent.worlds import make_world

log = logging.getLogger(__name__)
STAGES = ("before", "sft", "grpo", "sft_continued")


def _phase_cfg(
    cfg: TrainConfig, root: Path, name: str, model_path: str, **sections: Any
) -> TrainConfig:
    run = dataclasses.replace(cfg.run, out_dir=str(root / name))
    model = dataclasses.replace(cfg.model, path=model_path)
    return dataclasses.replace(cfg, model=model, run=run, **sections)


class _PeakRSS:
    """Peak resident memory of this process in MB, sampled at each ``poll``."""

    def __init__(self) -> None:
        self.proc = psutil.Process()
        self.peak = 0.0

    def poll(self) -> float:
        self.peak = max(self.peak, self.proc.memory_info().rss / 2**20)
        try:
            import resource

            self.peak = max(self.peak, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
        except ImportError:  # not on every OS
            pass
        return self.peak


CONTROLS = ("same_updates_and_sequences", "same_seconds")
"""How the continued-SFT control is matched to GRPO (``vlagent quickstart --control``)."""
SAME_SECONDS_MAX_STEPS = 1_000_000
"""Step cap of a ``same_seconds`` control: never reached, the time budget stops it first."""


def control_sft_config(
    sft: SFTConfig,
    grpo: GRPOConfig,
    control: str = "same_updates_and_sequences",
    grpo_seconds: float = 0.0,
) -> SFTConfig:
    """The continued-SFT control, matched to GRPO.

    ``same_updates_and_sequences`` (the default): as many optimizer updates as GRPO
    (``grpo.steps``) and as many sequences per update (``prompts_per_step × group_size``), so
    both arms see equally many training sequences. No time cap: the budget is steps, so the
    control does not depend on machine load.

    ``same_seconds``: SFT's own batch size for ``grpo_seconds`` of training (GRPO's
    ``train_seconds``): what a user with a wall-clock budget would compare. Depends on machine
    load, so both arms must run on an equally busy machine.

    Neither stops early on validation accuracy.
    """
    if control == "same_updates_and_sequences":
        return dataclasses.replace(
            sft,
            steps=grpo.steps,
            batch_size=grpo.prompts_per_step * grpo.group_size,
            max_seconds=0,
            stop_accuracy=0.0,
            plateau_patience=0,
        )
    if control != "same_seconds":
        raise ConfigError(f"control {control!r}: one of {', '.join(CONTROLS)}")
    if grpo_seconds <= 0:
        raise ConfigError(
            f"same_seconds control needs GRPO's training seconds > 0, got {grpo_seconds}"
        )
    return dataclasses.replace(
        sft,
        steps=SAME_SECONDS_MAX_STEPS,
        max_seconds=grpo_seconds,
        stop_accuracy=0.0,
        plateau_patience=0,
    )


def control_task(task: TaskConfig, sft: SFTConfig, sft_steps: int, control: str) -> TaskConfig:
    """The control's task: with fresh labels (``sft.num_demos == 0``) and ``same_seconds``, its
    training screens start after the ``sft_steps × sft.batch_size`` the SFT stage read, so the
    control learns from screens it has not seen. Otherwise unchanged: a fixed demo set is the
    point of the comparison, and the steps-matched control keeps its recorded screens."""
    if control == "same_seconds" and sft.num_demos == 0:
        shift = sft_steps * sft.batch_size
        return dataclasses.replace(task, train_seed_offset=task.train_seed_offset + shift)
    return task


def control_phase_cfg(
    cfg: TrainConfig, root: Path, sft: SFTResult, grpo: GRPOResult, control: str
) -> TrainConfig:
    """The control stage's config: SFT from the SFT stage's checkpoint into ``root/sft_continued``,
    matched to the GRPO stage that ran (``control_sft_config``, ``control_task``)."""
    return _phase_cfg(
        cfg,
        root,
        "sft_continued",
        sft.final_dir,
        recipe="sft",
        sft=control_sft_config(cfg.sft, cfg.grpo, control, grpo.train_seconds),
        task=control_task(cfg.task, cfg.sft, sft.steps, control),
    )


def start_model_config(cfg: TrainConfig, root: Path) -> ModelConfig:
    """Where the story starts.

    ``model.build_tiny=true`` (the default): a fresh tiny model built under ``root/model`` with
    ``model.tiny_seed = run.seed``. ``model.build_tiny=false``: the trained checkpoint at
    ``model.path`` (``vlagent quickstart --init PATH``), e.g. the previous rung of a level
    curriculum, so the SFT-vs-GRPO comparison runs on a level a fresh model cannot start on.
    """
    if cfg.model.build_tiny:
        return dataclasses.replace(cfg.model, path=str(root / "model"), tiny_seed=cfg.run.seed)
    if not (Path(cfg.model.path).expanduser() / "config.json").is_file():
        raise ConfigError(
            f"model.path={cfg.model.path!r} has no config.json: with model.build_tiny=false "
            "(quickstart --init) the story starts from that trained checkpoint"
        )
    return cfg.model


SEED_STRIDE = 100_000
"""Task ids one seed moves its demo (and, from a shared checkpoint, training) screens by: more
than a run draws (1,500 SFT steps × 16 = 24,000), far less than ``world_config.SEED_GAP``."""


def seeded_task(cfg: TrainConfig) -> TaskConfig:
    """The task of seed ``run.seed``: its own demonstrations always; its own training screens
    (fresh-label SFT and GRPO) when the story starts from a trained checkpoint.

    With a fresh tiny model, ``model.tiny_seed`` already makes seeds differ, and the training
    screens stay those of the recorded quickstart seeds. From a shared checkpoint
    (``--init``), fresh-label SFT is otherwise deterministic: every seed would train the same
    model on the same screens. Seed 0 is unchanged either way.
    """
    t, shift = cfg.task, cfg.run.seed * SEED_STRIDE
    train = t.train_seed_offset + (0 if cfg.model.build_tiny else shift)
    return dataclasses.replace(
        t, demo_seed_offset=t.demo_seed_offset + shift, train_seed_offset=train
    )


def run_quickstart(cfg: TrainConfig, control: str = "same_updates_and_sequences") -> dict[str, Any]:
    """Run the pipeline for ``cfg.run.seed`` into ``cfg.run.out_dir``; returns the summary.

    ``control``: how the continued-SFT control is matched to GRPO (``CONTROLS``).
    """
    if control not in CONTROLS:
        raise ConfigError(f"control {control!r}: one of {', '.join(CONTROLS)}")
    quiet_transformers()
    setup_threads(cfg.run.threads)
    t_start = time.time()
    rss = _PeakRSS()
    root = Path(cfg.run.out_dir)
    root.mkdir(parents=True, exist_ok=True)
    seed = cfg.run.seed
    cfg = dataclasses.replace(cfg, model=start_model_config(cfg, root), task=seeded_task(cfg))
    base_model = ensure_model(cfg.model)
    e = cfg.eval

    def evaluate(path: str, stage: str) -> dict[str, Any]:
        policy = load_policy(
            path,
            dtype=cfg.model.dtype,  # type: ignore[arg-type]
            device=cfg.model.device,
            fuse_patch_embed=cfg.model.fuse_patch_embed,
        )
        world = make_world(cfg, policy)
        report = evaluate_world(
            world,
            policy,
            "test",
            e.num_screens,
            batch_size=e.batch_size,
            max_new_tokens=e.max_new_tokens,
        )
        world.save_pictures(report.trajectories[:8], root / "samples", stage)
        rss.poll()
        log.info("%s: held-out accuracy %.3f (n=%d)", stage, report.accuracy, report.n)
        out = report.summary()
        if stage == "before":
            out["baselines"] = world.baselines(world.task_ids("test", 0, e.num_screens))
        world.close()
        return out

    results: dict[str, dict[str, Any]] = {"before": evaluate(base_model, "before")}
    base = results["before"].pop("baselines")

    sft = run_sft(_phase_cfg(cfg, root, "sft", base_model, recipe="sft"))
    rss.poll()
    results["sft"] = evaluate(sft.final_dir, "sft")

    grpo = run_grpo(_phase_cfg(cfg, root, "grpo", sft.final_dir, recipe="grpo"))
    rss.poll()
    results["grpo"] = evaluate(grpo.final_dir, "grpo")

    cont = run_sft(control_phase_cfg(cfg, root, sft, grpo, control))
    rss.poll()
    results["sft_continued"] = evaluate(cont.final_dir, "sft_continued")

    summary = {
        "seed": seed,
        "accuracy": {k: results[k]["accuracy"] for k in STAGES},
        "accuracy_ci95": {
            k: [results[k]["success_ci_low"], results[k]["success_ci_high"]] for k in STAGES
        },
        "format_rate": {k: results[k]["format_rate"] for k in STAGES},
        "baselines": base,
        "eval_screens": e.num_screens,
        "sft": {
            "steps": sft.steps,
            "train_seconds": sft.train_seconds,
            "stop_reason": sft.stop_reason,
            "num_demos": cfg.sft.num_demos,
        },
        "grpo": {"steps": grpo.steps, "train_seconds": grpo.train_seconds},
        "sft_continued": {"steps": cont.steps, "train_seconds": cont.train_seconds},
        "control": control,
        "seconds": time.time() - t_start,
        "peak_rss_mb": rss.poll(),
    }
    atomic_write_json(root / "summary.json", summary)
    labels = {
        "before": "before",
        "sft": f"SFT ({cfg.sft.num_demos} demos)",
        "grpo": "+ GRPO",
        "sft_continued": "+ more SFT" + (" (same seconds)" if control == "same_seconds" else ""),
    }
    plot_accuracy(
        {labels[k]: summary["accuracy"][k] for k in STAGES},
        base,
        root / "accuracy.png",
        f"held-out click accuracy, {e.num_screens} unseen screens (seed {seed})",
    )
    atomic_write_text(root / "results.md", format_table([summary]))
    return summary


def best_element_baseline(baselines: dict[str, float]) -> str:
    """``"41.3 (random_element)"``: the best instruction-blind element baseline
    (``gui.grounding.baselines``) in %, or ``"-"`` when the screens list no elements."""
    from gui.grounding.baselines import NAMES

    have = {k: baselines[k] for k in NAMES if k in baselines}
    if not have:
        return "-"
    name = max(have, key=lambda k: have[k])
    return f"{100 * have[name]:.1f} ({name})"


def _control_mark(summary: dict[str, Any]) -> str:
    """`` (same seconds)`` beside a control matched on time; nothing for the default."""
    return " (same seconds)" if summary.get("control") == "same_seconds" else ""


def format_table(summaries: list[dict[str, Any]]) -> str:
    """Markdown table of accuracy per stage for one or more seeds (plus mean when several)."""
    head = "| seed | before | SFT | SFT + GRPO | SFT + more SFT | GRPO gain | random click | centre click | best element baseline | seconds | peak RSS MB |\n"
    head += "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    rows = []
    for s in summaries:
        a = s["accuracy"]
        rows.append(
            f"| {s['seed']} | {100 * a['before']:.1f} | {100 * a['sft']:.1f} | {100 * a['grpo']:.1f} | "
            f"{100 * a['sft_continued']:.1f}{_control_mark(s)} | {100 * (a['grpo'] - a['sft']):+.1f} | "
            f"{100 * s['baselines']['random_click']:.1f} | {100 * s['baselines']['center_click']:.1f} | "
            f"{best_element_baseline(s['baselines'])} | {s['seconds']:.0f} | {s['peak_rss_mb']:.0f} |"
        )
    if len(summaries) > 1:

        def mean(stage: str) -> float:
            return 100 * sum(s["accuracy"][stage] for s in summaries) / len(summaries)

        gain = mean("grpo") - mean("sft")
        rows.append(
            f"| mean | {mean('before'):.1f} | {mean('sft'):.1f} | {mean('grpo'):.1f} | {mean('sft_continued'):.1f} | "
            f"{gain:+.1f} | | | | | |"
        )
    return head + "\n".join(rows) + "\n"


def run_seeds(
    cfg: TrainConfig, seeds: list[int], control: str = "same_updates_and_sequences"
) -> list[dict[str, Any]]:
    """Run the pipeline once per seed into ``<out_dir>/seed_<s>`` and write a combined table."""
    root = Path(cfg.run.out_dir)
    out = []
    for s in seeds:
        run = dataclasses.replace(cfg.run, seed=s, out_dir=str(root / f"seed_{s}"))
        out.append(run_quickstart(dataclasses.replace(cfg, run=run), control))
    atomic_write_text(root / "results.md", format_table(out))
    atomic_write_json(root / "summaries.json", out)
    return out


def print_summary(summaries: list[dict[str, Any]], out_dir: str) -> str:
    text = format_table(summaries)
    text += f"\nRun directory: {out_dir}  (summary.json, accuracy.png, samples/, */metrics.jsonl)\n"
    return text
