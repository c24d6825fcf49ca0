"""Learning: on a small budget, GRPO must raise held-out accuracy over its SFT starting point.

The quickstart's setting at a fraction of its budget: SFT memorizes 64 demonstrations and
stalls; GRPO on fresh screens, scored only by the reward, must add at least 10 points of
held-out accuracy within 250 steps. Fails if GRPO stops improving the policy (a sign error in
the advantages, log-probs that do not line up with the sampled tokens, a dead optimizer …).
"""

from __future__ import annotations

import pytest

from vlagent.config import load_config
from vlagent.eval.evaluate import evaluate
from vlagent.models.loading import load_policy
from vlagent.train.grpo import run_grpo
from vlagent.train.sft import run_sft
from vlagent.worlds import make_world

QUICK = "quickstart"  # the packaged recipe
COMMON = [
    "run.progress=false",
    "run.samples_every=0",
    "run.checkpoint_every=0",
    "eval.every=0",
    "eval.monitor_screens=300",
    "run.threads=2",
    "sft.max_seconds=0",
    "grpo.max_seconds=0",
]


@pytest.mark.slow
def test_grpo_improves_heldout_accuracy_over_sft(tmp_path):
    sft_cfg = load_config(
        QUICK,
        [
            f"model.path={tmp_path / 'model'}",
            f"run.out_dir={tmp_path / 'sft'}",
            "recipe=sft",
            "sft.steps=250",
            "sft.plateau_patience=0",
            *COMMON,
        ],
    )
    sft = run_sft(sft_cfg)
    grpo_cfg = load_config(
        QUICK,
        [
            f"model.path={sft.final_dir}",
            "model.build_tiny=false",
            f"run.out_dir={tmp_path / 'grpo'}",
            "recipe=grpo",
            "grpo.steps=250",
            *COMMON,
        ],
    )
    grpo = run_grpo(grpo_cfg)

    def accuracy(path: str) -> float:
        policy = load_policy(path)
        e = grpo_cfg.eval
        report = evaluate(
            make_world(grpo_cfg, policy),
            policy,
            "val",
            e.monitor_screens,
            batch_size=e.batch_size,
            max_new_tokens=e.max_new_tokens,
        )
        assert report.n == e.monitor_screens
        return report.accuracy

    before, after = accuracy(sft.final_dir), accuracy(grpo.final_dir)
    print(f"held-out accuracy on 300 val screens: SFT {before:.3f} -> GRPO {after:.3f}")
    assert after >= before + 0.10, (
        f"GRPO did not improve enough: SFT {before:.3f} -> GRPO {after:.3f}"
    )
