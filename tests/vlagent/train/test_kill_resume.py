"""Resume after SIGKILL mid-run reproduces the uninterrupted run (GRPO, LoRA, the phone world)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from vlagent.train.outputs import read_metrics

ARGS = [
    "grpo.steps=5",
    "run.checkpoint_every=2",
    "grpo.prompts_per_step=2",
    "grpo.group_size=4",
    "grpo.max_new_tokens=20",
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


def _cli(args, kill=False):
    code = (
        KILLER if kill else "import sys; from vlagent.cli import main; sys.exit(main(sys.argv[1:]))"
    )
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=600
    )


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
    straight = _cli([*common, f"run.out_dir={tmp_path / 'straight'}"])
    assert straight.returncode == 0, straight.stderr[-2000:]

    out = tmp_path / "crashed"
    killed = _cli([*common, f"run.out_dir={out}"], kill=True)
    assert killed.returncode == -9, killed.stderr[-2000:]
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [1, 2, 3]
    resumed = _cli([*common, f"run.out_dir={out}"])
    assert resumed.returncode == 0, resumed.stderr[-2000:]

    a = read_metrics(tmp_path / "straight" / "metrics.jsonl")
    b = read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in b] == [1, 2, 3, 4, 5]  # step 3's orphan line was dropped on resume
    assert any(r.get("grad_norm", 0.0) > 0 for r in a), "no update moved the policy: vacuous"
    for ra, rb in zip(a, b, strict=True):
        for key in ("loss", "reward/mean", "grad_norm", "entropy"):
            assert ra[key] == pytest.approx(rb[key], abs=TOLERANCE), (ra["step"], key)
