"""Trainer glue: one update moves log-probs the advantage's way and every parameter; rewards
belong to their own sample; CLI smoke run; resume equals an uninterrupted run."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from tests.run_cut import copy_cut_back
from vlagent.config import load_config
from vlagent.models.loading import load_policy
from vlagent.rollout.rows import build_rows
from vlagent.rollout.runner import group_specs, run_episodes
from vlagent.train.checkpoint import latest_checkpoint
from vlagent.train.grpo import run_grpo
from vlagent.train.outputs import read_metrics
from vlagent.train.sft import run_sft
from vlagent.train.update import UpdateBatch, policy_update, recompute_logprobs
from vlagent.worlds import make_world

SMALL = [
    "grpo.prompts_per_step=2",
    "grpo.group_size=4",
    "grpo.max_new_tokens=12",
    "eval.every=0",
    "eval.monitor_screens=8",
    "eval.max_new_tokens=12",
    "run.progress=false",
    "run.samples_every=0",
]
ADV = [1.0, -1.0, 0.5, -0.5, -1.0, 1.0, 0.3, -0.3]  # per episode: 2 screens x 4 samples


def _grounding_batch(policy, cfg, seed=0):
    """A GRPO batch of the grounding world (2 screens x 4 episodes) and its rows with ADV."""
    world = make_world(cfg, policy)
    g = cfg.grpo
    trajs = run_episodes(
        policy,
        world.adapter(),
        lambda: world.make_env("train"),
        group_specs(world.task_ids("train", 0, g.prompts_per_step), g.group_size),
        world.limits(g.max_new_tokens),
        seed=seed,
    )
    rows = build_rows(trajs, [[a] for a in ADV], policy.tokenizer.pad_token_id)
    assert len(rows) == len(ADV) and rows.advantages.tolist() == pytest.approx(ADV)
    return trajs, rows


def test_one_update_raises_logprob_of_positive_advantage_rows(tiny_dir):
    """The sign of the update: rows with A > 0 become more likely, rows with A < 0 less."""
    policy = load_policy(tiny_dir)
    cfg = load_config(None, SMALL)
    _, rows = _grounding_batch(policy, cfg)
    before = recompute_logprobs(policy, rows, cfg.grpo).sum(dim=1)  # [N] sequence log-probs
    opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-3, weight_decay=0.0)
    policy_update(policy, UpdateBatch(rows, rows.old_logp, rows.mask), cfg.grpo, opt, None, 0)
    delta = recompute_logprobs(policy, rows, cfg.grpo).sum(dim=1) - before
    adv = torch.tensor(ADV)
    assert (delta[adv > 0] > 0).all(), (delta.tolist(), ADV)
    assert (delta[adv < 0] < 0).all(), (delta.tolist(), ADV)


def test_one_grpo_step_changes_every_parameter(tiny_dir):
    """No weight decay: a parameter moves only if the loss gradient reaches it."""
    policy = load_policy(tiny_dir)
    cfg = load_config(None, SMALL)
    _, rows = _grounding_batch(policy, cfg)
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    opt = torch.optim.AdamW(policy.model.parameters(), lr=1e-3, weight_decay=0.0)
    batch = UpdateBatch(rows, rows.old_logp, rows.mask)
    stats = policy_update(policy, batch, cfg.grpo, opt, None, shuffle_seed=0)
    assert np.isfinite(stats["loss"]) and stats["optimizer_steps"] == 1
    # full fine-tuning: every parameter (vision tower included) gets a gradient and moves
    unchanged = [n for n, p in policy.model.named_parameters() if torch.equal(p, before[n])]
    assert not unchanged, f"parameters not updated by one GRPO step: {unchanged}"


def test_rewards_belong_to_their_own_sample(sft_dir):
    """In a GRPO batch each episode's reward is the env's score of ITS answer on ITS screen,
    its tokens were sampled from ITS prompt, and its rows carry its group's advantage."""
    from vlagent.rollout.tokens import content_key
    from vlagent.train.credit import turn_advantages
    from vlagent.train.grpo import collect
    from vlagent.train.keys import KeyStream

    policy = load_policy(sft_dir)
    # 24 tokens: the short SFT writes a whole answer ({"point_2d": [x, y]}) in about 16
    cfg = load_config(None, [*SMALL, "grpo.prompts_per_step=3", "grpo.max_new_tokens=24"])
    world = make_world(cfg, policy)
    # a cursor far from 0: task ids differ from group ids and batch positions
    trajs, _ = collect(policy, world, cfg, step=3, keys=KeyStream(world, cursor=1000))
    assert [t.task_id for t in trajs] == [1000] * 4 + [1001] * 4 + [1002] * 4
    rewards = [t.reward for t in trajs]
    assert len(set(rewards)) > 2, f"rewards barely vary, the test has no power: {rewards}"
    tok = policy.tokenizer
    for t in trajs:
        assert len(t.segments) == 1 and len(t.turns) == 1 and t.error is None
        seg, turn = t.segments[0], t.turns[0]
        screen = world.sample(t.task_id)
        assert np.array_equal(t.extras["image"], screen.image), t.task_id
        assert seg.prompt.key == content_key([screen.image], screen.instruction)
        # the policy's tokens of this episode, decoded afresh, scored by a fresh env
        ids = [i for i, m in zip(seg.ids, seg.loss_mask, strict=True) if m > 0]
        assert ids == seg.ids[turn.start : turn.end]
        answer = world.codec.parse(tok.decode(ids, skip_special_tokens=True), seg.prompt.frame)
        env = world.make_env("train")
        obs, _ = env.reset(seed=t.seed, options={"task_id": t.task_id})
        assert np.array_equal(obs["image"], screen.image)
        _, reward, terminated, _, info = env.step(answer.to_action())
        assert terminated and t.reward == pytest.approx(reward, abs=1e-9), t.task_id
        assert t.success == bool(info["success"])
    # the tokens were sampled from the episode's own prompt: teacher forcing on it reproduces
    # the behaviour log-probs
    g = cfg.grpo
    adv = turn_advantages(trajs, g)
    rows = build_rows(trajs, adv, tok.pad_token_id)
    assert torch.allclose(recompute_logprobs(policy, rows, g), rows.old_logp, atol=1e-4)
    # and each row's advantage is its own episode's reward against its own group
    for r in range(len(rows)):
        t = trajs[int(rows.traj_index[r])]
        members = [u for u in trajs if u.group_id == t.group_id]
        assert {u.task_id for u in members} == {t.task_id}  # a group = one screen
        group = [u.reward for u in members]
        centred = t.reward - sum(group) / len(group)
        assert float(rows.advantages[r]) * centred >= 0
        if abs(centred) > 1e-6:
            assert float(rows.advantages[r]) != 0.0


def _grpo_cfg(tmp_path, tiny_dir, out, steps, extra=()):
    return load_config(
        None,
        [
            f"model.path={tiny_dir}",
            "model.build_tiny=false",
            f"run.out_dir={tmp_path / out}",
            f"grpo.steps={steps}",
            "run.checkpoint_every=2",
            *SMALL,
            *extra,
        ],
    )


def test_resume_equals_uninterrupted(tmp_path, tiny_dir):
    straight = run_grpo(_grpo_cfg(tmp_path, tiny_dir, "straight", 4))
    # interrupted: run 2 steps, then "crash" and rerun with the full budget in the same folder
    run_grpo(_grpo_cfg(tmp_path, tiny_dir, "resumed", 2))
    assert latest_checkpoint(tmp_path / "resumed", "grpo").name == "step_000002"
    resumed = run_grpo(_grpo_cfg(tmp_path, tiny_dir, "resumed", 4))
    assert straight.steps == resumed.steps == 4
    a = read_metrics(tmp_path / "straight" / "metrics.jsonl", "grpo")
    b = read_metrics(tmp_path / "resumed" / "metrics.jsonl", "grpo")
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    for ra, rb in zip(a, b, strict=True):
        assert ra["reward/mean"] == pytest.approx(rb["reward/mean"], abs=1e-6)
        assert ra["loss"] == pytest.approx(rb["loss"], abs=1e-5)
    pa = load_policy(straight.final_dir).model.state_dict()
    pb = load_policy(resumed.final_dir).model.state_dict()
    for k in pa:
        assert torch.allclose(pa[k], pb[k], atol=1e-6), k


def test_grpo_resume_continues_a_decaying_lr(tmp_path, sft_dir):
    """grpo.lr_schedule=linear, killed after step 2: the resumed steps use the decayed rates
    (a restored scheduler counter alone leaves the optimizer at the step-0 rate)."""
    extra = [
        "grpo.lr_schedule=linear",
        "grpo.minibatches=1",
        "grpo.lr=1e-4",
        "grpo.max_new_tokens=32",
    ]
    straight = run_grpo(_grpo_cfg(tmp_path, sft_dir, "a", 4, extra))
    copy_cut_back(tmp_path / "a", tmp_path / "b", "grpo", 2)
    resumed = run_grpo(_grpo_cfg(tmp_path, sft_dir, "b", 4, extra))
    # the logged rate is the scheduler's after the step; the weights show the rate it used
    pa = load_policy(straight.final_dir).model.state_dict()
    pb = load_policy(resumed.final_dir).model.state_dict()
    assert all(torch.allclose(pa[k], pb[k], atol=1e-6) for k in pa)
    a = read_metrics(tmp_path / "a" / "metrics.jsonl", "grpo")
    b = read_metrics(tmp_path / "b" / "metrics.jsonl", "grpo")
    assert [r["step"] for r in b] == [1, 2, 3, 4]
    assert [r["lr"] for r in b] == pytest.approx([r["lr"] for r in a])
    assert len({round(r["lr"], 12) for r in a}) == 4  # it does decay, step by step
    assert all(r["grad_norm"] > 0 for r in a[2:])  # steps 3-4 move the weights


def test_resume_refuses_a_folder_of_another_experiment(tmp_path, tiny_dir):
    """A checkpoint folder written under another config (here: lr) is not silently continued."""
    from vlagent.errors import ConfigError

    run_grpo(_grpo_cfg(tmp_path, tiny_dir, "run", 2))
    assert latest_checkpoint(tmp_path / "run", "grpo") is not None
    with pytest.raises(ConfigError, match=r"grpo\.lr"):
        run_grpo(_grpo_cfg(tmp_path, tiny_dir, "run", 3, ["grpo.lr=3e-4"]))
    # a longer budget is a legitimate resume; run.resume=false starts over in the folder
    assert run_grpo(_grpo_cfg(tmp_path, tiny_dir, "run", 3)).steps == 3
    fresh = _grpo_cfg(tmp_path, tiny_dir, "run", 1, ["grpo.lr=3e-4", "run.resume=false"])
    assert run_grpo(fresh).steps == 1


def _sft_cfg(out, tiny_dir, *extra: str):
    """An SFT config on the tiny model writing to ``out``; ``extra`` sets the sft.* budget."""
    base = [f"model.path={tiny_dir}", "model.build_tiny=false", f"run.out_dir={out}"]
    return load_config(None, [*base, "recipe=sft", *SMALL, *extra])


def test_sft_reduces_loss_on_demos(tmp_path, tiny_dir):
    cfg = _sft_cfg(
        tmp_path / "sft", tiny_dir, "sft.steps=30", "sft.num_demos=8", "sft.batch_size=8"
    )
    result = run_sft(cfg)
    losses = [r["loss"] for r in read_metrics(tmp_path / "sft" / "metrics.jsonl", "sft")]
    assert result.steps == 30
    assert sum(losses[-5:]) / 5 < 0.5 * sum(losses[:5]) / 5


def test_sft_resumed_after_its_early_stop_stops_again_at_once(tmp_path, tiny_dir):
    """A relaunched driver reruns a finished SFT stage in its folder: the run resumes from the
    checkpoint at its stop and must stop there, not train one step past it."""
    opts = ("sft.steps=12", "sft.num_demos=8", "sft.batch_size=2", "sft.plateau_patience=1")
    more = ("run.checkpoint_every=2", "eval.every=2", "eval.monitor_screens=4")
    cfg = _sft_cfg(tmp_path / "sft", tiny_dir, *opts, *more)
    first = run_sft(cfg)
    assert first.stop_reason == "plateau" and first.steps < 12
    again = run_sft(cfg)
    assert (again.steps, again.stop_reason) == (first.steps, "plateau")
    steps = [r["step"] for r in read_metrics(tmp_path / "sft" / "metrics.jsonl", "sft")]
    assert steps == list(range(1, first.steps + 1))


def test_sft_lr_schedule_decays_and_resumes_where_it_was(tmp_path, tiny_dir):
    """sft.lr_schedule=linear: each step's logged rate is lr·(1 - step/steps); a run resumed
    from its step-2 checkpoint continues the decay (the scheduler's state is saved)."""
    opts = ("sft.steps=4", "sft.num_demos=4", "sft.batch_size=2", "sft.lr=1e-3",
            "sft.lr_schedule=linear", "run.checkpoint_every=2")  # fmt: skip
    run_sft(_sft_cfg(tmp_path / "a", tiny_dir, *opts))
    lrs = [r["lr"] for r in read_metrics(tmp_path / "a" / "metrics.jsonl", "sft")]
    assert lrs == pytest.approx([1e-3, 7.5e-4, 5e-4, 2.5e-4])
    copy_cut_back(tmp_path / "a", tmp_path / "b", "sft", 2)
    run_sft(_sft_cfg(tmp_path / "b", tiny_dir, *opts))
    rows = read_metrics(tmp_path / "b" / "metrics.jsonl", "sft")
    assert [r["step"] for r in rows] == [1, 2, 3, 4]
    assert [r["lr"] for r in rows] == pytest.approx(lrs)
    with pytest.raises(Exception, match="sft.lr_schedule"):
        _sft_cfg(tmp_path / "c", tiny_dir, "sft.lr_schedule=step")


def test_cli_two_step_smoke(tmp_path, tiny_dir):
    out = tmp_path / "cli"
    cmd = [
        sys.executable,
        "-m",
        "vlagent.cli",
        "train",
        f"model.path={tiny_dir}",
        "model.build_tiny=false",
        f"run.out_dir={out}",
        "grpo.steps=2",
        *SMALL,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout)
    assert result["steps"] == 2
    rows = read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in rows] == [1, 2]
    assert all(r["loss"] is not None for r in rows)
    assert (out / "config.yaml").read_text().count("steps: 2") >= 1
    assert (out / "final" / "model.safetensors").is_file()
    assert list((out / "tb").rglob("events.out.tfevents.*"))


def test_cli_bad_config_is_one_clear_line(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "vlagent.cli",
            "train",
            "grpo.group_size=1",
            f"run.out_dir={tmp_path}",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "grpo.group_size: must be >= 2" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_missing_model_is_clear(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "vlagent.cli", "eval", "--model", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "does not exist" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_eval_screenspot_missing_image_names_file(tmp_path, tiny_dir):
    from pathlib import Path

    ann = (
        Path(__file__).resolve().parents[2]
        / "fixtures"
        / "screenspot_v2"
        / "screenspot_desktop_v2.json"
    )
    assert ann.is_file(), ann
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "vlagent.cli",
            "eval",
            "--model",
            str(tiny_dir),
            "task.source=screenspot",
            f"task.annotation_file={ann}",
            f"task.image_dir={tmp_path}",
            "eval.num_screens=2",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 2, proc.stderr[-1500:]
    assert ".png" in proc.stderr and str(tmp_path) in proc.stderr and "Traceback" not in proc.stderr


def test_resume_accepts_a_field_added_since_at_its_default(tmp_path):
    """A config saved before ``grpo.episode_weight`` existed resumes when the field is left at
    its default, and is refused when the run sets it to something else."""
    import yaml

    from vlagent.config import to_yaml
    from vlagent.errors import ConfigError
    from vlagent.train.outputs import check_resume_config

    cfg = load_config(None, [f"run.out_dir={tmp_path}"])
    saved = yaml.safe_load(to_yaml(cfg))
    del saved["grpo"]["episode_weight"]
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(saved))
    (tmp_path / "checkpoints" / "grpo").mkdir(parents=True)
    check_resume_config(tmp_path, cfg)  # missing, and at its default: the old run's behaviour
    changed = load_config(None, [f"run.out_dir={tmp_path}", "grpo.episode_weight=0.5"])
    with pytest.raises(ConfigError, match=r"grpo\.episode_weight"):
        check_resume_config(tmp_path, changed)
