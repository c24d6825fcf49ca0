"""Resume after SIGKILL mid-run reproduces the uninterrupted run: GRPO (full model, LoRA, the
phone world), SFT (the grounding world) and the multi-turn zoom agent recipe (``zoom_grpo``).

Each test runs the real CLI three times in subprocesses: straight through; killed with SIGKILL
right after step 3 is logged (checkpoints every 2 steps, so step 3 is lost and its metrics line
is an orphan); resumed in the killed run's folder. The resumed run must log the same metrics
and export the same weights as the uninterrupted one.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from vlagent.train.outputs import read_metrics

ARGS = [
    "grpo.steps=5",
    "run.checkpoint_every=2",
    "grpo.prompts_per_step=2",
    "grpo.group_size=4",
    "grpo.max_new_tokens=20",
    "grpo.max_seconds=0",
    "eval.every=0",
    "eval.monitor_screens=0",
    "run.progress=false",
    "run.samples_every=0",
    "run.threads=1",
]
# Runs the real CLI, but SIGKILLs its own process right after step 3 is logged: no cleanup,
# no final checkpoint, files exactly as a crash leaves them.
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from vlagent.train import outputs
    real = outputs.MetricsLogger.log
    def log(self, step, scalars):
        real(self, step, scalars)
        if step == 3:
            os.kill(os.getpid(), signal.SIGKILL)
    outputs.MetricsLogger.log = log
    from vlagent.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)
TOLERANCE = 1e-5  # metrics of the resumed run may differ from the uninterrupted one by at most this
WEIGHT_TOLERANCE = 1e-6  # likewise for every exported weight


def _cli(args: list[str], kill: bool = False) -> subprocess.CompletedProcess[str]:
    code = (
        KILLER if kill else "import sys; from vlagent.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600
    )


def _result(proc: subprocess.CompletedProcess[str]) -> dict:
    """The run's result (``vlagent train`` prints it as the last JSON object on stdout)."""
    return json.loads(proc.stdout[proc.stdout.rindex("{\n") :])


def _kill_and_resume(tmp_path: Path, common: list[str]) -> tuple[list, list, dict, dict]:
    """Run straight, run killed after step 3, resume; return both runs' metrics and results."""
    straight = _cli([*common, f"run.out_dir={tmp_path / 'straight'}"])
    assert straight.returncode == 0, straight.stderr[-2000:]

    out = tmp_path / "crashed"
    killed = _cli([*common, f"run.out_dir={out}"], kill=True)
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [1, 2, 3]
    assert not (out / "final").exists()
    resumed = _cli([*common, f"run.out_dir={out}"])
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "resumed" in resumed.stderr and "step 2" in resumed.stderr, resumed.stderr[-2000:]

    a = read_metrics(tmp_path / "straight" / "metrics.jsonl")
    b = read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in b] == [1, 2, 3, 4, 5]  # step 3's orphan line was dropped on resume
    return a, b, _result(straight), _result(resumed)


def _same_metrics(a: list, b: list, keys: tuple[str, ...]) -> None:
    for ra, rb in zip(a, b, strict=True):
        for key in keys:
            if key in ra or key in rb:
                assert ra[key] == pytest.approx(rb[key], abs=TOLERANCE), (ra["step"], key)


def _same_weights(a: str, b: str, start: str, min_moved: float = 0.5) -> None:
    """The two exported models hold equal weights, and training moved more than ``min_moved``
    of the tensors away from ``start`` (else the comparison says nothing)."""
    wa = load_file(str(Path(a) / "model.safetensors"))
    wb = load_file(str(Path(b) / "model.safetensors"))
    w0 = load_file(str(Path(start) / "model.safetensors"))
    assert wa.keys() == wb.keys()
    for k in wa:
        assert torch.allclose(wa[k], wb[k], atol=WEIGHT_TOLERANCE, rtol=0), k
    moved = [k for k in wa if k in w0 and not torch.equal(wa[k], w0[k])]
    assert len(moved) > min_moved * len(wa), f"{len(moved)} of {len(wa)} tensors moved: vacuous"


EXTRA = {
    "full": [],
    "lora": ["model.lora.enabled=true", "model.lora.r=4", "grpo.lr=1e-2"],
    # multi-step phone episodes; GiGPO step credit makes the updates non-zero from this start
    "apps": ["world=apps", "grpo.gigpo_weight=0.5", "grpo.lr=1e-3"],
}


@pytest.mark.parametrize("variant", list(EXTRA))
def test_sigkill_then_resume_matches_uninterrupted(tmp_path, sft_dir, variant):
    extra = EXTRA[variant]
    common = ["train", f"model.path={sft_dir}", "model.build_tiny=false", *ARGS, *extra]
    a, b, ra, rb = _kill_and_resume(tmp_path, common)
    assert any(r.get("grad_norm", 0.0) > 0 for r in a), "no update moved the policy: vacuous"
    _same_metrics(a, b, ("loss", "reward/mean", "grad_norm", "entropy"))
    assert ra["steps"] == rb["steps"] == 5
    # a LoRA export is merged: only the adapted projections move
    _same_weights(ra["final_dir"], rb["final_dir"], sft_dir, 0.1 if variant == "lora" else 0.5)


SFT_ARGS = [
    "recipe=sft",
    "sft.steps=5",
    "sft.batch_size=4",
    "sft.num_demos=8",  # a fixed demo set, played again after the resume
    "sft.lr=1e-3",
    "run.checkpoint_every=2",
    "eval.every=2",  # monitoring at steps 2 and 4: best_val continues across the resume
    "eval.monitor_screens=4",
    "eval.rollout_pictures=0",
    "run.progress=false",
    "run.samples_every=0",
    "run.threads=1",
]


def test_sft_sigkill_then_resume_matches_uninterrupted(tmp_path, tiny_dir):
    """SFT in the grounding world: same losses, gradient norms, token counts, monitor
    results, best validation accuracy and exported weights as the uninterrupted run."""
    common = ["train", f"model.path={tiny_dir}", "model.build_tiny=false", *SFT_ARGS]
    a, b, ra, rb = _kill_and_resume(tmp_path, common)
    assert all(r["phase"] == "sft" for r in a + b)
    assert all(r["grad_norm"] > 0 for r in a)
    assert [r["step"] for r in b if "val/success_rate" in r] == [2, 4]
    _same_metrics(a, b, ("loss", "grad_norm", "tokens", "val/success_rate", "val/mean_reward"))
    assert ra["steps"] == rb["steps"] == 5 and ra["stop_reason"] == rb["stop_reason"] == "steps"
    assert ra["best_val_accuracy"] == rb["best_val_accuracy"]
    _same_weights(ra["final_dir"], rb["final_dir"], tiny_dir)


ZOOM_TASK = ["task.level=basic", "task.pixel_budget=16384"]  # small screens: seconds, not minutes
ZOOM_ARGS = [
    "--config",
    "zoom_grpo",  # the multi-turn agent recipe: zoom_in tool, up to 3 turns, 3 images
    *ARGS,
    *ZOOM_TASK,
    "grpo.max_new_tokens=48",
    "grpo.temperature=0.5",
    "loop.over_limit=penalize",  # over-limit episodes score -penalty: rewards vary in groups
    # each failed tool call costs 0.1: about half the turns are malformed calls, so rewards
    # vary within groups on most steps (not only when an answer happens to hit)
    "tools.reward.invalid_call=0.1",
]


@pytest.fixture(scope="module")
def zoom_sft_dir(tmp_path_factory, sft_dir):
    """A short zoom SFT (30 steps of zoom-then-answer traces) from the grounding SFT model:
    its episodes call the tool and answer, so the agent recipe's updates are not zero."""
    from vlagent.config import load_config
    from vlagent.train.sft import run_sft

    out = tmp_path_factory.mktemp("zoom_sft")
    cfg = load_config(
        "zoom_sft",
        [
            f"model.path={sft_dir}",
            "model.build_tiny=false",
            f"run.out_dir={out}",
            *ZOOM_TASK,
            "sft.steps=30",
            "sft.batch_size=8",
            "sft.max_seconds=0",
            "eval.every=0",
            "eval.monitor_screens=0",
            "run.progress=false",
            "run.samples_every=0",
            "run.checkpoint_every=0",
            "run.threads=1",
        ],
    )
    return run_sft(cfg).final_dir


def test_zoom_agent_sigkill_then_resume_matches_uninterrupted(tmp_path, zoom_sft_dir):
    """The zoom-world GRPO recipe (multi-turn episodes with the zoom tool): same rewards,
    losses, gradient norms, entropies, turns, tool calls and exported weights."""
    common = ["train", *ZOOM_ARGS, f"model.path={zoom_sft_dir}", "model.build_tiny=false"]
    a, b, ra, rb = _kill_and_resume(tmp_path, common)
    assert max(r["turns"] for r in a) > 1.5 and max(r["tool_calls"] for r in a) > 0, a
    assert sum(r.get("grad_norm", 0.0) > 0 for r in a[2:]) >= 1, "no update after the resume"
    _same_metrics(
        a, b, ("loss", "reward/mean", "grad_norm", "entropy", "tool_calls", "turns", "masked_frac")
    )
    assert ra["steps"] == rb["steps"] == 5
    _same_weights(ra["final_dir"], rb["final_dir"], zoom_sft_dir)
