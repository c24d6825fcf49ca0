"""``vlagent train`` under torchrun (2 CPU processes, gloo) trains like one process.

The recipes' multi-process wiring (``vlagent/train/parallel.py``), end to end through the CLI:

- SFT, whose demonstrations do not depend on the weights, gives one process's run: the same
  loss and pre-clip gradient norm at every step (1e-5 relative) and the same exported weights
  (1e-5 absolute; 3 AdamW steps at lr 1e-3 move them by ~3e-3). 5 demonstrations a step split
  3 / 2, so a rank weighting its mean by anything but its token share changes the gradient; a
  sampler copy that is not synced after each step exports the starting weights.
- GRPO: each rank rolls out half of each step's groups (8 episodes a step, not 16 or 4); the
  exported model and the checkpoint's Hugging Face folder equal the sharded state in ``dcp/``;
  the update moved the weights.
- Checkpoints resume across process counts: a 2-process checkpoint continues in one process
  with its decaying learning rate where it was, and a 1-process one in two processes — there
  equal to one process continuing (Adam's moments must come back for step 4 to match).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from tests.run_cut import copy_cut_back
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.train.dist_checkpoint import load_distributed
from vlagent.train.grpo import run_grpo
from vlagent.train.outputs import read_metrics
from vlagent.train.sft import run_sft

TRAIN = ["-m", "vlagent.cli", "train"]  # `vlagent train` in each torchrun process
COMMON = ["model.build_tiny=false", "run.progress=false", "run.samples_every=0", "run.threads=1"]
SFT = ["recipe=sft", "sft.batch_size=5", "sft.lr=1e-3", "eval.every=0", "run.checkpoint_every=0"]
GRPO = [
    "recipe=grpo",
    "grpo.prompts_per_step=2",
    "grpo.group_size=4",
    "grpo.max_new_tokens=24",
    "grpo.lr=1e-3",
    "eval.every=2",
    "eval.monitor_screens=4",
    "run.checkpoint_every=1",
]


def weights(folder: str | Path) -> dict[str, torch.Tensor]:
    return load_file(str(Path(folder) / "model.safetensors"))


def max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    assert set(a) == set(b)
    return max(float((a[k].double() - b[k].double()).abs().max()) for k in a)


@pytest.fixture(scope="module")
def sft_runs(tmp_path_factory, tiny_dir, torchrun2):
    """SFT for 3 steps in 2 processes and in 1; then both continue a 1-process run to step 4."""
    out = tmp_path_factory.mktemp("torchrun_sft")
    base = [f"model.path={tiny_dir}", *COMMON, *SFT]
    torchrun2([*TRAIN, *base, "sft.steps=3", f"run.out_dir={out / 'two'}"])
    run_sft(load_config(None, [*base, "sft.steps=3", f"run.out_dir={out / 'one'}"]))
    shutil.copytree(out / "one", out / "one_then_two")
    torchrun2(
        ["-m", "vlagent.cli", "train", *base, "sft.steps=4", f"run.out_dir={out / 'one_then_two'}"]
    )
    run_sft(load_config(None, [*base, "sft.steps=4", f"run.out_dir={out / 'one'}"]))
    return out


def test_sft_two_processes_train_like_one(sft_runs, tiny_dir):
    two = read_metrics(sft_runs / "two" / "metrics.jsonl", "sft")
    one = read_metrics(sft_runs / "one" / "metrics.jsonl", "sft")[:3]
    assert [r["step"] for r in two] == [1, 2, 3]
    for a, b in zip(two, one, strict=True):
        assert a["loss"] == pytest.approx(b["loss"], rel=1e-5)
        assert a["grad_norm"] == pytest.approx(b["grad_norm"], rel=1e-5)
        assert a["tokens"] == b["tokens"]  # the whole batch's tokens, not one rank's
    start = weights(tiny_dir)
    two_w = weights(sft_runs / "two" / "final")
    assert max_diff(two_w, start) > 1e-3  # the export is the trained model
    one_w = weights(sft_runs / "one" / "checkpoints" / "sft" / "step_000003")
    assert max_diff(two_w, one_w) < 1e-5
    ckpt = sft_runs / "two" / "checkpoints" / "sft" / "step_000003"
    assert (ckpt / "dcp" / ".metadata").is_file()
    assert torch.load(ckpt / "trainer_state.pt", weights_only=False)["optimizer"] is None


def test_one_process_checkpoint_resumes_in_two(sft_runs):
    steps = [r["step"] for r in read_metrics(sft_runs / "one_then_two" / "metrics.jsonl", "sft")]
    assert steps == [1, 2, 3, 4]
    two = weights(sft_runs / "one_then_two" / "final")
    one = weights(sft_runs / "one" / "final")  # one process, 3 steps then resumed to 4
    assert max_diff(two, one) < 1e-5


@pytest.fixture(scope="module")
def grpo_run(tmp_path_factory, sft_dir, torchrun2):
    """GRPO for 3 steps in 2 processes from the SFT'd tiny model, the rate decaying linearly
    (``two``); then a copy cut back to its step-2 (sharded) checkpoint, as a run killed there
    leaves it, continues step 3 in one process (``resumed``)."""
    out = tmp_path_factory.mktemp("torchrun_grpo")
    base = [f"model.path={sft_dir}", *COMMON, *GRPO, "grpo.lr_schedule=linear", "grpo.steps=3"]
    torchrun2([*TRAIN, *base, f"run.out_dir={out / 'two'}"])
    copy_cut_back(out / "two", out / "resumed", "grpo", 2)
    run_grpo(load_config(None, [*base, f"run.out_dir={out / 'resumed'}"]))
    return out


def test_grpo_ranks_split_groups_and_export_the_trained_weights(grpo_run, sft_dir):
    two = grpo_run / "two"
    rows = read_metrics(two / "metrics.jsonl", "grpo")
    assert [r["step"] for r in rows] == [1, 2, 3]
    for r in rows:
        assert r["episodes"] == 8.0 and r["sampled"] == 8.0  # 2 prompts × 4, split over ranks
    assert rows[1]["samples_total"] == 16.0
    assert "val/success_rate" in rows[1]
    exported = weights(two / "final")
    assert max_diff(exported, weights(sft_dir)) > 1e-4  # the update moved the weights
    ckpt = two / "checkpoints" / "grpo" / "step_000003"
    assert max_diff(exported, weights(ckpt)) == 0.0
    policy = load_policy(str(ckpt))
    opt = torch.optim.AdamW([p for p in policy.model.parameters() if p.requires_grad])
    load_distributed(ckpt / "dcp", policy.model, opt)
    sharded = {k: v.detach() for k, v in policy.model.state_dict().items()}
    assert max_diff({k: sharded[k] for k in exported}, exported) < 1e-7
    assert len(opt.state) > 0  # Adam's moments came back


def test_a_sharded_checkpoint_resumes_the_decaying_rate_in_one_process(grpo_run):
    """The scheduler's state travels with a sharded checkpoint: the resumed step 3 logs the
    rate the uninterrupted run logged (0 after the last of 3 linear steps; without the
    scheduler in the sharded checkpoint it logged 2.2e-4)."""
    two = read_metrics(grpo_run / "two" / "metrics.jsonl", "grpo")
    resumed = read_metrics(grpo_run / "resumed" / "metrics.jsonl", "grpo")
    assert [r["step"] for r in resumed] == [1, 2, 3]
    lrs = [r["lr"] for r in two]
    assert len({round(x, 12) for x in lrs}) == 3  # it does decay
    assert [r["lr"] for r in resumed] == pytest.approx(lrs, abs=1e-12)
    ckpt = grpo_run / "resumed" / "checkpoints" / "grpo" / "step_000002"
    state = torch.load(ckpt / "trainer_state.pt", weights_only=False)
    assert state["optimizer"] is None and state["scheduler"]["last_epoch"] == 2


def test_refusals_name_the_setting(tiny_dir):
    from vlagent.errors import ConfigError
    from vlagent.train.distributed import DistInfo
    from vlagent.train.parallel import check_config

    two = DistInfo(0, 2, 0, "gloo")
    cfg = load_config(None, [f"model.path={tiny_dir}", *COMMON, *GRPO, "grpo.prompts_per_step=3"])
    with pytest.raises(ConfigError, match="prompts_per_step=3 must be a multiple"):
        check_config(cfg, two)
    cfg = load_config(None, [f"model.path={tiny_dir}", *COMMON, *GRPO, "grpo.max_staleness=1"])
    with pytest.raises(ConfigError, match="max_staleness"):
        check_config(cfg, two)
    check_config(cfg, DistInfo(0, 1, 0, "none"))  # one process: anything goes
    cfg = load_config(None, [f"model.path={tiny_dir}", *COMMON, *SFT, "sft.batch_size=1"])
    with pytest.raises(ConfigError, match="sft.batch_size=1"):
        check_config(cfg, two)


def test_metrics_json_is_written_by_rank_zero_only(sft_runs):
    lines = (sft_runs / "two" / "metrics.jsonl").read_text().splitlines()
    assert len(lines) == 3 and all(json.loads(x)["phase"] == "sft" for x in lines)
